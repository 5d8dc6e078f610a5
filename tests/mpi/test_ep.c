/* Expert parallelism under mpirun (1, 2 or 4 ranks, the whole world one EP group): every rank
 * builds the same global problem — all ranks' tokens (a different count per rank), router
 * logits, all E experts' weights, output gradients — and runs the layer on ALL tokens with
 * all experts on one rank, written here exactly as runtime/model_pass.c's moe_forward and
 * moe_backward_b / llama_layer_backward_w do it with the reference kernels (the independent
 * reference). ep_forward / ep_backward_input / ep_backward_weight on the rank's own tokens
 * and experts must then match the output rows, dx, dtopk_w and the local experts' weight
 * gradients within 1e-5 relative to the largest reference magnitude. Two micro-batches are
 * in flight at once (forward 0, forward 1, B 1, B 0, W 1, W 0), so each keeps its own plan;
 * outputs and gradients start from non-zero values to check that they accumulate. Cases:
 * E = 4 and 8, top-2, random logits, and logits that send every row to rank 0's experts
 * (the other ranks receive nothing); with 4 ranks also on the EP groups of a dp 4 x ep 2
 * layout (runtime/ctx.h). Bad shapes and out-of-order calls give messages. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/backend.h"
#include "kernels/cpu.h"
#include "runtime/comm.h"
#include "runtime/ctx.h"
#include "runtime/ep.h"
#include "sim/util.h"
#include "tests/mpi/harness.h"
#include "tests/test.h"

#define C 16
#define FE 24
#define TOPK 2
#define MB 2      /* micro-batches in flight */

static uint64_t rng_state;

/* The single-rank MoE layer over N tokens with all E experts, as runtime/model_pass.c:
 * out += combine(experts(gather(x))); dx += ...; dtw = ...; dW += ... */
static void ref_layer(float *out, float *dx, float *dtw, float *dW, const float *x, const int *idx,
                      const float *tw, const float *W, const float *dout, int N, int E)
{
	const int k = TOPK, NK = N * k;
	const size_t ew = (size_t)3 * FE * C;
	int *off = malloc(sizeof(int) * (size_t)(E + 1)), *perm = malloc(sizeof(int) * NK), *slot = malloc(sizeof(int) * NK);
	float *xe = malloc(sizeof(float) * (size_t)NK * C), *gue = malloc(sizeof(float) * (size_t)NK * 2 * FE);
	float *he = malloc(sizeof(float) * (size_t)NK * FE), *ye = malloc(sizeof(float) * (size_t)NK * C);
	float *dye = malloc(sizeof(float) * (size_t)NK * C), *dhe = malloc(sizeof(float) * (size_t)NK * FE);
	float *dgue = malloc(sizeof(float) * (size_t)NK * 2 * FE), *dxe = malloc(sizeof(float) * (size_t)NK * C);
	moe_dispatch(off, perm, slot, idx, N, E, k);
	moe_gather(xe, x, perm, N, C, k);
	for (int e = 0; e < E; e++) {
		const size_t r = (size_t)off[e];
		const int n = off[e + 1] - off[e];
		if (!n) continue;
		const float *w = W + (size_t)e * ew;
		linear_forward(gue + r * 2 * FE, xe + r * C, w, NULL, n, C, 2 * FE);
		swiglu_forward(he + r * FE, gue + r * 2 * FE, n, FE);
		linear_forward(ye + r * C, he + r * FE, w + (size_t)2 * FE * C, NULL, n, FE, C);
	}
	moe_combine(out, ye, tw, slot, N, C, k);
	moe_combine_backward(dye, dtw, dout, ye, tw, slot, N, C, k);
	for (int e = 0; e < E; e++) {
		const size_t r = (size_t)off[e];
		const int n = off[e + 1] - off[e];
		if (!n) continue;
		const float *w = W + (size_t)e * ew;
		linear_backward_input(dhe + r * FE, dye + r * C, w + (size_t)2 * FE * C, n, FE, C, 0);
		swiglu_backward(dgue + r * 2 * FE, dhe + r * FE, gue + r * 2 * FE, n, FE);
		linear_backward_input(dxe + r * C, dgue + r * 2 * FE, w, n, C, 2 * FE, 0);
		float *dw = dW + (size_t)e * ew;
		linear_backward_weight(dw, NULL, dgue + r * 2 * FE, xe + r * C, n, C, 2 * FE);
		linear_backward_weight(dw + (size_t)2 * FE * C, NULL, dye + r * C, he + r * FE, n, FE, C);
	}
	moe_gather_backward(dx, dxe, slot, N, C, k);
	free(off); free(perm); free(slot); free(xe); free(gue); free(he); free(ye); free(dye); free(dhe);
	free(dgue); free(dxe);
}

/* one micro-batch of the global problem and this rank's slice of it */
struct mb {
	int Nall, N, first;                        /* all tokens, this rank's, its first row */
	float *x, *logits, *probs, *tw, *dout;     /* global (Nall, .) */
	int *idx;
	float *out_ref, *dx_ref, *dtw_ref;         /* global results of the reference */
	float *out, *dx, *dtw;                     /* this rank's, from ep_* */
	struct ep_batch *b;
};

static void mb_make(struct mb *m, int nranks, int rank, int E, int skew)
{
	m->Nall = 0;
	for (int q = 0; q < nranks; q++) {
		if (q == rank) m->first = m->Nall;
		m->Nall += 5 + q;                       /* uneven token counts per rank */
	}
	m->N = 5 + rank;
	const size_t NA = (size_t)m->Nall;
	m->x = harness_rnd(&rng_state, NA * C, 1);
	m->logits = harness_rnd(&rng_state, NA * E, 2);
	if (skew)   /* every token picks experts 0 and 1, which rank 0 owns */
		for (size_t t = 0; t < NA; t++) { m->logits[t * E] += 20; m->logits[t * E + 1] += 19; }
	m->dout = harness_rnd(&rng_state, NA * C, 1);
	m->probs = malloc(sizeof(float) * NA * E);
	m->tw = malloc(sizeof(float) * NA * TOPK);
	m->idx = malloc(sizeof(int) * NA * TOPK);
	moe_router_forward(m->probs, m->idx, m->tw, m->logits, m->Nall, E, TOPK);
	m->out_ref = harness_rnd(&rng_state, NA * C, 1); /* non-zero: out and dx accumulate */
	m->dx_ref = harness_rnd(&rng_state, NA * C, 1);
	m->dtw_ref = malloc(sizeof(float) * NA * TOPK);
	m->out = harness_copy(m->out_ref + (size_t)m->first * C, (size_t)m->N * C);
	m->dx = harness_copy(m->dx_ref + (size_t)m->first * C, (size_t)m->N * C);
	m->dtw = malloc(sizeof(float) * (size_t)m->N * TOPK);
	m->b = NULL;
}

static void mb_free(struct mb *m)
{
	free(m->x); free(m->logits); free(m->probs); free(m->tw); free(m->dout); free(m->idx);
	free(m->out_ref); free(m->dx_ref); free(m->dtw_ref); free(m->out); free(m->dx); free(m->dtw);
	ep_batch_destroy(m->b);
}

static void run_case(struct comm *g, int E, int skew)
{
	char err[ERR_LEN];
	const int n = comm_size(g), r = comm_rank(g), El = E / n;
	const size_t ew = (size_t)3 * FE * C;
	rng_state = 0xabcdef12ull + (uint64_t)E * 7 + (uint64_t)skew; /* the same problem on every rank */
	float *W = harness_rnd(&rng_state, (size_t)E * ew, 0.3f), *dW_ref = harness_rnd(&rng_state, (size_t)E * ew, 0.1f);
	float *dW = harness_copy(dW_ref + (size_t)r * El * ew, (size_t)El * ew);
	struct mb m[MB];
	for (int i = 0; i < MB; i++) mb_make(&m[i], n, r, E, skew);
	for (int i = 0; i < MB; i++)
		ref_layer(m[i].out_ref, m[i].dx_ref, m[i].dtw_ref, dW_ref, m[i].x, m[i].idx, m[i].tw, W, m[i].dout,
		          m[i].Nall, E);

	const float *wl = W + (size_t)r * El * ew;
	struct kern *kc = NULL;   /* the CPU row, whose memory is the host's */
	int ok = kern_create(&kc, &kern_cpu_ops, 0, err) == 0;
	CHECK(ok, "%s", err);
	for (int i = 0; i < MB && ok; i++) {
		struct mb *q = &m[i];
		const size_t f = (size_t)q->first;
		ok = ep_batch_create(&q->b, g, kc, q->N, E, TOPK, C, FE, err) == 0;
		CHECK(ok, "ep_batch_create: %s", err);
		ok = ok && ep_forward(q->b, q->out, q->x + f * C, q->idx + f * TOPK, q->tw + f * TOPK, wl, err) == 0;
		CHECK(ok, "ep_forward micro-batch %d: %s", i, err);
	}
	for (int i = MB - 1; i >= 0 && ok; i--) {
		struct mb *q = &m[i];
		const size_t f = (size_t)q->first;
		ok = ep_backward_input(q->b, q->dx, q->dtw, q->dout + f * C, q->tw + f * TOPK, wl, err) == 0;
		CHECK(ok, "ep_backward_input micro-batch %d: %s", i, err);
	}
	for (int i = MB - 1; i >= 0 && ok; i--) {
		ok = ep_backward_weight(m[i].b, dW, err) == 0;
		CHECK(ok, "ep_backward_weight micro-batch %d: %s", i, err);
	}
	if (ok) {
		double eo = 0, ex = 0, et = 0;
		for (int i = 0; i < MB; i++) {
			const size_t f = (size_t)m[i].first, N = (size_t)m[i].N;
			eo = fmax(eo, harness_rel_err(m[i].out, m[i].out_ref + f * C, N * C));
			ex = fmax(ex, harness_rel_err(m[i].dx, m[i].dx_ref + f * C, N * C));
			et = fmax(et, harness_rel_err(m[i].dtw, m[i].dtw_ref + f * TOPK, N * TOPK));
		}
		const double ew_err = harness_rel_err(dW, dW_ref + (size_t)r * El * ew, (size_t)El * ew);
		const char *kind = skew ? "all rows to rank 0" : "random routing";
		CHECK(eo <= 1e-5, "ep%d rank %d E=%d %s: output error %.3g", n, r, E, kind, eo);
		CHECK(ex <= 1e-5, "ep%d rank %d E=%d %s: dx error %.3g", n, r, E, kind, ex);
		CHECK(et <= 1e-5, "ep%d rank %d E=%d %s: dtopk_w error %.3g", n, r, E, kind, et);
		CHECK(ew_err <= 1e-5, "ep%d rank %d E=%d %s: expert weight gradient error %.3g", n, r, E, kind, ew_err);
		const struct ep_plan *p = ep_batch_plan(m[0].b);
		int rows = 0;  /* rows this rank's experts got, counted from the global routing */
		for (size_t a = 0; a < (size_t)m[0].Nall * TOPK; a++) rows += m[0].idx[a] / El == r;
		CHECK(p->R == rows, "ep%d rank %d: plan says %d rows received, the routing sends %d", n, r, p->R, rows);
		if (r == 0)
			printf("ep%d E=%d top-%d C=%d Fe=%d %s: rank 0 received %d rows; max relative error "
			       "out %.2g dx %.2g dtopk_w %.2g dW %.2g\n", n, E, TOPK, C, FE, kind, p->R, eo, ex, et, ew_err);
	}
	for (int i = 0; i < MB; i++) mb_free(&m[i]);
	kern_destroy(kc);
	free(W); free(dW_ref); free(dW);
}

static void test_errors(struct comm *g)
{
	char err[ERR_LEN];
	const int n = comm_size(g);
	struct ep_batch *b = NULL;
	struct kern *kc = NULL;
	if (kern_create(&kc, &kern_cpu_ops, 0, err)) { CHECK(0, "%s", err); return; }
	if (n > 1) {
		CHECK(ep_batch_create(&b, g, kc, 4, n + 1, 2, C, FE, err) == -1 && strstr(err, "multiple of the EP size"),
		      "E not a multiple of ep: '%s'", err);
	}
	CHECK(ep_batch_create(&b, g, kc, 4, 4 * n, 4 * n + 1, C, FE, err) == -1 && strstr(err, "top-k"), "k > E: '%s'", err);
	CHECK(ep_batch_create(&b, g, kc, 4, 4 * n, 2, 0, FE, err) == -1 && strstr(err, "widths"), "C = 0: '%s'", err);
	if (ep_batch_create(&b, g, kc, 2, 4 * n, 2, C, FE, err)) { CHECK(0, "%s", err); kern_destroy(kc); return; }
	float x[2 * C] = {0}, tw[4] = {0}, dw[1] = {0};
	int idx[4] = {0, 1, 4 * n, 0};
	CHECK(ep_backward_input(b, x, tw, x, tw, dw, err) == -1 && strstr(err, "before a forward"), "B first: '%s'", err);
	CHECK(ep_backward_weight(b, dw, err) == -1 && strstr(err, "before the input-gradient"), "W first: '%s'", err);
	CHECK(ep_forward(b, x, x, idx, tw, dw, err) == -1 && strstr(err, "topk_idx[2]"), "bad expert index: '%s'", err);
	ep_batch_destroy(b);
	kern_destroy(kc);
}

int main(void)
{
	char err[ERR_LEN];
	struct comm *world;
	if (harness_world(&world, 60)) return 1;   /* an exchange that deadlocks fails instead of hanging */
	const int n = comm_size(world);
	if (4 % n == 0) run_case(world, 4, 0);
	run_case(world, 8, 0);
	run_case(world, 8, 1);
	test_errors(world);
	if (n == 4) {
		struct ctx *x;
		CHECK(harness_ctx(world, 1, 1, 1, 2, &x, err) == 0, "%s", err); /* dp 4 x ep 2 */
		if (x) run_case(ctx_comm(x, GROUP_EP), 4, 0);
		ctx_destroy(x);
	}
	return harness_finish(world, "test_ep");
}
