/* estimate — the analytical model of one plan (model.md §1–4): per-layer op costs from a
 * roofline with shape-dependent GEMM efficiency, communication on the fabric tier the rank
 * layout puts each group on, pipeline bubble by schedule, DP/ZeRO collectives with overlap, and
 * memory per rank kind. Everything a step needs is computed per *kind* of layer (dense, MoE)
 * once and summed per pipeline rank, so one estimate costs a few microseconds. */
#include <math.h>
#include <string.h>
#include "sim/collective.h"
#include "sim/estimate.h"
#include "sim/flops.h"
#include "sim/hw.h"
#include "sim/layout.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/util.h"

/* Everything derived once from (model, hw, plan). */
struct ectx {
	const struct model *m;
	const struct hw *h;
	const struct plan *p;
	int mb;                     /* micro-batches per pipeline */
	double T;                   /* tokens per micro-batch on one rank's sequence shard: b*s/cp */
	double gemm_peak;           /* FLOP/s of the linear layers' GEMMs (bf16 or fp8) */
	double gemm_eff_max;        /* their best achievable fraction of it (MAMF) */
	int tp_nodes, cp_nodes, dpcp_nodes, ep_nodes, edp_nodes, pp_cross;
	int dpcp_ring_nodes;        /* nodes the dp*cp ring really crosses (ring step latency) */
	int dpcp, edp;              /* sizes of the dense and expert gradient groups */
	double act_bytes;           /* bytes per activation element: 2 (bf16/fp8 runs) or 4 (fp32) */
};

/* Cost of one decoder block for one micro-batch on one rank. Times in seconds. */
struct layer_cost {
	double f, b, w;             /* compute: forward, input-gradient backward, weight-gradient */
	double rc;                  /* recompute added to the backward (per the plan's mode) */
	double tp_f, tp_b;          /* exposed TP/SP communication, forward and backward */
	double cp_f, cp_b;          /* exposed CP communication */
	double ep_f, ep_b;          /* exposed EP all-to-all */
	double hw_flops, model_flops;
	double act_full;            /* bytes kept for backward without recompute */
	double act_w;               /* bytes still needed by W after B (linear inputs) */
	double act_ckpt;            /* bytes kept under full recompute (the block input) */
	double act_op;              /* bytes kept under per-op checkpointing (RC_OP) */
	double params;              /* parameters held by this rank for this block */
	double params_dense_grad;   /* of which reduced over the dp*cp group */
	double params_expert;       /* of which reduced over the expert-DP group */
};

static double gemm_eff(const struct ectx *c, double mn)
{
	/* efficiency falls as the smallest GEMM dimension shrinks (tile and wave quantization):
	 * eff = eff_max · n / (n + n_half); n_half from the profile */
	return c->gemm_eff_max * mn / (mn + c->h->gemm_half_dim);
}

/* time of `count` GEMMs (M×K)·(K×N) */
static double gemm_t(const struct ectx *c, double M, double N, double K, double count)
{
	if (M <= 0 || N <= 0 || K <= 0) return 0;
	double mn = M < N ? M : N;
	if (K < mn) mn = K;
	return count * 2.0 * M * N * K / (c->gemm_peak * gemm_eff(c, mn));
}

static double elem_t(const struct ectx *c, double bytes)
{
	return bytes / (c->h->hbm_bw_bps * c->h->mem_eff);
}

static void layer_cost(const struct ectx *c, int moe, struct layer_cost *lc)
{
	const struct model *m = c->m;
	const struct plan *p = c->p;
	const struct hw *h = c->h;
	double t = p->tp, T = c->T, H = m->hidden, E = c->act_bytes;
	double sp = (p->sp && p->tp > 1) ? t : 1; /* divisor of the replicated tensors */
	double qd = (double)m->heads * m->head_dim, kvd = (double)m->kv_heads * m->head_dim;
	double kvd_t = kvd / t < m->head_dim ? m->head_dim : kvd / t; /* K/V heads replicate when t > a_kv */
	struct layer_params lp;
	layer_params(m, moe ? m->moe_dense_layers : 0, &lp);
	memset(lc, 0, sizeof(*lc));

	/* --- linear layers (forward GEMM time; backward = 2x: input grad (B) + weight grad (W)) */
	double g = 0, gflops = 0;
	if (m->kv_lora_rank) {
		/* MLA: treat as one projection block of its parameter count, column-parallel */
		g += gemm_t(c, T, lp.attn / H / t, H, 1);
		gflops += 2 * T * lp.attn / t;
	} else {
		g += gemm_t(c, T, (qd + 2 * kvd) / t, H, 1) + gemm_t(c, T, H, qd / t, 1);
		gflops += 2 * T * H * (2 * qd + 2 * kvd) / t;
	}
	double mlp_mult = m->mlp == MLP_SWIGLU ? 3 : 2;
	double width = moe ? (double)m->moe_ffn_hidden * m->moe_shared_experts : m->ffn_hidden;
	if (width > 0) {
		g += gemm_t(c, T, (mlp_mult - 1) * width / t, H, 1) + gemm_t(c, T, H, width / t, 1);
		gflops += 2 * T * H * mlp_mult * width / t;
	}
	double expert_tokens = 0;
	if (moe) {
		/* routed experts: T·k token copies spread evenly over the EP group; each rank runs
		 * E/ep local experts, each on T·k·ep/E tokens (perfect balance) */
		double local = (double)m->moe_experts / p->ep;
		expert_tokens = T * m->moe_topk * p->ep / m->moe_experts;
		double fe = m->moe_ffn_hidden / t;
		g += local * (gemm_t(c, expert_tokens, (mlp_mult - 1) * fe, H, 1) + gemm_t(c, expert_tokens, H, fe, 1));
		gflops += 2 * T * m->moe_topk * H * mlp_mult * m->moe_ffn_hidden / t;
		g += gemm_t(c, T, m->moe_experts, H, 1); /* router */
		gflops += 2 * T * H * m->moe_experts;
	}

	/* --- attention core (flash attention, causal: each query sees s/2 keys on average; with
	 * zig-zag CP every rank does the same share [L3 §3.3.2]) */
	double ctx = p->seq / 2.0;
	double attn_flops = 2.0 * m->heads / t * T * ctx * (m->head_dim + (m->kv_lora_rank ? m->v_head_dim : m->head_dim));
	double peak_attn = h->peak_bf16_flops * h->attn_eff;
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
	/* unfused attention (Megatron before --use-flash-attn): QK^T and PV are batched GEMMs over
	 * the whole s x s matrix, the causal mask applied afterwards, so nothing is skipped; the
	 * scores pass through HBM: fused scale-mask-softmax reads and writes them (2+2 bytes per
	 * element), dropout reads them and writes them and a 1-byte mask (5); backward: dropout
	 * (2+1+2) and softmax backward (2+2+2) [KOR §4.1 counts the same tensors: 5as²b] */
	double scores = (double)p->mbs * m->heads / t * ((double)p->seq / p->cp) * p->seq;
	if (!p->flash_attn) {
		int dv = m->kv_lora_rank ? m->v_head_dim : m->head_dim;
		double bh = (double)p->mbs * m->heads / t, sq = (double)p->seq / p->cp;
		/* each batched GEMM has one s x s operand or result in HBM (2 bytes per element);
		 * at K = head_dim its arithmetic intensity (~head_dim flop/byte) sits near the ridge,
		 * so it costs the larger of its flops at GEMM efficiency and that traffic */
		double peak = c->gemm_peak * c->gemm_eff_max;
		double gqk = fmax(2 * bh * sq * p->seq * m->head_dim / peak, elem_t(c, 2 * scores));
		double gpv = fmax(2 * bh * sq * p->seq * dv / peak, elem_t(c, 2 * scores));
		a_f = gqk + gpv + elem_t(c, 9 * scores);
		a_b = 2 * (gqk + gpv) + elem_t(c, 11 * scores);
	}

	/* --- element-wise traffic per token (derived): norms, residuals, rope, activation
	 * function; replicated tensors are split only under SP */
	double ew = E * (12 * H / sp + 4 * (qd + 2 * kvd) / t + 3 * (moe ? m->moe_topk * (double)m->moe_ffn_hidden : width) / t);
	double e_f = elem_t(c, T * ew), e_b = 2 * e_f;
	/* FP8 with dynamic (per-tensor) scaling, as torchao Float8Linear and TE run it: every
	 * GEMM operand is cast to FP8 first, an amax pass (read 2 bytes) then the cast (read 2,
	 * write 1) = 5 bytes per element of each input and weight in forward and of each output
	 * gradient in backward, and the transposed FP8 copies the weight-gradient and
	 * input-gradient GEMMs need (read 1, write 1) of the input and weight [torchao float8
	 * README: casts are why the end-to-end gain stays well under 2x] */
	if (p->precision == PREC_FP8) {
		double fe = moe ? m->moe_ffn_hidden * (double)m->moe_topk + width : width;
		double in = H + qd / t + H + fe / t, out = (qd + 2 * kvd) / t + H + (mlp_mult - 1) * fe / t + H;
		double wts = (lp.attn + lp.mlp) / t + lp.experts / (p->ep * t);
		e_f += elem_t(c, T * 5 * in + 5 * wts);
		e_b += elem_t(c, T * (5 * out + 2 * in) + 2 * wts);
	}
	double ko = h->kernel_overhead_s;

	lc->f = g + a_f + e_f + ko;
	lc->w = g;
	lc->b = g + a_b + e_b + 2 * ko;
	lc->model_flops = 3 * gflops + 3 * attn_flops;
	lc->hw_flops = lc->model_flops;
	if (p->recompute == RC_FULL) {
		lc->rc = lc->f;
		lc->hw_flops += gflops + attn_flops;
	} else if (p->recompute == RC_SELECTIVE) {
		lc->rc = a_f; /* core attention recomputed [KOR §5] */
		lc->hw_flops += attn_flops;
	} else if (p->recompute == RC_OP) {
		/* torchtitan's per-op policy keeps every other matmul output and the attention
		 * output (torchtitan _save_list / _custom_policy: "save all compute ops except every
		 * second mm"), so the backward re-runs half the linear forward and the element-wise
		 * ops between them, not the attention */
		lc->rc = 0.5 * g + e_f + ko;
		lc->hw_flops += 0.5 * gflops;
	}

	/* --- TP/SP: 2 all-reduces (or all-gather + reduce-scatter pairs) per block forward and
	 * 2 backward, each of the full activation b·s·h [MEG §3.2; KOR §4.2.2]; a recomputed
	 * forward repeats the forward's 2 */
	if (p->tp > 1) {
		double S = E * T * H;
		double ar = coll_time(h, COLL_ALLREDUCE, S, p->tp, c->tp_nodes);
		/* overlapped TP (Megatron TE userbuffers, PyTorch async-TP) splits each collective
		 * into t chunks pipelined with the chunks of its GEMM: the first chunk is exposed,
		 * the rest hides behind the GEMM as far as the GEMM lasts (a forward collective
		 * pairs with the forward GEMMs, a backward one with B and W), and what overlaps
		 * costs 10 % of its length in SM and memory contention (as for ZeRO-3 below) */
		double cf = 2 * ar, cb = 2 * ar; /* a recomputed forward's are added per block (accumulate) */
		if (p->overlap_tp_comm) {
			double hf = fmin(cf * (1 - 1 / t), 0.9 * g), hb = fmin(cb * (1 - 1 / t), 0.9 * 2 * g);
			lc->tp_f = cf - 0.9 * hf;
			lc->tp_b = cb - 0.9 * hb;
		} else {
			lc->tp_f = cf;
			lc->tp_b = cb;
		}
	}
	/* --- CP ring attention: c−1 K/V chunks pass each rank in forward, K,V + dK,dV in
	 * backward, overlapped with the blockwise attention [PICO cp; model.md §3.2] */
	if (p->cp > 1) {
		/* every ring step waits on its P2P exchange before the next block's attention may
		 * start [Ring Attention (Liu et al. 2023) §3, Alg. 1; PyTorch _templated_ring_attention
		 * waits per rotation]: the fixed cost of each of the c−1 steps (launch, handshake) is
		 * exposed in forward and again in backward; only the transfer hides behind the block */
		double kv = E * 2 * T * kvd_t, steps = p->cp - 1;
		double lat = c->cp_nodes > 1 ? h->inter_lat_s : h->intra_lat_s;
		double xfer = coll_time(h, COLL_SENDRECV, kv, 2, c->cp_nodes) - lat;
		lc->cp_f = steps * lat + fmax(0, steps * xfer - a_f * steps / p->cp);
		lc->cp_b = steps * lat + fmax(0, 2 * steps * xfer - a_b * steps / p->cp);
	}
	/* --- EP: all-to-all dispatch and combine, twice each way [model.md §3.2] */
	if (moe && p->ep > 1) {
		double tok = E * T * H / (p->sp && p->tp > 1 ? t : 1); /* one copy of the tokens */
		/* a token goes once to each rank holding at least one of its top-k experts (DeepEP
		 * and Megatron's flex dispatcher send per destination rank, not per expert): with
		 * E/ep experts per rank and k distinct experts drawn uniformly, a rank receives it
		 * with probability 1 − C(E − E/ep, k)/C(E, k) */
		double none = 1, ne = m->moe_experts, per = ne / p->ep;
		for (int i = 0; i < m->moe_topk && i < ne; i++) none *= fmax(0, ne - per - i) / (ne - i);
		double dest = p->ep * (1 - none); /* distinct destination ranks per token, self included */
		double a2a;
		if (c->ep_nodes > 1) {
			/* hierarchical dispatch: a token crosses the NIC tier once per distinct remote
			 * node among its top-k experts and fans out to the experts there over NVLink
			 * (DeepEP internode kernels; DeepSeek-V3 §3.2.2). With balanced routing over
			 * k nodes a token reaches (k−1)(1 − (1 − 1/k)^topk) remote nodes, against
			 * topk·(k−1)/k remote copies for a flat all-to-all. */
			double kn = c->ep_nodes, topk = m->moe_topk;
			double remote = (kn - 1) * (1 - pow(1 - 1 / kn, topk));
			a2a = h->inter_lat_s + tok * (remote / (h->inter_bw_bps * h->comm_eff) +
						     dest / kn / (h->intra_bw_bps * h->comm_eff));
		} else {
			a2a = coll_time(h, COLL_ALLTOALL, tok * dest, p->ep, 1);
		}
		double expose = (p->schedule == SCHED_DUALPIPE || p->schedule == SCHED_DUALPIPEV) ? 0.1 : 1.0;
		lc->ep_f = 2 * a2a * expose;
		lc->ep_b = 2 * a2a * expose;
	}

	/* --- activation memory per block (model.md §2.2, Llama-style generalisation with flash
	 * attention: no s² term) */
	double act = E * T * (2 * H / sp        /* norm 1 input */
			      + 2 * H / sp      /* QKV input (stored sharded under SP) */
			      + (qd + 2 * kvd_t * t) / t /* q, k, v */
			      + qd / t          /* attention output = O input */
			      + 2 * H / sp      /* norm 2 input, MLP input */
			      ) + (p->flash_attn ? 4.0 * T * m->heads / t /* softmax statistics, fp32 */
				   : p->recompute == RC_SELECTIVE ? 0 /* recomputed [KOR §5] */
				   : 5 * scores); /* scores, softmax output, dropout mask [KOR eq. 2] */
	double a_lin = E * T * (H / sp + qd / t + H / sp); /* inputs of QKV, O, FC1 */
	if (width > 0) {
		act += E * T * (mlp_mult * width / t);
		a_lin += E * T * width / t;
	}
	if (moe) {
		double tok = T * m->moe_topk;
		act += E * tok * (2 * H + mlp_mult * m->moe_ffn_hidden / t) + 4.0 * T * m->moe_experts;
		a_lin += E * tok * (H + m->moe_ffn_hidden / t);
	}
	lc->act_full = act;
	lc->act_w = a_lin;
	lc->act_ckpt = E * T * H / sp;
	/* per-op checkpointing keeps the block input, the attention output with its statistics,
	 * and half of the matmul outputs (q, k, v, O, the MLP's up/gate and down; experts alike) */
	double mm_out = E * T * ((qd + 2 * kvd_t * t) / t + H / sp + (mlp_mult - 1) * width / t + H / sp);
	if (moe) mm_out += E * T * m->moe_topk * ((mlp_mult - 1) * m->moe_ffn_hidden / t + H);
	lc->act_op = lc->act_ckpt + E * T * qd / t + 4.0 * T * m->heads / t + 0.5 * mm_out;

	/* --- parameters held: TP-sharded projections, replicated norms/router, experts over EP */
	lc->params = (lp.attn + lp.mlp + lp.bias) / t + lp.norms + lp.router + lp.experts / (p->ep * t);
	lc->params_expert = lp.experts / (p->ep * t);
	lc->params_dense_grad = lc->params - lc->params_expert;
}

/* which pipeline stages a pipeline rank holds */
static int rank_stages(const struct plan *p, int r, int *st)
{
	switch (p->schedule) {
	case SCHED_INTERLEAVED:
		for (int c = 0; c < p->vpp; c++) st[c] = c * p->pp + r;
		return p->vpp;
	case SCHED_ZBV: case SCHED_DUALPIPEV:
		st[0] = r; st[1] = 2 * p->pp - 1 - r;
		return 2;
	case SCHED_DUALPIPE:
		st[0] = r; st[1] = p->pp - 1 - r;
		return 2;
	default:
		st[0] = r;
		return 1;
	}
}

struct rank_work {
	double F, B, W;             /* per micro-batch */
	double flops_model, flops_hw;
	double act_mb, act_w_mb, act_extra;
	double params, params_dense, params_expert;
	double tp_s, cp_s, ep_s, rc_s;
	int layers, has_embed, has_head;
};

static void accumulate(struct rank_work *w, const struct layer_cost *lc, int n, int n_rc, const struct plan *p)
{
	double k = n;
	w->F += k * (lc->f + lc->tp_f + lc->cp_f + lc->ep_f);
	w->B += k * (lc->b + lc->tp_b + lc->cp_b + lc->ep_b);
	w->W += k * lc->w;
	w->tp_s += k * (lc->tp_f + lc->tp_b);
	w->cp_s += k * (lc->cp_f + lc->cp_b);
	w->ep_s += k * (lc->ep_f + lc->ep_b);
	w->flops_model += k * lc->model_flops;
	w->flops_hw += k * lc->hw_flops;
	if (p->recompute == RC_FULL) {
		/* n_rc blocks recomputed (keep only their input), the rest keep everything; the
		 * recomputed forward repeats its TP/CP/EP communication too */
		w->B += n_rc * (lc->rc + lc->tp_f + lc->cp_f + lc->ep_f);
		w->tp_s += n_rc * lc->tp_f;
		w->cp_s += n_rc * lc->cp_f;
		w->ep_s += n_rc * lc->ep_f;
		w->rc_s += n_rc * lc->rc;
		w->flops_hw -= (n - n_rc) * (lc->hw_flops - lc->model_flops);
		w->act_mb += n_rc * lc->act_ckpt + (n - n_rc) * lc->act_full;
		if (n_rc > 0 && lc->act_full > w->act_extra) w->act_extra = lc->act_full;
	} else {
		w->B += k * lc->rc;
		w->rc_s += k * lc->rc;
		w->act_mb += k * (p->recompute == RC_OP ? lc->act_op : lc->act_full);
		/* the block being back-propagated holds its recomputed tensors too */
		if (p->recompute == RC_OP && n > 0 && lc->act_full > w->act_extra) w->act_extra = lc->act_full;
	}
	w->act_w_mb += k * lc->act_w;
	w->params += k * lc->params;
	w->params_dense += k * lc->params_dense_grad;
	w->params_expert += k * lc->params_expert;
	w->layers += n;
}

static void rank_work(const struct ectx *c, int r, const struct layer_cost *dense,
		      const struct layer_cost *moe, struct rank_work *w)
{
	const struct plan *p = c->p;
	const struct model *m = c->m;
	int st[PLAN_MAX_STAGES], ns = rank_stages(p, r, st), nstages = plan_stages(p);
	memset(w, 0, sizeof(*w));
	for (int i = 0; i < ns; i++) {
		int first = 0;
		for (int s = 0; s < st[i]; s++) first += p->stage_layers[s];
		int n = p->stage_layers[st[i]];
		/* MoE blocks are the layers from moe_dense_layers on */
		int n_moe = 0;
		if (model_is_moe(m)) {
			int lo = first > m->moe_dense_layers ? first : m->moe_dense_layers;
			n_moe = first + n > lo ? first + n - lo : 0;
		}
		int n_dense = n - n_moe;
		int rc = p->recompute_layers < 0 || p->recompute_layers > n ? n : p->recompute_layers;
		int rc_d = rc < n_dense ? rc : n_dense, rc_m = rc - rc_d;
		if (n_dense) accumulate(w, dense, n_dense, rc_d, p);
		if (n_moe) accumulate(w, moe, n_moe, rc_m, p);
		if (st[i] == 0) w->has_embed = 1;
		if (st[i] == nstages - 1) w->has_head = 1;
	}
	if (p->schedule == SCHED_DUALPIPE) {
		/* each micro-batch visits only one of the rank's two stages (one per direction) */
		w->F /= 2; w->B /= 2; w->W /= 2;
		w->tp_s /= 2; w->cp_s /= 2; w->ep_s /= 2; w->rc_s /= 2;
		w->flops_model /= 2; w->flops_hw /= 2;
	}
	double t = p->tp, T = c->T, H = m->hidden, E = c->act_bytes;
	double V = ceil(m->vocab / (128.0 * t)) * 128.0 * t; /* padded vocabulary [MCODE] */
	if (w->has_embed) {
		w->params += embedding_params(m) / t;
		w->params_dense += embedding_params(m) / t;
		w->F += elem_t(c, 2 * E * T * H);
		w->B += elem_t(c, 4 * E * T * H);
	}
	if (w->has_head) {
		/* final norm + LM head GEMM + vocab-parallel cross-entropy over fp32 logits */
		double hp = (m->tied ? (double)V * H : head_params(m)) / t + H;
		if (!(m->tied && w->has_embed)) { w->params += hp; w->params_dense += hp; }
		double g = gemm_t(c, T, V / t, H, 1);
		double ce = elem_t(c, T * V / t * 16.0);
		w->F += g + ce / 3 + elem_t(c, 4 * E * T * H);
		w->B += g + 2 * ce / 3;
		w->W += g;
		w->flops_model += 6 * T * H * V / t;
		w->flops_hw += 6 * T * H * V / t;
		w->act_extra += 6.0 * T * V / t; /* bf16 logits + fp32 copy for the loss, one micro-batch */
		if (p->tp > 1) {
			double S = 4.0 * T;  /* max and sum all-reduces of vocab-parallel CE */
			w->F += 2 * coll_time(c->h, COLL_ALLREDUCE, S, p->tp, c->tp_nodes);
		}
	}
}

/* activations in flight at the peak, in units of one micro-batch through all of this rank's
 * layers (model.md §2.3) */
static double inflight(const struct plan *p, int r, int mb, double w_ratio)
{
	double pp = p->pp, v = p->vpp;
	double lim = mb;
	switch (p->schedule) {
	case SCHED_NONE: return 1;
	case SCHED_AFAB: return mb;
	case SCHED_1F1B: return fmin(pp - r, lim);
	case SCHED_INTERLEAVED: /* warm-up 2(p−r−1)+(v−1)p chunk-ops, +1 [MCODE-sched, TV-G3] */
		return fmin(lim * v, 2 * (pp - r - 1) + (v - 1) * pp + 1) / v;
	case SCHED_ZBH1: /* (p−r)·M_B + r·M_W [ZB §2.3] */
		return fmin(pp - r, lim) + fmin(r, lim) * w_ratio;
	case SCHED_ZBH2:
		return fmin(2 * pp - 2 * r - 1, lim) + fmin(2 * r, lim) * w_ratio;
	case SCHED_ZBV: return fmin(pp, lim); /* p·M_B, balanced [ZB §6] */
	case SCHED_DUALPIPE: return fmin((pp + 1) / 2, lim); /* PP+1 stage-units, rank = 2 stages [DSV3 Table 2] */
	case SCHED_DUALPIPEV: return fmin(pp + 0.5, lim);
	default: return pp;
	}
}

/* pipeline span of one step given every pipeline rank's per-micro-batch F, B, W */
static double pipeline_span(const struct plan *p, int mb, const struct rank_work *w, int np,
			    double t_p2p, double *pp_exposed)
{
	double Tmax = 0, Fm = 0, Bm = 0, Wm = 0, sum = 0;
	for (int r = 0; r < np; r++) {
		double T = w[r].F + w[r].B + w[r].W;
		if (T > Tmax) { Tmax = T; Fm = w[r].F; Bm = w[r].B; Wm = w[r].W; }
		sum += T;
	}
	double pp = p->pp, v = p->vpp;
	double span;
	*pp_exposed = 0;
	switch (p->schedule) {
	case SCHED_NONE:
		return mb * Tmax;
	case SCHED_AFAB: case SCHED_1F1B:
		/* fill and drain walk every stage once; steady state runs at the slowest stage
		 * [MEG §2.2.1] */
		span = (mb - 1) * Tmax + sum;
		*pp_exposed = (2 * (pp - 1) + 2 * mb) * t_p2p;
		break;
	case SCHED_INTERLEAVED:
		span = mb * Tmax + (sum / np) * (pp - 1) / v; /* bubble (p−1)/(v·m) [MEG §2.2.2] */
		*pp_exposed = (2 * (pp - 1) + 2 * mb * v) * t_p2p;
		break;
	case SCHED_ZBH1: /* (p−1)(F+B−W) [ZB Table 2] */
		span = mb * Tmax + (pp - 1) * fmax(0, Fm + Bm - Wm);
		*pp_exposed = (2 * (pp - 1) + mb) * t_p2p;
		break;
	case SCHED_ZBH2:
		span = mb * Tmax + (pp - 1) * fmax(0, Fm + Bm - 2 * Wm);
		*pp_exposed = (2 * (pp - 1) + mb) * t_p2p;
		break;
	case SCHED_ZBV:
		span = mb * Tmax + (pp - 1) * fmax(0, Fm + Bm - 2 * Wm) / 2;
		*pp_exposed = (4 * (pp - 1) + mb) * t_p2p;
		break;
	case SCHED_DUALPIPE: {
		/* (PP/2−1)(F&B + B − 3W), chunk = one of the rank's two stages, F&B = F + B_full
		 * [DSV3 Table 2] */
		span = mb * Tmax + (pp / 2 - 1) * fmax(0, Fm + 2 * (Bm + Wm) - 3 * Wm);
		*pp_exposed = 2 * (pp - 1) * t_p2p;
		break;
	}
	case SCHED_DUALPIPEV: {
		double f = Fm / 2, bf = (Bm + Wm) / 2, ww = Wm / 2;
		span = mb * Tmax + (pp - 1) * fmax(0, f + 2 * bf - 3 * ww);
		*pp_exposed = 4 * (pp - 1) * t_p2p;
		break;
	}
	default:
		span = (mb - 1) * Tmax + sum;
	}
	return span + *pp_exposed;
}

/* nodes spanned by the group of rank 0. A group along one dimension is a progression of
 * stride s: with s >= gpus_per_node every member sits on its own node, and with s dividing
 * gpus_per_node the group fills gpus_per_node/s slots per node (closed form, no sort); other
 * cases ask the layout. */
static int dim_nodes(const struct layout *l, int d)
{
	int n = l->size[d], s = l->stride[d], g = l->gpus_per_node;
	if (n <= 1) return 1;
	if (s >= g) return n;
	if (g % s == 0) {
		int per = g / s;
		return (n + per - 1) / per;
	}
	return -1;
}

static int group_nodes(const struct layout *l, enum group_kind g)
{
	int d = g == GROUP_TP ? DIM_TP : g == GROUP_CP ? DIM_CP : g == GROUP_DP ? DIM_DP : g == GROUP_PP ? DIM_PP : -1;
	/* the layout counts a composite group (DP×CP, EP, expert-DP) of more than 256 ranks as
	 * one node per member; keep its answer there */
	if (g == GROUP_DPCP && l->size[DIM_DP] * l->size[DIM_CP] <= 256) {
		if (l->size[DIM_CP] == 1) d = DIM_DP;
		if (l->size[DIM_DP] == 1) d = DIM_CP;
	}
	if (g == GROUP_EP && l->ep == 1) return 1;
	if (g == GROUP_DPCP && l->size[DIM_DP] * l->size[DIM_CP] > 256) return l->size[DIM_DP] * l->size[DIM_CP];
	if (d >= 0) {
		int k = dim_nodes(l, d);
		if (k > 0) return k;
	}
	return layout_group_nodes(l, g, 0);
}

static int ectx_init(struct ectx *c, const struct model *m, const struct hw *h, const struct plan *p, char *err)
{
	struct layout l;
	memset(c, 0, sizeof(*c));
	c->m = m; c->h = h; c->p = p;
	if (layout_init(&l, p, err)) return -1;
	c->mb = plan_microbatches(p);
	c->T = (double)p->mbs * p->seq / p->cp;
	c->gemm_peak = p->precision == PREC_FP8 ? h->peak_fp8_flops : p->precision == PREC_FP32 ? h->peak_bf16_flops / 2 : h->peak_bf16_flops;
	c->gemm_eff_max = p->precision == PREC_FP8 && h->gemm_eff_fp8 > 0 ? h->gemm_eff_fp8 : h->gemm_eff;
	c->act_bytes = p->precision == PREC_FP32 ? 4 : 2;
	c->tp_nodes = group_nodes(&l, GROUP_TP);
	c->cp_nodes = group_nodes(&l, GROUP_CP);
	c->dpcp_nodes = group_nodes(&l, GROUP_DPCP);
	/* above 256 ranks the DP×CP group is priced as one node per member (bandwidth, as
	 * calibrated); its ring still runs the members of one node over NVLink, so the step
	 * latency counts the real nodes when the group is a plain progression */
	c->dpcp_ring_nodes = c->dpcp_nodes;
	if (p->dp * p->cp > 256 && (p->cp == 1 || p->dp == 1)) {
		int k = dim_nodes(&l, p->cp == 1 ? DIM_DP : DIM_CP);
		if (k > 0) c->dpcp_ring_nodes = k;
	}
	c->ep_nodes = group_nodes(&l, GROUP_EP);
	c->edp_nodes = p->ep == 1 ? c->dpcp_nodes : group_nodes(&l, GROUP_EDP);
	c->pp_cross = p->pp > 1 && group_nodes(&l, GROUP_PP) > 1;
	c->dpcp = p->dp * p->cp;
	c->edp = c->dpcp / p->ep;
	return 0;
}

/* DP / ZeRO communication of one pipeline rank: total and exposed, per step */
static void dp_time(const struct ectx *c, const struct rank_work *w, double *total, double *exposed)
{
	const struct plan *p = c->p;
	const struct hw *h = c->h;
	double gb = p->fp32_grads || p->precision == PREC_FP32 ? 4 : 2, pb = c->act_bytes;
	double gd = w->params_dense * gb, ge = w->params_expert * gb;
	double pd = w->params_dense * pb, pe = w->params_expert * pb;
	int n = c->dpcp, ne = c->edp;
	double bwd_mb = w->B + w->W, fwd_mb = w->F;
	double t_red, t_ag = 0;
	*total = *exposed = 0;
	if (n <= 1 && ne <= 1) return;
	if (p->zero == 0)
		t_red = coll_time(h, COLL_ALLREDUCE, gd, n, c->dpcp_nodes) + coll_time(h, COLL_ALLREDUCE, ge, ne, c->edp_nodes);
	else
		t_red = coll_time(h, COLL_REDUCESCATTER, gd, n, c->dpcp_nodes) + coll_time(h, COLL_REDUCESCATTER, ge, ne, c->edp_nodes);
	if (p->zero >= 1)
		t_ag = coll_time(h, COLL_ALLGATHER, pd, n, c->dpcp_nodes) + coll_time(h, COLL_ALLGATHER, pe, ne, c->edp_nodes);
	/* the last bucket cannot overlap; Megatron's bucket is max(40M, 1M·dp) params [TV-G4] */
	double bucket = fmax(40e6, 1e6 * n) / fmax(1, w->params);
	double tail = t_red * fmin(1, bucket);
	if (p->zero <= 1) {
		*total = t_red + t_ag;
		double red_exp = p->overlap_grad_reduce ? fmax(tail, t_red - 0.9 * bwd_mb) : t_red;
		double ag_exp = p->overlap_param_gather ? fmax(0, t_ag - 0.9 * fwd_mb) : t_ag;
		*exposed = red_exp + ag_exp;
	} else if (p->zero == 2) {
		/* gradients reduce-scattered every micro-batch [ZERO §5.2], params gathered once */
		*total = c->mb * t_red + t_ag;
		double per = fmax(tail, t_red - 0.9 * bwd_mb); /* FSDP overlaps by construction */
		*exposed = c->mb * per + (p->overlap_param_gather ? fmax(0, t_ag - 0.9 * fwd_mb) : t_ag);
	} else {
		/* ZeRO-3 / FSDP: every block's parameters are all-gathered before its forward and
		 * again before its backward, and its gradients reduce-scattered after, every
		 * micro-batch [ZERO §5.3; PB ZeRO-3]. The collectives are issued per block, so each
		 * carries its own fixed cost and ring steps (coll_time) on a message of one block's
		 * parameters: with n ranks a rank's chunk is 1/n of a block, KB at n in the
		 * thousands, and the (n−1)·α ring latency dominates (model.md §3.1). The recomputed
		 * forward runs inside the backward's gathered window (FSDP reshards after the
		 * block's backward), so it adds compute to hide behind, not a third gather.
		 * Prefetch depth 1 (FSDP forward/backward_prefetch, DeepSpeed's prefetch bucket):
		 * block i+1's gather runs under block i's compute, so the first gather is exposed
		 * and every later one by what the block's compute does not cover; in backward the
		 * next gather and the previous block's reduce-scatter share the window, and the
		 * last reduce-scatter is exposed. */
		double L = fmax(1, w->layers);
		double fix = coll_step_latency(COLL_ALLGATHER, n, c->dpcp_ring_nodes) - coll_step_latency(COLL_ALLGATHER, n, c->dpcp_nodes);
		if (h->inter_lat_s <= 0 || pd <= 0) fix = 0;
		double g = coll_time(h, COLL_ALLGATHER, pd / L, n, c->dpcp_nodes) + coll_time(h, COLL_ALLGATHER, pe / L, ne, c->edp_nodes) + fix;
		double rs = coll_time(h, COLL_REDUCESCATTER, gd / L, n, c->dpcp_nodes) + coll_time(h, COLL_REDUCESCATTER, ge / L, ne, c->edp_nodes) + fix;
		double f_l = fwd_mb / L, b_l = bwd_mb / L;
		*total = c->mb * L * (2 * g + rs);
		/* a collective running under a block's compute takes SMs and memory bandwidth from
		 * it: the overlapped part costs 10 % of its length (the same 0.9 as above, applied
		 * to what overlaps rather than as a threshold; both agree once the collective
		 * outlasts the compute) */
		double ef = g + (L - 1) * (fmax(0, g - f_l) + 0.1 * fmin(g, f_l));
		double eb = g + (L - 1) * (fmax(0, g + rs - b_l) + 0.1 * fmin(g + rs, b_l)) + rs;
		*exposed = c->mb * (ef + eb);
	}
}

static void rank_memory(const struct ectx *c, int r, const struct rank_work *w, struct rank_est *k)
{
	const struct plan *p = c->p;
	const struct hw *h = c->h;
	double pb = p->precision == PREC_FP32 ? 4 : p->precision == PREC_FP8 ? 3 : 2;
	double gb = p->fp32_grads || p->precision == PREC_FP32 ? 4 : 2;
	double ob = p->precision == PREC_FP32 ? 8 : 12; /* fp32 master + Adam m, v [ZERO §3.1] */
	double nd = c->dpcp, ne = c->edp;
	double shard = w->params_dense / nd + w->params_expert / ne;
	k->params = w->params;
	k->weights_bytes = pb * (p->zero >= 3 ? shard : w->params);
	k->grads_bytes = gb * (p->zero >= 2 ? shard : w->params);
	k->optim_bytes = ob * (p->zero >= 1 ? shard : w->params);
	double w_ratio = w->act_mb > 0 ? w->act_w_mb / w->act_mb : 0;
	k->act_inflight = inflight(p, r, c->mb, w_ratio);
	k->act_per_mb_bytes = w->act_mb;
	k->act_bytes = w->act_mb * k->act_inflight;
	k->logits_bytes = w->act_extra;
	double buf = 0;
	if (p->zero >= 3) /* current + prefetched block, unsharded bf16 [PB ZeRO-3] */
		buf += 2 * 2 * w->params / fmax(1, w->layers);
	if (p->tp > 1 && p->sp) /* all-gathered block input */
		buf += 2 * c->act_bytes * c->T * c->m->hidden;
	if (c->dpcp > 1 && p->zero <= 2) /* communication bucket */
		buf += gb * fmin(w->params, fmax(40e6, 1e6 * nd));
	k->buffers_bytes = buf;
	double dyn = k->act_bytes + k->logits_bytes + k->buffers_bytes;
	k->overhead_bytes = h->overhead_bytes + (h->frag_factor - 1) * dyn;
	k->peak_bytes = k->weights_bytes + k->grads_bytes + k->optim_bytes + dyn + k->overhead_bytes;
	k->live_bytes = k->peak_bytes - (h->frag_factor - 1) * dyn;
}

int estimate_plan(const struct model *m, const struct hw *h, const struct plan *p,
		  struct estimate *e, char *err)
{
	struct ectx c;
	memset(e, 0, sizeof(*e));
	if (ectx_init(&c, m, h, p, err)) return -1;
	struct layer_cost dense, moe;
	layer_cost(&c, 0, &dense);
	if (model_is_moe(m)) layer_cost(&c, 1, &moe);
	else moe = dense;

	/* per pipeline rank work; ranks with identical work form one kind */
	int np = p->pp;
	struct rank_work wstack[64], *w = wstack;
	struct rank_work wbig[1];
	(void)wbig;
	if (np > 64) np = 64; /* stages beyond 64 are middle stages identical in shape; sampled */
	int sample[64];
	for (int i = 0; i < np; i++)
		sample[i] = p->pp <= 64 ? i : (i == np - 1 ? p->pp - 1 : (int)((double)i * (p->pp - 1) / (np - 1)));
	for (int i = 0; i < np; i++) rank_work(&c, sample[i], &dense, &moe, &w[i]);

	double t_p2p = 0;
	if (p->pp > 1) {
		double bytes = c.act_bytes * c.T * m->hidden / (p->sp && p->tp > 1 ? p->tp : 1);
		t_p2p = coll_time(h, COLL_SENDRECV, bytes, 2, c.pp_cross ? 2 : 1);
	}
	double pp_exposed;
	double span = pipeline_span(p, c.mb, w, np, t_p2p, &pp_exposed);
	/* with more than 64 stages, sum-based terms scale with the true count */
	if (p->pp > 64 && (p->schedule == SCHED_1F1B || p->schedule == SCHED_AFAB)) {
		double sum = 0;
		for (int i = 0; i < np; i++) sum += w[i].F + w[i].B + w[i].W;
		span += sum / np * (p->pp - np);
	}

	double step = 0, tail_max = 0, opt_max = 0;
	double ideal_min = 1e300;
	e->m = c.mb;
	e->nkinds = 0;
	for (int i = 0; i < np; i++) {
		struct rank_est k;
		memset(&k, 0, sizeof(k));
		k.stage = sample[i];
		k.layers = w[i].layers;
		rank_memory(&c, sample[i], &w[i], &k);
		double busy = c.mb * (w[i].F + w[i].B + w[i].W);
		k.compute_s = busy - c.mb * (w[i].tp_s + w[i].cp_s + w[i].ep_s);
		k.recompute_s = c.mb * w[i].rc_s;
		k.tp_comm_s = c.mb * w[i].tp_s;
		k.cp_comm_s = c.mb * w[i].cp_s;
		k.ep_comm_s = c.mb * w[i].ep_s;
		k.pp_comm_s = pp_exposed;
		dp_time(&c, &w[i], &k.dp_comm_s, &k.dp_exposed_s);
		/* stage r finishes its last backward ~r backward-steps before stage 0 (1F1B), so
		 * its DP tail hides behind the drain */
		double slack = p->pp > 1 ? sample[i] * (w[i].B + w[i].W) : 0;
		double tail = fmax(0, k.dp_exposed_s - slack);
		double pb = p->zero >= 1 ? 1.0 / (c.dpcp) : 1.0;
		k.optimizer_s = elem_t(&c, 36.0 * k.params * pb) + 4 * h->kernel_overhead_s;
		k.bubble_s = fmax(0, span - pp_exposed - busy);
		k.overhead_s = h->step_overhead_s;
		k.step_s = span + tail + k.optimizer_s + k.overhead_s;
		k.t_f = w[i].F; k.t_b = w[i].B; k.t_w = w[i].W; k.t_p2p = t_p2p;
		if (tail > tail_max) tail_max = tail;
		if (k.optimizer_s > opt_max) opt_max = k.optimizer_s;
		if (busy < ideal_min) ideal_min = busy;
		k.ranks = p->gpus / p->pp;
		/* kinds: first stage, last stage, and the middle stage with the highest peak memory
		 * standing for all middle stages (times differ little between middles; memory does) */
		int slot = i == 0 ? 0 : i == np - 1 ? (np > 2 ? 2 : 1) : 1;
		if (slot >= e->nkinds) {
			e->kind[slot] = k;
			e->nkinds = slot + 1;
		} else if (slot == 1 && np > 2 && i != np - 1) {
			int ranks = e->kind[1].ranks + k.ranks;
			if (k.peak_bytes > e->kind[1].peak_bytes) e->kind[1] = k;
			e->kind[1].ranks = ranks;
		}
	}
	if (np > 2 && e->nkinds == 3 && e->kind[1].ranks == 0) e->nkinds = 2;
	if (np > 2) /* sampled middle stages stand for all of them */
		e->kind[1].ranks = p->gpus / p->pp * (p->pp - 2);
	step = span + tail_max + opt_max + h->step_overhead_s;
	int nst = plan_stages(p);
	for (int j = 0; j < e->nkinds; j++) {
		struct rank_est *k = &e->kind[j];
		k->step_s = step;
		if (e->nkinds == 1) snprintf(k->label, sizeof(k->label), p->pp > 1 ? "all stages" : "all ranks");
		else if (k->stage == 0) snprintf(k->label, sizeof(k->label), "first stage");
		else if (k->stage == p->pp - 1) snprintf(k->label, sizeof(k->label), "last stage");
		else snprintf(k->label, sizeof(k->label), "middle stages");
		if (k->peak_bytes > e->peak_mem_bytes) e->peak_mem_bytes = k->peak_bytes;
		if (k->live_bytes > e->live_peak_bytes) e->live_peak_bytes = k->live_bytes;
		double exp = k->tp_comm_s + k->cp_comm_s + k->ep_comm_s + k->pp_comm_s + k->dp_exposed_s;
		if (exp > e->exposed_comm_s) e->exposed_comm_s = exp;
	}
	(void)nst;
	e->step_time_s = step;
	e->tokens_per_step = (double)p->gbs * p->seq;
	e->tokens_per_s = e->tokens_per_step / step;
	e->tokens_per_s_per_gpu = e->tokens_per_s / p->gpus;
	e->model_flops_per_step = model_flops_per_token(m, p->seq, 1) * e->tokens_per_step;
	double hw_ratio = 0, mdl = 0;
	for (int i = 0; i < np; i++) { hw_ratio += w[i].flops_hw; mdl += w[i].flops_model; }
	e->hw_flops_per_step = e->model_flops_per_step * (mdl > 0 ? hw_ratio / mdl : 1);
	double peak = p->precision == PREC_FP8 ? h->peak_fp8_flops : h->peak_bf16_flops;
	(void)peak;
	/* MFU against the dense bf16 peak, as Megatron and the Playbook report it [KOR §6.3] */
	e->mfu = e->model_flops_per_step / (step * p->gpus * h->peak_bf16_flops);
	e->hfu = e->hw_flops_per_step / (step * p->gpus * h->peak_bf16_flops);
	/* device memory the caching allocator cannot use, so max_memory_reserved never shows it:
	 * the CUDA context, and NCCL's channel buffers, allocated per communicator on its first
	 * collective, linear in the channel count and flat beyond two nodes [NVIDIA/nccl#986]
	 * (1.6 GB for one all-reduce communicator, about 6 GB with three [NVIDIA/nccl#864];
	 * 3.3 GB for one all-to-all communicator on 8×H100 [NVIDIA/nccl#1685]). A rank uses the
	 * world communicator (loss, logging) and one per parallel group larger than one. */
	e->nccl_comms = 1 + (p->tp > 1) + (p->pp > 1) + (p->cp > 1) + (p->dp > 1) + (p->ep > 1) + (p->ep > 1 && c.edp > 1);
	e->nonpool_bytes = h->context_bytes + e->nccl_comms * h->nccl_comm_bytes;
	e->capacity_bytes = h->hbm_bytes - e->nonpool_bytes;
	e->fits = e->peak_mem_bytes <= e->capacity_bytes;
	e->bubble_fraction = ideal_min > 0 ? fmax(0, span - pp_exposed - ideal_min) / ideal_min : 0;
	double worst = -1;
	for (int j = 0; j < e->nkinds; j++)
		if (e->kind[j].dp_exposed_s + e->kind[j].optimizer_s > worst) {
			worst = e->kind[j].dp_exposed_s + e->kind[j].optimizer_s;
			e->worst_kind = j;
		}
	return 0;
}
