/* backend_cpu — the CPU row of kernels/backend.h: host memory (malloc) and the fp32
 * reference kernels of kernels/cpu.h and kernels/cpu_shard.h, each entry a call of the kernel of the same name with
 * the same arguments, so results through the table are bit for bit those of direct calls.
 * The row has no state (st is NULL) and one device, the host. */
#include <stdlib.h>
#include <string.h>
#include "kernels/backend.h"

static int cpu_count(void) { return 1; }
static void *cpu_alloc(void *st, size_t bytes) { (void)st; return malloc(bytes ? bytes : 1); }
static void cpu_release(void *st, void *p) { (void)st; free(p); }
static void cpu_memset0(void *st, void *p, size_t bytes) { (void)st; memset(p, 0, bytes); }
static void cpu_copy(void *st, void *dst, const void *src, size_t bytes, enum kern_copy dir)
{
	(void)st;
	(void)dir;
	if (dst != src) memmove(dst, src, bytes);
}
static void cpu_ce_shard_max(void *st, float *mx, const float *z, int N, int V)
{ (void)st; ce_shard_max(mx, z, N, V); }
static void cpu_ce_shard_sums(void *st, float *sums, float *mx, const float *z, const int *t, int N, int V, int v0,
                              int tp)
{ (void)st; ce_shard_sums(sums, mx, z, t, N, V, v0, tp); }
static void cpu_ce_shard_loss(void *st, float *losses, float *lse, const float *mx, const float *sums, const int *t,
                              int N)
{ (void)st; ce_shard_loss(losses, lse, mx, sums, t, N); }
static void cpu_ce_shard_backward(void *st, float *dz, const float *z, const float *lse, const int *t, float dloss,
                                  int N, int V, int v0)
{ (void)st; ce_shard_backward(dz, z, lse, t, dloss, N, V, v0); }
static void cpu_act_copy_rows(void *st, float *dst, size_t ldd, const float *src, size_t lds, size_t rows,
                              size_t width)
{ (void)st; act_copy_rows(dst, ldd, src, lds, rows, width); }
static void cpu_fill(void *st, float *p, size_t n, float value) { (void)st; fill_f32(p, n, value); }
static int cpu_sync(void *st, char *err) { (void)st; (void)err; return 0; }

static void cpu_linear_forward(void *st, float *out, const float *inp, const float *w, const float *bias,
                               int N, int IC, int OC)
{ (void)st; linear_forward(out, inp, w, bias, N, IC, OC); }
static void cpu_linear_backward_input(void *st, float *dinp, const float *dout, const float *w, int N, int IC,
                                      int OC, int acc)
{ (void)st; linear_backward_input(dinp, dout, w, N, IC, OC, acc); }
static void cpu_linear_backward_weight(void *st, float *dw, float *dbias, const float *dout, const float *inp,
                                       int N, int IC, int OC)
{ (void)st; linear_backward_weight(dw, dbias, dout, inp, N, IC, OC); }
static void cpu_embedding_forward(void *st, float *out, const int *tok, const float *wte, int N, int C, int v0,
                                  int V)
{ (void)st; embedding_forward(out, tok, wte, N, C, v0, V); }
static void cpu_embedding_backward(void *st, float *dwte, const float *dout, const int *tok, int N, int C,
                                   int v0, int V)
{ (void)st; embedding_backward(dwte, dout, tok, N, C, v0, V); }
static void cpu_rmsnorm_forward(void *st, float *out, float *rstd, const float *inp, const float *w, int N,
                                int C, float eps)
{ (void)st; rmsnorm_forward(out, rstd, inp, w, N, C, eps); }
static void cpu_rmsnorm_backward(void *st, float *dinp, float *dw, const float *dout, const float *inp,
                                 const float *w, const float *rstd, int N, int C)
{ (void)st; rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C); }
static void cpu_rope_table(void *st, float *tab, const int *pos, int T, int d, double theta)
{ (void)st; rope_table(tab, pos, T, d, theta); }
static void cpu_rope_forward(void *st, float *x, const float *tab, int B, int T, int nh, int d, int ld)
{ (void)st; rope_forward(x, tab, B, T, nh, d, ld); }
static void cpu_rope_backward(void *st, float *dx, const float *tab, int B, int T, int nh, int d, int ld)
{ (void)st; rope_backward(dx, tab, B, T, nh, d, ld); }
static void cpu_attention_forward(void *st, float *out, float *lse, const float *qkv, float *scr, int B, int T,
                                  int H, int Hkv, int d)
{ (void)st; attention_forward(out, lse, qkv, scr, B, T, H, Hkv, d); }
static void cpu_attention_backward(void *st, float *dqkv, const float *dout, const float *qkv, const float *out,
                                   const float *lse, float *scr, int B, int T, int H, int Hkv, int d)
{ (void)st; attention_backward(dqkv, dout, qkv, out, lse, scr, B, T, H, Hkv, d); }
static void cpu_attention_block_forward(void *st, float *out, float *lse, const float *q, const float *k,
                                        const float *v, float *scr, const struct att_block *blk)
{ (void)st; attention_block_forward(out, lse, q, k, v, scr, blk); }
static void cpu_attention_block_backward(void *st, float *dq, float *dk, float *dv, const float *dout,
                                         const float *out, const float *lse, const float *q, const float *k,
                                         const float *v, float *scr, const struct att_block *blk)
{ (void)st; attention_block_backward(dq, dk, dv, dout, out, lse, q, k, v, scr, blk); }
static void cpu_swiglu_forward(void *st, float *out, const float *gu, int N, int F)
{ (void)st; swiglu_forward(out, gu, N, F); }
static void cpu_swiglu_backward(void *st, float *dgu, const float *dout, const float *gu, int N, int F)
{ (void)st; swiglu_backward(dgu, dout, gu, N, F); }
static void cpu_gelu_forward(void *st, float *out, const float *inp, size_t n)
{ (void)st; gelu_forward(out, inp, n); }
static void cpu_gelu_backward(void *st, float *dinp, const float *dout, const float *inp, size_t n)
{ (void)st; gelu_backward(dinp, dout, inp, n); }
static void cpu_ce_forward(void *st, float *losses, float *lse, const float *logits, const int *tgt, int N, int V)
{ (void)st; crossentropy_forward(losses, lse, logits, tgt, N, V); }
static void cpu_ce_backward(void *st, float *dlogits, const float *logits, const float *lse, const int *tgt,
                            float dloss, int N, int V)
{ (void)st; crossentropy_backward(dlogits, logits, lse, tgt, dloss, N, V); }
static void cpu_moe_router_forward(void *st, float *probs, int *ti, float *tw, const float *logits, int N, int E,
                                   int k)
{ (void)st; moe_router_forward(probs, ti, tw, logits, N, E, k); }
static void cpu_moe_aux_loss_forward(void *st, float *loss, float *frac, const float *probs, const int *ti, int N,
                                     int E, int k)
{ (void)st; moe_aux_loss_forward(loss, frac, probs, ti, N, E, k); }
static void cpu_moe_router_backward(void *st, float *dlogits, const float *dtw, const float *probs, const int *ti,
                                    const float *tw, const float *frac, float daux, int N, int E, int k)
{ (void)st; moe_router_backward(dlogits, dtw, probs, ti, tw, frac, daux, N, E, k); }
static void cpu_moe_dispatch(void *st, int *off, int *perm, int *slot_of, const int *ti, int N, int E, int k)
{ (void)st; moe_dispatch(off, perm, slot_of, ti, N, E, k); }
static void cpu_moe_gather(void *st, float *xe, const float *x, const int *perm, int N, int C, int k)
{ (void)st; moe_gather(xe, x, perm, N, C, k); }
static void cpu_moe_gather_backward(void *st, float *dx, const float *dxe, const int *slot_of, int N, int C, int k)
{ (void)st; moe_gather_backward(dx, dxe, slot_of, N, C, k); }
static void cpu_moe_combine(void *st, float *out, const float *ye, const float *tw, const int *slot_of, int N,
                            int C, int k)
{ (void)st; moe_combine(out, ye, tw, slot_of, N, C, k); }
static void cpu_moe_combine_backward(void *st, float *dye, float *dtw, const float *dout, const float *ye,
                                     const float *tw, const int *slot_of, int N, int C, int k)
{ (void)st; moe_combine_backward(dye, dtw, dout, ye, tw, slot_of, N, C, k); }

static void cpu_moe_stats(void *st, float *cnt, float *psum, const float *probs, const int *ti, int N, int E,
                          int k)
{
	(void)st;
	for (int e = 0; e < E; e++) {
		double p = 0.0;
		for (int n = 0; n < N; n++) p += probs[(size_t)n * E + e];
		psum[e] = (float)p;
		cnt[e] = 0.0f;
	}
	for (size_t i = 0; i < (size_t)N * k; i++) cnt[ti[i]] += 1.0f;
}

static void cpu_adamw_step(void *st, float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                           float b2, float eps, float wd, int t, float scale)
{ (void)st; adamw_step(p, g, m, v, n, lr, b1, b2, eps, wd, t, scale); }
static void cpu_grad_sumsq_acc(void *st, double *acc, const float *g, size_t n)
{
	(void)st;
	double sq = *acc;
	for (size_t j = 0; j < n; j++) sq += (double)g[j] * g[j];
	*acc = sq;
}
static void cpu_grad_scale(void *st, float *g, size_t n, float f) { (void)st; grad_scale(g, n, f); }
static void cpu_add(void *st, float *y, const float *x, size_t n)
{
	(void)st;
	for (size_t i = 0; i < n; i++) y[i] += x[i];
}

static void cpu_grad_div(void *st, float *g, size_t n, float div)
{
	(void)st;
	for (size_t i = 0; i < n; i++) g[i] /= div;
}
static void cpu_grad_add_div(void *st, float *y, const float *x, size_t n, float div)
{
	(void)st;
	for (size_t i = 0; i < n; i++) y[i] += x[i] / div;
}

const struct kern_ops kern_cpu_ops = {
	.name = "cpu",
	.act_bytes = sizeof(float),
	.host_visible = 1,
	.device_count = cpu_count,
	.alloc = cpu_alloc,
	.release = cpu_release,
	.memset0 = cpu_memset0,
	.copy = cpu_copy,
	.sync = cpu_sync,
	.linear_forward = cpu_linear_forward,
	.linear_backward_input = cpu_linear_backward_input,
	.linear_backward_weight = cpu_linear_backward_weight,
	.embedding_forward = cpu_embedding_forward,
	.embedding_backward = cpu_embedding_backward,
	.rmsnorm_forward = cpu_rmsnorm_forward,
	.rmsnorm_backward = cpu_rmsnorm_backward,
	.rope_table = cpu_rope_table,
	.rope_forward = cpu_rope_forward,
	.rope_backward = cpu_rope_backward,
	.attention_forward = cpu_attention_forward,
	.attention_backward = cpu_attention_backward,
	.attention_block_forward = cpu_attention_block_forward,
	.attention_block_backward = cpu_attention_block_backward,
	.swiglu_forward = cpu_swiglu_forward,
	.swiglu_backward = cpu_swiglu_backward,
	.gelu_forward = cpu_gelu_forward,
	.gelu_backward = cpu_gelu_backward,
	.crossentropy_forward = cpu_ce_forward,
	.crossentropy_backward = cpu_ce_backward,
	.moe_router_forward = cpu_moe_router_forward,
	.moe_aux_loss_forward = cpu_moe_aux_loss_forward,
	.moe_router_backward = cpu_moe_router_backward,
	.moe_dispatch = cpu_moe_dispatch,
	.moe_gather = cpu_moe_gather,
	.moe_gather_backward = cpu_moe_gather_backward,
	.moe_combine = cpu_moe_combine,
	.moe_combine_backward = cpu_moe_combine_backward,
	.moe_stats = cpu_moe_stats,
	.adamw_step = cpu_adamw_step,
	.grad_sumsq_acc = cpu_grad_sumsq_acc,
	.grad_scale = cpu_grad_scale,
	.add = cpu_add,
	.act_add = cpu_add,
	.grad_div = cpu_grad_div,
	.grad_add_div = cpu_grad_add_div,
	.ce_shard_max = cpu_ce_shard_max,
	.ce_shard_sums = cpu_ce_shard_sums,
	.ce_shard_loss = cpu_ce_shard_loss,
	.ce_shard_backward = cpu_ce_shard_backward,
	.act_copy_rows = cpu_act_copy_rows,
	.fill = cpu_fill,
};
