/* Every bf16 kernel of kernels/cuda_bf16.h against its fp32 CPU reference (kernels/cpu.h) on
 * random data rounded to bf16 first, outputs poisoned before each call, accumulating outputs
 * called twice and compared with the reference called twice. Tolerances: tests/gpu/bf16_check.h.
 * Prints one line per check and "N passed, N failed"; exits 1 on any failure. Needs a GPU
 * (`make gpu-test`). */
#include <stdlib.h>
#include "kernels/cpu.h"
#include "tests/gpu/bf16_check.h"

static void test_casts(check_state *cs)
{
	const size_t n = 100003;
	vec x = rnd_f(cs, n, 100.0f), want(n);
	for (size_t i = 0; i < n; i++) want[i] = bf(x[i]);
	dbuf<float> dx(n), back(n);
	dbuf<bf16_t> db(n);
	put(dx, x);
	cuda_bf16_from_f32(db.p, dx.p, n, 0);
	compare(cs, "cast fp32 -> bf16 (round to nearest even)", want, get(db), 0.0);
	cuda_bf16_to_f32(back.p, db.p, n, 0);
	compare(cs, "cast bf16 -> fp32 (exact)", want, get(back), 0.0);
}

static void test_embedding(check_state *cs)
{
	const int N = 300, C = 96, V = 64, v0 = 16, Vs = 32;
	ivec tok(N);
	for (auto &t : tok) t = (int)((frand(cs) + 1.0f) * 0.5f * V) % V;
	vec wte = rnd_bf(cs, (size_t)Vs * C), dout = rnd_bf(cs, (size_t)N * C), out(N * C), dwte = rnd_f(cs, (size_t)Vs * C);
	dbuf<int> d_tok(N);
	dbuf<bf16_t> d_wte(wte.size()), d_dout(dout.size()), d_out(out.size());
	dbuf<float> d_dwte(dwte.size());
	put(d_tok, tok); put(d_wte, wte); put(d_dout, dout); put(d_dwte, dwte);
	embedding_forward(out.data(), tok.data(), wte.data(), N, C, v0, Vs);
	cuda_bf16_embedding_forward(d_out.p, d_tok.p, d_wte.p, N, C, v0, Vs, 0);
	compare(cs, "embedding forward (shard, zero rows outside)", out, get(d_out), 0.0);
	for (int rep = 0; rep < 2; rep++) {
		embedding_backward(dwte.data(), dout.data(), tok.data(), N, C, v0, Vs);
		cuda_bf16_embedding_backward(d_dwte.p, d_dout.p, d_tok.p, N, C, v0, Vs, 0);
	}
	compare(cs, "embedding backward x2 (fp32 +=)", dwte, get(d_dwte), TOL_F32);
}

static void test_rmsnorm(check_state *cs)
{
	const int N = 517, C = 1024;
	vec inp = rnd_bf(cs, (size_t)N * C, 3), w = rnd_bf(cs, C), dout = rnd_bf(cs, (size_t)N * C);
	vec out(N * C), rstd(N), dinp = rnd_bf(cs, (size_t)N * C), dw = rnd_f(cs, C), db = rnd_f(cs, C);
	dbuf<bf16_t> d_inp(inp.size()), d_w(C), d_dout(dout.size()), d_out(out.size()), d_dinp(dinp.size());
	dbuf<float> d_rstd(N), d_dw(C), d_db(C), d_scr(cuda_bf16_colsum_scratch_floats(N, C));
	put(d_inp, inp); put(d_w, w); put(d_dout, dout); put(d_dinp, dinp); put(d_dw, dw); put(d_db, db);
	rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), N, C, 1e-5f);
	cuda_bf16_rmsnorm_forward(d_out.p, d_rstd.p, d_inp.p, d_w.p, N, C, 1e-5f, 0);
	compare(cs, "rmsnorm forward (2u)", out, get(d_out), TOL_BF16);
	compare(cs, "rmsnorm rstd (fp32)", rstd, get(d_rstd), TOL_F32);
	/* the reference's residual gradient is rounded to bf16 after each call, as the GPU's is */
	for (int rep = 0; rep < 2; rep++) {
		rmsnorm_backward(dinp.data(), dw.data(), dout.data(), inp.data(), w.data(), rstd.data(), N, C);
		for (auto &x : dinp) x = bf(x);
		cuda_bf16_rmsnorm_backward(d_dinp.p, d_dw.p, d_dout.p, d_inp.p, d_w.p, d_rstd.p, d_scr.p, N, C, 0);
		for (int n = 0; n < N; n++)
			for (int c = 0; c < C; c++) db[c] += dout[(size_t)n * C + c];
		cuda_bf16_bias_backward(d_db.p, d_dout.p, d_scr.p, N, C, 0);
	}
	compare(cs, "rmsnorm backward input x2 (bf16 +=, 2u)", dinp, get(d_dinp), TOL_BF16);
	compare(cs, "rmsnorm backward weight x2 (fp32 +=)", dw, get(d_dw), TOL_F32);
	compare(cs, "bias backward x2 (fp32 +=)", db, get(d_db), TOL_F32);
}

static void test_rope(check_state *cs)
{
	const int B = 2, T = 37, H = 4, Hkv = 2, d = 64, ld = (H + 2 * Hkv) * d, hd = d / 2;
	ivec pos(T);
	for (int t = 0; t < T; t++) pos[t] = 1000 + 3 * t; /* a context-parallel shard's positions */
	vec tab((size_t)T * d), x = rnd_bf(cs, (size_t)B * T * ld), dx = rnd_bf(cs, (size_t)B * T * ld);
	dbuf<int> d_pos(T);
	dbuf<float> d_tab(tab.size());
	dbuf<bf16_t> d_x(x.size()), d_dx(dx.size());
	put(d_pos, pos); put(d_x, x); put(d_dx, dx);
	rope_table(tab.data(), pos.data(), T, d, 500000.0);
	cuda_bf16_rope_table(d_tab.p, d_pos.p, T, d, 500000.0, 0);
	compare(cs, "rope table (fp32, positions given)", tab, get(d_tab), TOL_F32);
	vec tab0((size_t)T * hd * 2);
	rope_table(tab0.data(), NULL, T, d, 10000.0);
	cuda_bf16_rope_table(d_tab.p, NULL, T, d, 10000.0, 0);
	compare(cs, "rope table (fp32, positions 0..T-1)", tab0, get(d_tab), TOL_F32);
	rope_forward(x.data(), tab0.data(), B, T, H + Hkv, d, ld);
	cuda_bf16_rope_forward(d_x.p, d_tab.p, B, T, H + Hkv, d, ld, 0);
	compare(cs, "rope forward q,k in place, v untouched (2u)", x, get(d_x), TOL_BF16);
	rope_backward(dx.data(), tab0.data(), B, T, H + Hkv, d, ld);
	cuda_bf16_rope_backward(d_dx.p, d_tab.p, B, T, H + Hkv, d, ld, 0);
	compare(cs, "rope backward (2u)", dx, get(d_dx), TOL_BF16);
}

static void test_activations(check_state *cs)
{
	const int N = 129, F = 700;
	const size_t n = (size_t)N * F;
	vec gu = rnd_bf(cs, 2 * n, 4), dout = rnd_bf(cs, n), out(n), dgu(2 * n);
	dbuf<bf16_t> d_gu(gu.size()), d_dout(n), d_out(n), d_dgu(2 * n);
	put(d_gu, gu); put(d_dout, dout);
	swiglu_forward(out.data(), gu.data(), N, F);
	cuda_bf16_swiglu_forward(d_out.p, d_gu.p, N, F, 0);
	compare(cs, "swiglu forward (2u)", out, get(d_out), TOL_BF16);
	swiglu_backward(dgu.data(), dout.data(), gu.data(), N, F);
	cuda_bf16_swiglu_backward(d_dgu.p, d_dout.p, d_gu.p, N, F, 0);
	compare(cs, "swiglu backward (2u)", dgu, get(d_dgu), TOL_BF16);
	vec x = rnd_bf(cs, n, 5), y(n), dx(n);
	dbuf<bf16_t> d_x(n), d_y(n), d_g(n);
	put(d_x, x);
	gelu_forward(y.data(), x.data(), n);
	cuda_bf16_gelu_forward(d_y.p, d_x.p, n, 0);
	compare(cs, "gelu forward (2u)", y, get(d_y), TOL_BF16);
	gelu_backward(dx.data(), dout.data(), x.data(), n);
	put(d_g, dout);
	cuda_bf16_gelu_backward(d_g.p, d_g.p, d_x.p, n, 0); /* dinp aliases dout */
	compare(cs, "gelu backward, dinp aliasing dout (2u)", dx, get(d_g), TOL_BF16);
}

static void test_crossentropy(check_state *cs)
{
	const int N = 40, V = 50257;
	const float dloss = 1.0f / N;
	vec z = rnd_bf(cs, (size_t)N * V, 8), losses(N), lse(N), dz((size_t)N * V);
	ivec tgt(N);
	for (int n = 0; n < N; n++) tgt[n] = n % 7 == 3 ? -1 : (int)((frand(cs) + 1.0f) * 0.5f * (V - 1));
	crossentropy_forward(losses.data(), lse.data(), z.data(), tgt.data(), N, V);
	crossentropy_backward(dz.data(), z.data(), lse.data(), tgt.data(), dloss, N, V);
	dbuf<bf16_t> d_z(z.size()), d_dz(z.size());
	dbuf<float> d_loss(N), d_lse(N);
	dbuf<int> d_t(N);
	put(d_z, z); put(d_t, tgt);
	cuda_bf16_crossentropy_fused(d_loss.p, d_lse.p, d_dz.p, d_z.p, d_t.p, dloss, N, V, 0);
	compare(cs, "crossentropy losses (fp32, ignored targets)", losses, get(d_loss), TOL_F32);
	compare(cs, "crossentropy lse (fp32)", lse, get(d_lse), TOL_F32);
	compare(cs, "crossentropy dlogits (2u)", dz, get(d_dz), TOL_BF16);
	d_loss.poison();
	cuda_bf16_crossentropy_fused(d_loss.p, d_lse.p, d_z.p, d_z.p, d_t.p, dloss, N, V, 0); /* in place */
	compare(cs, "crossentropy in place: losses", losses, get(d_loss), TOL_F32);
	compare(cs, "crossentropy in place: dlogits (2u)", dz, get(d_z), TOL_BF16);
}

static void test_optim(check_state *cs)
{
	const size_t n = 300007;
	vec p = rnd_f(cs, n), g = rnd_f(cs, n, 0.1f), m = rnd_f(cs, n, 0.01f), v(n);
	for (auto &x : v) x = fabsf(frand(cs)) * 1e-4f;
	dbuf<float> d_p(n), d_g(n), d_m(n), d_v(n), d_sum(1), d_fac(1);
	dbuf<bf16_t> d_pb(n);
	dbuf<double> d_scr(CUDA_BF16_SUMSQ_PARTS);
	put(d_p, p); put(d_g, g); put(d_m, m); put(d_v, v);
	/* sumsq, clip factor and AdamW with the factor on the device */
	float sum = 0.5f;
	grad_sumsq(&sum, g.data(), n);
	vec start = {0.5f};
	put(d_sum, start);
	cuda_bf16_grad_sumsq(d_sum.p, d_g.p, n, d_scr.p, 0);
	compare(cs, "grad sumsq (+=, two-pass)", vec{sum}, get(d_sum), TOL_F32);
	const vec first = get(d_sum);
	put(d_sum, start);
	cuda_bf16_grad_sumsq(d_sum.p, d_g.p, n, d_scr.p, 0);
	const vec second = get(d_sum);
	report(cs, memcmp(first.data(), second.data(), 4) != 0, "grad sumsq bitwise reproducible", "");
	const float max_norm = 1.0f, fac = grad_clip_factor(sum, max_norm);
	cuda_bf16_grad_clip_factor(d_fac.p, d_sum.p, max_norm, 0);
	compare(cs, "grad clip factor (on device)", vec{fac}, get(d_fac), TOL_F32);
	adamw_step(p.data(), g.data(), m.data(), v.data(), n, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 7, fac);
	cuda_bf16_adamw_step(d_p.p, d_pb.p, d_g.p, d_m.p, d_v.p, n, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 7, 1.0f, d_fac.p, 0);
	compare(cs, "adamw master weights (fp32)", p, get(d_p), TOL_F32);
	compare(cs, "adamw m (fp32)", m, get(d_m), TOL_F32);
	compare(cs, "adamw v (fp32)", v, get(d_v), TOL_F32);
	vec pb(n);
	for (size_t i = 0; i < n; i++) pb[i] = bf(p[i]);
	compare(cs, "adamw bf16 compute copy (2u)", pb, get(d_pb), TOL_BF16);
	grad_scale(g.data(), n, 0.25f * fac);
	cuda_bf16_grad_scale(d_g.p, n, 0.25f, d_fac.p, 0);
	compare(cs, "grad scale (factor x device factor)", g, get(d_g), TOL_F32);
}

void test_moe(check_state *cs); /* tests/gpu/test_bf16_moe.cu */

int main(void)
{
	check_state cs = {0, 0, 88172645463325252ull};
	int dev = 0;
	if (cudaGetDeviceCount(&dev) != cudaSuccess || dev == 0) {
		printf("no CUDA device\n0 passed, 1 failed\n");
		return 1;
	}
	test_casts(&cs);
	test_embedding(&cs);
	test_rmsnorm(&cs);
	test_rope(&cs);
	test_activations(&cs);
	test_crossentropy(&cs);
	test_optim(&cs);
	test_moe(&cs);
	return finish(&cs);
}
