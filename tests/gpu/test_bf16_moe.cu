/* The MoE kernels of kernels/cuda_bf16.h against kernels/moe.c: router, Switch aux loss, router
 * backward, the stable dispatch sort (exact), gather / combine and their backwards. Each GPU
 * kernel gets the reference's own inputs (not the GPU router's), so one wrong kernel fails one
 * check. Part of build/gpu/test_bf16_cuda (tests/gpu/test_bf16_cuda.cu runs it). */
#include "kernels/cpu.h"
#include "tests/gpu/bf16_check.h"

void test_moe(check_state *cs);

static void test_router(check_state *cs, int N, int E, int k, vec &probs, ivec &idx, vec &w)
{
	vec logits = rnd_f(cs, (size_t)N * E, 3.0f), frac(E), dtw = rnd_f(cs, (size_t)N * k), dl((size_t)N * E);
	float loss = 0.0f;
	probs.resize((size_t)N * E); idx.resize((size_t)N * k); w.resize((size_t)N * k);
	moe_router_forward(probs.data(), idx.data(), w.data(), logits.data(), N, E, k);
	moe_aux_loss_forward(&loss, frac.data(), probs.data(), idx.data(), N, E, k);
	moe_router_backward(dl.data(), dtw.data(), probs.data(), idx.data(), w.data(), frac.data(), 0.01f, N, E, k);
	dbuf<float> d_logits(logits.size()), d_probs(probs.size()), d_w(w.size()), d_loss(1), d_frac(E), d_dtw(dtw.size());
	dbuf<float> d_dl(dl.size());
	dbuf<int> d_idx(idx.size());
	put(d_logits, logits);
	cuda_bf16_moe_router_forward(d_probs.p, d_idx.p, d_w.p, d_logits.p, N, E, k, 0);
	compare(cs, "moe router probs (fp32)", probs, get(d_probs), TOL_F32);
	compare_int(cs, "moe router top-k experts", idx, get(d_idx));
	compare(cs, "moe router top-k weights (fp32)", w, get(d_w), TOL_F32);
	put(d_probs, probs); put(d_idx, idx); put(d_w, w); put(d_dtw, dtw);
	cuda_bf16_moe_aux_loss_forward(d_loss.p, d_frac.p, d_probs.p, d_idx.p, N, E, k, 0);
	compare(cs, "moe aux loss (Switch eq. 4)", vec{loss}, get(d_loss), TOL_F32);
	compare(cs, "moe aux loss expert fractions", frac, get(d_frac), TOL_F32);
	put(d_frac, frac);
	cuda_bf16_moe_router_backward(d_dl.p, d_dtw.p, d_probs.p, d_idx.p, d_w.p, d_frac.p, 0.01f, N, E, k, 0);
	compare(cs, "moe router backward (fp32)", dl, get(d_dl), TOL_F32);
}

void test_moe(check_state *cs)
{
	const int N = 1500, E = 16, k = 2, C = 96, NK = N * k; /* 3 dispatch chunks */
	vec probs, w;
	ivec idx;
	test_router(cs, N, E, k, probs, idx, w);
	ivec off(E + 1), perm(NK), slot(NK);
	moe_dispatch(off.data(), perm.data(), slot.data(), idx.data(), N, E, k);
	dbuf<int> d_idx(NK), d_off(E + 1), d_perm(NK), d_slot(NK), d_scr(cuda_bf16_dispatch_scratch_ints(N, E, k));
	put(d_idx, idx);
	cuda_bf16_moe_dispatch(d_off.p, d_perm.p, d_slot.p, d_idx.p, d_scr.p, N, E, k, 0);
	compare_int(cs, "moe dispatch offsets", off, get(d_off));
	compare_int(cs, "moe dispatch perm (stable)", perm, get(d_perm));
	compare_int(cs, "moe dispatch slot_of", slot, get(d_slot));
	put(d_perm, perm); put(d_slot, slot);
	vec x = rnd_bf(cs, (size_t)N * C), xe((size_t)NK * C), dxe = rnd_bf(cs, (size_t)NK * C), dx = rnd_bf(cs, (size_t)N * C);
	dbuf<bf16_t> d_x(x.size()), d_xe(xe.size()), d_dxe(dxe.size()), d_dx(dx.size());
	dbuf<float> d_w(w.size());
	put(d_x, x); put(d_dxe, dxe); put(d_dx, dx); put(d_w, w);
	moe_gather(xe.data(), x.data(), perm.data(), N, C, k);
	cuda_bf16_moe_gather(d_xe.p, d_x.p, d_perm.p, N, C, k, 0);
	compare(cs, "moe gather (exact)", xe, get(d_xe), 0.0);
	for (int rep = 0; rep < 2; rep++) { /* the reference rounded to bf16 after each call, like the GPU */
		moe_gather_backward(dx.data(), dxe.data(), slot.data(), N, C, k);
		for (auto &v : dx) v = bf(v);
		cuda_bf16_moe_gather_backward(d_dx.p, d_dxe.p, d_slot.p, N, C, k, 0);
	}
	compare(cs, "moe gather backward x2 (bf16 +=)", dx, get(d_dx), TOL_BF16);
	vec ye = rnd_bf(cs, (size_t)NK * C), out = rnd_bf(cs, (size_t)N * C), dout = rnd_bf(cs, (size_t)N * C);
	vec dye((size_t)NK * C), dtw((size_t)NK);
	dbuf<bf16_t> d_ye(ye.size()), d_out(out.size()), d_dout(dout.size()), d_dye(dye.size());
	dbuf<float> d_dtw(dtw.size());
	put(d_ye, ye); put(d_out, out); put(d_dout, dout);
	for (int rep = 0; rep < 2; rep++) {
		moe_combine(out.data(), ye.data(), w.data(), slot.data(), N, C, k);
		for (auto &v : out) v = bf(v);
		cuda_bf16_moe_combine(d_out.p, d_ye.p, d_w.p, d_slot.p, N, C, k, 0);
	}
	compare(cs, "moe combine x2 (bf16 +=)", out, get(d_out), TOL_BF16);
	moe_combine_backward(dye.data(), dtw.data(), dout.data(), ye.data(), w.data(), slot.data(), N, C, k);
	cuda_bf16_moe_combine_backward(d_dye.p, d_dtw.p, d_dout.p, d_ye.p, d_w.p, d_slot.p, N, C, k, 0);
	compare(cs, "moe combine backward dye (2u)", dye, get(d_dye), TOL_BF16);
	compare(cs, "moe combine backward dtopk_w (fp32)", dtw, get(d_dtw), TOL_F32);
}
