/* trace — Chrome Trace Event JSON writer, and the reader of measured op times from such files.
 * Every record is a small cJSON object streamed through reports/json_out.h, one per line, so a
 * trace of a million events is never one tree in memory. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "reports/json_out.h"
#include "reports/trace.h"
#include "sim/outfile.h"
#include "sim/util.h"

/* one metadata record: name, ph "M", pid, [tid,] args {akey: a string or a number} */
static cJSON *meta(const char *name, int pid, int tid, const char *akey, const char *astr, int anum)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "ph", "M");
	cJSON_AddNumberToObject(o, "pid", pid);
	if (tid >= 0) cJSON_AddNumberToObject(o, "tid", tid);
	cJSON *args = cJSON_AddObjectToObject(o, "args");
	if (astr) cJSON_AddStringToObject(args, akey, astr);
	else cJSON_AddNumberToObject(args, akey, anum);
	return o;
}

static void stream_item(struct json_stream *js, cJSON *o)
{
	json_stream_item(js, o);
	cJSON_Delete(o);
}

static void write_metadata(struct json_stream *js, const struct timeline *tl)
{
	unsigned used[TL_STREAM_COUNT] = {0};
	for (size_t i = 0; i < tl->n; i++)
		if (tl->ev[i].stream < TL_STREAM_COUNT) used[tl->ev[i].stream] = 1;
	for (int r = 0; r < tl->nranks; r++) {
		char name[32];
		snprintf(name, sizeof(name), "pp rank %d", r);
		stream_item(js, meta("process_name", r, -1, "name", name, 0));
		stream_item(js, meta("process_sort_index", r, -1, "sort_index", NULL, r));
		for (int s = 0; s < TL_STREAM_COUNT; s++) {
			if (!used[s]) continue;
			stream_item(js, meta("thread_name", r, s, "name", tl_stream_name(s), 0));
			stream_item(js, meta("thread_sort_index", r, s, "sort_index", NULL, s));
		}
	}
}

/* The records of a simulated timeline, each built once and rewritten per event (a trace holds
 * up to millions): every value is one of the buffers below, numbers as the text they have
 * always had (ts and dur with six decimals of a microsecond, bytes with 17 digits), printed once
 * each. cJSON 1.7.15 prints every number, integers too, with "%1.15g" and reads it back to
 * check it: with number items the writer took 2.3x as long. */
enum { R_NAME, R_CAT, R_TS, R_DUR, R_PID, R_TID, R_MB, R_STAGE, R_CHUNK, R_DIR, R_CTS, R_CPID, R_BYTES, R_N };
struct tl_records {
	cJSON *x, *c;          /* the complete event, the activation counter */
	char v[R_N][48];
};

static cJSON *add_ref(cJSON *o, const char *key, const char *buf, int raw)
{
	cJSON *x = o ? (raw ? json_raw_ref(buf) : cJSON_CreateStringReference(buf)) : NULL;
	if (x) cJSON_AddItemToObject(o, key, x);
	return x;
}

static int records_init(struct tl_records *t)
{
	static const char *const xkeys[] = {"pid", "tid"}, *const akeys[] = {"mb", "stage", "chunk", "dir"};
	memset(t, 0, sizeof(*t));
	t->x = cJSON_CreateObject();
	int ok = add_ref(t->x, "name", t->v[R_NAME], 0) && add_ref(t->x, "cat", t->v[R_CAT], 0) &&
		 cJSON_AddStringToObject(t->x, "ph", "X") && add_ref(t->x, "ts", t->v[R_TS], 1) &&
		 add_ref(t->x, "dur", t->v[R_DUR], 1);
	for (int i = 0; i < 2; i++) ok = ok && add_ref(t->x, xkeys[i], t->v[R_PID + i], 1);
	cJSON *args = cJSON_AddObjectToObject(t->x, "args");
	for (int i = 0; i < 4; i++) ok = ok && add_ref(args, akeys[i], t->v[R_MB + i], 1);
	t->c = cJSON_CreateObject();
	ok = ok && cJSON_AddStringToObject(t->c, "name", "activations") && cJSON_AddStringToObject(t->c, "ph", "C") &&
	     add_ref(t->c, "ts", t->v[R_CTS], 1) && add_ref(t->c, "pid", t->v[R_CPID], 1) &&
	     add_ref(cJSON_AddObjectToObject(t->c, "args"), "bytes", t->v[R_BYTES], 1);
	return ok ? 0 : -1;
}

static void records_free(struct tl_records *t)
{
	cJSON_Delete(t->x);
	cJSON_Delete(t->c);
}

static void write_event(struct json_stream *js, struct tl_records *t, const struct tl_event *e, double k)
{
	char (*v)[48] = t->v;
	int compute = e->kind <= TL_BW;
	if (compute || e->kind == TL_P2P)
		snprintf(v[R_NAME], 48, "%s%s%d%s", compute ? tl_kind_name(e->kind) : "send ",
			 compute ? "" : (e->stream == TL_P2P_FWD ? "act " : "grad "), e->mb, e->overlap ? " (F&B)" : "");
	else if (e->stage >= 0)
		snprintf(v[R_NAME], 48, "%s stage %d", tl_kind_name(e->kind), e->stage);
	else
		snprintf(v[R_NAME], 48, "%s", tl_kind_name(e->kind));
	snprintf(v[R_CAT], 48, "%s", compute || e->kind == TL_OPT ? "compute" : "comm");
	snprintf(v[R_TS], 48, "%.6f", e->start * k);
	snprintf(v[R_DUR], 48, "%.6f", (e->end - e->start) * k);
	snprintf(v[R_PID], 48, "%d", e->rank);
	snprintf(v[R_TID], 48, "%d", e->stream);
	snprintf(v[R_MB], 48, "%d", e->mb);
	snprintf(v[R_STAGE], 48, "%d", e->stage);
	snprintf(v[R_CHUNK], 48, "%d", e->chunk);
	snprintf(v[R_DIR], 48, "%d", e->dir);
	json_stream_item(js, t->x);
	if (!compute) return;
	snprintf(v[R_CTS], 48, "%.6f", e->end * k);
	snprintf(v[R_CPID], 48, "%d", e->rank);
	snprintf(v[R_BYTES], 48, "%.17g", e->mem_bytes);
	json_stream_item(js, t->c);
}

/* {"displayTimeUnit":"ms","otherData":other,"traceEvents":[]}; other is taken */
static cJSON *trace_head(cJSON *other)
{
	cJSON *h = cJSON_CreateObject();
	cJSON_AddStringToObject(h, "displayTimeUnit", "ms");
	if (other) cJSON_AddItemToObject(h, "otherData", other);
	cJSON_AddArrayToObject(h, "traceEvents");
	return h;
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
	cJSON *other = cJSON_CreateObject();
	cJSON_AddStringToObject(other, "name", name ? name : "scaleplan");
	cJSON *head = trace_head(other);
	struct json_stream js;
	json_stream_begin(&js, f, head);
	cJSON_Delete(head);
	write_metadata(&js, tl);
	struct tl_records t;
	if (records_init(&t)) js.failed = 1;
	for (size_t i = 0; i < tl->n && !js.failed; i++) write_event(&js, &t, &tl->ev[i], us_per_unit);
	records_free(&t);
	if (json_stream_end(&js)) {
		outfile_abort(&o);
		return errf(err, "trace: out of memory");
	}
	if (outfile_commit(&o, e2)) return errf(err, "trace: %s", e2);
	return 0;
}

/* ---- measured ops ---- */

static const char *stream_name(int s) { return s == TRACE_COMPUTE ? "compute" : "comm"; }

static void write_op(struct json_stream *js, const struct trace_op *e, int r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "ph", "X");
	cJSON_AddStringToObject(o, "name", e->name);
	cJSON_AddStringToObject(o, "cat", stream_name(e->stream));
	cJSON_AddNumberToObject(o, "pid", r);
	cJSON_AddNumberToObject(o, "tid", e->stream);
	json_add_raw_fixed(o, "ts", e->start_s * 1e6, 3);
	json_add_raw_fixed(o, "dur", (e->end_s - e->start_s) * 1e6, 3);
	if (e->stream == TRACE_COMPUTE && e->layer0 >= 0) {
		cJSON *a = cJSON_AddObjectToObject(o, "args");
		cJSON_AddNumberToObject(a, "mb", e->mb);
		cJSON_AddNumberToObject(a, "chunk", e->chunk);
		cJSON_AddNumberToObject(a, "stage", e->stage);
		cJSON_AddNumberToObject(a, "layers", e->layer1 - e->layer0);
		cJSON_AddNumberToObject(a, "first_layer", e->layer0);
	} else if (e->stream == TRACE_COMPUTE && e->stage >= 0) {
		cJSON_AddNumberToObject(cJSON_AddObjectToObject(o, "args"), "stage", e->stage);
	}
	stream_item(js, o);
}

/* {"ph":"M","name":name,"pid":r,[tid,]"args":{"name":value}} */
static cJSON *measured_meta(const char *name, int r, int tid, const char *value)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "ph", "M");
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddNumberToObject(o, "pid", r);
	if (tid >= 0) cJSON_AddNumberToObject(o, "tid", tid);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "args"), "name", value);
	return o;
}

int trace_write_measured(const char *path, const char *plan_json, int nranks, const size_t *nops,
			 const struct trace_op *ops, size_t stride, char *err)
{
	cJSON *plan = plan_json ? cJSON_Parse(plan_json) : cJSON_CreateNull();
	if (!plan) return errf(err, "trace: the plan is not JSON");
	cJSON *other = cJSON_CreateObject();
	cJSON_AddStringToObject(other, "source", "scaleplan run (measured)");
	cJSON_AddItemToObject(other, "plan", plan);
	cJSON *head = trace_head(other);
	struct outfile o;
	char e2[ERR_LEN];
	if (outfile_open(&o, path, e2)) {
		cJSON_Delete(head);
		return errf(err, "trace: %s", e2);
	}
	FILE *f = outfile_text(&o);
	if (!f) {
		cJSON_Delete(head);
		outfile_abort(&o);
		return errf(err, "trace: out of memory");
	}
	struct json_stream js;
	json_stream_begin(&js, f, head);
	cJSON_Delete(head);
	for (int r = 0; r < nranks; r++) {
		char name[32];
		snprintf(name, sizeof(name), "rank %d", r);
		stream_item(&js, measured_meta("process_name", r, -1, name));
		for (int s = 0; s < 2; s++) stream_item(&js, measured_meta("thread_name", r, s, stream_name(s)));
		for (size_t i = 0; i < nops[r]; i++) write_op(&js, &ops[(size_t)r * stride + i], r);
	}
	if (json_stream_end(&js)) {
		outfile_abort(&o);
		return errf(err, "trace: out of memory");
	}
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
