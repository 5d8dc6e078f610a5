/* json_out — every JSON document scaleplan writes is a cJSON tree; this is what cJSON lacks for
 * them: a number rounded as a printf format rounds it (a figure keeps the precision it was
 * always printed with; cJSON then prints the shortest text that reads back as that value), a
 * number kept as the text of a printf format where the text itself matters (trace timestamps,
 * written fast), a document printed whole, and a document whose last member is a long array
 * streamed one element at a time (a trace of a million events never becomes one tree).
 *
 * Ownership: the helpers add to the caller's tree and keep nothing. Errors: cJSON's allocation
 * failures make the adders return NULL and the printers -1; a stream remembers a failure and
 * json_stream_end reports it. */
#ifndef SCALEPLAN_JSON_OUT_H
#define SCALEPLAN_JSON_OUT_H

#include <cjson/cJSON.h>
#include <stdio.h>

/* v as "%.*g" with `digits` significant digits would print it, read back */
double json_sig(double v, int digits);
/* v as "%.*f" with `decimals` decimals would print it, read back (decimals 0: an integer) */
double json_fixed(double v, int decimals);
/* adds key: json_sig(v, digits) / json_fixed(v, decimals) to object o */
cJSON *json_add_sig(cJSON *o, const char *key, double v, int digits);
cJSON *json_add_fixed(cJSON *o, const char *key, double v, int decimals);
/* adds key: v with 17 significant digits, which read back as exactly v (cJSON prints 15 and
 * accepts them when they read back within an epsilon, which can lose the last bit) */
cJSON *json_add_exact(cJSON *o, const char *key, double v);
/* adds key: v as the literal text of "%.*f" (a raw cJSON item); a non-finite v is null */
cJSON *json_add_raw_fixed(cJSON *o, const char *key, double v, int decimals);

/* Parses text (a document another module printed, e.g. plan_to_json's) and frees it; NULL when
 * text is NULL or not JSON. */
cJSON *json_from_text(char *text);

/* A raw item whose text is the caller's buffer, read at each print and never freed by cJSON:
 * a record written many times is built once and its buffers rewritten between prints. */
cJSON *json_raw_ref(const char *text);

/* Writes doc (unformatted, or cJSON's indented form when pretty) and a newline. 0 or -1. */
int json_print(FILE *f, const cJSON *doc, int pretty);

/* A document written piece by piece: json_stream_begin writes `head`, an object whose last
 * member is an empty array, all but that array's closing bracket and the object's; each
 * json_stream_item writes one element (unformatted, one per line); json_stream_end closes
 * both. */
struct json_stream {
	FILE *f;
	long items;
	int failed;
	char buf[1024];   /* an element's text when it fits, so most need no allocation */
};
void json_stream_begin(struct json_stream *s, FILE *f, const cJSON *head);
void json_stream_item(struct json_stream *s, const cJSON *item);
/* 0, or -1 when anything could not be built or printed */
int json_stream_end(struct json_stream *s);

#endif
