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
#include "runtime/cp.h"
#include "runtime/pp.h"
#include "runtime/train.h"
#include "runtime/zero.h"
#include "sim/flops.h"
#include "sim/util.h"

struct trainer {
	struct ctx *x;
	const struct data *data;
	struct train_opts o;
	struct llama *m;
	struct llama_acts *a;
	int L, nunits, micro, stage, steps;
	size_t *bound;                 /* [nunits+1]: unit u is [bound[u], bound[u+1]) */
	struct decay_range *decay;
	int ndecay;
	struct zero *z;                /* stages 0-2 */
	struct zero3 *z3;              /* stage 3 */
	struct llama_layer_offsets *rebased;  /* stage 3: layer l's offsets minus bound[1+l] */
	int *tokens, *targets;         /* (mbs, seq) */
	double t0_s;
	double static_bytes, peak_bytes;
	struct train_event *ev;
	size_t nev, cap;
	double rs_start_s;             /* stages 0-2: when the first bucket started, or -1 */
	/* ---- model parallelism (tp, pp, cp or ep > 1): a shard per rank, zero 0 ---- */
	int par;
	struct pp *pp;                 /* pp > 1: the executor, which owns the model copies */
	struct llama *copy[2];         /* copy[0] == m; DualPipe's second copy */
	int ncopies;
	int Tl;                        /* rows of each sequence on this rank (seq/cp) */
	int *mtok, *mtgt;              /* (micro, mbs, Tl): this rank's rows of the step's batch */
	int *stage_l0;                 /* [nstages+1] first layer of each pipeline stage */
	int *tok, *tgt;                /* the micro-batch in use: tokens/targets or mtok/mtgt */
	struct decay_range *skip;      /* flat ranges left out of this rank's share of the norm */
	int nskip;
	/* ---- ZeRO 1/2 with ep > 1: dense tensors packed into one zero over dp*cp (z), routed
	 * experts into one over the expert-DP group (ze; NULL when the rank holds none). Pack k
	 * (0 dense, 1 experts) is runs of the model's flat buffer laid end to end. */
	struct zero *ze;
	struct ep_pack {
		struct decay_range *runs, *decay, *skip; /* runs: model offsets; decay, skip: packed */
		int nruns, ndecay, nskip;
		size_t n;                  /* packed elements */
		float *buf;                /* zero_padded() floats: packed gradients for the reduction,
		                            * then packed parameters for the step and its gathers */
	} pk[2];
};

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
	if (p->zero == 3 && m->tied)
		return errf(err, "%s: zero 3 with tied embeddings (tie_word_embeddings)", what);
	if (p->zero == 3 && p->ep > 1)
		return errf(err, "%s: zero 3 with ep %d (expert-parallel plans run with --zero 0-2)", what, p->ep);
	if (p->zero == 3 && p->pp > 1)
		return errf(err, "%s: zero 3 with pp %d (pipeline plans run with --zero 0-2)", what, p->pp);
	if (p->zero != 0 && p->pp > 1 && (p->schedule == SCHED_DUALPIPE))
		return errf(err, "%s: zero %d with the dualpipe schedule (two model copies; use --zero 0)", what,
		            p->zero);
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

/* ---- events ------------------------------------------------------------------------- */

static void record(struct trainer *t, int name, int stream, double s, double e, int mb, int l0, int l1)
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

static void note_peak(struct trainer *t)
{
	double b = t->static_bytes;
	if (t->pp) b += pp_act_bytes(t->pp);
	if (t->z3) b += 4.0 * (double)zero3_peak_live(t->z3);
	if (b > t->peak_bytes) t->peak_bytes = b;
}

double train_mem_bytes(const struct trainer *t) { return t->peak_bytes; }

static double peak_rss_bytes(void)
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
	return (struct adamw_cfg){o->lr, o->beta1, o->beta2, o->eps, o->weight_decay, t->decay, t->ndecay};
}

/* ZeRO 0-2: the model's params and grads become padded buffers the reduction can use; the
 * moments live in zero, so the model's are freed. */
static int setup_zero012(struct trainer *t, char *err)
{
	struct zero_cfg zc = {.stage = t->stage, .bucket_params = t->o.bucket_params, .opt = adam_cfg(t)};
	if (zero_create(ctx_comm(t->x, GROUP_DPCP), t->m->n_params, &zc, &t->z, err)) return -1;
	size_t P = zero_padded(t->z), n = t->m->n_params;
	float *p = calloc(P, sizeof(float)), *g = calloc(P, sizeof(float));
	if (!p || !g) {
		free(p);
		free(g);
		return errf(err, "train: out of memory for %zu parameters", P);
	}
	memcpy(p, t->m->params, n * sizeof(float));
	free(t->m->params);
	free(t->m->grads);
	free(t->m->m);
	free(t->m->v);
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
		                      .opt = {o->lr, o->beta1, o->beta2, o->eps, o->weight_decay, q->decay, q->ndecay}};
		struct zero **z = k ? &t->ze : &t->z;
		if (zero_create(ctx_comm(t->x, k ? GROUP_EDP : GROUP_DPCP), q->n, &zc, z, err)) return -1;
		size_t P = zero_padded(*z);
		q->buf = calloc(P, sizeof(float));
		if (!q->buf) return errf(err, "train: out of memory for %zu parameters", P);
		struct zero_state zs;
		zero_state(*z, &zs);
		bytes += 4.0 * ((double)P + 3.0 * (double)zs.n); /* pack; m, v, gradient shards */
	}
	free(m->m);
	free(m->v);
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
	free(t->m->params);
	free(t->m->grads);
	free(t->m->m);
	free(t->m->v);
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
			    mc->name, need / 1073741824.0, ranks_here, have / 1073741824.0);
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
static int share_buffer(float **a, float **b, size_t na, size_t nb, char *err)
{
	float *both = malloc(sizeof(float) * (na + nb + 1));
	if (!both) return errf(err, "train: out of memory");
	memcpy(both, *a, sizeof(float) * na);
	memcpy(both + na, *b, sizeof(float) * nb);
	free(*a);
	free(*b);
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
	t->par = 1;
	t->Tl = p->seq / p->cp;
	if (p->pp > 1) {
		if (pp_create_sharded(x, mc, lo, &par, &t->pp, err)) return -1;
		t->ncopies = pp_copies(t->pp);
		for (int c = 0; c < t->ncopies; c++) t->copy[c] = pp_model(t->pp, c);
		t->m = t->copy[0];
		if (t->ncopies == 2) {
			struct llama *a = t->copy[0], *b = t->copy[1];
			if (share_buffer(&a->params, &b->params, a->n_params, b->n_params, err) ||
			    share_buffer(&a->m, &b->m, a->n_params, b->n_params, err) ||
			    share_buffer(&a->v, &b->v, a->n_params, b->n_params, err))
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
	if (here < 0 || train_supported(p, mc, err) || check_host_memory(mc, here, err)) return -1;
	struct trainer *t = calloc(1, sizeof(*t));
	if (!t) return errf(err, "train: out of memory");
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
		if (t->a) t->static_bytes += 4.0 * ((double)t->a->n_floats + (double)t->a->n_ints);
		goto ready;
	}
	if (llama_create(&t->m, mc, &lo, err) || build_units(t, err) ||
	    acts_for_plan(t, p, err))
		goto out;
	t->tokens = malloc(sizeof(int) * (size_t)p->mbs * (size_t)p->seq);
	t->targets = malloc(sizeof(int) * (size_t)p->mbs * (size_t)p->seq);
	if (!t->tokens || !t->targets) {
		errf(err, "train: out of memory");
		goto out;
	}
	if (t->stage < 3 ? setup_zero012(t, err) : setup_zero3(t, err)) goto out;
	t->static_bytes += 4.0 * ((double)t->a->n_floats + (double)t->a->n_ints);
ready:
	note_peak(t);
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
		free(t->pk[k].buf);
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
	free(t);
}

int train_steps_done(const struct trainer *t) { return t->steps; }
size_t train_n_params(const struct trainer *t) { return t->m->n_params_full; }
const struct llama *train_model(const struct trainer *t) { return t->m; }

/* ---- one micro-batch, ZeRO 0-2 ------------------------------------------------------ */

/* Loads micro-batch j of this rank's share of the current step's global batch. */
static void load_batch(struct trainer *t, int j)
{
	const struct plan *p = &t->x->plan;
	int per_rank = p->gbs / p->dp, d = comm_rank(ctx_comm(t->x, GROUP_DP));
	uint64_t first = (uint64_t)t->steps * (uint64_t)p->gbs + (uint64_t)d * (uint64_t)per_rank +
			 (uint64_t)j * (uint64_t)p->mbs;
	for (int b = 0; b < p->mbs; b++)
		data_sample(t->data, first + (uint64_t)b, p->seq, t->tokens + (size_t)b * p->seq,
			    t->targets + (size_t)b * p->seq);
}

/* Marks unit u's gradients ready when this backward feeds the reduction. */
/* Sequence parallelism leaves the norms' gradients of unit u (in g, which starts at the
 * unit's first element) as per-TP-rank partial sums: add them up before they are reduced. */
static int sp_finish_unit(struct trainer *t, int u, float *g, char *err)
{
	const struct llama *m = t->m;
	if (!m->sp) return 0;
	for (int i = 0; i < m->n_specs; i++) {
		const struct param_spec *s = &m->specs[i];
		if (!s->seq_partial || s->offset < t->bound[u] || s->offset >= t->bound[u + 1]) continue;
		float *x = g + (s->offset - t->bound[u]);
		if (comm_allreduce(m->tp, x, x, s->numel, COMM_F32, err)) return -1;
	}
	return 0;
}

static int ready(struct trainer *t, int reduce, int u, char *err)
{
	if (!reduce) return 0;
	if (sp_finish_unit(t, u, t->m->grads + t->bound[u], err)) return -1;
	if (zero_grad_ready(t->z, t->bound[u], t->bound[u + 1] - t->bound[u], err)) return -1;
	if (t->rs_start_s < 0 && dp_started(zero_dp(t->z)) > 0) t->rs_start_s = now_s();
	return 0;
}

static int microbatch_zero012(struct trainer *t, int j, float dloss, int reduce, double *loss, char *err)
{
	struct llama *m = t->m;
	double s = now_s();
	*loss = llama_forward(m, t->a, t->tok, t->tgt);
	double e = now_s();
	record(t, EV_F, EV_COMPUTE, s, e, j, 0, t->L);
	llama_head_backward(m, t->a, dloss);
	if (ready(t, reduce, t->L + 1, err)) return -1;
	for (int l = t->L - 1; l >= 0; l--) {
		llama_layers_backward(m, t->a, l, l + 1);
		if (ready(t, reduce, 1 + l, err)) return -1;
	}
	llama_embed_backward(m, t->a);
	if (t->a->failed) return errf(err, "train: %s", t->a->err);
	if (ready(t, reduce, 0, err)) return -1;
	record(t, EV_BW, EV_COMPUTE, e, now_s(), j, 0, t->L);
	return 0;
}

/* ---- one micro-batch, ZeRO-3 -------------------------------------------------------- */

/* A model whose weights (and gradients) for unit u sit in the unit's own buffers. */
static struct llama view_of(const struct trainer *t, int u, const float *params, float *grads)
{
	struct llama v = *t->m;
	v.params = (float *)params;   /* the passes only read params */
	v.grads = grads;
	v.layer = t->rebased;
	v.embed = 0;
	v.final_norm = 0;
	v.lm_head = t->m->lm_head - t->bound[u];
	return v;
}

static int gather(struct trainer *t, int u, int dir, const float **w, char *err)
{
	double s = now_s();
	if (zero3_gather(t->z3, u, dir, w, err)) return -1;
	record(t, EV_ALLGATHER, EV_COMM, s, now_s(), -1, -1, -1);
	note_peak(t);
	return 0;
}

static int microbatch_zero3(struct trainer *t, int j, float dloss, double *loss, char *err)
{
	const int L = t->L, head = L + 1;
	const float *w;
	struct llama v;
	double s = now_s();
	if (gather(t, 0, +1, &w, err)) return -1;
	v = view_of(t, 0, w, NULL);
	llama_embed_forward(&v, t->a, t->tok);
	zero3_release(t->z3, 0);
	for (int l = 0; l < L; l++) {
		if (gather(t, 1 + l, +1, &w, err)) return -1;
		v = view_of(t, 1 + l, w, NULL);
		llama_layers_forward(&v, t->a, l, l + 1);
		zero3_release(t->z3, 1 + l);
	}
	if (gather(t, head, -1, &w, err)) return -1;
	v = view_of(t, head, w, NULL);
	*loss = llama_head_forward(&v, t->a, t->tgt) + llama_aux_loss(&v, t->a, 0, L);
	double e = now_s();
	record(t, EV_F, EV_COMPUTE, s, e, j, 0, L);
	for (int u = head; u >= 0; u--) {
		if (u != head && gather(t, u, -1, &w, err)) return -1;
		float *g = zero3_grad(t->z3, u, err);
		if (!g) return -1;
		note_peak(t);
		v = view_of(t, u, w, g);
		if (u == head) llama_head_backward(&v, t->a, dloss);
		else if (u > 0) llama_layers_backward(&v, t->a, u - 1, u);
		else llama_embed_backward(&v, t->a);
		zero3_release(t->z3, u);
		if (t->a->failed) return errf(err, "train: %s", t->a->err);
		if (sp_finish_unit(t, u, g, err) || zero3_reduce(t->z3, u, err)) return -1;
		note_peak(t);
	}
	record(t, EV_BW, EV_COMPUTE, e, now_s(), j, 0, L);
	return 0;
}

static int load_par(struct trainer *t, int j, int *tok, int *tgt, char *err);

/* Forward and backward of micro-batch j, its gradient added into this rank's accumulator:
 * the one place a tensor- or pipeline-parallel executor replaces. `reduce` says whether this
 * backward feeds a data-parallel reduction (stages 0-2 mark gradients ready as they go). */
static int run_microbatch(struct trainer *t, int j, float dloss, int reduce, double *loss, char *err)
{
	if (t->par) {
		if (load_par(t, j, t->mtok, t->mtgt, err)) return -1;
		t->tok = t->mtok;
		t->tgt = t->mtgt;
	} else {
		load_batch(t, j);
		t->tok = t->tokens;
		t->tgt = t->targets;
	}
	if (t->z3) return microbatch_zero3(t, j, dloss, loss, err);
	return microbatch_zero012(t, j, dloss, reduce, loss, err);
}

/* ---- the step ----------------------------------------------------------------------- */

static int finish_reduce(struct trainer *t, char *err)
{
	double s = now_s();
	if (zero_reduce_finish(t->z, err)) return -1;
	double start = t->rs_start_s >= 0 ? t->rs_start_s : s;
	record(t, t->stage ? EV_REDUCE_SCATTER : EV_ALLREDUCE, EV_COMM, start, now_s(), -1, -1, -1);
	t->rs_start_s = -1;
	return 0;
}

static int accumulate(struct trainer *t, double *loss_sum, char *err)
{
	/* the reduction averages over dp*cp, but CP ranks' gradients are shares of one
	 * sequence's gradient that must add up: scale by cp (exact for powers of two) */
	const float dloss = (float)t->x->plan.cp / (float)t->micro;
	if (t->z) llama_zero_grad(t->m);
	for (int j = 0; j < t->micro; j++) {
		/* stage 2 reduces every micro-batch; 0 and 1 only the last one's backward */
		int reduce = t->z && (t->stage == 2 || j == t->micro - 1);
		if (reduce && zero_reduce_begin(t->z, t->m->grads, t->stage == 2 && j > 0, err)) return -1;
		double l;
		if (run_microbatch(t, j, dloss, reduce, &l, err)) return -1;
		*loss_sum += l;
		if (reduce && finish_reduce(t, err)) return -1;
		if (reduce && t->stage == 2 && j < t->micro - 1) llama_zero_grad(t->m);
	}
	return 0;
}

/* ---- model parallelism -------------------------------------------------------------- */

/* This rank's rows of micro-batch j into tok/tgt (mbs, Tl): its dp share of the global
 * batch, the same on every TP and PP rank, the zig-zag rows under CP. */
static int load_par(struct trainer *t, int j, int *tok, int *tgt, char *err)
{
	const struct plan *p = &t->x->plan;
	load_batch(t, j);
	if (p->cp == 1) {
		memcpy(tok, t->tokens, sizeof(int) * (size_t)p->mbs * (size_t)p->seq);
		memcpy(tgt, t->targets, sizeof(int) * (size_t)p->mbs * (size_t)p->seq);
		return 0;
	}
	int r = comm_rank(ctx_comm(t->x, GROUP_CP));
	if (cp_shard_tokens(tok, t->tokens, p->mbs, p->seq, p->cp, r, err) ||
	    cp_shard_tokens(tgt, t->targets, p->mbs, p->seq, p->cp, r, err))
		return -1;
	return 0;
}

static int ev_of_op(int kind)
{
	return kind == OP_F ? EV_F : kind == OP_B ? EV_B : kind == OP_W ? EV_W : EV_BW;
}

/* Gradients of copy m averaged over data parallelism: dense tensors summed over dp*cp (CP
 * ranks hold their rows' shares of the same sequences' gradient, which add up to it), routed
 * experts over the expert-DP group (the EP all-to-all already summed the EP group's tokens),
 * all divided by dp, so the result is the single-rank gradient of the global batch. */
static int reduce_par(struct trainer *t, struct llama *m, char *err)
{
	const struct plan *p = &t->x->plan;
	struct comm *dpcp = ctx_comm(t->x, GROUP_DPCP), *edp = ctx_comm(t->x, GROUP_EDP);
	const float inv = 1.0f / (float)p->dp;
	size_t i = 0;
	while ((int)i < m->n_specs) {
		int expert = m->specs[i].shard == SHARD_EXPERT;
		size_t j = i, off = m->specs[i].offset, n = 0;
		while ((int)j < m->n_specs && (m->specs[j].shard == SHARD_EXPERT) == expert &&
		       m->specs[j].offset == off + n)
			n += m->specs[j++].numel;
		struct comm *g = expert ? edp : dpcp;
		float *gr = m->grads + off;
		if (comm_size(g) > 1 && comm_allreduce(g, gr, gr, n, COMM_F32, err)) return -1;
		if (p->dp > 1)
			for (size_t k = 0; k < n; k++) gr[k] *= inv;
		i = j;
	}
	return 0;
}

/* Pipeline with ZeRO 1/2: the executor leaves the step's whole gradient (all micro-batches)
 * on each rank, so one reduce-scatter per step over dp*cp (stage 2 behaves as stage 1 here),
 * clipping over dp*cp, tp and pp counting each tensor once, AdamW on the shard, all-gather. */
static int finish_pp_zero(struct trainer *t, double *norm, char *err)
{
	struct llama *m = t->m;
	const int cp = t->x->plan.cp;
	if (llama_grads_finish(m, err)) return -1;
	if (cp > 1) /* the reduction averages over dp*cp; CP shares must add up (see accumulate) */
		for (size_t i = 0; i < m->n_params; i++) m->grads[i] *= (float)cp;
	double s = now_s();
	if (zero_reduce_begin(t->z, m->grads, 0, err) || zero_grad_ready(t->z, 0, m->n_params, err) ||
	    zero_reduce_finish(t->z, err))
		return -1;
	record(t, EV_REDUCE_SCATTER, EV_COMM, s, now_s(), -1, -1, -1);
	s = now_s();
	struct comm *mp[2] = {ctx_comm(t->x, GROUP_TP), ctx_comm(t->x, GROUP_PP)};
	if (zero_clip_grad_norm_skip(t->z, t->skip, t->nskip, mp, 2, t->o.opt.max_grad_norm, norm, err) ||
	    zero_step(t->z, m->params, err))
		return -1;
	double gs, ge;
	zero_last_gather(t->z, &gs, &ge);
	record(t, EV_ALLGATHER, EV_COMM, gs, ge, -1, -1, -1);
	size_t before = t->nev;
	record(t, EV_OPT, EV_COMPUTE, s, now_s(), -1, -1, -1);
	if (t->nev > before) t->ev[t->nev - 1].stage = comm_rank(ctx_comm(t->x, GROUP_PP));
	return 0;
}

/* ZeRO 1/2 with ep > 1 after the step's micro-batches: each pack reduce-scattered over its
 * group (scaled first so that the group's average is the single-rank gradient: dense by cp
 * as in accumulate, experts by |edp|/dp as reduce_par's sum over edp divided by dp), one norm
 * over both (dense shards tile dp*cp; expert shards tile each edp group and the EP ranks hold
 * different experts, so the sum over dp*cp counts every element once; then over tp and pp),
 * clipping, AdamW on the shards, all-gathers, and the packs copied back into the model. Stage
 * 2 reduces once per step here, as stage 1. */
static int finish_ep_zero(struct trainer *t, double *norm, char *err)
{
	struct llama *m = t->m;
	const struct plan *p = &t->x->plan;
	struct zero *zs[2] = {t->z, t->ze};
	const float scale[2] = {(float)p->cp, (float)comm_size(ctx_comm(t->x, GROUP_EDP)) / (float)p->dp};
	if (llama_grads_finish(m, err)) return -1;
	double s = now_s(), sq = 0;
	for (int k = 0; k < 2; k++) {
		struct ep_pack *q = &t->pk[k];
		if (!zs[k]) continue;
		size_t at = 0;
		for (int i = 0; i < q->nruns; at += q->runs[i++].len) {
			const float *g = m->grads + q->runs[i].off;
			for (size_t e = 0; e < q->runs[i].len; e++) q->buf[at + e] = g[e] * scale[k];
		}
		if (zero_reduce_begin(zs[k], q->buf, 0, err) || zero_grad_ready(zs[k], 0, q->n, err) ||
		    zero_reduce_finish(zs[k], err))
			return -1;
		sq += zero_grad_sq_skip(zs[k], q->skip, q->nskip);
	}
	record(t, EV_REDUCE_SCATTER, EV_COMM, s, now_s(), -1, -1, -1);
	s = now_s();
	struct comm *groups[3] = {ctx_comm(t->x, GROUP_DPCP), ctx_comm(t->x, GROUP_TP), ctx_comm(t->x, GROUP_PP)};
	if (grad_norm_global(sq, groups, 3, norm, err)) return -1;
	const float coef = grad_clip_coef(*norm, t->o.opt.max_grad_norm);
	for (int k = 0; k < 2; k++) {
		struct ep_pack *q = &t->pk[k];
		if (!zs[k]) continue;
		if (t->o.opt.max_grad_norm > 0 && coef < 1.0f) zero_scale_grads(zs[k], coef);
		size_t at = 0;
		for (int i = 0; i < q->nruns; at += q->runs[i++].len)
			memcpy(q->buf + at, m->params + q->runs[i].off, sizeof(float) * q->runs[i].len);
		if (zero_step(zs[k], q->buf, err)) return -1;
		at = 0;
		for (int i = 0; i < q->nruns; at += q->runs[i++].len)
			memcpy(m->params + q->runs[i].off, q->buf + at, sizeof(float) * q->runs[i].len);
	}
	size_t before = t->nev;
	record(t, EV_OPT, EV_COMPUTE, s, now_s(), -1, -1, -1);
	if (t->nev > before) t->ev[t->nev - 1].stage = comm_rank(ctx_comm(t->x, GROUP_PP));
	return 0;
}

static int step_par(struct trainer *t, double *loss_sum, double *norm, char *err)
{
	const struct plan *p = &t->x->plan;
	const size_t rows = (size_t)p->mbs * (size_t)t->Tl;
	if (t->pp) {
		for (int j = 0; j < t->micro; j++)
			if (load_par(t, j, t->mtok + (size_t)j * rows, t->mtgt + (size_t)j * rows, err)) return -1;
		float loss;
		double s = now_s();
		if (pp_step(t->pp, t->mtok, t->mtgt, &loss, err)) return -1;
		*loss_sum = (double)loss * t->micro;
		size_t n;
		const struct pp_op_time *ot = pp_times(t->pp, &n);
		for (size_t i = 0; i < n && t->o.trace; i++) {
			size_t before = t->nev;
			record(t, ev_of_op(ot[i].kind), EV_COMPUTE, s + ot[i].start_s, s + ot[i].end_s, ot[i].mb,
			       t->stage_l0[ot[i].stage], t->stage_l0[ot[i].stage + 1]);
			if (t->nev > before) {
				t->ev[t->nev - 1].chunk = ot[i].chunk;
				t->ev[t->nev - 1].stage = ot[i].stage;
			}
		}
	} else {
		const float dloss = 1.0f / (float)t->micro;
		llama_zero_grad(t->m);
		for (int j = 0; j < t->micro; j++) {
			if (load_par(t, j, t->mtok, t->mtgt, err)) return -1;
			double s = now_s();
			float l = llama_forward(t->m, t->a, t->mtok, t->mtgt);
			double e = now_s();
			if (t->a->failed) return errf(err, "train: %s", t->a->err);
			llama_backward(t->m, t->a, dloss);
			if (t->a->failed) return errf(err, "train: %s", t->a->err);
			record(t, EV_F, EV_COMPUTE, s, e, j, 0, t->L);
			record(t, EV_BW, EV_COMPUTE, e, now_s(), j, 0, t->L);
			*loss_sum += l;
		}
	}
	if (t->pk[0].runs) return finish_ep_zero(t, norm, err);
	if (t->z) return finish_pp_zero(t, norm, err);
	double s = now_s();
	for (int c = 0; c < t->ncopies; c++)
		if (llama_grads_finish(t->copy[c], err) || reduce_par(t, t->copy[c], err)) return -1;
	record(t, EV_ALLREDUCE, EV_COMM, s, now_s(), -1, -1, -1);
	s = now_s();
	float nrm;
	if (t->pp) {
		if (t->ncopies == 2) t->copy[1]->step = t->copy[0]->step; /* a restore sets copy 0's */
		if (pp_adamw_step_par(t->pp, &t->o.opt, NULL, 0, &nrm, err)) return -1;
	} else if (llama_step_par(t->m, &t->o.opt, NULL, 0, &nrm, err)) {
		return -1;
	}
	size_t before = t->nev;
	record(t, EV_OPT, EV_COMPUTE, s, now_s(), -1, -1, -1);
	if (t->nev > before) t->ev[t->nev - 1].stage = comm_rank(ctx_comm(t->x, GROUP_PP));
	*norm = nrm;
	return 0;
}

int train_step(struct trainer *t, struct train_stats *st, char *err)
{
	const struct plan *p = &t->x->plan;
	struct comm *dpg = ctx_comm(t->x, GROUP_DPCP);
	double t_start = now_s(), loss_sum = 0, norm = 0;
	if (t->par && (t->pp || t->pk[0].runs || (!t->z && !t->z3))) {
		if (step_par(t, &loss_sum, &norm, err)) return -1;
		goto done;
	}
	if (accumulate(t, &loss_sum, err)) return -1;
	double s = now_s();
	float max_norm = t->o.opt.max_grad_norm;
	struct comm *mp[1] = {ctx_comm(t->x, GROUP_TP)};
	int nmp = t->par ? 1 : 0;
	if (t->z3) {
		/* clipping first waits for the unit reduce-scatters still in flight */
		if (zero3_clip_grad_norm_skip(t->z3, t->skip, t->nskip, mp, nmp, max_norm, &norm, err)) return -1;
		record(t, EV_REDUCE_SCATTER, EV_COMM, s, now_s(), -1, -1, -1);
		s = now_s();
	}
	if (t->z ? zero_clip_grad_norm_skip(t->z, t->skip, t->nskip, mp, nmp, max_norm, &norm, err) ||
			   zero_step(t->z, t->m->params, err)
		 : zero3_step(t->z3, err))
		return -1;
	double e = now_s();
	if (t->z && t->stage) {
		/* the optimizer op runs until the parameters are gathered again, as in a
		 * non-overlapped step; the gather shows on the comm stream beside it */
		double gs, ge;
		zero_last_gather(t->z, &gs, &ge);
		record(t, EV_ALLGATHER, EV_COMM, gs, ge, -1, -1, -1);
	}
	record(t, EV_OPT, EV_COMPUTE, s, e, -1, -1, -1);
done:
	t->steps++;
	if (comm_allreduce(dpg, &loss_sum, &loss_sum, 1, COMM_F64, err)) return -1;
	/* the step ends when the slowest rank ends (comm has sum-reductions only: gather) */
	double dt = now_s() - t_start, *all = malloc(sizeof(double) * (size_t)t->x->world);
	if (!all) return errf(err, "train: out of memory");
	int rc = comm_allgather(t->x->world_comm, &dt, all, 1, COMM_F64, err);
	for (int r = 0; r < t->x->world; r++) dt = all[r] > dt ? all[r] : dt;
	free(all);
	if (rc) return -1;
	note_peak(t);
	st->step = t->steps;
	st->loss = loss_sum / ((double)t->micro * comm_size(dpg));
	st->grad_norm = norm;
	st->step_time_s = dt;
	st->tokens_per_s = (double)p->gbs * p->seq / st->step_time_s;
	st->mem_bytes_local = t->peak_bytes;
	st->rss_bytes_local = peak_rss_bytes();
	return 0;
}

/* ---- state -------------------------------------------------------------------------- */

int train_full_params(struct trainer *t, float *full, char *err)
{
	if (t->par && t->z3) {
		float *local = malloc(sizeof(float) * (t->m->n_params + 1));
		if (!local) return errf(err, "train: out of memory");
		int rc = 0;
		for (int u = 0; u < t->nunits && !rc; u++) {
			const float *w;
			rc = zero3_gather(t->z3, u, 0, &w, err);
			if (!rc) memcpy(local + t->bound[u], w, (t->bound[u + 1] - t->bound[u]) * sizeof(float));
			zero3_release(t->z3, u);
		}
		if (!rc) rc = llama_gather_full(t->m, local, full, NULL, 0, err);
		free(local);
		return rc;
	}
	if (t->par) {
		/* copy 0 of every pipeline rank holds each stage once (DualPipe's copy 1 repeats
		 * a partner's); TP and EP pieces are summed in by llama_gather_full */
		struct comm *g = ctx_comm(t->x, GROUP_PP);
		return llama_gather_full(t->m, t->m->params, full, &g, 1, err);
	}
	if (t->z) {
		memcpy(full, t->m->params, t->m->n_params * sizeof(float));
		return 0;
	}
	for (int u = 0; u < t->nunits; u++) {
		const float *w;
		if (zero3_gather(t->z3, u, 0, &w, err)) return -1;
		memcpy(full + t->bound[u], w, (t->bound[u + 1] - t->bound[u]) * sizeof(float));
		zero3_release(t->z3, u);
	}
	return 0;
}

int train_state(struct trainer *t, struct train_state *s)
{
	if (t->par && !t->z && !t->z3) {
		size_t n = t->m->n_params + (t->ncopies == 2 ? t->copy[1]->n_params : 0);
		*s = (struct train_state){t->m->params, n, t->m->m, t->m->v, n, &t->m->step, &t->steps};
		return 0;
	}
	struct zero_state zs;
	if (t->z) zero_state(t->z, &zs);
	else zero3_state(t->z3, &zs);
	s->params = t->z ? t->m->params : zs.p;
	s->n_params = t->z ? t->m->n_params : zs.n;
	s->m = zs.m;
	s->v = zs.v;
	s->n_moments = zs.n;
	s->adam_step = zs.step;
	s->steps_done = &t->steps;
	return 0;
}
