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
 *                one, as in the four-quote literal for one quote.)
 *   esc_html     HTML text or a double-quoted attribute value: & < > " ' as entities, control
 *                characters other than newline and tab dropped.
 *   esc_csv      one RFC 4180 field: always double-quoted, a quote doubled.
 *
 * Shell words are quoted by put_shell_word (sim/util.h): the plan's own flags (sim/plan.c)
 * need it, and sim depends on nothing above it.
 *
 * Nothing is kept; s may be any byte string (NULL writes the empty token). */
#ifndef SCALEPLAN_ESCAPE_H
#define SCALEPLAN_ESCAPE_H

#include <stdio.h>

void esc_gnuplot(FILE *f, const char *s);
void esc_html(FILE *f, const char *s);
void esc_csv(FILE *f, const char *s);

#endif
