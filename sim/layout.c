/* layout — rank <-> coordinates and group membership. Strides follow the plan's order string;
 * EP/EDP groups split the stage index K = tp + tp_size·(cp + cp_size·dp) as etp, ep, edp
 * (innermost first). */
#include <stdlib.h>
#include <string.h>
#include "sim/layout.h"
#include "sim/plan.h"
#include "sim/util.h"

static const char *const dim_tok[DIM_COUNT] = {"tp", "cp", "dp", "pp"};
static const char *const group_names[GROUP_COUNT] = {"tp", "cp", "dp", "pp", "dp*cp", "ep", "edp"};

const char *group_name(enum group_kind g) { return g < GROUP_COUNT ? group_names[g] : "?"; }

int layout_init(struct layout *l, const struct plan *p, char *err)
{
	memset(l, 0, sizeof(*l));
	l->size[DIM_TP] = p->tp;
	l->size[DIM_CP] = p->cp;
	l->size[DIM_DP] = p->dp;
	l->size[DIM_PP] = p->pp;
	l->ep = p->ep;
	l->etp = p->etp > 0 ? p->etp : p->tp;
	l->world = p->tp * p->cp * p->dp * p->pp;
	l->gpus_per_node = p->gpus_per_node > 0 ? p->gpus_per_node : l->world;
	if ((p->tp * p->cp * p->dp) % (p->ep * l->etp) || p->tp % l->etp)
		return errf(err, "layout: ep*etp (%d) does not divide tp*dp*cp (%d)", p->ep * l->etp, p->tp * p->cp * p->dp);
	/* the order's '-'-separated names, innermost first; walked in place (every estimate
	 * lays its plan out, and strtok is neither reentrant nor cheap) */
	int stride = 1, n = 0, seen = 0;
	for (const char *tok = p->order; *tok;) {
		size_t len = 0;
		while (tok[len] && tok[len] != '-') len++;
		for (int d = 0; d < DIM_COUNT; d++) /* every name is two letters */
			if (len == 2 && tok[0] == dim_tok[d][0] && tok[1] == dim_tok[d][1] && !(seen & 1 << d)) {
				seen |= 1 << d;
				l->stride[d] = stride;
				stride *= l->size[d];
				n++;
			}
		tok += len;
		if (*tok) tok++;
	}
	if (n != DIM_COUNT)
		return errf(err, "layout: order '%s' is not a permutation of tp, cp, dp, pp", p->order);
	return 0;
}

void layout_coords(const struct layout *l, int rank, struct coords *out)
{
	for (int d = 0; d < DIM_COUNT; d++)
		out->c[d] = (rank / l->stride[d]) % l->size[d];
	int K = out->c[DIM_TP] + l->size[DIM_TP] * (out->c[DIM_CP] + l->size[DIM_CP] * out->c[DIM_DP]);
	out->etp = K % l->etp;
	out->ep = K / l->etp % l->ep;
	out->edp = K / (l->etp * l->ep);
}

int layout_rank(const struct layout *l, const int c[DIM_COUNT])
{
	int r = 0;
	for (int d = 0; d < DIM_COUNT; d++)
		r += c[d] * l->stride[d];
	return r;
}

int layout_group_size(const struct layout *l, enum group_kind g)
{
	switch (g) {
	case GROUP_TP: return l->size[DIM_TP];
	case GROUP_CP: return l->size[DIM_CP];
	case GROUP_DP: return l->size[DIM_DP];
	case GROUP_PP: return l->size[DIM_PP];
	case GROUP_DPCP: return l->size[DIM_DP] * l->size[DIM_CP];
	case GROUP_EP: return l->ep;
	case GROUP_EDP: return l->size[DIM_TP] * l->size[DIM_DP] * l->size[DIM_CP] / (l->ep * l->etp);
	default: return 0;
	}
}

/* rank with combined cp*dp index k and the other coordinates of `c` */
static int rank_with_k(const struct layout *l, const struct coords *c, int k)
{
	int cc[DIM_COUNT];
	memcpy(cc, c->c, sizeof(cc));
	cc[DIM_CP] = k % l->size[DIM_CP];
	cc[DIM_DP] = k / l->size[DIM_CP];
	return layout_rank(l, cc);
}

/* rank with stage index K = tp + tp_size·(cp + cp_size·dp) and the pp coordinate of `c` */
static int rank_with_stage_index(const struct layout *l, const struct coords *c, int K)
{
	int cc[DIM_COUNT];
	memcpy(cc, c->c, sizeof(cc));
	cc[DIM_TP] = K % l->size[DIM_TP];
	cc[DIM_CP] = K / l->size[DIM_TP] % l->size[DIM_CP];
	cc[DIM_DP] = K / (l->size[DIM_TP] * l->size[DIM_CP]);
	return layout_rank(l, cc);
}

int layout_group(const struct layout *l, enum group_kind g, int rank, int *ranks, int cap)
{
	int n = layout_group_size(l, g);
	if (n > cap || n <= 0)
		return -1;
	struct coords c;
	layout_coords(l, rank, &c);
	for (int i = 0; i < n; i++) {
		int cc[DIM_COUNT];
		memcpy(cc, c.c, sizeof(cc));
		switch (g) {
		case GROUP_TP: cc[DIM_TP] = i; ranks[i] = layout_rank(l, cc); break;
		case GROUP_CP: cc[DIM_CP] = i; ranks[i] = layout_rank(l, cc); break;
		case GROUP_DP: cc[DIM_DP] = i; ranks[i] = layout_rank(l, cc); break;
		case GROUP_PP: cc[DIM_PP] = i; ranks[i] = layout_rank(l, cc); break;
		case GROUP_DPCP: ranks[i] = rank_with_k(l, &c, i); break;
		case GROUP_EP: ranks[i] = rank_with_stage_index(l, &c, c.etp + l->etp * (i + l->ep * c.edp)); break;
		case GROUP_EDP: ranks[i] = rank_with_stage_index(l, &c, c.etp + l->etp * (c.ep + l->ep * i)); break;
		default: return -1;
		}
	}
	return n;
}

int layout_group_index(const struct layout *l, enum group_kind g, int rank)
{
	struct coords c;
	layout_coords(l, rank, &c);
	switch (g) {
	case GROUP_TP: return c.c[DIM_TP];
	case GROUP_CP: return c.c[DIM_CP];
	case GROUP_DP: return c.c[DIM_DP];
	case GROUP_PP: return c.c[DIM_PP];
	case GROUP_DPCP: return c.c[DIM_CP] + l->size[DIM_CP] * c.c[DIM_DP];
	case GROUP_EP: return c.ep;
	case GROUP_EDP: return c.edp;
	default: return -1;
	}
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

int layout_group_nodes(const struct layout *l, enum group_kind g, int rank)
{
	/* Groups are arithmetic progressions of ranks in every case but EP/EDP with cp > 1;
	 * count distinct node ids directly, bounded by the group size. */
	int n = layout_group_size(l, g);
	int stack[256];
	int *r = stack;
	int heap = 0;
	if (n > 256) {
		/* large groups: every member of a progression of stride s spans ceil-ish nodes;
		 * compute from the first and last member and the stride */
		struct coords c;
		layout_coords(l, rank, &c);
		int first, last;
		switch (g) {
		case GROUP_TP: case GROUP_CP: case GROUP_DP: case GROUP_PP: {
			int d = g == GROUP_TP ? DIM_TP : g == GROUP_CP ? DIM_CP : g == GROUP_DP ? DIM_DP : DIM_PP;
			int cc[DIM_COUNT];
			memcpy(cc, c.c, sizeof(cc));
			cc[d] = 0; first = layout_rank(l, cc);
			int s = l->stride[d];
			if (s >= l->gpus_per_node) return n;
			/* members per node = gpus_per_node / s when s divides gpus_per_node */
			int per = l->gpus_per_node / s;
			cc[d] = n - 1; last = layout_rank(l, cc);
			(void)first; (void)last;
			return (n + per - 1) / per;
		}
		default:
			heap = 1;
		}
		(void)heap;
		return n; /* conservative: assume every member on its own node */
	}
	layout_group(l, g, rank, r, 256);
	/* distinct node ids: sort, then count changes (the tuner calls this ~1e5 times) */
	for (int i = 0; i < n; i++) r[i] /= l->gpus_per_node;
	qsort(r, (size_t)n, sizeof(int), cmp_int);
	int nodes = n > 0;
	for (int i = 1; i < n; i++) nodes += r[i] != r[i - 1];
	return nodes;
}

/* stride of rank 0's group when its members are an arithmetic progression, else 0 */
static int group_stride(const struct layout *l, enum group_kind g)
{
	int cps = l->stride[DIM_CP], dps = l->stride[DIM_DP], cp = l->size[DIM_CP], dp = l->size[DIM_DP];
	int dpcp = cp == 1 ? dps : dp == 1 || dps == cps * cp ? cps : 0; /* k = c + cp·d contiguous */
	/* the stage index K = t + tp·(c + cp·d) is contiguous in ranks when the three chain */
	int tps = l->stride[DIM_TP], tp = l->size[DIM_TP];
	int stage = tps == 1 && (cp == 1 || cps == tp) && (dp == 1 || dps == tp * cp);
	switch (g) {
	case GROUP_TP: return l->stride[DIM_TP];
	case GROUP_CP: return cps;
	case GROUP_DP: return dps;
	case GROUP_PP: return l->stride[DIM_PP];
	case GROUP_DPCP: return dpcp;
	case GROUP_EP: return stage ? l->etp : 0;
	case GROUP_EDP: return stage ? l->etp * l->ep : 0;
	default: return 0;
	}
}

/* ranks of rank 0's DP×CP, EP or expert-DP group into r[0..n): the combined index k = c + cp·d,
 * or the stage index K = t + tp·(c + cp·d) stepping by etp (EP) or etp·ep (expert-DP), walked
 * with carries instead of a division per coordinate */
static void composite_members(const struct layout *l, enum group_kind g, int n, int *r)
{
	int T = g == GROUP_DPCP ? 1 : l->size[DIM_TP], C = l->size[DIM_CP];
	int step = g == GROUP_DPCP ? 1 : g == GROUP_EP ? l->etp : l->etp * l->ep;
	int a0 = step % T, a1 = step / T % C, a2 = step / (T * C);
	int ts = l->stride[DIM_TP], cs = l->stride[DIM_CP], ds = l->stride[DIM_DP];
	for (int i = 0, t = 0, c = 0, d = 0; i < n; i++) {
		r[i] = t * ts + c * cs + d * ds;
		t += a0;
		if (t >= T) { t -= T; c++; }
		c += a1;
		if (c >= C) { c -= C; d++; }
		d += a2;
	}
}

/* Units touched by rank 0's composite group when its index steps whole tp rows (the DP×CP
 * group, and EP/expert-DP without expert-TP folding): the members form runs, each a
 * progression until the cp coordinate wraps, so whole unit intervals are marked per run rather
 * than one member at a time. Returns -1 when the members do not step that way or the units
 * span too wide for the bitmap. */
static int composite_runs(const struct layout *l, enum group_kind g, int n, int unit)
{
	int T = g == GROUP_DPCP ? 1 : l->size[DIM_TP], C = l->size[DIM_CP];
	int step = g == GROUP_DPCP ? 1 : g == GROUP_EP ? l->etp : l->etp * l->ep;
	int a1 = step / T % C, a2 = step / (T * C);
	long cs = l->stride[DIM_CP], ds = l->stride[DIM_DP];
	if (step % T || a1 == 0 || (l->world - 1) / unit >= 32768) return -1;
	/* members a multiple of the unit apart (rank 0's group starts at a unit's start) each
	 * touch a unit of their own */
	if (cs % unit == 0 && ds % unit == 0) return n;
	unsigned char seen[32768 / 8];
	memset(seen, 0, (size_t)((l->world - 1) / unit) / 8 + 1);
	long c = 0, d = 0, s = a1 * cs + a2 * ds;
	int units = 0;
#define MARK(u) do { long u_ = (u); unsigned char b_ = (unsigned char)(1u << (u_ & 7)); \
		     if (!(seen[u_ >> 3] & b_)) { seen[u_ >> 3] |= b_; units++; } } while (0)
	if (g == GROUP_DPCP && ds < cs && ds < unit) {
		/* the whole cp x dp grid with dp the finer stride: one unit interval per cp row */
		long D = l->size[DIM_DP];
		for (long r = 0; r < C; r++)
			for (long u = r * cs / unit; u <= (r * cs + (D - 1) * ds) / unit; u++) MARK(u);
		return units;
	}
	for (int i = 0; i < n;) {
		long len = (C - 1 - c) / a1 + 1;
		if (len > n - i) len = n - i;
		long r0 = c * cs + d * ds;
		if (s < unit)
			for (long u = r0 / unit; u <= (r0 + (len - 1) * s) / unit; u++) MARK(u);
		else
			for (long k = 0; k < len; k++) MARK((r0 + k * s) / unit);
		i += (int)len;
		c += len * a1 - C; /* the wrap into the next dp coordinate */
		d += len * a2 + 1;
	}
#undef MARK
	return units;
}

static int count_units(const struct layout *l, enum group_kind g, int n, int unit);

int layout_group_units(const struct layout *l, enum group_kind g, int unit)
{
	int n = layout_group_size(l, g);
	if (n <= 1 || unit <= 0 || unit >= l->world) return 1;
	/* rank 0's group starts at rank 0: a progression of stride s touches one unit per member
	 * when s >= unit, and skips none between its first and last member when s < unit */
	int s = group_stride(l, g);
	if (s > 0 && (s >= unit ? s % unit == 0 : unit % s == 0)) return s >= unit ? n : (n + unit / s - 1) / (unit / s);
	if (n > 4096) return n; /* too large to walk: one unit per member */
	if (s > 0) return s >= unit ? n : (int)((long)(n - 1) * s / unit) + 1;
	/* the tuner asks the same layouts again for every micro-batch size, recompute mode and
	 * schedule it prices: remember the last answers (a pure function of the arguments) */
	struct memo { struct layout l; int g, unit, units; };
	static _Thread_local struct memo memo[64];
	unsigned hsh = (unsigned)g * 2654435761u ^ (unsigned)unit * 40503u;
	for (size_t i = 0; i < sizeof(*l) / sizeof(int); i++) hsh = hsh * 31u + (unsigned)((const int *)l)[i];
	struct memo *e = &memo[hsh % 64];
	if (e->units > 0 && e->g == (int)g && e->unit == unit && !memcmp(&e->l, l, sizeof(*l))) return e->units;
	int units = composite_runs(l, g, n, unit);
	if (units < 0) units = count_units(l, g, n, unit);
	e->l = *l;
	e->g = (int)g;
	e->unit = unit;
	e->units = units;
	return units;
}

/* the distinct unit ids of the group's members, marked in a bitmap over their range (the tuner
 * asks ~1e6 times; a sort would dominate its time) */
static int count_units(const struct layout *l, enum group_kind g, int n, int unit)
{
	int units;
	int r[4096];
	composite_members(l, g, n, r);
	int lo = r[0] / unit, hi = lo;
	for (int i = 0; i < n; i++) {
		r[i] /= unit;
		if (r[i] < lo) lo = r[i];
		if (r[i] > hi) hi = r[i];
	}
	units = 0;
	if (hi - lo >= 4096) { /* spread wide: sort instead */
		qsort(r, (size_t)n, sizeof(int), cmp_int);
		units = 1;
		for (int i = 1; i < n; i++) units += r[i] != r[i - 1];
		return units;
	}
	unsigned char seen[4096 / 8 + 1];
	memset(seen, 0, (size_t)(hi - lo) / 8 + 1);
	for (int i = 0; i < n; i++) {
		int b = r[i] - lo;
		if (!(seen[b >> 3] & (1u << (b & 7)))) { seen[b >> 3] |= (unsigned char)(1u << (b & 7)); units++; }
	}
	return units;
}
