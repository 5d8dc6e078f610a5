/* collective — NCCL's algorithm/protocol choice over the fabric tiers, and the reader of the
 * library's cost table. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "sim/collective.h"
#include "sim/embedded.h"
#include "sim/util.h"

static const char *const names[COLL_PRICED] = {"all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send_recv"};

const char *coll_name(enum coll c) { return c < COLL_PRICED ? names[c] : "?"; }

double coll_busbw_factor(enum coll c, int n)
{
	if (n <= 1) return 0;
	switch (c) {
	case COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
	case COLL_REDUCESCATTER: case COLL_ALLGATHER: case COLL_ALLTOALL: return (double)(n - 1) / n;
	default: return 1;
	}
}

struct span span_nodes(int n, int nodes)
{
	struct span g;
	g.n = n;
	g.units[0] = nodes < 1 ? 1 : nodes;
	for (int t = 1; t < HW_MAX_TIERS; t++) g.units[t] = 1;
	return g;
}

void coll_bandwidths(const struct hw *h, const struct span *g, double *nvl_bps, double *net_bps)
{
	double nvl = h->tier[0].busbw_bps, net = 0;
	for (int t = 1; t < h->ntiers; t++) {
		if (g->units[t - 1] <= 1) break;
		double bw = h->tier[t].busbw_bps / h->tier[t].oversub;
		if (!net || bw < net) net = bw;
	}
	*nvl_bps = nvl * h->comm_eff;
	*net_bps = (net ? net : nvl) * h->comm_eff;
}

/* One (algorithm, protocol) NCCL offers: base + hops, then the traffic at the protocol's
 * share of the bandwidth, as a line in the message size; nothing when NCCL does not offer the
 * pair. traffic_per_byte: seconds per byte of the message at the full bandwidth. */
static void offer(struct coll_fit *f, const struct coll_lib *L, const double *net_hop, int algo, int a, int p,
		  double hops_nvl, double hops_net, double traffic_per_byte, double fixed)
{
	if (L->base_s[a][p] < 0 || L->hop_nvl_s[a][p] < 0 || L->hop_net_s[a][p] < 0) return;
	int i = f->n++;
	f->algo[i] = (signed char)algo;
	double hop = net_hop ? net_hop[p] : L->hop_net_s[a][p];
	f->base[i] = L->base_s[a][p] + hops_nvl * L->hop_nvl_s[a][p] + hops_net * hop + fixed;
	f->per_byte[i] = traffic_per_byte / L->bw_frac[p];
}

/* the candidates NCCL's cost model weighs for c over g, in the order it weighs them;
 * send/recv and all-to-all report ALGO_P2P */
void coll_fit_init(const struct hw *h, enum coll c, const struct span *g, struct coll_fit *f)
{
	int n = g->n;
	f->c = c;
	f->g = *g;
	f->n = 0;
	f->table = h->tables.present && g->units[0] <= 1;
	f->ramp = h->curve.n > 1 && g->units[0] <= 1 && (c == COLL_ALLREDUCE || c == COLL_REDUCESCATTER || c == COLL_ALLGATHER);
	f->lat = 0;
	f->busf = coll_busbw_factor(c, n);
	if (n <= 1) return;
	const struct coll_lib *L = &h->lib;
	/* the steps of a ring or tree run in lockstep, so each network step takes the latency of
	 * the highest tier the group spans, where that tier states its own */
	const double *nh = NULL;
	for (int t = 1; t < h->ntiers && g->units[t - 1] > 1; t++)
		nh = h->tier[t].has_hop ? h->tier[t].hop_s : NULL;
	int k = g->units[0] < n ? g->units[0] : n;
	double ppn = (double)n / k, fb = coll_busbw_factor(c, n), nvl, net;
	coll_bandwidths(h, g, &nvl, &net);
	if (c == COLL_SENDRECV) { /* one hop, ring latency; Simple/LL128/LL by size */
		for (int p = 0; p < PROTO_COUNT; p++)
			offer(f, L, nh, ALGO_P2P, ALGO_RING, p, k == 1, k > 1, 1 / (k > 1 ? net : nvl), 0);
		return;
	}
	if (c == COLL_ALLTOALL) {
		/* no ring: every byte for another node crosses a NIC, the rest NVLink, all at once;
		 * one hop of latency per peer class */
		double t = k > 1 ? fmax(fb * (k - 1) / k / net, fb / k / nvl) : fb / nvl;
		for (int p = 0; p < PROTO_COUNT; p++) offer(f, L, nh, ALGO_P2P, ALGO_RING, p, 1, k > 1, t, 0);
		return;
	}
	/* ring: (n−1) steps per phase, all-reduce has two phases; (k−1) of each phase's steps
	 * leave a node (NCCL's latency model); the ring itself is a cycle that leaves every node
	 * once, k of its n hops, and each node spreads its rings over its NICs, so a GPU's NIC
	 * carries k/n of its traffic and NVLink the rest, all at once: the slower share sets the
	 * time [nccl-tests#309: 8 NICs per node bound a multi-node ring at 8 NIC rates] */
	double ph = c == COLL_ALLREDUCE ? 2 : 1, steps = ph * (n - 1), net_steps = ph * (k - 1);
	double share = k > 1 ? (double)k / n : 0;
	double ring = k > 1 ? fb * fmax(share / net, ppn > 1 ? (1 - share) / nvl : 0) : fb / nvl;
	for (int p = 0; p < PROTO_COUNT; p++) offer(f, L, nh, ALGO_RING, ALGO_RING, p, steps - net_steps, net_steps, ring, 0);
	double lk = k > 1 && (c == COLL_ALLREDUCE || ppn == 1) ? log2(k) : 0;
	if (c == COLL_ALLREDUCE && k > 1) /* tree: a chain inside each node, a tree across nodes */
		for (int p = 0; p < PROTO_COUNT; p++) offer(f, L, nh, ALGO_TREE, ALGO_TREE, p, 2 * (ppn - 1), 2 * lk, ring, 0);
	if (c == COLL_ALLREDUCE && k == 1 && n > 2 && h->tier[0].nvls_busbw_bps > 0) /* NVLink SHARP */
		for (int p = 0; p < PROTO_COUNT; p++)
			offer(f, L, nh, ALGO_NVLS, ALGO_NVLS, p, 1, 0, fb / (h->tier[0].nvls_busbw_bps * h->comm_eff), 0);
	if (c != COLL_ALLREDUCE && k > 1 && ppn == 1) /* PAT: one rank per node */
		for (int p = 0; p < PROTO_COUNT; p++)
			offer(f, L, nh, ALGO_PAT, ALGO_PAT, p, 0, lk / 3.5, ring / L->pat_bw_frac, n * L->pat_rank_s);
	for (int i = 0; i < f->n; i++)
		if (!i || f->base[i] < f->lat) f->lat = f->base[i];
}

/* the profile's measured factor at `bus` bytes per rank: piecewise linear in log(bytes) between
 * its points (1..n-1), the end values beyond them */
static double curve_k(const struct hw_coll_curve *c, double bus)
{
	int i = 1, j = c->n - 1; /* bus[i] < bus <= bus[j] */
	if (bus <= c->bus[i]) return c->k[i];
	if (bus >= c->bus[j]) return c->k[j];
	while (j - i > 1) {
		int mid = (i + j) / 2;
		if (c->bus[mid] < bus) i = mid;
		else j = mid;
	}
	if (c->k[i] == c->k[j]) return c->k[i];
	return c->k[i] + (log(bus) - c->lbus[i]) / (c->lbus[j] - c->lbus[i]) * (c->k[j] - c->k[i]);
}

double coll_fit_time(const struct hw *h, const struct coll_fit *f, double bytes, int *algo)
{
	*algo = coll_default_algo(f->c);
	if (f->g.n <= 1 || bytes <= 0) return 0;
	double t; /* inside one NVLink domain a measured table of the op and group size wins */
	if (f->table && hwt_coll_s(&h->tables, f->c, f->g.n, bytes, 1,
				   1 / hwt_ratio(h->comm_eff * h->tier[0].busbw_bps, h->tables.ref_comm_eff * h->tables.ref_bw_bps), &t))
		return t;
	double best = -1; /* the first of the fastest, as NCCL's search keeps it */
	for (int i = 0; i < f->n; i++) {
		t = f->base[i] + bytes * f->per_byte[i];
		if (best < 0 || t < best) { best = t; *algo = f->algo[i]; }
	}
	/* inside one NVLink domain, NCCL's own model prices mid-size messages faster than they run:
	 * the time above the latency takes the profile's measured factor at the bytes each rank
	 * moves (struct hw_coll_curve) */
	if (f->ramp && best > f->lat) best = f->lat + curve_k(&h->curve, bytes * f->busf) * (best - f->lat);
	return best;
}

static double coll_pick(const struct hw *h, enum coll c, double bytes, const struct span *g, int *algo)
{
	struct coll_fit f;
	coll_fit_init(h, c, g, &f);
	return coll_fit_time(h, &f, bytes, algo);
}

double coll_time(const struct hw *h, enum coll c, double bytes, const struct span *g)
{
	int a;
	return coll_pick(h, c, bytes, g, &a);
}

int coll_algo(const struct hw *h, enum coll c, double bytes, const struct span *g)
{
	int a;
	coll_pick(h, c, bytes, g, &a);
	return a;
}

double coll_latency(const struct hw *h, enum coll c, const struct span *g)
{
	return coll_time(h, c, 1e-9, g);
}

/* ---------------------------------------------------------------- the library's table */

static int read_triplet(const cJSON *a, double scale, double *out, const char *what, char *err)
{
	if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != PROTO_COUNT) return errf(err, "collective library: %s must be an array of %d numbers", what, PROTO_COUNT);
	int i = 0;
	for (const cJSON *e = a->child; e; e = e->next, i++) {
		if (!cJSON_IsNumber(e) || e->valuedouble > 1e6) return errf(err, "collective library: %s[%d] must be a number", what, i);
		out[i] = e->valuedouble < 0 ? -1 : e->valuedouble * scale;
	}
	return 0;
}

static int read_algos(const cJSON *o, struct coll_lib *L, char *err)
{
	static const char *const algos[ALGO_COUNT] = {"ring", "tree", "nvls", "pat"};
	for (int a = 0; a < ALGO_COUNT; a++) {
		const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, algos[a]);
		if (!cJSON_IsObject(x)) return errf(err, "collective library: algorithms.%s missing", algos[a]);
		if (read_triplet(cJSON_GetObjectItemCaseSensitive(x, "base_us"), 1e-6, L->base_s[a], "base_us", err) ||
		    read_triplet(cJSON_GetObjectItemCaseSensitive(x, "nvlink_hop_us"), 1e-6, L->hop_nvl_s[a], "nvlink_hop_us", err) ||
		    read_triplet(cJSON_GetObjectItemCaseSensitive(x, "net_hop_us"), 1e-6, L->hop_net_s[a], "net_hop_us", err))
			return -1;
	}
	const cJSON *pat = cJSON_GetObjectItemCaseSensitive(o, "pat");
	const cJSON *bf = cJSON_GetObjectItemCaseSensitive(pat, "ring_bw_fraction"), *pr = cJSON_GetObjectItemCaseSensitive(pat, "per_rank_us");
	if (!cJSON_IsNumber(bf) || bf->valuedouble <= 0 || bf->valuedouble > 1 || !cJSON_IsNumber(pr) || pr->valuedouble < 0)
		return errf(err, "collective library: algorithms.pat needs ring_bw_fraction in (0, 1] and per_rank_us >= 0");
	L->pat_bw_frac = bf->valuedouble;
	L->pat_rank_s = pr->valuedouble * 1e-6;
	/* what each algorithm connects, per channel (its buffers are the memory outside the pool) */
	const cJSON *conn = cJSON_GetObjectItemCaseSensitive(o, "connections");
	static const char *const ckeys[ALGO_P2P + 1] = {"ring", "tree", "nvls", "pat", "p2p_per_peer"};
	for (int a = 0; a <= ALGO_P2P; a++) {
		const cJSON *x = cJSON_GetObjectItemCaseSensitive(conn, ckeys[a]);
		if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble > 64)
			return errf(err, "collective library: algorithms.connections.%s must be a number in [0, 64]", ckeys[a]);
		L->conns[a] = x->valuedouble;
	}
	const cJSON *nv = cJSON_GetObjectItemCaseSensitive(o, "nvls_buffer_mib_per_head");
	if (!cJSON_IsNumber(nv) || nv->valuedouble < 0 || nv->valuedouble > 1e4)
		return errf(err, "collective library: algorithms.nvls_buffer_mib_per_head must be a number in [0, 1e4]");
	L->nvls_head_bytes = nv->valuedouble * 1048576.0;
	const cJSON *ps = cJSON_GetObjectItemCaseSensitive(o, "p2p_net_shared_kib_per_channel");
	if (!cJSON_IsNumber(ps) || ps->valuedouble < 0 || ps->valuedouble > 1e6)
		return errf(err, "collective library: algorithms.p2p_net_shared_kib_per_channel must be a number in [0, 1e6]");
	L->p2p_net_shared_bytes = ps->valuedouble * 1024.0;
	return 0;
}

int coll_lib_load(const char *name, struct coll_lib *L, char *err)
{
	char key[128];
	snprintf(key, sizeof(key), "comm/%s.json", name);
	const char *text = embedded_find(key);
	if (!text) return errf(err, "collective library '%.64s' is not built in", name);
	memset(L, 0, sizeof(*L));
	cJSON *o = cJSON_Parse(text);
	if (!o) return errf(err, "collective library %s: malformed JSON", name);
	int rc = read_triplet(cJSON_GetObjectItemCaseSensitive(o, "bw_fraction"), 1, L->bw_frac, "bw_fraction", err) ||
		 read_algos(cJSON_GetObjectItemCaseSensitive(o, "algorithms"), L, err) ? -1 : 0;
	for (int p = 0; rc == 0 && p < PROTO_COUNT; p++)
		if (L->bw_frac[p] <= 0 || L->bw_frac[p] > 1) rc = errf(err, "collective library %s: bw_fraction must be in (0, 1]", name);
	cJSON_Delete(o);
	return rc;
}
