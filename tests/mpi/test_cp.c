/* Context parallelism under mpirun (2, 4 or 8 ranks, the whole world one CP group):
 *  - the zig-zag split: positions against the chunk rule written out here and against
 *    model.md TV-L4 (cp 4: rank 0 holds chunks {0, 7}, 1 {1, 6}, 2 {2, 5}, 3 {3, 4}), the
 *    shard helpers against those positions, RoPE at the local positions against RoPE of the
 *    full sequence;
 *  - ring attention: every rank builds the same full-sequence qkv and output gradient, runs
 *    the single-rank attention_forward/backward on it (the independent reference), and
 *    cp_attention_forward/backward on its own rows must match out, lse and dqkv on those
 *    rows within 1e-5 relative to the largest reference magnitude;
 *  - with 4 ranks, the same on the CP groups of a dp 2 x cp 2 layout (runtime/ctx.h), where
 *    ring neighbours are group positions, not world ranks;
 *  - bad shapes give -1 and a message naming the field. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/backend.h"
#include "kernels/cpu.h"
#include "runtime/comm.h"
#include "runtime/cp.h"
#include "runtime/ctx.h"
#include "sim/util.h"
#include "tests/mpi/harness.h"
#include "tests/test.h"

static uint64_t rng_state;

/* global position of local row i: the chunk rule of Megatron-LM CP / Llama 3, written out */
static int want_pos(int T, int cp, int rank, int i)
{
	const int Tc = T / (2 * cp), chunk = i < Tc ? rank : 2 * cp - 1 - rank;
	return chunk * Tc + i % Tc;
}

/* max |got - want| over the rank's rows of a (B, T, w) reference, relative to max |want| */
static double rows_err(const float *got, const float *want, int B, int T, int w, int cp, int rank)
{
	const int Tl = T / cp;
	double e = 0.0, m = 1e-30;
	for (int b = 0; b < B; b++)
		for (int i = 0; i < Tl; i++)
			for (int c = 0; c < w; c++) {
				const double x = want[((size_t)b * T + want_pos(T, cp, rank, i)) * w + c];
				e = fmax(e, fabs(got[((size_t)b * Tl + i) * w + c] - x));
				m = fmax(m, fabs(x));
			}
	return e / m;
}

/* the same for lse (B, H, T) against the local (B, H, Tl) */
static double lse_err(const float *got, const float *want, int B, int H, int T, int cp, int rank)
{
	const int Tl = T / cp;
	double e = 0.0, m = 1e-30;
	for (int bh = 0; bh < B * H; bh++)
		for (int i = 0; i < Tl; i++) {
			const double x = want[(size_t)bh * T + want_pos(T, cp, rank, i)];
			e = fmax(e, fabs(got[(size_t)bh * Tl + i] - x));
			m = fmax(m, fabs(x));
		}
	return e / m;
}

static void test_split(struct comm *g)
{
	char err[ERR_LEN];
	const int n = comm_size(g), r = comm_rank(g), B = 2, T = 32, Tl = T / n, W = 3;
	int pos[32], bad = 0;
	CHECK(cp_positions(pos, T, n, r, err) == 0, "%s", err);
	for (int i = 0; i < Tl; i++) bad += pos[i] != want_pos(T, n, r, i);
	CHECK(bad == 0, "cp%d rank %d: %d positions differ from the zig-zag chunk rule", n, r, bad);
	if (n == 4) {
		static const int tv_l4[4][2] = {{0, 7}, {1, 6}, {2, 5}, {3, 4}}; /* model.md TV-L4 */
		const int Tc = T / 8;
		CHECK(pos[0] / Tc == tv_l4[r][0] && pos[Tc] / Tc == tv_l4[r][1],
		      "cp4 rank %d holds chunks {%d, %d}, TV-L4 says {%d, %d}", r, pos[0] / Tc, pos[Tc] / Tc,
		      tv_l4[r][0], tv_l4[r][1]);
	}
	int tok[2 * 32], ltok[2 * 32];
	float rows[2 * 32 * 3], lrows[2 * 32 * 3];
	for (int i = 0; i < B * T; i++) tok[i] = 1000 * (i / T) + i % T;
	for (int i = 0; i < B * T * W; i++) rows[i] = (float)i;
	CHECK(cp_shard_tokens(ltok, tok, B, T, n, r, err) == 0, "%s", err);
	CHECK(cp_shard_rows(lrows, rows, B, T, W, n, r, err) == 0, "%s", err);
	bad = 0;
	for (int b = 0; b < B; b++)
		for (int i = 0; i < Tl; i++) {
			bad += ltok[b * Tl + i] != 1000 * b + want_pos(T, n, r, i);
			for (int c = 0; c < W; c++)
				bad += lrows[(b * Tl + i) * W + c] != rows[(b * T + want_pos(T, n, r, i)) * W + c];
		}
	CHECK(bad == 0, "cp%d rank %d: %d sharded tokens or rows are not the rows at its positions", n, r, bad);

	/* RoPE with the rank's positions == the rank's rows of RoPE over the full sequence */
	const int H = 3, d = 8, ld = H * d;
	float *x = harness_rnd(&rng_state, (size_t)B * T * ld, 1), *xl = malloc(sizeof(float) * (size_t)B * Tl * ld);
	float *tab = malloc(sizeof(float) * (size_t)T * d), *tabl = malloc(sizeof(float) * (size_t)Tl * d);
	CHECK(cp_shard_rows(xl, x, B, T, ld, n, r, err) == 0, "%s", err);
	rope_table(tab, NULL, T, d, 10000.0);
	rope_table(tabl, pos, Tl, d, 10000.0);
	rope_forward(x, tab, B, T, H, d, ld);
	rope_forward(xl, tabl, B, Tl, H, d, ld);
	const double e = rows_err(xl, x, B, T, ld, n, r);
	CHECK(e <= 1e-6, "cp%d rank %d: RoPE at local positions vs full sequence: %.3g", n, r, e);
	free(x); free(xl); free(tab); free(tabl);

	CHECK(cp_positions(pos, 9 * n, n, r, err) == -1 && strstr(err, "multiple of 2*cp"), "T=9*cp: '%s'", err);
	CHECK(cp_shard_rows(lrows, rows, B, T, 0, n, r, err) == -1 && strstr(err, "width"), "width 0: '%s'", err);
	CHECK(cp_positions(pos, T, n, n, err) == -1 && strstr(err, "rank"), "rank = cp: '%s'", err);
}

static void test_attention(struct comm *g, int B, int T, int H, int Hkv, int d)
{
	char err[ERR_LEN];
	const int n = comm_size(g), r = comm_rank(g), Tl = T / n, ld = (H + 2 * Hkv) * d, ldo = H * d;
	rng_state = 0x1234567ull + (uint64_t)T * 31 + (uint64_t)H; /* the same inputs on every rank */
	float *qkv = harness_rnd(&rng_state, (size_t)B * T * ld, 1.5f), *dout = harness_rnd(&rng_state, (size_t)B * T * ldo, 1);
	float *out = malloc(sizeof(float) * (size_t)B * T * ldo), *lse = malloc(sizeof(float) * (size_t)B * H * T);
	float *dqkv = malloc(sizeof(float) * (size_t)B * T * ld);
	float *sc = malloc(sizeof(float) * attention_scratch_floats(B, T, H));
	attention_forward(out, lse, qkv, sc, B, T, H, Hkv, d);
	attention_backward(dqkv, dout, qkv, out, lse, sc, B, T, H, Hkv, d);

	float *lqkv = malloc(sizeof(float) * (size_t)B * Tl * ld), *ldout = malloc(sizeof(float) * (size_t)B * Tl * ldo);
	float *lout = malloc(sizeof(float) * (size_t)B * Tl * ldo), *llse = malloc(sizeof(float) * (size_t)B * H * Tl);
	float *ldqkv = malloc(sizeof(float) * (size_t)B * Tl * ld);
	float *lsc = malloc(sizeof(float) * cp_attention_scratch_floats(B, Tl, H, Hkv, d));
	struct kern *k = NULL;   /* the CPU row, whose memory is the host's */
	CHECK(kern_create(&k, &kern_cpu_ops, 0, err) == 0, "%s", err);
	CHECK(cp_shard_rows(lqkv, qkv, B, T, ld, n, r, err) == 0, "%s", err);
	CHECK(cp_shard_rows(ldout, dout, B, T, ldo, n, r, err) == 0, "%s", err);
	int rc = cp_attention_forward(g, k, lout, llse, lqkv, lsc, B, Tl, H, Hkv, d, err);
	CHECK(rc == 0, "cp_attention_forward: %s", err);
	rc = cp_attention_backward(g, k, ldqkv, ldout, lqkv, lout, llse, lsc, B, Tl, H, Hkv, d, err);
	CHECK(rc == 0, "cp_attention_backward: %s", err);
	const double eo = rows_err(lout, out, B, T, ldo, n, r), el = lse_err(llse, lse, B, H, T, n, r);
	const double eg = rows_err(ldqkv, dqkv, B, T, ld, n, r);
	CHECK(eo <= 1e-5, "cp%d rank %d B=%d T=%d H=%d Hkv=%d d=%d: out error %.3g", n, r, B, T, H, Hkv, d, eo);
	CHECK(el <= 1e-5, "cp%d rank %d B=%d T=%d H=%d Hkv=%d d=%d: lse error %.3g", n, r, B, T, H, Hkv, d, el);
	CHECK(eg <= 1e-5, "cp%d rank %d B=%d T=%d H=%d Hkv=%d d=%d: dqkv error %.3g", n, r, B, T, H, Hkv, d, eg);
	if (r == 0)
		printf("cp%d B=%d T=%d H=%d Hkv=%d d=%d: rank 0 max relative error out %.2g lse %.2g dqkv %.2g\n",
		       n, B, T, H, Hkv, d, eo, el, eg);
	free(qkv); free(dout); free(out); free(lse); free(dqkv); free(sc);
	free(lqkv); free(ldout); free(lout); free(llse); free(ldqkv); free(lsc);
	kern_destroy(k);
}

static void test_bad_shapes(struct comm *g)
{
	char err[ERR_LEN];
	float buf[64] = {0};
	struct kern *k = NULL;
	CHECK(kern_create(&k, &kern_cpu_ops, 0, err) == 0, "%s", err);
	CHECK(cp_attention_forward(g, k, buf, buf, buf, buf, 1, 3, 2, 1, 2, err) == -1 && strstr(err, "Tl (3)"),
	      "odd Tl: '%s'", err);
	CHECK(cp_attention_backward(g, k, buf, buf, buf, buf, buf, buf, 1, 2, 3, 2, 2, err) == -1 &&
	      strstr(err, "kv heads (2)"), "Hkv not dividing H: '%s'", err);
	kern_destroy(k);
}

int main(void)
{
	char err[ERR_LEN];
	struct comm *world;
	if (harness_world(&world, 60)) return 1;   /* a ring that deadlocks fails instead of hanging */
	const int n = comm_size(world);
	test_split(world);
	test_attention(world, 2, 32, 4, 2, 8);   /* the shapes of the task: GQA, chunks of 32/(2n) */
	test_attention(world, 1, 64, 2, 1, 16);  /* multi-query, longer chunks */
	test_attention(world, 1, 16 * n, 3, 3, 4); /* MHA, 8-row chunks */
	test_bad_shapes(world);
	if (n == 4) {
		struct ctx *x;
		CHECK(harness_ctx(world, 1, 1, 2, 1, &x, err) == 0, "%s", err); /* dp 2 x cp 2 */
		if (x) test_attention(ctx_comm(x, GROUP_CP), 2, 32, 4, 2, 8);
		ctx_destroy(x);
	}
	return harness_finish(world, "test_cp");
}
