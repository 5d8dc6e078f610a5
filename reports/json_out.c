/* json_out — cJSON helpers for writing documents (reports/json_out.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "reports/json_out.h"

double json_sig(double v, int digits)
{
	char b[64];
	if (!isfinite(v)) return v;
	snprintf(b, sizeof(b), "%.*g", digits, v);
	return strtod(b, NULL);
}

double json_fixed(double v, int decimals)
{
	char b[400];
	if (!isfinite(v)) return v;
	if (decimals == 0) return rint(v); /* what %.0f prints, in the current (nearest-even) rounding */
	snprintf(b, sizeof(b), "%.*f", decimals, v);
	return strtod(b, NULL);
}

cJSON *json_add_sig(cJSON *o, const char *key, double v, int digits)
{
	return cJSON_AddNumberToObject(o, key, json_sig(v, digits));
}

cJSON *json_add_fixed(cJSON *o, const char *key, double v, int decimals)
{
	return cJSON_AddNumberToObject(o, key, json_fixed(v, decimals));
}

cJSON *json_add_exact(cJSON *o, const char *key, double v)
{
	char b[48];
	if (!isfinite(v)) return cJSON_AddNullToObject(o, key);
	snprintf(b, sizeof(b), "%.17g", v);
	return cJSON_AddRawToObject(o, key, b);
}

cJSON *json_add_raw_fixed(cJSON *o, const char *key, double v, int decimals)
{
	char b[400];
	if (!isfinite(v)) return cJSON_AddNullToObject(o, key);
	snprintf(b, sizeof(b), "%.*f", decimals, v);
	return cJSON_AddRawToObject(o, key, b);
}

cJSON *json_from_text(char *text)
{
	cJSON *o = text ? cJSON_Parse(text) : NULL;
	free(text);
	return o;
}

cJSON *json_raw_ref(const char *text)
{
	cJSON *x = cJSON_CreateStringReference(text);
	if (x) x->type = cJSON_Raw | cJSON_IsReference;
	return x;
}

int json_print(FILE *f, const cJSON *doc, int pretty)
{
	char *text = doc ? (pretty ? cJSON_Print(doc) : cJSON_PrintUnformatted(doc)) : NULL;
	if (!text) return -1;
	fputs(text, f);
	fputc('\n', f);
	cJSON_free(text);
	return 0;
}

void json_stream_begin(struct json_stream *s, FILE *f, const cJSON *head)
{
	s->f = f;
	s->items = 0;
	s->failed = 0;
	char *text = head ? cJSON_PrintUnformatted(head) : NULL;
	size_t n = text ? strlen(text) : 0;
	/* the head ends with its empty array and the object's brace: "...[]}" */
	if (n < 3 || strcmp(text + n - 3, "[]}")) {
		s->failed = 1;
	} else {
		fwrite(text, 1, n - 2, f);
		fputc('\n', f);
	}
	cJSON_free(text);
}

void json_stream_item(struct json_stream *s, const cJSON *item)
{
	if (s->failed) return;
	if (!item) { s->failed = 1; return; }
	if (s->items++) fputs(",\n", s->f);
	if (cJSON_PrintPreallocated((cJSON *)item, s->buf, (int)sizeof(s->buf), 0)) {
		fputs(s->buf, s->f);
		return;
	}
	char *text = cJSON_PrintUnformatted(item);
	if (!text) { s->failed = 1; return; }
	fputs(text, s->f);
	cJSON_free(text);
}

int json_stream_end(struct json_stream *s)
{
	if (!s->failed) fputs("\n]}\n", s->f);
	return s->failed ? -1 : 0;
}
