/* escape — gnuplot, HTML and CSV quoting of user strings. */
#include "reports/escape.h"

static int is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

void esc_gnuplot(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '\n') fputs("'.\"\\n\".'", f);
		else if (c == '\'') fputs("'.\"'\".'", f);
		else if (!is_control(c)) fputc(c, f);
	}
	fputc('\'', f);
}

void esc_html(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		switch (c) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default:
			if (!is_control(c) || c == '\n' || c == '\t') fputc(c, f);
		}
	}
}

void esc_csv(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '"') fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}
