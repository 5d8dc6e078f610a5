/* schedule — per-rank op orders of every pipeline schedule (reference/model.md §4). Each
 * generator appends one rank's ops; sched_create() runs it for every rank. */
#include <stdlib.h>
#include <string.h>
#include "sim/schedule.h"
#include "sim/util.h"

#define SCHED_MAX_PP 4096
#define SCHED_MAX_M (1 << 20)
#define SCHED_MAX_VPP 64
#define SCHED_MAX_OPS ((size_t)1 << 27)

struct emit {
	struct sched_op *ops;
	size_t n;
};

static void put(struct emit *e, int kind, int mb, int chunk, int dir, int overlap)
{
	struct sched_op *o = &e->ops[e->n++];
	o->mb = mb;
	o->kind = (uint8_t)kind;
	o->chunk = (uint8_t)chunk;
	o->dir = (uint8_t)dir;
	o->overlap = (uint8_t)overlap;
}

static int imin(int a, int b) { return a < b ? a : b; }

/* AFAB / GPipe: all forwards, then all (fused) backwards [PB; MEG §2.2.1] */
static void gen_afab(struct emit *e, int m)
{
	for (int j = 0; j < m; j++) put(e, OP_F, j, 0, 0, 0);
	for (int j = 0; j < m; j++) put(e, OP_BW, j, 0, 0, 0);
}

/* 1F1B: warm-up min(p-r-1, m) forwards, (F, B) pairs, cool-down backwards [MCODE-sched] */
static void gen_1f1b(struct emit *e, int p, int m, int r)
{
	int warm = imin(p - r - 1, m), f = 0, b = 0;
	while (f < warm) put(e, OP_F, f++, 0, 0, 0);
	while (f < m) {
		put(e, OP_F, f++, 0, 0, 0);
		put(e, OP_BW, b++, 0, 0, 0);
	}
	while (b < m) put(e, OP_BW, b++, 0, 0, 0);
}

/* Megatron interleaved order: virtual micro-batch n runs chunk (n/p)%v on micro-batch
 * (n/(p v))p + n%p, backwards with the chunk order reversed; warm-up 2(p-r-1)+(v-1)p
 * [MCODE-sched; model.md §4.4] */
static void inter_op(struct emit *e, int kind, int n, int p, int v)
{
	int c = (n / p) % v;
	int mb = (n / (p * v)) * p + n % p;
	put(e, kind, mb, kind == OP_F ? c : v - 1 - c, 0, 0);
}

static void gen_interleaved(struct emit *e, int p, int m, int v, int r)
{
	int total = m * v;
	int warm = imin(2 * (p - r - 1) + (v - 1) * p, total);
	int f = 0, b = 0;
	while (f < warm) inter_op(e, OP_F, f++, p, v);
	while (f < total) {
		inter_op(e, OP_F, f++, p, v);
		inter_op(e, OP_BW, b++, p, v);
	}
	while (b < total) inter_op(e, OP_BW, b++, p, v);
}

/* ZB-H1 / ZB-H2: 1F1B-like F/B order with input-only B; the W of a finished B waits in a FIFO
 * and runs while more than `lag` are pending (lag r for H1, 2r for H2); H2 warms up with
 * 2(p-r)-2 forwards [ZB §2.1-2.2; model.md §4.5] */
static void gen_zbh(struct emit *e, int p, int m, int r, int h2)
{
	int warm = imin(h2 ? 2 * (p - r) - 2 : p - r - 1, m);
	int lag = h2 ? 2 * r : r;
	int f = 0, b = 0, w = 0;
	while (f < warm) put(e, OP_F, f++, 0, 0, 0);
	while (b < m) {
		if (f < m) put(e, OP_F, f++, 0, 0, 0);
		put(e, OP_B, b++, 0, 0, 0);
		while (b - w > lag) put(e, OP_W, w++, 0, 0, 0);
	}
	while (w < m) put(e, OP_W, w++, 0, 0, 0);
}

/* ZB-V: 2p chunks in a V, rank r holds stages r and 2p-1-r. Warm-up 2(p-r)-1 F of chunk 0,
 * r x (F1, F0), p-r x (F1 B1 W1); steady (F0 B0 W0 F1 B1 W1); cool-down r x (B0 B1),
 * p-r x (B0 W0), then the remaining W [ZB §6; model.md §4.5]. The order is laid out for
 * max(m, 2p-1) micro-batches and ops of micro-batches >= m are dropped. */
struct vstate {
	struct emit *e;
	int m;
};

static void vput(struct vstate *v, int kind, int mb, int chunk)
{
	if (mb < v->m) put(v->e, kind, mb, chunk, 0, 0);
}

static void gen_zbv(struct emit *e, int p, int m, int r)
{
	struct vstate v = {e, m};
	int n = m > 2 * p - 1 ? m : 2 * p - 1;
	int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
	for (int i = 0; i < 2 * (p - r) - 1; i++) vput(&v, OP_F, f0++, 0);
	for (int i = 0; i < r; i++) {
		vput(&v, OP_F, f1++, 1);
		vput(&v, OP_F, f0++, 0);
	}
	for (int i = 0; i < p - r; i++) {
		vput(&v, OP_F, f1++, 1);
		vput(&v, OP_B, b1, 1);
		vput(&v, OP_W, b1++, 1);
	}
	while (f1 < f0 || f0 < n) {
		if (f0 < n) vput(&v, OP_F, f0++, 0);
		vput(&v, OP_B, b0, 0);
		vput(&v, OP_W, b0++, 0);
		vput(&v, OP_F, f1++, 1);
		vput(&v, OP_B, b1, 1);
		vput(&v, OP_W, b1++, 1);
	}
	int w0 = b0, w1 = b1;
	for (int i = 0; i < r; i++) {
		vput(&v, OP_B, b0++, 0);
		vput(&v, OP_B, b1++, 1);
	}
	for (int i = 0; i < p - r; i++) {
		vput(&v, OP_B, b0++, 0);
		vput(&v, OP_W, w0++, 0);
	}
	while (w1 < b1) vput(&v, OP_W, w1++, 1);
	while (w0 < b0) vput(&v, OP_W, w0++, 0);
}

/* DualPipe / DualPipeV: the eight steps of [DP-code dualpipe.py, dualpipev.py]
 * (model.md §4.6). `phase` 0/1 is the code's chunk phase; for DualPipe ranks in the second
 * half swap phases so that chunk == direction. B ops marked zb are input-only and queue
 * their W in a FIFO that W ops pop. */
struct dual {
	struct emit *e;
	int flip;          /* dualpipe second half: phase ^ 1 */
	int bidir;         /* dualpipe: chunk index is also the direction */
	int f[2], b[2];    /* next micro-batch per chunk */
	int *wq;           /* FIFO of chunk*mb_per_dir + mb */
	int wq_head, wq_tail, mbpd;
};

static void dual_f(struct dual *d, int phase, int overlap)
{
	int c = phase ^ d->flip;
	put(d->e, OP_F, d->f[c]++, c, d->bidir ? c : 0, overlap);
}

static void dual_b(struct dual *d, int phase, int zb)
{
	int c = phase ^ d->flip;
	int mb = d->b[c]++;
	put(d->e, zb ? OP_B : OP_BW, mb, c, d->bidir ? c : 0, 0);
	if (zb) d->wq[d->wq_tail++] = c * d->mbpd + mb;
}

static void dual_w(struct dual *d)
{
	int x = d->wq[d->wq_head++];
	int c = x / d->mbpd;
	put(d->e, OP_W, x % d->mbpd, c, d->bidir ? c : 0, 0);
}

/* half: ranks per half (DualPipe pp/2, DualPipeV pp); hr: the rank's distance from the edge;
 * nmb: micro-batches per direction (DualPipe) or in all (DualPipeV) */
static void gen_dual(struct dual *d, int half, int hr, int nmb, int middle)
{
	for (int i = 0; i < 2 * (half - hr - 1); i++) dual_f(d, 0, 0);
	for (int i = 0; i < hr + 1; i++) {
		dual_f(d, 0, 0);
		dual_f(d, 1, 0);
	}
	for (int i = 0; i < half - hr - 1; i++) {
		dual_b(d, 1, 1);
		dual_w(d);
		dual_f(d, 1, 0);
	}
	int main_steps = nmb - 2 * half + hr + 1;
	for (int i = 0; i < main_steps; i++) {
		if (i == 0 && middle) { /* not overlapped there, to shorten the bubble [DP-code] */
			dual_f(d, 0, 0);
			dual_b(d, 1, 0);
		} else {
			dual_f(d, 0, 1);
			dual_b(d, 1, 0);
		}
		dual_f(d, 1, 1);
		dual_b(d, 0, 0);
	}
	for (int i = 0; i < half - hr - 1; i++) {
		dual_b(d, 1, 0);
		dual_f(d, 1, 1);
		dual_b(d, 0, 0);
	}
	int s6 = hr + 1, zb = 0;
	for (int i = 0; i < s6; i++) {
		if (i == s6 / 2 && hr % 2 == 1) zb = 1;
		dual_b(d, 1, zb);
		if (i == s6 / 2 && hr % 2 == 0) zb = 1;
		dual_b(d, 0, zb);
	}
	for (int i = 0; i < half - hr - 1; i++) {
		dual_w(d);
		dual_b(d, 0, 1);
	}
	while (d->wq_head < d->wq_tail) dual_w(d);
}

static void gen_dualpipe_rank(struct emit *e, const struct sched *s, int r, int *wq)
{
	struct dual d;
	memset(&d, 0, sizeof(d));
	d.e = e;
	d.wq = wq;
	d.mbpd = s->mb_per_dir;
	if (s->type == SCHED_DUALPIPE) {
		int half = s->pp / 2, hr = imin(r, s->pp - 1 - r);
		d.flip = r >= half;
		d.bidir = 1;
		gen_dual(&d, half, hr, s->mb_per_dir, hr == half - 1);
	} else {
		gen_dual(&d, s->pp, r, s->m, r == s->pp - 1);
	}
}

int sched_check(enum schedule type, int pp, int m, int vpp, char *err)
{
	const char *name = schedule_name(type);
	if (type <= SCHED_NONE || type >= SCHED_COUNT)
		return errf(err, "schedule: no pipeline schedule given");
	if (pp < 1 || pp > SCHED_MAX_PP)
		return errf(err, "%s: pp (%d) must be in [1, %d]", name, pp, SCHED_MAX_PP);
	if (m < 1 || m > SCHED_MAX_M)
		return errf(err, "%s: microbatches (%d) must be in [1, %d]", name, m, SCHED_MAX_M);
	if (type == SCHED_INTERLEAVED) {
		if (vpp < 2 || vpp > SCHED_MAX_VPP)
			return errf(err, "interleaved: vpp (%d) must be in [2, %d]", vpp, SCHED_MAX_VPP);
		/* Megatron's interleaved order groups micro-batches by pp [MEG §2.2.2] */
		if (m % pp)
			return errf(err, "interleaved: pp (%d) does not divide microbatches (%d)", pp, m);
	} else if (vpp > 1) {
		return errf(err, "%s: vpp (%d) applies only to the interleaved schedule", name, vpp);
	}
	if (type == SCHED_DUALPIPE) { /* [DSV3 §3.2.1; DP-code dualpipe.py] */
		if (pp % 2)
			return errf(err, "dualpipe: pp (%d) must be even", pp);
		if (m % 2)
			return errf(err, "dualpipe: microbatches (%d) must be even (half per direction)", m);
		if (m < 2 * pp)
			return errf(err, "dualpipe: microbatches (%d) must be at least 2*pp (%d)", m, 2 * pp);
	}
	if (type == SCHED_DUALPIPEV && m < 2 * pp) /* [DP-code dualpipev.py] */
		return errf(err, "dualpipev: microbatches (%d) must be at least 2*pp (%d)", m, 2 * pp);
	int chunks = type == SCHED_INTERLEAVED ? vpp
		   : (type == SCHED_ZBV || type == SCHED_DUALPIPE || type == SCHED_DUALPIPEV) ? 2 : 1;
	if ((size_t)pp * (size_t)m * (size_t)chunks * 3 > SCHED_MAX_OPS)
		return errf(err, "%s: pp*microbatches*chunks (%zu) is too large", name,
			    (size_t)pp * (size_t)m * (size_t)chunks);
	return 0;
}

static void sched_shape(struct sched *s, enum schedule type, int pp, int m, int vpp)
{
	s->type = type;
	s->pp = pp;
	s->m = m;
	switch (type) {
	case SCHED_INTERLEAVED: s->chunks = vpp; break;
	case SCHED_ZBV: case SCHED_DUALPIPE: case SCHED_DUALPIPEV: s->chunks = 2; break;
	default: s->chunks = 1; break;
	}
	s->ndirs = type == SCHED_DUALPIPE ? 2 : 1;
	s->nstages = type == SCHED_DUALPIPE ? pp : pp * s->chunks;
	s->mb_per_dir = m / s->ndirs;
}

static void gen_rank(struct emit *e, const struct sched *s, int r, int *wq)
{
	switch (s->type) {
	case SCHED_AFAB: gen_afab(e, s->m); break;
	case SCHED_1F1B: gen_1f1b(e, s->pp, s->m, r); break;
	case SCHED_INTERLEAVED: gen_interleaved(e, s->pp, s->m, s->chunks, r); break;
	case SCHED_ZBH1: gen_zbh(e, s->pp, s->m, r, 0); break;
	case SCHED_ZBH2: gen_zbh(e, s->pp, s->m, r, 1); break;
	case SCHED_ZBV: gen_zbv(e, s->pp, s->m, r); break;
	case SCHED_DUALPIPE: case SCHED_DUALPIPEV: gen_dualpipe_rank(e, s, r, wq); break;
	default: break;
	}
}

struct sched *sched_create(enum schedule type, int pp, int m, int vpp, char *err)
{
	if (sched_check(type, pp, m, vpp, err)) return NULL;
	struct sched *s = calloc(1, sizeof(*s));
	if (!s) { errf(err, "schedule: out of memory"); return NULL; }
	sched_shape(s, type, pp, m, vpp);
	/* every rank runs at most 3 ops (F, B, W) per micro-batch and chunk */
	size_t per_rank = (size_t)3 * (size_t)s->mb_per_dir * (size_t)s->chunks * (size_t)s->ndirs;
	s->off = calloc((size_t)pp + 1, sizeof(*s->off));
	s->ops = malloc(per_rank * (size_t)pp * sizeof(*s->ops));
	int *wq = malloc(((size_t)m * 2 + 1) * sizeof(*wq));
	if (!s->off || !s->ops || !wq) {
		free(wq);
		sched_destroy(s);
		errf(err, "schedule: out of memory");
		return NULL;
	}
	struct emit e = {s->ops, 0};
	for (int r = 0; r < pp; r++) {
		s->off[r] = e.n;
		gen_rank(&e, s, r, wq);
	}
	s->off[pp] = e.n;
	s->nops = e.n;
	free(wq);
	return s;
}

void sched_destroy(struct sched *s)
{
	if (!s) return;
	free(s->off);
	free(s->ops);
	free(s);
}

int sched_stage(const struct sched *s, int rank, int chunk, int dir)
{
	switch (s->type) {
	case SCHED_INTERLEAVED: return chunk * s->pp + rank;
	case SCHED_ZBV: case SCHED_DUALPIPEV: return chunk ? 2 * s->pp - 1 - rank : rank;
	case SCHED_DUALPIPE: return dir ? s->pp - 1 - rank : rank;
	default: return rank;
	}
}

void sched_locate(const struct sched *s, int dir, int stage, int *rank, int *chunk)
{
	switch (s->type) {
	case SCHED_INTERLEAVED:
		*rank = stage % s->pp;
		*chunk = stage / s->pp;
		break;
	case SCHED_ZBV: case SCHED_DUALPIPEV:
		*chunk = stage >= s->pp;
		*rank = *chunk ? 2 * s->pp - 1 - stage : stage;
		break;
	case SCHED_DUALPIPE:
		*chunk = dir;
		*rank = dir ? s->pp - 1 - stage : stage;
		break;
	default:
		*rank = stage;
		*chunk = 0;
		break;
	}
}

const char *op_kind_name(enum op_kind k)
{
	static const char *const names[] = {"F", "B", "W", "BW"};
	return (unsigned)k < OP_KIND_COUNT ? names[k] : "?";
}
