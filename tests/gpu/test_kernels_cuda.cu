/* Every CUDA kernel (kernels/cuda.h) against its CPU reference (kernels/cpu.h) on random data:
 * prints the largest error relative to the largest reference value per kernel and ends with
 * "N passed, N failed". Needs a GPU: `make gpu-test`. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>
#include "kernels/cpu.h"
#include "kernels/cuda.h"

static int passed, failed;
static uint64_t rng = 88172645463325252ull;

static float frand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

typedef std::vector<float> vec;
static vec rnd(size_t n, float s = 1.0f)
{
	vec v(n);
	for (auto &x : v) x = frand() * s;
	return v;
}

/* a device copy that frees itself */
template <typename T> struct dbuf {
	T *p = nullptr;
	size_t n = 0;
	explicit dbuf(const std::vector<T> &h) : n(h.size()) {
		cudaMalloc(&p, sizeof(T) * (n ? n : 1));
		cudaMemcpy(p, h.data(), sizeof(T) * n, cudaMemcpyHostToDevice);
	}
	explicit dbuf(size_t count) : n(count) {
		cudaMalloc(&p, sizeof(T) * (n ? n : 1));
		cudaMemset(p, 0, sizeof(T) * (n ? n : 1));
	}
	~dbuf() { cudaFree(p); }
	std::vector<T> get() const {
		std::vector<T> h(n);
		cudaMemcpy(h.data(), p, sizeof(T) * n, cudaMemcpyDeviceToHost);
		return h;
	}
	dbuf(const dbuf &) = delete;
	dbuf &operator=(const dbuf &) = delete;
};

static void compare(const char *name, const vec &ref, const vec &got, double tol)
{
	double maxerr = 0.0, maxref = 1e-30;
	for (size_t i = 0; i < ref.size(); i++) {
		maxerr = fmax(maxerr, fabs((double)ref[i] - got[i]));
		maxref = fmax(maxref, fabs((double)ref[i]));
	}
	char err[256] = "";
	int bad = cuda_last_error(err) || !(maxerr <= tol * maxref);
	printf("%-4s %-28s max |gpu - cpu| / max |cpu| = %.3g%s%s\n", bad ? "FAIL" : "ok", name, maxerr / maxref,
	       err[0] ? "  " : "", err);
	if (bad) failed++;
	else passed++;
}

static void test_linear(cublasHandle_t h)
{
	int N = 300, IC = 96, OC = 80;
	vec inp = rnd((size_t)N * IC), w = rnd((size_t)OC * IC), b = rnd(OC), dout = rnd((size_t)N * OC);
	vec out(N * OC), dinp(N * IC), dw = rnd((size_t)OC * IC), db = rnd(OC);
	dbuf<float> d_inp(inp), d_w(w), d_b(b), d_dout(dout), d_out(out.size()), d_dinp(dinp.size()), d_dw(dw), d_db(db);
	linear_forward(out.data(), inp.data(), w.data(), b.data(), N, IC, OC);
	linear_backward_input(dinp.data(), dout.data(), w.data(), N, IC, OC, 0);
	linear_backward_weight(dw.data(), db.data(), dout.data(), inp.data(), N, IC, OC);
	cuda_linear_forward(h, d_out.p, d_inp.p, d_w.p, d_b.p, N, IC, OC);
	cuda_linear_backward_input(h, d_dinp.p, d_dout.p, d_w.p, N, IC, OC, 0);
	cuda_linear_backward_weight(h, d_dw.p, d_db.p, d_dout.p, d_inp.p, N, IC, OC);
	compare("linear forward", out, d_out.get(), 1e-5);
	compare("linear backward input", dinp, d_dinp.get(), 1e-5);
	compare("linear backward weight", dw, d_dw.get(), 1e-5);
	compare("linear backward bias", db, d_db.get(), 1e-5);
}

static void test_embedding(void)
{
	int N = 200, C = 48, V = 64, v0 = 16, Vs = 32;
	std::vector<int> tok(N);
	for (auto &t : tok) t = (int)((frand() + 1.0f) * 0.5f * V) % V;
	vec wte = rnd((size_t)Vs * C), dout = rnd((size_t)N * C), out(N * C), dwte = rnd((size_t)Vs * C);
	dbuf<int> d_tok(tok);
	dbuf<float> d_wte(wte), d_dout(dout), d_out(out.size()), d_dwte(dwte);
	embedding_forward(out.data(), tok.data(), wte.data(), N, C, v0, Vs);
	embedding_backward(dwte.data(), dout.data(), tok.data(), N, C, v0, Vs);
	cuda_embedding_forward(d_out.p, d_tok.p, d_wte.p, N, C, v0, Vs, 0);
	cuda_embedding_backward(d_dwte.p, d_dout.p, d_tok.p, N, C, v0, Vs, 0);
	compare("embedding forward (shard)", out, d_out.get(), 0);
	compare("embedding backward (shard)", dwte, d_dwte.get(), 1e-6);
}

static void test_rmsnorm(void)
{
	int N = 77, C = 768;
	vec inp = rnd((size_t)N * C, 3), w = rnd(C), dout = rnd((size_t)N * C), out(N * C), rstd(N);
	vec dinp = rnd((size_t)N * C), dw = rnd(C);
	dbuf<float> d_inp(inp), d_w(w), d_dout(dout), d_out(out.size()), d_rstd(N), d_dinp(dinp), d_dw(dw);
	rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), N, C, 1e-5f);
	rmsnorm_backward(dinp.data(), dw.data(), dout.data(), inp.data(), w.data(), rstd.data(), N, C);
	cuda_rmsnorm_forward(d_out.p, d_rstd.p, d_inp.p, d_w.p, N, C, 1e-5f, 0);
	cuda_rmsnorm_backward(d_dinp.p, d_dw.p, d_dout.p, d_inp.p, d_w.p, d_rstd.p, N, C, 0);
	compare("rmsnorm forward", out, d_out.get(), 1e-5);
	compare("rmsnorm rstd", rstd, d_rstd.get(), 1e-5);
	compare("rmsnorm backward input (+=)", dinp, d_dinp.get(), 1e-5);
	compare("rmsnorm backward weight (+=)", dw, d_dw.get(), 1e-4);
}

static void test_rope(void)
{
	int B = 2, T = 100, nh = 6, d = 64, ld = nh * d + 32;
	std::vector<int> pos(T);
	for (int t = 0; t < T; t++) pos[t] = 3 * t + 1000;
	vec tab((size_t)T * d), x = rnd((size_t)B * T * ld), y = x, dy = x;
	dbuf<int> d_pos(pos);
	dbuf<float> d_tab(tab.size()), d_x(x), d_dx(x);
	rope_table(tab.data(), pos.data(), T, d, 500000.0);
	rope_forward(y.data(), tab.data(), B, T, nh, d, ld);
	rope_backward(dy.data(), tab.data(), B, T, nh, d, ld);
	cuda_rope_table(d_tab.p, d_pos.p, T, d, 500000.0, 0);
	cuda_rope_forward(d_x.p, d_tab.p, B, T, nh, d, ld, 0);
	cuda_rope_backward(d_dx.p, d_tab.p, B, T, nh, d, ld, 0);
	compare("rope table", tab, d_tab.get(), 1e-6);
	compare("rope forward", y, d_x.get(), 1e-5);
	compare("rope backward", dy, d_dx.get(), 1e-5);
}

static void test_attention(void)
{
	int B = 2, T = 300, H = 8, Hkv = 2, d = 64;
	size_t nqkv = (size_t)B * T * (H + 2 * Hkv) * d, nout = (size_t)B * T * H * d;
	vec qkv = rnd(nqkv, 2), dout = rnd(nout), out(nout), lse((size_t)B * H * T), dqkv(nqkv);
	vec scratch(attention_scratch_floats(B, T, H));
	dbuf<float> d_qkv(qkv), d_dout(dout), d_out(nout), d_lse(lse.size()), d_dqkv(nqkv), d_s(scratch.size());
	attention_forward(out.data(), lse.data(), qkv.data(), scratch.data(), B, T, H, Hkv, d);
	attention_backward(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), scratch.data(), B, T, H, Hkv, d);
	cuda_attention_forward(d_out.p, d_lse.p, d_qkv.p, d_s.p, B, T, H, Hkv, d, 0);
	cuda_attention_backward(d_dqkv.p, d_dout.p, d_qkv.p, d_out.p, d_lse.p, d_s.p, B, T, H, Hkv, d, 0);
	compare("attention forward", out, d_out.get(), 1e-4);
	compare("attention lse", lse, d_lse.get(), 1e-5);
	compare("attention backward", dqkv, d_dqkv.get(), 1e-4);
}

static void test_activations(void)
{
	int N = 100, F = 300;
	vec gu = rnd((size_t)N * 2 * F, 4), dout = rnd((size_t)N * F), out(N * F), dgu(N * 2 * F);
	dbuf<float> d_gu(gu), d_dout(dout), d_out(out.size()), d_dgu(dgu.size());
	swiglu_forward(out.data(), gu.data(), N, F);
	swiglu_backward(dgu.data(), dout.data(), gu.data(), N, F);
	cuda_swiglu_forward(d_out.p, d_gu.p, N, F, 0);
	cuda_swiglu_backward(d_dgu.p, d_dout.p, d_gu.p, N, F, 0);
	compare("swiglu forward", out, d_out.get(), 1e-5);
	compare("swiglu backward", dgu, d_dgu.get(), 1e-5);
	size_t n = (size_t)N * F;
	vec x(gu.begin(), gu.begin() + n), y(n), dx(n);
	dbuf<float> d_x(x), d_y(n), d_dx(n);
	gelu_forward(y.data(), x.data(), n);
	gelu_backward(dx.data(), dout.data(), x.data(), n);
	cuda_gelu_forward(d_y.p, d_x.p, n, 0);
	cuda_gelu_backward(d_dx.p, d_dout.p, d_x.p, n, 0);
	compare("gelu forward", y, d_y.get(), 1e-5);
	compare("gelu backward", dx, d_dx.get(), 1e-5);
}

static void test_crossentropy(void)
{
	int N = 64, V = 50304;
	std::vector<int> tgt(N);
	for (int n = 0; n < N; n++) tgt[n] = n == 5 ? -1 : (int)((frand() + 1.0f) * 0.5f * V) % V;
	vec z = rnd((size_t)N * V, 5), losses(N), lse(N), dz((size_t)N * V);
	dbuf<int> d_tgt(tgt);
	dbuf<float> d_z(z), d_losses(N), d_lse(N), d_dz(dz.size());
	crossentropy_forward(losses.data(), lse.data(), z.data(), tgt.data(), N, V);
	crossentropy_backward(dz.data(), z.data(), lse.data(), tgt.data(), 1.0f / (N - 1), N, V);
	cuda_crossentropy_forward(d_losses.p, d_lse.p, d_z.p, d_tgt.p, N, V, 0);
	cuda_crossentropy_backward(d_dz.p, d_z.p, d_lse.p, d_tgt.p, 1.0f / (N - 1), N, V, 0);
	compare("cross-entropy losses", losses, d_losses.get(), 1e-5);
	compare("cross-entropy backward", dz, d_dz.get(), 1e-5);
}

static void test_optimizer(void)
{
	size_t n = 100003;
	vec p = rnd(n), g = rnd(n), m = rnd(n, 0.1f), v = rnd(n, 0.1f);
	for (auto &x : v) x = fabsf(x);
	dbuf<float> d_p(p), d_g(g), d_m(m), d_v(v), d_ss(1);
	adamw_step(p.data(), g.data(), m.data(), v.data(), n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 7, 0.5f);
	cuda_adamw_step(d_p.p, d_g.p, d_m.p, d_v.p, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 7, 0.5f, 0);
	compare("adamw parameters", p, d_p.get(), 1e-6);
	compare("adamw second moment", v, d_v.get(), 1e-6);
	vec ss(1, 0.0f);
	grad_sumsq(ss.data(), g.data(), n);
	cuda_grad_sumsq(d_ss.p, d_g.p, n, 0);
	compare("grad sum of squares", ss, d_ss.get(), 1e-5);
	grad_scale(g.data(), n, 0.25f);
	cuda_grad_scale(d_g.p, n, 0.25f, 0);
	compare("grad scale", g, d_g.get(), 0);
}

int main(void)
{
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("no CUDA device\n0 passed, 1 failed\n");
		return 1;
	}
	cublasHandle_t h;
	cublasCreate(&h);
	test_linear(h);
	test_embedding();
	test_rmsnorm();
	test_rope();
	test_attention();
	test_activations();
	test_crossentropy();
	test_optimizer();
	cublasDestroy(h);
	printf("cuda kernels: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
