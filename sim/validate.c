/* validate — measured-run TSV reader and per-row prediction (FORMAT.md). Columns are read by
 * header name; an empty cell is "unknown", never zero. The summary scores and their table and
 * JSON output are in validate_report.c. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "sim/estimate.h"
#include "sim/framework.h"
#include "sim/hw.h"
#include "sim/schedule.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/util.h"
#include "sim/validate.h"

#define MAXCOL 64

enum {
	C_ID, C_SOURCE, C_MODEL, C_LAYERS, C_HIDDEN, C_FFN, C_HEADS, C_KV, C_HEADDIM, C_VOCAB, C_TIED,
	C_NORM, C_MLP, C_MOE_E, C_MOE_K, C_MOE_F, C_MOE_S, C_MOE_D, C_SEQ, C_GBS, C_MBS, C_GPU, C_GPN,
	C_NGPU, C_TP, C_PP, C_DP, C_CP, C_EP, C_VPP, C_SP, C_ZERO, C_RC, C_SCHED, C_PREC, C_STATUS,
	C_TPS, C_MEM, C_MEMKIND, C_NOTES, C_FRAMEWORK, NCOLS
};
static const char *const colnames[NCOLS] = {
	"id", "source", "model", "layers", "hidden", "ffn_hidden", "heads", "kv_heads", "head_dim", "vocab",
	"tied_embeddings", "norm", "mlp", "moe_experts", "moe_topk", "moe_ffn_hidden", "moe_shared_experts",
	"moe_dense_layers", "seq_len", "global_batch_seqs", "micro_batch", "gpu", "gpus_per_node", "num_gpus",
	"tp", "pp", "dp", "cp", "ep", "vpp", "sp", "zero", "recompute", "pp_schedule", "precision", "status",
	"tokens_per_s_per_gpu", "mem_gib", "mem_kind", "notes", "framework"};

/* FORMAT.md: "Required columns, never empty" (ep is required only for dense models, so a
 * file may still leave it out and have it read as unknown) */
static int col_required(int k)
{
	switch (k) {
	case C_ID: case C_SOURCE: case C_MODEL: case C_LAYERS: case C_HIDDEN: case C_FFN: case C_HEADS:
	case C_KV: case C_HEADDIM: case C_TIED: case C_NORM: case C_MLP: case C_MOE_E: case C_MOE_K:
	case C_MOE_F: case C_MOE_S: case C_MOE_D: case C_SEQ: case C_GBS: case C_GPU: case C_GPN:
	case C_NGPU: case C_TP: case C_PP: case C_DP: case C_CP: case C_STATUS: return 1;
	default: return 0;
	}
}

static int split_tabs(char *line, char **cells, int max)
{
	int n = 0;
	cells[n++] = line;
	for (char *c = line; *c && n < max; c++)
		if (*c == '\t') { *c = 0; cells[n++] = c + 1; }
	return n;
}

static int cell_int(const char *s, int *out)
{
	if (!s || !*s) return 0;
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < 0 || v > 1000000000) return -1;
	*out = (int)v;
	return 1;
}

static void add_assumed(struct val_row *r, const char *what)
{
	size_t n = strlen(r->assumed);
	snprintf(r->assumed + n, sizeof(r->assumed) - n, "%s%s", n ? ", " : "", what);
}

/* A measured cell: FORMAT.md's plain decimal number (digits, at most one point, no sign, no
 * exponent, no inf/nan). 0 = empty, 1 = *out set, -1 = not such a number. */
static int cell_num(const char *s, double *out)
{
	if (!s || !*s) return 0;
	int digits = 0, points = 0;
	for (const char *c = s; *c; c++) {
		if (isdigit((unsigned char)*c)) digits++;
		else if (*c == '.' && !points) points++;
		else return -1;
	}
	if (!digits) return -1;
	*out = strtod(s, NULL);
	return isfinite(*out) ? 1 : -1;
}

/* The measured cells of a row, and what makes a row unusable before it reaches the model:
 * an unknown status, a number that is not one. Returns 0, or -1 with r->reason. */
static int row_measured(char **cell, const int *ix, int ix_step, struct val_row *r)
{
	static const char *const statuses[] = {"ok", "oom", "fail"};
	int known = 0;
	for (int i = 0; i < 3; i++) known |= !strcmp(r->status, statuses[i]);
	if (!known) {
		snprintf(r->reason, sizeof(r->reason), "status: '%.20s' is not ok, oom or fail", cell[ix[C_STATUS]]);
		return -1;
	}
	if (r->num_gpus < 1) {
		snprintf(r->reason, sizeof(r->reason), "num_gpus: '%.20s' is not a positive integer", cell[ix[C_NGPU]]);
		return -1;
	}
	double step = -1;
	struct { int col; const char *name; double *dst; } meas[] = {
		{ix[C_TPS], "tokens_per_s_per_gpu", &r->meas_tps}, {ix[C_MEM], "mem_gib", &r->meas_mem_gib},
		{ix_step, "step_time_s", &step}};
	for (int i = 0; i < 3; i++) {
		double v = 0;
		int got = meas[i].col >= 0 ? cell_num(cell[meas[i].col], &v) : 0;
		if (got < 0) {
			snprintf(r->reason, sizeof(r->reason), "%s: '%.20s' is not a plain non-negative decimal number (FORMAT.md)",
				 meas[i].name, cell[meas[i].col]);
			return -1;
		}
		if (got) *meas[i].dst = v;
	}
	/* FORMAT.md defines tokens/s per GPU as global_batch_seqs·seq_len / (step time ·
	 * num_gpus); a row that measured only the step time is scored on that */
	if (r->meas_tps < 0 && step > 0 && r->gbs > 0 && r->seq > 0) {
		r->meas_tps = (double)r->gbs * r->seq / (step * r->num_gpus);
		add_assumed(r, "measured tokens/s from step_time_s");
	}
	return 0;
}

/* case-insensitive substring */
static int has(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; *hay; hay++)
		if (!strncasecmp(hay, needle, n)) return 1;
	return 0;
}

/* the word w (case-insensitive) ends at b, a whole word of notes */
static int word_before(const char *notes, const char *b, const char *w)
{
	size_t k = strlen(w);
	return (size_t)(b - notes) >= k && !strncasecmp(b - k, w, k) && (b - k == notes || !isalnum((unsigned char)b[-k - 1]));
}

/* the term found at h (n characters) says off: a value after it ("=False", ": off", "0") or
 * "no"/"without" before it */
static int term_off(const char *notes, const char *h, size_t n)
{
	const char *v = h + n;
	while (*v == ' ' || *v == '=' || *v == ':' || *v == '"' || *v == '\'') v++;
	static const char *const offs[] = {"false", "0", "off", "disabled", "none", "no", NULL};
	for (const char *const *o = offs; *o; o++) {
		size_t k = strlen(*o);
		if (!strncasecmp(v, *o, k) && !isalnum((unsigned char)v[k])) return 1;
	}
	const char *b = h;
	while (b > notes && b[-1] == ' ') b--;
	return word_before(notes, b, "no") || word_before(notes, b, "without");
}

/* a switch a row's notes state by one of `terms` (prose, or a framework's own flag or config
 * key): 1 on, 0 off, -1 not stated. A term reads as off when a value follows it that says so
 * ("tp_comm_overlap=False", "overlap_comm: false", "AsyncTP off") or "no"/"without" precedes it. */
static int note_switch(const char *notes, const char *const *terms)
{
	int said = -1;
	for (const char *const *t = terms; *t; t++) {
		size_t n = strlen(*t);
		for (const char *h = notes; *h; h++) {
			if (strncasecmp(h, *t, n)) continue;
			char before = h > notes ? h[-1] : ' ', after = h[n];
			if (isalnum((unsigned char)before) || before == '_' || before == '/' || before == '-') continue;
			if (isalnum((unsigned char)after) || after == '_' || after == '/' || (after == '-' && isalnum((unsigned char)h[n + 1])) ||
			    (after == '.' && isalnum((unsigned char)h[n + 1]))) /* "x.md", not a full stop */
				continue;
			if (!term_off(notes, h, n)) return 1;
			said = 0;
		}
	}
	return said;
}

/* Overlap settings are not columns; a row states them in its notes when the source lists them,
 * in prose or by the framework's own names: Megatron's --overlap-grad-reduce /
 * --overlap-param-gather / --tp-comm-overlap / --overlap-p2p-communication (NeMo and
 * Megatron-Core config keys overlap_grad_reduce, overlap_param_gather, tp_comm_overlap,
 * overlap_p2p_comm), DeepSpeed's ZeRO overlap_comm (the gradient reduction under the backward),
 * torchtitan's AsyncTP (enable_async_tensor_parallel). Stated on or off here, they outrank the
 * framework's defaults; unstated, the framework's defaults apply (row_framework). */
static void notes_overlaps(const char *notes, struct plan *p)
{
	static const char *const grad[] = {"overlap of DP grad reduce", "overlap-grad-reduce", "overlap_grad_reduce",
		"grad reduce overlap", "overlap_comm", NULL};
	static const char *const gather[] = {"param gather", "overlap-param-gather", "overlap_param_gather", NULL};
	static const char *const tp[] = {"TP comm overlap", "tp-comm-overlap", "tp_comm_overlap", "AsyncTP",
		"enable_async_tensor_parallel", NULL};
	static const char *const p2p[] = {"PP comm overlap", "overlap-p2p-comm", "overlap_p2p_comm", "overlap-p2p-communication", NULL};
	struct { const char *key; const char *const *terms; } sw[] = {
		{"overlap_grad_reduce", grad}, {"overlap_param_gather", gather}, {"overlap_tp_comm", tp}, {"overlap_p2p", p2p}};
	char err[ERR_LEN];
	for (size_t i = 0; i < sizeof(sw) / sizeof(sw[0]); i++) {
		int on = note_switch(notes, sw[i].terms);
		if (on >= 0) plan_set(p, sw[i].key, on ? "1" : "0", err);
	}
}

/* Megatron's recompute settings have no column; a row's notes may give them by their flag or
 * config names. recompute_modules / --recompute-modules (Megatron-Core's selective modules,
 * e.g. "recompute_modules: [mla_up_proj, mlp]") set what selective recompute re-runs, and make
 * an unstated recompute selective. recompute_num_layers / --recompute-num-layers N with full
 * granularity is the block method's N layers per stage (chunk) unless the notes say the
 * uniform method, which re-runs every layer (groups of N checkpointed together, lighter than
 * the model's per-layer checkpoint when N > 1). */
static void notes_recompute(const char *notes, struct plan *p, struct val_row *r)
{
	static const char *const mods[] = {"recompute_modules", "recompute-modules", NULL};
	static const char *const nums[] = {"recompute_num_layers", "recompute-num-layers", NULL};
	char err[ERR_LEN], list[160] = "";
	struct plan probe; /* the plan parser says which words are module names */
	plan_defaults(&probe);
	for (const char *const *k = mods; *k && !list[0]; k++) {
		const char *at = strstr(notes, *k);
		if (!at) continue;
		const char *v = at + strlen(*k);
		for (;;) {
			v += strspn(v, " =:\"'[,");
			size_t w = strspn(v, "abcdefghijklmnopqrstuvwxyz_");
			if (!w) break;
			char name[32];
			snprintf(name, sizeof(name), "%.*s", (int)w, v);
			if (plan_set(&probe, "recompute_modules", name, err)) break; /* not a module name: the list ended */
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", list[0] ? "," : "", name);
			v += w;
		}
	}
	if (list[0] && (!plan_key_stated(p, "recompute") || p->recompute == RC_SELECTIVE) &&
	    !plan_set(p, "recompute", "selective", err) && !plan_set(p, "recompute_modules", list, err)) {
		char what[200];
		snprintf(what, sizeof(what), "recompute selective, modules %s (notes)", list);
		add_assumed(r, what);
	}
	for (const char *const *k = nums; *k; k++) {
		const char *at = strstr(notes, *k);
		if (!at || p->recompute != RC_FULL) continue;
		const char *v = at + strlen(*k);
		v += strspn(v, " =:\"'");
		int n = atoi(v);
		if (n < 1 || has(notes, "uniform")) break;
		char num[16], what[64];
		snprintf(num, sizeof(num), "%d", n);
		if (!plan_set(p, "recompute_layers", num, err)) {
			snprintf(what, sizeof(what), "recompute_layers %d (notes: block method)", n);
			add_assumed(r, what);
		}
		break;
	}
}

/* the first year (1990-2099) written in a source name, 0 if none */
static int source_year(const char *src)
{
	for (const char *c = src; *c; c++) {
		if ((c == src || !isdigit((unsigned char)c[-1])) && isdigit((unsigned char)c[0]) && isdigit((unsigned char)c[1]) &&
		    isdigit((unsigned char)c[2]) && isdigit((unsigned char)c[3]) && !isdigit((unsigned char)c[4])) {
			int y = atoi(c);
			if (y >= 1990 && y <= 2099) return y;
		}
	}
	return 0;
}

/* integer after the first occurrence of `key` in `notes`; 0 if absent */
static int note_int(const char *notes, const char *key)
{
	const char *at = strstr(notes, key);
	return at ? atoi(at + strlen(key)) : 0;
}

/* Multi-head latent attention has no columns: FORMAT.md writes kv_heads = head_dim = 128 as an
 * approximation and the row's notes give the real dimensions ("q_lora_rank 1536, kv_lora_rank
 * 512, qk_head_dim 128 + rope 64, v_head_dim 128"). Those are read when all are present, so the
 * projections are counted as MLA [DSV3 §2.1.1] instead of 128 full K/V heads. */
static void notes_mla(const char *notes, struct model *m, struct val_row *r)
{
	int q = note_int(notes, "q_lora_rank "), kv = note_int(notes, "kv_lora_rank ");
	int nope = note_int(notes, "qk_head_dim "), v = note_int(notes, "v_head_dim ");
	const char *plus = strstr(notes, "qk_head_dim ");
	int rope = plus && strstr(plus, "+ rope ") ? note_int(plus, "+ rope ") : 0;
	if (kv <= 0 || nope <= 0 || rope <= 0 || v <= 0) return;
	m->q_lora_rank = q; m->kv_lora_rank = kv;
	m->qk_nope_head_dim = nope; m->qk_rope_head_dim = rope; m->v_head_dim = v;
	m->head_dim = nope + rope;
	m->kv_heads = m->heads;
	add_assumed(r, "MLA dims from notes");
}

/* a plan key the row states or its framework documents */
static int known(const struct val_row *r, const struct plan *p, const char *key)
{
	return plan_key_stated(p, key) || (r->fw_mask >> plan_key_index(key) & 1);
}

/* The row's framework fills the plan keys the row leaves unknown with its documented defaults
 * (profiles/frameworks, sim/framework.h), and its documented rules that are not plain values:
 * torchtitan splits the local batch into as many micro-batches as there are pipeline stages
 * (parallelism.pipeline_parallel_microbatches defaults to the pp degree) and puts 2 stages on
 * each rank of a multi-stage schedule. What is still unknown afterwards is completed in
 * predict. Returns 0, or -1 with r->reason. */
static int row_framework(struct val_row *r, struct plan *p, const char *sched_cell, const struct framework *fw,
			 const char *fw_err)
{
	char err[ERR_LEN];
	if (!strcmp(r->framework, "torchtitan") && p->pp > 1) {
		int local = p->dp > 0 ? p->gbs / p->dp : 0;
		if (!plan_key_stated(p, "mbs") && local % p->pp == 0 && local / p->pp > 0) {
			char v[16];
			snprintf(v, sizeof(v), "%d", local / p->pp);
			plan_set(p, "mbs", v, err);
			add_assumed(r, "micro_batch = local batch / pp (torchtitan)");
		}
		if (!plan_key_stated(p, "vpp") && !strcmp(sched_cell, "interleaved")) {
			plan_set(p, "vpp", "2", err);
			add_assumed(r, "vpp 2 (torchtitan: 2 stages per rank)");
		}
	}
	/* FORMAT.md's "selective" is the framework's own partial recomputation: where a framework
	 * has no Megatron-style core-attention recompute and offers per-op checkpointing
	 * (torchtitan), a selective row ran that */
	if (fw && p->recompute == RC_SELECTIVE && framework_selective_is_op(fw, p)) {
		p->recompute = RC_OP;
		char what[96];
		snprintf(what, sizeof(what), "recompute op (%s's selective checkpointing is per op)", r->framework);
		add_assumed(r, what);
	}
	if (r->framework[0]) {
		char applied[sizeof(r->assumed)] = "";
		if (!fw || framework_apply(fw, p, r->year, applied, sizeof(applied), &r->fw_mask, err) < 0) {
			snprintf(r->reason, sizeof(r->reason), "framework: %s", fw ? err : fw_err);
			return -1;
		}
		if (applied[0]) add_assumed(r, applied);
	}
	/* an interleaved schedule whose chunks are unknown, and a pipeline whose schedule is
	 * unknown: 1F1B, interleaved when chunks are stated (Megatron's reading of vpp > 1) */
	if (p->pp > 1 && !known(r, p, "schedule")) {
		p->schedule = SCHED_1F1B;
		if (p->vpp > 1) p->schedule = sched_family(p->schedule)->with_vpp;
		char what[64];
		snprintf(what, sizeof(what), "schedule %s", schedule_name(p->schedule));
		add_assumed(r, what);
	}
	if (!known(r, p, "precision")) add_assumed(r, "precision bf16");
	return 0;
}

/* Fills model and plan from what one row states (its cells and notes; the framework's defaults
 * come after the overrides, row_framework); returns 0, or -1 with r->reason. */
static int row_to_inputs(char **cell, const int *ix, struct val_row *r, struct model *m, struct plan *p)
{
	const char *name[] = {"layers", "hidden", "ffn_hidden", "heads", "kv_heads", "head_dim"};
	int *dst[] = {&m->layers, &m->hidden, &m->ffn_hidden, &m->heads, &m->kv_heads, &m->head_dim};
	int cols[] = {C_LAYERS, C_HIDDEN, C_FFN, C_HEADS, C_KV, C_HEADDIM};
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", r->model);
	for (int i = 0; i < 6; i++)
		if (cell_int(cell[ix[cols[i]]], dst[i]) != 1) {
			snprintf(r->reason, sizeof(r->reason), "%s: missing or not an integer", name[i]);
			return -1;
		}
	int v;
	if (cell_int(cell[ix[C_VOCAB]], &v) == 1) m->vocab = v;
	else { m->vocab = 51200; add_assumed(r, "vocab 51200"); }
	m->tied = !strcmp(cell[ix[C_TIED]], "1");
	m->norm = !strcmp(cell[ix[C_NORM]], "layernorm") ? NORM_LAYER : NORM_RMS;
	m->mlp = !strcmp(cell[ix[C_MLP]], "gelu") ? MLP_GELU : MLP_SWIGLU;
	int moe[5];
	int mcols[] = {C_MOE_E, C_MOE_K, C_MOE_F, C_MOE_S, C_MOE_D};
	for (int i = 0; i < 5; i++)
		if (cell_int(cell[ix[mcols[i]]], &moe[i]) != 1) { snprintf(r->reason, sizeof(r->reason), "%s: missing", colnames[mcols[i]]); return -1; }
	m->moe_experts = moe[0]; m->moe_topk = moe[1]; m->moe_ffn_hidden = moe[2];
	m->moe_shared_experts = moe[3]; m->moe_dense_layers = moe[4];
	m->rope_theta = 10000; m->norm_eps = 1e-5;
	notes_mla(cell[ix[C_NOTES]], m, r);
	char err[ERR_LEN];
	if (model_check(m, err)) { snprintf(r->reason, sizeof(r->reason), "%s", err); return -1; }

	plan_defaults(p);
	snprintf(p->model, sizeof(p->model), "%s", r->model);
	snprintf(p->gpu, sizeof(p->gpu), "%s", r->gpu);
	struct { int col; const char *key; } cells[] = {
		{C_NGPU, "gpus"}, {C_GPN, "gpus_per_node"}, {C_TP, "tp"}, {C_PP, "pp"}, {C_DP, "dp"}, {C_CP, "cp"},
		{C_SEQ, "seq"}, {C_GBS, "gbs"}, {C_MBS, "mbs"}, {C_EP, "ep"}, {C_VPP, "vpp"}, {C_SP, "sp"},
		{C_ZERO, "zero"}, {C_RC, "recompute"}, {C_PREC, "precision"}};
	for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
		const char *c = cell[ix[cells[i].col]];
		if ((*c || i < 8) && plan_set(p, cells[i].key, c, err)) goto bad; /* the first 8 are required */
	}
	if (p->gpus_per_node < 1) { /* the plan's 0 means "the profile's"; a row must say */
		snprintf(r->reason, sizeof(r->reason), "gpus_per_node: '%.20s' is not a positive integer", cell[ix[C_GPN]]);
		return -1;
	}
	if (p->gpus > p->gpus_per_node && p->gpus % p->gpus_per_node) {
		/* a run that is not whole NVLink domains (128 GPUs in 72-GPU GB200 NVL72 racks) ran
		 * on an equal share of each, the largest that tiles it (64: 16 of a rack's 18 trays) */
		int d = p->gpus_per_node;
		while (p->gpus % d) d--;
		char what[128];
		snprintf(what, sizeof(what), "gpus_per_node %d (%d GPUs fill domains of %d equally)", d, p->gpus, p->gpus_per_node);
		add_assumed(r, what);
		p->gpus_per_node = d;
	}
	const char *c = cell[ix[C_SCHED]];
	if (*c && strcmp(c, "none") && plan_set(p, "schedule", c, err)) goto bad;
	if (p->pp == 1 && plan_set(p, "schedule", "none", err)) goto bad;
	notes_overlaps(cell[ix[C_NOTES]], p);
	notes_recompute(cell[ix[C_NOTES]], p, r);
	/* FORMAT.md's "selective" also covers torchtitan's per-op selective checkpointing (the
	 * notes say which): that is the plan's recompute op */
	if (p->recompute == RC_SELECTIVE && has(cell[ix[C_NOTES]], "per-op selective")) {
		p->recompute = RC_OP;
		add_assumed(r, "recompute op (torchtitan per-op selective)");
	}
	/* FORMAT.md has no column for torch.compile; a PyTorch row whose notes name it (the
	 * source's "Techniques: FSDP + torch.compile", torchtitan's compile.enable = true) was
	 * compiled, and one whose notes switch it off ("without torch.compile") was not */
	static const char *const compiled[] = {"torch.compile", "compile.enable", NULL};
	int comp = note_switch(cell[ix[C_NOTES]], compiled);
	if (comp >= 0) {
		plan_set(p, "compile", comp ? "1" : "0", err);
		add_assumed(r, comp ? "compile 1 (notes: torch.compile)" : "compile 0 (notes: not compiled)");
	}
	/* FlashAttention appeared in May 2022 and reached Megatron-LM (--use-flash-attn) and
	 * DeepSpeed in 2023; a run published in 2022 or before, whose notes do not say flash,
	 * computed attention unfused (KOR's 5as²b activation term is exactly that) */
	r->year = source_year(cell[ix[C_SOURCE]]);
	if (r->year && r->year <= 2022 && !has(cell[ix[C_NOTES]], "flash")) {
		plan_set(p, "flash_attn", "0", err);
		add_assumed(r, "unfused attention (published before flash attention reached frameworks)");
	}
	return 0;
bad:
	snprintf(r->reason, sizeof(r->reason), "%s", err);
	return -1;
}

/* The completion of the cells a row and its framework leave unknown: every combination of
 * the candidate values below, and of them the fastest predicted plan whose memory fits (a
 * published run that ran was a tuned run that fitted); for a run that did not fit (oom) the
 * fastest whatever its memory (what its authors tried). Overlap switches nobody states are
 * on: in the model an overlapped collective never costs more than an exposed one, so that is
 * the fastest completion without a search. The settings a framework profile documents
 * (allocator, gradient dtype, when ZeRO-2/3 reduce-scatters) are cells too: every profile of
 * a documented framework sets them, so they are searched only for an in-house stack
 * (framework "other") or an unknown one, whose settings nobody published. */
#define FILL_MAX 10
#define FILL_VALS 24
#define FILL_LEN 40
struct fill {
	const struct framework *fw; /* the row's framework: only the values it offers; NULL: any */
	const struct plan *plan;    /* the plan being completed (the offers' conditions read it) */
	const char *key[FILL_MAX];
	char val[FILL_MAX][FILL_VALS][FILL_LEN];
	int nval[FILL_MAX], nkeys;
};

static int fill_offered(const struct fill *f, const char *key, const char *v)
{
	return !f->fw || framework_offers(f->fw, key, v, f->plan);
}

static void fill_add(struct fill *f, const char *key, int lo, int hi, int (*keep)(int, const void *), const void *arg)
{
	int k = f->nkeys, n = 0;
	if (k == FILL_MAX) return;
	for (int v = lo; v <= hi && n < FILL_VALS; v++) {
		snprintf(f->val[k][n], FILL_LEN, "%d", v);
		if ((!keep || keep(v, arg)) && fill_offered(f, key, f->val[k][n])) n++;
	}
	if (n) { f->key[k] = key; f->nval[k] = n; f->nkeys++; }
}

static void fill_names(struct fill *f, const char *key, const char *const *names, int n)
{
	int k = f->nkeys, m = 0;
	if (k == FILL_MAX || n > FILL_VALS) return;
	for (int i = 0; i < n; i++)
		if (fill_offered(f, key, names[i])) snprintf(f->val[k][m++], FILL_LEN, "%s", names[i]);
	if (m) { f->key[k] = key; f->nval[k] = m; f->nkeys++; }
}

static int divides(int v, const void *arg) { return *(const int *)arg % v == 0; }

/* ep: a divisor of dp*cp that divides the expert count */
struct ep_arg { int dpcp, experts; };
static int ep_ok(int v, const void *arg)
{
	const struct ep_arg *a = arg;
	return a->dpcp % v == 0 && a->experts % v == 0;
}

static void fill_candidates(const struct val_row *r, const struct model *m, const struct plan *p,
			    const struct framework *fw, struct fill *f)
{
	memset(f, 0, sizeof(*f));
	f->fw = fw;
	f->plan = p;
	int local = p->dp > 0 && p->gbs % p->dp == 0 ? p->gbs / p->dp : 1;
	if (!known(r, p, "mbs")) fill_add(f, "mbs", 1, local < 64 ? local : 64, divides, &local);
	if (!known(r, p, "recompute")) {
		/* selective recomputation appeared with Korthikanti et al. (arXiv 2205.05198, May 2022,
		 * Megatron-LM's --recompute-granularity selective); a run published before 2022 kept
		 * every activation or checkpointed whole layers */
		const char *rc[] = {"none", "full", "selective", "op"};
		/* per-op checkpointing only where it is the framework's partial mode */
		int op = fw && framework_selective_is_op(fw, p);
		fill_names(f, "recompute", rc, r->year && r->year < 2022 ? 2 : op ? 4 : 3);
		/* where the model has what Megatron-Core's recompute modules free cheaply (MLA's
		 * up-projections, the experts' activation, those blocks' norms) and the framework
		 * offers them, selective may be those instead of the core attention; the module
		 * list is in Megatron-Core's releases of 2025 (core 0.14.0, 2025-10: "Support
		 * recomputation for FP8 layernorm/moe_act/shared_experts"), not before */
		int cheap = framework_cheap_modules(fw, m, p->flash_attn);
		if (cheap != RCM_CORE_ATTN && !known(r, p, "recompute_modules") && (!r->year || r->year >= 2025) &&
		    fill_offered(f, "recompute", "selective")) {
			char names[FILL_LEN];
			recompute_modules_text(cheap, names, sizeof(names));
			const char *mods[] = {"core_attn", names};
			fill_names(f, "recompute_modules", mods, 2);
		}
	}
	if (!known(r, p, "vpp") && (sched_family(p->schedule)->flags & SCHED_F_VIRTUAL)) {
		int per = m->layers / p->pp;
		fill_add(f, "vpp", 2, per < 16 ? per : 16, divides, &per);
	}
	/* sequence parallelism came with the same paper as selective recomputation (Megatron-LM's
	 * --sequence-parallel, arXiv 2205.05198): a run published before 2022 did not have it */
	if (!known(r, p, "sp") && p->tp > 1) fill_add(f, "sp", 0, r->year && r->year < 2022 ? 0 : 1, NULL, NULL);
	if (!known(r, p, "zero")) fill_add(f, "zero", 0, 3, NULL, NULL);
	if (!known(r, p, "ep") && model_is_moe(m)) {
		struct ep_arg a = {p->dp * p->cp, m->moe_experts};
		fill_add(f, "ep", 1, a.dpcp < 4096 ? a.dpcp : 4096, ep_ok, &a);
	}
	/* expert TP has no column: with MoE parallel folding (ep beyond dp*cp) it must be below tp */
	if (!known(r, p, "etp") && model_is_moe(m) && p->tp > 1) fill_add(f, "etp", 1, p->tp, divides, &p->tp);
	if (!known(r, p, "allocator")) {
		/* expandable segments entered PyTorch's caching allocator in 2023
		 * (pytorch/pytorch#96995, merged 2023-03): a run published before ran the native one */
		const char *al[] = {"native", "expandable"};
		fill_names(f, "allocator", al, r->year && r->year < 2023 ? 1 : 2);
	}
	if (!known(r, p, "fp32_grads") && p->precision != PREC_FP32) fill_add(f, "fp32_grads", 0, 1, NULL, NULL);
	if (!known(r, p, "reduce_per_mb") && (p->zero >= 2 || !known(r, p, "zero")))
		fill_add(f, "reduce_per_mb", 0, 1, NULL, NULL);
}

/* Tries every completion; leaves the chosen one in *p and *e. Returns 0, or -1 with err when
 * no completion is a valid plan. */
static int complete_plan(struct val_row *r, const struct model *m, const struct hw *h, struct plan *p,
			 const struct framework *fw, struct estimate *e, char *err)
{
	/* an overlap nobody states is on (the fastest), from the year the technique existed: TP
	 * communication under GEMMs from 2023 (Transformer Engine's userbuffers behind Megatron-Core's
	 * --tp-comm-overlap; PyTorch's async TP came later), the TP all-reduce under the backward's
	 * weight-gradient GEMM from 2022 (Megatron-LM's asynchronous tensor-model-parallel
	 * all-reduce, late 2021), interleaved pipelines' overlapped sends from 2023 (Megatron-Core's
	 * --overlap-p2p-communication); a run published before ran without */
	static const struct { const char *key; int since; } overlaps[] = {{"overlap_grad_reduce", 0},
		{"overlap_param_gather", 0}, {"overlap_tp_comm", 2023}, {"overlap_tp_bwd", 2022}, {"overlap_p2p", 2023}};
	for (size_t i = 0; i < sizeof(overlaps) / sizeof(overlaps[0]); i++)
		if (!known(r, p, overlaps[i].key)) {
			int on = !r->year || r->year >= overlaps[i].since;
			plan_set(p, overlaps[i].key, on ? "1" : "0", err);
			p->stated &= ~((uint64_t)1 << plan_key_index(overlaps[i].key));
			r->filled_overlaps |= on;
			if (!on) {
				char what[64];
				snprintf(what, sizeof(what), "%s 0 (published before %d)", overlaps[i].key, overlaps[i].since);
				add_assumed(r, what);
			}
		}
	char e2[ERR_LEN] = "";
	struct fill f;
	fill_candidates(r, m, p, fw, &f);
	int idx[FILL_MAX] = {0}, ok_row = !strcmp(r->status, "ok"), have = 0, have_fit = 0;
	struct plan best = *p;
	double best_tps = -1;
	for (;;) {
		struct plan q = *p;
		struct estimate eq;
		int bad = 0;
		/* when no completion is a plan, the first one's reason is reported: the candidates
		 * start at their smallest values (expert TP 1, micro-batch 1), so a later one's
		 * reason is more often its own value's (ep*etp does not divide) than the row's
		 * (fp8 on an A100) */
		char later[ERR_LEN], *why = e2[0] ? later : e2;
		for (int k = 0; k < f.nkeys && !bad; k++) bad = plan_set(&q, f.key[k], f.val[k][idx[k]], why) != 0;
		/* recompute modules matter only to selective recompute: the other modes with them are
		 * the same plans as with the default */
		int twin = q.recompute != RC_SELECTIVE && q.recompute_modules != RCM_CORE_ATTN;
		if (!bad && !twin && !estimate_prepared(m, h, &q, &eq, why)) {
			int fits = eq.fits || !ok_row;
			/* a fitting completion beats any that does not; among those that do not, the
			 * smallest peak (closest to what ran) */
			int better = !have || (fits && !have_fit) ||
				     (fits == have_fit && (fits ? eq.tokens_per_s > best_tps : eq.peak_mem_bytes < e->peak_mem_bytes));
			if (better) { best = q; *e = eq; best_tps = eq.tokens_per_s; have = 1; have_fit = fits; }
		}
		int k = 0;
		while (k < f.nkeys && ++idx[k] == f.nval[k]) idx[k++] = 0;
		if (k == f.nkeys) break;
	}
	if (!have) return errf(err, "%s", e2);
	*p = best;
	if (f.nkeys) {
		char what[200] = "";
		for (int k = 0; k < f.nkeys; k++) {
			char v[32];
			plan_get(p, f.key[k], v, sizeof(v));
			snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s%s %s", k ? ", " : "", f.key[k], v);
		}
		snprintf(what + strlen(what), sizeof(what) - strlen(what), " (%s)",
			 !ok_row ? "fastest completion" : have_fit ? "fastest completion that fits" : "no completion fits: smallest peak");
		add_assumed(r, what);
	}
	if (r->filled_overlaps) add_assumed(r, "unstated overlaps on (fastest)");
	return 0;
}

/* Completes and estimates the row's plan and fills its predictions; returns 0, or -1 with
 * r->reason (the row is then not simulated). The caller reports the estimate (val_opts'
 * callbacks) once it has chosen the row's plan. */
static int predict(struct val_row *r, const struct model *m, struct plan *p, const struct framework *fw,
		   const struct val_opts *opts, struct estimate *e)
{
	struct hw h;
	char err[ERR_LEN];
	if (opts->hw) h = *opts->hw;
	if ((!opts->hw && hw_load(r->gpu, &h, err)) || complete_plan(r, m, &h, p, fw, e, err)) {
		snprintf(r->reason, sizeof(r->reason), "%s", err);
		return -1;
	}
	r->simulated = 1;
	r->pred_tps = e->tokens_per_s_per_gpu;
	r->pred_step_s = e->step_time_s;
	r->pred_mfu = e->mfu;
	r->pred_fits = e->fits;
	r->pred_peak_gib = e->peak_mem_bytes / GIB;
	const struct rank_est *k = &e->kind[0];
	if (!r->mem_rank0)
		for (int i = 1; i < e->nkinds; i++)
			if (e->kind[i].peak_bytes > k->peak_bytes) k = &e->kind[i];
	/* max_memory_allocated counts live tensors only */
	r->pred_mem_gib = (r->mem_allocated ? k->live_bytes : k->peak_bytes) / GIB;
	r->pred_static_gib = (k->weights_bytes + k->grads_bytes + k->optim_bytes) / GIB;
	r->pred_act_gib = k->act_bytes / GIB;
	r->pred_logits_gib = k->logits_bytes / GIB;
	r->pred_buf_gib = (k->buffers_bytes + k->recv_bytes) / GIB;
	return 0;
}

/* One row from its cells to its prediction: what it states, the --set overrides, then the n
 * keys `key` set to `val` as if the row stated them, then its framework's defaults and the
 * completion. Returns 0 (predicted or not, r->reason says why not), -1 on a bad override
 * (err). */
static int row_predict(char **cell, const int *ix, int ix_step, struct val_row *r, const struct val_opts *opts,
		       const struct framework *fw, const char *fw_err, const char *const *key,
		       const char *const *val, int n, struct model *m, struct plan *p, struct estimate *e, char *err)
{
	int ok = row_measured(cell, ix, ix_step, r) == 0 && row_to_inputs(cell, ix, r, m, p) == 0;
	/* overrides (what-if on a row) count as stated by the row: the framework's defaults do not
	 * replace them, and the defaults that depend on them follow them (--set compile=1 selects
	 * torchtitan's compiled loss and block) */
	for (int i = 0; ok && i < opts->nset; i++) {
		if (plan_set(p, opts->set_key[i], opts->set_val[i], err)) return -1;
		char what[160];
		snprintf(what, sizeof(what), "%s=%s", opts->set_key[i], opts->set_val[i]);
		add_assumed(r, what);
	}
	for (int i = 0; ok && i < n; i++)
		if (plan_set(p, key[i], val[i], err)) return -1;
	ok = ok && row_framework(r, p, cell[ix[C_SCHED]], fw, fw_err) == 0;
	if (ok) predict(r, m, p, fw, opts, e);
	return 0;
}

/* A row that ran proves that its plan fitted. When the row leaves a cell to its framework's
 * documented default and no completion of that default fits, the default is not what ran
 * (DeepSpeed's config defaults to ZeRO stage 0, which no 175B model fits on 80 GB at tp 1;
 * nanotron's pipeline engine defaults to all-forward-all-backward, which holds every
 * micro-batch at once): the row takes the fastest combination that fits of the values the
 * framework offers for those cells (its profile's "offers"; for the ZeRO stage, any when it
 * lists none), its defaults that depend on them following them, and says so. The cells: the
 * ZeRO stage, and the pipeline schedule where the framework lists its schedules. Returns 0 (r,
 * m, p, e replaced when a combination fits), -1 with err. */
#define RELEASE_KEYS 2
#define RELEASE_VALS 8
static int row_defaults_fit(char **cell, const int *ix, int ix_step, struct val_row *r, const struct val_opts *opts,
			    const struct framework *fw, const struct val_row *blank, struct model *m, struct plan *p,
			    struct estimate *e, char *err)
{
	static const char *const keys[RELEASE_KEYS] = {"zero", "schedule"};
	static const char *const stages[] = {"0", "1", "2", "3"};
	if (!r->simulated || r->pred_fits || strcmp(r->status, "ok") || !fw) return 0;
	const char *key[RELEASE_KEYS], *vals[RELEASE_KEYS][RELEASE_VALS];
	char was[RELEASE_KEYS][32];
	int nval[RELEASE_KEYS], nk = 0;
	for (int i = 0; i < RELEASE_KEYS; i++) {
		if (!(r->fw_mask >> plan_key_index(keys[i]) & 1) || plan_key_stated(p, keys[i])) continue;
		int n = 0;
		const struct fw_offer *o = framework_offer(fw, keys[i], p);
		for (int v = 0; o && v < o->n && n < RELEASE_VALS; v++) vals[nk][n++] = o->values[v];
		if (!n && !strcmp(keys[i], "zero"))
			for (int j = 0; j < 4; j++) vals[nk][n++] = stages[j];
		if (n < 2 || plan_get(p, keys[i], was[nk], sizeof(was[nk]))) continue;
		key[nk] = keys[i];
		nval[nk++] = n;
	}
	if (!nk) return 0;
	struct val_row *t = malloc(2 * sizeof(*t)), *best = t + 1;
	if (!t) return errf(err, "out of memory");
	struct model tm, bm;
	struct plan tp, bp;
	struct estimate te, be;
	int idx[RELEASE_KEYS] = {0}, found = 0, rc = 0;
	for (;;) {
		const char *val[RELEASE_KEYS];
		int same = 1;
		for (int k = 0; k < nk; k++) {
			val[k] = vals[k][idx[k]];
			same &= !strcmp(val[k], was[k]);
		}
		if (!same) {
			*t = *blank;
			if (row_predict(cell, ix, ix_step, t, opts, fw, NULL, key, val, nk, &tm, &tp, &te, err)) { rc = -1; break; }
			if (t->simulated && t->pred_fits && (!found || t->pred_tps > best->pred_tps)) {
				*best = *t; bm = tm; bp = tp; be = te;
				found = 1;
			}
		}
		int k = 0;
		while (k < nk && ++idx[k] == nval[k]) idx[k++] = 0;
		if (k == nk) break;
	}
	if (!rc && found) {
		char what[300] = "", now[160] = "";
		for (int k = 0; k < nk; k++) {
			char v[32];
			plan_get(&bp, key[k], v, sizeof(v));
			snprintf(now + strlen(now), sizeof(now) - strlen(now), "%s%s %s", k ? ", " : "", key[k], v);
			snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s%s %s", k ? ", " : "", key[k], was[k]);
		}
		char line[480];
		snprintf(line, sizeof(line), "%s (the %s default%s %s %s no completion of a run that ran: the fastest it offers that fits)",
			 now, r->framework, nk > 1 ? "s" : "", what, nk > 1 ? "fit" : "fits");
		*r = *best;
		*m = bm; *p = bp; *e = be;
		add_assumed(r, line);
	}
	free(t);
	return rc;
}

/* --by's column list, COL[,COL...]: each a non-empty name, at most VAL_MAX_BY of them.
 * Returns the count, -1 with err. */
static int by_columns(const char *list, char name[][VAL_BY_NAME], char *err)
{
	int n = 0;
	for (const char *c = list;; c++) {
		const char *e = strchr(c, ',');
		size_t len = e ? (size_t)(e - c) : strlen(c);
		if (!len) return errf(err, "--by: an empty column name in '%.60s'", list);
		if (len >= VAL_BY_NAME)
			return errf(err, "--by: column name '%.40s...' is over %d characters", c, VAL_BY_NAME - 1);
		if (n == VAL_MAX_BY) return errf(err, "--by: at most %d columns ('%.60s')", VAL_MAX_BY, list);
		memcpy(name[n], c, len);
		name[n++][len] = 0;
		if (!e) return n;
		c = e;
	}
}

int validate_file(const char *path, const struct val_opts *opts, struct val_row **rows_out, int *nrows, char *err)
{
	static const struct val_opts none;
	if (!opts) opts = &none;
	char byname[VAL_MAX_BY][VAL_BY_NAME];
	int nby = opts->by ? by_columns(opts->by, byname, err) : 0;
	if (nby < 0) return -1;
	char *text = read_file(path, 64 << 20, err);
	if (!text) return -1;
	struct framework *fw = malloc(sizeof(*fw)); /* each row's framework in turn */
	if (!fw) { free(text); return errf(err, "out of memory"); }
	/* a UTF-8 byte-order mark (spreadsheet exports write one) is not part of the first line */
	char *start = !strncmp(text, "\xef\xbb\xbf", 3) ? text + 3 : text;
	int ix[NCOLS], ix_step = -1, ix_by[VAL_MAX_BY];
	for (int i = 0; i < NCOLS; i++) ix[i] = -1;
	int cap = 0, n = 0, header = 0, ncell_hdr = 0;
	for (int k = 0; k < nby; k++) ix_by[k] = -1;
	struct val_row *rows = NULL;
	char *save = NULL;
	int rc = 0;
	for (char *line = strtok_r(start, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t len = strlen(line);
		if (len && line[len - 1] == '\r') line[len - 1] = 0;
		if (!header && line[0] == '#') continue;
		char *cell[MAXCOL + 1];
		int nc = split_tabs(line, cell, MAXCOL);
		cell[nc] = ""; /* what an absent optional column reads */
		if (!header) {
			for (int i = 0; i < nc; i++) {
				for (int k = 0; k < NCOLS; k++)
					if (!strcmp(cell[i], colnames[k])) ix[k] = i;
				if (!strcmp(cell[i], "step_time_s")) ix_step = i; /* optional: read if present */
				for (int k = 0; k < nby; k++)
					if (!strcmp(cell[i], byname[k])) ix_by[k] = i;
			}
			for (int k = 0; k < nby; k++)
				if (ix_by[k] < 0) { rc = errf(err, "--by: %s has no column '%.40s'", path, byname[k]); goto out; }
			/* FORMAT.md's never-empty columns must be there; any other column that is absent
			 * is unknown in every row, read as the empty cell one past the row's last */
			for (int k = 0; k < NCOLS; k++) {
				if (ix[k] >= 0) continue;
				if (col_required(k)) { rc = errf(err, "%s: header lacks column '%s' (FORMAT.md)", path, colnames[k]); goto out; }
				ix[k] = nc;
				if (opts->note) {
					char msg[4400]; /* a path (PATH_MAX) and a column name */
					snprintf(msg, sizeof(msg), "%s: no column '%s'; read as unknown in every row", path, colnames[k]);
					opts->note(opts->row_ctx, msg);
				}
			}
			header = 1;
			ncell_hdr = nc;
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			struct val_row *nr = realloc(rows, cap * sizeof(*rows));
			if (!nr) { rc = errf(err, "out of memory"); goto out; }
			rows = nr;
		}
		if (opts->only && (ix[C_ID] >= nc || strcmp(cell[ix[C_ID]], opts->only))) continue;
		struct val_row *r = &rows[n++];
		memset(r, 0, sizeof(*r));
		r->meas_tps = r->meas_mem_gib = -1;
		if (nc != ncell_hdr) {
			snprintf(r->id, sizeof(r->id), "line%d", n);
			snprintf(r->reason, sizeof(r->reason), "row has %d cells, header has %d", nc, ncell_hdr);
			continue;
		}
		snprintf(r->id, sizeof(r->id), "%s", cell[ix[C_ID]]);
		snprintf(r->source, sizeof(r->source), "%s", cell[ix[C_SOURCE]]);
		snprintf(r->model, sizeof(r->model), "%s", cell[ix[C_MODEL]]);
		snprintf(r->gpu, sizeof(r->gpu), "%s", cell[ix[C_GPU]]);
		snprintf(r->status, sizeof(r->status), "%s", cell[ix[C_STATUS]]);
		snprintf(r->framework, sizeof(r->framework), "%s", cell[ix[C_FRAMEWORK]]);
		for (int k = 0, at = 0; k < nby && at < (int)sizeof(r->by) - 1; k++)
			at += snprintf(r->by + at, sizeof(r->by) - at, "%s%s", k ? "," : "",
				       cell[ix_by[k]][0] ? cell[ix_by[k]] : "(unknown)");
		cell_int(cell[ix[C_NGPU]], &r->num_gpus);
		cell_int(cell[ix[C_SEQ]], &r->seq);
		cell_int(cell[ix[C_GBS]], &r->gbs);
		r->mem_rank0 = strstr(cell[ix[C_NOTES]], "rank 0") != NULL;
		r->mem_allocated = !strcmp(cell[ix[C_MEMKIND]], "allocated");
		struct model m;
		struct plan p;
		struct estimate e;
		struct val_row blank = *r;
		/* the row's framework, read once: its defaults, its offers, the completion's search */
		char fw_err[ERR_LEN] = "";
		const struct framework *rfw = r->framework[0] && !framework_load(r->framework, fw, fw_err) ? fw : NULL;
		if (row_predict(cell, ix, ix_step, r, opts, rfw, fw_err, NULL, NULL, 0, &m, &p, &e, err) ||
		    row_defaults_fit(cell, ix, ix_step, r, opts, rfw, &blank, &m, &p, &e, err)) { rc = -1; goto out; }
		if (r->simulated) {
			if (opts->explain) opts->explain(opts->row_ctx, r, &p, &e);
			if (opts->row) opts->row(opts->row_ctx, r, &m, &p);
		}
		/* A run the row itself marks as measured with a framework defect that was fixed later
		 * (the Playbook's pipeline runs before nanotron's pipeline-parallel performance fix
		 * lose about a second per micro-batch to it) measures the defect, not the plan: it is
		 * predicted but left out of the scores, with the reason. */
		if (r->simulated && has(cell[ix[C_NOTES]], "measured BEFORE") && has(cell[ix[C_NOTES]], "performance fix")) {
			r->simulated = 0;
			r->excluded = 1;
			snprintf(r->reason, sizeof(r->reason), "excluded from scores: measured before a framework performance fix (notes)");
		}
	}
	if (!header) rc = errf(err, "%s: no header line", path);
out:
	free(text);
	free(fw);
	if (rc) { free(rows); return rc; }
	*rows_out = rows;
	*nrows = n;
	return 0;
}
