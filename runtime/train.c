/* train — one rank's trainer: micro-batches, data-parallel reduction, clipping, AdamW.
 *
 * The flat parameter vector is cut into units in backward-friendly order: unit 0 the
 * embedding, unit 1+l decoder layer l, the last unit the final norm and LM head
 * (model.c lays tensors out in exactly this order). ZeRO 0-2 mark a unit's gradients ready as
 * soon as its backward is done; ZeRO-3 shards by these units and runs each layer on a view
 * of the model whose offsets are rebased into the gathered unit.
 *
 * Model-parallel plans run on this rank's shard (llama_create_par), whose flat buffer keeps
 * the same order over the tensors it holds, so the units above are this rank's tensors per
 * layer. With pp > 1 the pipeline executor (runtime/pp.h) owns the shard's copies and runs
 * the step's schedule; ZeRO 0 then reduces per tensor (dense over dp*cp, routed experts over
 * expert-DP) after it, ZeRO 1/2 reduce-scatter the whole buffer once. Sequence parallelism's
 * norm gradients are summed over TP per unit before a unit is reduced. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "runtime/pp.h"
#include "runtime/train.h"
#include "runtime/train_impl.h"
#include "runtime/zero.h"
#include "sim/flops.h"
#include "sim/util.h"


void train_opts_default(struct train_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->seed = 1234;
	adamw_opts_default(&o->opt);
}

const char *train_ev_name(int name)
{
	static const char *const names[] = {"F", "B", "W", "BW", "optimizer", "allreduce",
					    "reduce_scatter", "allgather"};
	return name >= 0 && name < EV_NAME_COUNT ? names[name] : "?";
}

int train_supported(const struct plan *p, const struct model *m, char *err)
{
	static const char *const what = "not yet supported by the runtime";
	if (p->zero < 0 || p->zero > 3) return errf(err, "plan: zero (%d) must be 0..3", p->zero);
	if (p->recompute == RC_OP)
		return errf(err, "%s: recompute op (torchtitan's per-op checkpointing; use none, selective or full)", what);
	if (p->recompute == RC_SELECTIVE && p->recompute_modules != RCM_CORE_ATTN)
		return errf(err, "%s: recompute_modules beyond core_attn (the runtime's selective recompute re-runs the attention core)", what);
	if (p->zero == 3 && m->tied)
		return errf(err, "%s: zero 3 with tied embeddings (tie_word_embeddings)", what);
	if (model_is_moe(m) && ((p->etp && p->etp != p->tp) || ((long)p->dp * p->cp) % p->ep))
		return errf(err, "%s: expert parallel folding (ep %d, etp %d over tp*dp*cp; the runtime places ep inside dp*cp with etp = tp)",
			    what, p->ep, p->etp);
	if (p->zero == 3 && p->ep > 1)
		return errf(err, "%s: zero 3 with ep %d (expert-parallel plans run with --zero 0-2)", what, p->ep);
	if (p->zero == 3 && p->pp > 1)
		return errf(err, "%s: zero 3 with pp %d (pipeline plans run with --zero 0-2)", what, p->pp);
	if (p->zero != 0 && p->pp > 1 && sched_family(p->schedule)->ndirs > 1)
		return errf(err, "%s: zero %d with the %s schedule (two model copies; use --zero 0)", what,
		            p->zero, schedule_name(p->schedule));
	if (p->mbs < 1 || p->seq < 1 || p->dp < 1 || p->gbs % (p->dp * p->mbs))
		return errf(err, "plan: gbs (%d) must be a multiple of dp*mbs (%d*%d)", p->gbs, p->dp, p->mbs);
	if (p->tp > 1 && (m->heads % p->tp || m->kv_heads % p->tp))
		return errf(err, "plan: tp (%d) must divide the model's heads (%d) and kv_heads (%d)", p->tp, m->heads,
		            m->kv_heads);
	if (p->tp > 1 && m->vocab % p->tp)
		return errf(err, "plan: tp (%d) must divide the model's vocab (%d)", p->tp, m->vocab);
	if (p->tp > 1 && model_is_moe(m) && m->moe_ffn_hidden % p->tp)
		return errf(err, "plan: tp (%d) must divide the model's moe_ffn_hidden (%d)", p->tp, m->moe_ffn_hidden);
	if (p->tp > 1 && (!model_is_moe(m) || m->moe_dense_layers > 0) && m->ffn_hidden % p->tp)
		return errf(err, "plan: tp (%d) must divide the model's ffn_hidden (%d)", p->tp, m->ffn_hidden);
	if (p->tp > 1 && p->sp && (p->mbs * p->seq / (p->cp > 0 ? p->cp : 1)) % p->tp)
		return errf(err, "plan: sequence parallelism needs tp (%d) to divide mbs*seq/cp (%d)", p->tp,
		            p->mbs * p->seq / (p->cp > 0 ? p->cp : 1));
	if (p->cp > 1 && p->seq % (2 * p->cp))
		return errf(err, "plan: cp (%d) needs seq (%d) to be a multiple of 2*cp", p->cp, p->seq);
	if (p->ep > 1 && (!model_is_moe(m) || m->moe_experts % p->ep))
		return errf(err, "plan: ep (%d) needs a MoE model whose experts (%d) it divides", p->ep,
		            model_is_moe(m) ? m->moe_experts : 0);
	if (p->ep > 1 && p->tp > 1) return errf(err, "%s: ep %d with tp %d (expert parallelism needs tp 1)", what,
	                                        p->ep, p->tp);
	return 0;
}

int train_supported_on(const struct plan *p, const struct model *m, const struct kern_ops *row, char *err)
{
	if (train_supported(p, m, err)) return -1;
	if (row->host_visible) return 0;
	/* ZeRO-3 gathers fp32 units that the passes read as weights; a row with a compute format
	 * would need each gathered unit cast first */
	if (row->cast_weights && p->zero == 3)
		return errf(err, "not yet supported on backend %s: zero 3 (the gathered fp32 units are not cast to the "
		            "row's compute format; use zero 0-2, or --backend cuda-fp32 or cpu)", row->name);
	/* ring attention goes through the table, but no CUDA row has the blockwise attention
	 * entries it calls (they record an error naming themselves) */
	if (p->cp > 1)
		return errf(err, "not yet supported on backend %s: cp %d (ring attention's attention_block_forward/"
		            "backward are not in this row; use cp 1 or --backend cpu)", row->name, p->cp);
	/* The vocabulary-parallel loss, the TP collectives and the expert exchange run on the
	 * row's memory (COMM_BF16 or COMM_F32 activations) over the NCCL world cli/verb_run.c
	 * makes; what several ranks still lack is a home for the step's host-side collectives
	 * (the host names at setup, the loss and step time of runtime/train_step.c, the
	 * gradient norm's sum of runtime/zero.c, the pipeline's loss), which pass host memory
	 * to the world's groups, and NCCL reads device memory only. */
	const long ranks = (long)p->dp * p->tp * p->cp * p->pp;
	if (ranks > 1)
		return errf(err, "not yet supported on backend %s: %ld ranks (dp %d, tp %d, pp %d, ep %d; the step's "
		            "host-side collectives, the loss, the step time and the gradient norm, pass host memory, "
		            "which NCCL cannot read; use one rank or --backend cpu)", row->name, ranks, p->dp, p->tp,
		            p->pp, p->ep);
	return 0;
}

/* ---- events ------------------------------------------------------------------------- */

void train_record(struct trainer *t, int name, int stream, double s, double e, int mb, int l0, int l1)
{
	if (!t->o.trace) return;
	if (t->nev == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		struct train_event *ev = realloc(t->ev, cap * sizeof(*ev));
		if (!ev) return;   /* a trace missing events beats a failed step */
		t->ev = ev;
		t->cap = cap;
	}
	int compute = stream == EV_COMPUTE;
	t->ev[t->nev++] = (struct train_event){s - t->t0_s, e - t->t0_s, name, stream, mb,
					       compute ? 0 : -1, compute ? 0 : -1, l0, l1};
}

const struct train_event *train_events(const struct trainer *t, size_t *n)
{
	*n = t->nev;
	return t->ev;
}

void train_clear_events(struct trainer *t) { t->nev = 0; }

/* ---- memory ------------------------------------------------------------------------- */

void train_note_peak(struct trainer *t)
{
	double b = t->static_bytes;
	if (t->pp) b += pp_act_bytes(t->pp);
	if (t->z3) b += 4.0 * (double)zero3_peak_live(t->z3);
	if (b > t->peak_bytes) t->peak_bytes = b;
}

double train_mem_bytes(const struct trainer *t) { return t->peak_bytes; }

double train_peak_rss_bytes(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru)) return 0;
	return (double)ru.ru_maxrss * 1024.0;   /* Linux reports KiB */
}

/* ---- creation ----------------------------------------------------------------------- */

static int build_decay(struct trainer *t, char *err);

static int build_units(struct trainer *t, char *err)
{
	const struct llama *m = t->m;
	t->L = m->cfg.layers;
	t->nunits = t->L + 2;
	t->bound = malloc(sizeof(size_t) * (size_t)(t->nunits + 1));
	if (!t->bound) return errf(err, "train: out of memory");
	t->bound[0] = 0;
	for (int l = 0; l < t->L; l++) t->bound[1 + l] = m->layer[l].attn_norm;
	t->bound[t->L + 1] = m->final_norm;
	t->bound[t->L + 2] = m->n_params;
	for (int u = 0; u < t->nunits; u++)
		if (t->bound[u] >= t->bound[u + 1] || (u == 0 && m->embed != 0))
			return errf(err, "train: model %s's tensors are not laid out embed, layers, head",
				    m->cfg.name);
	return build_decay(t, err);
}

/* Decay ranges: runs of adjacent decayed tensors. */
static int build_decay(struct trainer *t, char *err)
{
	const struct llama *m = t->m;
	t->decay = malloc(sizeof(*t->decay) * (size_t)m->n_specs);
	if (!t->decay) return errf(err, "train: out of memory");
	for (int i = 0; i < m->n_specs; i++) {
		const struct param_spec *s = &m->specs[i];
		if (!s->decay) continue;
		struct decay_range *last = t->ndecay ? &t->decay[t->ndecay - 1] : NULL;
		if (last && last->off + last->len == s->offset) last->len += s->numel;
		else t->decay[t->ndecay++] = (struct decay_range){s->offset, s->numel};
	}
	return 0;
}

static struct adamw_cfg adam_cfg(const struct trainer *t)
{
	const struct adamw_opts *o = &t->o.opt;
	return (struct adamw_cfg){o->lr, o->beta1, o->beta2, o->eps, o->weight_decay, t->decay, t->ndecay, t->k};
}

/* ZeRO 0-2: the model's params and grads become padded buffers the reduction can use; the
 * moments live in zero, so the model's are freed. */
static int setup_zero012(struct trainer *t, char *err)
{
	struct zero_cfg zc = {.stage = t->stage, .bucket_params = t->o.bucket_params, .opt = adam_cfg(t)};
	if (zero_create(ctx_comm(t->x, GROUP_DPCP), t->m->n_params, &zc, &t->z, err)) return -1;
	size_t P = zero_padded(t->z), n = t->m->n_params;
	/* the model's moments and (still zero) gradients go first, so that the allocator's peak
	 * holds one extra copy of the parameters only */
	kern_free(t->k, t->m->m);
	kern_free(t->k, t->m->v);
	kern_free(t->k, t->m->grads);
	t->m->m = t->m->v = t->m->grads = NULL;
	float *p = kern_zalloc(t->k, P * sizeof(float));
	if (p) kern_copy_dev(t->k, p, t->m->params, n * sizeof(float));
	if (p) kern_free(t->k, t->m->params);
	float *g = p ? kern_zalloc(t->k, P * sizeof(float)) : NULL;
	if (!p || !g) {
		kern_free(t->k, p);
		if (p) t->m->params = NULL;
		return errf(err, "train: out of memory for %zu parameters on backend %s", P, t->k->ops->name);
	}
	t->m->params = p;
	t->m->grads = g;
	t->m->m = t->m->v = NULL;
	struct zero_state zs;
	zero_state(t->z, &zs);
	t->static_bytes = 4.0 * (2.0 * (double)P + 2.0 * (double)zs.n + (t->stage ? (double)zs.n : 0));
	return 0;
}

/* Appends [off, off+n) to a sorted run list, merging with the last run when adjacent. */
static void add_range(struct decay_range *r, int *nr, size_t off, size_t n)
{
	if (*nr && r[*nr - 1].off + r[*nr - 1].len == off) r[*nr - 1].len += n;
	else r[(*nr)++] = (struct decay_range){off, n};
}

static int in_ranges(const struct decay_range *r, int nr, size_t off)
{
	for (int i = 0; i < nr; i++)
		if (off >= r[i].off && off < r[i].off + r[i].len) return 1;
	return 0;
}

/* ZeRO 1/2 with expert parallelism (Megatron-LM's distributed optimizer with experts): the
 * dense tensors sharded over dp*cp, the routed experts over the expert-DP group, each in a
 * packed buffer of its own; the model keeps its params and grads, the moments live in zero. */
static int setup_zero_ep(struct trainer *t, char *err)
{
	struct llama *m = t->m;
	for (int k = 0; k < 2; k++) {
		struct ep_pack *q = &t->pk[k];
		q->runs = malloc(sizeof(*q->runs) * ((size_t)m->n_specs + 1));
		q->decay = malloc(sizeof(*q->decay) * ((size_t)m->n_specs + 1));
		q->skip = malloc(sizeof(*q->skip) * ((size_t)m->n_specs + 1));
		if (!q->runs || !q->decay || !q->skip) return errf(err, "train: out of memory");
		for (int i = 0; i < m->n_specs; i++) {
			const struct param_spec *sp = &m->specs[i];
			if ((sp->shard == SHARD_EXPERT) != k) continue;
			add_range(q->runs, &q->nruns, sp->offset, sp->numel);
			if (sp->decay) add_range(q->decay, &q->ndecay, q->n, sp->numel);
			if (in_ranges(t->skip, t->nskip, sp->offset)) add_range(q->skip, &q->nskip, q->n, sp->numel);
			q->n += sp->numel;
		}
	}
	const struct adamw_opts *o = &t->o.opt;
	double bytes = 8.0 * (double)m->n_params; /* the model's params and grads */
	for (int k = 0; k < 2; k++) {
		struct ep_pack *q = &t->pk[k];
		if (!q->n) continue;
		struct zero_cfg zc = {.stage = t->stage, .bucket_params = t->o.bucket_params,
		                      .opt = {o->lr, o->beta1, o->beta2, o->eps, o->weight_decay, q->decay, q->ndecay, t->k}};
		struct zero **z = k ? &t->ze : &t->z;
		if (zero_create(ctx_comm(t->x, k ? GROUP_EDP : GROUP_DPCP), q->n, &zc, z, err)) return -1;
		size_t P = zero_padded(*z);
		q->buf = kern_zalloc(t->k, P * sizeof(float));
		if (!q->buf) return errf(err, "train: out of memory for %zu parameters", P);
		struct zero_state zs;
		zero_state(*z, &zs);
		bytes += 4.0 * ((double)P + 3.0 * (double)zs.n); /* pack; m, v, gradient shards */
	}
	kern_free(t->k, m->m);
	kern_free(t->k, m->v);
	m->m = m->v = NULL;
	t->static_bytes = bytes;
	return 0;
}

static int setup_zero3(struct trainer *t, char *err)
{
	size_t *sizes = malloc(sizeof(size_t) * (size_t)t->nunits);
	if (!sizes) return errf(err, "train: out of memory");
	for (int u = 0; u < t->nunits; u++) sizes[u] = t->bound[u + 1] - t->bound[u];
	struct adamw_cfg ac = adam_cfg(t);
	int rc = zero3_create(ctx_comm(t->x, GROUP_DPCP), sizes, t->nunits, &ac, &t->z3, err);
	free(sizes);
	if (rc || zero3_load(t->z3, t->m->params, err)) return -1;
	kern_free(t->k, t->m->params);
	kern_free(t->k, t->m->grads);
	kern_free(t->k, t->m->m);
	kern_free(t->k, t->m->v);
	t->m->params = t->m->grads = t->m->m = t->m->v = NULL;
	t->rebased = malloc(sizeof(*t->rebased) * (size_t)t->L);
	if (!t->rebased) return errf(err, "train: out of memory");
	for (int l = 0; l < t->L; l++) {
		struct llama_layer_offsets o = t->m->layer[l];
		size_t base = t->bound[1 + l], *f = (size_t *)&o;
		for (size_t i = 0; i < sizeof(o) / sizeof(size_t); i++)
			if (f[i] != (size_t)-1) f[i] -= base;
		t->rebased[l] = o;
	}
	t->static_bytes = 4.0 * 4.0 * (double)zero3_shard_len(t->z3);   /* p, g, m, v shards */
	return 0;
}

/* The model is built whole (4 fp32 copies) before sharding, so refuse what cannot fit in
 * this machine's memory instead of letting the kernel kill the job mid-initialisation. */
static int check_host_memory(const struct model *mc, int ranks_here, char *err)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	if (pages <= 0 || page <= 0) return 0;
	double need = 16.0 * model_params_total(mc) * ranks_here, have = (double)pages * (double)page;
	if (need > 0.8 * have)
		return errf(err, "train: model %s needs %.1f GiB for %d rank(s) on this host (16 bytes per "
			    "parameter while it is built), more than 80%% of the %.1f GiB here",
			    mc->name, need / GIB, ranks_here, have / GIB);
	return 0;
}

/* Collective: how many ranks of the world share this rank's host name. */
static int ranks_on_host(struct ctx *x, char *err)
{
	enum { HOST_LEN = 64 };
	char mine[HOST_LEN] = {0};
	char *all = calloc((size_t)x->world, HOST_LEN);
	if (!all) return errf(err, "train: out of memory");
	gethostname(mine, HOST_LEN - 1);
	int n = -1;
	if (!comm_allgather(x->world_comm, mine, all, HOST_LEN, COMM_BYTE, err)) {
		n = 0;
		for (int r = 0; r < x->world; r++) n += !strncmp(all + (size_t)r * HOST_LEN, mine, HOST_LEN);
	}
	free(all);
	return n;
}

/* Model parallelism: this rank's shard (tp with sp, cp, ep groups from the context), and for
 * pp > 1 the pipeline executor with the plan's schedule, which builds the copies of this
 * rank's stages. DualPipe's two copies get their params and moments in one buffer each so
 * a checkpoint holds both. */
static int share_buffer(struct kern *k, float **a, float **b, size_t na, size_t nb, char *err)
{
	float *both = kern_alloc(k, sizeof(float) * (na + nb + 1));
	if (!both) return errf(err, "train: out of memory");
	kern_copy_dev(k, both, *a, sizeof(float) * na);
	kern_copy_dev(k, both + na, *b, sizeof(float) * nb);
	kern_free(k, *a);
	kern_free(k, *b);
	*a = both;
	*b = both + na;
	return 0;
}

/* One micro-batch's activations, with the plan's recomputation (pp_recompute_modes). */
static int acts_for_plan(struct trainer *t, const struct plan *p, char *err)
{
	unsigned char *rc = malloc((size_t)t->m->cfg.layers + 1);
	if (!rc) return errf(err, "train: out of memory");
	pp_recompute_modes(p, t->m->cfg.layers, rc);
	int r = llama_acts_create_rc(&t->a, t->m, p->mbs, p->seq, 0, rc, err);
	free(rc);
	return r;
}

static int setup_par(struct trainer *t, const struct model *mc, const struct llama_opts *lo, char *err)
{
	const struct ctx *x = t->x;
	const struct plan *p = &x->plan;
	struct llama_par par;
	llama_par_default(&par);
	par.tp = ctx_comm(x, GROUP_TP);
	par.sp = p->sp;
	par.cp = ctx_comm(x, GROUP_CP);
	par.ep = ctx_comm(x, GROUP_EP);
	par.backend = t->k;
	t->par = 1;
	t->Tl = p->seq / p->cp;
	if (p->pp > 1) {
		if (pp_create_sharded(x, mc, lo, &par, &t->pp, err)) return -1;
		t->ncopies = pp_copies(t->pp);
		for (int c = 0; c < t->ncopies; c++) t->copy[c] = pp_model(t->pp, c);
		t->m = t->copy[0];
		if (t->ncopies == 2) {
			struct llama *a = t->copy[0], *b = t->copy[1];
			if (share_buffer(t->k, &a->params, &b->params, a->n_params, b->n_params, err) ||
			    share_buffer(t->k, &a->m, &b->m, a->n_params, b->n_params, err) ||
			    share_buffer(t->k, &a->v, &b->v, a->n_params, b->n_params, err))
				return -1;
		}
		const struct sched *s = pp_sched(t->pp);
		t->stage_l0 = malloc(sizeof(int) * ((size_t)s->nstages + 1));
		if (!t->stage_l0) return errf(err, "train: out of memory");
		t->stage_l0[0] = 0;
		for (int i = 0; i < s->nstages; i++) t->stage_l0[i + 1] = t->stage_l0[i] + p->stage_layers[i];
		size_t n = (size_t)t->micro * (size_t)p->mbs * (size_t)t->Tl;
		t->mtok = malloc(sizeof(int) * n);
		t->mtgt = malloc(sizeof(int) * n);
		if (!t->mtok || !t->mtgt) return errf(err, "train: out of memory");
	} else {
		if (llama_create_par(&t->m, mc, lo, &par, err)) return -1;
		t->copy[0] = t->m;
		t->ncopies = 1;
		if (acts_for_plan(t, p, err)) return -1;
		size_t n = (size_t)p->mbs * (size_t)t->Tl;
		t->mtok = malloc(sizeof(int) * n);
		t->mtgt = malloc(sizeof(int) * n);
		if (!t->mtok || !t->mtgt) return errf(err, "train: out of memory");
	}
	t->tokens = malloc(sizeof(int) * (size_t)p->mbs * (size_t)p->seq);
	t->targets = malloc(sizeof(int) * (size_t)p->mbs * (size_t)p->seq);
	if (!t->tokens || !t->targets) return errf(err, "train: out of memory");
	t->L = mc->layers;
	double bytes = 0;
	for (int c = 0; c < t->ncopies; c++) bytes += 16.0 * (double)t->copy[c]->n_params;
	t->static_bytes = bytes;
	return 0;
}

/* The norm counts a TP-replicated tensor on TP rank 0 only, a tied embedding on stage 0. */
static int build_skip(struct trainer *t, char *err)
{
	const struct llama *m = t->m;
	t->skip = malloc(sizeof(*t->skip) * ((size_t)m->n_specs + 1));
	if (!t->skip) return errf(err, "train: out of memory");
	for (int i = 0; i < m->n_specs; i++) {
		const struct param_spec *s = &m->specs[i];
		/* a last stage's tied embedding is counted where stage 0 lives */
		int skip = (s->shard == SHARD_REPLICATED && m->tp_rank) || (s->offset == m->embed && !m->has_embed);
		if (!skip) continue;
		struct decay_range *last = t->nskip ? &t->skip[t->nskip - 1] : NULL;
		if (last && last->off + last->len == s->offset) last->len += s->numel;
		else t->skip[t->nskip++] = (struct decay_range){s->offset, s->numel};
	}
	return 0;
}

int train_create(struct ctx *x, const struct model *mc, const struct train_opts *o,
		 const struct data *d, struct trainer **out, char *err)
{
	*out = NULL;
	const struct plan *p = &x->plan;
	int here = ranks_on_host(x, err);
	const struct kern_ops *row = o->backend ? o->backend : &kern_cpu_ops;
	if (here < 0 || train_supported_on(p, mc, row, err) || check_host_memory(mc, here, err)) return -1;
	struct trainer *t = calloc(1, sizeof(*t));
	if (!t) return errf(err, "train: out of memory");
	if (kern_create(&t->k, row, o->device, err)) {
		free(t);
		return -1;
	}
	t->x = x;
	t->data = d;
	t->o = *o;
	t->stage = p->zero;
	t->micro = plan_microbatches(p);
	t->rs_start_s = -1;
	struct llama_opts lo;
	llama_opts_default(&lo);
	lo.seed = o->seed;
	int rc = -1;
	if (p->tp > 1 || p->pp > 1 || p->cp > 1 || p->ep > 1) {
		if (setup_par(t, mc, &lo, err)) goto out;
		if (t->stage > 0 && ((t->pp ? build_decay(t, err) : build_units(t, err)) || build_skip(t, err) ||
		                     (p->ep > 1 ? setup_zero_ep(t, err) :
		                      t->stage < 3 ? setup_zero012(t, err) : setup_zero3(t, err))))
			goto out;
		if (t->a) t->static_bytes += (double)t->a->slab_bytes + 4.0 * (double)t->a->n_ints;
		goto ready;
	}
	struct llama_par single;
	llama_par_default(&single);
	single.backend = t->k;
	if (llama_create_par(&t->m, mc, &lo, &single, err) || build_units(t, err) ||
	    acts_for_plan(t, p, err))
		goto out;
	t->tokens = malloc(sizeof(int) * (size_t)p->mbs * (size_t)p->seq);
	t->targets = malloc(sizeof(int) * (size_t)p->mbs * (size_t)p->seq);
	if (!t->tokens || !t->targets) {
		errf(err, "train: out of memory");
		goto out;
	}
	if (t->stage < 3 ? setup_zero012(t, err) : setup_zero3(t, err)) goto out;
	t->static_bytes += (double)t->a->slab_bytes + 4.0 * (double)t->a->n_ints;
ready:
	train_note_peak(t);
	/* the allocator's peak counts from here: training, not the whole-model build before sharding */
	kern_reset_peak(t->k);
	if (comm_barrier(x->world_comm, err)) goto out;
	t->t0_s = now_s();
	*out = t;
	t = NULL;
	rc = 0;
out:
	train_destroy(t);
	return rc;
}

void train_destroy(struct trainer *t)
{
	if (!t) return;
	zero_destroy(t->z);
	zero_destroy(t->ze);
	for (int k = 0; k < 2; k++) {
		free(t->pk[k].runs);
		free(t->pk[k].decay);
		free(t->pk[k].skip);
		kern_free(t->k, t->pk[k].buf);
	}
	zero3_destroy(t->z3);
	llama_acts_destroy(t->a);
	if (t->pp) {
		if (t->ncopies == 2) /* copy 1's buffers live inside copy 0's (share_buffer) */
			t->copy[1]->params = t->copy[1]->m = t->copy[1]->v = NULL;
		pp_destroy(t->pp);   /* owns the models */
	} else {
		llama_destroy(t->m);
	}
	free(t->mtok);
	free(t->mtgt);
	free(t->stage_l0);
	free(t->skip);
	free(t->bound);
	free(t->decay);
	free(t->rebased);
	free(t->tokens);
	free(t->targets);
	free(t->ev);
	kern_destroy(t->k);
	free(t);
}

int train_steps_done(const struct trainer *t) { return t->steps; }
size_t train_n_params(const struct trainer *t) { return t->m->n_params_full; }
const struct llama *train_model(const struct trainer *t) { return t->m; }
const struct kern *train_backend(const struct trainer *t) { return t->k; }

