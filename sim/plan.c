/* plan — the one parser and validator of a training plan. Every key lives in plan_keys[],
 * which drives the CLI flags, the JSON reader and writer, and --help alike. */
#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "sim/plan.h"
#include "sim/schedule.h"
#include "sim/model.h"
#include "sim/hw.h"
#include "sim/util.h"

enum key_type { K_INT, K_BOOL, K_STR, K_SCHED, K_RC, K_PREC, K_SPLIT, K_ENUM, K_MASK };

struct plan_key {
	const char *name;
	enum key_type type;
	size_t off;
	long lo, hi;              /* K_INT range; K_ENUM, K_MASK: hi = number of names */
	const char *help;
	const char *const *names; /* K_ENUM: the values' names, by index; K_MASK: by bit */
};

static const char *const alloc_names[ALLOC_COUNT] = {"native", "expandable"};
static const char *const opt_names[OPT_COUNT] = {"fused", "foreach"};
static const char *const recv_names[RECV_COUNT] = {"none", "microbatch", "ring"};
static const char *const split_names[SPLIT_COUNT] = {"balanced", "cost", "torchtitan", "torchtitan-io", "first"};
static const char *const fp8_names[FP8_COUNT] = {"te", "torchao"};
static const char *const route_names[ROUTE_COUNT] = {"random", "consecutive"};
static const char *const loss_names[LOSS_COUNT] = {"vocab-parallel", "eager", "loss-parallel", "eager-bf16", "compiled"};
static const char *const rcm_names[RCM_COUNT] = {"core_attn", "mla_up_proj", "moe_act", "layernorm", "mlp", "moe", "shared_experts"};

#define OFF(f) offsetof(struct plan, f)
static const struct plan_key plan_keys[] = {
	{"model", K_STR, OFF(model), 0, 0, "model profile name or config.json path", NULL},
	{"gpu", K_STR, OFF(gpu), 0, 0, "hardware profile name or JSON path", NULL},
	{"gpus", K_INT, OFF(gpus), 0, 1 << 20, "total GPUs (world size)", NULL},
	{"gpus_per_node", K_INT, OFF(gpus_per_node), 0, 1024, "GPUs per node (default: the profile's)", NULL},
	{"dp", K_INT, OFF(dp), 0, 1 << 20, "data-parallel degree (default: gpus/(tp*pp*cp))", NULL},
	{"tp", K_INT, OFF(tp), 1, 1024, "tensor-parallel degree", NULL},
	{"pp", K_INT, OFF(pp), 1, 4096, "pipeline-parallel degree", NULL},
	{"cp", K_INT, OFF(cp), 1, 1024, "context-parallel degree", NULL},
	{"ep", K_INT, OFF(ep), 1, 1 << 16, "expert-parallel degree (ep*etp divides tp*dp*cp: parallel folding)", NULL},
	{"etp", K_INT, OFF(etp), 0, 1024, "expert tensor-parallel degree, <= tp (0: tp)", NULL},
	{"vpp", K_INT, OFF(vpp), 1, 256, "model chunks per pipeline rank (interleaved)", NULL},
	{"sp", K_BOOL, OFF(sp), 0, 1, "sequence parallelism inside TP", NULL},
	{"zero", K_INT, OFF(zero), 0, 3, "ZeRO stage 0-3", NULL},
	{"recompute", K_RC, OFF(recompute), 0, 0, "none|selective|full|op (op: torchtitan per-op)", NULL},
	{"recompute_layers", K_INT, OFF(recompute_layers), -1, 1 << 16, "with full: layers per stage recomputed (-1 all)", NULL},
	{"recompute_modules", K_MASK, OFF(recompute_modules), 0, RCM_COUNT, "with selective: what is re-run, comma separated (Megatron-Core --recompute-modules): core_attn, mla_up_proj, moe_act, layernorm, mlp, moe, shared_experts", rcm_names},
	{"mbs", K_INT, OFF(mbs), 1, 1 << 16, "micro-batch size, sequences", NULL},
	{"gbs", K_INT, OFF(gbs), 0, 1 << 26, "global batch, sequences", NULL},
	{"seq", K_INT, OFF(seq), 1, 1 << 24, "sequence length, tokens", NULL},
	{"schedule", K_SCHED, OFF(schedule), 0, 0, "afab|1f1b|interleaved|zb-h1|zb-h2|zb-v|dualpipe|dualpipev|none", NULL},
	{"order", K_STR, OFF(order), 0, 0, "rank order innermost first, e.g. tp-cp-dp-pp", NULL},
	{"precision", K_PREC, OFF(precision), 0, 0, "bf16|fp16|fp8|fp32", NULL},
	{"fp32_grads", K_BOOL, OFF(fp32_grads), 0, 1, "fp32 gradient accumulation buffer", NULL},
	{"bf16_states", K_BOOL, OFF(bf16_states), 0, 1, "weights, gradients at rest and Adam moments in bf16, no fp32 master copy (a model built in bf16 under FSDP2)", NULL},
	{"pp_recv", K_ENUM, OFF(pp_recv), 0, RECV_COUNT, "none|microbatch|ring: pipeline receive buffers kept for the step (microbatch: torch.distributed.pipelining's one per micro-batch for every stage input and output gradient; ring: (pp - stage) + 2 of them, NeMo AutoModel's pool under 1F1B)", recv_names},
	{"ddp_buckets", K_BOOL, OFF(ddp_buckets), 0, 1, "torch DDP's flat gradient buckets beside the gradients (gradient_as_bucket_view off): 16 bits per parameter when dp*cp > 1", NULL},
	{"grad_accum_pass", K_BOOL, OFF(grad_accum_pass), 0, 1, "each micro-batch's gradients added into the fp32 buffer by a pass after its backward (0: fused into the weight-gradient GEMM)", NULL},
	{"overlap_grad_reduce", K_BOOL, OFF(overlap_grad_reduce), 0, 1, "overlap DP gradient reduction with backward", NULL},
	{"overlap_param_gather", K_BOOL, OFF(overlap_param_gather), 0, 1, "overlap ZeRO parameter gathers with compute", NULL},
	{"overlap_tp_comm", K_BOOL, OFF(overlap_tp_comm), 0, 1, "overlap TP/SP collectives with GEMMs", NULL},
	{"flash_attn", K_BOOL, OFF(flash_attn), 0, 1, "fused (flash) attention; 0: unfused, s x s scores in memory", NULL},
	{"overlap_p2p", K_BOOL, OFF(overlap_p2p), 0, 1, "interleaved schedules: pipeline sends/receives overlapped with compute", NULL},
	{"pp_scatter_gather", K_BOOL, OFF(pp_scatter_gather), 0, 1, "pipeline sends without SP: each TP rank sends 1/tp of the stage's output, which every TP rank holds whole, and the receiving stage all-gathers it over its TP group (Megatron-LM's scatter/gather, DeepSpeed's partitioned pipeline tensors); 0: every TP rank sends the whole tensor", NULL},
	{"tp_regather", K_BOOL, OFF(tp_regather), 0, 1, "SP: column-parallel inputs kept sharded and all-gathered again in backward (Megatron, nanotron); 0: the gathered input is kept (torchtitan)", NULL},
	{"cp_fp32_merge", K_BOOL, OFF(cp_fp32_merge), 0, 1, "CP through PyTorch's context parallel (torch.distributed.tensor.experimental): every ring step's block output is merged into an fp32 running output and the query, key and value gradients are accumulated and passed on in fp32, as element-wise passes beside the flash kernels; 0: the merge is fused into the attention kernel (Transformer Engine, ring-flash-attn)", NULL},
	{"shard_master", K_BOOL, OFF(shard_master), 0, 1, "ZeRO-3 keeps no 16-bit shard: the sharded parameter is the fp32 master the optimizer steps, cast to 16 bits only into each all-gather (PyTorch FSDP1 and FSDP2 mixed precision); 0: a 16-bit partition beside the fp32 master (DeepSpeed)", NULL},
	{"fsdp_copies", K_BOOL, OFF(fsdp_copies), 0, 1, "ZeRO-2/3 through FSDP2: every all-gather is copied out of its flat buffer into the parameters (split_with_sizes_copy) and every reduce-scatter's input copied in from the unsharded gradients with the cast to the reduce dtype (_chunk_cat), both on the compute stream", NULL},
	{"dp_host_copies", K_BOOL, OFF(dp_host_copies), 0, 1, "ZeRO-0/1 gradient and parameter syncs through list-form torch.distributed calls that copy every tensor's slice per rank on the host (nanotron's *_coalesced helpers)", NULL},
	{"loss", K_ENUM, OFF(loss), 0, LOSS_COUNT, "vocab-parallel|eager|loss-parallel|eager-bf16|compiled: the loss over the logits (vocab-parallel: Megatron's and nanotron's cross-entropy on fp32-upcast logits; eager: F.cross_entropy on fp32-upcast logits; loss-parallel: the same under DTensor's loss_parallel, decomposed; eager-bf16: F.cross_entropy on bf16 logits; compiled: the upcast and log-softmax fused by torch.compile), which sets the bytes a logit moves through HBM and holds", loss_names},
	{"loss_bytes", K_INT, OFF(loss_bytes), 0, 64, "bytes per logit the loss holds at its peak, one micro-batch (0: the loss kind's: vocab-parallel 6, eager 12, loss-parallel 16, eager-bf16 6, compiled 4)", NULL},
	{"attn_cudnn", K_BOOL, OFF(attn_cudnn), 0, 1, "attention through cuDNN's fused kernel (Transformer Engine prefers it on Hopper), at the hardware profile's attn_eff_cudnn where it has one; 0: FlashAttention-2", NULL},
	{"compile", K_BOOL, OFF(compile), 0, 1, "torch.compile of the blocks (PyTorch frameworks); priced only through the framework profile's defaults it selects (torchtitan: loss, glu_eager, eager_block)", NULL},
	{"glu_eager", K_BOOL, OFF(glu_eager), 0, 1, "gated MLP as separate PyTorch ops (activation, then product): autograd also keeps act(gate), one more intermediate-width tensor per layer, and each op reads and writes HBM (nanotron, torchtitan); 0: one fused kernel (Megatron bias_swiglu_impl)", NULL},
	{"eager_block", K_BOOL, OFF(eager_block), 0, 1, "the block's RMSNorms, rotary embedding and output copy run as separate PyTorch ops, each reading and writing HBM (torchtitan's Llama code without compile); 0: fused kernels", NULL},
	{"kv_repeat", K_BOOL, OFF(kv_repeat), 0, 1, "K and V are repeated to the query heads before the attention kernel (torchtitan's repeat_kv ahead of F.scaled_dot_product_attention): the repeat is a copy, the kernel saves K and V at the query width, and context parallelism exchanges, gathers and accumulates them at that width; 0: the kernel shares the K/V heads (flash-attn's GQA, Transformer Engine, nanotron)", NULL},
	{"qkv_copies", K_BOOL, OFF(qkv_copies), 0, 1, "the attention block copies its tensors into the layouts its kernels take: the fused QKV output permuted into per-head tensors, K and V stacked and permuted for flash-attn's rotary kernel, and with more than one sequence the output transposed back before the O projection (nanotron's CausalSelfAttention); each a read and a write forward and its gradient's copy backward; 0: views only (Megatron, torchtitan)", NULL},
	{"tp_seq_copies", K_BOOL, OFF(tp_seq_copies), 0, 1, "SP collectives on the sequence dimension of batch-first activations copy the gathered tensor into place (PyTorch functional collectives with gather/scatter dim != 0: torchtitan); 0: gathered in place (sequence-first: Megatron, nanotron)", NULL},
	{"overlap_tp_bwd", K_BOOL, OFF(overlap_tp_bwd), 0, 1, "TP backward collectives overlapped with the other backward GEMM (Megatron default)", NULL},
	{"reduce_per_mb", K_BOOL, OFF(reduce_per_mb), 0, 1, "ZeRO-2: reduce-scatter every micro-batch (DeepSpeed, FSDP); 0: once per step", NULL},
	{"optimizer", K_ENUM, OFF(optimizer), 0, OPT_COUNT, "fused|foreach: the Adam step as one fused multi-tensor kernel (Megatron's, torch fused=True) or as torch.optim's foreach ops, each a pass over the states (torch's default on CUDA)", opt_names},
	{"allocator", K_ENUM, OFF(allocator), 0, ALLOC_COUNT, "native|expandable (PyTorch expandable_segments)", alloc_names},
	{"fp8_impl", K_ENUM, OFF(fp8_impl), 0, FP8_COUNT, "te|torchao: who runs the FP8 GEMMs", fp8_names},
	{"moe_routing", K_ENUM, OFF(moe_routing), 0, ROUTE_COUNT, "random|consecutive: how a token picks its top-k experts (random: k distinct, each equally likely, a balanced trained router; consecutive: token i takes experts i*k .. i*k+k-1 mod E, NeMo AutoModel's FakeBalancedGate of its benchmark configs), which sets how many ranks and nodes the dispatch reaches", route_names},
	{"pp_split", K_ENUM, OFF(pp_split), 0, SPLIT_COUNT, "balanced|cost|torchtitan|torchtitan-io|first: the default layer split over pipeline stages (balanced: the remainder on the middle ranks; cost: nanotron's, by cumulative parameter cost with the LM head counted; torchtitan: its split until 2025-04, the remainder on the stages after the first; torchtitan-io: since, embedding and head counted as a layer each, the remainder on the first stages; first: the remainder on the first stages)", split_names},
	{"fp8_params", K_BOOL, OFF(fp8_params), 0, 1, "FP8 primary weights (TE fp8_param_gather): no bf16 weight copy", NULL},
	{"zero3_live_params", K_INT, OFF(zero3_live_params), 0, 2000000000, "ZeRO-3 gathers module by module, at most this many parameters gathered at once (DeepSpeed stage3_max_live_parameters; 0: per block with one prefetched, FSDP)", NULL},
	{"zero3_gather_gbps", K_INT, OFF(zero3_gather_gbps), 0, 100000, "ZeRO-3 collectives capped at this per-GPU GB/s by the framework (0: the fabric's)", NULL},
	{"framework", K_STR, OFF(framework), 0, 0, "framework whose documented defaults fill unset keys (profiles/frameworks)", NULL},
	{"stage_layers", K_SPLIT, OFF(stage_layers), 0, 0, "layers per stage, comma separated", NULL},
};
#define NKEYS (sizeof(plan_keys) / sizeof(plan_keys[0]))
_Static_assert(NKEYS <= 64, "plan.stated has one bit per key");

static const char *const rc_names[] = {"none", "selective", "full", "op"};
#define NRC (sizeof(rc_names) / sizeof(rc_names[0]))
static const char *const prec_names[PREC_COUNT] = {"bf16", "fp8", "fp32", "fp16"};

const char *schedule_name(enum schedule s) { return s < SCHED_COUNT ? sched_family(s)->name : "?"; }
const char *recompute_name(enum recompute r) { return (size_t)r < NRC ? rc_names[r] : "?"; }

/* a set of names' bits as the names, comma separated */
static void names_of(const char *const *names, long count, int v, char *out, size_t n)
{
	size_t len = 0;
	out[0] = 0;
	for (long i = 0; i < count && len < n; i++)
		if (v >> i & 1) len += (size_t)snprintf(out + len, n - len, "%s%s", len ? "," : "", names[i]);
}

/* a K_MASK value as its names */
static void mask_names(const struct plan_key *k, int v, char *out, size_t n) { names_of(k->names, k->hi, v, out, n); }

void recompute_modules_text(int mods, char *buf, size_t n) { names_of(rcm_names, RCM_COUNT, mods, buf, n); }
const char *precision_name(enum precision pr) { return (unsigned)pr < PREC_COUNT ? prec_names[pr] : "?"; }
const char *allocator_name(int a) { return (unsigned)a < ALLOC_COUNT ? alloc_names[a] : "?"; }
const char *fp8_impl_name(int f) { return (unsigned)f < FP8_COUNT ? fp8_names[f] : "?"; }

int schedule_from_name(const char *name, enum schedule *s)
{
	const struct sched_family *f = sched_by_name(name);
	if (!f) return -1;
	*s = f->id;
	return 0;
}

void plan_defaults(struct plan *p)
{
	memset(p, 0, sizeof(*p));
	p->tp = p->pp = p->cp = p->ep = p->vpp = 1;
	p->recompute_layers = -1;
	p->recompute_modules = RCM_CORE_ATTN;
	p->mbs = 1;
	p->seq = 4096;
	p->schedule = SCHED_1F1B;
	strcpy(p->order, "tp-cp-dp-pp");
	p->precision = PREC_BF16;
	p->overlap_grad_reduce = p->overlap_param_gather = 0; /* Megatron defaults: opt-in flags */
	p->fp32_grads = 1;
	p->tp_regather = 1; /* SP as Megatron defines it [KOR §4.2.2] */
	p->flash_attn = 1;
	p->reduce_per_mb = 1;
}

static const struct plan_key *find_key(const char *key)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strcmp(plan_keys[i].name, key) == 0)
			return &plan_keys[i];
	return NULL;
}

int plan_key_index(const char *key)
{
	const struct plan_key *k = find_key(key);
	return k ? (int)(k - plan_keys) : -1;
}

int plan_key_stated(const struct plan *p, const char *key)
{
	int i = plan_key_index(key);
	return i >= 0 && (p->stated >> i & 1);
}

int plan_get(const struct plan *p, const char *key, char *out, size_t n)
{
	const struct plan_key *k = find_key(key);
	if (!k || !n) return -1;
	const char *base = (const char *)p;
	int v = *(const int *)(base + k->off);
	switch (k->type) {
	case K_INT: case K_BOOL: snprintf(out, n, "%d", v); break;
	case K_STR: snprintf(out, n, "%s", base + k->off); break;
	case K_SCHED: snprintf(out, n, "%s", schedule_name(p->schedule)); break;
	case K_RC: snprintf(out, n, "%s", recompute_name(p->recompute)); break;
	case K_PREC: snprintf(out, n, "%s", precision_name(p->precision)); break;
	case K_ENUM: snprintf(out, n, "%s", v >= 0 && v < k->hi ? k->names[v] : "?"); break;
	case K_MASK: mask_names(k, v, out, n); break;
	case K_SPLIT: {
		size_t len = 0;
		out[0] = 0;
		for (int i = 0; i < p->nstage_layers && len + 12 < n; i++)
			len += (size_t)snprintf(out + len, n - len, "%s%d", i ? "," : "", p->stage_layers[i]);
		break;
	}
	}
	return 0;
}

static int parse_bool(const char *v, int *out)
{
	if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "yes")) { *out = 1; return 0; }
	if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "no")) { *out = 0; return 0; }
	return -1;
}

static int parse_split(struct plan *p, const char *v, char *err)
{
	int n = 0;
	const char *s = v;
	while (*s) {
		char *end;
		long x = strtol(s, &end, 10);
		if (end == s || x < 1 || x > 100000)
			return errf(err, "plan: stage_layers: '%s' is not a list of positive integers", v);
		if (n >= PLAN_MAX_STAGES)
			return errf(err, "plan: stage_layers: more than %d stages", PLAN_MAX_STAGES);
		p->stage_layers[n++] = (int)x;
		s = end;
		if (*s == ',') s++;
		else if (*s) return errf(err, "plan: stage_layers: '%s' is not a comma-separated list", v);
	}
	if (n == 0)
		return errf(err, "plan: stage_layers: empty list");
	p->nstage_layers = n;
	return 0;
}

static int set_order(struct plan *p, const char *v, char *err)
{
	/* a permutation of tp, cp, dp, pp; "ep" may appear and is ignored (EP is folded into dp*cp) */
	const char *want[4] = {"tp", "cp", "dp", "pp"};
	int seen[4] = {0};
	char buf[64], out[32] = "";
	if (strlen(v) >= sizeof(buf))
		return errf(err, "plan: order: '%s' is too long", v);
	strcpy(buf, v);
	char *save = NULL;
	for (char *tok = strtok_r(buf, "-,", &save); tok; tok = strtok_r(NULL, "-,", &save)) {
		if (!strcmp(tok, "ep")) continue;
		int k = -1;
		for (int i = 0; i < 4; i++) if (!strcmp(tok, want[i])) k = i;
		if (k < 0 || seen[k])
			return errf(err, "plan: order: '%s' must be a permutation of tp, cp, dp, pp", v);
		seen[k] = 1;
		if (out[0]) strcat(out, "-");
		strcat(out, want[k]);
	}
	for (int i = 0; i < 4; i++)
		if (!seen[i]) return errf(err, "plan: order: '%s' lacks %s", v, want[i]);
	strcpy(p->order, out);
	return 0;
}

static int set_value(struct plan *p, const struct plan_key *k, const char *key, const char *val, char *err);

int plan_set(struct plan *p, const char *key, const char *val, char *err)
{
	const struct plan_key *k = find_key(key);
	if (!k)
		return errf(err, "plan: unknown key '%s'", key);
	if (!val)
		return errf(err, "plan: %s: missing value", key);
	if (set_value(p, k, key, val, err)) return -1;
	p->stated |= (uint64_t)1 << (k - plan_keys);
	return 0;
}

static int set_value(struct plan *p, const struct plan_key *k, const char *key, const char *val, char *err)
{
	char *base = (char *)p;
	long v;
	int b;
	switch (k->type) {
	case K_INT: {
		char field[64];
		snprintf(field, sizeof(field), "plan: %s", key);
		if (parse_int(val, field, k->lo, k->hi, &v, err)) return -1;
		*(int *)(base + k->off) = (int)v;
		return 0;
	}
	case K_BOOL:
		if (parse_bool(val, &b)) return errf(err, "plan: %s: '%s' is not a boolean (1/0)", key, val);
		*(int *)(base + k->off) = b;
		return 0;
	case K_STR:
		if (!strcmp(key, "order")) return set_order(p, val, err);
		if (strlen(val) >= PLAN_NAME_LEN) return errf(err, "plan: %s: longer than %d characters", key, PLAN_NAME_LEN - 1);
		strcpy(base + k->off, val);
		return 0;
	case K_SCHED:
		if (schedule_from_name(val, &p->schedule)) {
			char names[256];
			return errf(err, "plan: schedule: unknown schedule '%s' (%s)", val, sched_name_list(names, sizeof(names), ", ", 1));
		}
		return 0;
	case K_RC:
		for (size_t i = 0; i < NRC; i++)
			if (!strcmp(val, rc_names[i])) { p->recompute = (enum recompute)i; return 0; }
		return errf(err, "plan: recompute: '%s' is not none, selective, full or op", val);
	case K_PREC:
		for (int i = 0; i < PREC_COUNT; i++)
			if (!strcmp(val, prec_names[i])) { p->precision = (enum precision)i; return 0; }
		return errf(err, "plan: precision: '%s' is not bf16, fp16, fp8 or fp32", val);
	case K_SPLIT:
		return parse_split(p, val, err);
	case K_ENUM:
		for (long i = 0; i < k->hi; i++)
			if (!strcmp(val, k->names[i])) { *(int *)(base + k->off) = (int)i; return 0; }
		{
			char list[128] = "";
			for (long i = 0; i < k->hi; i++)
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "", k->names[i]);
			return errf(err, "plan: %s: '%s' is not one of %s", key, val, list);
		}
	case K_MASK: {
		int mask = 0;
		const char *s = val;
		while (*s) {
			size_t w = strcspn(s, ", ");
			long i = 0;
			while (i < k->hi && (strlen(k->names[i]) != w || strncmp(s, k->names[i], w))) i++;
			if (w && i == k->hi) {
				char list[160] = "";
				mask_names(k, (1 << k->hi) - 1, list, sizeof(list));
				return errf(err, "plan: %s: '%.*s' is not one of %s", key, (int)w, s, list);
			}
			if (w) mask |= 1 << i;
			s += w;
			while (*s == ',' || *s == ' ') s++;
		}
		if (!mask) return errf(err, "plan: %s: empty list", key);
		*(int *)(base + k->off) = mask;
		return 0;
	}
	}
	return errf(err, "plan: %s: internal error", key);
}

int plan_from_json(const char *text, struct plan *p, char *err)
{
	cJSON *root = cJSON_Parse(text);
	if (!root)
		return errf(err, "plan: malformed JSON near '%.20s'", cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "");
	int rc = 0;
	if (!cJSON_IsObject(root)) {
		rc = errf(err, "plan: the JSON plan must be an object");
		goto out;
	}
	for (cJSON *it = root->child; it && rc == 0; it = it->next) {
		char buf[64];
		const char *val = NULL;
		if (!strcmp(it->string, "stage_layers") && cJSON_IsArray(it)) {
			int n = 0;
			for (cJSON *e = it->child; e; e = e->next) {
				if (!cJSON_IsNumber(e) || !is_int_in(e->valuedouble, 1, 100000))
					{ rc = errf(err, "plan: stage_layers: entries must be positive integers"); break; }
				if (n >= PLAN_MAX_STAGES) { rc = errf(err, "plan: stage_layers: more than %d stages", PLAN_MAX_STAGES); break; }
				p->stage_layers[n++] = (int)e->valuedouble;
			}
			p->nstage_layers = n;
			continue;
		}
		char list[160];
		if (cJSON_IsString(it)) val = it->valuestring;
		else if (cJSON_IsBool(it)) val = cJSON_IsTrue(it) ? "1" : "0";
		else if (cJSON_IsArray(it) && find_key(it->string) && find_key(it->string)->type == K_MASK) {
			/* a set as a list of names, as Megatron-Bridge configs write recompute_modules */
			size_t len = 0;
			list[0] = 0;
			for (cJSON *e = it->child; e && rc == 0; e = e->next) {
				if (!cJSON_IsString(e)) { rc = errf(err, "plan: %s: entries must be names", it->string); break; }
				if (len + strlen(e->valuestring) + 2 > sizeof(list)) { rc = errf(err, "plan: %s: list too long", it->string); break; }
				len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", len ? "," : "", e->valuestring);
			}
			if (rc) break;
			val = list;
		}
		else if (cJSON_IsNumber(it)) {
			double d = it->valuedouble;
			if (!is_int_in(d, -1e300, 1e300))
				{ rc = errf(err, "plan: %s: %g is not an integer", it->string, d); break; }
			if (!is_int_in(d, -1e15, 1e15))   /* no plan key comes near; parse_int names the range */
				{ rc = errf(err, "plan: %s: %g is out of range", it->string, d); break; }
			snprintf(buf, sizeof(buf), "%.0f", d);
			val = buf;
		} else {
			rc = errf(err, "plan: %s: unsupported JSON value type", it->string);
			break;
		}
		rc = plan_set(p, it->string, val, err);
	}
out:
	cJSON_Delete(root);
	return rc;
}

static cJSON *plan_to_cjson(const struct plan *p)
{
	cJSON *o = cJSON_CreateObject();
	const char *base = (const char *)p;
	for (size_t i = 0; i < NKEYS; i++) {
		const struct plan_key *k = &plan_keys[i];
		switch (k->type) {
		case K_INT: case K_BOOL:
			if (k->type == K_BOOL) cJSON_AddBoolToObject(o, k->name, *(const int *)(base + k->off));
			else cJSON_AddNumberToObject(o, k->name, *(const int *)(base + k->off));
			break;
		case K_STR: cJSON_AddStringToObject(o, k->name, base + k->off); break;
		case K_SCHED: cJSON_AddStringToObject(o, k->name, schedule_name(p->schedule)); break;
		case K_RC: cJSON_AddStringToObject(o, k->name, recompute_name(p->recompute)); break;
		case K_PREC: cJSON_AddStringToObject(o, k->name, precision_name(p->precision)); break;
		case K_ENUM: {
			int v = *(const int *)(base + k->off);
			cJSON_AddStringToObject(o, k->name, v >= 0 && v < k->hi ? k->names[v] : "?");
			break;
		}
		case K_MASK: {
			char v[160];
			mask_names(k, *(const int *)(base + k->off), v, sizeof(v));
			cJSON_AddStringToObject(o, k->name, v);
			break;
		}
		case K_SPLIT:
			if (p->nstage_layers) cJSON_AddItemToObject(o, k->name, cJSON_CreateIntArray(p->stage_layers, p->nstage_layers));
			break;
		}
	}
	return o;
}

char *plan_to_json(const struct plan *p)
{
	cJSON *o = plan_to_cjson(p);
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* One key's value as a flag argument, or "" when it is not set (an empty split). */
static void key_value(const struct plan *p, const struct plan_key *k, char *buf, size_t cap)
{
	const char *base = (const char *)p;
	size_t n = 0;
	buf[0] = 0;
	switch (k->type) {
	case K_INT: case K_BOOL: snprintf(buf, cap, "%d", *(const int *)(base + k->off)); break;
	case K_STR: snprintf(buf, cap, "%s", base + k->off); break;
	case K_SCHED: snprintf(buf, cap, "%s", schedule_name(p->schedule)); break;
	case K_RC: snprintf(buf, cap, "%s", recompute_name(p->recompute)); break;
	case K_PREC: snprintf(buf, cap, "%s", precision_name(p->precision)); break;
	case K_ENUM: {
		int v = *(const int *)(base + k->off);
		snprintf(buf, cap, "%s", v >= 0 && v < k->hi ? k->names[v] : "?");
		break;
	}
	case K_MASK: mask_names(k, *(const int *)(base + k->off), buf, cap); break;
	case K_SPLIT:
		for (int i = 0; i < p->nstage_layers && n + 8 < cap; i++)
			n += (size_t)snprintf(buf + n, cap - n, "%s%d", i ? "," : "", p->stage_layers[i]);
		break;
	}
}

void plan_describe(const struct plan *p, char *buf, size_t cap)
{
	char rl[32] = "";
	if (p->recompute == RC_FULL && p->recompute_layers >= 0) snprintf(rl, sizeof(rl), " (%d layers/stage)", p->recompute_layers);
	snprintf(buf, cap, "dp %d tp %d pp %d cp %d ep %d vpp %d, zero %d, sp %s, recompute %s%s, mbs %d, gbs %d, seq %d, "
		 "schedule %s, order %s, overlap: grad reduce %s, param gather %s, tp comm %s, tp backward %s, p2p %s; %s%s",
		 p->dp, p->tp, p->pp, p->cp, p->ep, p->vpp, p->zero, p->sp ? "on" : "off", recompute_name(p->recompute), rl,
		 p->mbs, p->gbs, p->seq, schedule_name(p->schedule), p->order, p->overlap_grad_reduce ? "on" : "off",
		 p->overlap_param_gather ? "on" : "off", p->overlap_tp_comm ? "on" : "off", p->overlap_tp_bwd ? "on" : "off",
		 p->overlap_p2p ? "on" : "off", precision_name(p->precision), p->flash_attn ? "" : ", unfused attention");
}

char *plan_to_flags(const struct plan *p)
{
	static const char *const always[] = {"model", "gpu", "gpus", "dp", "tp", "pp", "mbs", "gbs", "seq"};
	struct plan d;
	plan_defaults(&d);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f) return NULL;
	for (size_t i = 0; i < NKEYS; i++) {
		const struct plan_key *k = &plan_keys[i];
		char v[PLAN_MAX_STAGES * 8], dv[PLAN_MAX_STAGES * 8], flag[48];
		key_value(p, k, v, sizeof(v));
		key_value(&d, k, dv, sizeof(dv));
		int keep = !strcmp(v, dv) ? 0 : 1;
		for (size_t j = 0; j < sizeof(always) / sizeof(always[0]); j++) keep |= !strcmp(k->name, always[j]);
		if (!keep || !v[0]) continue;
		snprintf(flag, sizeof(flag), "--%s", k->name);
		for (char *c = flag; *c; c++) if (*c == '_') *c = '-';
		if (!strcmp(k->name, "sp")) fprintf(f, "%s%s", ftell(f) ? " " : "", p->sp ? "--sp" : "--no-sp");
		else {
			fprintf(f, "%s%s ", ftell(f) ? " " : "", flag);
			put_shell_word(f, v);   /* a model or GPU path is the user's: quoted for the shell */
		}
	}
	if (fclose(f)) { free(out); return NULL; }
	return out;
}

void plan_write_json(const struct plan *p, FILE *f)
{
	char *s = plan_to_json(p);
	if (s) fputs(s, f);
	free(s);
}

void plan_print_flags_help(FILE *f)
{
	fprintf(f, "Plan flags (the same keys work in a --plan FILE.json object):\n");
	for (size_t i = 0; i < NKEYS; i++) {
		char flag[48];
		snprintf(flag, sizeof(flag), "--%s", plan_keys[i].name);
		for (char *c = flag; *c; c++) if (*c == '_') *c = '-';
		fprintf(f, "  %-24s %s\n", flag, plan_keys[i].help);
	}
	fprintf(f, "  %-24s sequence parallelism on / off\n", "--sp | --no-sp");
	fprintf(f, "  %-24s read plan keys from a JSON object\n", "--plan FILE.json");
}

int plan_chunks(const struct plan *p)
{
	return sched_chunks(sched_family(p->schedule), p->vpp);
}

int plan_stages(const struct plan *p)
{
	return sched_nstages(sched_family(p->schedule), p->pp, p->vpp);
}

int plan_resolve(struct plan *p, const struct model *m, const struct hw *h, char *err)
{
	if (!p->gpus_per_node && h) p->gpus_per_node = h->gpus_per_node;
	long mp = (long)p->tp * p->pp * p->cp;
	if (!p->dp) {
		if (!p->gpus) return errf(err, "plan: give --gpus or --dp");
		if (p->gpus % mp)
			return errf(err, "plan: tp*pp*cp (%ld) does not divide gpus (%d)", mp, p->gpus);
		p->dp = (int)(p->gpus / mp);
	}
	if (!p->gpus) {
		if (mp * p->dp > (1 << 20)) return errf(err, "plan: tp*pp*cp*dp is absurdly large");
		p->gpus = (int)(mp * p->dp);
	}
	if (!p->gbs) {
		if ((long)p->dp * p->mbs > (1 << 26)) return errf(err, "plan: dp*mbs is absurdly large");
		p->gbs = p->dp * p->mbs;
	}
	if (!p->etp) p->etp = p->tp;
	if (p->pp == 1) p->schedule = SCHED_NONE;
	else if (p->schedule == SCHED_NONE) p->schedule = SCHED_1F1B;
	if (p->vpp > 1 && p->pp > 1 && sched_family(p->schedule)->with_vpp != SCHED_NONE)
		p->schedule = sched_family(p->schedule)->with_vpp; /* 1f1b with vpp > 1 means interleaved */
	if (p->recompute != RC_FULL) p->recompute_layers = -1;
	if (p->recompute != RC_SELECTIVE) p->recompute_modules = RCM_CORE_ATTN;
	if (m && p->nstage_layers == 0) {
		int n = plan_stages(p);
		if (n > PLAN_MAX_STAGES) return errf(err, "plan: more than %d pipeline stages", PLAN_MAX_STAGES);
		if (n > m->layers)
			return errf(err, "plan: pp*chunks (%d) exceeds num_hidden_layers (%d)", n, m->layers);
		plan_default_split(p, m);
	}
	return 0;
}

int plan_validate_default_split(const struct plan *p, const struct model *m, char *err)
{
	int n = plan_stages(p);
	if ((sched_family(p->schedule)->flags & SCHED_F_EVEN_SPLIT) && m->layers % n)
		return errf(err, "plan: pp*vpp (%d) does not divide num_hidden_layers (%d) (%s schedule; give stage_layers for an uneven split)",
			    n, m->layers, schedule_name(p->schedule));
	return 0;
}

/* The order in which n slots take one extra layer each: from the middle (n/2) on, wrapping,
 * except that the slot holding the model's last stage comes second to last and the one holding
 * its first stage last, since they also hold the head and the embedding (-1: no such slot). */
static void extra_order(int n, int first, int last, int *ord)
{
	int k = 0;
	for (int i = 0; i < n; i++) {
		int s = (n / 2 + i) % n;
		if (s != first && s != last) ord[k++] = s;
	}
	if (last >= 0 && last != first) ord[k++] = last;
	if (first >= 0) ord[k] = first;
}

void plan_balanced_split(struct plan *p, int layers)
{
	/* balanced contiguous split. The extra layers go to the middle ranks, since the first
	 * holds the embedding and the last the LM head: Llama 3 405B gives its first and its
	 * last stage one layer fewer (arXiv 2407.21783 §3.3.2; Megatron's
	 * --decoder-first/last-pipeline-num-layers). With several chunks per rank the counts are
	 * per rank first (the ranks that hold the model's first and last stage, one rank in a V
	 * schedule, are the light ones), then spread over the rank's chunks the same way; a rank
	 * with fewer layers than chunks falls back to spreading over the stages in model order. */
	const struct sched_family *f = sched_family(p->schedule);
	int n = plan_stages(p), pp = p->pp > 0 ? p->pp : 1, v = n / pp;
	int tot[PLAN_MAX_STAGES], ord[PLAN_MAX_STAGES], rank_of[PLAN_MAX_STAGES];
	int ok = v > 1 && n == v * pp && f->ndirs == 1 && sched_chunks(f, p->vpp) == v;
	if (ok) {
		for (int r = 0; r < pp; r++)
			for (int c = 0; c < v; c++) rank_of[f->stage(pp, r, c, 0)] = r;
		extra_order(pp, rank_of[0], rank_of[n - 1], ord);
		for (int r = 0; r < pp; r++) tot[r] = layers / pp;
		for (int k = 0; k < layers % pp; k++) tot[ord[k]]++;
		for (int r = 0; r < pp; r++) ok &= tot[r] >= v;
	}
	if (ok) {
		for (int r = 0; r < pp; r++) {
			int first = -1, last = -1;
			for (int c = 0; c < v; c++) {
				int st = f->stage(pp, r, c, 0);
				p->stage_layers[st] = tot[r] / v;
				if (st == 0) first = c;
				if (st == n - 1) last = c;
			}
			extra_order(v, first, last, ord);
			for (int k = 0; k < tot[r] % v; k++) p->stage_layers[f->stage(pp, r, ord[k], 0)]++;
		}
	} else {
		extra_order(n, 0, n - 1, ord);
		for (int i = 0; i < n; i++) p->stage_layers[i] = layers / n;
		for (int k = 0; k < layers % n; k++) p->stage_layers[ord[k]]++;
	}
	p->nstage_layers = n;
}

/* torchtitan's generate_split_points over its n stages in model order (stage i on rank i % pp,
 * as its looped schedules place them). Until 2025-04 (parallelisms/pipelining_utils.py at
 * 9dec370): the first stage takes L/n layers, every following one L/n + 1 while the remainder
 * lasts, the last what is left. Since (distributed/pipeline.py, pytorch/torchtitan#1103): the
 * embedding and the head count as one layer each, the remainder goes to the first stages, and
 * the first and last stages hold one real layer fewer than their share. */
static int torchtitan_split(struct plan *p, int n, int L, int io)
{
	int eff = L + 2 * io, per = eff / n, extra = eff % n, cur = 0;
	if (per - io < 1 || n < 2) return -1;
	for (int i = 0; i < n - 1; i++) {
		int k = i == 0 ? per - io : per;
		if (io ? extra > 0 : i > 0 && extra > 0) { k++; extra--; }
		p->stage_layers[i] = k;
		cur += k;
	}
	if (L - cur < 1) return -1;
	p->stage_layers[n - 1] = L - cur;
	return 0;
}

void plan_default_split(struct plan *p, const struct model *m)
{
	int n = plan_stages(p), L = m->layers;
	if ((p->pp_split == SPLIT_TORCHTITAN || p->pp_split == SPLIT_TORCHTITAN_IO) && n <= L &&
	    !torchtitan_split(p, n, L, p->pp_split == SPLIT_TORCHTITAN_IO)) {
		p->nstage_layers = n;
		return;
	}
	if (p->pp_split == SPLIT_FIRST && n <= L) {
		for (int i = 0; i < n; i++) p->stage_layers[i] = L / n + (i < L % n);
		p->nstage_layers = n;
		return;
	}
	if (p->pp_split != SPLIT_COST || n < 2 || n > L) {
		plan_balanced_split(p, L);
		return;
	}
	double h = m->hidden, layer = 4 * h * h + 3 * h * m->ffn_hidden;
	double head = (double)m->vocab * h, total = L * layer + head, cum = 0;
	int rank = 0;
	for (int i = 0; i < n; i++) p->stage_layers[i] = 0;
	for (int l = 0; l < L; l++) { /* the embedding and the blocks after the head cost nothing */
		p->stage_layers[rank]++;
		cum += layer;
		if (cum > total * (rank + 1) / n && rank < n - 1) rank++;
	}
	for (int i = n - 1; i > 0; i--) /* every stage computes at least one layer */
		for (int j = i - 1; p->stage_layers[i] == 0 && j >= 0; j--)
			if (p->stage_layers[j] > 1) { p->stage_layers[j]--; p->stage_layers[i]++; }
	p->nstage_layers = n;
}

int plan_validate(const struct plan *p, const struct model *m, const struct hw *h, char *err)
{
	long world = (long)p->dp * p->tp * p->pp * p->cp;
	if (world != p->gpus)
		return errf(err, "plan: dp*tp*pp*cp (%ld) does not equal gpus (%d)", world, p->gpus);
	if (p->gpus_per_node > 0 && p->gpus > p->gpus_per_node && p->gpus % p->gpus_per_node)
		return errf(err, "plan: gpus_per_node (%d) does not divide gpus (%d)", p->gpus_per_node, p->gpus);
	if (p->gbs % ((long)p->dp * p->mbs))
		return errf(err, "plan: dp*mbs (%ld) does not divide gbs (%d)", (long)p->dp * p->mbs, p->gbs);
	int mb = plan_microbatches(p);
	if (m) {
		if (m->heads % p->tp)
			return errf(err, "plan: tp (%d) does not divide num_attention_heads (%d)", p->tp, m->heads);
		if (m->kv_heads % p->tp && p->tp % m->kv_heads)
			return errf(err, "plan: tp (%d) and num_key_value_heads (%d) must divide one another", p->tp, m->kv_heads);
		/* the vocabulary need not divide by tp: it is padded, as Megatron pads to a multiple
		 * of 128*tp (--make-vocab-size-divisible-by) */
		if (m->ffn_hidden % p->tp)
			return errf(err, "plan: tp (%d) does not divide intermediate_size (%d)", p->tp, m->ffn_hidden);
		if (p->seq % (p->cp > 1 ? 2 * p->cp : 1))
			return errf(err, "plan: 2*cp (%d) does not divide seq (%d) (zig-zag context parallelism)", 2 * p->cp, p->seq);
		if (p->sp && p->tp > 1 && (p->seq / p->cp) % p->tp)
			return errf(err, "plan: tp (%d) does not divide seq/cp (%d) (sequence parallelism)", p->tp, p->seq / p->cp);
		if (model_is_moe(m)) {
			long stage = (long)p->tp * p->dp * p->cp;
			if (p->etp > p->tp || p->tp % p->etp)
				return errf(err, "plan: etp (%d) must divide tp (%d) (expert tensor parallelism inside the attention's)", p->etp, p->tp);
			if (stage % ((long)p->ep * p->etp))
				return errf(err, "plan: ep*etp (%ld) does not divide tp*dp*cp (%ld)", (long)p->ep * p->etp, stage);
			if (m->moe_ffn_hidden % p->etp)
				return errf(err, "plan: etp (%d) does not divide moe_intermediate_size (%d)", p->etp, m->moe_ffn_hidden);
			if (m->moe_experts % p->ep)
				return errf(err, "plan: ep (%d) does not divide the number of experts (%d)", p->ep, m->moe_experts);
		} else if (p->ep != 1 || p->etp != p->tp) {
			return errf(err, p->ep != 1 ? "plan: ep (%d) must be 1 for a dense model" : "plan: etp (%d) applies to MoE models only", p->ep != 1 ? p->ep : p->etp);
		}
		/* what Megatron-Core's recompute modules re-run must be in the model */
		static const struct { int bit; const char *needs; } rcm_needs[] = {{RCM_MLA_UP_PROJ, "multi-head latent attention (kv_lora_rank)"},
			{RCM_MOE_ACT, "MoE layers"}, {RCM_MOE, "MoE layers"}, {RCM_SHARED_EXPERTS, "shared experts"}};
		int have[] = {m->kv_lora_rank > 0, model_is_moe(m), model_is_moe(m), model_is_moe(m) && m->moe_shared_experts > 0};
		for (size_t i = 0; i < sizeof(rcm_needs) / sizeof(rcm_needs[0]); i++)
			if (p->recompute == RC_SELECTIVE && (p->recompute_modules & rcm_needs[i].bit) && !have[i]) {
				char name[32];
				recompute_modules_text(rcm_needs[i].bit, name, sizeof(name));
				return errf(err, "plan: recompute_modules: %s needs a model with %s", name, rcm_needs[i].needs);
			}
		int n = plan_stages(p), sum = 0;
		if (p->nstage_layers != n)
			return errf(err, "plan: stage_layers has %d entries but the schedule has %d stages", p->nstage_layers, n);
		for (int i = 0; i < n; i++) sum += p->stage_layers[i];
		if (sum != m->layers)
			return errf(err, "plan: stage_layers sum to %d, not num_hidden_layers (%d)", sum, m->layers);
		if (p->recompute_layers > 0 && p->recompute_layers > m->layers)
			return errf(err, "plan: recompute_layers (%d) exceeds num_hidden_layers (%d)", p->recompute_layers, m->layers);
	}
	if (p->pp == 1 && p->schedule != SCHED_NONE)
		return errf(err, "plan: schedule %s needs pp > 1", schedule_name(p->schedule));
	if (sched_plan_rules(sched_family(p->schedule), p->pp, p->vpp, mb, err)) return -1;
	if (h && p->precision == PREC_FP8 && h->peak_fp8_flops <= 0)
		return errf(err, "plan: precision fp8 is not supported by gpu %s", h->name);
	return 0;
}

int plan_prepare(struct plan *p, const struct model *m, const struct hw *h, char *err)
{
	if (plan_resolve(p, m, h, err)) return -1;
	return plan_validate(p, m, h, err);
}
