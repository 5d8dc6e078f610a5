/* validate — measured-run TSV reader and per-row prediction (FORMAT.md). Columns are read by
 * header name; an empty cell is "unknown", never zero. The summary scores and their table and
 * JSON output are in validate_report.c. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "sim/estimate.h"
#include "sim/hw.h"
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

/* Overlap settings are not columns; a row states them in its notes when the source lists them
 * (Megatron's --overlap-grad-reduce / --overlap-param-gather / --tp-comm-overlap, torchtitan's
 * AsyncTP). Unstated means the plan default (no overlap), except FSDP (zero 2/3), which
 * overlaps by construction in the estimate. */
static void notes_overlaps(const char *notes, struct plan *p)
{
	if (has(notes, "overlap of DP grad reduce") || has(notes, "overlap-grad-reduce") || has(notes, "overlap_grad_reduce"))
		p->overlap_grad_reduce = 1;
	if (has(notes, "param gather") || has(notes, "overlap-param-gather") || has(notes, "overlap_param_gather"))
		p->overlap_param_gather = 1;
	if (has(notes, "TP comm overlap") || has(notes, "tp-comm-overlap") || has(notes, "AsyncTP"))
		p->overlap_tp_comm = 1;
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

/* Fills model and plan from one row; returns 0, or -1 with r->reason. */
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
	struct { int col; const char *key; } ints[] = {
		{C_NGPU, "gpus"}, {C_GPN, "gpus_per_node"}, {C_TP, "tp"}, {C_PP, "pp"}, {C_DP, "dp"}, {C_CP, "cp"},
		{C_SEQ, "seq"}, {C_GBS, "gbs"}};
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		if (plan_set(p, ints[i].key, cell[ix[ints[i].col]], err)) { snprintf(r->reason, sizeof(r->reason), "%s", err); return -1; }
	if (p->gpus_per_node < 1) { /* the plan's 0 means "the profile's"; a row must say */
		snprintf(r->reason, sizeof(r->reason), "gpus_per_node: '%.20s' is not a positive integer", cell[ix[C_GPN]]);
		return -1;
	}
	const char *c;
	/* A torchtitan run states its framework; its documented pipeline defaults fill the cells
	 * it leaves empty: the local batch is split into as many micro-batches as there are
	 * pipeline stages (--parallelism.pipeline_parallel_microbatches, default: the pp degree)
	 * and a multi-stage schedule puts 2 stages on each rank (generate_split_points, below) */
	int titan = !strcmp(r->framework, "torchtitan") || has(cell[ix[C_SOURCE]], "torchtitan") || has(cell[ix[C_NOTES]], "torchtitan");
	int local = p->dp > 0 ? p->gbs / p->dp : 0;
	if (*(c = cell[ix[C_MBS]])) { if (plan_set(p, "mbs", c, err)) goto bad; }
	else if (titan && p->pp > 1 && local % p->pp == 0 && local / p->pp > 0) {
		p->mbs = local / p->pp;
		char what[64];
		snprintf(what, sizeof(what), "micro_batch %d (torchtitan: pp micro-batches)", p->mbs);
		add_assumed(r, what);
	} else add_assumed(r, "micro_batch 1");
	if (*(c = cell[ix[C_EP]])) { if (plan_set(p, "ep", c, err)) goto bad; }
	else if (m->moe_experts) add_assumed(r, "ep 1");
	if (*(c = cell[ix[C_VPP]])) { if (plan_set(p, "vpp", c, err)) goto bad; }
	else if (p->pp > 1 && !strcmp(cell[ix[C_SCHED]], "interleaved")) {
		/* an interleaved schedule needs at least 2 chunks per rank; 2 is also torchtitan's
		 * default for a multi-stage schedule */
		p->vpp = 2;
		add_assumed(r, titan ? "vpp 2 (torchtitan: 2 stages per rank)" : "vpp 2 (interleaved, chunks not stated)");
	} else if (p->pp > 1) add_assumed(r, "vpp 1");
	if (*(c = cell[ix[C_SP]])) { if (plan_set(p, "sp", c, err)) goto bad; }
	else if (p->tp > 1) add_assumed(r, "sp 0");
	if (*(c = cell[ix[C_ZERO]])) { if (plan_set(p, "zero", c, err)) goto bad; }
	else add_assumed(r, "zero 0");
	/* plain data parallelism is PyTorch DDP (or its equivalent), whose bucketed all-reduce
	 * runs during the backward by default [torch DDP docs: gradient bucketing overlaps
	 * communication with the backward]; ZeRO-1 overlap is opt-in (notes say so when on) */
	if (p->zero == 0) p->overlap_grad_reduce = 1;
	if (*(c = cell[ix[C_RC]])) { if (plan_set(p, "recompute", c, err)) goto bad; }
	else add_assumed(r, "recompute none");
	c = cell[ix[C_SCHED]];
	if (*c && strcmp(c, "none")) { if (plan_set(p, "schedule", c, err)) goto bad; }
	else if (!*c && p->pp > 1) {
		add_assumed(r, p->vpp > 1 ? "schedule interleaved" : "schedule 1f1b");
		p->schedule = p->vpp > 1 ? SCHED_INTERLEAVED : SCHED_1F1B;
	}
	if (*(c = cell[ix[C_PREC]])) { if (plan_set(p, "precision", c, err)) goto bad; }
	else add_assumed(r, "precision bf16");
	notes_overlaps(cell[ix[C_NOTES]], p);
	/* FlashAttention appeared in May 2022 and reached Megatron-LM (--use-flash-attn) and
	 * DeepSpeed in 2023; a run published in 2022 or before, whose notes do not say flash,
	 * computed attention unfused (KOR's 5as²b activation term is exactly that) */
	int year = source_year(cell[ix[C_SOURCE]]);
	if (year && year <= 2022 && !has(cell[ix[C_NOTES]], "flash")) {
		p->flash_attn = 0;
		add_assumed(r, "unfused attention (published before flash attention reached frameworks)");
	}
	/* FORMAT.md's "selective" also covers torchtitan's per-op selective checkpointing (the
	 * notes say which): that is the plan's recompute op */
	if (p->recompute == RC_SELECTIVE && has(cell[ix[C_NOTES]], "per-op selective")) {
		p->recompute = RC_OP;
		add_assumed(r, "recompute op (torchtitan per-op selective)");
	}
	r->rc_unknown = !*cell[ix[C_RC]];
	return 0;
bad:
	snprintf(r->reason, sizeof(r->reason), "%s", err);
	return -1;
}

/* what a run that ran proves about memory: its live tensors fit (see predict) */
static int live_fits(const struct estimate *e) { return e->live_peak_bytes <= e->capacity_bytes; }

static void predict(struct val_row *r, const struct model *m, struct plan *p, FILE *explain)
{
	struct hw h;
	char err[ERR_LEN];
	struct estimate e;
	if (hw_load(r->gpu, &h, err) || plan_resolve(p, m, &h, err) || plan_validate(p, m, &h, err) ||
	    estimate_plan(m, &h, p, &e, err)) {
		snprintf(r->reason, sizeof(r->reason), "%s", err);
		return;
	}
	/* An unknown recompute setting of a run that ran: the lightest mode under which the plan
	 * fits (none, selective, full), since a run that did not fit could not have been measured.
	 * What the run proves is that its live tensors fit: the caching allocator frees its cached
	 * blocks and retries before it reports out-of-memory [PyTorch CUDA caching allocator,
	 * release_cached_blocks on a failed cudaMalloc], so the fragmentation allowance of the
	 * reserved-pool estimate is not part of this test. */
	if (r->rc_unknown && !live_fits(&e) && !strcmp(r->status, "ok")) {
		enum recompute modes[] = {RC_SELECTIVE, RC_FULL};
		const char *names[] = {"selective", "full"};
		int chosen = -1;
		for (int i = 0; i < 2 && !live_fits(&e); i++) {
			struct estimate e2;
			p->recompute = modes[i];
			if (plan_resolve(p, m, &h, err) || plan_validate(p, m, &h, err) || estimate_plan(m, &h, p, &e2, err))
				break;
			e = e2;
			chosen = i;
		}
		if (chosen >= 0) { /* say which mode the prediction used, in place of "recompute none" */
			char *at = strstr(r->assumed, "recompute none");
			char rest[sizeof(r->assumed)];
			snprintf(rest, sizeof(rest), "%s", at ? at + strlen("recompute none") : "");
			if (at) *at = 0;
			size_t n = strlen(r->assumed);
			snprintf(r->assumed + n, sizeof(r->assumed) - n, "%srecompute %s (%s)%s", n && !at ? ", " : "",
				 names[chosen], live_fits(&e) ? "none does not fit" : "no mode fits", rest);
		}
	}
	if (explain) {
		fprintf(explain, "%s: %s (%s)\n", r->id, r->model, r->source);
		if (*r->assumed) fprintf(explain, "assumed: %s\n", r->assumed);
		estimate_print(&e, p, explain);
		fprintf(explain, "\n");
	}
	r->simulated = 1;
	r->pred_tps = e.tokens_per_s_per_gpu;
	r->pred_step_s = e.step_time_s;
	r->pred_mfu = e.mfu;
	r->pred_fits = e.fits;
	r->pred_peak_gib = e.peak_mem_bytes / 1073741824.0;
	const struct rank_est *k = &e.kind[0];
	if (!r->mem_rank0)
		for (int i = 1; i < e.nkinds; i++)
			if (e.kind[i].peak_bytes > k->peak_bytes) k = &e.kind[i];
	/* max_memory_allocated counts live tensors only */
	r->pred_mem_gib = (r->mem_allocated ? k->live_bytes : k->peak_bytes) / 1073741824.0;
	r->pred_static_gib = (k->weights_bytes + k->grads_bytes + k->optim_bytes) / 1073741824.0;
	r->pred_act_gib = k->act_bytes / 1073741824.0;
	r->pred_logits_gib = k->logits_bytes / 1073741824.0;
	r->pred_buf_gib = k->buffers_bytes / 1073741824.0;
}

int validate_file(const char *path, const struct val_opts *opts, struct val_row **rows_out, int *nrows, char *err)
{
	static const struct val_opts none;
	if (!opts) opts = &none;
	char *text = read_file(path, 64 << 20, err);
	if (!text) return -1;
	/* a UTF-8 byte-order mark (spreadsheet exports write one) is not part of the first line */
	char *start = !strncmp(text, "\xef\xbb\xbf", 3) ? text + 3 : text;
	int ix[NCOLS], ix_step = -1, ix_by = -1;
	for (int i = 0; i < NCOLS; i++) ix[i] = -1;
	int cap = 0, n = 0, header = 0, ncell_hdr = 0;
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
				if (opts->by && !strcmp(cell[i], opts->by)) ix_by = i;
			}
			if (opts->by && ix_by < 0) { rc = errf(err, "--by: %s has no column '%.40s'", path, opts->by); goto out; }
			/* FORMAT.md's never-empty columns must be there; any other column that is absent
			 * is unknown in every row, read as the empty cell one past the row's last */
			for (int k = 0; k < NCOLS; k++) {
				if (ix[k] >= 0) continue;
				if (col_required(k)) { rc = errf(err, "%s: header lacks column '%s' (FORMAT.md)", path, colnames[k]); goto out; }
				ix[k] = nc;
				fprintf(stderr, "validate: %s: no column '%s'; read as unknown in every row\n",
					path, colnames[k]);
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
		if (ix_by >= 0) snprintf(r->by, sizeof(r->by), "%s", cell[ix_by]);
		cell_int(cell[ix[C_NGPU]], &r->num_gpus);
		cell_int(cell[ix[C_SEQ]], &r->seq);
		cell_int(cell[ix[C_GBS]], &r->gbs);
		r->mem_rank0 = strstr(cell[ix[C_NOTES]], "rank 0") != NULL;
		r->mem_allocated = !strcmp(cell[ix[C_MEMKIND]], "allocated");
		struct model m;
		struct plan p;
		int ok = row_measured(cell, ix, ix_step, r) == 0 && row_to_inputs(cell, ix, r, &m, &p) == 0;
		for (int i = 0; ok && i < opts->nset; i++) { /* overrides (what-if on a row) */
			if (plan_set(&p, opts->set_key[i], opts->set_val[i], err)) { rc = -1; goto out; }
			if (!strcmp(opts->set_key[i], "recompute")) r->rc_unknown = 0;
			char what[160];
			snprintf(what, sizeof(what), "%s=%s", opts->set_key[i], opts->set_val[i]);
			add_assumed(r, what);
		}
		if (ok)
			predict(r, &m, &p, opts->explain);
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
	if (rc) { free(rows); return rc; }
	*rows_out = rows;
	*nrows = n;
	return 0;
}
