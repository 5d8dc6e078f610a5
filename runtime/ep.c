/* ep — all-to-all dispatch and combine around the local experts of one MoE layer
 * (runtime/ep.h). Rows move through three orders: "sorted" (this rank's assignments by global
 * expert, moe_dispatch's order, hence grouped by destination rank), "wire" (what arrives:
 * grouped by sending rank, then by expert) and "local" (grouped by local expert, then by
 * sender), which is what each expert's GEMM reads. The combine and the backward run the same
 * exchange in the other direction with the counts swapped. Wire and local order are one
 * permutation apart: moe_gather with k = 1 and the map recv_to_loc turns local into wire,
 * with its inverse loc_to_recv wire into local (pure copies, so exact on every row). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/backend.h"
#include "runtime/ep.h"
#include "runtime/tp.h"
#include "sim/util.h"

#define AT(p, n) kern_act_at(b->k, (p), (n))
#define K(fn, ...) b->k->ops->fn(b->k->state, __VA_ARGS__)

enum ep_stage { EP_EMPTY, EP_FORWARD_DONE, EP_INPUT_GRAD_DONE };

struct ep_batch {
	struct ep_plan p;              /* host */
	struct comm *comm;             /* borrowed */
	struct kern *k;                /* borrowed; every buffer below but the host ones is its memory */
	enum ep_stage stage;
	int *d_offsets, *d_perm, *d_slot_of;   /* (E+1), (N·k), (N·k): moe_dispatch's */
	int *d_rows;                   /* (2E): rows sent per (rank, expert), then those received */
	int *h_rows, *h_idx;           /* host staging: (E) rows sent, (N·k) topk_idx checked */
	/* token side, (N·k, C) activations: the dispatch send buffer, then dY sent, then dX received */
	float *sorted, *ye;            /* ye: expert outputs back in sorted order (kept) */
	/* expert side, R_cap rows: wire is the exchange buffer, the rest is local order */
	int R_cap;
	int *d_recv_to_loc, *d_loc_to_recv, *h_map;   /* (R) maps; h_map: (2R) host staging */
	float *wire, *xl, *tmp, *dyl;  /* (R, C); xl, dyl kept for the W pass */
	float *gul, *dgul;             /* (R, 2Fe); gul kept for B, dgul for W */
	float *hl, *dhl;               /* (R, Fe); hl kept for W */
};

const struct ep_plan *ep_batch_plan(const struct ep_batch *b) { return &b->p; }

static void free_rows(struct ep_batch *b)
{
	void *dev[] = {b->d_recv_to_loc, b->d_loc_to_recv, b->wire, b->xl, b->tmp, b->dyl, b->gul, b->dgul, b->hl, b->dhl};
	for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) kern_free(b->k, dev[i]);
	free(b->h_map);
	b->d_recv_to_loc = b->d_loc_to_recv = b->h_map = NULL;
	b->wire = b->xl = b->tmp = b->dyl = b->gul = b->dgul = b->hl = b->dhl = NULL;
	b->R_cap = 0;
}

void ep_batch_destroy(struct ep_batch *b)
{
	if (!b) return;
	struct ep_plan *p = &b->p;
	free(p->offsets); free(p->recv_rows); free(p->loc_offsets); free(p->send_counts); free(p->send_displs);
	free(p->recv_counts); free(p->recv_displs);
	free(b->h_rows); free(b->h_idx);
	void *dev[] = {b->d_offsets, b->d_perm, b->d_slot_of, b->d_rows, b->sorted, b->ye};
	for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) kern_free(b->k, dev[i]);
	free_rows(b);
	free(b);
}

static void *alloc_n(size_t n, size_t size) { return malloc((n ? n : 1) * size); }

int ep_batch_create(struct ep_batch **out, struct comm *ep, struct kern *k, int N, int E, int topk, int C, int Fe,
                    char *err)
{
	*out = NULL;
	const int n = comm_size(ep);
	if (N < 0) return errf(err, "ep: tokens N (%d) must not be negative", N);
	if (E < 1 || E % n) return errf(err, "ep: experts E (%d) must be a positive multiple of the EP size (%d)", E, n);
	if (topk < 1 || topk > E) return errf(err, "ep: top-k (%d) must be in [1, E = %d]", topk, E);
	if (C < 1 || Fe < 1) return errf(err, "ep: widths C (%d) and Fe (%d) must be positive", C, Fe);
	struct ep_batch *b = calloc(1, sizeof(*b));
	if (!b) return errf(err, "ep: out of memory");
	struct ep_plan *p = &b->p;
	*p = (struct ep_plan){.n = n, .rank = comm_rank(ep), .N = N, .E = E, .El = E / n, .k = topk, .C = C, .Fe = Fe};
	b->comm = ep;
	b->k = k;
	const size_t NK = (size_t)N * topk;
	p->offsets = alloc_n((size_t)E + 1, sizeof(int));
	p->recv_rows = alloc_n((size_t)E, sizeof(int));   /* n·El = E */
	p->loc_offsets = alloc_n((size_t)p->El + 1, sizeof(int));
	p->send_counts = alloc_n((size_t)n, sizeof(size_t));
	p->send_displs = alloc_n((size_t)n, sizeof(size_t));
	p->recv_counts = alloc_n((size_t)n, sizeof(size_t));
	p->recv_displs = alloc_n((size_t)n, sizeof(size_t));
	b->h_rows = alloc_n((size_t)E, sizeof(int));
	b->h_idx = alloc_n(NK, sizeof(int));
	b->d_offsets = kern_alloc(k, sizeof(int) * ((size_t)E + 1));
	b->d_perm = kern_alloc(k, sizeof(int) * (NK ? NK : 1));
	b->d_slot_of = kern_alloc(k, sizeof(int) * (NK ? NK : 1));
	b->d_rows = kern_alloc(k, sizeof(int) * 2 * (size_t)E);
	b->sorted = kern_alloc(k, kern_act_size(k, NK * C) + 1);
	b->ye = kern_alloc(k, kern_act_size(k, NK * C) + 1);
	if (!p->offsets || !p->recv_rows || !p->loc_offsets || !p->send_counts || !p->send_displs || !p->recv_counts ||
	    !p->recv_displs || !b->h_rows || !b->h_idx || !b->d_offsets || !b->d_perm || !b->d_slot_of || !b->d_rows ||
	    !b->sorted || !b->ye) {
		ep_batch_destroy(b);
		return errf(err, "ep: out of memory for %d tokens of width %d", N, C);
	}
	*out = b;
	return 0;
}

/* Grows the expert-side buffers to hold R rows (contents are not kept). */
static int reserve_rows(struct ep_batch *b, int R, char *err)
{
	if (R <= b->R_cap && b->h_map) return 0;
	free_rows(b);
	const size_t r = (size_t)(R > 0 ? R : 1), C = (size_t)b->p.C, F = (size_t)b->p.Fe;
	float **bufs[] = {&b->wire, &b->xl, &b->tmp, &b->dyl, &b->gul, &b->dgul, &b->hl, &b->dhl};
	const size_t width[] = {C, C, C, C, 2 * F, 2 * F, F, F};
	int ok = 1;
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) {
		*bufs[i] = kern_alloc(b->k, kern_act_size(b->k, r * width[i]));
		ok &= *bufs[i] != NULL;
	}
	b->d_recv_to_loc = kern_alloc(b->k, r * sizeof(int));
	b->d_loc_to_recv = kern_alloc(b->k, r * sizeof(int));
	b->h_map = malloc(2 * r * sizeof(int));
	ok &= b->d_recv_to_loc && b->d_loc_to_recv && b->h_map;
	if (!ok) {
		free_rows(b);
		return errf(err, "ep: out of memory for %d received rows of width %d", R, b->p.C);
	}
	b->R_cap = (int)r;
	return 0;
}

/* Counts and displacements of the row exchange (in elements) and the local expert ranges,
 * from the per-(rank, expert) row counts received. */
static int plan_rows(struct ep_plan *p, char *err)
{
	size_t rd = 0;
	for (int q = 0; q < p->n; q++) {
		const int lo = p->offsets[q * p->El], hi = p->offsets[(q + 1) * p->El];
		p->send_counts[q] = (size_t)(hi - lo) * p->C;
		p->send_displs[q] = (size_t)lo * p->C;
		size_t rows = 0;
		for (int j = 0; j < p->El; j++) {
			if (p->recv_rows[q * p->El + j] < 0) return errf(err, "ep: rank %d announced a negative row count", q);
			rows += (size_t)p->recv_rows[q * p->El + j];
		}
		p->recv_counts[q] = rows * p->C;
		p->recv_displs[q] = rd;
		rd += rows * p->C;
	}
	if (rd / p->C > (size_t)INT_MAX)
		return errf(err, "ep: %zu received rows are more than INT_MAX", rd / p->C);
	p->R = (int)(rd / p->C);
	p->loc_offsets[0] = 0;
	for (int j = 0; j < p->El; j++) {
		int rows = 0;
		for (int q = 0; q < p->n; q++) rows += p->recv_rows[q * p->El + j];
		p->loc_offsets[j + 1] = p->loc_offsets[j] + rows;
	}
	return 0;
}

/* Row counts per (destination, expert) travel first (through backend memory, which is what
 * the communicator reads); then the plan of the row exchange and the maps between wire and
 * local order, built on the host and copied to the backend. */
static int exchange_counts(struct ep_batch *b, char *err)
{
	struct ep_plan *p = &b->p;
	for (int e = 0; e < p->E; e++) b->h_rows[e] = p->offsets[e + 1] - p->offsets[e];
	kern_to_dev(b->k, b->d_rows, b->h_rows, sizeof(int) * (size_t)p->E);
	if (kern_sync(b->k, err) ||
	    comm_alltoall(b->comm, b->d_rows, b->d_rows + p->E, sizeof(int) * (size_t)p->El, COMM_BYTE, err))
		return -1;
	kern_to_host(b->k, p->recv_rows, b->d_rows + p->E, sizeof(int) * (size_t)p->E);
	if (plan_rows(p, err) || reserve_rows(b, p->R, err)) return -1;
	int *recv_to_loc = b->h_map, *loc_to_recv = b->h_map + b->R_cap;
	int a = 0;
	for (int q = 0; q < p->n; q++)
		for (int j = 0; j < p->El; j++) {
			int at = p->loc_offsets[j];
			for (int r = 0; r < q; r++) at += p->recv_rows[r * p->El + j];
			for (int t = 0; t < p->recv_rows[q * p->El + j]; t++, a++) {
				recv_to_loc[a] = at + t;
				loc_to_recv[at + t] = a;
			}
		}
	kern_to_dev(b->k, b->d_recv_to_loc, recv_to_loc, sizeof(int) * (size_t)p->R);
	kern_to_dev(b->k, b->d_loc_to_recv, loc_to_recv, sizeof(int) * (size_t)p->R);
	return 0;
}

/* wire (arrival order) <-> local (expert-major) order */
static void wire_to_local(struct ep_batch *b, float *loc, const float *wire)
{
	if (b->p.R) K(moe_gather, loc, wire, b->d_loc_to_recv, b->p.R, b->p.C, 1);
}

static void local_to_wire(struct ep_batch *b, float *wire, const float *loc)
{
	if (b->p.R) K(moe_gather, wire, loc, b->d_recv_to_loc, b->p.R, b->p.C, 1);
}

/* sorted rows to their experts' owners (dispatch), or back (reverse = 1, combine) */
static int exchange_rows(struct ep_batch *b, const float *send, float *recv, int reverse, char *err)
{
	const struct ep_plan *p = &b->p;
	const enum comm_dtype dt = tp_act_dtype(b->k);
	if (kern_sync(b->k, err)) return -1;
	if (!reverse)
		return comm_alltoallv(b->comm, send, p->send_counts, p->send_displs, recv, p->recv_counts,
		                      p->recv_displs, dt, err);
	return comm_alltoallv(b->comm, send, p->recv_counts, p->recv_displs, recv, p->send_counts,
	                      p->send_displs, dt, err);
}

/* local expert j's gate|up (2Fe, C), its down (C, Fe) following: the weights the kernels read */
static const float *expert_w(const struct ep_batch *b, const float *w_local, int j)
{
	return AT(w_local, (size_t)j * 3 * b->p.Fe * b->p.C);
}

int ep_forward(struct ep_batch *b, float *out, const float *x, const int *topk_idx, const float *topk_w,
               const float *w_local, char *err)
{
	struct ep_plan *p = &b->p;
	const int N = p->N, C = p->C, k = p->k, Fe = p->Fe;
	b->stage = EP_EMPTY;
	kern_to_host(b->k, b->h_idx, topk_idx, sizeof(int) * (size_t)N * k);
	for (size_t a = 0; a < (size_t)N * k; a++)
		if (b->h_idx[a] < 0 || b->h_idx[a] >= p->E)
			return errf(err, "ep: topk_idx[%zu] (%d) is not an expert in [0, %d)", a, b->h_idx[a], p->E);
	K(moe_dispatch, b->d_offsets, b->d_perm, b->d_slot_of, topk_idx, N, p->E, k);
	kern_to_host(b->k, p->offsets, b->d_offsets, sizeof(int) * ((size_t)p->E + 1));
	K(moe_gather, b->sorted, x, b->d_perm, N, C, k);
	if (exchange_counts(b, err) || exchange_rows(b, b->sorted, b->wire, 0, err)) return -1;
	wire_to_local(b, b->xl, b->wire);
	for (int j = 0; j < p->El; j++) {
		const size_t r = (size_t)p->loc_offsets[j];
		const int n = p->loc_offsets[j + 1] - p->loc_offsets[j];
		if (!n) continue;
		const float *w = expert_w(b, w_local, j);
		K(linear_forward, AT(b->gul, r * 2 * Fe), AT(b->xl, r * C), w, NULL, n, C, 2 * Fe);
		K(swiglu_forward, AT(b->hl, r * Fe), AT(b->gul, r * 2 * Fe), n, Fe);
		K(linear_forward, AT(b->tmp, r * C), AT(b->hl, r * Fe), AT(w, (size_t)2 * Fe * C), NULL, n, Fe, C);
	}
	local_to_wire(b, b->wire, b->tmp);
	if (exchange_rows(b, b->wire, b->ye, 1, err)) return -1;
	K(moe_combine, out, b->ye, topk_w, b->d_slot_of, N, C, k);
	b->stage = EP_FORWARD_DONE;
	return 0;
}

int ep_backward_input(struct ep_batch *b, float *dx, float *dtopk_w, const float *dout, const float *topk_w,
                      const float *w_local, char *err)
{
	struct ep_plan *p = &b->p;
	const int N = p->N, C = p->C, k = p->k, Fe = p->Fe;
	if (b->stage == EP_EMPTY) return errf(err, "ep: backward before a forward of this micro-batch");
	K(moe_combine_backward, b->sorted, dtopk_w, dout, b->ye, topk_w, b->d_slot_of, N, C, k);
	if (exchange_rows(b, b->sorted, b->wire, 0, err)) return -1;
	wire_to_local(b, b->dyl, b->wire);
	for (int j = 0; j < p->El; j++) {
		const size_t r = (size_t)p->loc_offsets[j];
		const int n = p->loc_offsets[j + 1] - p->loc_offsets[j];
		if (!n) continue;
		const float *w = expert_w(b, w_local, j);
		K(linear_backward_input, AT(b->dhl, r * Fe), AT(b->dyl, r * C), AT(w, (size_t)2 * Fe * C), n, Fe, C, 0);
		K(swiglu_backward, AT(b->dgul, r * 2 * Fe), AT(b->dhl, r * Fe), AT(b->gul, r * 2 * Fe), n, Fe);
		K(linear_backward_input, AT(b->tmp, r * C), AT(b->dgul, r * 2 * Fe), w, n, C, 2 * Fe, 0);
	}
	local_to_wire(b, b->wire, b->tmp);
	if (exchange_rows(b, b->wire, b->sorted, 1, err)) return -1;
	K(moe_gather_backward, dx, b->sorted, b->d_slot_of, N, C, k);
	b->stage = EP_INPUT_GRAD_DONE;
	return 0;
}

int ep_backward_weight(struct ep_batch *b, float *dw_local, char *err)
{
	const struct ep_plan *p = &b->p;
	const int C = p->C, Fe = p->Fe;
	if (b->stage != EP_INPUT_GRAD_DONE)
		return errf(err, "ep: weight-gradient pass before the input-gradient pass of this micro-batch");
	for (int j = 0; j < p->El; j++) {
		const size_t r = (size_t)p->loc_offsets[j];
		const int n = p->loc_offsets[j + 1] - p->loc_offsets[j];
		if (!n) continue;
		float *dw = dw_local + (size_t)j * 3 * Fe * C;   /* fp32 gradients */
		K(linear_backward_weight, dw, NULL, AT(b->dgul, r * 2 * Fe), AT(b->xl, r * C), n, C, 2 * Fe);
		K(linear_backward_weight, dw + (size_t)2 * Fe * C, NULL, AT(b->dyl, r * C), AT(b->hl, r * Fe), n, Fe, C);
	}
	return 0;
}
