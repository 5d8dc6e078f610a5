/* hw_table — reader, writer and interpolation of a profile's measured tables. The file keeps
 * nccl-tests' columns for collectives (size, time, busbw) so a person can compare them with
 * nccl-tests output; the reader takes the times (busbw is derived from them). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "sim/collective.h"
#include "sim/hw_table.h"
#include "sim/util.h"

/* ---- interpolation ---------------------------------------------------------------------- */

/* index i with x[i] <= v < x[i+1] (clamped to [0, n-2]) and the log-space weight of x[i+1] */
static int bracket(const double *x, int n, double v, double *w)
{
	if (n < 2 || v <= x[0]) { *w = 0; return 0; }
	if (v >= x[n - 1]) { *w = 1; return n - 2; }
	int i = 0;
	while (i + 2 < n && x[i + 1] <= v) i++;
	*w = log(v / x[i]) / log(x[i + 1] / x[i]);
	return i;
}

double hwt_curve_at(const struct hwt_curve *c, double x)
{
	if (c->n <= 0) return 0;
	if (c->n == 1 || x <= c->x[0]) return c->y[0];
	double w;
	int i = bracket(c->x, c->n, x, &w);
	return exp((1 - w) * log(c->y[i]) + w * log(c->y[i + 1]));
}

double hwt_gemm_flops(const struct hw_tables *t, double M, double N, double K)
{
	if (!t->gm || !t->gn || !t->gk) return 0;
	double wm = 0, wn = 0, wk = 0;
	int im = t->gm > 1 ? bracket(t->gemm_m, t->gm, M, &wm) : 0;
	int in = t->gn > 1 ? bracket(t->gemm_n, t->gn, N, &wn) : 0;
	int ik = t->gk > 1 ? bracket(t->gemm_k, t->gk, K, &wk) : 0;
	double acc = 0;
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++)
			for (int c = 0; c < 2; c++) {
				double w = (a ? wm : 1 - wm) * (b ? wn : 1 - wn) * (c ? wk : 1 - wk);
				if (w == 0) continue;
				int i = im + (t->gm > 1 ? a : 0), j = in + (t->gn > 1 ? b : 0), k = ik + (t->gk > 1 ? c : 0);
				acc += w * log(t->gemm_flops[i][j][k]);
			}
	return exp(acc);
}

int hwt_coll_s(const struct hw_tables *t, int op, int n, double bytes, double lat_scale, double xfer_scale,
	       double *s)
{
	if (op < 0 || op >= HWT_COLL_OPS) return 0;
	for (int g = 0; g < HWT_MAX_GROUPS; g++) {
		const struct hwt_curve *c = &t->coll[op][g];
		if (t->coll_ranks[op][g] != n || c->n < 1) continue;
		int last = c->n - 1;
		if (bytes <= c->x[last] || c->n < 2) {
			*s = hwt_curve_at(c, bytes);
		} else { /* beyond the table: the last segment's bandwidth */
			double slope = (c->y[last] - c->y[last - 1]) / (c->x[last] - c->x[last - 1]);
			*s = c->y[last] + (bytes - c->x[last]) * fmax(0, slope);
		}
		double lat = fmin(c->y[0], *s);
		*s = lat * lat_scale + (*s - lat) * xfer_scale;
		return 1;
	}
	return 0;
}

int hwt_curve_add(struct hwt_curve *c, double x, double y)
{
	if (c->n >= HWT_MAX_POINTS || !(x > 0) || !(y > 0) || (c->n && x <= c->x[c->n - 1])) return -1;
	c->x[c->n] = x;
	c->y[c->n] = y;
	c->n++;
	return 0;
}

/* ---- reading ---------------------------------------------------------------------------- */

/* a strictly increasing (inc) or merely positive array of at most max numbers, times scale */
static int num_array(const cJSON *a, const char *name, const char *key, double *out, int max, double scale,
		     int inc, char *err)
{
	if (!cJSON_IsArray(a)) return errf(err, "gpu %s: tables: %s must be an array of numbers", name, key);
	int n = 0;
	for (const cJSON *e = a->child; e; e = e->next) {
		if (!cJSON_IsNumber(e) || !(e->valuedouble > 0))
			return errf(err, "gpu %s: tables: %s entries must be positive numbers", name, key);
		if (n == max) return errf(err, "gpu %s: tables: %s has more than %d entries", name, key, max);
		out[n] = e->valuedouble * scale;
		if (inc && n && out[n] <= out[n - 1])
			return errf(err, "gpu %s: tables: %s must increase strictly", name, key);
		n++;
	}
	if (!n) return errf(err, "gpu %s: tables: %s is empty", name, key);
	return n;
}

/* object o may only hold the keys listed (NULL-terminated) */
static int only_keys(const cJSON *o, const char *name, const char *what, const char *const *keys, char *err)
{
	if (!cJSON_IsObject(o)) return errf(err, "gpu %s: tables: %s must be an object", name, what);
	for (const cJSON *it = o->child; it; it = it->next) {
		int k = 0;
		while (keys[k] && strcmp(keys[k], it->string)) k++;
		if (!keys[k]) return errf(err, "gpu %s: tables: %s: unknown key '%s'", name, what, it->string);
	}
	return 0;
}

static const cJSON *need(const cJSON *o, const char *key, const char *name, const char *what, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v) errf(err, "gpu %s: tables: %s lacks '%s'", name, what, key);
	return v;
}

static int read_curve(const cJSON *xs, const cJSON *ys, const char *name, const char *key, double sx, double sy,
		      struct hwt_curve *c, char *err)
{
	int n = num_array(xs, name, key, c->x, HWT_MAX_POINTS, sx, 1, err);
	if (n < 0) return -1;
	int m = num_array(ys, name, key, c->y, HWT_MAX_POINTS, sy, 0, err);
	if (m < 0) return -1;
	if (m != n) return errf(err, "gpu %s: tables: %s: %d sizes but %d values", name, key, n, m);
	c->n = n;
	return 0;
}

static int read_gemm(const cJSON *o, const char *name, struct hw_tables *t, char *err)
{
	static const char *const keys[] = {"m", "n", "k", "tflops", NULL};
	const cJSON *f;
	if (only_keys(o, name, "gemm", keys, err) || !need(o, "m", name, "gemm", err) || !need(o, "n", name, "gemm", err) ||
	    !need(o, "k", name, "gemm", err) || !(f = need(o, "tflops", name, "gemm", err)))
		return -1;
	if ((t->gm = num_array(cJSON_GetObjectItem(o, "m"), name, "gemm.m", t->gemm_m, HWT_MAX_AXIS, 1, 1, err)) < 0 ||
	    (t->gn = num_array(cJSON_GetObjectItem(o, "n"), name, "gemm.n", t->gemm_n, HWT_MAX_AXIS, 1, 1, err)) < 0 ||
	    (t->gk = num_array(cJSON_GetObjectItem(o, "k"), name, "gemm.k", t->gemm_k, HWT_MAX_AXIS, 1, 1, err)) < 0)
		return -1;
	if (cJSON_GetArraySize(f) != t->gm) return errf(err, "gpu %s: tables: gemm.tflops must have %d rows (m)", name, t->gm);
	int i = 0;
	for (const cJSON *a = f->child; a; a = a->next, i++) {
		if (cJSON_GetArraySize(a) != t->gn) return errf(err, "gpu %s: tables: gemm.tflops[%d] must have %d rows (n)", name, i, t->gn);
		int j = 0;
		for (const cJSON *b = a->child; b; b = b->next, j++) {
			char key[48];
			snprintf(key, sizeof(key), "gemm.tflops[%d][%d]", i, j);
			int nk = num_array(b, name, key, t->gemm_flops[i][j], HWT_MAX_AXIS, 1e12, 0, err);
			if (nk < 0) return -1;
			if (nk != t->gk) return errf(err, "gpu %s: tables: %s must hold %d numbers (k)", name, key, t->gk);
		}
	}
	return 0;
}

static int read_attention(const cJSON *o, const char *name, struct hw_tables *t, char *err)
{
	static const char *const keys[] = {"head_dim", "seq", "fwd_tflops", "bwd_tflops", NULL};
	const cJSON *hd, *s, *f, *b;
	if (only_keys(o, name, "attention", keys, err) || !(hd = need(o, "head_dim", name, "attention", err)) ||
	    !(s = need(o, "seq", name, "attention", err)) || !(f = need(o, "fwd_tflops", name, "attention", err)) ||
	    !(b = need(o, "bwd_tflops", name, "attention", err)))
		return -1;
	if (!cJSON_IsNumber(hd) || hd->valuedouble < 1) return errf(err, "gpu %s: tables: attention.head_dim must be a positive integer", name);
	t->attn_head_dim = hd->valueint;
	return read_curve(s, f, name, "attention.fwd_tflops", 1, 1e12, &t->attn_fwd, err) ||
	       read_curve(s, b, name, "attention.bwd_tflops", 1, 1e12, &t->attn_bwd, err) ? -1 : 0;
}

static int coll_op(const char *s)
{
	for (int c = 0; c < HWT_COLL_OPS; c++)
		if (!strcmp(s, coll_name((enum coll)c))) return c;
	return -1;
}

static int read_collective(const cJSON *o, const char *name, struct hw_tables *t, char *err)
{
	static const char *const keys[] = {"op", "ranks", "bytes", "time_us", "busbw_gbps", NULL};
	const cJSON *op, *r, *b, *tm;
	if (only_keys(o, name, "collectives[]", keys, err) || !(op = need(o, "op", name, "collectives[]", err)) ||
	    !(r = need(o, "ranks", name, "collectives[]", err)) || !(b = need(o, "bytes", name, "collectives[]", err)) ||
	    !(tm = need(o, "time_us", name, "collectives[]", err)))
		return -1;
	int c = cJSON_IsString(op) ? coll_op(op->valuestring) : -1;
	if (c < 0) return errf(err, "gpu %s: tables: collectives[].op must be all_reduce, reduce_scatter, all_gather, all_to_all or send_recv", name);
	if (!cJSON_IsNumber(r) || r->valuedouble < 2 || r->valuedouble != r->valueint)
		return errf(err, "gpu %s: tables: collectives[].ranks must be an integer >= 2", name);
	int g = 0;
	while (g < HWT_MAX_GROUPS && t->coll_ranks[c][g] && t->coll_ranks[c][g] != r->valueint) g++;
	if (g == HWT_MAX_GROUPS) return errf(err, "gpu %s: tables: more than %d group sizes for %s", name, HWT_MAX_GROUPS, op->valuestring);
	if (t->coll_ranks[c][g]) return errf(err, "gpu %s: tables: %s over %d ranks given twice", name, op->valuestring, r->valueint);
	t->coll_ranks[c][g] = r->valueint;
	return read_curve(b, tm, name, "collectives[].time_us", 1, 1e-6, &t->coll[c][g], err);
}

static int read_reference(const cJSON *o, const char *name, struct hw_tables *t, char *err)
{
	static const char *const keys[] = {"gemm_eff", "attn_eff", "mem_eff", "comm_eff", "tier0_busbw_gbps", NULL};
	double *dst[] = {&t->ref_gemm_eff, &t->ref_attn_eff, &t->ref_mem_eff, &t->ref_comm_eff, &t->ref_bw_bps};
	const double scale[] = {1, 1, 1, 1, 1e9};
	if (only_keys(o, name, "reference", keys, err)) return -1;
	for (int i = 0; keys[i]; i++) {
		const cJSON *v = need(o, keys[i], name, "reference", err);
		if (!v) return -1;
		if (!cJSON_IsNumber(v) || v->valuedouble < 0) return errf(err, "gpu %s: tables: reference.%s must be a number >= 0", name, keys[i]);
		*dst[i] = v->valuedouble * scale[i];
	}
	return 0;
}

static int read_meta(const cJSON *it, const char *name, struct hw_tables *t, char *err)
{
	struct { const char *key; char *dst; size_t cap; } s[] = {
		{"backend", t->backend, sizeof(t->backend)}, {"dtype", t->dtype, sizeof(t->dtype)},
		{"host", t->host, sizeof(t->host)}, {"measured", t->measured, sizeof(t->measured)}};
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		if (strcmp(it->string, s[i].key)) continue;
		if (!cJSON_IsString(it)) return errf(err, "gpu %s: tables: %s must be a string", name, it->string);
		snprintf(s[i].dst, s[i].cap, "%s", it->valuestring);
		return 1;
	}
	if (!strcmp(it->string, "ranks") || !strcmp(it->string, "cores")) {
		if (!cJSON_IsNumber(it) || it->valuedouble < (it->string[0] == 'r') || it->valuedouble != it->valueint)
			return errf(err, "gpu %s: tables: %s must be an integer >= %d", name, it->string, it->string[0] == 'r');
		*(it->string[0] == 'r' ? &t->ranks : &t->cores) = it->valueint;
		return 1;
	}
	return 0;
}

int hw_tables_from_json(const cJSON *o, const char *name, struct hw_tables *t, char *err)
{
	memset(t, 0, sizeof(*t));
	if (!cJSON_IsObject(o)) return errf(err, "gpu %s: tables must be an object", name);
	t->present = 1;
	int have_ref = 0;
	for (const cJSON *it = o->child; it; it = it->next) {
		int rc = read_meta(it, name, t, err);
		if (rc < 0) return -1;
		if (rc) continue;
		if (!strcmp(it->string, "gemm")) rc = read_gemm(it, name, t, err);
		else if (!strcmp(it->string, "attention")) rc = read_attention(it, name, t, err);
		else if (!strcmp(it->string, "memory")) {
			static const char *const keys[] = {"bytes", "gbps", NULL};
			rc = only_keys(it, name, "memory", keys, err) ||
			     read_curve(cJSON_GetObjectItem(it, "bytes"), cJSON_GetObjectItem(it, "gbps"), name, "memory.gbps", 1, 1e9, &t->mem, err);
		} else if (!strcmp(it->string, "collectives")) {
			if (!cJSON_IsArray(it)) return errf(err, "gpu %s: tables: collectives must be an array", name);
			for (const cJSON *c = it->child; c && !rc; c = c->next) rc = read_collective(c, name, t, err);
		} else if (!strcmp(it->string, "reference")) {
			rc = read_reference(it, name, t, err);
			have_ref = 1;
		} else return errf(err, "gpu %s: tables: unknown key '%s'", name, it->string);
		if (rc) return -1;
	}
	if (!have_ref) return errf(err, "gpu %s: tables: missing 'reference' (the profile's values when measured)", name);
	return 0;
}

/* ---- writing ---------------------------------------------------------------------------- */

static cJSON *scaled_array(const double *v, int n, double scale)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < n; i++) {
		char buf[32];
		snprintf(buf, sizeof(buf), "%.9g", v[i] * scale);
		cJSON_AddItemToArray(a, cJSON_CreateRaw(buf));
	}
	return a;
}

static void add_gemm(cJSON *o, const struct hw_tables *t)
{
	cJSON *g = cJSON_AddObjectToObject(o, "gemm");
	cJSON_AddItemToObject(g, "m", scaled_array(t->gemm_m, t->gm, 1));
	cJSON_AddItemToObject(g, "n", scaled_array(t->gemm_n, t->gn, 1));
	cJSON_AddItemToObject(g, "k", scaled_array(t->gemm_k, t->gk, 1));
	cJSON *f = cJSON_AddArrayToObject(g, "tflops");
	for (int i = 0; i < t->gm; i++) {
		cJSON *row = cJSON_CreateArray();
		for (int j = 0; j < t->gn; j++) cJSON_AddItemToArray(row, scaled_array(t->gemm_flops[i][j], t->gk, 1e-12));
		cJSON_AddItemToArray(f, row);
	}
}

cJSON *hw_tables_to_json(const struct hw_tables *t)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "backend", t->backend);
	cJSON_AddStringToObject(o, "dtype", t->dtype);
	cJSON_AddStringToObject(o, "host", t->host);
	cJSON_AddStringToObject(o, "measured", t->measured);
	cJSON_AddNumberToObject(o, "ranks", t->ranks);
	cJSON_AddNumberToObject(o, "cores", t->cores);
	cJSON *r = cJSON_AddObjectToObject(o, "reference");
	cJSON_AddNumberToObject(r, "gemm_eff", t->ref_gemm_eff);
	cJSON_AddNumberToObject(r, "attn_eff", t->ref_attn_eff);
	cJSON_AddNumberToObject(r, "mem_eff", t->ref_mem_eff);
	cJSON_AddNumberToObject(r, "comm_eff", t->ref_comm_eff);
	cJSON_AddNumberToObject(r, "tier0_busbw_gbps", t->ref_bw_bps / 1e9);
	if (t->gm) add_gemm(o, t);
	if (t->attn_fwd.n) {
		cJSON *a = cJSON_AddObjectToObject(o, "attention");
		cJSON_AddNumberToObject(a, "head_dim", t->attn_head_dim);
		cJSON_AddItemToObject(a, "seq", scaled_array(t->attn_fwd.x, t->attn_fwd.n, 1));
		cJSON_AddItemToObject(a, "fwd_tflops", scaled_array(t->attn_fwd.y, t->attn_fwd.n, 1e-12));
		cJSON_AddItemToObject(a, "bwd_tflops", scaled_array(t->attn_bwd.y, t->attn_bwd.n, 1e-12));
	}
	if (t->mem.n) {
		cJSON *m = cJSON_AddObjectToObject(o, "memory");
		cJSON_AddItemToObject(m, "bytes", scaled_array(t->mem.x, t->mem.n, 1));
		cJSON_AddItemToObject(m, "gbps", scaled_array(t->mem.y, t->mem.n, 1e-9));
	}
	cJSON *cs = cJSON_AddArrayToObject(o, "collectives");
	for (int c = 0; c < HWT_COLL_OPS; c++)
		for (int g = 0; g < HWT_MAX_GROUPS && t->coll_ranks[c][g]; g++) {
			const struct hwt_curve *cv = &t->coll[c][g];
			int n = t->coll_ranks[c][g];
			cJSON *e = cJSON_CreateObject();
			cJSON_AddStringToObject(e, "op", coll_name((enum coll)c));
			cJSON_AddNumberToObject(e, "ranks", n);
			cJSON_AddItemToObject(e, "bytes", scaled_array(cv->x, cv->n, 1));
			cJSON_AddItemToObject(e, "time_us", scaled_array(cv->y, cv->n, 1e6));
			double bus[HWT_MAX_POINTS]; /* nccl-tests: busbw = S/t · factor(n) [NCCLT] */
			for (int i = 0; i < cv->n; i++) bus[i] = cv->x[i] / cv->y[i] * coll_busbw_factor((enum coll)c, n);
			cJSON_AddItemToObject(e, "busbw_gbps", scaled_array(bus, cv->n, 1e-9));
			cJSON_AddItemToArray(cs, e);
		}
	return o;
}
