/* search_rank — the order of plans (the objective's score, then less memory, then fewer
 * stages, then every knob, the rank order last), rank-order twins (found before pricing from
 * where each order puts the groups, and merged after pricing when they still price the same),
 * and the shapes whose best plan the report shows.
 * Enumeration: search.c. */
#include <stdlib.h>
#include <string.h>
#include "tuner/search.h"
#include "tuner/search_impl.h"
#include "sim/hw.h"
#include "sim/layout.h"
#include "sim/util.h"

static int no_pp(const struct search_cand *k) { return k->pp == 1; }
static int no_tp(const struct search_cand *k) { return k->tp == 1; }
static int no_zero(const struct search_cand *k) { return k->zero == 0; }
static int zero3(const struct search_cand *k) { return k->zero == 3; }
static int no_rc(const struct search_cand *k) { return k->recompute == RC_NONE; }
static int with_cp(const struct search_cand *k) { return k->cp > 1; }
static int zb_like(const struct search_cand *k) { return !!(sched_family((enum schedule)k->schedule)->flags & SCHED_F_SPLIT_W); }
const struct search_shape search_shapes[SEARCH_NSHAPES] = {
	{"no pipeline (pp 1)", no_pp}, {"no tensor parallelism (tp 1)", no_tp},
	{"no DP sharding (ZeRO-0)", no_zero}, {"fully sharded (ZeRO-3/FSDP)", zero3},
	{"no recompute", no_rc}, {"context parallel (cp > 1)", with_cp},
	{"zero-bubble or DualPipe schedule", zb_like}};

int search_cmp_score(const void *a, const void *b)
{
	const struct search_cand *x = a, *y = b;
	if (x->score != y->score) return x->score > y->score ? -1 : 1;
	/* ties: less memory first, then fewer pipeline stages (simpler) */
	if (x->peak_bytes != y->peak_bytes) return x->peak_bytes < y->peak_bytes ? -1 : 1;
	return x->pp - y->pp;
}

/* cmp_score, then every knob, the rank order last: plans that differ only in their order
 * end up next to each other */
int search_cmp_full(const void *a, const void *b)
{
	int c = search_cmp_score(a, b);
	if (c) return c;
	const struct search_cand *x = a, *y = b;
	const int kx[] = {x->dp, x->tp, x->cp, x->ep, x->etp, x->vpp, x->zero, x->sp, x->recompute, x->recompute_layers, x->mbs,
			  x->schedule, x->overlap, x->gpus, x->order};
	const int ky[] = {y->dp, y->tp, y->cp, y->ep, y->etp, y->vpp, y->zero, y->sp, y->recompute, y->recompute_layers, y->mbs,
			  y->schedule, y->overlap, y->gpus, y->order};
	for (size_t i = 0; i < sizeof(kx) / sizeof(kx[0]); i++)
		if (kx[i] != ky[i]) return kx[i] < ky[i] ? -1 : 1;
	return 0;
}

static int same_but_order(const struct search_cand *x, const struct search_cand *y)
{
	struct search_cand u = *x;
	u.order = y->order;
	u.orders = y->orders;
	return !search_cmp_full(&u, y) && u.step_s == y->step_s;
}

/* Sorts all[] best first and merges plans that differ only in rank order and price the same
 * into the first of them (its orders list the others); the merged ones count as twins. */
void search_rank_and_merge(struct search_result *res)
{
	qsort(res->all, (size_t)res->nall, sizeof(*res->all), search_cmp_full);
	int n = 0;
	for (int i = 0; i < res->nall; i++) {
		if (n && same_but_order(&res->all[n - 1], &res->all[i])) {
			res->all[n - 1].orders |= res->all[i].orders | (1 << res->all[i].order);
			res->feasible--;
			res->rejected[REJ_TWIN]++;
			continue;
		}
		res->all[n++] = res->all[i];
	}
	res->nall = n;
}

/* Where rank 0's group of every kind sits under rank order o: the units it touches at every
 * tier of the fabric, as sim/estimate.c's group_span reads them (the plan's node, then each
 * higher tier's unit rounded up to whole nodes). That is all of the layout the estimate reads,
 * so two orders with equal signatures give the same estimate. */
#define SIG_LEN (GROUP_COUNT * HW_MAX_TIERS)
static int order_signature(const struct search_req *rq, int gpn, const struct search_cand *k, int o, int *sig)
{
	char err[ERR_LEN];
	const struct hw *h = rq->h;
	struct plan q = rq->base, *p = &q;
	struct layout l;
	p->tp = k->tp; p->cp = k->cp; p->dp = k->dp; p->pp = k->pp; p->ep = k->ep;
	p->etp = k->etp > 0 ? k->etp : k->tp;
	p->gpus_per_node = gpn;
	strcpy(p->order, search_order_name(o));
	if (layout_init(&l, p, err)) return -1;
	for (int g = 0; g < GROUP_COUNT; g++)
		for (int t = 0; t < HW_MAX_TIERS; t++) {
			int u = t == 0 ? gpn : t < h->ntiers ? h->tier[t].gpus : 0;
			if (t > 0 && u > 0 && u % gpn) u = (u / gpn + 1) * gpn;
			sig[g * HW_MAX_TIERS + t] = u > 0 ? layout_group_units(&l, (enum group_kind)g, u) : 1;
		}
	return 0;
}

/* For each order of ord[0..n): the index in ord[] of the first order with the same signature
 * (itself when none before it), and in mask[] the orders that share its signature. */
void search_order_twins(const struct search_req *rq, int gpn, const struct search_cand *k, const int *ord, int n,
			int *rep, int *mask)
{
	int sig[SEARCH_ORDERS][SIG_LEN];
	for (int i = 0; i < n; i++) {
		rep[i] = i;
		mask[i] = 1 << ord[i];
		if (order_signature(rq, gpn, k, ord[i], sig[i])) continue;
		for (int j = 0; j < i; j++)
			if (rep[j] == j && !memcmp(sig[i], sig[j], sizeof(sig[i]))) { rep[i] = j; mask[j] |= 1 << ord[i]; break; }
	}
}
