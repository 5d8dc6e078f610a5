/* util — small helpers shared by every module: error messages into caller-owned buffers,
 * whole-file reading, number parsing with range checks. Library code never prints or exits;
 * it returns -1 and fills `err` (ERR_LEN bytes is always enough). */
#ifndef SCALEPLAN_UTIL_H
#define SCALEPLAN_UTIL_H

#include <stddef.h>
#include <stdio.h>

#define ERR_LEN 256

/* bytes per GiB (2^30): every GiB the tree prints or reads */
#define GIB 1073741824.0

/* printf into err (which may be NULL); always returns -1 so callers can `return errf(...)`. */
int errf(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reads a whole file into a NUL-terminated malloc'd buffer; NULL and err on failure.
 * Files over max_bytes are refused (no input can make us allocate without bound). */
char *read_file(const char *path, size_t max_bytes, char *err);

/* Strict parsers: the whole string must be a number in [lo, hi]. Return 0 or -1 with err
 * naming `field`. */
int parse_int(const char *s, const char *field, long lo, long hi, long *out, char *err);
int parse_double(const char *s, const char *field, double lo, double hi, double *out, char *err);

/* 1 when v is a finite integer in [lo, hi]: the test a double from input must pass before it
 * is cast to an integer type (casting an out-of-range or non-finite double is undefined). */
int is_int_in(double v, double lo, double hi);

/* "4M" -> 4194304 (K, M, G, T are powers of two); plain integers too. */
int parse_size_suffix(const char *s, const char *field, double *out, char *err);

/* FNV-1a, 64 bits (Fowler-Noll-Vo: offset basis 0xcbf29ce484222325, prime 0x100000001b3):
 * h = fnv1a(FNV1A_INIT, p, n), continued over more bytes with fnv1a(h, q, m). */
#define FNV1A_INIT 0xcbf29ce484222325ull
unsigned long long fnv1a(unsigned long long h, const void *p, size_t n);

/* One POSIX shell word on f: s bare when every byte is a letter, digit or one of -_./=,:+@%
 * (nothing a shell interprets), else single-quoted with each quote written as '\''. The one
 * shell quoting of the program (reports/escape.h holds the other output languages): command
 * lines the program prints for the user to paste (plan flags, benchmark commands) use it.
 * NULL writes ''. */
void put_shell_word(FILE *f, const char *s);

/* Monotonic clock in seconds. */
double now_s(void);

#endif
