/* ep — all-to-all dispatch and combine around the local experts of one MoE layer
 * (runtime/ep.h). Rows move through three orders: "sorted" (this rank's assignments by global
 * expert, moe_dispatch's order, hence grouped by destination rank), "wire" (what arrives:
 * grouped by sending rank, then by expert) and "local" (grouped by local expert, then by
 * sender), which is what each expert's GEMM reads. The combine and the backward run the same
 * exchange in the other direction with the counts swapped. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/cpu.h"
#include "runtime/ep.h"
#include "sim/util.h"

enum ep_stage { EP_EMPTY, EP_FORWARD_DONE, EP_INPUT_GRAD_DONE };

struct ep_batch {
	struct ep_plan p;
	struct comm *comm;             /* borrowed */
	enum ep_stage stage;
	/* token side, (N·k, C): the dispatch send buffer, then dY sent, then dX received */
	float *sorted, *ye;            /* ye: expert outputs back in sorted order (kept) */
	/* expert side, R_cap rows: wire is the exchange buffer, the rest is local order */
	int R_cap;
	float *wire, *xl, *tmp, *dyl;  /* (R, C); xl, dyl kept for the W pass */
	float *gul, *dgul;             /* (R, 2Fe); gul kept for B, dgul for W */
	float *hl, *dhl;               /* (R, Fe); hl kept for W */
};

const struct ep_plan *ep_batch_plan(const struct ep_batch *b) { return &b->p; }

void ep_batch_destroy(struct ep_batch *b)
{
	if (!b) return;
	struct ep_plan *p = &b->p;
	free(p->offsets); free(p->perm); free(p->slot_of); free(p->recv_rows); free(p->loc_offsets);
	free(p->recv_to_loc); free(p->send_counts); free(p->send_displs); free(p->recv_counts);
	free(p->recv_displs);
	free(b->sorted); free(b->ye); free(b->wire); free(b->xl); free(b->tmp); free(b->dyl);
	free(b->gul); free(b->dgul); free(b->hl); free(b->dhl);
	free(b);
}

static void *alloc_n(size_t n, size_t size) { return malloc((n ? n : 1) * size); }

int ep_batch_create(struct ep_batch **out, struct comm *ep, int N, int E, int k, int C, int Fe, char *err)
{
	*out = NULL;
	const int n = comm_size(ep);
	if (N < 0) return errf(err, "ep: tokens N (%d) must not be negative", N);
	if (E < 1 || E % n) return errf(err, "ep: experts E (%d) must be a positive multiple of the EP size (%d)", E, n);
	if (k < 1 || k > E) return errf(err, "ep: top-k (%d) must be in [1, E = %d]", k, E);
	if (C < 1 || Fe < 1) return errf(err, "ep: widths C (%d) and Fe (%d) must be positive", C, Fe);
	struct ep_batch *b = calloc(1, sizeof(*b));
	if (!b) return errf(err, "ep: out of memory");
	struct ep_plan *p = &b->p;
	*p = (struct ep_plan){.n = n, .rank = comm_rank(ep), .N = N, .E = E, .El = E / n, .k = k, .C = C, .Fe = Fe};
	b->comm = ep;
	const size_t NK = (size_t)N * k;
	p->offsets = alloc_n((size_t)E + 1, sizeof(int));
	p->perm = alloc_n(NK, sizeof(int));
	p->slot_of = alloc_n(NK, sizeof(int));
	p->recv_rows = alloc_n((size_t)E, sizeof(int));   /* n·El = E */
	p->loc_offsets = alloc_n((size_t)p->El + 1, sizeof(int));
	p->send_counts = alloc_n((size_t)n, sizeof(size_t));
	p->send_displs = alloc_n((size_t)n, sizeof(size_t));
	p->recv_counts = alloc_n((size_t)n, sizeof(size_t));
	p->recv_displs = alloc_n((size_t)n, sizeof(size_t));
	b->sorted = alloc_n(NK * C, sizeof(float));
	b->ye = alloc_n(NK * C, sizeof(float));
	if (!p->offsets || !p->perm || !p->slot_of || !p->recv_rows || !p->loc_offsets || !p->send_counts ||
	    !p->send_displs || !p->recv_counts || !p->recv_displs || !b->sorted || !b->ye) {
		ep_batch_destroy(b);
		return errf(err, "ep: out of memory for %d tokens of width %d", N, C);
	}
	*out = b;
	return 0;
}

/* Grows the expert-side buffers to hold R rows (contents are not kept). */
static int reserve_rows(struct ep_batch *b, int R, char *err)
{
	if (R <= b->R_cap && b->p.recv_to_loc) return 0;
	const size_t r = (size_t)(R > 0 ? R : 1), C = (size_t)b->p.C, F = (size_t)b->p.Fe;
	float **bufs[] = {&b->wire, &b->xl, &b->tmp, &b->dyl, &b->gul, &b->dgul, &b->hl, &b->dhl};
	const size_t width[] = {C, C, C, C, 2 * F, 2 * F, F, F};
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) {
		free(*bufs[i]);
		*bufs[i] = malloc(r * width[i] * sizeof(float));
	}
	free(b->p.recv_to_loc);
	b->p.recv_to_loc = malloc(r * sizeof(int));
	int ok = b->p.recv_to_loc != NULL;
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) ok &= *bufs[i] != NULL;
	b->R_cap = ok ? (int)r : 0;
	return ok ? 0 : errf(err, "ep: out of memory for %d received rows of width %d", R, b->p.C);
}

/* Row counts per (destination, expert) travel first; then the plan of the row exchange:
 * counts and displacements in floats, and where each arriving row goes in local order. */
static int exchange_counts(struct ep_batch *b, char *err)
{
	struct ep_plan *p = &b->p;
	int *send_rows = alloc_n((size_t)p->E, sizeof(int));
	if (!send_rows) return errf(err, "ep: out of memory");
	for (int e = 0; e < p->E; e++) send_rows[e] = p->offsets[e + 1] - p->offsets[e];
	const int rc = comm_alltoall(b->comm, send_rows, p->recv_rows, sizeof(int) * (size_t)p->El, COMM_BYTE, err);
	free(send_rows);
	if (rc) return -1;
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
	if (reserve_rows(b, p->R, err)) return -1;
	p->loc_offsets[0] = 0;
	for (int j = 0; j < p->El; j++) {
		int rows = 0;
		for (int q = 0; q < p->n; q++) rows += p->recv_rows[q * p->El + j];
		p->loc_offsets[j + 1] = p->loc_offsets[j] + rows;
	}
	int *cursor = alloc_n((size_t)p->El, sizeof(int));
	if (!cursor) return errf(err, "ep: out of memory");
	memcpy(cursor, p->loc_offsets, sizeof(int) * (size_t)p->El);
	int a = 0;
	for (int q = 0; q < p->n; q++)
		for (int j = 0; j < p->El; j++)
			for (int t = 0; t < p->recv_rows[q * p->El + j]; t++) p->recv_to_loc[a++] = cursor[j]++;
	free(cursor);
	return 0;
}

/* wire (arrival order) <-> local (expert-major) order */
static void wire_to_local(float *loc, const float *wire, const struct ep_plan *p)
{
	for (int a = 0; a < p->R; a++)
		memcpy(loc + (size_t)p->recv_to_loc[a] * p->C, wire + (size_t)a * p->C, sizeof(float) * p->C);
}

static void local_to_wire(float *wire, const float *loc, const struct ep_plan *p)
{
	for (int a = 0; a < p->R; a++)
		memcpy(wire + (size_t)a * p->C, loc + (size_t)p->recv_to_loc[a] * p->C, sizeof(float) * p->C);
}

/* sorted rows to their experts' owners (dispatch), or back (reverse = 1, combine) */
static int exchange_rows(struct ep_batch *b, const float *send, float *recv, int reverse, char *err)
{
	const struct ep_plan *p = &b->p;
	if (!reverse)
		return comm_alltoallv(b->comm, send, p->send_counts, p->send_displs, recv, p->recv_counts,
		                      p->recv_displs, COMM_F32, err);
	return comm_alltoallv(b->comm, send, p->recv_counts, p->recv_displs, recv, p->send_counts,
	                      p->send_displs, COMM_F32, err);
}

static const float *expert_w(const float *w_local, const struct ep_plan *p, int j)
{
	return w_local + (size_t)j * 3 * p->Fe * p->C;
}

int ep_forward(struct ep_batch *b, float *out, const float *x, const int *topk_idx, const float *topk_w,
               const float *w_local, char *err)
{
	struct ep_plan *p = &b->p;
	const int N = p->N, C = p->C, k = p->k, Fe = p->Fe;
	b->stage = EP_EMPTY;
	for (size_t a = 0; a < (size_t)N * k; a++)
		if (topk_idx[a] < 0 || topk_idx[a] >= p->E)
			return errf(err, "ep: topk_idx[%zu] (%d) is not an expert in [0, %d)", a, topk_idx[a], p->E);
	moe_dispatch(p->offsets, p->perm, p->slot_of, topk_idx, N, p->E, k);
	moe_gather(b->sorted, x, p->perm, N, C, k);
	if (exchange_counts(b, err) || exchange_rows(b, b->sorted, b->wire, 0, err)) return -1;
	wire_to_local(b->xl, b->wire, p);
	for (int j = 0; j < p->El; j++) {
		const size_t r = (size_t)p->loc_offsets[j];
		const int n = p->loc_offsets[j + 1] - p->loc_offsets[j];
		if (!n) continue;
		const float *w = expert_w(w_local, p, j);
		linear_forward(b->gul + r * 2 * Fe, b->xl + r * C, w, NULL, n, C, 2 * Fe);
		swiglu_forward(b->hl + r * Fe, b->gul + r * 2 * Fe, n, Fe);
		linear_forward(b->tmp + r * C, b->hl + r * Fe, w + (size_t)2 * Fe * C, NULL, n, Fe, C);
	}
	local_to_wire(b->wire, b->tmp, p);
	if (exchange_rows(b, b->wire, b->ye, 1, err)) return -1;
	moe_combine(out, b->ye, topk_w, p->slot_of, N, C, k);
	b->stage = EP_FORWARD_DONE;
	return 0;
}

int ep_backward_input(struct ep_batch *b, float *dx, float *dtopk_w, const float *dout, const float *topk_w,
                      const float *w_local, char *err)
{
	struct ep_plan *p = &b->p;
	const int N = p->N, C = p->C, k = p->k, Fe = p->Fe;
	if (b->stage == EP_EMPTY) return errf(err, "ep: backward before a forward of this micro-batch");
	moe_combine_backward(b->sorted, dtopk_w, dout, b->ye, topk_w, p->slot_of, N, C, k);
	if (exchange_rows(b, b->sorted, b->wire, 0, err)) return -1;
	wire_to_local(b->dyl, b->wire, p);
	for (int j = 0; j < p->El; j++) {
		const size_t r = (size_t)p->loc_offsets[j];
		const int n = p->loc_offsets[j + 1] - p->loc_offsets[j];
		if (!n) continue;
		const float *w = expert_w(w_local, p, j);
		linear_backward_input(b->dhl + r * Fe, b->dyl + r * C, w + (size_t)2 * Fe * C, n, Fe, C, 0);
		swiglu_backward(b->dgul + r * 2 * Fe, b->dhl + r * Fe, b->gul + r * 2 * Fe, n, Fe);
		linear_backward_input(b->tmp + r * C, b->dgul + r * 2 * Fe, w, n, C, 2 * Fe, 0);
	}
	local_to_wire(b->wire, b->tmp, p);
	if (exchange_rows(b, b->wire, b->sorted, 1, err)) return -1;
	moe_gather_backward(dx, b->sorted, p->slot_of, N, C, k);
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
		float *dw = dw_local + (size_t)j * 3 * Fe * C;
		linear_backward_weight(dw, NULL, b->dgul + r * 2 * Fe, b->xl + r * C, n, C, 2 * Fe);
		linear_backward_weight(dw + (size_t)2 * Fe * C, NULL, b->dyl + r * C, b->hl + r * Fe, n, Fe, C);
	}
	return 0;
}
