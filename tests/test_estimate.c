/* Properties of estimate_plan() that follow from physics or from a cited formula, each reasoned
 * on its own rather than compared with a stored snapshot of the estimator's output:
 * sharding more never adds memory, recomputation trades memory for time, more data-parallel
 * ranks never make a GPU faster, pipeline schedules hold the micro-batches their definitions
 * say (model.md §2.3, TV-G3), the bubble is (p−1)/m or (p−1)/(v·m) (TV-M4), TP and PP move the
 * volumes Narayanan gives (TV-M5), and the summary numbers (fits, MFU) are consistent with
 * their definitions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim/estimate.h"
#include "sim/flops.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/util.h"
#include "tests/test.h"

#include "tests/estimate_check.h"

/* ZeRO stage s+1 shards a superset of what stage s shards [ZERO §5], so model-state memory per
 * GPU can only fall; with dp > 1 each stage strictly lowers it. */
static void test_zero_monotone(const struct model *m, const struct hw *h)
{
	const char *zs[] = {"0", "1", "2", "3"};
	const char *const *cfgs[] = {
		KV("gpus", "8", "gbs", "8"),
		KV("gpus", "16", "tp", "2", "pp", "2", "gbs", "32"),
		KV("gpus", "64", "tp", "8", "gbs", "64", "fp32_grads", "0"),
	};
	for (int c = 0; c < 3; c++) {
		double prev[EST_MAX_KINDS];
		for (int z = 0; z < 4; z++) {
			struct plan p;
			struct estimate e;
			const char *const *kv = cfgs[c];
			char err[ERR_LEN] = "";
			plan_defaults(&p);
			int rc = 0;
			for (; kv[0] && !rc; kv += 2) rc = plan_set(&p, kv[0], kv[1], err);
			rc = rc || plan_set(&p, "zero", zs[z], err) || plan_resolve(&p, m, h, err) ||
			     plan_validate(&p, m, h, err) || estimate_plan(m, h, &p, &e, err);
			CHECK(rc == 0, "zero %d config %d: %s", z, c, err);
			if (rc) break;
			for (int k = 0; k < e.nkinds; k++) {
				if (z > 0)
					CHECK(states(&e.kind[k]) < prev[k], "config %d %s: zero %d states %.4g >= zero %d %.4g",
					      c, e.kind[k].label, z, states(&e.kind[k]), z - 1, prev[k]);
				prev[k] = states(&e.kind[k]);
			}
		}
	}
}

/* Full recomputation keeps only each block's input and re-runs its forward in the backward
 * [KOR §5]: activations must be lower and the step longer than without recomputation.
 * Selective sits in between (never more memory than none, never less time). */
static void test_recompute_tradeoff(const struct model *m, const struct hw *h)
{
	const char *modes[] = {"none", "selective", "full"};
	struct estimate e[3];
	struct plan p;
	for (int i = 0; i < 3; i++)
		if (run(m, h, KV("gpus", "8", "tp", "2", "pp", "2", "gbs", "16", "recompute", modes[i]), &p, &e[i])) return;
	for (int k = 0; k < e[0].nkinds; k++) {
		CHECK(e[2].kind[k].act_bytes < e[0].kind[k].act_bytes, "%s: full act %.4g !< none %.4g",
		      e[0].kind[k].label, e[2].kind[k].act_bytes, e[0].kind[k].act_bytes);
		CHECK(e[1].kind[k].act_bytes <= e[0].kind[k].act_bytes, "%s: selective act > none", e[0].kind[k].label);
		CHECK(e[2].kind[k].recompute_s > 0 && e[0].kind[k].recompute_s == 0, "%s: recompute_s", e[0].kind[k].label);
	}
	CHECK(e[2].step_time_s > e[0].step_time_s, "full step %.4g !> none %.4g", e[2].step_time_s, e[0].step_time_s);
	CHECK(e[1].step_time_s >= e[0].step_time_s, "selective step %.4g < none %.4g", e[1].step_time_s, e[0].step_time_s);
	/* model FLOPs do not count recomputation, hardware FLOPs do [KOR §6.3] */
	CHECK(e[2].model_flops_per_step == e[0].model_flops_per_step, "model FLOPs independent of recompute");
	CHECK(e[2].hfu > e[2].mfu && e[0].hfu == e[0].mfu, "HFU > MFU only with recompute");
}

/* Weak scaling: doubling the data-parallel degree with the same work per GPU (same mbs and
 * micro-batches, plain DP so every rank also runs the whole optimizer step) adds
 * gradient-reduction traffic and nothing that speeds a GPU up, so tokens/s per GPU does not
 * increase. (Under ZeRO the optimizer step is sharded over the DP ranks, so per-GPU work is not
 * fixed and a GPU may legitimately get faster.) */
static void test_weak_scaling(const struct model *m, const struct hw *h)
{
	const char *gpus[] = {"1", "2", "4", "8", "16", "32", "64", "128"};
	const char *gbs[] = {"4", "8", "16", "32", "64", "128", "256", "512"}; /* 4 micro-batches per rank */
	const char *tps[] = {"1", "2"};
	for (int ov = 0; ov < 2; ov++)
		for (int t = 0; t < 2; t++) {
			double prev = INFINITY;
			for (int i = 0; i < 8; i++) {
				struct plan p;
				struct estimate e;
				char g[16];
				snprintf(g, sizeof(g), "%d", atoi(gpus[i]) * atoi(tps[t]));
				if (run(m, h, KV("gpus", g, "tp", tps[t], "gbs", gbs[i], "zero", "0",
						 "overlap_grad_reduce", ov ? "1" : "0"), &p, &e)) return;
				CHECK(plan_microbatches(&p) == 4 && p.dp == atoi(gpus[i]), "weak scaling keeps 4 micro-batches");
				CHECK(e.tokens_per_s_per_gpu <= prev * (1 + 1e-12),
				      "overlap %d, tp %s, dp %s: %.6g tokens/s/GPU > %.6g at half the GPUs",
				      ov, tps[t], gpus[i], e.tokens_per_s_per_gpu, prev);
				prev = e.tokens_per_s_per_gpu;
			}
		}
}

/* 1F1B: stage r (0-based) holds min(p−r, m) micro-batches at its peak [MEG §2.2.1; KOR §4.2.3]:
 * the first stage p, the last 1; AFAB holds all m everywhere. */
static void test_inflight_1f1b(const struct model *m, const struct hw *h)
{
	struct plan p;
	struct estimate e;
	if (run(m, h, KV("gpus", "8", "pp", "8", "gbs", "32"), &p, &e)) return;
	const struct rank_est *first = kind_at_stage(&e, 0), *last = kind_at_stage(&e, 7);
	CHECK(first && first->act_inflight == 8, "1F1B first stage holds p = 8 micro-batches: %g", first ? first->act_inflight : -1);
	CHECK(last && last->act_inflight == 1, "1F1B last stage holds 1 micro-batch: %g", last ? last->act_inflight : -1);
	/* fewer micro-batches than stages: at most m */
	if (run(m, h, KV("gpus", "8", "pp", "8", "gbs", "4"), &p, &e)) return;
	first = kind_at_stage(&e, 0);
	CHECK(first && first->act_inflight == 4, "1F1B with m 4 < p 8 holds m: %g", first ? first->act_inflight : -1);
	if (run(m, h, KV("gpus", "8", "pp", "4", "dp", "2", "gbs", "24", "schedule", "afab"), &p, &e)) return;
	for (int k = 0; k < e.nkinds; k++)
		CHECK(e.kind[k].act_inflight == 12, "AFAB %s holds all m = 12: %g", e.kind[k].label, e.kind[k].act_inflight);
}

/* Interleaved 1F1B: the first stage holds p·(1 + (p−1)/(p·v)) = p + (p−1)/v micro-batch
 * equivalents [KOR §4.2.3; MCODE-mem]; p 8, v 3: 8 + 7/3 = 10.33 (TV-G3: 11 in flight after
 * rounding up). */
static void test_inflight_interleaved(const struct model *gpt3, const struct hw *h)
{
	struct plan p;
	struct estimate e;
	if (run(gpt3, h, KV("gpus", "8", "pp", "8", "vpp", "3", "schedule", "interleaved", "gbs", "24", "seq", "2048"), &p, &e)) return;
	const struct rank_est *first = kind_at_stage(&e, 0);
	CHECK(first != NULL, "interleaved: no first-stage kind");
	if (!first) return;
	CHECK_ABS(first->act_inflight, 8 + 7.0 / 3, 1e-9, "TV-G3 interleaved first stage p + (p-1)/v");
	CHECK(ceil(first->act_inflight) == 11, "TV-G3 11 in flight");
}

/* fits is defined as peak <= capacity; the peak is the worst rank kind's. A plan that does not
 * fit is a normal result: its time is still estimated. */
static void test_fits_and_oom(const struct model *m8, const struct model *m405, const struct hw *h)
{
	struct plan p;
	struct estimate e;
	const struct model *ms[] = {m8, m405};
	for (int i = 0; i < 2; i++) {
		if (run(ms[i], h, KV("gpus", "8", "tp", "8", "seq", "4096"), &p, &e)) return;
		double peak = 0;
		for (int k = 0; k < e.nkinds; k++) peak = fmax(peak, e.kind[k].peak_bytes);
		CHECK(e.peak_mem_bytes == peak, "%s: peak is the worst kind's", ms[i]->name);
		/* tp 8 alone: the world, the TP and the model-parallel (gradient norm) communicator,
		 * each with the NCCL buffers of what it runs, and the CUDA context sit outside the
		 * allocator's pool (h100-sxm: 79.6 GiB HBM, 0.5 GiB context). One node: the world's
		 * and the model-parallel group's 8-byte all-reduces run a ring (LL: 6.6 + 7 x 0.6 us
		 * against NVLS's 25 us), 32 channels x 2 connections x 9.19 MiB of protocol buffers
		 * each (NCCL src/init.cc, src/transport/generic.cc); the TP all-reduce of a block's
		 * output (no SP) is NVLS at 480 against the ring's 370 GB/s, its buffers 32 MiB per
		 * GPU of the domain (src/transport/nvls.cc) */
		CHECK(e.nccl_comms == 3, "%s: world + TP + model-parallel communicators, got %d", ms[i]->name, e.nccl_comms);
		CHECK_REL(e.capacity_bytes, 79.6 * 1073741824.0 - 0.5 * 1073741824.0 - (2 * 32 * 2 * 9.19 + 8 * 32) * 1048576.0, 1e-12,
			  "capacity is HBM less context, two rings' and one NVLS communicator's buffers");
		CHECK(e.fits == (e.peak_mem_bytes <= e.capacity_bytes), "%s: fits %d, peak %.4g, capacity %.4g",
		      ms[i]->name, e.fits, e.peak_mem_bytes, e.capacity_bytes);
	}
	/* tp 8 · pp 2 over two nodes: the world's and the model-parallel group's 8-byte all-reduces
	 * span 2 nodes, where NCCL's model prices tree LL at 6.8 + 2 x 7 x 0.6 + 2 x 1 x 5 = 25.2 us
	 * against ring LL's 6.6 + 28 x 0.6 + 2 x 2.7 = 28.8 us (profiles/comm/nccl.json), so each
	 * connects a tree, 3 connections on 32 channels; TP's NVLS 8 x 32 MiB; the pipeline's one
	 * peer (pp 2) is on another node, so its sends and receives use the network's shared pools,
	 * one per direction, 32 channels x 16 steps x 128 KiB (NCCL src/transport/net.cc: no
	 * buffers of their own for send/recv connections) */
	if (run(m8, h, KV("gpus", "16", "tp", "8", "pp", "2", "gbs", "16"), &p, &e)) return;
	CHECK(e.nccl_comms == 4, "tp 8 pp 2: world, TP, PP, model-parallel communicators, got %d", e.nccl_comms);
	CHECK_REL(e.nonpool_bytes, (512 + 2 * 3 * 32 * 9.19 + 8 * 32 + 2 * 32 * 2) * 1048576.0, 1e-9,
		  "context, two trees, NVLS and the network send/recv pools");
	/* llama-3-8b in bf16 on 8 GPUs with TP 8 fits in 80 GB (16 B/param / 8 = 16 GB of states) */
	if (run(m8, h, KV("gpus", "8", "tp", "8"), &p, &e)) return;
	CHECK(e.fits, "llama-3-8b tp 8 on 8 x %s should fit (peak %.4g)", h->name, e.peak_mem_bytes);
	/* 405B: 405e9·16/8 B = 810 GB of model states per GPU, ten times an 80 GB GPU */
	if (run(m405, h, KV("gpus", "8", "tp", "8"), &p, &e)) return;
	CHECK(!e.fits, "405B on 8 GPUs cannot fit");
	CHECK(e.peak_mem_bytes > 8e11, "405B states alone are > 800 GB per GPU: %.4g", e.peak_mem_bytes);
	CHECK(isfinite(e.step_time_s) && e.step_time_s > 0, "step time still reported when it does not fit: %g", e.step_time_s);
	CHECK(e.tokens_per_s_per_gpu > 0 && e.mfu > 0 && e.mfu < 1, "throughput still reported: %g tok/s, mfu %g",
	      e.tokens_per_s_per_gpu, e.mfu);
}

/* MFU = model FLOPs per step / (step time × GPUs × peak) [KOR §6.3; PB], with model FLOPs from
 * the FLOP counter (causal attention, Megatron code convention [MCODE-flops]) times the tokens
 * of one global batch; the dense bf16 peak is the reference. */
static void test_mfu_definition(const struct model *m, const struct hw *h)
{
	const char *const *cfgs[] = {
		KV("gpus", "8", "gbs", "16"),
		KV("gpus", "16", "tp", "4", "pp", "2", "gbs", "32", "seq", "8192", "recompute", "full"),
		KV("gpus", "32", "tp", "2", "pp", "4", "vpp", "2", "schedule", "interleaved", "gbs", "64"),
	};
	for (int c = 0; c < 3; c++) {
		struct plan p;
		struct estimate e;
		if (run(m, h, cfgs[c], &p, &e)) return;
		double tokens = (double)p.gbs * p.seq;
		double flops = model_flops_per_token(m, p.seq, 1) * tokens;
		CHECK_REL(e.tokens_per_step, tokens, 1e-12, "tokens per step = gbs x seq");
		CHECK_REL(e.mfu, flops / (e.step_time_s * p.gpus * h->peak_bf16_flops), 1e-9, "MFU definition");
		CHECK_REL(e.tokens_per_s_per_gpu, tokens / e.step_time_s / p.gpus, 1e-12, "tokens/s/GPU definition");
		CHECK(e.mfu > 0 && e.mfu < h->gemm_eff, "MFU %g within (0, best GEMM efficiency %g)", e.mfu, h->gemm_eff);
	}
}

/* A dense GPT of the Megatron papers' family (MHA, 4h GeLU MLP, LayerNorm, tied embedding,
 * vocabulary 51200 unless changed). */
static struct model gpt(const char *name, int layers, int hidden, int heads, int vocab)
{
	struct model m;
	memset(&m, 0, sizeof(m));
	snprintf(m.name, sizeof(m.name), "%s", name);
	m.layers = layers; m.hidden = hidden; m.ffn_hidden = 4 * hidden; m.heads = heads;
	m.kv_heads = heads; m.head_dim = hidden / heads; m.vocab = vocab; m.tied = 1;
	m.norm = NORM_LAYER; m.mlp = MLP_GELU; m.norm_eps = 1e-5;
	m.pos_emb = 1; m.max_pos = 2048;
	return m;
}

/* TV-M4: bubble time fraction (bubble / ideal time) (p−1)/m for 1F1B and AFAB, (p−1)/(v·m)
 * interleaved [MEG §2.2; PB]: p 8, m 24 -> 0.2917; v 3 -> 0.0972. The formula assumes equal
 * stages; here the first and last stage still carry the embedding and the (tiny) head, which
 * adds their relative excess (< 0.1 %) to every schedule's fraction alike. So the 1F1B figure
 * is checked to 1e-3 and the difference 1F1B − interleaved = (p−1)(1 − 1/v)/m = 0.1944, in
 * which that excess cancels, to 1e-4. */
static void test_bubble_fraction(const struct hw *h)
{
	/* embedding and head negligible next to 12 wide layers per stage (vocabulary 8) */
	struct model m = gpt("uniform-gpt", 96, 8192, 64, 8);
	char err[ERR_LEN];
	CHECK(model_check(&m, err) == 0, "uniform gpt: %s", err);
	struct plan p;
	struct estimate e;
	static const struct { const char *sched, *vpp; } r[] = {{"1f1b", "1"}, {"afab", "1"}, {"interleaved", "3"}};
	double f[3];
	for (int i = 0; i < 3; i++) {
		if (run(&m, h, KV("gpus", "8", "pp", "8", "gbs", "24", "seq", "2048", "schedule", r[i].sched, "vpp", r[i].vpp), &p, &e)) return;
		CHECK(e.m == 24, "m %d", e.m);
		f[i] = e.bubble_fraction;
	}
	CHECK_ABS(f[0], 0.2917, 1e-3, "TV-M4 1F1B bubble (p-1)/m");
	CHECK_ABS(f[1], 0.2917, 1e-3, "TV-M4 AFAB bubble (p-1)/m");
	CHECK_ABS(f[0] - f[2], 0.2917 - 0.0972, 1e-4, "TV-M4 1F1B - interleaved = (p-1)/m - (p-1)/(v m)");
	CHECK_ABS(f[2], 0.0972, 1e-3, "TV-M4 interleaved bubble (p-1)/(v m)");
	/* without a pipeline there is no bubble */
	if (run(&m, h, KV("gpus", "8", "gbs", "24", "seq", "2048"), &p, &e)) return;
	CHECK(e.bubble_fraction == 0, "no pipeline, no bubble: %g", e.bubble_fraction);
}

/* TV-M5: per layer and micro-batch, TP moves 8bsh(t−1)/t elements per device (4 all-reduces of
 * bsh) and a pipeline boundary bsh elements, bsh/t with scatter/gather (SP) [MEG §3.2, §4.1]:
 * b 1, s 2048, h 12288, t 8 -> 1.7616e8; 2.5166e7 -> 3.146e6. On a fabric with no latency, no
 * derating and bandwidth X, the time of bf16 (2-byte) traffic is 2·elements/X. Outside the
 * blocks, once per micro-batch: the vocab-parallel embedding's all-reduce of bsh (forward),
 * the head's input-gradient all-reduce of bsh (backward) and the cross-entropy's three fp32
 * all-reduces of s values [MCODE VocabParallelEmbedding, cross_entropy.py]. */
static double tp_outside_blocks_s(double b, double s, double h, int t, double X)
{
	return ar_time_s(2 * 2 * b * s * h, t, X) + 3 * ar_time_s(4 * b * s, t, X);
}

static void test_comm_volumes(const struct model *gpt3, const struct hw *h0)
{
	const double X = 100e9;
	struct hw h;
	ideal_copy(&h, h0, X);
	struct plan p;
	struct estimate e;
	if (run(gpt3, &h, KV("gpus", "8", "tp", "8", "seq", "2048", "gbs", "2", "overlap_tp_comm", "0"), &p, &e)) return;
	double per_layer_mb = (e.kind[0].tp_comm_s / e.m - tp_outside_blocks_s(1, 2048, gpt3->hidden, 8, X)) / gpt3->layers;
	CHECK_REL(per_layer_mb * X / 2, 1.7616e8, 5e-4, "TV-M5 TP elements per layer per micro-batch");
	if (run(gpt3, &h, KV("gpus", "16", "tp", "8", "pp", "2", "seq", "2048", "gbs", "2"), &p, &e)) return;
	CHECK_REL(e.kind[0].t_p2p * X / 2, 2.5166e7, 5e-4, "TV-M5 PP boundary bsh");
	if (run(gpt3, &h, KV("gpus", "16", "tp", "8", "pp", "2", "sp", "1", "seq", "2048", "gbs", "2"), &p, &e)) return;
	CHECK_REL(e.kind[0].t_p2p * X / 2, 3.146e6, 5e-4, "TV-M5 PP boundary bsh/t with SP");
	/* without SP, scatter/gather sends the same bsh/t and the receiving stage all-gathers the
	 * bsh over its 8 TP ranks, a ring moving 7/8 of it [MEG §4.1] */
	if (run(gpt3, &h, KV("gpus", "16", "tp", "8", "pp", "2", "pp_scatter_gather", "1", "seq", "2048", "gbs", "2"), &p, &e)) return;
	CHECK_REL(e.kind[0].t_p2p * X / 2, 3.146e6 + 2.5166e7 * 7 / 8, 5e-4, "TV-M5 PP boundary with scatter/gather");
	/* with SP the tensor is already split: scatter/gather changes nothing */
	if (run(gpt3, &h, KV("gpus", "16", "tp", "8", "pp", "2", "sp", "1", "pp_scatter_gather", "1", "seq", "2048", "gbs", "2"), &p, &e)) return;
	CHECK_REL(e.kind[0].t_p2p * X / 2, 3.146e6, 5e-4, "TV-M5 scatter/gather under SP");
	/* torchao's float8 TP gathers the forward's column-parallel inputs in FP8: each of a
	 * block's two forward all-gathers moves half the bytes, 7/8 of bsh x 1 B less per gather,
	 * backward unchanged; per step 96 layers x 2 x bsh x 7/8 x 1 B / X less */
	struct estimate e8;
	if (run(gpt3, &h, KV("gpus", "8", "tp", "8", "sp", "1", "seq", "2048", "gbs", "1", "overlap_tp_comm", "0"), &p, &e)) return;
	if (run(gpt3, &h, KV("gpus", "8", "tp", "8", "sp", "1", "seq", "2048", "gbs", "1", "overlap_tp_comm", "0", "precision", "fp8", "fp8_impl", "torchao"), &p, &e8)) return;
	CHECK_REL(e.kind[0].tp_comm_s - e8.kind[0].tp_comm_s, 96 * 2 * 2048.0 * gpt3->hidden * 7 / 8 / X, 5e-4,
		  "float8 TP: forward all-gathers in FP8");
}

/* With SP a block's TP traffic is all-gathers and reduce-scatters, not all-reduces: the same
 * bytes, but NCCL chooses per collective, and only an all-reduce has a tree (frameworks.md
 * §9.1) or, measured on 8x H200, NVLink SHARP (NVLS): all-reduce 480 GB/s, all-gather 361 and
 * reduce-scatter 363 by the ring (ml-engineering network/README.md). On one 8-GPU node with a
 * ring bandwidth X and an all-reduce NVLS bandwidth 4X, no latency, per layer and micro-batch
 * (b 1, s 2048, h 12288, bf16, S = 2bsh bytes):
 * - without SP, 4 all-reduces at NVLS: 4 · 2·(7/8)·S / 4X = 1.75 S/X;
 * - with SP (tp_regather 0), 2 all-gathers and 2 reduce-scatters forward and as many
 *   backward, each a ring moving (7/8)·S: 8 · (7/8)·S / X = 7 S/X (on the ring alone the two
 *   would be equal: an all-reduce is a reduce-scatter and an all-gather).
 * Outside the blocks, once per micro-batch: without SP the embedding's and the head's
 * all-reduces of S and the cross-entropy's three fp32 all-reduces of s values, all at NVLS;
 * with SP the embedding's reduce-scatter and its gradient's all-gather, the head's all-gather
 * and its gradient's reduce-scatter (4 rings of (7/8)·S) and the same three all-reduces. */
static void test_sp_collectives(const struct model *gpt3, const struct hw *h0)
{
	const double X = 100e9, S = 2.0 * 2048 * gpt3->hidden, ce = 3 * 2 * 7.0 / 8 * 4 * 2048 / (4 * X);
	struct hw h;
	ideal_copy(&h, h0, X);
	h.tier[0].nvls_busbw_bps = 4 * X;
	struct plan p;
	struct estimate e;
	if (run(gpt3, &h, KV("gpus", "8", "tp", "8", "seq", "2048", "gbs", "1", "overlap_tp_comm", "0"), &p, &e)) return;
	double out = 2 * 2 * 7.0 / 8 * S / (4 * X) + ce;
	CHECK_REL((e.kind[0].tp_comm_s / e.m - out) / gpt3->layers, 1.75 * S / X, 5e-4, "TP without SP: four all-reduces at NVLS");
	if (run(gpt3, &h, KV("gpus", "8", "tp", "8", "sp", "1", "tp_regather", "0", "seq", "2048", "gbs", "1", "overlap_tp_comm", "0"), &p, &e)) return;
	out = 4 * 7.0 / 8 * S / X + ce;
	CHECK_REL((e.kind[0].tp_comm_s / e.m - out) / gpt3->layers, 7 * S / X, 5e-4, "TP with SP: all-gathers and reduce-scatters on the ring");
}

/* Ring attention: each of the cp−1 ring steps waits on its P2P exchange, so its fixed cost is
 * exposed once in forward and once in backward even when the transfer hides behind the
 * block's attention. llama-3-8b, cp 4 on one node, seq 8192: K/V of one step is
 * 2·2 B·2048 tokens·1024 = 8.4 MB, tens of µs over NVLink, far below the block's attention
 * (2·32·2048·4096·256 FLOP at 0.35 of 989 TFLOP/s ≈ 0.4 ms), so without the overlap slowdown
 * the exposed CP time is m · 32 layers · 2 · 3 steps · 7.2 µs (NCCL's LL send/recv over one
 * NVLink hop: base 6.6 + hop 0.6 µs, src/graph/tuning.cc). */
static void test_cp_ring_steps(const struct model *m8, const struct hw *h0)
{
	struct plan p;
	struct estimate e, es, e2;
	struct hw h = *h0;
	h.overlap_slowdown = 0; /* the transfer hides entirely: only the latencies stay */
	if (run(m8, &h, KV("gpus", "8", "cp", "4", "dp", "2", "seq", "8192", "mbs", "1", "gbs", "8"), &p, &e)) return;
	double m = 8 / 2, lat = m * 32 * 2 * 3 * 7.2e-6;
	CHECK_REL(e.kind[0].cp_comm_s, lat, 1e-9, "cp 4: 2·(cp−1) exposed ring-step latencies per layer");
	/* the hidden transfer slows the attention under it by overlap_slowdown of its length:
	 * linear in the slowdown, nothing else changes */
	h.overlap_slowdown = 0.2;
	if (run(m8, &h, KV("gpus", "8", "cp", "4", "dp", "2", "seq", "8192", "mbs", "1", "gbs", "8"), &p, &es)) return;
	h.overlap_slowdown = 0.4;
	if (run(m8, &h, KV("gpus", "8", "cp", "4", "dp", "2", "seq", "8192", "mbs", "1", "gbs", "8"), &p, &e2)) return;
	CHECK(es.kind[0].cp_comm_s > lat, "cp 4: the overlapped transfer costs the attention something");
	CHECK_REL(e2.kind[0].cp_comm_s - lat, 2 * (es.kind[0].cp_comm_s - lat), 1e-9, "cp 4: the transfer's cost is linear in the slowdown");
	struct estimate e1;
	if (run(m8, &h, KV("gpus", "8", "cp", "1", "dp", "8", "seq", "8192", "mbs", "1", "gbs", "8"), &p, &e1)) return;
	CHECK(e1.kind[0].cp_comm_s == 0, "cp 1 has no ring steps");
}

/* Expert-parallel dispatch across nodes: a token crosses the NIC tier once per distinct remote
 * node among its top-k experts (DeepEP internode kernels). mixtral-8x7b (top-2 of 8 experts,
 * hidden 4096, 32 MoE blocks) with ep 8 over two 4-GPU nodes: a token reaches
 * 1·(1 − (1/2)²) = 0.75 remote nodes, and fans out to its 2 experts over NVLink, so one
 * all-to-all of 1024 bf16 tokens (8 MiB) costs NCCL's LL latency of one NVLink and one network
 * hop, 6.6 + 0.6 + 2.7 = 9.9 µs, + 8 MiB·(0.75/(46·0.9 GB/s) + 2/2/(370·0.9 GB/s)); 4 per block
 * (dispatch and combine, forward and backward). */
static void test_ep_dispatch(const struct hw *h)
{
	struct model mx;
	char err[ERR_LEN];
	if (model_load("mixtral-8x7b", &mx, err)) { CHECK(0, "%s", err); return; }
	struct plan p;
	struct estimate e;
	if (run(&mx, h, KV("gpus", "8", "gpus_per_node", "4", "dp", "8", "ep", "8", "seq", "1024", "mbs", "1", "gbs", "8"), &p, &e)) return;
	double tok = 2.0 * 1024 * 4096;
	double a2a = 9.9e-6 + tok * (0.75 / (46e9 * 0.9) + 1.0 / (370e9 * 0.9));
	CHECK_REL(e.kind[0].ep_comm_s, 1 * 32 * 4 * a2a, 1e-9, "ep 8 over 2 nodes: per-node dispatch");
	/* its NCCL memory, the plan less the same plan at ep 1 (which has no EP communicator): the
	 * 3 peers in the rank's node on 4 channels (the fewest over its peers: a network peer of
	 * one 400 Gb/s NIC, NCCL src/graph/paths.cc) of a send and a receive connection of
	 * 9.19 MiB, and one pool per direction on 32 channels of 16 x 128 KiB shared by the 4
	 * network peers (src/transport/net.cc sharedNetBuffersInit) */
	struct estimate e1;
	if (run(&mx, h, KV("gpus", "8", "gpus_per_node", "4", "dp", "8", "ep", "1", "seq", "1024", "mbs", "1", "gbs", "8"), &p, &e1)) return;
	CHECK(e.nccl_comms == e1.nccl_comms + 1, "ep 8 adds one communicator: %d vs %d", e.nccl_comms, e1.nccl_comms);
	CHECK_REL(e.nonpool_bytes - e1.nonpool_bytes, (3 * 4 * 2 * 9.19 + 2 * 32 * 2) * 1048576.0, 1e-9,
		  "ep 8 over 2 nodes: 3 NVLink peers' connections and the network peers' shared pool");
	/* ep 128 over 16 nodes: 4 channels a peer would take 4 x ceil(128 / 8) = 64 of the 32
	 * channels for one round of 8 peers per channel, so NCCL halves them to 2 (paths.cc
	 * ncclTopoComputeP2pChannels) for the 7 NVLink peers; the pools are the same */
	struct model ds;
	if (model_load("deepseek-v3", &ds, err)) { CHECK(0, "%s", err); return; }
	if (run(&ds, h, KV("gpus", "128", "dp", "128", "ep", "128", "seq", "1024", "mbs", "1", "gbs", "128"), &p, &e)) return;
	if (run(&ds, h, KV("gpus", "128", "dp", "128", "ep", "1", "seq", "1024", "mbs", "1", "gbs", "128"), &p, &e1)) return;
	CHECK_REL(e.nonpool_bytes - e1.nonpool_bytes, (7 * 2 * 2 * 9.19 + 2 * 32 * 2) * 1048576.0, 1e-9,
		  "ep 128 over 16 nodes: 2 channels a peer");
	/* ep 2 in one node, 4 experts per rank, top-2: a token reaches a rank unless both of its
	 * experts lie on the other one, 1 − C(4,2)/C(8,2) = 22/28, so 2·22/28 = 1.5714 copies per
	 * token (not 2), half of them to the other rank, 6.6 MB: Simple over one NVLink hop,
	 * 8.4 + 3.4 µs, beats LL128 and LL at that size */
	if (run(&mx, h, KV("gpus", "8", "dp", "8", "ep", "2", "seq", "1024", "mbs", "1", "gbs", "8"), &p, &e)) return;
	a2a = 11.8e-6 + tok * (2 * 22.0 / 28) * 0.5 / (370e9 * 0.9);
	CHECK_REL(e.kind[0].ep_comm_s, 1 * 32 * 4 * a2a, 1e-9, "ep 2: one copy per destination rank");
	/* consecutive routing (AutoModel's FakeBalancedGate: token i takes experts 2i, 2i + 1 mod
	 * 8): on ep 2 both lie on one rank, so every token goes to exactly 1 rank, half of them
	 * across, 4.2 MB (Simple, 11.8 µs) */
	if (run(&mx, h, KV("gpus", "8", "dp", "8", "ep", "2", "seq", "1024", "mbs", "1", "gbs", "8", "moe_routing", "consecutive"), &p, &e)) return;
	a2a = 11.8e-6 + tok * 1 * 0.5 / (370e9 * 0.9);
	CHECK_REL(e.kind[0].ep_comm_s, 1 * 32 * 4 * a2a, 1e-9, "ep 2, consecutive experts: one destination rank");
	/* ep 8 over two 4-GPU nodes: experts 2i, 2i + 1 are ranks 2i, 2i + 1 of one node, so a
	 * token reaches 1 node, remote for half of the sources: 0.5 remote nodes (0.75 random),
	 * and its 2 ranks over NVLink as before */
	if (run(&mx, h, KV("gpus", "8", "gpus_per_node", "4", "dp", "8", "ep", "8", "seq", "1024", "mbs", "1", "gbs", "8", "moe_routing", "consecutive"), &p, &e)) return;
	a2a = 9.9e-6 + tok * (0.5 / (46e9 * 0.9) + 1.0 / (370e9 * 0.9));
	CHECK_REL(e.kind[0].ep_comm_s, 1 * 32 * 4 * a2a, 1e-9, "ep 8 over 2 nodes, consecutive experts: one node a token");
}

/* MoE parallel folding: expert TP (etp) below the attention's tp. Megatron-Core's all-to-all
 * dispatcher sends each rank's sequence share (T/tp tokens under SP) over the EP group, then
 * the expert-TP group all-gathers what its etp ranks received before the expert GEMMs and
 * reduce-scatters the outputs after (gather_from_sequence_parallel_region /
 * reduce_scatter_to_sequence_parallel_region); etp 1 has neither. So a rank's experts hold
 * (T/tp)·etp·k token copies of an etp-th of the expert width: the FLOPs per rank do not depend
 * on etp, and of the 2H + 3·fe/etp elements a copy keeps (the expert input and output, gate|up
 * and their product) only the 2H grow with etp. mixtral-8x7b (hidden 4096, top-2 of 8 experts,
 * no shared expert), tp 8 with SP, pp 4 (8 blocks on a middle stage), seq 1024, mbs 1, ep·etp 8
 * (the same expert weights per rank):
 * - activations per micro-batch, etp 4 less etp 1: 8 blocks · 2 B · 1024 · 2 · 2·4096 · (4 − 1)/8;
 * - compute (GEMM shape effects off): the same;
 * - TP traffic per block and micro-batch, ring without latency at X (S = 2 B · 1024 · 4096;
 *   transposes in backward, nothing overlapped): the attention's all-gather and reduce-scatter,
 *   4 · 7/8 · S/X; with etp e the routed tokens' pair of (e/tp)·k·S bytes on the e ranks,
 *   4 · (e−1)/e · (e/8)·2S/X more: etp 2 S/X, etp 4 3S/X, etp 8 (ep 2) 7S/X. */
static void test_moe_folding(const struct hw *h0)
{
	struct model mx;
	char err[ERR_LEN];
	if (model_load("mixtral-8x7b", &mx, err)) { CHECK(0, "%s", err); return; }
	const double X = 100e9, S = 2.0 * 1024 * 4096;
	struct hw h;
	ideal_copy(&h, h0, X);
	h.gemm_half_dim = 0;
	h.host_op_s = h.host_coll_s = 0; /* GPU-bound: the host launches in no time */
	struct plan p;
	struct estimate e1, e2, e4, e8;
#define FOLD(ep, etp) KV("gpus", "64", "tp", "8", "pp", "4", "sp", "1", "ep", ep, "etp", etp, "seq", "1024", "mbs", "1", "gbs", "64", \
			 "recompute", "none", "tp_regather", "0", "overlap_tp_comm", "0", "overlap_tp_bwd", "0")
	if (run(&mx, &h, FOLD("8", "1"), &p, &e1) || run(&mx, &h, FOLD("4", "2"), &p, &e2) || run(&mx, &h, FOLD("2", "4"), &p, &e4) ||
	    run(&mx, &h, FOLD("2", "8"), &p, &e8))
		return;
#undef FOLD
	CHECK_REL(e4.kind[1].act_per_mb_bytes - e1.kind[1].act_per_mb_bytes, 8 * 2.0 * 1024 * 2 * 2 * 4096 * 3 / 8, 1e-9,
		  "etp 4 vs 1: only the gathered expert inputs and outputs grow");
	CHECK_REL(e1.kind[1].compute_s, e4.kind[1].compute_s, 1e-9, "etp 1 vs 4: the same expert FLOPs per rank");
	CHECK_REL(e1.kind[1].compute_s, e2.kind[1].compute_s, 1e-9, "etp 1 vs 2: the same expert FLOPs per rank");
	CHECK_REL(e1.kind[1].tp_comm_s / e1.m / 8, 3.5 * S / X, 1e-6, "etp 1: the attention's TP collectives only");
	CHECK_REL(e2.kind[1].tp_comm_s / e2.m / 8, 3.5 * S / X + S / X, 1e-6, "etp 2: on the 2-rank expert-TP group");
	CHECK_REL(e4.kind[1].tp_comm_s / e4.m / 8, 3.5 * S / X + 3 * S / X, 1e-6, "etp 4: on the 4-rank expert-TP group");
	CHECK_REL(e8.kind[1].tp_comm_s / e8.m / 8, 3.5 * S / X + 7 * S / X, 1e-6, "etp 8: the routed tokens' gather and scatter, k copies");
}

/* Megatron-Core's selective recompute modules (--recompute-modules): what each frees after the
 * forward and re-runs in the backward, per block and micro-batch, from the modules' dataflow
 * (transformer_layer.py, multi_latent_attention.py, moe/experts.py), bf16, tp 1, seq 1024, mbs 1:
 * - mla_up_proj (DeepSeek-V3: 128 heads, q and k of 128 + 64 dims, v of 128 [DSV3 §2.1.1]): q,
 *   k and v, 2 B · 1024 · 128 · (192 + 192 + 128); re-runs the up-projections, q from its
 *   1536-dim latent and k_nope | v from the 512-dim KV latent, 2 · 1024 · 128 · (1536 · 192 +
 *   512 · 256) FLOPs at the profile's GEMM rate (shape effects off), against core_attn's re-run
 *   of the attention, which it does not do;
 * - moe_act (Mixtral: top-2, expert width 14336): the routed experts' activation output, the
 *   FC2 input, 2 B · 1024 · 2 · 14336, half of it under FP8 (Transformer Engine keeps FC2's
 *   input as its 1-byte column-wise copy);
 * - moe: the routed tokens' FC1 input and FC2 output (2 · 4096), gate|up and product
 *   (3 · 14336), 2 B a copy, and the router's fp32 statistics (4 B · 8 experts), and the
 *   forward's dispatch and combine all-to-alls run again: the EP traffic of a step grows by
 *   half (4 all-to-alls a block become 6);
 * - mlp (Llama 3 8B: hidden 4096, SwiGLU width 14336): the MLP's input (4096), gate|up and
 *   product (3 · 14336), 2 B each. */
static void test_recompute_modules(const struct hw *h0)
{
	struct model ds, mx, l8;
	char err[ERR_LEN];
	if (model_load("deepseek-v3", &ds, err) || model_load("mixtral-8x7b", &mx, err) || model_load("llama-3-8b", &l8, err)) {
		CHECK(0, "%s", err);
		return;
	}
	struct hw h = *h0;
	h.gemm_half_dim = 0;
	struct plan p;
	struct estimate a, b;
	const double T = 1024;
	/* DeepSeek-V3 over pp 8, ep 8: stage 1 holds only MoE blocks */
#define DS KV("gpus", "64", "pp", "8", "ep", "8", "seq", "1024", "mbs", "1", "gbs", "64", "recompute", "selective")
	if (run(&ds, &h, DS, &p, &a) || run_with(&ds, &h, DS, "recompute_modules", "mla_up_proj", &p, &b)) return;
#undef DS
	const struct rank_est *ka = kind_at_stage(&a, 1), *kb = kind_at_stage(&b, 1);
	if (!ka || !kb) { CHECK(0, "deepseek: no stage 1"); return; }
	double n = ka->layers;
	CHECK_REL(ka->act_per_mb_bytes - kb->act_per_mb_bytes, n * 2 * T * 128 * (192 + 192 + 128), 1e-9, "mla_up_proj frees q, k and v");
	double up = 2 * T * 128 * (1536.0 * 192 + 512.0 * 256) / (h.peak_bf16_flops * h.gemm_eff);
	CHECK_REL(kb->recompute_s, a.m * n * up, 1e-9, "mla_up_proj re-runs the up-projections, not the attention");
	/* the latents stay: the q down-projection's output and its norm's, 2 · 2 B · 1024 a dim, so a
	 * q latent twice as wide keeps 2 · 2 B · 1024 · 1536 more a block */
	struct model ds2 = ds;
	ds2.q_lora_rank = 2 * 1536;
#define DS KV("gpus", "64", "pp", "8", "ep", "8", "seq", "1024", "mbs", "1", "gbs", "64", "recompute", "selective")
	if (run(&ds2, &h, DS, &p, &b)) return;
#undef DS
	kb = kind_at_stage(&b, 1);
	if (!kb) return;
	CHECK_REL(kb->act_per_mb_bytes - ka->act_per_mb_bytes, n * 2 * 2 * T * 1536, 1e-9, "MLA keeps its latents and their norms' outputs");
	/* Mixtral, ep 8 on one node */
#define MX KV("gpus", "8", "ep", "8", "seq", "1024", "mbs", "1", "gbs", "8", "recompute", "selective")
	if (run(&mx, &h, MX, &p, &a) || run_with(&mx, &h, MX, "recompute_modules", "moe_act", &p, &b)) return;
	CHECK_REL(a.kind[0].act_per_mb_bytes - b.kind[0].act_per_mb_bytes, 32 * 2 * T * 2 * 14336, 1e-9, "moe_act frees the FC2 input");
	struct estimate c;
	if (run_with(&mx, &h, MX, "recompute_modules", "moe", &p, &c)) return;
	CHECK_REL(a.kind[0].act_per_mb_bytes - c.kind[0].act_per_mb_bytes, 32 * (2 * T * 2 * (2 * 4096 + 3 * 14336) + 4 * T * 8), 1e-9,
		  "moe frees the routed tokens and the router's statistics");
	CHECK_REL(c.kind[0].ep_comm_s, 1.5 * a.kind[0].ep_comm_s, 1e-9, "moe re-runs the forward's dispatch and combine");
#undef MX
#define MF KV("gpus", "8", "ep", "8", "seq", "1024", "mbs", "1", "gbs", "8", "recompute", "selective", "precision", "fp8")
	if (run(&mx, &h, MF, &p, &a) || run_with(&mx, &h, MF, "recompute_modules", "moe_act", &p, &b)) return;
#undef MF
	CHECK_REL(a.kind[0].act_per_mb_bytes - b.kind[0].act_per_mb_bytes, 32 * 1 * T * 2 * 14336, 1e-9, "moe_act under FP8: the 1-byte copy");
	/* Llama 3 8B, dp 8 */
#define L8 KV("gpus", "8", "seq", "1024", "mbs", "1", "gbs", "8", "recompute", "selective")
	if (run(&l8, &h, L8, &p, &a) || run_with(&l8, &h, L8, "recompute_modules", "core_attn,mlp", &p, &b)) return;
#undef L8
	CHECK_REL(a.kind[0].act_per_mb_bytes - b.kind[0].act_per_mb_bytes, 32 * 2 * T * (4096 + 3 * 14336), 1e-9, "mlp frees the dense MLP's tensors");
	CHECK(b.kind[0].recompute_s > a.kind[0].recompute_s, "mlp re-runs the MLP beside the attention");
}

/* ZeRO-3 issues its collectives per block: an all-gather before each block's forward and
 * backward and a reduce-scatter after its backward, every micro-batch [ZERO §5.3], each with
 * its own latency. With bandwidth made free, one collective costs NCCL's latency: tp 8, dp 16
 * puts one DP member per node, so an all-gather or reduce-scatter is a ring of 15 network hops,
 * LL protocol: 6.6 + 15·2.7 = 47.1 µs (NCCL src/graph/tuning.cc; PAT would take 8 + 4/3.5·14 +
 * 16·2.8 = 68.8 µs). llama-3-8b has 32 blocks; gbs 64 over dp 16 at mbs 1 is 4 micro-batches. */
static void test_zero3_per_block(const struct model *m8, const struct hw *h0)
{
	struct hw h = *h0;
	ideal_fabric(&h, 1e18, 0);
	struct plan p;
	struct estimate e;
	if (run(m8, &h, KV("gpus", "128", "tp", "8", "zero", "3", "seq", "2048", "mbs", "1", "gbs", "64"), &p, &e)) return;
	double one = (6.6 + 15 * 2.7) * 1e-6;
	CHECK_REL(e.kind[0].dp_comm_s, 4 * 32 * 3 * one, 1e-3, "zero 3: 3 collectives per block per micro-batch");
	/* the first gather of each forward and backward and the last reduce-scatter cannot hide */
	CHECK(e.kind[0].dp_exposed_s >= 4 * 3 * one * (1 - 1e-9), "zero 3: %.4g s exposed, at least %.4g",
	      e.kind[0].dp_exposed_s, 4 * 3 * one);
}

/* Every ZeRO stage prices the overlap switches alike: with overlap_grad_reduce and
 * overlap_param_gather off, everything the stage sends over the DP group is exposed (the
 * collectives run between the compute); each switch turned on hides some of it and never adds
 * time. Interleaved 1F1B exposes 2(p−1) + 2·m·v sends without overlap_p2p and the 2(p−1)
 * of the fill and the drain with it [MEG §2.2.2]. */
static void test_overlap_switches(const struct model *m8, const struct hw *h)
{
	static const char *const zs[] = {"0", "1", "2", "3"};
	for (int z = 0; z < 4; z++) {
		struct plan p;
		struct estimate off, grad, both;
		if (run(m8, h, KV("gpus", "64", "tp", "2", "zero", zs[z], "seq", "4096", "mbs", "1", "gbs", "128"), &p, &off) ||
		    run(m8, h, KV("gpus", "64", "tp", "2", "zero", zs[z], "seq", "4096", "mbs", "1", "gbs", "128",
				  "overlap_grad_reduce", "1"), &p, &grad) ||
		    run(m8, h, KV("gpus", "64", "tp", "2", "zero", zs[z], "seq", "4096", "mbs", "1", "gbs", "128",
				  "overlap_grad_reduce", "1", "overlap_param_gather", "1"), &p, &both))
			return;
		const struct rank_est *o = &off.kind[0], *g = &grad.kind[0], *b = &both.kind[0];
		CHECK(o->dp_comm_s > 0, "zero %d: dp 32 communicates", z);
		CHECK_REL(o->dp_exposed_s, o->dp_comm_s, 1e-9, "overlaps off: all DP communication exposed");
		CHECK(g->dp_exposed_s < o->dp_exposed_s, "zero %d: overlap_grad_reduce hides some (%.4f vs %.4f s)", z,
		      g->dp_exposed_s, o->dp_exposed_s);
		CHECK(b->dp_exposed_s <= g->dp_exposed_s + 1e-12, "zero %d: overlap_param_gather adds no time", z);
		if (z >= 1) CHECK(b->dp_exposed_s < g->dp_exposed_s, "zero %d: overlap_param_gather hides some gathers", z);
	}
	struct plan p;
	struct estimate e0, e1;
	if (run(m8, h, KV("gpus", "32", "pp", "4", "tp", "8", "schedule", "interleaved", "vpp", "2", "seq", "4096",
			  "gbs", "16"), &p, &e0) ||
	    run(m8, h, KV("gpus", "32", "pp", "4", "tp", "8", "schedule", "interleaved", "vpp", "2", "seq", "4096",
			  "gbs", "16", "overlap_p2p", "1"), &p, &e1))
		return;
	int m = plan_microbatches(&p);
	CHECK(e0.kind[0].t_p2p > 0, "pp 4 sends activations");
	CHECK_REL(e0.kind[0].pp_comm_s, (2 * 3 + 2 * m * 2) * e0.kind[0].t_p2p, 1e-9, "interleaved, no p2p overlap");
	CHECK_REL(e1.kind[0].pp_comm_s, 2 * 3 * e1.kind[0].t_p2p, 1e-9, "interleaved, p2p overlapped");
}

/* Unfused attention keeps the s x s scores, softmax output and dropout mask: 5·a·s²·b bytes per
 * layer over t [KOR eq. 2, the 5as/h term], in place of flash attention's fp32 softmax
 * statistics (4·s·b·a/t); selective recompute drops exactly that term [KOR §5]. GPT-3, t 8,
 * b 1, s 2048: 5·96·2048²/8 = 2.5166e8 bytes per layer; statistics 4·2048·96/8 = 98304. Its
 * forward moves at least 13 bytes per score element through HBM (write, softmax 2+2, dropout
 * 2+2+1, read by PV), so it is slower than flash by at least that traffic's time. */
static void test_unfused_attention(const struct model *gpt3, const struct hw *h)
{
	struct plan p;
	struct estimate ef, eu, es;
	if (run(gpt3, h, KV("gpus", "8", "tp", "8", "seq", "2048", "gbs", "1", "flash_attn", "1"), &p, &ef)) return;
	if (run(gpt3, h, KV("gpus", "8", "tp", "8", "seq", "2048", "gbs", "1", "flash_attn", "0"), &p, &eu)) return;
	double per_layer = (eu.kind[0].act_per_mb_bytes - ef.kind[0].act_per_mb_bytes) / gpt3->layers;
	CHECK_REL(per_layer, 2.5166e8 - 98304, 1e-3, "unfused attention: 5as^2b/t bytes per layer [KOR eq. 2]");
	double el = 96.0 / 8 * 2048 * 2048;
	double floor_s = gpt3->layers * 13 * el / (h->hbm_bw_bps * h->mem_eff);
	CHECK(eu.kind[0].t_f - ef.kind[0].t_f > 0.5 * floor_s, "unfused forward slower by the score traffic: %g s vs %g s",
	      eu.kind[0].t_f - ef.kind[0].t_f, floor_s);
	if (run(gpt3, h, KV("gpus", "8", "tp", "8", "seq", "2048", "gbs", "1", "flash_attn", "0", "recompute", "selective"), &p, &es)) return;
	CHECK_REL(es.kind[0].act_per_mb_bytes, ef.kind[0].act_per_mb_bytes - gpt3->layers * 98304.0, 1e-6,
		  "selective recompute drops the score term");
}

/* FP8 with dynamic scaling (torchao) casts every GEMM operand: with GEMMs made free (huge
 * peaks) the FP8 forward of llama-3-8b (seq 4096, mbs 1) exceeds the BF16 one by the cast
 * traffic alone: per layer 5 bytes per element of each input (per token 4096 + 4096 + 4096 +
 * 14336 = 26624) and of each weight (4096·(4096 + 2·1024) + 4096·4096 + 3·4096·14336 =
 * 218,103,808), at HBM bandwidth × mem_eff. Transformer Engine with delayed scaling reads each
 * input once and writes its two FP8 copies (4 bytes) and casts the weights once per step
 * (4 bytes, one micro-batch here). */
static void test_fp8_casts(const struct model *m8, const struct hw *h0)
{
	struct hw h = *h0;
	h.peak_bf16_flops = h.peak_fp8_flops = 1e30;
	struct plan p;
	struct estimate eb, e8;
	if (run(m8, &h, KV("gpus", "1", "seq", "4096", "gbs", "1", "precision", "bf16"), &p, &eb)) return;
	if (run(m8, &h, KV("gpus", "1", "seq", "4096", "gbs", "1", "precision", "fp8", "fp8_impl", "torchao"), &p, &e8)) return;
	double want = 32 * (4096.0 * 5 * 26624 + 5 * 218103808.0) / (h.hbm_bw_bps * h.mem_eff);
	CHECK_REL(e8.kind[0].t_f - eb.kind[0].t_f, want, 1e-6, "torchao FP8 cast traffic in forward");
	/* under TP 2 with SP, torchao's float8 TP casts the column-parallel layers' inputs on the
	 * rank's sequence shard before the all-gather (PrepareFloat8ModuleInput): per token
	 * 4096/2 + 4096/2 + 4096/2 + 14336/2 = 13312 input elements, the weights halved; with no
	 * host cost and a free fabric the forward differs by that traffic alone */
	struct hw ht;
	ideal_copy(&ht, &h, 1e30);
	ht.host_op_s = ht.host_coll_s = ht.kernel_s = 0;
	struct estimate ebt, e8t;
	if (run(m8, &ht, KV("gpus", "2", "tp", "2", "sp", "1", "seq", "4096", "gbs", "1", "precision", "bf16"), &p, &ebt)) return;
	if (run(m8, &ht, KV("gpus", "2", "tp", "2", "sp", "1", "seq", "4096", "gbs", "1", "precision", "fp8", "fp8_impl", "torchao"), &p, &e8t)) return;
	want = 32 * (4096.0 * 5 * 13312 + 5 * 218103808.0 / 2) / (h.hbm_bw_bps * h.mem_eff);
	CHECK_REL(e8t.kind[0].t_f - ebt.kind[0].t_f, want, 1e-6, "torchao FP8 under SP: inputs cast on the sequence shard");
	if (run(m8, &h, KV("gpus", "1", "seq", "4096", "gbs", "1", "precision", "fp8", "fp8_impl", "te"), &p, &e8)) return;
	want = 32 * (4096.0 * 4 * 26624 + 4 * 218103808.0) / (h.hbm_bw_bps * h.mem_eff);
	CHECK_REL(e8.kind[0].t_f - eb.kind[0].t_f, want, 1e-6, "Transformer Engine FP8 cast traffic in forward");
	/* weight-gradient GEMMs alone (t_w): FP8 runs at its own MAMF, 1402.6 of 1979 TFLOP/s,
	 * BF16 at 794.5 of 989 (ecosystem.md 1.3), same shapes */
	if (run(m8, h0, KV("gpus", "1", "seq", "4096", "gbs", "1", "precision", "bf16"), &p, &eb)) return;
	if (run(m8, h0, KV("gpus", "1", "seq", "4096", "gbs", "1", "precision", "fp8"), &p, &e8)) return;
	CHECK_REL(eb.kind[0].t_w / e8.kind[0].t_w, (1979 * 0.709) / (989 * 0.803), 1e-6, "FP8 GEMMs at the FP8 MAMF");
}

/* fp16 with loss scaling runs on the same tensor cores at the same dense peak as bf16 (H100:
 * 989 TFLOP/s for both, ecosystem.md 1.1) with 2-byte tensors, so a plan's step time and memory
 * do not change with the switch; fp32 (half the peak in this model, 4-byte tensors) does */
static void test_fp16_as_bf16(const struct model *m8, const struct hw *h)
{
	struct plan p;
	struct estimate eb, e16, e32;
	if (run(m8, h, KV("gpus", "8", "tp", "2", "seq", "4096", "gbs", "32", "precision", "bf16"), &p, &eb)) return;
	if (run(m8, h, KV("gpus", "8", "tp", "2", "seq", "4096", "gbs", "32", "precision", "fp16"), &p, &e16)) return;
	if (run(m8, h, KV("gpus", "8", "tp", "2", "seq", "4096", "gbs", "32", "precision", "fp32"), &p, &e32)) return;
	CHECK(e16.step_time_s == eb.step_time_s && e16.peak_mem_bytes == eb.peak_mem_bytes,
	      "fp16 priced as bf16: %g s vs %g s", e16.step_time_s, eb.step_time_s);
	CHECK(e32.step_time_s > 1.5 * eb.step_time_s, "fp32 slower than bf16 (the test can tell them apart)");
}

/* Overlapped TP splits each collective into t chunks pipelined with its GEMM: when the GEMM
 * outlasts the collective, all but the first chunk hide and the hidden part costs the
 * profile's overlap_slowdown s (18.9 %, arXiv 2507.03114), so the exposed share is
 * 1/t + s·(t−1)/t = 0.2904 at t = 8. GPT-3 at t 8, seq 2048 on a
 * latency-free h100 fabric: one all-reduce of 50 MB ≈ 0.26 ms, two per block forward, against
 * ~1.2 ms of forward GEMMs per block. */
static void test_tp_overlap(const struct model *gpt3, const struct hw *h0)
{
	const double X = h0->tier[0].busbw_bps; /* the profile's NVLink, without latency */
	struct hw h;
	ideal_copy(&h, h0, X);
	struct plan p;
	struct estimate e0, e1;
	if (run_off_on(gpt3, &h, KV("gpus", "8", "tp", "8", "seq", "2048", "gbs", "1"), "overlap_tp_comm", &p, &e0, &e1)) return;
	/* the collectives outside the blocks (embedding, head, loss) are not chunked */
	double out = tp_outside_blocks_s(1, 2048, gpt3->hidden, 8, X);
	double s = h.overlap_slowdown;
	CHECK(s > 0.1 && s < 0.3, "the profile's overlap slowdown is the measured 18.9 %% (%g)", s);
	CHECK_REL((e1.kind[0].tp_comm_s - out) / (e0.kind[0].tp_comm_s - out), 1.0 / 8 + s * 7.0 / 8, 1e-6,
		  "overlapped TP exposes the first chunk + the slowdown of the rest");
}

/* Full recompute re-runs each block's forward once, its TP collectives included: per block 2
 * all-reduce equivalents forward, 2 backward, 2 in the recomputed forward [KOR §5: 6 vs 4], so
 * exposed TP time is 3/2 of the no-recompute plan's, and the added compute is exactly the
 * recompute time (the collectives are not compute). */
static void test_recompute_comm(const struct model *gpt3, const struct hw *h0)
{
	const double X = h0->tier[0].busbw_bps; /* the profile's NVLink, without latency */
	struct hw h;
	ideal_copy(&h, h0, X);
	struct plan p;
	struct estimate en, ef;
	if (run(gpt3, &h, KV("gpus", "8", "tp", "8", "seq", "2048", "gbs", "1", "recompute", "none"), &p, &en)) return;
	if (run(gpt3, &h, KV("gpus", "8", "tp", "8", "seq", "2048", "gbs", "1", "recompute", "full"), &p, &ef)) return;
	/* the embedding, head and loss are not recomputed */
	double out = tp_outside_blocks_s(1, 2048, gpt3->hidden, 8, X);
	CHECK_REL((ef.kind[0].tp_comm_s - out) / (en.kind[0].tp_comm_s - out), 1.5, 1e-9,
		  "full recompute: 6 TP collectives per block, not 4 (or 8)");
	CHECK_REL(ef.kind[0].compute_s - en.kind[0].compute_s, ef.kind[0].recompute_s, 1e-9, "added compute = recompute");
}

/* Per-op checkpointing (recompute op, torchtitan's policy) keeps per block the block input, the
 * attention output with fp32 statistics and half of the matmul outputs. llama-3-8b, seq 4096,
 * mbs 1, no TP: per token 2·4096 + 2·4096 + 4·32 bytes + half of 2·(4096 + 2·1024 + 4096 +
 * 2·14336 + 4096) = 16512 + 43008 = 59520 bytes, × 4096 tokens × 32 layers. With GEMMs the only
 * cost (element-wise traffic, attention and launches free) it re-runs half of what full
 * recompute re-runs. Without recompute a block keeps (model.md §2.2, Llama-style) the inputs of
 * both norms, of QKV and of the MLP (4·4096), q, k, v (6144), the attention output (4096),
 * gate|up and the product (3·14336) in 2 bytes, and 4 bytes of softmax statistics per head. */
static void test_recompute_op(const struct model *m8, const struct hw *h0)
{
	struct plan p;
	struct estimate en, eo, ef;
	if (run(m8, h0, KV("gpus", "1", "seq", "4096", "gbs", "1", "recompute", "none"), &p, &en)) return;
	if (run(m8, h0, KV("gpus", "1", "seq", "4096", "gbs", "1", "recompute", "op"), &p, &eo)) return;
	double head = en.kind[0].act_per_mb_bytes - 32 * 4096.0 * 2 * (4096 * 4 + 6144 + 4096 + 3 * 14336) - 32 * 4.0 * 4096 * 32;
	CHECK_REL(eo.kind[0].act_per_mb_bytes - head, 32 * 4096.0 * 59520, 1e-9, "recompute op: activations kept per block");
	struct hw h = *h0;
	h.hbm_bw_bps = 1e30;
	h.attn_eff = 1e12;
	h.host_op_s = h.host_coll_s = h.kernel_s = 0;
	if (run(m8, &h, KV("gpus", "1", "seq", "4096", "gbs", "1", "recompute", "op"), &p, &eo)) return;
	if (run(m8, &h, KV("gpus", "1", "seq", "4096", "gbs", "1", "recompute", "full"), &p, &ef)) return;
	CHECK_REL(eo.kind[0].recompute_s / ef.kind[0].recompute_s, 0.5, 1e-9, "recompute op re-runs half the GEMMs");
}

int main(void)
{
	struct model m8, m405;
	/* GPT-3 as in the Megatron papers (vocabulary 51200, which TP 8 divides) */
	struct model gpt3 = gpt("gpt3", 96, 12288, 96, 51200);
	struct hw h;
	char err[ERR_LEN] = "";
	if (model_load("llama-3-8b", &m8, err) || model_load("llama-3.1-405b", &m405, err) ||
	    model_check(&gpt3, err) || hw_load("h100-sxm", &h, err)) {
		CHECK(0, "profiles: %s", err);
		return test_summary("test_estimate");
	}
	test_zero_monotone(&m8, &h);
	test_recompute_tradeoff(&m8, &h);
	test_weak_scaling(&m8, &h);
	test_inflight_1f1b(&m8, &h);
	test_inflight_interleaved(&gpt3, &h);
	test_fits_and_oom(&m8, &m405, &h);
	test_cp_ring_steps(&m8, &h);
	test_ep_dispatch(&h);
	test_moe_folding(&h);
	test_recompute_modules(&h);
	test_mfu_definition(&m8, &h);
	test_bubble_fraction(&h);
	test_comm_volumes(&gpt3, &h);
	test_sp_collectives(&gpt3, &h);
	test_zero3_per_block(&m8, &h);
	test_overlap_switches(&m8, &h);
	test_unfused_attention(&gpt3, &h);
	test_fp8_casts(&m8, &h);
	test_fp16_as_bf16(&m8, &h);
	test_tp_overlap(&gpt3, &h);
	test_recompute_comm(&gpt3, &h);
	test_recompute_op(&m8, &h);
	return test_summary("test_estimate");
}
