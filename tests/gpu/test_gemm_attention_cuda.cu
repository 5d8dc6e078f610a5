/* The cuBLASLt linears (kernels/cublaslt_gemm.h) and the cuDNN attention (kernels/cudnn_attention.h)
 * against linear_* and attention_* of kernels/cpu.h, on bf16-rounded random data with poisoned
 * outputs. Growth factors (tests/gpu/bf16_check.h for u): GEMMs with a bf16 output 2u (fp32
 * accumulation, one rounding); attention output 8u and input gradients 16u, because the fused
 * kernels round the probabilities P and dS to bf16 before their second matmuls (an error of u
 * per element of P, relative to max|v| rather than to max|out|, which averaging makes up to a
 * few times smaller). Prints one line per check and "N passed, N failed"; exits 1 on failure. */
#include <stdlib.h>
#include "kernels/cpu.h"
#include "kernels/cublaslt_gemm.h"
#include "kernels/cudnn_attention.h"
#include "tests/gpu/bf16_check.h"

#define TOL_ATT_FWD (8 * U_BF16)
#define TOL_ATT_BWD (16 * U_BF16)

static void say_error(check_state *cs, const char *name, int rc, const char *err)
{
	if (rc) report(cs, 1, name, err);
}

static void test_linear(check_state *cs, struct cublaslt *g, int N, int IC, int OC)
{
	char name[96], err[256] = "";
	vec inp = rnd_bf(cs, (size_t)N * IC), w = rnd_bf(cs, (size_t)OC * IC), b = rnd_bf(cs, OC);
	vec dout = rnd_bf(cs, (size_t)N * OC), out((size_t)N * OC), out0((size_t)N * OC), dinp((size_t)N * IC);
	vec dinp_acc = rnd_bf(cs, (size_t)N * IC), dw = rnd_f(cs, (size_t)OC * IC), db = rnd_f(cs, OC);
	dbuf<bf16_t> d_inp(inp.size()), d_w(w.size()), d_b(OC), d_dout(dout.size()), d_out(out.size()), d_dinp(dinp.size());
	dbuf<float> d_out32(out.size()), d_dw(dw.size()), d_db(OC);
	put(d_inp, inp); put(d_w, w); put(d_b, b); put(d_dout, dout); put(d_dw, dw); put(d_db, db);
	linear_forward(out.data(), inp.data(), w.data(), b.data(), N, IC, OC);
	linear_forward(out0.data(), inp.data(), w.data(), NULL, N, IC, OC);
	snprintf(name, sizeof name, "linear forward + bias epilogue %dx%dx%d", N, IC, OC);
	int rc = cublaslt_linear_forward(g, d_out.p, d_inp.p, d_w.p, d_b.p, N, IC, OC, 0, err);
	say_error(cs, name, rc, err);
	compare(cs, name, out, get(d_out), TOL_BF16);
	const int cached = cublaslt_cached(g);
	d_out.poison();
	rc = cublaslt_linear_forward(g, d_out.p, d_inp.p, d_w.p, d_b.p, N, IC, OC, 0, err);
	say_error(cs, "linear forward again", rc, err);
	report(cs, cublaslt_cached(g) != cached, "linear forward: repeated shape reuses its cached algorithm", "");
	d_out.poison();
	rc = cublaslt_linear_forward(g, d_out.p, d_inp.p, d_w.p, NULL, N, IC, OC, 0, err);
	say_error(cs, "linear forward, no bias", rc, err);
	compare(cs, "linear forward, no bias (2u)", out0, get(d_out), TOL_BF16);
	rc = cublaslt_linear_forward_f32(g, d_out32.p, d_inp.p, d_w.p, N, IC, OC, 0, err);
	say_error(cs, "linear forward fp32 out", rc, err);
	compare(cs, "linear forward fp32 out", out0, get(d_out32), TOL_F32);
	linear_backward_input(dinp.data(), dout.data(), w.data(), N, IC, OC, 0);
	rc = cublaslt_linear_backward_input(g, d_dinp.p, d_dout.p, d_w.p, N, IC, OC, 0, 0, err);
	say_error(cs, "linear backward input", rc, err);
	compare(cs, "linear backward input (2u)", dinp, get(d_dinp), TOL_BF16);
	put(d_dinp, dinp_acc);
	linear_backward_input(dinp_acc.data(), dout.data(), w.data(), N, IC, OC, 1);
	rc = cublaslt_linear_backward_input(g, d_dinp.p, d_dout.p, d_w.p, N, IC, OC, 1, 0, err);
	say_error(cs, "linear backward input +=", rc, err);
	compare(cs, "linear backward input, accumulate (2u)", dinp_acc, get(d_dinp), TOL_BF16);
	for (int rep = 0; rep < 2 && !rc; rep++) {
		linear_backward_weight(dw.data(), db.data(), dout.data(), inp.data(), N, IC, OC);
		rc = cublaslt_linear_backward_weight(g, d_dw.p, d_db.p, d_dout.p, d_inp.p, N, IC, OC, 0, err);
		say_error(cs, "linear backward weight", rc, err);
	}
	compare(cs, "linear backward weight x2 (fp32 +=)", dw, get(d_dw), TOL_F32);
	compare(cs, "linear backward bias x2 (fp32 +=)", db, get(d_db), TOL_F32);
}

static void test_attention(check_state *cs, struct cudnn_att *a, int B, int T, int H, int Hkv, int d)
{
	char name[128], err[256] = "";
	const int ld = (H + 2 * Hkv) * d;
	const size_t nqkv = (size_t)B * T * ld, nout = (size_t)B * T * H * d, nlse = (size_t)B * H * T;
	vec qkv = rnd_bf(cs, nqkv, 2.0f), out(nout), lse(nlse), dout = rnd_bf(cs, nout), dqkv(nqkv);
	vec scratch(attention_scratch_floats(B, T, H));
	attention_forward(out.data(), lse.data(), qkv.data(), scratch.data(), B, T, H, Hkv, d);
	attention_backward(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), scratch.data(), B, T, H, Hkv, d);
	dbuf<bf16_t> d_qkv(nqkv), d_out(nout), d_dout(nout), d_dqkv(nqkv);
	dbuf<float> d_lse(nlse);
	put(d_qkv, qkv); put(d_dout, dout);
	snprintf(name, sizeof name, "attention forward B=%d T=%d H=%d Hkv=%d d=%d", B, T, H, Hkv, d);
	int rc = cudnn_att_forward(a, d_out.p, d_lse.p, d_qkv.p, B, T, H, Hkv, d, 0, err);
	say_error(cs, name, rc, err);
	compare(cs, name, out, get(d_out), TOL_ATT_FWD);
	compare(cs, "  ... lse (fp32)", lse, get(d_lse), TOL_F32);
	const int cached = cudnn_att_cached(a);
	d_out.poison();
	rc = cudnn_att_forward(a, d_out.p, d_lse.p, d_qkv.p, B, T, H, Hkv, d, 0, err);
	say_error(cs, "attention forward again", rc, err);
	report(cs, cudnn_att_cached(a) != cached, "  ... repeated shape reuses its cached plan", "");
	/* the backward gets the reference's forward results, so it is checked on its own */
	put(d_out, out);
	put(d_lse, lse);
	snprintf(name, sizeof name, "attention backward B=%d T=%d H=%d Hkv=%d d=%d", B, T, H, Hkv, d);
	rc = cudnn_att_backward(a, d_dqkv.p, d_dout.p, d_qkv.p, d_out.p, d_lse.p, B, T, H, Hkv, d, 0, err);
	say_error(cs, name, rc, err);
	const vec got = get(d_dqkv);
	/* dq, dk, dv separately: their magnitudes differ */
	const char *part[3] = {"  ... dq", "  ... dk", "  ... dv"};
	const int h0[3] = {0, H, H + Hkv}, nh[3] = {H, Hkv, Hkv};
	for (int p = 0; p < 3; p++) {
		vec r, gg;
		for (size_t row = 0; row < (size_t)B * T; row++)
			for (int c = h0[p] * d; c < (h0[p] + nh[p]) * d; c++) {
				r.push_back(dqkv[row * ld + c]);
				gg.push_back(got[row * ld + c]);
			}
		compare(cs, part[p], r, gg, TOL_ATT_BWD);
	}
}

int main(void)
{
	check_state cs = {0, 0, 88172645463325252ull};
	int dev = 0;
	char err[256] = "";
	if (cudaGetDeviceCount(&dev) != cudaSuccess || dev == 0) {
		printf("no CUDA device\n0 passed, 1 failed\n");
		return 1;
	}
	struct cublaslt *g = NULL;
	if (cublaslt_create(&g, err)) report(&cs, 1, "cublaslt create", err);
	else {
		test_linear(&cs, g, 300, 96, 80);
		test_linear(&cs, g, 1024, 512, 768);
		cublaslt_destroy(g);
	}
	struct cudnn_att *a = NULL;
	if (cudnn_att_create(&a, err)) report(&cs, 1, "cudnn attention create", err);
	else {
		test_attention(&cs, a, 1, 128, 4, 4, 64);    /* multi-head: no GQA reduction */
		test_attention(&cs, a, 2, 256, 8, 2, 128);   /* GQA, group of 4 */
		test_attention(&cs, a, 1, 200, 4, 1, 64);    /* T not a multiple of the tile, MQA */
		cudnn_att_destroy(a);
	}
	return finish(&cs);
}
