/* profile — the measuring driver: the same loop for every backend. Each measurement runs on
 * every rank at once: after an untimed warm-up call, a trial call sets how many calls fill
 * min_time_s, the ranks agree on the mean count, meet at a barrier and time that many calls;
 * the time per call is the slowest rank's. Collectives follow nccl-tests [NCCLT]: a warm-up call, then timed calls, the slowest
 * member's time, the size S of its convention. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "runtime/comm.h"
#include "runtime/profile.h"
#include "sim/util.h"

extern const struct profile_backend profile_cpu;
/* runtime/profile_cuda.cu, linked by `make CUDA=1` only: NULL otherwise */
extern const struct profile_backend profile_cuda __attribute__((weak));

static const struct profile_backend *const backends[] = {&profile_cpu, &profile_cuda};
#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))
/* every backend scaleplan has; those not in the table above are not built into this binary */
static const char *const known[] = {"cpu", "cuda"};

const struct profile_backend *profile_backend_find(const char *name)
{
	for (size_t i = 0; i < NBACKENDS; i++)
		if (backends[i] && !strcmp(backends[i]->name, name)) return backends[i];
	return NULL;
}

int profile_backend_known(const char *name)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(known[i], name)) return 1;
	return 0;
}

const char *profile_backend_names(void)
{
	static char buf[64];
	buf[0] = 0;
	for (size_t i = 0; i < NBACKENDS; i++) {
		size_t n = strlen(buf);
		if (backends[i]) snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? ", " : "", backends[i]->name);
	}
	return buf;
}

int profile_device_for(const char *backend, int rank, int visible, int *device, char *err)
{
	if (visible <= 0)
		return errf(err, "--backend %s: rank %d sees no %s device (the driver reports none)", backend,
			    rank, backend);
	if (rank < 0) return errf(err, "rank (%d) must be >= 0", rank);
	*device = rank % visible;
	return 0;
}

void profile_default_name(const char *backend, const char *device, const char *host, int ranks, char *out,
			  size_t len)
{
	snprintf(out, len, "%s-%.40s-%dr", backend, device && device[0] ? device : host, ranks);
	for (char *p = out; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-') *p = '-';
}

void profile_opts_default(struct profile_opts *o)
{
	memset(o, 0, sizeof(*o));
	profile_limits_default(NULL, &o->lim);
	o->min_time_s = 0.05;
}

void profile_limits_default(const struct profile_backend *b, struct profile_limits *lim)
{
	int dev = b && b->device_count;
	if (!lim->max_dim) lim->max_dim = dev ? 8192 : 2048;
	if (!lim->max_seq) lim->max_seq = dev ? 4096 : 1024;
	if (!lim->heads) lim->heads = dev ? 16 : 4;
	if (!lim->head_dim) lim->head_dim = dev ? 128 : 64;
	if (!lim->max_bytes) lim->max_bytes = dev ? (size_t)256 << 20 : (size_t)16 << 20;
}

/* what one measurement calls */
struct call {
	enum { K_GEMM, K_ATTN, K_ELEM, K_STREAM } kind;
	int a, b, c, backward;
	size_t bytes;
};

static int call_once(const struct profile_backend *b, void *ws, const struct call *c, double *moved, char *err)
{
	switch (c->kind) {
	case K_GEMM: return b->gemm(ws, c->a, c->b, c->c, err);
	case K_ATTN: return b->attention(ws, c->a, c->b, c->c, c->backward, err);
	case K_ELEM: return b->elementwise(ws, c->bytes, moved, err);
	default: return b->stream(ws, c->bytes, err);
	}
}

/* the largest of every rank's v (one all-gather: the comm interface sums, it does not max) */
static int comm_allreduce_max(struct comm *w, double v, double *out, char *err)
{
	int n = comm_size(w);
	double buf[4096];
	if (n > 4096) return errf(err, "profile: more than 4096 ranks");
	if (comm_allgather(w, &v, buf, 1, COMM_F64, err)) return -1;
	*out = v;
	for (int i = 0; i < n; i++) if (buf[i] > *out) *out = buf[i];
	return 0;
}

/* seconds per call with every rank calling at once: the ranks start together after a barrier
 * and the window lasts until the slowest is done, so ranks that share cores share them here
 * as they do in a training step (a rank that finished early would otherwise have measured a
 * core of its own) */
static int time_call(const struct profile_backend *b, void *ws, struct comm *w, const struct call *c,
		     double min_s, double *s, double *moved, char *err)
{
	/* an untimed warm-up first: a library's first call for a shape plans it (cuBLASLt's
	 * heuristic, cuDNN's graph), host work that would set the repetitions too low */
	if (call_once(b, ws, c, moved, err) || b->sync(ws, err)) return -1;
	double t0 = now_s();
	if (call_once(b, ws, c, moved, err) || b->sync(ws, err)) return -1;
	double trial = now_s() - t0, reps = ceil(min_s / fmax(trial, 1e-7));
	reps = fmin(fmax(reps, 1), 1000);
	if (comm_allreduce(w, &reps, &reps, 1, COMM_F64, err)) return -1;
	reps = ceil(reps / comm_size(w)); /* the mean of the ranks' wishes, the same everywhere */
	if (comm_barrier(w, err)) return -1;
	t0 = now_s();
	for (int i = 0; i < (int)reps; i++)
		if (call_once(b, ws, c, moved, err)) return -1;
	if (b->sync(ws, err)) return -1;
	double t = (now_s() - t0) / reps, tmax;
	if (comm_allreduce_max(w, t, &tmax, err)) return -1;
	*s = tmax;
	return 0;
}

static void progress(const struct profile_opts *o, struct comm *w, const char *what, double f)
{
	if (o->progress && comm_rank(w) == 0) o->progress(o->progress_ctx, what, f);
}

/* GEMM grid: powers of 4 from 16 up to max_dim (and max_dim itself) on every axis */
static int axis(int max_dim, double *x)
{
	int n = 0;
	for (int v = 16; v < max_dim && n < HWT_MAX_AXIS - 1; v *= 4) x[n++] = v;
	x[n++] = max_dim;
	return n;
}

static int measure_gemm(const struct profile_backend *b, void *ws, struct comm *w, const struct profile_opts *o,
			struct profile_result *r, char *err)
{
	struct hw_tables *t = &r->t;
	t->gm = axis(o->lim.max_dim, t->gemm_m);
	t->gn = axis(o->lim.max_dim, t->gemm_n);
	t->gk = axis(o->lim.max_dim, t->gemm_k);
	memcpy(t->gemm_n, t->gemm_m, sizeof(t->gemm_m));
	memcpy(t->gemm_k, t->gemm_m, sizeof(t->gemm_m));
	for (int i = 0; i < t->gm; i++) {
		progress(o, w, "gemm", (double)i / t->gm);
		for (int j = 0; j < t->gn; j++)
			for (int k = 0; k < t->gk; k++) {
				struct call c = {K_GEMM, (int)t->gemm_m[i], (int)t->gemm_n[j], (int)t->gemm_k[k], 0, 0};
				double s, mv = 0;
				if (time_call(b, ws, w, &c, o->min_time_s, &s, &mv, err)) return -1;
				double f = 2.0 * c.a * c.b * c.c / s;
				t->gemm_flops[i][j][k] = f;
				if (f > r->peak_flops) r->peak_flops = f;
			}
	}
	return 0;
}

/* causal attention throughput in the simulator's FLOP count (sim/layer_cost.c): forward
 * 2·H·T·(T/2)·2d, backward 2.5 times that [FlashAttention-2 §3] */
static int measure_attention(const struct profile_backend *b, void *ws, struct comm *w, const struct profile_opts *o,
			     struct profile_result *r, char *err)
{
	struct hw_tables *t = &r->t;
	int H = o->lim.heads, d = o->lim.head_dim;
	t->attn_head_dim = d;
	for (int T = 32; T <= o->lim.max_seq; T *= 2) {
		progress(o, w, "attention", (double)T / o->lim.max_seq);
		double flops = 2.0 * H * T * (T / 2.0) * 2 * d, sf, sb, mv;
		struct call f = {K_ATTN, T, H, d, 0, 0}, bw = {K_ATTN, T, H, d, 1, 0};
		if (time_call(b, ws, w, &f, o->min_time_s, &sf, &mv, err) ||
		    time_call(b, ws, w, &bw, o->min_time_s, &sb, &mv, err))
			return -1;
		if (hwt_curve_add(&t->attn_fwd, T, flops / sf) || hwt_curve_add(&t->attn_bwd, T, 2.5 * flops / sb))
			return errf(err, "profile: attention table full");
		r->attn_flops = flops / sf;
	}
	return 0;
}

static int measure_memory(const struct profile_backend *b, void *ws, struct comm *w, const struct profile_opts *o,
			  struct profile_result *r, char *err)
{
	for (size_t bytes = 16u << 10; bytes <= o->lim.max_bytes; bytes *= 4) {
		progress(o, w, "memory", (double)bytes / o->lim.max_bytes);
		struct call e = {K_ELEM, 0, 0, 0, 0, bytes}, s = {K_STREAM, 0, 0, 0, 0, bytes};
		double se, ss, moved = 0, mv;
		if (time_call(b, ws, w, &e, o->min_time_s, &se, &moved, err) ||
		    time_call(b, ws, w, &s, o->min_time_s, &ss, &mv, err))
			return -1;
		if (hwt_curve_add(&r->t.mem, moved, moved / se)) return errf(err, "profile: memory table full");
		r->elem_bps = moved / se;
		r->stream_bps = 2.0 * bytes / ss;
	}
	return 0;
}

static int coll_call(struct comm *g, int op, void *s, void *rv, size_t count, char *err)
{
	int n = comm_size(g), me = comm_rank(g);
	switch ((enum coll)op) {
	case COLL_ALLREDUCE: return comm_allreduce(g, s, rv, count, COMM_F32, err);
	case COLL_REDUCESCATTER: return comm_reduce_scatter(g, s, rv, count, COMM_F32, err);
	case COLL_ALLGATHER: return comm_allgather(g, s, rv, count, COMM_F32, err);
	case COLL_ALLTOALL: return comm_alltoall(g, s, rv, count, COMM_F32, err);
	default: /* a ring of pairwise exchanges: every member sends to the next, receives from the previous */
		return comm_sendrecv(g, s, count, (me + 1) % n, rv, count, (me + n - 1) % n, COMM_F32, err);
	}
}

/* elements per rank for an nccl-tests size S over n ranks (the inverse of size_bytes) */
static size_t coll_count(int op, size_t S, int n)
{
	size_t e = S / sizeof(float);
	return op == COLL_ALLREDUCE || op == COLL_SENDRECV ? e : e / (size_t)n;
}

static int measure_group(const struct profile_backend *b, void *ws, struct comm *w, struct comm *g, int op,
			 const struct profile_opts *o, struct hwt_curve *cv, char *err)
{
	void *s = b->comm_buf(ws, 0), *rv = b->comm_buf(ws, 1);
	int n = comm_size(g);
	for (size_t S = 1024; S <= o->lim.max_bytes; S *= 4) {
		size_t count = coll_count(op, S, n);
		if (!count) continue;
		if (coll_call(g, op, s, rv, count, err) || b->sync(ws, err) || comm_barrier(w, err)) return -1;
		int iters = S <= (1u << 20) ? 20 : 5;
		double t0 = now_s();
		for (int i = 0; i < iters; i++)
			if (coll_call(g, op, s, rv, count, err)) return -1;
		if (b->sync(ws, err)) return -1;
		double t = (now_s() - t0) / iters;
		double max_t; /* the slowest rank anywhere: the groups ran at once, as a plan's do */
		if (comm_allreduce_max(w, t, &max_t, err)) return -1;
		size_t bytes = comm_colls[op].size_bytes(count, sizeof(float), n);
		if (hwt_curve_add(cv, (double)bytes, max_t)) return errf(err, "profile: collective table full");
	}
	return 0;
}

/* groups are split from the collective world (NCCL's ncclCommSplit where it is one); the
 * barriers and the slowest-rank agreement run on the host world w, over the same ranks */
static int measure_collectives(const struct profile_backend *b, void *ws, struct comm *w, const struct profile_opts *o,
			       struct profile_result *r, char *err)
{
	struct comm *cw = o->coll_world ? o->coll_world : w;
	if (comm_size(cw) != comm_size(w) || comm_rank(cw) != comm_rank(w))
		return errf(err, "profile: the collective world (%d ranks, rank %d) must be the host world's ranks (%d, rank %d)",
			    comm_size(cw), comm_rank(cw), comm_size(w), comm_rank(w));
	int world = comm_size(w), me = comm_rank(w), gi = 0;
	for (int n = 2; n <= world && gi < HWT_MAX_GROUPS; n *= 2, gi++) {
		if (world % n) break;
		int ranks[4096];
		if (n > 4096) break;
		for (int i = 0; i < n; i++) ranks[i] = me / n * n + i;
		struct comm *g;
		char name[24];
		snprintf(name, sizeof(name), "profile%d", n);
		if (comm_create_group(cw, ranks, n, name, &g, err)) return -1;
		int rc = 0;
		for (int op = 0; op < HWT_COLL_OPS && !rc; op++) {
			progress(o, w, "collectives", (gi * HWT_COLL_OPS + op) / (double)(HWT_COLL_OPS * 4));
			r->t.coll_ranks[op][gi] = n;
			rc = measure_group(b, ws, w, g, op, o, &r->t.coll[op][gi], err);
		}
		comm_destroy(g);
		if (rc) return -1;
		if (n == world || world % (2 * n)) {
			const struct hwt_curve *ar = &r->t.coll[0][gi];
			r->coll_lat_s = ar->y[0];
			/* busbw = S/t · 2(n−1)/n for all-reduce [NCCLT] */
			r->coll_busbw_bps = ar->x[ar->n - 1] / ar->y[ar->n - 1] * 2.0 * (n - 1) / n;
		}
	}
	return 0;
}

int profile_run(const struct profile_backend *b, struct comm *world, const struct profile_opts *o,
		struct profile_result *r, char *err)
{
	memset(r, 0, sizeof(*r));
	r->ranks = comm_size(world);
	r->t.present = 1;
	r->t.ranks = r->ranks;
	if (b->shares_cores) { /* the cores this machine's ranks share (one machine: the profile's ranks) */
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		r->t.cores = n > 0 ? (int)n : 0;
	}
	void *ws = NULL;
	/* every rank must agree the workspace exists before any collective below */
	char e2[ERR_LEN] = "";
	double bad = b->open(&o->lim, o->device, &ws, e2) ? 1 : 0;
	if (comm_allreduce(world, &bad, &bad, 1, COMM_F64, err)) { b->close(ws); return -1; }
	if (bad) { b->close(ws); return errf(err, "%s", e2[0] ? e2 : "profile: another rank could not allocate its workspace"); }
	if (b->device_info) b->device_info(ws, r->device, sizeof(r->device), &r->device_mem_bytes);
	int rc = measure_gemm(b, ws, world, o, r, err);
	if (!rc) rc = measure_attention(b, ws, world, o, r, err);
	if (!rc) rc = measure_memory(b, ws, world, o, r, err);
	if (!rc) rc = measure_collectives(b, ws, world, o, r, err);
	progress(o, world, "done", 1);
	b->close(ws);
	return rc;
}
