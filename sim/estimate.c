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
#include "sim/hw_share.h"
#include "sim/layer_cost.h"
#include "sim/layout.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/schedule.h"
#include "sim/util.h"

/* What the loss moves through HBM and holds per logit of the rank's vocabulary shard, by how it
 * runs (plan key loss). Bytes are summed over the passes each kernel makes: a whole row of a
 * 128k vocabulary does not fit in a block's shared memory (227 KB on Hopper, 163 KB on A100),
 * so PyTorch's log-softmax reads it three times (max, sum of exponentials, the write pass:
 * cunn_SoftMaxForward, aten/src/ATen/native/cuda/SoftMax.cu; a row that fits is cached and
 * read once, which these counts do not model) and its backward twice (the gradient's sum,
 * then gradient and output). The GEMM's own write of the logits is priced with the GEMM. */
struct loss_cost {
	double io_f, io_b; /* forward, backward */
	double held;       /* at the loss's peak (plan loss_bytes overrides it) */
};
static const struct loss_cost loss_kinds[LOSS_COUNT] = {
	/* vocab-parallel: Megatron's _VocabParallelCrossEntropy on the .float() logits (megatron/
	 * core/tensor_parallel/cross_entropy.py; before Megatron-Core mpu/cross_entropy.py) and
	 * nanotron's _ShardedCrossEntropy (sharded_cross_entropy(dtype=torch.float)): the upcast
	 * 2+4, max 4, subtract 4+4, exp in place 4+4, sum 4, divide in place 4+4 = 38; backward
	 * the softmax scaled by the loss gradient in place 4+4 and the upcast's gradient back
	 * to bf16 4+2 = 14; holds the bf16 logits and the fp32 softmax, 2+4 */
	[LOSS_VOCAB_PARALLEL] = {38, 14, 6},
	/* eager: F.cross_entropy(logits.float(), labels): the upcast 2+4, log_softmax 3x4 read +
	 * 4 written = 22; backward nll_loss's zero-filled fp32 gradient 4, log_softmax's
	 * backward 2x4 + 4 read + 4 written, the upcast's gradient 4+2 = 26; holds 12 (the
	 * log-probabilities and the two fp32 gradients, torchtitan's profile) */
	[LOSS_EAGER] = {22, 26, 12},
	/* loss-parallel: the same under DTensor's loss_parallel on vocabulary-sharded logits
	 * (torch/distributed/tensor/parallel/loss.py _log_softmax, _nll_loss_and_log_softmax_
	 * backward), decomposed into separate ops: the upcast 2+4, amax 4, subtract 4+4,
	 * exp 4+4, sum 4, subtract 4+4 = 38; backward a zero fp32 gradient 4, exp of the
	 * log-probabilities 4+4, their sum 8+4, scaled by the loss gradient 4+4, the upcast's
	 * gradient 4+2 = 38; holds the log-probabilities, the zero gradient, and two of exp, the
	 * sum and the product at once, 4x4 */
	[LOSS_PARALLEL] = {38, 38, 16},
	/* eager-bf16: F.cross_entropy on bf16 logits (NeMo AutoModel's MaskedCrossEntropy with
	 * fp32_upcast false): log_softmax 3x2 read + 2 written = 8; backward the zero-filled
	 * gradient 2 and log_softmax's backward 2x2 + 2 read + 2 written = 10; holds the bf16
	 * logits, log-probabilities and gradient, 3x2. (Under TP MaskedCrossEntropy gathers the
	 * whole vocabulary first, full_tensor(), which the rank's shard here does not price.) */
	[LOSS_EAGER_BF16] = {8, 10, 6},
	/* compiled: inductor fuses the upcast, the log-softmax and the target's gather into
	 * reductions over the bf16 logits (max, then the sum of exponentials: two reads, 4) and
	 * its backward into one pass that reads them and writes their bf16 gradient (4); holds
	 * the logits and the gradient, 2+2 */
	[LOSS_COMPILED] = {4, 4, 4},
};

/* which pipeline stages a pipeline rank holds: one per chunk (DualPipe: chunk = direction) */
static int rank_stages(const struct plan *p, int r, int *st)
{
	const struct sched_family *f = sched_family(p->schedule);
	int n = sched_chunks(f, p->vpp);
	for (int c = 0; c < n; c++) st[c] = f->stage(p->pp, r, c, f->ndirs > 1 ? c : 0);
	return n;
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
		w->B += k * (lc->rc + lc->rc_tp + lc->rc_ep);
		w->tp_s += k * lc->rc_tp;
		w->ep_s += k * lc->rc_ep;
		w->rc_s += k * lc->rc;
		w->act_mb += k * (p->recompute == RC_OP ? lc->act_op : lc->act_full);
		/* the block being back-propagated holds its recomputed tensors too */
		if (p->recompute == RC_OP && n > 0 && lc->act_full > w->act_extra) w->act_extra = lc->act_full;
		if (n > 0 && lc->act_rc > w->act_extra) w->act_extra = lc->act_rc;
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
	int nd = sched_family(p->schedule)->ndirs;
	if (nd > 1) {
		/* each micro-batch visits only one of the rank's stages (one per direction) */
		w->F /= nd; w->B /= nd; w->W /= nd;
		w->tp_s /= nd; w->cp_s /= nd; w->ep_s /= nd; w->rc_s /= nd;
		w->flops_model /= nd; w->flops_hw /= nd;
	}
	double t = p->tp, T = c->T, H = m->hidden, E = c->act_bytes;
	double V = ceil(m->vocab / (128.0 * t)) * 128.0 * t; /* padded vocabulary [MCODE] */
	if (w->has_embed) {
		w->params += embedding_params(m) / t;
		w->params_dense += embedding_params(m) / t;
		w->F += elem_t(c, 2 * E * T * H);
		w->B += elem_t(c, 4 * E * T * H);
		w->F += c->tp_embed_f; w->B += c->tp_embed_b; w->tp_s += c->tp_embed_f + c->tp_embed_b;
	}
	if (w->has_head) {
		/* final norm + LM head GEMM + vocab-parallel cross-entropy over fp32 logits */
		double hp = (m->tied ? (double)V * H : head_params(m)) / t + H;
		if (!(m->tied && w->has_embed)) { w->params += hp; w->params_dense += hp; }
		double g = gemm_t(c, T, V / t, H, 1);
		const struct loss_cost *lk = &loss_kinds[p->loss];
		w->F += g + elem_t(c, T * V / t * lk->io_f) + elem_t(c, 4 * E * T * H);
		w->B += g + elem_t(c, T * V / t * lk->io_b);
		w->W += g;
		w->flops_model += 6 * T * H * V / t;
		w->flops_hw += 6 * T * H * V / t;
		/* the loss's logits, one micro-batch, at their peak at the start of the backward; the
		 * recomputed block's tensors (act_extra so far) come after the head's backward has
		 * freed them, so the two transients never coexist and the larger one counts */
		double held = p->loss_bytes ? p->loss_bytes : lk->held;
		w->act_extra = fmax(w->act_extra, held * T * V / t);
		w->F += c->tp_head_f; w->B += c->tp_head_b; w->tp_s += c->tp_head_f + c->tp_head_b;
	}
	/* a framework that accumulates outside the weight-gradient GEMM reads each parameter's
	 * 16-bit gradient and the fp32 buffer and writes the buffer back after every micro-batch's
	 * backward (nanotron's FP32GradientAccumulator: add_ per parameter after loss.backward());
	 * Megatron's gradient-accumulation fusion does it inside the GEMM. Until that pass the
	 * 16-bit gradients are all live: autograd allocates each parameter's .grad during the
	 * backward (torch DDP, without gradient_as_bucket_view, copies it into its bucket and keeps
	 * it) and the accumulator frees them only after loss.backward() returns
	 * (FP32GradientAccumulator.backward, nanotron optim/gradient_accumulator.py). So a
	 * micro-batch's backward peaks at its start (its activations and the loss) or at its end
	 * (every gradient, its activations freed), whichever is larger; the other micro-batches in
	 * flight are held through both */
	if (plan_accum_pass(p)) {
		w->W += elem_t(c, w->params * (E + 4.0 + 4.0));
		w->act_extra = fmax(w->act_extra, E * w->params - w->act_mb);
	}
}

/* pipeline span of one step given every pipeline rank's per-micro-batch F, B, W: the
 * schedule's closed form over the slowest rank */
static double pipeline_span(const struct plan *p, int mb, const struct rank_work *w, int np,
			    double t_p2p, double *pp_exposed)
{
	struct sched_span_in in = {.pp = p->pp, .v = p->vpp, .mb = mb, .np = np, .t_p2p = t_p2p,
				   .overlap_p2p = p->overlap_p2p};
	for (int r = 0; r < np; r++) {
		double T = w[r].F + w[r].B + w[r].W;
		if (T > in.Tmax) { in.Tmax = T; in.Fm = w[r].F; in.Bm = w[r].B; in.Wm = w[r].W; }
		in.sum += T;
	}
	return sched_family(p->schedule)->span(&in, pp_exposed);
}

/* where rank 0's group of kind g sits: its units at every tier of the fabric. The plan's
 * gpus_per_node (a run may state its own) is the NVLink domain; a higher tier's unit is the
 * profile's, rounded up to whole nodes. */
static void group_span(const struct layout *l, enum group_kind g, const struct hw *h, struct span *s)
{
	s->n = layout_group_size(l, g);
	int node = l->gpus_per_node;
	for (int t = 0; t < HW_MAX_TIERS; t++) {
		int u = t == 0 ? node : t < h->ntiers ? h->tier[t].gpus : 0;
		if (t > 0 && u > 0 && u % node) u = (u / node + 1) * node;
		s->units[t] = u > 0 ? layout_group_units(l, g, u) : 1;
	}
}

/* The TP collectives around the blocks, once per micro-batch, on the b·s·h activation: the
 * vocab-parallel embedding sums its partial lookups (an all-reduce; with SP a reduce-scatter,
 * whose backward all-gathers the gradient); the column-parallel head gathers its SP-sharded
 * input (backward: a reduce-scatter, and the re-gather of its input with tp_regather) or,
 * without SP, all-reduces its input gradient; the vocab-parallel cross-entropy all-reduces the
 * maximum logit, the target's logit and the sum of exponentials, one fp32 each per token
 * [MCODE VocabParallelEmbedding, ColumnParallelLinear, cross_entropy.py; nanotron
 * TensorParallelEmbedding, column_linear, _ShardedCrossEntropy] */
static void tp_outside_blocks(struct ectx *c)
{
	const struct plan *p = c->p;
	if (p->tp <= 1) return;
	double S = c->act_bytes * c->T * c->m->hidden;
	double ar = ectx_coll_time(c, COLL_ALLREDUCE, S, &c->tp_g);
	double ce = 3 * ectx_coll_time(c, COLL_ALLREDUCE, 4.0 * c->T, &c->tp_g);
	if (p->sp) {
		double ag = ectx_coll_time(c, COLL_ALLGATHER, S, &c->tp_g);
		double rs = ectx_coll_time(c, COLL_REDUCESCATTER, S, &c->tp_g);
		c->tp_embed_f = rs;
		c->tp_embed_b = ag;
		c->tp_head_f = ce + ag;
		c->tp_head_b = rs + (p->tp_regather ? ag : 0);
	} else {
		c->tp_embed_f = ar;
		c->tp_head_f = ce;
		c->tp_head_b = ar;
	}
}

/* NCCL's buffers for one communicator over g: the connections of every algorithm its
 * collectives pick (NCCL connects an algorithm at its first use, profiles/comm/nccl.json
 * "connections"), on each of the fabric's channels, and its send/recv peers' connections on
 * the channels NCCL gives a peer (all of them inside an NVLink domain; nccl_p2p_net_channels
 * when the communicator spans domains, since NCCL takes the fewest over its peers), network
 * peers sharing one pool ("p2p_net_shared_kib_per_channel") */
struct comm_use {
	int n;                      /* collectives below */
	enum coll coll[2];
	double bytes;               /* a typical message */
	int peers;                  /* send/recv peers (no collective) */
};

static double comm_bytes(const struct ectx *c, const struct span *g, const struct comm_use *u)
{
	const struct hw *h = c->h;
	const struct coll_lib *L = &h->lib;
	if (g->n <= 1) return 0;
	int used[ALGO_COUNT] = {0};
	for (int i = 0; i < u->n; i++) {
		int a;
		ectx_coll(c, u->coll[i], u->bytes, g, &a);
		if (a < ALGO_COUNT) used[a] = 1;
	}
	double conns = used[ALGO_RING] * L->conns[ALGO_RING] + used[ALGO_TREE] * L->conns[ALGO_TREE];
	if (used[ALGO_PAT]) conns += L->conns[ALGO_PAT] * ceil(log2(g->n));
	double b = conns * h->nccl_channels * h->nccl_conn_bytes;
	if (used[ALGO_NVLS]) b += L->nvls_head_bytes * (g->n < h->gpus_per_node ? g->n : h->gpus_per_node);
	if (u->peers > 0) {
		/* a rank at the edge of its NVLink domain: its peers inside the domain have P2P
		 * connections on every channel a peer gets; those across the network share one pool
		 * per direction on each of the communicator's channels (net.cc shared buffers) */
		int k = g->units[0] > 1 ? g->units[0] : 1, per_domain = g->n / k;
		int local = u->peers - (k > 1);
		if (local > per_domain - 1) local = per_domain - 1;
		int ch = h->nccl_channels;
		if (k > 1) /* the fewest over the peers, halved until every peer fits one round of
			    * 8 per channel (paths.cc ncclTopoComputeP2pChannels) */
			for (ch = h->nccl_p2p_net_channels; ch > 1 && ch * ((g->n + 7) / 8) > h->nccl_channels;) ch /= 2;
		b += (double)(local > 0 ? local : 0) * ch * L->conns[ALGO_P2P] * h->nccl_conn_bytes;
		if (k > 1) b += 2.0 * h->nccl_channels * L->p2p_net_shared_bytes;
	}
	return b;
}

static int span_eq(const struct span *a, const struct span *b)
{
	if (a->n != b->n) return 0;
	for (int t = 0; t < HW_MAX_TIERS; t++)
		if (a->units[t] != b->units[t]) return 0;
	return 1;
}

double ectx_coll(const struct ectx *c, enum coll k, double bytes, const struct span *g, int *algo)
{
	struct coll_memo *mm = c->memo;
	*algo = coll_default_algo(k);
	if (g->n <= 1 || bytes <= 0) return 0; /* as coll_fit_time, before looking the group up */
	struct coll_fit *f = NULL, tmp;
	for (int i = 0; i < mm->n && !f; i++)
		if (mm->f[i].c == k && span_eq(&mm->f[i].g, g)) f = &mm->f[i];
	if (!f) {
		f = mm->n < (int)(sizeof(mm->f) / sizeof(mm->f[0])) ? &mm->f[mm->n++] : &tmp;
		coll_fit_init(c->h, k, g, f);
	}
	return coll_fit_time(c->h, f, bytes, algo);
}

/* what the caching allocator may grow to: HBM less what it cannot use */
static void pool_capacity(struct ectx *c)
{
	const struct model *m = c->m;
	const struct hw *h = c->h;
	const struct plan *p = c->p;
	/* device memory the caching allocator cannot use, so max_memory_reserved never shows it:
	 * the CUDA context, and NCCL's buffers, allocated per communicator for what it runs. A
	 * rank uses the world communicator (loss, logging) and one per parallel group larger than
	 * one, and the model-parallel (tp x pp) group over which the gradient norm is all-reduced,
	 * a communicator of its own even when it has the ranks of another (Megatron
	 * parallel_state's model-parallel group, clip_grad_norm_fp32; nanotron's mp_pg) */
	int gpn = p->gpus_per_node > 0 ? p->gpus_per_node : h->gpus_per_node;
	struct span world = span_nodes(p->gpus, (p->gpus + gpn - 1) / gpn);
	struct span mp = span_nodes(p->tp * p->pp, c->tp_g.units[0] * c->pp_g.units[0]);
	double act = c->act_bytes * c->T * m->hidden, bucket = 4 * fmax(40e6, 1e6 * c->dpcp);
	struct comm_use scalar = {1, {COLL_ALLREDUCE}, 8, 0};
	struct comm_use tp = p->sp ? (struct comm_use){2, {COLL_REDUCESCATTER, COLL_ALLGATHER}, act, 0}
				   : (struct comm_use){1, {COLL_ALLREDUCE}, act, 0};
	struct comm_use dp = p->zero >= 1 ? (struct comm_use){2, {COLL_REDUCESCATTER, COLL_ALLGATHER}, bucket, 0}
					  : (struct comm_use){1, {COLL_ALLREDUCE}, bucket, 0};
	struct comm_use pp = {0, {0}, 0, p->pp > 2 ? 2 : 1}, cp = {0, {0}, 0, p->cp > 2 ? 2 : 1};
	struct comm_use ep = {0, {0}, 0, p->ep - 1};
	double nccl = comm_bytes(c, &world, &scalar);
	c->nccl_comms = p->gpus > 1;
	struct { int on; const struct span *g; const struct comm_use *u; } comms[] = {
		{p->tp > 1, &c->tp_g, &tp},
		{p->pp > 1, &c->pp_g, &pp},
		{p->cp > 1, &c->cp_g, &cp},
		{c->dpcp > 1, &c->dpcp_g, &dp},
		{p->ep > 1, &c->ep_g, &ep},
		{p->ep > 1 && c->edp > 1, &c->edp_g, &dp},
		{model_is_moe(m) && c->etp > 1 && c->etp != p->tp, &c->etp_g, &tp},
		{(long)p->tp * p->pp > 1, &mp, &scalar},
	};
	for (size_t i = 0; i < sizeof(comms) / sizeof(comms[0]); i++)
		if (comms[i].on) {
			nccl += comm_bytes(c, comms[i].g, comms[i].u);
			c->nccl_comms++;
		}
	c->pool_capacity = h->hbm_bytes - h->context_bytes - nccl;
}

static int ectx_init(struct ectx *c, struct coll_memo *memo, const struct model *m, const struct hw *h,
		     const struct plan *p, char *err)
{
	struct layout l;
	memset(c, 0, sizeof(*c));
	c->m = m; c->h = h; c->p = p;
	memo->n = 0;
	c->memo = memo;
	if (layout_init(&l, p, err)) return -1;
	c->mb = plan_microbatches(p);
	c->T = (double)p->mbs * p->seq / p->cp;
	c->gemm_peak = p->precision == PREC_FP8 ? h->peak_fp8_flops : p->precision == PREC_FP32 ? h->peak_bf16_flops / 2 : h->peak_bf16_flops;
	c->gemm_eff_max = p->precision == PREC_FP8 && h->gemm_eff_fp8 > 0 ? h->gemm_eff_fp8 : h->gemm_eff;
	c->act_bytes = p->precision == PREC_FP32 ? 4 : 2;
	group_span(&l, GROUP_TP, h, &c->tp_g);
	group_span(&l, GROUP_CP, h, &c->cp_g);
	group_span(&l, GROUP_DPCP, h, &c->dpcp_g);
	group_span(&l, GROUP_EP, h, &c->ep_g);
	group_span(&l, GROUP_EDP, h, &c->edp_g);
	group_span(&l, GROUP_PP, h, &c->pp_g);
	c->pp_cross = p->pp > 1 && c->pp_g.units[0] > 1;
	c->dpcp = p->dp * p->cp;
	c->etp = p->etp > 0 ? p->etp : p->tp;
	c->edp = p->tp * c->dpcp / (p->ep * c->etp);
	/* the experts' grid lays etp innermost over the stage's ranks, as the TP group is laid:
	 * an expert-TP group is etp consecutive ranks of one TP group, on its share of the TP
	 * group's nodes */
	c->etp_g = c->etp == p->tp ? c->tp_g : span_nodes(c->etp, c->tp_g.units[0] * c->etp / p->tp);
	tp_outside_blocks(c);
	pool_capacity(c);
	return 0;
}

/* torch DDP's bucket_cap_mb default (torch.nn.parallel.DistributedDataParallel docs) */
#define DDP_BUCKET_BYTES (25.0 * 1048576)

/* Host ops of a ZeRO-0/1 sync done tensor by tensor (plan.h dp_host_copies), per step, over
 * n = dp x cp ranks: DDP buckets of gradients in the parameters' dtype (B of them), T parameter
 * tensors (each block's fused QKV, O, fused gate|up, down and two norms; the embedding, final
 * norm and head). ZeRO-0's all_reduce_coalesced copies each tensor back out of its bucket's
 * flat buffer: B + T. ZeRO-1: reduce_scatter_coalesced flattens each rank's slice of a bucket
 * into its own buffer (n per bucket) and copies the T shards back; all_gather_coalesced
 * flattens the n output buffers, the list-form all_gather copies its result into them (n), and
 * every parameter's slice is copied out of every rank's buffer (n x T): n·B + T + 2n + n·T. */
static double dp_host_ops(const struct ectx *c, const struct rank_work *w)
{
	double n = c->dpcp;
	double tensors = w->layers * (6.0 + (c->m->qkv_bias ? 1 : 0)) + w->has_embed + 2.0 * w->has_head;
	double buckets = ceil(w->params * c->act_bytes / DDP_BUCKET_BYTES);
	if (c->p->zero == 0) return buckets + tensors;
	return n * buckets + tensors + 2 * n + n * tensors;
}

/* DP / ZeRO communication of one pipeline rank: total and exposed, per step, and of the exposed
 * what runs on the compute stream (*copies), which no pipeline drain hides */
static void dp_time(const struct ectx *c, const struct rank_work *w, double *total, double *exposed, double *copies)
{
	const struct plan *p = c->p;
	const struct hw *h = c->h;
	double gb = p->fp32_grads || p->precision == PREC_FP32 ? 4 : 2, pb = c->act_bytes;
	double gd = w->params_dense * gb, ge = w->params_expert * gb;
	double pd = w->params_dense * pb, pe = w->params_expert * pb;
	int n = c->dpcp, ne = c->edp;
	double bwd_mb = w->B + w->W, fwd_mb = w->F;
	double t_red, t_ag = 0;
	*total = *exposed = *copies = 0;
	if (n <= 1 && ne <= 1) return;
	if (p->zero == 0)
		t_red = ectx_coll_time(c, COLL_ALLREDUCE, gd, &c->dpcp_g) + ectx_coll_time(c, COLL_ALLREDUCE, ge, &c->edp_g);
	else
		t_red = ectx_coll_time(c, COLL_REDUCESCATTER, gd, &c->dpcp_g) + ectx_coll_time(c, COLL_REDUCESCATTER, ge, &c->edp_g);
	if (p->zero >= 1)
		t_ag = ectx_coll_time(c, COLL_ALLGATHER, pd, &c->dpcp_g) + ectx_coll_time(c, COLL_ALLGATHER, pe, &c->edp_g);
	/* the last bucket cannot overlap; Megatron's bucket is max(40M, 1M·dp) params [TV-G4] */
	double bucket = fmax(40e6, 1e6 * n) / fmax(1, w->params);
	double tail = t_red * fmin(1, bucket);
	/* every ZeRO stage prices the two switches alike: a gradient reduction hides behind the
	 * backward only with overlap_grad_reduce (all but its last bucket), a parameter gather
	 * behind the forward only with overlap_param_gather; without them the collective runs
	 * between the compute. What hides still slows the compute under it (hw_overlap_cost) */
	double red_exp = p->overlap_grad_reduce ? tail + hw_overlap_cost(h, t_red - tail, bwd_mb) : t_red;
	double ag_exp = p->overlap_param_gather ? hw_overlap_cost(h, t_ag, fwd_mb) : t_ag;
	/* eager copies the host launches one by one, in the step's critical path (the hooks run
	 * in backward's autograd thread, the gather after the optimizer step) */
	double hc = p->dp_host_copies && p->zero <= 1 ? dp_host_ops(c, w) * h->host_op_s : 0;
	/* FSDP2 copies each all-gather's flat output into the parameters' own tensors
	 * (foreach_all_gather_copy_out: split_with_sizes_copy, read and write in the parameter
	 * dtype) and the unsharded gradients into the reduce-scatter's input, cast to the reduce
	 * dtype (foreach_reduce: _chunk_cat), both on the compute stream, before and after the
	 * collective (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py): once per gather
	 * and per reduction counted below */
	int fc = p->fsdp_copies && p->zero >= 2;
	double cp_ag = fc ? elem_t(c, 2 * pb * w->params) : 0, cp_rs = fc ? elem_t(c, (pb + gb) * w->params) : 0;
	if (p->zero <= 1 || (p->zero == 2 && !p->reduce_per_mb)) {
		/* once per step: ZeRO-0/1, and ZeRO-2 whose gradients accumulate in a full buffer
		 * (Megatron's distributed optimizer) */
		*copies = cp_ag + cp_rs;
		*total = t_red + t_ag + hc;
		*exposed = red_exp + ag_exp + hc;
	} else if (p->zero == 2) {
		/* gradients reduce-scattered every micro-batch [ZERO §5.2], params gathered once. The
		 * reductions run on a side stream the next micro-batch does not wait for (FSDP's
		 * reduce-scatter stream, DeepSpeed's overlap_comm reduction stream), so only the last
		 * micro-batch's final bucket is left after the compute; the others' last buckets
		 * run under the next micro-batch */
		*copies = cp_ag + c->mb * cp_rs;
		*total = c->mb * t_red + t_ag;
		double mid = p->overlap_grad_reduce ? hw_overlap_cost(h, t_red, bwd_mb) : t_red;
		*exposed = (c->mb - 1) * mid + red_exp + ag_exp;
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
		double g = ectx_coll_time(c, COLL_ALLGATHER, pd / L, &c->dpcp_g) + ectx_coll_time(c, COLL_ALLGATHER, pe / L, &c->edp_g);
		double rs = ectx_coll_time(c, COLL_REDUCESCATTER, gd / L, &c->dpcp_g) + ectx_coll_time(c, COLL_REDUCESCATTER, ge / L, &c->edp_g);
		if (p->zero3_gather_gbps > 0) { /* the framework's own rate bounds them (plan.h) */
			double rate = p->zero3_gather_gbps * 1e9;
			g = fmax(g, (pd / L * coll_busbw_factor(COLL_ALLGATHER, n) + pe / L * coll_busbw_factor(COLL_ALLGATHER, ne)) / rate);
			rs = fmax(rs, (gd / L * coll_busbw_factor(COLL_REDUCESCATTER, n) + ge / L * coll_busbw_factor(COLL_REDUCESCATTER, ne)) / rate);
		}
		double f_l = fwd_mb / L, b_l = bwd_mb / L;
		*copies = c->mb * (2 * cp_ag + cp_rs);
		*total = c->mb * L * (2 * g + rs);
		/* a collective running under a block's compute takes SMs and memory bandwidth from
		 * it (hw_overlap_cost). Only the switched-on kinds overlap (go, ro); the others run
		 * between the blocks */
		double go = p->overlap_param_gather ? g : 0, ro = p->overlap_grad_reduce ? rs : 0;
		double ef = g + (L - 1) * (g - go + hw_overlap_cost(h, go, f_l));
		double eb = g + rs + (L - 1) * (g - go + rs - ro + hw_overlap_cost(h, go + ro, b_l));
		*exposed = c->mb * (ef + eb);
	}
	/* the copies run between the compute, in the step whatever overlaps */
	*total += *copies;
	*exposed += *copies;
}

/* bytes per parameter of the weights a rank holds: FP8 through Transformer Engine keeps the
 * bf16 weights and caches their FP8 row- and column-wise copies for the step (2 bytes;
 * is_first_microbatch, TE linear.py), or with FP8 primary weights (fp8_params) only the two FP8
 * copies; torchao casts on the fly and keeps none [frameworks.md §3.4] */
static double weight_bytes(const struct plan *p)
{
	if (p->precision == PREC_FP32) return 4;
	if (p->precision != PREC_FP8 || p->fp8_impl == FP8_TORCHAO) return 2;
	return p->fp8_params ? 2 : 4;
}

/* The caching allocator's pool outgrows the live tensors when blocks of other sizes are
 * allocated and freed among the activations every micro-batch: a freed block is split for a
 * smaller request and blocks of different segments never merge [frameworks.md §1.2]. A
 * micro-batch's activations alone come back in the same sizes and order, and best fit hands
 * each its old block again. The parameter-shaped churn comes from frameworks that allocate
 * a 16-bit gradient for every parameter in each backward and free it after adding it into
 * the fp32 buffer (grad_accum_pass: nanotron's FP32GradientAccumulator), and from sharded
 * data parallelism, which gathers parameters into fresh buffers and reduces gradients
 * through buckets block by block during the backward (ZeRO-2/3: DeepSpeed's reduce buckets
 * and partitions, FSDP's unshard and reduce-scatter buffers). Megatron's contiguous gradient
 * buffer, written by the weight-gradient GEMM (gradient-accumulation fusion) and reduced once
 * per step, and its distributed optimizer's shards of it (ZeRO-1) have none: its pool is its
 * live tensors. */
static int param_churn(const struct plan *p)
{
	return plan_accum_pass(p) || p->zero >= 2;
}

/* When the pool would outgrow the device, the allocator frees every cached segment that is
 * wholly free and retries (release_cached_blocks in c10/cuda/CUDACachingAllocator.cpp; a split
 * segment goes back only when nothing in it is in use) [frameworks.md §1.2-1.3]. Whether that
 * leaves the plan running depends on what pins the free space:
 * - expandable segments: release_blocks unmaps the pages of every free block, so the pool
 *   shrinks to what is live;
 * - sharded data parallelism's churn (ZeRO-2/3): its parameter-shaped blocks live only through
 *   their block (the gathered parameters, the unsharded gradients until their reduce-scatter),
 *   are requests of 10 MiB and more that get a segment of their own, and are freed every block,
 *   those on FSDP's all-gather and reduce-scatter streams out of reach of the compute stream's
 *   requests (a cached block serves only its stream) — their segments are wholly free whenever
 *   they are not in use, and go back;
 * - nanotron's 16-bit gradients (plan_accum_pass), allocated among the backward's freed
 *   activations and held to its end, split those segments and pin them: the fragmentation
 *   stays and the plan runs out of memory (the Playbook's OOM rows whose live tensors fit).
 * A plan whose free space goes back runs as long as its live tensors fit, and its pool then
 * peaks at the device's capacity. */
static int pool_releasable(const struct plan *p)
{
	return p->allocator == ALLOC_EXPANDABLE || !plan_accum_pass(p);
}

double estimate_pool_peak(const struct plan *p, double live, double pool, double capacity)
{
	if (pool_releasable(p) && live <= capacity && pool > capacity) return capacity;
	return pool;
}

double estimate_frag_factor(const struct hw *h, const struct plan *p)
{
	if (!param_churn(p)) return 1;
	return p->allocator == ALLOC_EXPANDABLE ? h->frag_expandable : h->frag_native;
}

/* the factor on dynamic memory that must fit the device (estimate_pool_peak): 1 where the
 * free space goes back under pressure, else the fragmentation allowance */
double estimate_fit_factor(const struct hw *h, const struct plan *p)
{
	return pool_releasable(p) ? 1 : estimate_frag_factor(h, p);
}

/* Parameters of the largest single weight a rank computes with: the fused QKV projection, the
 * output projection, one dense FFN matrix, one expert matrix (TP-sharded; experts by expert TP) */
static double largest_module(const struct ectx *c)
{
	const struct model *m = c->m;
	double H = m->hidden, qd = (double)m->heads * m->head_dim, kvd = (double)m->kv_heads * m->head_dim;
	double t = c->p->tp, big = fmax(H * (qd + 2 * kvd), qd * H) / t;
	if (m->ffn_hidden > 0) big = fmax(big, H * m->ffn_hidden / t);
	if (m->moe_experts > 0) big = fmax(big, H * m->moe_ffn_hidden / c->etp);
	return big;
}

static void rank_memory(const struct ectx *c, int r, const struct rank_work *w, struct rank_est *k)
{
	const struct plan *p = c->p;
	const struct hw *h = c->h;
	double gb = p->fp32_grads || p->precision == PREC_FP32 ? 4 : 2;
	double ob = p->precision == PREC_FP32 ? 8 : 12; /* fp32 master + Adam m, v [ZERO §3.1] */
	if (p->bf16_states && p->precision != PREC_FP32) {
		/* a model built in bf16 keeps no fp32 master; torch's Adam makes its moments in the
		 * parameter's dtype, and FSDP2 stores the reduced gradient shard in it too */
		gb = 2;
		ob = 4;
	}
	double nd = c->dpcp, ne = c->edp;
	double shard = w->params_dense / nd + w->params_expert / ne;
	/* gradients are sharded under ZeRO-3, and under ZeRO-2 when they are reduce-scattered
	 * every micro-batch; accumulated over the step (Megatron's buffer) they are whole */
	int grads_sharded = p->zero >= 3 || (p->zero == 2 && p->reduce_per_mb);
	k->params = w->params;
	double wb = weight_bytes(p);
	if (p->shard_master && p->zero >= 3 && ob == 12) {
		/* PyTorch FSDP keeps no 16-bit shard: the sharded parameter is the fp32 master the
		 * optimizer steps, cast to the param dtype only into each all-gather's input (FSDP2's
		 * foreach_all_gather; FSDP1's _mp_shard, freed after the all-gather); the 16-bit
		 * parameters exist unsharded, in the gathered blocks counted below */
		wb += 4 - 2;
		ob = 8;
	}
	k->weights_bytes = wb * (p->zero >= 3 ? shard : w->params);
	k->grads_bytes = gb * (grads_sharded ? shard : w->params);
	/* torch DDP allocates a flat bucket for every parameter's gradient at construction, in the
	 * parameters' dtype, and copies .grad into it unless gradient_as_bucket_view is set
	 * (Reducer::initialize_buckets); a framework wrapping its model in DDP with the default
	 * keeps that copy beside its own fp32 buffer (nanotron trainer.py, dp*cp > 1) */
	if (p->ddp_buckets && c->dpcp > 1) k->grads_bytes += c->act_bytes * w->params;
	k->optim_bytes = ob * (p->zero >= 1 ? shard : w->params);
	double w_ratio = w->act_mb > 0 ? w->act_w_mb / w->act_mb : 0;
	/* activations in flight at the peak, in micro-batches through all of this rank's layers
	 * (model.md §2.3) */
	k->act_inflight = sched_family(p->schedule)->inflight(p->pp, p->vpp, r, c->mb, w_ratio);
	k->act_per_mb_bytes = w->act_mb;
	k->act_bytes = w->act_mb * k->act_inflight;
	k->logits_bytes = w->act_extra;
	double buf = 0;
	if (p->zero >= 3) {
		/* current + prefetched block, unsharded bf16 [PB ZeRO-3]; a framework that fetches
		 * module by module keeps at most its live-parameter limit gathered, and always the
		 * largest module it computes with (DeepSpeed's own estimate: the largest layer's
		 * parameters, gathered and their gradient, memory.rst; frameworks.md §7) */
		double blocks = 2 * w->params / fmax(1, w->layers);
		if (p->zero3_live_params > 0)
			blocks = fmin(blocks, fmax(p->zero3_live_params, largest_module(c)));
		buf += 2 * blocks;
	}
	if (p->tp > 1 && p->sp) /* all-gathered block input */
		buf += 2 * c->act_bytes * c->T * c->m->hidden;
	if (c->dpcp > 1 && p->zero <= 2) /* communication bucket */
		buf += gb * fmin(w->params, fmax(40e6, 1e6 * nd));
	if (p->pp > 1 && p->pp_recv != RECV_NONE) {
		/* torch.distributed.pipelining gives every local stage a receive buffer per micro-batch
		 * for its input (not the first stage) and for its output's gradient (not the last),
		 * made once and kept (stage.py _prepare_forward_infra, _setup_backward_recv_info);
		 * NeMo AutoModel's recv_buffer_pool rebinds them onto a ring of (pp - stage) + 2 under
		 * 1F1B (at least 2, at most the micro-batches) and keeps torch's under any other
		 * schedule, whose in-flight depth it cannot bound. A stage input is sequence-sharded
		 * under SP. The inputs of the micro-batches in flight are already the first layer's
		 * saved input, so only the others are added (about: the rank's in-flight count spread
		 * evenly over its chunks). */
		int st[PLAN_MAX_STAGES], ns = rank_stages(p, r, st), last = plan_stages(p) - 1, pred = 0, succ = 0;
		for (int i = 0; i < ns; i++) {
			pred += st[i] != 0;
			succ += st[i] != last;
		}
		double sets = c->mb;
		if (p->pp_recv == RECV_RING && p->schedule == SCHED_1F1B) sets = fmin(c->mb, fmax(2, p->pp - r + 2));
		double S = c->act_bytes * c->T * c->m->hidden / (p->sp ? p->tp : 1);
		k->recv_bytes = S * (pred * fmax(0, sets - k->act_inflight) + succ * sets);
	}
	k->buffers_bytes = buf;
	/* what is allocated and freed every step; the receive buffers, made once, do not churn */
	double dyn = k->act_bytes + k->logits_bytes + k->buffers_bytes;
	/* live tensors (max_memory_allocated), then the caching allocator's reserved pool: its
	 * fragmentation allowance on what is allocated and freed every step */
	k->live_bytes = rank_est_kept_bytes(k) + dyn + h->workspace_bytes;
	k->peak_bytes = estimate_pool_peak(p, k->live_bytes, k->live_bytes + (estimate_frag_factor(h, p) - 1) * dyn,
					   c->pool_capacity);
	k->overhead_bytes = h->workspace_bytes + k->peak_bytes - k->live_bytes;
}

/* span of one step's pipeline (bubble and exposed P2P included) over the sampled ranks */
static double step_span(const struct ectx *c, const struct rank_work *w, int np, double *t_p2p,
			double *pp_exposed)
{
	const struct plan *p = c->p;
	*t_p2p = 0;
	if (p->pp > 1) {
		double bytes = c->act_bytes * c->T * c->m->hidden / (p->sp && p->tp > 1 ? p->tp : 1);
		/* without SP every TP rank holds the whole output; scatter/gather sends each rank's
		 * 1/tp over its own link and all-gathers it on the receiving stage's TP group [MEG
		 * §4.1; model.md TV-M5], in forward and backward alike */
		int sg = p->pp_scatter_gather && p->tp > 1 && !p->sp;
		struct span pair = span_nodes(2, c->pp_cross ? 2 : 1);
		if (c->pp_cross) /* a neighbour in another unit of every tier the pipeline group spans */
			for (int t = 1; t < HW_MAX_TIERS; t++) pair.units[t] = c->pp_g.units[t] > 1 ? 2 : 1;
		*t_p2p = ectx_coll_time(c, COLL_SENDRECV, sg ? bytes / p->tp : bytes, &pair);
		if (sg) *t_p2p += ectx_coll_time(c, COLL_ALLGATHER, bytes, &c->tp_g);
	}
	double span = pipeline_span(p, c->mb, w, np, *t_p2p, pp_exposed);
	/* with more than 64 stages, sum-based terms scale with the true count */
	if (p->pp > 64 && (sched_family(p->schedule)->flags & SCHED_F_SPAN_SUMS)) {
		double sum = 0;
		for (int i = 0; i < np; i++) sum += w[i].F + w[i].B + w[i].W;
		span += sum / np * (p->pp - np);
	}
	return span;
}

/* memory and time of pipeline rank r; *tail is its DP communication left exposed after the
 * pipeline drains. Returns the rank's busy time per step (its ops, communication inside them) */
static double rank_kind(const struct ectx *c, int r, const struct rank_work *w, double span,
		      double pp_exposed, double t_p2p, struct rank_est *k, double *tail)
{
	const struct plan *p = c->p;
	const struct hw *h = c->h;
	memset(k, 0, sizeof(*k));
	k->stage = r;
	k->layers = w->layers;
	rank_memory(c, r, w, k);
	double busy = c->mb * (w->F + w->B + w->W);
	k->compute_s = busy - c->mb * (w->tp_s + w->cp_s + w->ep_s);
	k->recompute_s = c->mb * w->rc_s;
	k->tp_comm_s = c->mb * w->tp_s;
	k->cp_comm_s = c->mb * w->cp_s;
	k->ep_comm_s = c->mb * w->ep_s;
	k->pp_comm_s = pp_exposed;
	double copies;
	dp_time(c, w, &k->dp_comm_s, &k->dp_exposed_s, &copies);
	/* stage r finishes its last backward ~r backward-steps before stage 0 (1F1B), so its DP
	 * tail hides behind the drain; copies on the compute stream do not */
	double slack = p->pp > 1 ? r * (w->B + w->W) : 0;
	*tail = fmax(0, k->dp_exposed_s - copies - slack) + copies;
	double pb = p->zero >= 1 ? 1.0 / (c->dpcp) : 1.0;
	/* fused Adam reads weight, gradient, m, v and writes three of them back (+ the bf16 copy of
	 * an fp32 master): 36 B per parameter in fp32 states, 14 B in bf16 ones, a few kernels.
	 * torch.optim's foreach AdamW makes a pass per op (_multi_tensor_adam): the decoupled decay
	 * p *= 1 - lr*wd (2 accesses), m.lerp_(g) (3), v *= beta2 (2), v.addcmul_(g, g) (3), sqrt(v)
	 * into a temporary (2), its division (2) and eps (2), p.addcdiv_(m, tmp) (4): 20 accesses of
	 * a state element, 80 B in fp32, 40 in bf16; the bf16 copy an FSDP2 master needs is made by
	 * the all-gather, not here */
	int bf = p->bf16_states && p->precision != PREC_FP32;
	double opt_b = p->optimizer == OPT_FOREACH ? 20.0 * (bf ? 2 : 4) : (bf ? 14.0 : 36.0);
	k->optimizer_s = elem_t(c, opt_b * k->params * pb) + 4 * h->host_op_s;
	k->bubble_s = fmax(0, span - pp_exposed - busy);
	k->overhead_s = h->step_overhead_s;
	k->step_s = span + *tail + k->optimizer_s + k->overhead_s;
	k->t_f = w->F; k->t_b = w->B; k->t_w = w->W; k->t_p2p = t_p2p;
	k->ranks = p->gpus / p->pp;
	return busy;
}

/* kinds: first stage, last stage, and the middle stage with the highest peak memory standing
 * for all middle stages (times differ little between middles; memory does); i-th of np
 * sampled ranks */
static void add_kind(struct estimate *e, int i, int np, const struct rank_est *k)
{
	int slot = i == 0 ? 0 : i == np - 1 ? (np > 2 ? 2 : 1) : 1;
	if (slot >= e->nkinds) {
		e->kind[slot] = *k;
		e->nkinds = slot + 1;
	} else if (slot == 1 && np > 2 && i != np - 1) {
		int ranks = e->kind[1].ranks + k->ranks;
		if (k->peak_bytes > e->kind[1].peak_bytes) e->kind[1] = *k;
		e->kind[1].ranks = ranks;
	}
}

/* the step time every kind shares, labels, and the worst-rank peaks */
static void finish_kinds(struct estimate *e, const struct plan *p, int np, double step)
{
	if (np > 2 && e->nkinds == 3 && e->kind[1].ranks == 0) e->nkinds = 2;
	if (np > 2) /* sampled middle stages stand for all of them */
		e->kind[1].ranks = p->gpus / p->pp * (p->pp - 2);
	double worst = -1;
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
		if (k->dp_exposed_s + k->optimizer_s > worst) {
			worst = k->dp_exposed_s + k->optimizer_s;
			e->worst_kind = j;
		}
	}
}

/* throughput, FLOPs and utilisation of the step; the memory the pool may grow to */
static void step_totals(const struct ectx *c, const struct rank_work *w, int np, double step,
			struct estimate *e)
{
	const struct model *m = c->m;
	const struct hw *h = c->h;
	const struct plan *p = c->p;
	e->step_time_s = step;
	e->tokens_per_step = (double)p->gbs * p->seq;
	e->tokens_per_s = e->tokens_per_step / step;
	e->tokens_per_s_per_gpu = e->tokens_per_s / p->gpus;
	e->model_flops_per_step = model_flops_per_token(m, p->seq, 1) * e->tokens_per_step;
	double hw_ratio = 0, mdl = 0;
	for (int i = 0; i < np; i++) { hw_ratio += w[i].flops_hw; mdl += w[i].flops_model; }
	e->hw_flops_per_step = e->model_flops_per_step * (mdl > 0 ? hw_ratio / mdl : 1);
	/* MFU against the dense bf16 peak, as Megatron and the Playbook report it [KOR §6.3] */
	e->mfu = e->model_flops_per_step / (step * p->gpus * h->peak_bf16_flops);
	e->hfu = e->hw_flops_per_step / (step * p->gpus * h->peak_bf16_flops);
	e->nccl_comms = c->nccl_comms;
	e->nonpool_bytes = h->hbm_bytes - c->pool_capacity;
	e->capacity_bytes = c->pool_capacity;
	e->fits = e->peak_mem_bytes <= e->capacity_bytes;
}

int estimate_plan(const struct model *m, const struct hw *h, const struct plan *p,
		  struct estimate *e, char *err)
{
	struct ectx c;
	struct coll_memo memo;
	memset(e, 0, sizeof(*e));
	if (ectx_init(&c, &memo, m, h, p, err)) return -1;
	struct layer_cost dense, moe;
	layer_cost(&c, 0, &dense);
	if (model_is_moe(m)) layer_cost(&c, 1, &moe);
	else moe = dense;

	/* per pipeline rank work; stages beyond 64 are middle stages identical in shape, sampled */
	int np = p->pp > 64 ? 64 : p->pp;
	struct rank_work w[64];
	int sample[64];
	for (int i = 0; i < np; i++)
		sample[i] = p->pp <= 64 ? i : (i == np - 1 ? p->pp - 1 : (int)((double)i * (p->pp - 1) / (np - 1)));
	for (int i = 0; i < np; i++) rank_work(&c, sample[i], &dense, &moe, &w[i]);

	double t_p2p, pp_exposed;
	double span = step_span(&c, w, np, &t_p2p, &pp_exposed);
	double tail_max = 0, opt_max = 0, ideal_min = 1e300;
	e->m = c.mb;
	for (int i = 0; i < np; i++) {
		struct rank_est k;
		double tail;
		double busy = rank_kind(&c, sample[i], &w[i], span, pp_exposed, t_p2p, &k, &tail);
		if (tail > tail_max) tail_max = tail;
		if (k.optimizer_s > opt_max) opt_max = k.optimizer_s;
		if (busy < ideal_min) ideal_min = busy;
		add_kind(e, i, np, &k);
	}
	double step = span + tail_max + opt_max + h->step_overhead_s;
	finish_kinds(e, p, np, step);
	step_totals(&c, w, np, step, e);
	e->bubble_fraction = ideal_min > 0 ? fmax(0, span - pp_exposed - ideal_min) / ideal_min : 0;
	return hw_share_adjust(m, h, p, e, NULL, err); /* CPU ranks sharing cores (sim/hw_share.h) */
}

int estimate_prepared(const struct model *m, const struct hw *h, struct plan *p, struct estimate *e,
		      char *err)
{
	if (plan_prepare(p, m, h, err)) return -1;
	return estimate_plan(m, h, p, e, err);
}
