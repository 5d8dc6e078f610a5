/* layer_cost — one decoder block for one micro-batch on one rank (model.md §1–3): compute,
 * exposed TP/CP/EP communication, activations kept, parameters held. */
#include <math.h>
#include <string.h>
#include "sim/collective.h"
#include "sim/flops.h"
#include "sim/hw.h"
#include "sim/schedule.h"
#include "sim/layer_cost.h"
#include "sim/model.h"
#include "sim/plan.h"

/* Shapes of one block on one rank, derived once per block kind. */
struct dims {
	struct layer_params lp;
	int moe;
	double t, T, H, E;          /* tp, tokens per micro-batch, hidden, bytes per element */
	double sp;                  /* divisor of the replicated tensors: tp under SP, else 1 */
	double qd, kvd;             /* query and key/value widths */
	double kvd_t;               /* K/V width per rank (heads replicate when t > a_kv) */
	double kva_t;               /* K/V width per rank the attention kernel reads: the query
	                             * width when K and V are repeated first (plan kv_repeat) */
	double mlp_mult, width;     /* 3 (SwiGLU) or 2 (GeLU); dense or shared-expert width */
	int glu_ops;                /* a SwiGLU run as two PyTorch ops (plan glu_eager) */
	double ag_E;                /* bytes per element SP's forward all-gathers move: 1 when
	                             * torchao's float8 TP casts the inputs before gathering them
	                             * (Float8ColwiseParallel behind PrepareFloat8ModuleInput,
	                             * torchtitan's parallelize_llama.py at 9dec370), else E */
	double scores;              /* elements of the s × s score matrix of one micro-batch */
	double qkv_t, o_t;          /* per token and rank: q, k, v as the attention kernel saves
	                             * them, and its output; MLA's v and output have v_head_dim */
	double tok, fe;             /* MoE: the routed token copies a rank's experts hold (its
	                             * expert-TP group's, gathered: T·(etp/tp)·k) and the expert width
	                             * each rank holds (an etp-th) [Megatron-Core
	                             * MoEAlltoAllTokenDispatcher: all-to-all over EP, then
	                             * gather_from_sequence_parallel_region over the expert-TP group] */
	double nd;                  /* sub-blocks with the dense TP pattern: attention, and a dense
	                             * block's MLP or a MoE block's shared experts */
};

/* Compute times the communication and recompute terms are set against. */
struct compute {
	double g, gflops;           /* linear layers: forward GEMM time and FLOPs */
	double g_col;               /* of which the column-parallel GEMMs (QKV, FC1 / gate-up) */
	double g_mlp, gf_mlp;       /* of which the dense MLP's or the shared experts' (time, FLOPs) */
	double g_exp, gf_exp;       /* of which the routed experts' and the router's */
	double g_up, gf_up;         /* MLA's up-projections of the latents (inside the attention's) */
	double a_f, a_b, attn_flops;/* attention core */
	double e_f, e_b;            /* element-wise traffic */
};

static double gemm_eff(const struct ectx *c, double mn)
{
	/* efficiency falls as the smallest GEMM dimension shrinks (tile and wave quantization):
	 * eff = eff_max · n / (n + n_half); n_half from the profile */
	return c->gemm_eff_max * mn / (mn + c->h->gemm_half_dim);
}

double gemm_t(const struct ectx *c, double M, double N, double K, double count)
{
	if (M <= 0 || N <= 0 || K <= 0) return 0;
	const struct hw *h = c->h;
	double tf = hwt_gemm_flops(&h->tables, M, N, K);
	if (tf > 0) /* measured (M, N, K) table, moved by gemm_eff since (sim/hw_table.h) */
		return count * 2.0 * M * N * K / (tf * hwt_ratio(h->gemm_eff, h->tables.ref_gemm_eff));
	double mn = M < N ? M : N;
	if (K < mn) mn = K;
	return count * 2.0 * M * N * K / (c->gemm_peak * gemm_eff(c, mn));
}

double elem_t(const struct ectx *c, double bytes)
{
	double bw = hwt_curve_at(&c->h->tables.mem, bytes);
	if (bw > 0) /* measured bandwidth by kernel size, moved by mem_eff since */
		return bytes / (bw * hwt_ratio(c->h->mem_eff, c->h->tables.ref_mem_eff));
	return bytes / (c->h->hbm_bw_bps * c->h->mem_eff);
}

static void dims_init(const struct ectx *c, int moe, struct dims *d)
{
	const struct model *m = c->m;
	const struct plan *p = c->p;
	layer_params(m, moe ? m->moe_dense_layers : 0, &d->lp);
	d->moe = moe;
	d->t = p->tp; d->T = c->T; d->H = m->hidden; d->E = c->act_bytes;
	d->sp = (p->sp && p->tp > 1) ? d->t : 1;
	d->qd = (double)m->heads * m->head_dim;
	d->kvd = (double)m->kv_heads * m->head_dim;
	d->kvd_t = d->kvd / d->t < m->head_dim ? m->head_dim : d->kvd / d->t;
	d->kva_t = p->kv_repeat && d->qd / d->t > d->kvd_t ? d->qd / d->t : d->kvd_t;
	d->mlp_mult = m->mlp == MLP_SWIGLU ? 3 : 2;
	d->glu_ops = m->mlp == MLP_SWIGLU && p->glu_eager;
	d->ag_E = d->sp > 1 && p->precision == PREC_FP8 && p->fp8_impl == FP8_TORCHAO ? 1 : d->E;
	d->width = moe ? (double)m->moe_ffn_hidden * m->moe_shared_experts : m->ffn_hidden;
	d->scores = (double)p->mbs * m->heads / d->t * ((double)p->seq / p->cp) * p->seq;
	d->tok = moe ? d->T * (c->etp / d->t) * m->moe_topk : 0;
	d->fe = (double)m->moe_ffn_hidden / c->etp;
	d->nd = 1 + (!moe || d->width > 0);
	d->qkv_t = d->qd / d->t + 2 * d->kva_t;
	d->o_t = d->qd / d->t;
	if (m->kv_lora_rank) { /* MLA: q and k of qk_nope + qk_rope dims per head, v of v_head_dim */
		d->qkv_t = m->heads * (2.0 * m->head_dim + m->v_head_dim) / d->t;
		d->o_t = m->heads * (double)m->v_head_dim / d->t;
	}
}

/* linear layers: forward GEMM time (backward = 2x: input grad (B) + weight grad (W)) */
static void linear_time(const struct ectx *c, const struct dims *d, struct compute *cm)
{
	const struct model *m = c->m;
	const struct plan *p = c->p;
	double t = d->t, T = d->T, H = d->H, qd = d->qd, kvd = d->kvd, mult = d->mlp_mult, width = d->width;
	double g = 0, gflops = 0;
	double col = 0;
	if (m->kv_lora_rank) {
		/* MLA: treat as one projection block of its parameter count, column-parallel */
		col += gemm_t(c, T, d->lp.attn / H / t, H, 1);
		g += col;
		gflops += 2 * T * d->lp.attn / t;
		/* the part a recompute of the up-projections re-runs (q from its latent, or from the
		 * hidden state without a q latent; k_nope and v from the KV latent) */
		double qk = m->qk_nope_head_dim + m->qk_rope_head_dim, qin = m->q_lora_rank ? m->q_lora_rank : H;
		double qo = m->heads * qk / t, kvo = m->heads * (double)(m->qk_nope_head_dim + m->v_head_dim) / t;
		cm->g_up = gemm_t(c, T, qo, qin, 1) + gemm_t(c, T, kvo, m->kv_lora_rank, 1);
		cm->gf_up = 2 * T * (qo * qin + kvo * m->kv_lora_rank);
	} else {
		col += gemm_t(c, T, (qd + 2 * kvd) / t, H, 1);
		g += col + gemm_t(c, T, H, qd / t, 1);
		gflops += 2 * T * H * (2 * qd + 2 * kvd) / t;
	}
	if (width > 0) {
		double up = gemm_t(c, T, (mult - 1) * width / t, H, 1);
		col += up;
		cm->g_mlp = up + gemm_t(c, T, H, width / t, 1);
		cm->gf_mlp = 2 * T * H * mult * width / t;
		g += cm->g_mlp;
		gflops += cm->gf_mlp;
	}
	cm->g_col = col;
	if (d->moe) {
		/* routed experts: each rank dispatches its sequence share (T/tp tokens under SP, which
		 * Megatron-Core requires for MoE with TP), the expert-TP group gathers what its etp
		 * ranks received (d->tok), and the tokens spread evenly over the EP group: each rank
		 * runs E/ep local experts, each on tok·ep/E tokens, sharded etp ways (perfect balance;
		 * the FLOPs per rank are the same T·k/tp experts' worth whatever the folding, as
		 * gflops below counts them) */
		double local = (double)m->moe_experts / p->ep, expert_tokens = d->tok * p->ep / m->moe_experts, fe = d->fe;
		cm->g_exp = local * (gemm_t(c, expert_tokens, (mult - 1) * fe, H, 1) + gemm_t(c, expert_tokens, H, fe, 1)) +
			    gemm_t(c, T, m->moe_experts, H, 1); /* and the router */
		cm->gf_exp = 2 * T * m->moe_topk * H * mult * m->moe_ffn_hidden / t + 2 * T * H * m->moe_experts;
		g += cm->g_exp;
		gflops += cm->gf_exp;
	}
	cm->g = g;
	cm->gflops = gflops;
}

/* attention core (flash attention, causal: each query sees s/2 keys on average; with zig-zag
 * CP every rank does the same share [L3 §3.3.2]) */
static void attention_time(const struct ectx *c, const struct dims *d, struct compute *cm)
{
	const struct model *m = c->m;
	const struct plan *p = c->p;
	const struct hw *h = c->h;
	double ctx = p->seq / 2.0;
	double attn_flops = 2.0 * m->heads / d->t * d->T * ctx * (m->head_dim + (m->kv_lora_rank ? m->v_head_dim : m->head_dim));
	/* the kernel the framework runs: FlashAttention-2, or cuDNN's fused attention */
	double eff = p->attn_cudnn && h->attn_eff_cudnn > 0 ? h->attn_eff_cudnn : h->attn_eff;
	double peak_attn = h->peak_bf16_flops * eff;
	if (p->cp > 1) {
		/* ring attention runs the flash kernel once per ring step on a K/V block of
		 * s/(2·cp) tokens (zig-zag halves) instead of once over the whole sequence; flash
		 * attention's throughput falls with the key length (FlashAttention-2 §4.1, Fig. 4:
		 * 512 → 16k tokens) like the GEMM tile curve, so the profile's half-efficiency size
		 * scales attn_eff relative to the unsplit sequence */
		double nh = h->gemm_half_dim, blk = p->seq / (2.0 * p->cp), full = p->seq;
		peak_attn *= (blk / (blk + nh)) / (full / (full + nh));
	}
	double a_f = attn_flops / peak_attn;
	/* flash backward: 5 GEMMs of the forward's 2 [FlashAttention-2 §3], run at about three
	 * quarters of the forward's throughput (dQ/dK/dV accumulation, the recomputed scores):
	 * flash_attn 2 at head dim 128 measured 151 vs 99 TFLOP/s causal and 169 vs 125
	 * non-causal, forward vs backward (apache/tvm tl_doc/flash_perf.md, RTX 4090); 81 vs 63
	 * at head dim 64 on an RTX A5000 (flash-attention benchmark_flash_attention.py run) */
	double a_b = 2.5 / 0.75 * a_f;
	if (h->tables.attn_fwd.n) { /* measured throughput by sequence length, moved by attn_eff */
		double x = (double)p->seq / p->cp, r = hwt_ratio(eff, h->tables.ref_attn_eff);
		a_f = attn_flops / (hwt_curve_at(&h->tables.attn_fwd, x) * r);
		a_b = 2.5 * attn_flops / (hwt_curve_at(&h->tables.attn_bwd, x) * r);
	}
	/* unfused attention (Megatron before --use-flash-attn): QK^T and PV are batched GEMMs over
	 * the whole s x s matrix, the causal mask applied afterwards, so nothing is skipped; the
	 * scores pass through HBM: fused scale-mask-softmax reads and writes them (2+2 bytes per
	 * element), dropout reads them and writes them and a 1-byte mask (5); backward: dropout
	 * (2+1+2) and softmax backward (2+2+2) [KOR §4.1 counts the same tensors: 5as²b] */
	if (!p->flash_attn) {
		int dv = m->kv_lora_rank ? m->v_head_dim : m->head_dim;
		double bh = (double)p->mbs * m->heads / d->t, sq = (double)p->seq / p->cp;
		/* each batched GEMM has one s x s operand or result in HBM (2 bytes per element);
		 * at K = head_dim its arithmetic intensity (~head_dim flop/byte) sits near the ridge,
		 * so it costs the larger of its flops at GEMM efficiency and that traffic */
		double peak = c->gemm_peak * c->gemm_eff_max;
		double gqk = fmax(2 * bh * sq * p->seq * m->head_dim / peak, elem_t(c, 2 * d->scores));
		double gpv = fmax(2 * bh * sq * p->seq * dv / peak, elem_t(c, 2 * d->scores));
		a_f = gqk + gpv + elem_t(c, 9 * d->scores);
		a_b = 2 * (gqk + gpv) + elem_t(c, 11 * d->scores);
	}
	if (p->cp > 1 && p->cp_fp32_merge) {
		/* PyTorch's context parallel (torch/distributed/tensor/experimental/_attention.py,
		 * convert_to_f32 and load balancing on by default) merges every ring step's block
		 * output into an fp32 running output and accumulates the gradients in fp32, as
		 * element-wise passes beside the flash kernels. Per element of the rank's attention
		 * output O, the last rank of the group (every step a whole-query one; the others trade
		 * some for half-query steps that also re-cat the running output, 27 B): the first
		 * step's upcast (2 + 4 B), then per step the upcast, out - block (12), the sigmoid
		 * scale (8) and the subtraction (12) = 38 B, and the result's downcast (4 + 2).
		 * Per K/V element: the torch.cat of K and V each step but the last (2 + 2). Backward:
		 * the fp32 zeros (4), grad_q += the block's (4 + 2 + 4) each step and the downcast
		 * (6) per O element; per K/V element the zeros (4), each step but the last the cat of
		 * K and V (4), the first step's add (10), the others' chunked add and re-cat of the
		 * running dK/dV (5 + 8), every step the fp32 cat that passes it on (8), and the
		 * downcast (6) */
		double o = d->T * d->qd / d->t, kv = 2 * d->T * d->kva_t, s1 = p->cp - 1;
		a_f += elem_t(c, o * (6 + 38 * s1 + 6) + kv * 4 * s1);
		a_b += elem_t(c, o * (4 + 10 * p->cp + 6) + kv * (4 + 4 * s1 + 10 + 13 * s1 + 8 * p->cp + 6));
	}
	cm->a_f = a_f;
	cm->a_b = a_b;
	cm->attn_flops = attn_flops;
}

/* element-wise traffic per token (derived): norms, residuals, rope, activation function;
 * replicated tensors are split only under SP */
static void elementwise_time(const struct ectx *c, const struct dims *d, struct compute *cm)
{
	const struct model *m = c->m;
	double t = d->t, T = d->T, H = d->H, E = d->E, qd = d->qd, kvd = d->kvd, mult = d->mlp_mult, width = d->width;
	double fw = (d->moe ? m->moe_topk * (double)m->moe_ffn_hidden : width) / t;
	double ew = E * (12 * H / d->sp + 4 * (qd + 2 * kvd) / t + 3 * fw);
	double e_f = elem_t(c, T * ew), e_b = 2 * e_f;
	double xf = 0, xb = 0; /* what eager ops move beyond the fused kernels counted above */
	if (c->p->eager_block) {
		/* torchtitan's block as PyTorch ops, bytes per element beyond the base count (2E
		 * forward, 4E backward for a norm or the rotary embedding): RMSNorm is x.float(),
		 * pow, mean, a multiply, type_as and the weight's multiply, E+4 + 8 + 4 + 8 + 4+E +
		 * 2E = 28+4E forward; its autograd backward 4E (weight) + E+4 + 16 + 4 + 12 + 12
		 * (the two paths' gradients summed) + 4+E = 52+6E; two per block, over the
		 * sequence share SP gives a rank. apply_rotary_emb on q and k: float, the complex
		 * multiply, type_as = 16+2E each way, and the attention's output is copied by
		 * .contiguous() (models/llama/model.py, models/norms.py at 9dec370) */
		double qt = qd / t, kt = d->kvd_t;
		xf += 2 * (28 + 2 * E) * H / d->sp + 16 * (qt + kt) + 2 * E * qt;
		xb += 2 * (52 + 2 * E) * H / d->sp + (16 - 2 * E) * (qt + kt);
	}
	if (d->kva_t > d->kvd_t) {
		/* repeat_kv expands K and V to the query heads and reshapes them, a copy (read the
		 * K/V width, write the query width), and sums the gradients back over the repeats
		 * in backward; compiled, inductor still materialises it, since the attention kernel
		 * is an opaque op that takes real tensors */
		xf += 2 * E * (d->kva_t + d->kvd_t);
		xb += 2 * E * (d->kva_t + d->kvd_t);
	}
	if (d->glu_ops) {
		/* act(gate) then the product: silu reads and writes, the product reads two and
		 * writes one (5E against the fused 3E); backward the product's two gradients and
		 * silu's (8E against 6E) */
		xf += 2 * E * fw;
		xb += 2 * E * fw;
	}
	if (c->p->qkv_copies) {
		/* nanotron's CausalSelfAttention (models/llama.py @67c5ebb6): the sequence-first QKV
		 * output is made batch-first per head by .contiguous() (one permute of q, k and v
		 * with as many K/V heads as query heads, a transpose of each otherwise), then K and V
		 * are stacked by torch.cat and permuted by another .contiguous() into the packed
		 * layout of flash-attn's rotary kernel: a read and a write of q + 2 kv, then twice of
		 * 2 kv, per token. With more than one sequence the output, transposed back to
		 * sequence-first, is copied by the O projection's reshape. Backward copies each
		 * gradient back once (the stack of the q, k, v gradients, the reshapes before the
		 * GEMMs) */
		double qkv = qd / t + 2 * d->kvd_t, kv = 2 * d->kvd_t;
		double x = 2 * E * (qkv + 2 * kv) + (c->p->mbs > 1 ? 2 * E * qd / t : 0);
		xf += x;
		xb += x;
	}
	if (c->p->tp_seq_copies && d->sp > 1) {
		/* SP's collectives on the sequence dimension of a batch-first [b, s, h] tensor go
		 * through PyTorch's functional collectives, which gather into dimension 0 and then
		 * torch.cat the chunks into place (all_gather_tensor, gather_dim != 0), and cat the
		 * chunks of a reduce-scatter's input into dimension-0 order first
		 * (reduce_scatter_tensor, scatter_dim != 0): one more read and write of the whole
		 * gathered tensor per collective. Two all-gathers and two reduce-scatters per block
		 * forward (the gathers at ag_E bytes an element), their transposes backward
		 * (torchtitan's Shard(1) plan) */
		xf += 2 * 2 * d->ag_E * H + 2 * 2 * E * H;
		xb += 4 * 2 * E * H;
	}
	if (xf > 0) e_f += elem_t(c, T * xf);
	if (xb > 0) e_b += elem_t(c, T * xb);
	/* FP8 with dynamic (per-tensor) scaling, as torchao Float8Linear and TE run it: every
	 * GEMM operand is cast to FP8 first, an amax pass (read 2 bytes) then the cast (read 2,
	 * write 1) = 5 bytes per element of each input and weight in forward and of each output
	 * gradient in backward, and the transposed FP8 copies the weight-gradient and
	 * input-gradient GEMMs need (read 1, write 1) of the input and weight [torchao float8
	 * README: casts are why the end-to-end gain stays well under 2x] */
	if (c->p->precision == PREC_FP8) {
		double fe = d->moe ? m->moe_ffn_hidden * (double)m->moe_topk + width : width;
		double in = H + qd / t + H + fe / t, out = (qd + 2 * kvd) / t + H + (mult - 1) * fe / t + H;
		double wts = (d->lp.attn + d->lp.mlp) / t + d->lp.experts / ((double)c->p->ep * c->etp);
		if (c->p->fp8_impl == FP8_TE) {
			/* Transformer Engine with delayed scaling takes the scale from the amax
			 * history (no extra pass): an input is read once and written as its row- and
			 * column-wise FP8 copies (2 + 2 bytes), an output gradient likewise by the fused
			 * cast-transpose, and the weights are cast once per step, on the first
			 * micro-batch, then cached (is_first_microbatch) [frameworks.md §3.4] */
			e_f += elem_t(c, T * 4 * in + 4 * wts / c->mb);
			e_b += elem_t(c, T * 4 * out);
		} else {
			/* float8 TP that gathers FP8 (ag_E) casts the column-parallel layers' input
			 * on the rank's sequence shard, before the all-gather */
			double in_f = d->ag_E < E ? H / d->sp + qd / t + H / d->sp + fe / t : in;
			e_f += elem_t(c, T * 5 * in_f + 5 * wts);
			e_b += elem_t(c, T * (5 * out + 2 * in) + 2 * wts);
		}
	}
	cm->e_f = e_f;
	cm->e_b = e_b;
}

/* kernels an eager Llama-style block launches in its forward (two norms of ~6 elementwise
 * kernels each, 4-5 GEMMs, rotary embedding ~10, attention, residual adds, the activation);
 * its backward launches about twice as many */
#define HOST_OPS_FWD 40

/* the block's forward, backward and recompute times and FLOPs */
static void compute_cost(const struct ectx *c, const struct dims *d, struct compute *cm, struct layer_cost *lc)
{
	linear_time(c, d, cm);
	attention_time(c, d, cm);
	elementwise_time(c, d, cm);
	/* every kernel also costs the GPU a fixed time beyond its work (launch, ramp-up, tail):
	 * HOST_OPS_FWD kernels forward, twice as many backward (host_bound below) */
	double g = cm->g, kf = HOST_OPS_FWD * c->h->kernel_s;
	lc->f = g + cm->a_f + cm->e_f + kf;
	lc->w = g;
	lc->b = g + cm->a_b + cm->e_b + 2 * kf;
	lc->model_flops = 3 * cm->gflops + 3 * cm->attn_flops;
	lc->hw_flops = lc->model_flops;
	switch (c->p->recompute) {
	case RC_FULL:
		lc->rc = lc->f;
		lc->hw_flops += cm->gflops + cm->attn_flops;
		break;
	case RC_SELECTIVE:
		/* core attention recomputed [KOR §5]; the other modules: selective_modules */
		if (c->p->recompute_modules & RCM_CORE_ATTN) {
			lc->rc = cm->a_f;
			lc->hw_flops += cm->attn_flops;
		}
		break;
	case RC_OP:
		/* torchtitan's per-op policy keeps every other matmul output and the attention
		 * output (torchtitan _save_list / _custom_policy: "save all compute ops except every
		 * second mm"), so the backward re-runs half the linear forward and the element-wise
		 * ops between them, not the attention */
		lc->rc = 0.5 * g + cm->e_f + kf / 2;
		lc->hw_flops += 0.5 * cm->gflops;
		break;
	default:
		break;
	}
}

/* One sub-block's TP collectives with the dense pattern over the whole activation S: with SP
 * the all-gather (forward: of ag_E bytes an element) and the reduce-scatter, else the
 * all-reduce (tp_cost). Returns the forward pair; *ag, *rs, *ar the collectives one by one
 * (0 where they do not run). */
static double dense_tp_colls(const struct ectx *c, const struct dims *d, double *ag, double *rs, double *ar)
{
	const struct plan *p = c->p;
	double S = d->E * d->T * d->H;
	*ag = *rs = *ar = 0;
	if (p->tp <= 1) return 0;
	if (!p->sp) return *ar = ectx_coll_time(c, COLL_ALLREDUCE, S, &c->tp_g);
	*ag = ectx_coll_time(c, COLL_ALLGATHER, S, &c->tp_g);
	*rs = ectx_coll_time(c, COLL_REDUCESCATTER, S, &c->tp_g);
	/* the forward's all-gathers move FP8 inputs where float8 TP gathers them (ag_E), its
	 * reduce-scatters bf16 */
	return (d->ag_E < d->E ? ectx_coll_time(c, COLL_ALLGATHER, S * d->ag_E / d->E, &c->tp_g) : *ag) + *rs;
}

/* A MoE block's routed experts' TP collectives, one pass (forward, or its transpose backward):
 * with etp > 1 the expert-TP group all-gathers the d->tok token copies its ranks received and
 * reduce-scatters the experts' outputs (an all-reduce without SP); with etp 1, none */
static double routed_tp_pair(const struct ectx *c, const struct dims *d)
{
	if (!d->moe || c->etp <= 1 || c->p->tp <= 1) return 0;
	double x = d->E * d->tok * d->H; /* the gathered array: the etp ranks' copies */
	return c->p->sp ? ectx_coll_time(c, COLL_ALLGATHER, x, &c->etp_g) + ectx_coll_time(c, COLL_REDUCESCATTER, x, &c->etp_g)
			: ectx_coll_time(c, COLL_ALLREDUCE, x, &c->etp_g);
}

/* TP/SP per block, each collective of the full activation b·s·h [MEG §3.2; KOR §4.2.2]:
 * without SP 2 all-reduces forward (after the row-parallel O and FC2) and 2 backward (the
 * column-parallel QKV and FC1 input gradients); with SP an all-gather before each
 * column-parallel layer and a reduce-scatter after each row-parallel one forward, and their
 * transposes backward (a reduce-scatter of each column-parallel input gradient, an all-gather
 * of each row-parallel output gradient) [KOR §4.2.2]. The pairs move an all-reduce's bytes,
 * but they are the collectives NCCL chooses an algorithm for: an all-gather or reduce-scatter
 * has no tree (frameworks.md §9.1) and, measured, runs the ring where an all-reduce of the same
 * bytes runs NVLink SHARP (8x H200, 16 GiB: all-reduce 480 GB/s by NVLS, all-gather 361 and
 * reduce-scatter 363 by the ring, NCCL's debug output naming the path; stas00/ml-engineering
 * network/README.md @744d01e). With SP the column-parallel layers keep
 * their input sharded and all-gather it again in backward, 2 more all-gathers [KOR §4.2.2;
 * model.md §2.2; nanotron tp_recompute_allgather, frameworks.md §6], unless the framework
 * keeps the gathered input (tp_regather 0); a recomputed forward repeats the forward's 2
 * (added per block in estimate.c) */
static void tp_cost(const struct ectx *c, const struct dims *d, const struct compute *cm, struct layer_cost *lc)
{
	const struct plan *p = c->p;
	if (p->tp <= 1) return;
	double t = d->t, g = cm->g;
	/* the sub-blocks with the dense pattern: attention, and the MLP of a dense block or the
	 * shared experts of a MoE block. A MoE block's routed experts instead gather the tokens
	 * their expert-TP group received (k copies of each of its ranks' sequence share) before
	 * the expert GEMMs and reduce-scatter the outputs after, in forward and (transposed) in
	 * backward, outside the linear layers' overlap; with etp 1 (parallel folding) they have
	 * no TP collective [Megatron-Core MoEAlltoAllTokenDispatcher,
	 * gather_from_sequence_parallel_region / reduce_scatter_to_sequence_parallel_region over
	 * the expert-TP group] */
	double nd = d->nd, routed = routed_tp_pair(c, d), ag, rs, ar;
	double cf = nd * dense_tp_colls(c, d, &ag, &rs, &ar), cb = p->sp ? nd * (ag + rs) : nd * ar;
	double rg = p->sp && p->tp_regather ? nd * ag : 0;
	/* zero-bubble schedules run the weight-gradient GEMMs apart from B, later (Qi et al. 2023,
	 * "Zero Bubble Pipeline Parallelism" §2): a backward collective has only B's
	 * input-gradient GEMMs to hide behind */
	int split_w = (sched_family(p->schedule)->flags & SCHED_F_SPLIT_W) != 0;
	if (!p->overlap_tp_comm) {
		lc->tp_f = cf + routed;
		lc->tp_b = cb + rg + routed;
		if (p->overlap_tp_bwd) {
			/* Megatron's asynchronous TP backward: the input-gradient all-reduce (SP: its
			 * reduce-scatter) of the column-parallel layers (QKV, FC1) runs under their
			 * weight-gradient GEMMs, and SP's re-gather of their input under their
			 * input-gradient GEMMs [MCODE layers.py, frameworks.md §3.5]. Without SP that
			 * is all the backward's TP traffic; with SP the gradient all-gathers of the
			 * row-parallel layers, half of the rest, stay exposed. What overlaps slows the
			 * GEMMs under it (hw_overlap_cost); each of the two GEMMs lasts about as long as
			 * the forward's column-parallel GEMMs. Under a split-W schedule the
			 * weight-gradient GEMMs run later, so the gradient collectives stay exposed; the
			 * re-gather still hides behind the input-gradient GEMMs. */
			double over = p->sp ? nd * rs : cb, win = cm->g_col;
			lc->tp_b = cb - over + hw_overlap_cost(c->h, over, split_w ? 0 : win) + hw_overlap_cost(c->h, rg, win) + routed;
		}
		return;
	}
	/* overlapped TP (Megatron TE userbuffers, PyTorch async-TP) splits each collective into
	 * t chunks pipelined with the chunks of its GEMM: the first chunk is exposed, the rest
	 * hides behind the GEMM as far as the GEMM lasts (a forward collective pairs with the
	 * forward GEMMs, a backward one with B and W), and what overlaps slows them
	 * (hw_overlap_cost) */
	cb += rg;
	lc->tp_f = cf / t + hw_overlap_cost(c->h, cf * (1 - 1 / t), g) + routed;
	lc->tp_b = cb / t + hw_overlap_cost(c->h, cb * (1 - 1 / t), split_w ? g : 2 * g) + routed;
}

/* CP ring attention: c−1 K/V chunks pass each rank in forward, K,V + dK,dV in backward,
 * overlapped with the blockwise attention [PICO cp; model.md §3.2] */
static void cp_cost(const struct ectx *c, const struct dims *d, const struct compute *cm, struct layer_cost *lc)
{
	const struct plan *p = c->p;
	if (p->cp <= 1) return;
	/* every ring step waits on its P2P exchange before the next block's attention may start
	 * [Ring Attention (Liu et al. 2023) §3, Alg. 1; PyTorch _templated_ring_attention waits
	 * per rotation]: the fixed cost of each of the c−1 steps (launch, handshake) is exposed
	 * in forward and again in backward; only the transfer hides behind the block */
	double kv = d->E * 2 * d->T * d->kva_t, steps = p->cp - 1;
	struct span pair = span_nodes(2, c->cp_g.units[0] > 1 ? 2 : 1);
	double lat = ectx_coll_time(c, COLL_SENDRECV, 1e-9, &pair);
	double xfer = ectx_coll_time(c, COLL_SENDRECV, kv, &pair) - lat;
	lc->cp_f = steps * lat + hw_overlap_cost(c->h, steps * xfer, cm->a_f * steps / p->cp);
	lc->cp_b = steps * lat + hw_overlap_cost(c->h, 2 * steps * xfer, cm->a_b * steps / p->cp);
}

/* Consecutive routing (plan moe_routing): token i takes experts s..s+k−1 (mod E) with
 * s = i·k mod E, and rank r holds experts r·E/ep .. (r+1)·E/ep − 1, the EP group's ranks
 * filling its kn nodes in order. Over one cycle of starts, the mean number of distinct
 * destination ranks (*dest) and of remote nodes from a uniformly placed source (*remote). */
static void consecutive_spread(int E, int k, int ep, int kn, double *dest, double *remote)
{
	int g = E, b = k;
	while (b) { int t = g % b; g = b; b = t; } /* gcd(E, k): the starts are its multiples */
	int n = E / g, per = E / ep, rpn = ep / kn > 0 ? ep / kn : 1;
	double sd = 0, sn = 0;
	for (int i = 0; i < n; i++) {
		int s = i * g, r0 = s / per, n0 = r0 / rpn, nr, nn;
		if (k >= E) {
			nr = ep, nn = kn;
		} else if (s + k <= E) { /* one run of ranks, and of nodes */
			int r1 = (s + k - 1) / per;
			nr = r1 - r0 + 1;
			nn = r1 / rpn - n0 + 1;
		} else { /* wraps past expert E − 1: ranks r0 .. ep − 1, then 0 .. r2 */
			int r2 = (s + k - 1 - E) / per, n2 = r2 / rpn;
			nr = r2 >= r0 ? ep : ep - r0 + r2 + 1;
			nn = n2 >= n0 ? kn : kn - n0 + n2 + 1;
		}
		sd += nr;
		sn += nn;
	}
	*dest = sd / n;
	*remote = sn / n * (1 - 1.0 / kn);
}

/* EP: all-to-all dispatch and combine, twice each way [model.md §3.2] */
static void ep_cost(const struct ectx *c, const struct dims *d, struct layer_cost *lc)
{
	const struct model *m = c->m;
	const struct plan *p = c->p;
	const struct hw *h = c->h;
	if (!d->moe || p->ep <= 1) return;
	double tok = d->E * d->T * d->H / d->sp; /* one copy of the tokens */
	/* a token goes once to each rank holding at least one of its top-k experts (DeepEP and
	 * Megatron's flex dispatcher send per destination rank, not per expert): with E/ep
	 * experts per rank and k distinct experts drawn uniformly, a rank receives it with
	 * probability 1 − C(E − E/ep, k)/C(E, k) */
	/* hierarchical dispatch: a token crosses the NIC tier once per distinct remote node among
	 * its top-k experts and fans out to the experts there over NVLink (DeepEP internode
	 * kernels; DeepSeek-V3 §3.2.2). With balanced routing over k nodes a token reaches
	 * (k−1)(1 − (1 − 1/k)^topk) remote nodes, against topk·(k−1)/k remote copies for a flat
	 * all-to-all */
	double kn = c->ep_g.units[0], dest, remote; /* distinct destination ranks per token, self included */
	if (p->moe_routing == ROUTE_CONSECUTIVE) {
		consecutive_spread(m->moe_experts, m->moe_topk, p->ep, (int)kn, &dest, &remote);
	} else {
		double none = 1, ne = m->moe_experts, per = ne / p->ep;
		for (int i = 0; i < m->moe_topk && i < ne; i++) none *= fmax(0, ne - per - i) / (ne - i);
		dest = p->ep * (1 - none);
		remote = (kn - 1) * (1 - pow(1 - 1 / kn, m->moe_topk));
	}
	double a2a;
	if (kn > 1) {
		double nvl, net;
		coll_bandwidths(h, &c->ep_g, &nvl, &net);
		a2a = ectx_coll_time(c, COLL_ALLTOALL, 1e-9, &c->ep_g) + tok * (remote / net + dest / kn / nvl);
	} else {
		a2a = ectx_coll_time(c, COLL_ALLTOALL, tok * dest, &c->ep_g);
	}
	lc->ep_f = lc->ep_b = 2 * a2a;
	if (sched_family(p->schedule)->flags & SCHED_F_EP_OVERLAP) {
		/* DualPipe runs each chunk's all-to-alls under the paired chunk's compute
		 * (DeepSeek-V3 §3.2.1: "fully hidden"), which they slow */
		lc->ep_f = hw_overlap_cost(h, 2 * a2a, lc->b);
		lc->ep_b = hw_overlap_cost(h, 2 * a2a, lc->f);
	}
}

/* activations kept per block (model.md §2.2, Llama-style generalisation with flash attention:
 * no s² term) and parameters held */
static void memory_cost(const struct ectx *c, const struct dims *d, struct layer_cost *lc)
{
	const struct model *m = c->m;
	const struct plan *p = c->p;
	double t = d->t, T = d->T, H = d->H, E = d->E, sp = d->sp, qd = d->qd, kvd_t = d->kvd_t;
	double mult = d->mlp_mult, width = d->width;
	/* a gated MLP keeps gate|up (2 widths) and the product (the down projection's input);
	 * run as separate ops, autograd also keeps act(gate), the product's other input */
	double keep = mult + d->glu_ops;
	double act = E * T * (H / sp            /* norm 1 input */
			      + H / sp          /* QKV input (stored sharded under SP) */
			      + d->qkv_t        /* q, k, v as the attention kernel saves them */
			      + d->o_t          /* attention output = O input */
			      + 2 * H / sp      /* norm 2 input, MLP input */
			      ) + (p->flash_attn ? 4.0 * T * m->heads / t /* softmax statistics, fp32 */
				   : p->recompute == RC_SELECTIVE && (p->recompute_modules & RCM_CORE_ATTN) ? 0 /* recomputed [KOR §5] */
				   : 5 * d->scores); /* scores, softmax output, dropout mask [KOR eq. 2] */
	double a_lin = E * T * (H / sp + d->o_t + H / sp); /* inputs of QKV, O, FC1 */
	if (sp > 1 && !p->tp_regather) {
		/* the QKV and FC1 inputs are kept as gathered, whole sequence (torchtitan's
		 * PrepareModuleInput to Replicate before its column-parallel linears) */
		act += 2 * E * T * H * (1 - 1 / sp);
		a_lin += 2 * E * T * H * (1 - 1 / sp);
	}
	if (width > 0) {
		act += E * T * (keep * width / t);
		a_lin += E * T * width / t;
	}
	/* MLA's latents, on the rank's sequence share under SP: the q and KV down-projections'
	 * outputs, kept by their norms, and the norms' outputs, kept as the up-projections' inputs
	 * (Megatron-Core multi_latent_attention.py: duplicated down-projections, q_layernorm and
	 * kv_layernorm before the column-parallel up-projections) */
	double lat = m->kv_lora_rank ? (double)m->q_lora_rank + m->kv_lora_rank : 0;
	act += 2 * E * T * lat / sp;
	a_lin += E * T * lat / sp;
	/* the routed tokens a rank's experts hold, each with its share of the expert width (dims) */
	double tok = d->tok, fe = d->fe;
	if (d->moe) {
		act += E * tok * (2 * H + keep * fe) + 4.0 * T * m->moe_experts;
		a_lin += E * tok * (H + fe);
	}
	if (p->precision == PREC_FP8 && p->fp8_impl == FP8_TE) {
		/* TE keeps only the column-wise FP8 copy (1 byte) of a GEMM input for the backward
		 * [TE linear.py; frameworks.md §3.4]: the QKV, FC1 and FC2 inputs (and the experts')
		 * shrink to half; the O projection saves its FP8 input beside the attention output
		 * that flash attention keeps in bf16 */
		double fp8_in = E * T * (2 * H / sp + width / t + lat / sp) + (d->moe ? E * tok * (H + fe) : 0);
		act -= 0.5 * fp8_in - 0.5 * E * T * d->o_t;
		a_lin = 0.5 * a_lin;
	}
	lc->act_full = act;
	lc->act_w = a_lin;
	lc->act_ckpt = E * T * H / sp;
	/* per-op checkpointing keeps the block input, the attention output with its statistics,
	 * and half of the matmul outputs (q, k, v, O, the MLP's up/gate and down; experts alike) */
	double mm_out = E * T * ((qd + 2 * kvd_t * t) / t + H / sp + (mult - 1) * width / t + H / sp);
	if (d->moe) mm_out += E * tok * ((mult - 1) * fe + H);
	lc->act_op = lc->act_ckpt + E * T * d->o_t + 4.0 * T * m->heads / t + 0.5 * mm_out;

	/* parameters held: TP-sharded projections, replicated norms/router, experts over EP */
	const struct layer_params *lp = &d->lp;
	lc->params = (lp->attn + lp->mlp + lp->bias) / t + lp->norms + lp->router + lp->experts / ((double)p->ep * c->etp);
	lc->params_expert = lp->experts / ((double)p->ep * c->etp);
	lc->params_dense_grad = lc->params - lc->params_expert;
}

/* Frameworks launch every kernel and collective from Python: a block cannot run faster than
 * its host can launch it, so its time is the larger of the GPU's and the host's: HOST_OPS_FWD
 * kernels forward and twice as many backward, and its TP collectives (with SP an all-gather
 * and a reduce-scatter around each of attention and MLP, else an all-reduce each), each
 * costing host_collective_us to launch; the profile says where those host times come from.
 * GPU-bound blocks (large models, the published rows) are untouched; small per-GPU work at
 * high tp is host-bound. */
static void host_bound(const struct ectx *c, const struct dims *d, struct layer_cost *lc)
{
	const struct hw *h = c->h;
	const struct plan *p = c->p;
	/* the sub-blocks tp_cost prices: attention and a dense or shared-expert MLP with the dense
	 * pattern, and a MoE block's routed experts with a pair of their own when etp > 1 */
	double nr = d->moe && c->etp > 1;
	double colls = p->tp > 1 ? (p->sp ? 2 : 1) * (d->nd + nr) : 0;
	double colls_b = colls + (p->tp > 1 && p->sp && p->tp_regather ? d->nd : 0); /* the re-gathers */
	double hf = HOST_OPS_FWD * h->host_op_s + colls * h->host_coll_s;
	double hb = 2 * HOST_OPS_FWD * h->host_op_s + colls_b * h->host_coll_s;
	if (hf > lc->f + lc->tp_f) lc->f = hf - lc->tp_f;
	if (hb > lc->b + lc->w + lc->tp_b) lc->b = hb - lc->w - lc->tp_b;
}

/* Megatron-Core's selective recompute modules beyond the core attention (--recompute-modules;
 * transformer_config.py, transformer_layer.py, multi_latent_attention.py, moe/experts.py): each
 * frees tensors memory_cost counts after the forward (CheckpointWithoutOutput drops a module's
 * output even where a later op saved it, and re-runs the module before the backward needs it;
 * tensor_parallel.checkpoint keeps only a module's input) and re-runs its forward, collectives
 * included, in the backward. Per block and micro-batch, with f the bytes per element a linear
 * layer's input is kept at relative to E (1/2 under Transformer Engine's FP8, memory_cost):
 *   mla_up_proj     q, k, v as the attention kernel saves them; re-runs the up-projections
 *   layernorm       the output of each norm not fused into the next linear by Transformer
 *                   Engine's layer specs (the attention's under MLA, the pre-MLP one of a
 *                   MoE block); re-runs the norm (a read and a write)
 *   moe_act         the routed experts' activation output (the FC2 input, f); re-runs the
 *                   activation (reads gate|up, writes the product)
 *   mlp             a dense block's MLP: its input (f), gate|up and product (the product at
 *                   f), and the gathered input torchtitan-style SP keeps; re-runs its GEMMs and
 *                   its SP gather and scatter
 *   shared_experts  the shared experts' gate|up and product; re-runs their GEMMs and collectives
 *   moe             the routed experts' tokens (as memory_cost keeps them), the router's
 *                   statistics and the shared experts; re-runs the router, the experts, the
 *                   dispatch and combine all-to-alls and their TP collectives
 * Module sets that overlap (moe with moe_act or shared_experts) free and re-run once. The block
 * being back-propagated holds what its recompute re-created (act_rc). */
static void selective_modules(const struct ectx *c, const struct dims *d, const struct compute *cm, struct layer_cost *lc)
{
	const struct plan *p = c->p;
	const struct model *m = c->m;
	int mods = p->recompute == RC_SELECTIVE ? p->recompute_modules & ~RCM_CORE_ATTN : 0;
	if (!mods) return;
	double t = d->t, T = d->T, H = d->H, E = d->E, sp = d->sp, width = d->width, keep = d->mlp_mult + d->glu_ops;
	double f = p->precision == PREC_FP8 && p->fp8_impl == FP8_TE ? 0.5 : 1;
	double tok = d->tok, fe = d->fe, ag, rs, ar;
	/* one forward pass of a sub-block's SP gather and scatter (an all-reduce without SP) */
	double pair = dense_tp_colls(c, d, &ag, &rs, &ar), routed_pair = routed_tp_pair(c, d);
	double drop = 0, rc = 0, flops = 0, rc_tp = 0, rc_ep = 0;
	if ((mods & RCM_MLA_UP_PROJ) && m->kv_lora_rank) {
		drop += E * T * d->qkv_t;
		rc += cm->g_up;
		flops += cm->gf_up;
	}
	if (mods & RCM_LAYERNORM) {
		int norms = (m->kv_lora_rank > 0) + d->moe;
		drop += norms * f * E * T * H / sp;
		rc += elem_t(c, norms * 2 * E * T * H / sp);
	}
	if ((mods & RCM_MLP) && !d->moe && width > 0) {
		drop += E * T * (f * H / sp + (keep - 1 + f) * width / t);
		if (sp > 1 && !p->tp_regather) drop += E * T * H * (1 - 1 / sp);
		rc += cm->g_mlp;
		flops += cm->gf_mlp;
		rc_tp += pair;
	}
	if (d->moe && (mods & (RCM_MOE | RCM_SHARED_EXPERTS)) && width > 0) {
		drop += E * T * (keep - 1 + f) * width / t;
		rc += cm->g_mlp;
		flops += cm->gf_mlp;
		rc_tp += pair;
	}
	if (d->moe && (mods & RCM_MOE)) {
		drop += E * tok * (2 * H + keep * fe) - (1 - f) * E * tok * (H + fe) + 4.0 * T * m->moe_experts;
		rc += cm->g_exp;
		flops += cm->gf_exp;
		rc_tp += routed_pair;
		rc_ep += lc->ep_f;
	} else if (d->moe && (mods & RCM_MOE_ACT)) {
		drop += f * E * tok * fe;
		rc += elem_t(c, 3 * E * tok * fe);
	}
	lc->act_full -= drop;
	lc->act_rc = drop;
	lc->rc += rc;
	lc->hw_flops += flops;
	lc->rc_tp = rc_tp;
	lc->rc_ep = rc_ep;
}

void layer_cost(const struct ectx *c, int moe, struct layer_cost *lc)
{
	struct dims d;
	struct compute cm;
	memset(lc, 0, sizeof(*lc));
	memset(&cm, 0, sizeof(cm));
	dims_init(c, moe, &d);
	compute_cost(c, &d, &cm, lc);
	tp_cost(c, &d, &cm, lc);
	host_bound(c, &d, lc);
	cp_cost(c, &d, &cm, lc);
	ep_cost(c, &d, lc);
	memory_cost(c, &d, lc);
	selective_modules(c, &d, &cm, lc);
}
