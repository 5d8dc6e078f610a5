/* escape — the one place where a user string (a model or GPU file name, a plan file name, a
 * title) is made safe for the language it is written into. Each function writes the complete
 * token, quotes included, so a caller cannot forget half of it:
 *
 *   esc_gnuplot  a gnuplot string expression of single-quoted literals (gnuplot performs no
 *                backquote command substitution, macro expansion or backslash escapes inside
 *                single quotes) joined by fixed double-quoted constants: a quote becomes
 *                '."'".' and a newline '."\n".'; other control characters are dropped. (The
 *                documented doubling of a quote, 'it''s', is not used: gnuplot 5.4's scanner
 *                ends the literal early when a doubled quote starts it or follows another
 *                one, as in .)
 *   esc_html     HTML text or a double-quoted attribute value: & < > " ' as entities, control
 *                characters other than newline and tab dropped.
 *   esc_csv      one RFC 4180 field: always double-quoted, a quote doubled.
 *   esc_shell    one POSIX shell word: bare when every byte is a letter, digit or one of
 *                -_./=,:+@% (nothing the shell interprets), else single-quoted with a quote
 *                written as '\''.
 *
 * Nothing is kept; s may be any byte string (NULL writes the empty token). */
#ifndef SCALEPLAN_ESCAPE_H
#define SCALEPLAN_ESCAPE_H

#include <stdio.h>

void esc_gnuplot(FILE *f, const char *s);
void esc_html(FILE *f, const char *s);
void esc_csv(FILE *f, const char *s);
void esc_shell(FILE *f, const char *s);

#endif
