/* hw — hardware profile reader. Profiles are strict: every field below is required, unknown
 * keys are errors (a typo must not silently fall back to a default), and "sources"/"notes"
 * carry provenance text. A profile may name another as its "base" and state only what differs
 * (a cluster profile: the same GPU, its own network). File units: TFLOP/s, GB (1e9 bytes) or
 * GiB, GB/s, microseconds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>
#include "sim/embedded.h"
#include "sim/collective.h"
#include "sim/hw.h"
#include "sim/util.h"

struct hw_field {
	const char *key;
	size_t off;
	double scale;     /* file unit -> SI */
	double lo, hi;    /* allowed range in file units */
	int optional;
};

#define HOFF(f) offsetof(struct hw, f)
static const struct hw_field fields[] = {
	{"peak_bf16_tflops", HOFF(peak_bf16_flops), 1e12, 1e-4, 1e5, 0}, /* a CPU rank: ~0.1 */
	{"peak_fp8_tflops", HOFF(peak_fp8_flops), 1e12, 0, 1e5, 0},
	{"hbm_gib", HOFF(hbm_bytes), GIB, 1, 1e5, 0},
	{"hbm_bw_gbps", HOFF(hbm_bw_bps), 1e9, 0.01, 1e6, 0}, /* a CPU rank among several: ~1 */
	{"gemm_eff", HOFF(gemm_eff), 1, 0.01, 1, 0},
	{"gemm_eff_fp8", HOFF(gemm_eff_fp8), 1, 0.01, 1, 1},
	{"gemm_half_dim", HOFF(gemm_half_dim), 1, 0, 1e6, 0},
	{"attn_eff", HOFF(attn_eff), 1, 0.01, 1, 0},
	{"attn_eff_cudnn", HOFF(attn_eff_cudnn), 1, 0.01, 1, 1},
	{"mem_eff", HOFF(mem_eff), 1, 0.01, 1, 0},
	{"comm_eff", HOFF(comm_eff), 1, 0.01, 1, 0},
	{"overlap_slowdown", HOFF(overlap_slowdown), 1, 0, 1, 0},
	{"workspace_mib", HOFF(workspace_bytes), 1048576.0, 0, 1e6, 0},
	{"alloc_frag_native", HOFF(frag_native), 1, 1, 4, 0},
	{"alloc_frag_expandable", HOFF(frag_expandable), 1, 1, 4, 0},
	{"context_gib", HOFF(context_bytes), GIB, 0, 1e3, 0},
	{"nccl_conn_mib", HOFF(nccl_conn_bytes), 1048576.0, 0, 1e4, 0},
	{"step_overhead_ms", HOFF(step_overhead_s), 1e-3, 0, 1e5, 0},
	{"kernel_us", HOFF(kernel_s), 1e-6, 0, 1e5, 0},
	{"host_op_us", HOFF(host_op_s), 1e-6, 0, 1e5, 0},
	{"host_collective_us", HOFF(host_coll_s), 1e-6, 0, 1e5, 0},
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

/* one tier of "network": {"name", "gpus", "link": "nvlink"|"net", "busbw_gbps",
 * ["nvls_busbw_gbps"], ["oversubscription"], ["hop_us": [LL, LL128, Simple]]} */
static int read_tier(const cJSON *o, const char *name, int i, struct hw_tier *t, char *err)
{
	memset(t, 0, sizeof(*t));
	t->oversub = 1;
	if (!cJSON_IsObject(o)) return errf(err, "gpu %s: network[%d] must be an object", name, i);
	int have_bw = 0, have_link = 0, have_gpus = 0;
	for (const cJSON *it = o->child; it; it = it->next) {
		const char *k = it->string;
		if (!strcmp(k, "name")) {
			if (!cJSON_IsString(it)) return errf(err, "gpu %s: network[%d].name must be a string", name, i);
			snprintf(t->name, sizeof(t->name), "%s", it->valuestring);
		} else if (!strcmp(k, "link")) {
			if (!cJSON_IsString(it) || (strcmp(it->valuestring, "nvlink") && strcmp(it->valuestring, "net")))
				return errf(err, "gpu %s: network[%d].link must be \"nvlink\" or \"net\"", name, i);
			t->net = !strcmp(it->valuestring, "net");
			have_link = 1;
		} else if (!strcmp(k, "gpus")) {
			if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 1 << 24 || it->valuedouble != (int)it->valuedouble)
				return errf(err, "gpu %s: network[%d].gpus must be an integer in [0, 2^24]", name, i);
			t->gpus = it->valueint;
			have_gpus = 1;
		} else if (!strcmp(k, "busbw_gbps") || !strcmp(k, "nvls_busbw_gbps") || !strcmp(k, "oversubscription")) {
			int over = k[0] == 'o';
			double lo = over ? 1 : k[0] == 'n' ? 0 : 0.1;
			if (!cJSON_IsNumber(it) || it->valuedouble < lo || it->valuedouble > (over ? 64 : 1e6))
				return errf(err, "gpu %s: network[%d].%s must be a number in [%g, %g]", name, i, k, lo, over ? 64 : 1e6);
			if (over) t->oversub = it->valuedouble;
			else if (k[0] == 'n') t->nvls_busbw_bps = it->valuedouble * 1e9;
			else { t->busbw_bps = it->valuedouble * 1e9; have_bw = 1; }
		} else if (!strcmp(k, "hop_us")) {
			if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != PROTO_COUNT)
				return errf(err, "gpu %s: network[%d].hop_us must be an array of %d numbers (LL, LL128, Simple)", name, i, PROTO_COUNT);
			int j = 0;
			for (const cJSON *e = it->child; e; e = e->next, j++) {
				if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > 1e4)
					return errf(err, "gpu %s: network[%d].hop_us[%d] must be a number in [0, 1e4]", name, i, j);
				t->hop_s[j] = e->valuedouble * 1e-6;
			}
			t->has_hop = 1;
		} else {
			return errf(err, "gpu %s: network[%d]: unknown key '%s'", name, i, k);
		}
	}
	if (!have_bw || !have_link || !have_gpus) return errf(err, "gpu %s: network[%d] needs link, gpus and busbw_gbps", name, i);
	if (t->has_hop && !t->net) return errf(err, "gpu %s: network[%d].hop_us: only a network tier (link \"net\") has it", name, i);
	return 0;
}

static int read_network(const cJSON *a, const char *name, struct hw *h, char *err)
{
	if (!cJSON_IsArray(a)) return errf(err, "gpu %s: network must be an array of tiers", name);
	for (const cJSON *it = a->child; it; it = it->next) {
		if (h->ntiers == HW_MAX_TIERS) return errf(err, "gpu %s: network: at most %d tiers", name, HW_MAX_TIERS);
		if (read_tier(it, name, h->ntiers, &h->tier[h->ntiers], err)) return -1;
		h->ntiers++;
	}
	if (h->ntiers < 1) return errf(err, "gpu %s: network needs at least one tier", name);
	for (int i = 0; i < h->ntiers; i++) {
		const struct hw_tier *t = &h->tier[i];
		if ((i == 0) == t->net) return errf(err, "gpu %s: network[%d]: the first tier, and only it, is the NVLink domain", name, i);
		int last = i == h->ntiers - 1;
		if (last != (t->gpus == 0)) return errf(err, "gpu %s: network[%d].gpus: 0 (the whole cluster) on the last tier only", name, i);
		if (i > 0 && !last && (t->gpus <= h->tier[i - 1].gpus || t->gpus % h->tier[i - 1].gpus))
			return errf(err, "gpu %s: network[%d].gpus (%d) must be a larger multiple of the tier below (%d)", name, i, t->gpus, h->tier[i - 1].gpus);
	}
	h->gpus_per_node = h->tier[0].gpus;
	return 0;
}

/* "nvlink_coll_curve": {"op": "all_reduce" | "reduce_scatter" | "all_gather", "ranks": 2..the
 * domain's GPUs, "mib": [...] strictly increasing message sizes (nccl-tests sizes, MiB),
 * "busbw_gbps": [...] as many bus bandwidths}; its first point is the smallest message, whose
 * time the others are measured above (a benchmark's own per-call cost cancels) */
static int read_coll_curve(const cJSON *o, const char *name, struct hw_coll_curve *c, char *err)
{
	static const int ops[] = {COLL_ALLREDUCE, COLL_REDUCESCATTER, COLL_ALLGATHER};
	memset(c, 0, sizeof(*c));
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(o, "op"), *rk = cJSON_GetObjectItemCaseSensitive(o, "ranks");
	const cJSON *mib = cJSON_GetObjectItemCaseSensitive(o, "mib"), *bw = cJSON_GetObjectItemCaseSensitive(o, "busbw_gbps");
	c->op = -1;
	for (size_t i = 0; cJSON_IsString(op) && i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(op->valuestring, coll_name(ops[i]))) c->op = ops[i];
	if (c->op < 0) return errf(err, "gpu %s: nvlink_coll_curve.op must be all_reduce, reduce_scatter or all_gather", name);
	if (!cJSON_IsNumber(rk) || rk->valuedouble < 2 || rk->valuedouble > 1024 || rk->valuedouble != (int)rk->valuedouble)
		return errf(err, "gpu %s: nvlink_coll_curve.ranks must be an integer in [2, 1024]", name);
	c->ranks = rk->valueint;
	int n = cJSON_IsArray(mib) ? cJSON_GetArraySize(mib) : -1;
	if (n < 2 || n > HW_CURVE_MAX || !cJSON_IsArray(bw) || cJSON_GetArraySize(bw) != n)
		return errf(err, "gpu %s: nvlink_coll_curve: mib and busbw_gbps must be arrays of the same length, 2 to %d points", name, HW_CURVE_MAX);
	const cJSON *a = mib->child, *b = bw->child;
	for (int i = 0; i < n; i++, a = a->next, b = b->next) {
		if (!cJSON_IsNumber(a) || !(a->valuedouble > 0) || a->valuedouble > 1e7 || (i && a->valuedouble <= c->mib[i - 1]))
			return errf(err, "gpu %s: nvlink_coll_curve.mib[%d] must be a positive size larger than the one before", name, i);
		if (!cJSON_IsNumber(b) || !(b->valuedouble > 0) || b->valuedouble > 1e5)
			return errf(err, "gpu %s: nvlink_coll_curve.busbw_gbps[%d] must be in (0, 1e5]", name, i);
		c->mib[i] = a->valuedouble;
		c->gbps[i] = b->valuedouble;
	}
	c->n = n;
	return 0;
}

/* k, bus and lbus at each point after the first, against the profile's model without a curve
 * (h->curve is still empty); then the curve is the profile's. A refusal only for a domain the
 * group cannot fit in. */
static int curve_init(struct hw *h, struct hw_coll_curve *c, const char *name, char *err)
{
	if (c->ranks > h->gpus_per_node)
		return errf(err, "gpu %s: nvlink_coll_curve.ranks (%d) must fit in one NVLink domain (%d GPUs)", name, c->ranks, h->gpus_per_node);
	struct span g = span_nodes(c->ranks, 1);
	double f = coll_busbw_factor(c->op, c->ranks), lat = coll_latency(h, c->op, &g);
	double t0 = c->mib[0] * 1048576.0 * f / (c->gbps[0] * 1e9);
	for (int i = 1; i < c->n; i++) {
		/* a message whose modelled transfer is below the latency is latency-bound: its time
		 * and the smallest message's differ by noise, k 1 */
		double S = c->mib[i] * 1048576.0;
		double t = S * f / (c->gbps[i] * 1e9) - t0, m = coll_time(h, c->op, S, &g) - lat;
		c->bus[i] = S * f;
		c->lbus[i] = log(c->bus[i]);
		c->k[i] = m >= lat && t > m ? t / m : 1;
	}
	h->curve = *c;
	return 0;
}

double hw_overlap_cost(const struct hw *h, double comm, double win)
{
	if (comm <= 0) return 0;
	if (win < 0) win = 0;
	return fmax(0, comm - win) + h->overlap_slowdown * fmin(comm, win);
}

/* a built-in profile's text: a GPU (hw/NAME), or another by its folder (stack/NAME: what
 * every GPU profile shares); NULL if there is none */
static const char *builtin_text(const char *name)
{
	char key[300];
	snprintf(key, sizeof(key), "hw/%s.json", name);
	const char *text = embedded_find(key);
	snprintf(key, sizeof(key), "%s.json", name);
	return text || !strchr(name, '/') ? text : embedded_find(key);
}

/* the text of a built-in profile or of a JSON file; *owned is what the caller frees */
static const char *profile_text(const char *name_or_path, char **owned, char *err)
{
	*owned = NULL;
	const char *text = builtin_text(name_or_path);
	if (text) return text;
	if (!strchr(name_or_path, '/') && !strstr(name_or_path, ".json"))
		return errf(err, "gpu: unknown gpu '%s' (not a built-in profile; give a JSON path)", name_or_path), NULL;
	if (!(*owned = read_file(name_or_path, 1 << 24, err))) return errf(err, "gpu: cannot read '%s'", name_or_path), NULL;
	return *owned;
}

/* a base's text: a built-in profile or a regular file (never a pipe or a device to block on) */
static const char *base_text(const char *name, char **owned)
{
	struct stat st;
	*owned = NULL;
	const char *text = builtin_text(name);
	if (!text && strchr(name, '/') && !stat(name, &st) && S_ISREG(st.st_mode)) text = *owned = read_file(name, 1 << 24, NULL);
	return text;
}

#define HW_BASE_DEPTH 4 /* a base of a base of ...: deeper is a cycle or a mistake */

/* o with its "base" resolved: the base profile's keys (its own base resolved first), each
 * replaced by o's, and "sources" merged source by source (a source o sets to null is
 * dropped). The base's name never passes on. Consumes o; NULL on error. */
static cJSON *resolve_base(cJSON *o, const char *name, int depth, char *err)
{
	cJSON *bn = cJSON_GetObjectItemCaseSensitive(o, "base");
	if (!bn) return o;
	cJSON *b = NULL;
	char *owned = NULL;
	if (!cJSON_IsString(bn) || !bn->valuestring[0])
		errf(err, "gpu %s: base must be the name of a built-in profile or a JSON path", name);
	else if (depth >= HW_BASE_DEPTH)
		errf(err, "gpu %s: base: more than %d profiles deep (a profile that is its own base?)", name, HW_BASE_DEPTH);
	else {
		const char *text = base_text(bn->valuestring, &owned);
		if (!text) errf(err, "gpu %s: base: unknown profile '%s' (not built in, not a readable JSON path)", name, bn->valuestring);
		else if (!(b = cJSON_Parse(text))) errf(err, "gpu %s: base %s: malformed JSON", name, bn->valuestring);
		else if (!cJSON_IsObject(b)) { errf(err, "gpu %s: base %s: profile must be a JSON object", name, bn->valuestring); cJSON_Delete(b); b = NULL; }
		else b = resolve_base(b, bn->valuestring, depth + 1, err);
	}
	free(owned);
	if (!b) { cJSON_Delete(o); return NULL; }
	cJSON_DeleteItemFromObjectCaseSensitive(b, "name");
	while (o->child) {
		cJSON *it = cJSON_DetachItemViaPointer(o, o->child);
		/* looked up each time: a key o repeats may have replaced it */
		cJSON *bsrc = cJSON_GetObjectItemCaseSensitive(b, "sources");
		if (!strcmp(it->string, "base")) { cJSON_Delete(it); continue; }
		if (!strcmp(it->string, "sources") && cJSON_IsObject(it) && cJSON_IsObject(bsrc)) {
			while (it->child) {
				cJSON *s = cJSON_DetachItemViaPointer(it, it->child);
				cJSON_DeleteItemFromObjectCaseSensitive(bsrc, s->string);
				if (cJSON_IsNull(s)) cJSON_Delete(s);
				else cJSON_AddItemToObject(bsrc, s->string, s);
			}
			cJSON_Delete(it);
			continue;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(b, it->string);
		cJSON_AddItemToObject(b, it->string, it);
	}
	cJSON_Delete(o);
	return b;
}

/* a profile's text as one JSON object, its base resolved; NULL and err on failure */
static cJSON *parse_profile(const char *text, const char *name, char *err)
{
	cJSON *o = cJSON_Parse(text);
	if (!o) return errf(err, "gpu %s: malformed JSON", name), NULL;
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return errf(err, "gpu %s: profile must be a JSON object", name), NULL;
	}
	return resolve_base(o, name, 0, err);
}

cJSON *hw_json_load(const char *name_or_path, char *err)
{
	char *owned;
	const char *text = profile_text(name_or_path, &owned, err);
	cJSON *o = text ? parse_profile(text, name_or_path, err) : NULL;
	free(owned);
	return o;
}

int hw_from_json(const char *text, const char *name, struct hw *h, char *err)
{
	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "%s", name);
	cJSON *o = parse_profile(text, name, err);
	if (!o) return -1;
	int rc = -1;
	struct hw_coll_curve curve = {0};
	for (cJSON *it = o->child; it; it = it->next) {
		if (!strcmp(it->string, "sources") || !strcmp(it->string, "notes") || !strcmp(it->string, "description"))
			continue; /* provenance text; "base" was resolved above */
		if (!strcmp(it->string, "name")) {
			if (!cJSON_IsString(it)) { errf(err, "gpu %s: name must be a string", name); goto out; }
			snprintf(h->name, sizeof(h->name), "%s", it->valuestring);
			continue;
		}
		if (!strcmp(it->string, "nccl_channels") || !strcmp(it->string, "nccl_p2p_net_channels")) {
			if (!cJSON_IsNumber(it) || it->valuedouble < 1 || it->valuedouble > 64 || it->valuedouble != (int)it->valuedouble)
				{ errf(err, "gpu %s: %s must be an integer in [1, 64]", name, it->string); goto out; }
			*(!strcmp(it->string, "nccl_channels") ? &h->nccl_channels : &h->nccl_p2p_net_channels) = it->valueint;
			continue;
		}
		if (!strcmp(it->string, "network")) {
			if (read_network(it, name, h, err)) goto out;
			continue;
		}
		if (!strcmp(it->string, "tables")) {
			if (hw_tables_from_json(it, name, &h->tables, err)) goto out;
			continue;
		}
		if (!strcmp(it->string, "nvlink_coll_curve")) {
			if (!cJSON_IsObject(it)) { errf(err, "gpu %s: nvlink_coll_curve must be an object", name); goto out; }
			if (read_coll_curve(it, name, &curve, err)) goto out;
			continue;
		}
		size_t i;
		for (i = 0; i < NFIELDS; i++)
			if (!strcmp(it->string, fields[i].key)) break;
		if (i == NFIELDS) { errf(err, "gpu %s: unknown key '%s'", name, it->string); goto out; }
		if (!cJSON_IsNumber(it)) { errf(err, "gpu %s: %s must be a number", name, it->string); goto out; }
		double v = it->valuedouble;
		if (v < fields[i].lo || v > fields[i].hi)
			{ errf(err, "gpu %s: %s (%g) must be in [%g, %g]", name, it->string, v, fields[i].lo, fields[i].hi); goto out; }
		*(double *)((char *)h + fields[i].off) = v * fields[i].scale;
	}
	if (!h->ntiers) { errf(err, "gpu %s: missing required field network", name); goto out; }
	if (h->gpus_per_node < 1) { errf(err, "gpu %s: network[0].gpus (the NVLink domain) must be at least 1", name); goto out; }
	if (coll_lib_load("nccl", &h->lib, err)) goto out;
	if (!h->nccl_channels) { errf(err, "gpu %s: missing required field nccl_channels", name); goto out; }
	if (!h->nccl_p2p_net_channels) { errf(err, "gpu %s: missing required field nccl_p2p_net_channels", name); goto out; }
	for (size_t i = 0; i < NFIELDS; i++)
		if (!fields[i].optional && !cJSON_GetObjectItemCaseSensitive(o, fields[i].key))
			{ errf(err, "gpu %s: missing required field %s", name, fields[i].key); goto out; }
	if (curve.n && curve_init(h, &curve, name, err)) goto out;
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}

int hw_load(const char *name_or_path, struct hw *h, char *err)
{
	char *owned;
	const char *text = profile_text(name_or_path, &owned, err);
	if (!text) return -1;
	const char *file = strchr(name_or_path, '/') ? strrchr(name_or_path, '/') + 1 : name_or_path;
	int rc = hw_from_json(text, file, h, err);
	free(owned);
	return rc;
}
