/* util — error formatting, file reading and strict number parsing. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sim/util.h"

int errf(char *err, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, ERR_LEN, fmt, ap);
		va_end(ap);
	}
	return -1;
}

char *read_file(const char *path, size_t max_bytes, char *err)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		errf(err, "%s: %s", path, strerror(errno));
		return NULL;
	}
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (len + 1 >= cap) {
			if (cap > max_bytes) {
				errf(err, "%s: larger than %zu bytes", path, max_bytes);
				free(buf);
				buf = NULL;
				break;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb) { free(buf); buf = NULL; errf(err, "%s: out of memory", path); break; }
			buf = nb;
			cap *= 2;
		}
		size_t n = fread(buf + len, 1, cap - 1 - len, f);
		len += n;
		if (n == 0) {
			if (ferror(f)) {
				errf(err, "%s: read error", path);
				free(buf);
				buf = NULL;
			} else {
				buf[len] = 0;
			}
			break;
		}
	}
	fclose(f);
	return buf;
}

int parse_int(const char *s, const char *field, long lo, long hi, long *out, char *err)
{
	if (!s || !*s)
		return errf(err, "%s: missing value", field);
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (*end || errno)
		return errf(err, "%s: '%s' is not an integer", field, s);
	if (v < lo || v > hi)
		return errf(err, "%s: %ld is out of range [%ld, %ld]", field, v, lo, hi);
	*out = v;
	return 0;
}

int parse_double(const char *s, const char *field, double lo, double hi, double *out, char *err)
{
	if (!s || !*s)
		return errf(err, "%s: missing value", field);
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (*end || errno || !isfinite(v))
		return errf(err, "%s: '%s' is not a number", field, s);
	if (v < lo || v > hi)
		return errf(err, "%s: %g is out of range [%g, %g]", field, v, lo, hi);
	*out = v;
	return 0;
}

int is_int_in(double v, double lo, double hi)
{
	return isfinite(v) && v >= lo && v <= hi && v == floor(v);
}

int parse_size_suffix(const char *s, const char *field, double *out, char *err)
{
	if (!s || !*s)
		return errf(err, "%s: missing value", field);
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v <= 0)
		return errf(err, "%s: '%s' is not a positive number", field, s);
	double mult = 1;
	switch (*end) {
	case 0: break;
	case 'k': case 'K': mult = 1024.0; end++; break;
	case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
	case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
	case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
	default: return errf(err, "%s: unknown suffix in '%s' (use K, M, G or T)", field, s);
	}
	if (*end)
		return errf(err, "%s: trailing characters in '%s'", field, s);
	*out = v * mult;
	if (*out > 1e18)
		return errf(err, "%s: %s is absurdly large", field, s);
	return 0;
}

unsigned long long fnv1a(unsigned long long h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

void put_shell_word(FILE *f, const char *s)
{
	int safe = s && *s;
	for (const char *c = s; safe && *c; c++)
		safe = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr("-_./=,:+@%", *c);
	if (safe) {
		fputs(s, f);
		return;
	}
	fputc('\'', f);
	for (; s && *s; s++) {
		if (*s == '\'') fputs("'\\''", f);
		else fputc(*s, f);
	}
	fputc('\'', f);
}

double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}
