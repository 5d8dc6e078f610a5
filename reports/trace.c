/* trace — Chrome Trace Event JSON writer, and the reader of measured op times from such files. Event names are built from fixed strings and
 * numbers only, so nothing needs escaping except the caller's name. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "reports/trace.h"
#include "sim/outfile.h"
#include "sim/util.h"

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
		else if (c < 0x20) fprintf(f, "\\u%04x", c);
		else fputc(c, f);
	}
	fputc('"', f);
}

/* Every record but the very first (rank 0's process name) starts with its separator. */
static void write_metadata(FILE *f, const struct timeline *tl)
{
	unsigned used[TL_STREAM_COUNT] = {0};
	for (size_t i = 0; i < tl->n; i++)
		if (tl->ev[i].stream < TL_STREAM_COUNT) used[tl->ev[i].stream] = 1;
	for (int r = 0; r < tl->nranks; r++) {
		fputs(r ? ",\n" : "", f);
		fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"pp rank %d\"}}", r, r);
		fprintf(f, ",\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"sort_index\":%d}}", r, r);
		for (int s = 0; s < TL_STREAM_COUNT; s++) {
			if (!used[s]) continue;
			fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
				r, s, tl_stream_name(s));
			fprintf(f, ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
				r, s, s);
		}
	}
}

static void write_event(FILE *f, const struct tl_event *e, double k)
{
	char name[64];
	int compute = e->kind <= TL_BW;
	if (compute || e->kind == TL_P2P)
		snprintf(name, sizeof(name), "%s%s%d%s", compute ? tl_kind_name(e->kind) : "send ",
			 compute ? "" : (e->stream == TL_P2P_FWD ? "act " : "grad "), e->mb,
			 e->overlap ? " (F&B)" : "");
	else if (e->stage >= 0)
		snprintf(name, sizeof(name), "%s stage %d", tl_kind_name(e->kind), e->stage);
	else
		snprintf(name, sizeof(name), "%s", tl_kind_name(e->kind));
	fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.6f,\"dur\":%.6f,\"pid\":%d,\"tid\":%d,"
		"\"args\":{\"mb\":%d,\"stage\":%d,\"chunk\":%d,\"dir\":%d}}",
		name, compute || e->kind == TL_OPT ? "compute" : "comm", e->start * k, (e->end - e->start) * k,
		e->rank, e->stream, e->mb, e->stage, e->chunk, e->dir);
	if (compute)
		fprintf(f, ",\n{\"name\":\"activations\",\"ph\":\"C\",\"ts\":%.6f,\"pid\":%d,\"args\":{\"bytes\":%.17g}}",
			e->end * k, e->rank, e->mem_bytes);
}

int trace_write(const struct timeline *tl, const char *path, double us_per_unit, const char *name,
		char *err)
{
	if (tl->nranks < 1) return errf(err, "trace: timeline has no ranks");
	if (!(us_per_unit > 0)) return errf(err, "trace: microseconds per time unit must be positive");
	struct outfile o;
	char e2[ERR_LEN];
	if (outfile_open(&o, path, e2)) return errf(err, "trace: %s", e2);
	FILE *f = outfile_text(&o);
	if (!f) {
		outfile_abort(&o);
		return errf(err, "trace: out of memory");
	}
	fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"name\":", f);
	json_string(f, name ? name : "scaleplan");
	fputs("},\"traceEvents\":[\n", f);
	write_metadata(f, tl);
	for (size_t i = 0; i < tl->n; i++) write_event(f, &tl->ev[i], us_per_unit);
	fputs("\n]}\n", f);
	if (outfile_commit(&o, e2)) return errf(err, "trace: %s", e2);
	return 0;
}

/* ---- measured ops ---- */

static const char *stream_name(int s) { return s == TRACE_COMPUTE ? "compute" : "comm"; }

static void write_op(FILE *f, const struct trace_op *e, int r)
{
	fprintf(f, ",\n{\"ph\": \"X\", \"name\": \"%s\", \"cat\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f",
		e->name, stream_name(e->stream), r, e->stream, e->start_s * 1e6, (e->end_s - e->start_s) * 1e6);
	if (e->stream == TRACE_COMPUTE && e->layer0 >= 0)
		fprintf(f, ", \"args\": {\"mb\": %d, \"chunk\": %d, \"stage\": %d, \"layers\": %d, \"first_layer\": %d}",
			e->mb, e->chunk, e->stage, e->layer1 - e->layer0, e->layer0);
	else if (e->stream == TRACE_COMPUTE && e->stage >= 0)
		fprintf(f, ", \"args\": {\"stage\": %d}", e->stage);
	fputc('}', f);
}

int trace_write_measured(const char *path, const char *plan_json, int nranks, const size_t *nops,
			 const struct trace_op *ops, size_t stride, char *err)
{
	struct outfile o;
	char e2[ERR_LEN];
	if (outfile_open(&o, path, e2)) return errf(err, "trace: %s", e2);
	FILE *f = outfile_text(&o);
	if (!f) {
		outfile_abort(&o);
		return errf(err, "trace: out of memory");
	}
	fprintf(f, "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"source\": \"scaleplan run (measured)\", "
		   "\"plan\": %s},\n\"traceEvents\": [\n", plan_json ? plan_json : "null");
	for (int r = 0; r < nranks; r++) {
		fprintf(f, "%s{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"args\": {\"name\": \"rank %d\"}}",
			r ? ",\n" : "", r, r);
		for (int s = 0; s < 2; s++)
			fprintf(f, ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, "
				   "\"args\": {\"name\": \"%s\"}}", r, s, stream_name(s));
		for (size_t i = 0; i < nops[r]; i++) write_op(f, &ops[(size_t)r * stride + i], r);
	}
	fprintf(f, "\n]}\n");
	if (outfile_commit(&o, e2)) return errf(err, "trace: %s", e2);
	return 0;
}

/* ---- reading measured op times ---- */

static int op_kind_of(const char *name)
{
	static const char *const names[OPT_KINDS] = {"F", "B", "W", "BW", "optimizer"};
	for (int k = 0; k < OPT_KINDS; k++)
		if (!strcmp(name, names[k])) return k;
	return -1;
}

/* A numeric field of o; 0 when present and a number, else -1 with err. */
static int num_field(const cJSON *o, const char *key, long idx, const char *what, double *v, char *err)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!x) return errf(err, "op times: event %ld (%s): missing field '%s'", idx, what, key);
	if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
		return errf(err, "op times: event %ld (%s): field '%s' must be a number", idx, what, key);
	*v = x->valuedouble;
	return 0;
}

/* Checks one complete event; returns its op kind (-1: not an op), stage and duration in s. */
static int check_event(const cJSON *ev, long idx, int *kind, int *stage, int *layers, double *dur_s, char *err)
{
	double v;
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(ev, "name");
	if (!cJSON_IsString(name)) return errf(err, "op times: event %ld: missing string field 'name'", idx);
	const char *nm = name->valuestring;
	if (num_field(ev, "ts", idx, nm, &v, err) || num_field(ev, "pid", idx, nm, &v, err) ||
	    num_field(ev, "tid", idx, nm, &v, err) || num_field(ev, "dur", idx, nm, dur_s, err))
		return -1;
	if (*dur_s < 0) return errf(err, "op times: event %ld (%s): 'dur' must not be negative", idx, nm);
	*dur_s *= 1e-6;
	*kind = op_kind_of(nm);
	if (*kind < 0) return 0;
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
	if (!cJSON_IsObject(args)) return errf(err, "op times: event %ld (%s): missing object 'args'", idx, nm);
	if (num_field(args, "stage", idx, nm, &v, err)) return -1;
	if (v < 0 || v >= PLAN_MAX_STAGES || v != floor(v))
		return errf(err, "op times: event %ld (%s): args.stage %g is not a stage number (0..%d)", idx, nm, v,
			    PLAN_MAX_STAGES - 1);
	*stage = (int)v;
	if (*kind != OPT_OPT && num_field(args, "mb", idx, nm, &v, err)) return -1;
	if (cJSON_GetObjectItemCaseSensitive(args, "chunk") && num_field(args, "chunk", idx, nm, &v, err)) return -1;
	*layers = -1;
	if (cJSON_GetObjectItemCaseSensitive(args, "layers")) {
		if (num_field(args, "layers", idx, nm, &v, err)) return -1;
		if (v < 0 || v > 1e6) return errf(err, "op times: event %ld (%s): args.layers %g is out of range", idx, nm, v);
		*layers = (int)v;
	}
	return 0;
}

static int add_events(const cJSON *arr, struct op_times *t, int pass, char *err)
{
	long idx = 0;
	const cJSON *ev;
	cJSON_ArrayForEach(ev, arr) {
		idx++;
		if (!cJSON_IsObject(ev)) return errf(err, "op times: event %ld is not an object", idx);
		const cJSON *ph = cJSON_GetObjectItemCaseSensitive(ev, "ph");
		if (!cJSON_IsString(ph)) return errf(err, "op times: event %ld: missing string field 'ph'", idx);
		if (strcmp(ph->valuestring, "X")) continue;
		int kind = -1, stage = 0, layers = -1;
		double dur;
		if (check_event(ev, idx, &kind, &stage, &layers, &dur, err)) return -1;
		if (pass == 0) {
			t->events++;
			if (kind < 0) t->ignored++;
			else if (stage + 1 > t->nstages) t->nstages = stage + 1;
		} else if (kind >= 0) {
			t->mean_s[kind][stage] += dur;
			t->n[kind][stage]++;
			if (layers >= 0) t->layers[stage] = layers;
		}
	}
	return 0;
}

int trace_read_op_times(const char *path, struct op_times *out, char *err)
{
	memset(out, 0, sizeof(*out));
	char *text = read_file(path, (size_t)1 << 30, err);
	if (!text) return -1;
	int rc = trace_parse_op_times(text, path, out, err);
	free(text);
	return rc;
}

int trace_parse_op_times(const char *text, const char *path, struct op_times *out, char *err)
{
	memset(out, 0, sizeof(*out));
	cJSON *root = cJSON_Parse(text);
	if (!root) return errf(err, "op times: %s: malformed JSON", path);
	const cJSON *arr = cJSON_IsArray(root) ? root : cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
	int rc = -1;
	if (!cJSON_IsArray(arr)) {
		errf(err, "op times: %s: missing array 'traceEvents'", path);
		goto out;
	}
	if (add_events(arr, out, 0, err)) goto out;
	if (out->nstages == 0) {
		errf(err, "op times: %s: no complete (ph \"X\") events named F, B, W, BW or optimizer", path);
		goto out;
	}
	for (int k = 0; k < OPT_KINDS; k++) {
		out->mean_s[k] = calloc((size_t)out->nstages, sizeof(double));
		out->n[k] = calloc((size_t)out->nstages, sizeof(int));
		if (!out->mean_s[k] || !out->n[k]) { errf(err, "op times: out of memory"); goto out; }
	}
	out->layers = malloc((size_t)out->nstages * sizeof(int));
	if (!out->layers) { errf(err, "op times: out of memory"); goto out; }
	for (int s = 0; s < out->nstages; s++) out->layers[s] = -1;
	if (add_events(arr, out, 1, err)) goto out;
	for (int k = 0; k < OPT_KINDS; k++)
		for (int s = 0; s < out->nstages; s++)
			if (out->n[k][s]) out->mean_s[k][s] /= out->n[k][s];
	/* `scaleplan run` writes the plan it ran beside the events */
	const cJSON *od = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "otherData") : NULL;
	const cJSON *pl = od ? cJSON_GetObjectItemCaseSensitive(od, "plan") : NULL;
	if (cJSON_IsObject(pl) && !(out->plan_json = cJSON_PrintUnformatted(pl))) { errf(err, "op times: out of memory"); goto out; }
	rc = 0;
out:
	cJSON_Delete(root);
	if (rc) op_times_free(out);
	return rc;
}
