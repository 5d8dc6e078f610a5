/* What the framework-behaviour keys of a plan cost, each against an independent count: the
 * accumulation pass after every micro-batch's backward (grad_accum_pass), torch DDP's gradient
 * buckets (ddp_buckets), bf16 model states (bf16_states), SP's backward re-gather
 * (tp_regather), an eager SwiGLU (glu_eager), an uncompiled torchtitan block (eager_block), SP's reordering copies on a batch-first layout (tp_seq_copies), cuDNN's fused attention (attn_cudnn), the loss's implementation and its bytes per logit (loss, loss_bytes), the allocator giving its free space back under pressure (expandable segments, or native ones that no held gradients pin), host-side copies of ZeRO-0/1 syncs (dp_host_copies), FSDP2's copies around its collectives (fsdp_copies), PyTorch FSDP's fp32 shard without a 16-bit copy (shard_master), PyTorch context parallel's fp32 merges (cp_fp32_merge), K and V repeated to the query heads (kv_repeat), nanotron's attention layout copies (qkv_copies), torch.optim's foreach Adam (optimizer), ZeRO-3 fetching module by module (zero3_live_params) and the pipeline's receive buffers (pp_recv). The frameworks that set them say why in profiles/frameworks. */
#include "tests/estimate_check.h"

/* An accumulation pass after each micro-batch's backward (nanotron) reads the 16-bit gradient
 * (2 B) and the fp32 buffer (4 B) and writes the buffer (4 B) for every parameter the rank
 * holds, at the HBM bandwidth memory-bound kernels reach: 10 B x params / (hbm x mem_eff) per
 * micro-batch. Until it runs every 16-bit gradient is live (2 B x params), while the
 * micro-batch's own activations have been freed: the backward peaks at the larger of its
 * start (activations A and the loss's transient X) and its end (the gradients), so the live
 * peak grows by max(0, 2 B x params - A - X). The gradients it frees every micro-batch are
 * blocks of other sizes among the activations, so the caching allocator's pool takes its
 * fragmentation allowance (alloc_frag_native - 1) on the memory allocated and freed each step
 * (activations, logits, buffers). Without the pass (Megatron's fused accumulation into a
 * contiguous buffer) the pool is the live tensors. 8B at tp 2 with SP, dp 4, ZeRO-1, 2,048
 * tokens, one stage: at micro-batch 1 the gradients (about 8 GB) outgrow one micro-batch's
 * activations and loss (about 5 GiB); at micro-batch 4 they do not. */
static void test_grad_accum_pass(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate e0, e1;
	const char *mbs[] = {"1", "4"};
	for (int i = 0; i < 2; i++) {
		if (run_off_on(m8, h, KV("gpus", "8", "tp", "2", "sp", "1", "seq", "2048", "gbs", "64", "zero", "1", "mbs", mbs[i]),
			       "grad_accum_pass", &p, &e0, &e1)) return;
		const struct rank_est *k0 = &e0.kind[0], *k = &e1.kind[0];
		double want = (i ? 4 : 16) * k0->params * 10.0 / (h->hbm_bw_bps * h->mem_eff);
		CHECK_REL(e1.step_time_s - e0.step_time_s, want, 1e-9, "accumulation pass: micro-batches x 10 B x params / HBM");
		double held = fmax(0, 2 * k0->params - k0->act_per_mb_bytes - k0->logits_bytes);
		CHECK((i == 0) == (held > 0), "mbs %s: the gradients %s one micro-batch's activations and loss", mbs[i], i ? "stay below" : "outgrow");
		CHECK_REL(e1.live_peak_bytes - e0.live_peak_bytes + 1, held + 1, 1e-9, "the held 16-bit gradients in the live peak");
		double dyn = k->act_bytes + k->logits_bytes + k->buffers_bytes;
		CHECK_REL(e0.peak_mem_bytes, e0.live_peak_bytes, 1e-12, "no churn: the pool is the live tensors");
		CHECK_REL(e1.peak_mem_bytes - e1.live_peak_bytes, (h->frag_native - 1) * dyn, 1e-9,
			  "churn: the pool's allowance on what each step allocates and frees");
	}
}

/* torch DDP's buckets (gradient_as_bucket_view off) hold a bf16 copy of every gradient when
 * the model is data-parallel: 2 B per parameter the rank holds, on top of the fp32 buffer, and
 * nothing without data parallelism (nanotron wraps the model in DDP only for dp*cp > 1). */
static void test_ddp_buckets(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate e0, e1, s0, s1;
	if (run_off_on(m8, h, KV("gpus", "8", "tp", "2", "seq", "4096", "gbs", "64", "zero", "1"), "ddp_buckets", &p, &e0, &e1)) return;
	CHECK_REL(e1.kind[0].grads_bytes - e0.kind[0].grads_bytes, 2 * e0.kind[0].params, 1e-12, "DDP buckets: 2 B x params");
	CHECK_REL(e1.peak_mem_bytes - e0.peak_mem_bytes, 2 * e0.kind[0].params, 1e-12, "DDP buckets count once in the peak (allocated once, no fragmentation)");
	if (run_off_on(m8, h, KV("gpus", "8", "tp", "8", "seq", "4096", "gbs", "64"), "ddp_buckets", &p, &s0, &s1)) return;
	CHECK(s0.peak_mem_bytes == s1.peak_mem_bytes, "no DDP at dp 1");
}

/* A model built in bf16 (no fp32 master) holds 2 B of weights, 2 B of gradients and 2 + 2 B of
 * Adam moments per parameter, against 2 + 4 + 12 with fp32 master and moments [ZERO §3.1]; its
 * optimizer step moves 14 B per parameter (read w, g, m, v; write w, m, v) instead of 36. */
static void test_bf16_states(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate a, b;
	if (run_off_on(m8, h, KV("gpus", "8", "tp", "8", "seq", "4096", "gbs", "8"), "bf16_states", &p, &a, &b)) return;
	double n = a.kind[0].params;
	CHECK_REL(states(&a.kind[0]), 18 * n, 1e-12, "fp32 master and moments: 18 B per parameter");
	CHECK_REL(states(&b.kind[0]), 8 * n, 1e-12, "bf16 weights, gradients and moments: 8 B per parameter");
	double ta = a.kind[0].optimizer_s - 4 * h->host_op_s, tb = b.kind[0].optimizer_s - 4 * h->host_op_s;
	CHECK_REL(tb / ta, 14.0 / 36.0, 1e-9, "optimizer traffic 14 B against 36 B per parameter");
}

/* With SP the QKV and FC1 linears keep their input sharded and all-gather it again in backward
 * [KOR §4.2.2]: two all-gathers of the block's activation S = 2 B x tokens x hidden per layer
 * (and one for the column-parallel head's input),
 * each moving S (n-1)/n over a fabric of bus bandwidth X (the nccl-tests convention) and,
 * without overlap switches, exposed. A framework that keeps the gathered input instead
 * (torchtitan) pays none of them and holds those two inputs whole: 2 x S (1 - 1/tp) more
 * activation bytes per layer. 8B, tp 8 with SP on one node, one micro-batch of 4 x 8192 tokens
 * (enough work per layer that the GPU, not the host launching kernels, sets the time). */
static void test_tp_regather(const struct model *m8, const struct hw *h0)
{
	const double X = 100e9;
	struct hw h;
	ideal_copy(&h, h0, X);
	struct plan p;
	struct estimate e0, e1;
	if (run_off_on(m8, &h, KV("gpus", "8", "tp", "8", "sp", "1", "seq", "8192", "mbs", "4", "gbs", "4"), "tp_regather", &p, &e0, &e1)) return;
	double S = 2.0 * 4 * 8192 * m8->hidden, L = m8->layers;
	CHECK_REL(e1.kind[0].tp_comm_s - e0.kind[0].tp_comm_s, (2 * L + 1) * S * 7 / 8 / X, 1e-9,
		  "SP re-gather: 2 all-gathers of b*s*h per layer in backward, 1 for the head");
	CHECK_REL(e0.kind[0].act_bytes - e1.kind[0].act_bytes, L * 2 * S * (1 - 1.0 / 8), 1e-9,
		  "gathered inputs kept: 2 x b*s*h x (1 - 1/tp) per layer");
	CHECK_REL(e1.kind[0].compute_s, e0.kind[0].compute_s, 1e-9, "the re-gather computes nothing");
}

/* A ZeRO-0/1 sync done tensor by tensor (nanotron's *_coalesced helpers) costs the host one
 * eager op per copy, counted from the helpers' code: with B DDP buckets of 16-bit gradients
 * (25 MiB each, torch DDP's default), T parameter tensors (8B: 32 blocks x 6 + embedding,
 * final norm and head = 195) and n data-parallel ranks, ZeRO-0 copies B + T and ZeRO-1
 * n*B + T + 2n + n*T, all exposed. 8B at tp 2, dp 4. */
static void test_dp_host_copies(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate e[2][2];
	for (int z = 0; z < 2; z++)
		for (int on = 0; on < 2; on++)
			if (run(m8, h, KV("gpus", "8", "tp", "2", "seq", "4096", "gbs", "64", "zero", z ? "1" : "0",
					  "dp_host_copies", on ? "1" : "0"), &p, &e[z][on])) return;
	double n = 4, T = 32 * 6 + 3, B = ceil(e[0][0].kind[0].params * 2 / (25.0 * 1048576));
	CHECK_REL(e[0][1].kind[0].dp_exposed_s - e[0][0].kind[0].dp_exposed_s, (B + T) * h->host_op_s, 1e-9,
		  "ZeRO-0: each bucket's tensors copied back out of its flat buffer");
	CHECK_REL(e[1][1].kind[0].dp_exposed_s - e[1][0].kind[0].dp_exposed_s, (n * B + T + 2 * n + n * T) * h->host_op_s, 1e-9,
		  "ZeRO-1: per-rank flattening of every bucket and per-rank copies of every parameter");
	CHECK_REL(e[1][1].step_time_s - e[1][0].step_time_s, (n * B + T + 2 * n + n * T) * h->host_op_s, 1e-9,
		  "the copies are in the step's critical path");
}

/* A SwiGLU run as two PyTorch ops (act(gate), then the product) keeps act(gate) for the
 * product's backward beside gate|up and the product: one more 2-byte tensor of the
 * intermediate width per token and layer, cut by TP. 8B (intermediate 14336), tp 2, one
 * micro-batch of 4096 tokens: 32 x 4096 x 2 B x 14336 / 2 more activation bytes. Each op also
 * reads and writes HBM: silu 2+2 B, the product 4+2 B, against a fused kernel's 4+2 B per
 * element of the intermediate width, and backward 8 x 2 B against 6 x 2 B: 4 more bytes each
 * way, at the profile's HBM rate (bandwidth x mem_eff). */
static double hbm_s(const struct hw *h, double bytes) { return bytes / (h->hbm_bw_bps * h->mem_eff); }

static void test_glu_eager(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate e0, e1;
	if (run_off_on(m8, h, KV("gpus", "2", "tp", "2", "seq", "4096", "gbs", "1"), "glu_eager", &p, &e0, &e1)) return;
	CHECK_REL(e1.kind[0].act_per_mb_bytes - e0.kind[0].act_per_mb_bytes, 32 * 4096.0 * 2 * 14336 / 2, 1e-9,
		  "eager SwiGLU: act(gate) kept, 2 B x tokens x intermediate / tp per layer");
	CHECK_REL(e1.step_time_s - e0.step_time_s, 32 * hbm_s(h, 2 * 4096.0 * 4 * 14336 / 2), 1e-6,
		  "eager SwiGLU: 4 more bytes per intermediate element forward and backward");
}

/* torchtitan's block without compile, op by op (models/norms.py, models/llama/model.py at
 * 9dec370): RMSNorm x.float() 2+4, pow 4+4, mean 4, multiply 4+4, type_as 4+2, weight 2+2 =
 * 36 B per element forward, its autograd backward 8 (weight) + 6 (cast) + 16 (multiply) + 4
 * (mean) + 12 (pow) + 12 (the two gradients summed) + 6 (cast) = 64, against a fused 4 and 8;
 * apply_rotary_emb 6 + 8 + 6 = 20 B per element of q and k each way, against 4 and 8; the
 * output's .contiguous() reads and writes 2048 wide, forward only (repeat_kv is kv_repeat's). 8B at tp 2 without SP (norms over the whole
 * 4096 width), one micro-batch of 4096 tokens, 32 layers. */
static void test_eager_block(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate e0, e1;
	if (run_off_on(m8, h, KV("gpus", "2", "tp", "2", "seq", "4096", "gbs", "1"), "eager_block", &p, &e0, &e1)) return;
	double q = 2048, kv = 512, H = 4096;
	double fwd = 2 * (36 - 4) * H + (20 - 4) * (q + kv) + 4 * q;
	double bwd = 2 * (64 - 8) * H + (20 - 8) * (q + kv);
	CHECK_REL(e1.step_time_s - e0.step_time_s, 32 * (hbm_s(h, 4096 * fwd) + hbm_s(h, 4096 * bwd)), 1e-6,
		  "eager block: the norms', rotary embedding's and copies' traffic");
	CHECK_REL(e1.kind[0].act_per_mb_bytes, e0.kind[0].act_per_mb_bytes, 1e-12, "traffic keeps no tensor");
}

/* SP through PyTorch's functional collectives on the sequence dimension of a [b, s, h] tensor
 * (torchtitan's Shard(1)): all_gather_tensor gathers into dimension 0 and torch.cat's the
 * chunks into place, reduce_scatter_tensor cat's its input's chunks first: one more read and
 * write of the whole gathered tensor (2 + 2 B per element) for each of the block's two
 * all-gathers and two reduce-scatters forward, and of their transposes backward. 8B at tp 2
 * with SP, 4096 tokens, 32 layers: 32 x 2 x 4096 x 4 x 4 B x 4096 at the HBM rate; without SP
 * the all-reduces need no reordering. With torchao's FP8 the forward gathers move 1-byte
 * inputs: 2 x 2 x 1 + 2 x 2 x 2 = 12 B per hidden element forward, 16 backward. */
static void test_tp_seq_copies(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate e0, e1;
	if (run_off_on(m8, h, KV("gpus", "2", "tp", "2", "sp", "1", "seq", "4096", "gbs", "1"), "tp_seq_copies", &p, &e0, &e1)) return;
	CHECK_REL(e1.step_time_s - e0.step_time_s, 32 * 2 * hbm_s(h, 4096.0 * 16 * 4096), 1e-6,
		  "SP on the sequence dim: a copy of the gathered tensor per collective");
	if (run_off_on(m8, h, KV("gpus", "2", "tp", "2", "sp", "1", "seq", "4096", "gbs", "1", "precision", "fp8", "fp8_impl", "torchao"), "tp_seq_copies", &p, &e0, &e1)) return;
	CHECK_REL(e1.step_time_s - e0.step_time_s, 32 * (hbm_s(h, 4096.0 * 12 * 4096) + hbm_s(h, 4096.0 * 16 * 4096)), 1e-6,
		  "FP8 (torchao): the forward gathers copy 1-byte inputs");
	if (run_off_on(m8, h, KV("gpus", "2", "tp", "2", "seq", "4096", "gbs", "1"), "tp_seq_copies", &p, &e0, &e1)) return;
	CHECK_REL(e1.step_time_s, e0.step_time_s, 1e-12, "without SP nothing is reordered");
}

/* Attention through cuDNN's fused kernel runs the same FLOPs at the profile's attn_eff_cudnn
 * instead of FlashAttention-2's attn_eff. 8B (32 layers, 32 heads of 128), one GPU, one
 * micro-batch of 4096 causal tokens: each layer's attention forward is 2 x 32 x 4096 x 2048 x
 * (128 + 128) FLOPs, its backward 2.5 times that at 0.75 of the forward's rate, so the step
 * shortens by 32 x fwd x (1 + 2.5 / 0.75) x (1/attn_eff - 1/attn_eff_cudnn) / peak. A profile
 * without a cuDNN figure (A100) keeps FlashAttention-2's. */
static void test_attn_cudnn(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate e0, e1, a0, a1;
	if (run_off_on(m8, h, KV("gpus", "1", "seq", "4096", "gbs", "1"), "attn_cudnn", &p, &e0, &e1)) return;
	double fwd = 2.0 * 32 * 4096 * 2048 * 256;
	double want = 32 * fwd * (1 + 2.5 / 0.75) * (1 / h->attn_eff - 1 / h->attn_eff_cudnn) / h->peak_bf16_flops;
	CHECK(h->attn_eff_cudnn > h->attn_eff, "h100-sxm has a cuDNN attention figure above FlashAttention-2's");
	CHECK_REL(e0.step_time_s - e1.step_time_s, want, 1e-9, "cuDNN attention: the same FLOPs at attn_eff_cudnn");
	struct hw a;
	char err[ERR_LEN] = "";
	if (hw_load("a100-sxm-80g", &a, err)) { CHECK(0, "a100-sxm-80g: %s", err); return; }
	if (run_off_on(m8, &a, KV("gpus", "1", "seq", "4096", "gbs", "1"), "attn_cudnn", &p, &a0, &a1)) return;
	CHECK(a0.step_time_s == a1.step_time_s, "no attn_eff_cudnn in the profile: FlashAttention-2's rate");
}

/* The loss holds its kind's bytes per logit of one micro-batch at its peak, and moves its
 * kind's bytes per logit through HBM: 8B at tp 8, 4096 tokens, the vocabulary 128256 padded to
 * a multiple of 128 x tp = 129024 (Megatron's make-vocab-size-divisible-by). Counted op by op
 * from the implementations, for rows too wide for shared memory (PyTorch's log-softmax then
 * reads a row three times and writes it once, its backward reads the gradient twice and the
 * output once and writes once; the kinds' frameworks run 128k-wide rows): Megatron's vocab-parallel cross-entropy on fp32
 * logits: upcast 2+4, max 4, subtract 8, exp 8, sum 4, divide 8 = 38 forward, the in-place
 * scale 8 and the upcast's gradient 6 = 14 backward; F.cross_entropy on bf16 logits: 3x2 + 2
 * = 8 forward, a zero-filled gradient 2 and 3x2 + 2 = 10 backward. 52 - 18 = 34 B a logit at
 * the HBM rate memory-bound kernels reach, in each of the step's 8 micro-batches. */
static void test_loss_kind(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate e0, e1, eb;
	double V = 129024, logits = 4096 * V / 8;
	if (run(m8, h, KV("gpus", "8", "tp", "8", "seq", "4096", "gbs", "8"), &p, &e0)) return;
	CHECK(p.loss == LOSS_VOCAB_PARALLEL && p.loss_bytes == 0, "the default loss is Megatron's vocab-parallel cross-entropy");
	CHECK_REL(e0.kind[0].logits_bytes, 6 * logits, 1e-12, "it holds the bf16 logits and the fp32 softmax, 6 B a logit");
	if (run(m8, h, KV("gpus", "8", "tp", "8", "seq", "4096", "gbs", "8", "loss", "eager-bf16"), &p, &eb)) return;
	CHECK_REL(e0.step_time_s - eb.step_time_s, 8 * 34 * logits / (h->hbm_bw_bps * h->mem_eff), 1e-9,
		  "vocab-parallel fp32 against eager bf16: 34 B more a logit through HBM, 8 micro-batches");
	if (run(m8, h, KV("gpus", "8", "tp", "8", "seq", "4096", "gbs", "8", "loss_bytes", "12"), &p, &e1)) return;
	CHECK_REL(e1.kind[e1.nkinds - 1].logits_bytes - e0.kind[e0.nkinds - 1].logits_bytes, 6 * logits, 1e-12,
		  "loss_bytes 12 stated: 6 B more per token and vocabulary entry of the rank's shard");
	CHECK(e1.step_time_s == e0.step_time_s, "a stated loss_bytes moves memory, not time");
	/* under full recompute the backward re-runs one block's forward, whose tensors (one
	 * layer's full activations: a 32-layer model's activations without recompute over 32)
	 * are live only after the head's backward has freed the loss's: the larger counts */
	struct estimate none, lo, hi;
	if (run(m8, h, KV("gpus", "8", "tp", "8", "seq", "4096", "gbs", "8", "recompute", "none"), &p, &none)) return;
	if (run(m8, h, KV("gpus", "8", "tp", "8", "seq", "4096", "gbs", "8", "recompute", "full", "loss_bytes", "1"), &p, &lo)) return;
	if (run(m8, h, KV("gpus", "8", "tp", "8", "seq", "4096", "gbs", "8", "recompute", "full", "loss_bytes", "64"), &p, &hi)) return;
	double layer = none.kind[0].act_per_mb_bytes / 32;
	CHECK(logits < layer && 64 * logits > layer, "the two cases bracket one layer's activations");
	CHECK_REL(lo.kind[0].logits_bytes, layer, 1e-12, "1 B a logit: the recomputed block's tensors are the larger");
	CHECK_REL(hi.kind[0].logits_bytes, 64 * logits, 1e-12, "64 B a logit: the loss's are, alone");
}

/* FSDP2 copies every all-gather's flat output into the parameters (2 B read, 2 B written per
 * bf16 parameter) and the unsharded bf16 gradients into the reduce-scatter's fp32 input (2 + 4
 * B) on the compute stream. ZeRO-3 gathers before each micro-batch's forward and again before
 * its backward and reduce-scatters after it: 2 x 4 + 6 = 14 B per parameter the rank holds per
 * micro-batch, 2 micro-batches; ZeRO-2 reducing every micro-batch gathers once a step: 4 + 2 x 6
 * = 16 B. At ZeRO-1 (no FSDP) the key moves nothing. */
static void test_fsdp_copies(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate a, b;
	const char *z[] = {"3", "2", "1"};
	const char *what[] = {"ZeRO-3: 2 micro-batches x (2 gathers x 4 B + 6 B)", "ZeRO-2: one gather, 2 reductions", ""};
	double want_b[] = {2 * 14, 4 + 2 * 6};
	for (int i = 0; i < 3; i++) {
		if (run_off_on(m8, h, KV("gpus", "8", "zero", z[i], "seq", "4096", "gbs", "16", "reduce_per_mb", "1"), "fsdp_copies", &p, &a, &b)) return;
		if (i == 2) {
			CHECK(a.step_time_s == b.step_time_s, "ZeRO-1 does not run through FSDP2: no copies");
			break;
		}
		CHECK_REL(b.step_time_s - a.step_time_s, want_b[i] * a.kind[0].params / (h->hbm_bw_bps * h->mem_eff), 1e-9, what[i]);
	}
}

/* PyTorch FSDP's shard is the fp32 parameter the optimizer steps, with no 16-bit copy at rest:
 * under ZeRO-3 over 8 ranks a rank holds 4 (fp32 parameter) + 4 (fp32 gradient) + 8 (Adam m, v)
 * = 16 B per parameter / 8, against DeepSpeed's 2 (bf16 partition) + 4 + 12 (fp32 master, m,
 * v) = 18 [ZERO §3.1]. ZeRO-2 keeps the unsharded bf16 parameters from forward to backward
 * either way, and a bf16-built model has no master to drop. */
static void test_shard_master(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate a, b;
	const char *z[] = {"3", "2", "3"}, *bf[] = {"0", "0", "1"};
	for (int i = 0; i < 3; i++) {
		if (run_off_on(m8, h, KV("gpus", "8", "zero", z[i], "seq", "4096", "gbs", "8", "fp32_grads", "1", "bf16_states", bf[i]), "shard_master", &p, &a, &b)) return;
		double n = a.kind[0].params;
		if (i == 0) {
			CHECK_REL(states(&a.kind[0]), 18 * n / 8, 1e-12, "ZeRO-3, 16-bit partition: 18 B per parameter / 8");
			CHECK_REL(states(&b.kind[0]), 16 * n / 8, 1e-12, "ZeRO-3, fp32 shard only: 16 B per parameter / 8");
			CHECK(a.live_peak_bytes - b.live_peak_bytes > 0, "the shard that is not there is not live");
		} else {
			CHECK_REL(states(&b.kind[0]), states(&a.kind[0]), 1e-12, i == 1 ? "ZeRO-2: the same states" : "bf16 states: no master to drop");
		}
	}
}

/* PyTorch's context parallel merges each ring step in fp32 beside the flash kernels
 * (torch/distributed/tensor/experimental/_attention.py). Llama 3 8B, cp 4 on 4 GPUs, one
 * sequence of 32768 tokens: a rank holds 8192 tokens, its attention output O is 8192 x 4096
 * elements and its K and V 2 x 8192 x 1024. Counted from the code for the group's last rank
 * (every step a whole-query one): forward, per O element the first upcast 2 + 4 B, three merges
 * of 6 + 12 + 8 + 12 B and the downcast 4 + 2 = 126 B, per K/V element three cats of 2 + 2 = 12
 * B; backward, per O element the fp32 zeros 4, four grad_q adds of 4 + 2 + 4 and the downcast 6
 * = 50 B, per K/V element the zeros 4, three cats 12, the first add 10, three chunked adds and
 * re-cats 3 x 13, four fp32 cats 32 and the downcast 6 = 103 B. 32 layers, no recompute, one
 * micro-batch: the step grows by that traffic at the HBM streaming rate. */
static void test_cp_fp32_merge(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate a, b;
	if (run_off_on(m8, h, KV("gpus", "4", "cp", "4", "seq", "32768", "gbs", "1", "recompute", "none"), "cp_fp32_merge", &p, &a, &b)) return;
	double o = 8192.0 * 4096, kv = 2 * 8192.0 * 1024;
	double bytes = 32 * (o * (126 + 50) + kv * (12 + 103));
	CHECK_REL(b.step_time_s - a.step_time_s, bytes / (h->hbm_bw_bps * h->mem_eff), 1e-9,
		  "cp 4: 176 B per output element and 115 per K/V element a layer");
	if (run_off_on(m8, h, KV("gpus", "4", "seq", "8192", "gbs", "4"), "cp_fp32_merge", &p, &a, &b)) return;
	CHECK(a.step_time_s == b.step_time_s, "without context parallelism there is nothing to merge");
}

/* torchtitan repeats K and V to the query heads before SDPA (repeat_kv). Llama 3 8B at tp 2:
 * K and V are 512 wide per rank, the query 2048. Without CP, one micro-batch of 4096 tokens, no
 * recompute: the copy reads 512 and writes 2048 of each of K and V forward and sums the
 * gradients back in backward, 2 x 2 B x (512 + 2048) per token each way, 32 layers; the kernel
 * saves K and V at 2048, 2 x 2 B x (2048 - 512) more per token and layer. With cp 4 and the fp32
 * merges (test_cp_fp32_merge's count, 115 B per K/V element a layer) the merges run on the
 * repeated K and V: 2 x 8192 x 4096 elements instead of 2 x 8192 x 1024. */
static void test_kv_repeat(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate a, b;
	if (run_off_on(m8, h, KV("gpus", "2", "tp", "2", "seq", "4096", "gbs", "1", "recompute", "none"), "kv_repeat", &p, &a, &b)) return;
	double copy = 4096.0 * 2 * 2 * (512 + 2048);
	CHECK_REL(b.step_time_s - a.step_time_s, 32 * 2 * hbm_s(h, copy), 1e-6, "repeat_kv: a copy each way");
	CHECK_REL(b.kind[0].act_per_mb_bytes - a.kind[0].act_per_mb_bytes, 32 * 4096.0 * 2 * 2 * (2048 - 512), 1e-9,
		  "the kernel saves the repeated K and V");
	/* with CP and the repeat on, the fp32 merges on and off: their bytes are counted over the
	 * repeated K and V */
	if (run_off_on(m8, h, KV("gpus", "4", "cp", "4", "seq", "32768", "gbs", "1", "recompute", "none", "kv_repeat", "1"), "cp_fp32_merge", &p, &a, &b)) return;
	double o = 8192.0 * 4096, kv = 2 * 8192.0 * 4096;
	CHECK_REL(b.step_time_s - a.step_time_s, hbm_s(h, 32 * (o * (126 + 50) + kv * (12 + 103))), 1e-9,
		  "cp 4: the fp32 merges run on the repeated K and V");
	struct model mha = *m8;
	mha.kv_heads = mha.heads;
	if (run_off_on(&mha, h, KV("gpus", "1", "seq", "4096", "gbs", "1"), "kv_repeat", &p, &a, &b)) return;
	CHECK(a.step_time_s == b.step_time_s, "with as many K/V heads as query heads there is nothing to repeat");
}

/* nanotron's attention block copies its tensors into the kernels' layouts. Llama 3 8B at tp 2:
 * q 2048 and K/V 512 wide per rank. The QKV permute reads and writes 2048 + 2 x 512, the K/V
 * stack and its permute 2 x 512 each: 2 B x 2 x (3072 + 2 x 1024) = 20,480 B per token forward,
 * as much backward, 32 layers of 4096 tokens. With two sequences of 4096 the O projection's
 * input is copied too: 2 B x 2 x 2048 more per token each way. */
static void test_qkv_copies(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate a, b;
	if (run_off_on(m8, h, KV("gpus", "2", "tp", "2", "seq", "4096", "gbs", "1"), "qkv_copies", &p, &a, &b)) return;
	CHECK_REL(b.step_time_s - a.step_time_s, 32 * 2 * hbm_s(h, 4096.0 * 20480), 1e-6, "the QKV permute and the K/V packing, each way");
	CHECK_REL(b.kind[0].act_per_mb_bytes, a.kind[0].act_per_mb_bytes, 1e-12, "the copies keep no tensor");
	if (run_off_on(m8, h, KV("gpus", "2", "tp", "2", "seq", "4096", "gbs", "2", "mbs", "2"), "qkv_copies", &p, &a, &b)) return;
	CHECK_REL(b.step_time_s - a.step_time_s, 32 * 2 * hbm_s(h, 8192.0 * (20480 + 8192)), 1e-6, "two sequences: the output's copy as well");
}

/* torch.optim's foreach AdamW makes a pass per op over the states: decay 2, lerp 3, scale 2,
 * addcmul 3, sqrt 2, divide 2, add eps 2, addcdiv 4 = 20 accesses of a state element, 80 B a
 * parameter in fp32 against the fused kernel's 36 B (read w, g, m, v, write w, m, v, and the
 * bf16 copy), 40 B against 14 in bf16 states; one GPU, so the rank steps every parameter. */
static void test_optimizer_impl(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate a, b;
	const char *bf[] = {"0", "1"};
	double extra[] = {80 - 36, 40 - 14};
	for (int i = 0; i < 2; i++) {
		if (run(m8, h, KV("gpus", "1", "seq", "4096", "gbs", "1", "bf16_states", bf[i], "optimizer", "fused"), &p, &a)) return;
		if (run(m8, h, KV("gpus", "1", "seq", "4096", "gbs", "1", "bf16_states", bf[i], "optimizer", "foreach"), &p, &b)) return;
		CHECK_REL(b.kind[0].optimizer_s - a.kind[0].optimizer_s, extra[i] * a.kind[0].params / (h->hbm_bw_bps * h->mem_eff), 1e-9,
			  i ? "foreach in bf16 states: 26 B more a parameter" : "foreach in fp32 states: 44 B more a parameter");
		CHECK_REL(b.step_time_s - a.step_time_s, b.kind[0].optimizer_s - a.kind[0].optimizer_s, 1e-9, "the step grows by the optimizer's difference");
	}
}

/* Under pressure the caching allocator frees its wholly free cached segments and retries
 * (release_cached_blocks, c10/cuda/CUDACachingAllocator.cpp). With expandable segments the
 * pages of every free block are unmapped; under ZeRO-3 the parameter-shaped blocks are whole
 * segments of their own, freed every block: either way a plan runs while its live tensors fit,
 * and its pool then peaks at the device. nanotron's 16-bit gradients, held to the end of the
 * backward among the activations' freed blocks, pin split segments: with native segments the
 * fragmentation stays. 8B, ZeRO-3 on 8 GPUs, 2 x 4608 tokens, and 8B, ZeRO-1 with the
 * accumulation pass, 2,048 tokens: each unconstrained pool is over the capacity, the live
 * tensors under. */
static void pool_over_live_under(const struct estimate *e, double frag, double *pool)
{
	const struct rank_est *k = &e->kind[0];
	*pool = k->live_bytes + (frag - 1) * (k->act_bytes + k->logits_bytes + k->buffers_bytes);
	CHECK(*pool > e->capacity_bytes && e->live_peak_bytes < e->capacity_bytes,
	      "the case: unconstrained pool %.1f GiB over, live %.1f GiB under %.1f GiB", *pool / GIB,
	      e->live_peak_bytes / GIB, e->capacity_bytes / GIB);
}

static void test_expandable_release(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate n, x, big, gn;
	double pool;
	if (run(m8, h, KV("gpus", "8", "zero", "3", "seq", "4608", "mbs", "2", "gbs", "16", "allocator", "native"), &p, &n)) return;
	if (run(m8, h, KV("gpus", "8", "zero", "3", "seq", "4608", "mbs", "2", "gbs", "16", "allocator", "expandable"), &p, &x)) return;
	pool_over_live_under(&x, h->frag_expandable, &pool);
	CHECK_REL(x.peak_mem_bytes, x.capacity_bytes, 1e-12, "expandable: the pool peaks at the device");
	CHECK(x.fits, "expandable: fits while the live tensors do");
	pool_over_live_under(&n, h->frag_native, &pool);
	CHECK_REL(n.peak_mem_bytes, n.capacity_bytes, 1e-12, "native ZeRO-3: its whole free segments go back, the pool peaks at the device");
	CHECK(n.fits, "native ZeRO-3: fits while the live tensors do");
	if (run(m8, h, KV("gpus", "8", "zero", "3", "seq", "4608", "mbs", "3", "gbs", "24", "allocator", "expandable"), &p, &big)) return;
	const struct rank_est *b = &big.kind[0];
	double bdyn = b->act_bytes + b->logits_bytes + b->buffers_bytes;
	CHECK(big.live_peak_bytes > big.capacity_bytes && !big.fits, "live tensors over the device: does not fit");
	CHECK_REL(big.peak_mem_bytes, b->live_bytes + (h->frag_expandable - 1) * bdyn, 1e-12,
		  "and the pool is the unconstrained one");
	if (run(m8, h, KV("gpus", "8", "zero", "1", "grad_accum_pass", "1", "fp32_grads", "1", "seq", "2048", "mbs", "1",
			  "gbs", "8", "allocator", "native"), &p, &gn)) return;
	pool_over_live_under(&gn, h->frag_native, &pool);
	CHECK(!gn.fits, "native, held 16-bit gradients: the fragmentation stays, does not fit");
	CHECK_REL(gn.peak_mem_bytes, pool, 1e-12, "and the pool is the unconstrained one");
}

/* ZeRO-3 by FSDP units holds the current and the prefetched block's parameters gathered
 * (2 x 2 B x a block); DeepSpeed fetches module by module and releases beyond its live
 * limit, but the largest module must be whole to compute with: GPT-3 175B's FC1 and FC2 are
 * 12288 x 49152 = 603,979,776 parameters, more than a 1e8 limit, so 2 B x that many stay
 * gathered; a limit between the largest module and two blocks (2e9) is what stays gathered. */
static void test_zero3_live(const struct hw *h)
{
	struct model g;
	char err[ERR_LEN] = "";
	if (model_load("gpt3-175b", &g, err)) { CHECK(0, "gpt3-175b: %s", err); return; }
	struct plan p;
	struct estimate e0, e1, e2;
	if (run(&g, h, KV("gpus", "64", "zero", "3", "seq", "2048", "gbs", "64"), &p, &e0)) return;
	if (run(&g, h, KV("gpus", "64", "zero", "3", "seq", "2048", "gbs", "64", "zero3_live_params", "100000000"), &p, &e1)) return;
	if (run(&g, h, KV("gpus", "64", "zero", "3", "seq", "2048", "gbs", "64", "zero3_live_params", "2000000000"), &p, &e2)) return;
	double block = e0.kind[0].params / g.layers;
	CHECK_REL(e0.kind[0].buffers_bytes - e1.kind[0].buffers_bytes, 2 * (2 * block - 603979776.0), 1e-9,
		  "module by module: the largest module stays gathered, not two blocks");
	CHECK_REL(e0.kind[0].buffers_bytes - e2.kind[0].buffers_bytes, 2 * (2 * block - 2e9), 1e-9,
		  "a limit between the largest module and two blocks: the limit stays gathered");
}

/* torch.distributed.pipelining's receive buffers (pp_recv): Llama 3 8B on 2 GPUs, pp 2, 1F1B,
 * 16 micro-batches of 4096 tokens, no TP. A stage boundary is 4096 x 4096 x 2 B = 32 MiB. Per
 * micro-batch buffers: the first stage keeps 16 output-gradient buffers; the last keeps 16 input
 * buffers, one of which is the input of its one micro-batch in flight, already its first
 * layer's saved input, so 15 are added. AutoModel's ring keeps (pp - stage) + 2 sets: 4 on the
 * first stage, 3 on the last (2 beyond the one in flight). Allocated once, they take no
 * allowance: the pool grows by exactly what is kept. */
static void test_pp_recv(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate e0, e1, e2;
#define PP_RECV(v) KV("gpus", "2", "pp", "2", "seq", "4096", "gbs", "16", "mbs", "1", "schedule", "1f1b", "pp_recv", v)
	if (run(m8, h, PP_RECV("none"), &p, &e0) || run(m8, h, PP_RECV("microbatch"), &p, &e1) ||
	    run(m8, h, PP_RECV("ring"), &p, &e2)) return;
#undef PP_RECV
	const double S = 4096.0 * 4096 * 2;
	const struct rank_est *f0 = kind_at_stage(&e0, 0), *l0 = kind_at_stage(&e0, 1);
	const struct rank_est *f1 = kind_at_stage(&e1, 0), *l1 = kind_at_stage(&e1, 1);
	const struct rank_est *f2 = kind_at_stage(&e2, 0), *l2 = kind_at_stage(&e2, 1);
	if (!f0 || !l0 || !f1 || !l1 || !f2 || !l2) { CHECK(0, "pp_recv: a first and a last stage"); return; }
	CHECK(f0->recv_bytes == 0 && l0->recv_bytes == 0, "none: nothing kept");
	CHECK_REL(f1->recv_bytes, 16 * S, 1e-12, "per micro-batch, first stage: 16 output-gradient buffers");
	CHECK_REL(l1->recv_bytes, 15 * S, 1e-12, "per micro-batch, last stage: 16 input buffers less the one in flight");
	CHECK_REL(f2->recv_bytes, 4 * S, 1e-12, "ring, first stage: (2 - 0) + 2 sets");
	CHECK_REL(l2->recv_bytes, 2 * S, 1e-12, "ring, last stage: (2 - 1) + 2 sets less the one in flight");
	CHECK_REL(f1->live_bytes - f0->live_bytes, 16 * S, 1e-12, "the buffers are live");
	CHECK_REL(f1->peak_bytes - f0->peak_bytes, 16 * S, 1e-12, "made once: no allowance on them");
	/* AutoModel pools only under 1F1B; the same plan under GPipe keeps torch's buffers */
	struct estimate g1, g2;
	if (run(m8, h, KV("gpus", "2", "pp", "2", "seq", "4096", "gbs", "16", "mbs", "1", "schedule", "afab", "pp_recv", "microbatch"), &p, &g1) ||
	    run(m8, h, KV("gpus", "2", "pp", "2", "seq", "4096", "gbs", "16", "mbs", "1", "schedule", "afab", "pp_recv", "ring"), &p, &g2)) return;
	CHECK(kind_at_stage(&g1, 0) && kind_at_stage(&g2, 0) && kind_at_stage(&g1, 0)->recv_bytes == kind_at_stage(&g2, 0)->recv_bytes,
	      "ring off 1F1B: torch's buffer per micro-batch");
}

int main(void)
{
	struct model m8;
	struct hw h;
	char err[ERR_LEN] = "";
	if (model_load("llama-3-8b", &m8, err) || hw_load("h100-sxm", &h, err)) {
		CHECK(0, "profiles: %s", err);
		return test_summary("test_estimate_framework");
	}
	test_grad_accum_pass(&m8, &h);
	test_ddp_buckets(&m8, &h);
	test_bf16_states(&m8, &h);
	test_tp_regather(&m8, &h);
	test_glu_eager(&m8, &h);
	test_eager_block(&m8, &h);
	test_tp_seq_copies(&m8, &h);
	test_attn_cudnn(&m8, &h);
	test_loss_kind(&m8, &h);
	test_fsdp_copies(&m8, &h);
	test_optimizer_impl(&m8, &h);
	test_cp_fp32_merge(&m8, &h);
	test_kv_repeat(&m8, &h);
	test_qkv_copies(&m8, &h);
	test_shard_master(&m8, &h);
	test_expandable_release(&m8, &h);
	test_dp_host_copies(&m8, &h);
	test_zero3_live(&h);
	test_pp_recv(&m8, &h);
	return test_summary("test_estimate_framework");
}
