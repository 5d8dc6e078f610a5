/* pp — the pipeline executor (runtime/pp.h). Creation resolves this rank's op list once: each
 * op's stage, layer range, model copy, activation set, and which message it receives (peer
 * and position in that peer's send order) or sends; pp_step (pp_exec.c) then walks the list. The
 * end-of-step summations (DualPipe copies, tied embedding, loss) are collectives over the
 * pipeline group, issued in the same order by every rank. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/ctx.h"
#include "runtime/pp.h"
#include "runtime/pp_impl.h"
#include "runtime/zero.h"
#include "sim/util.h"

/* ---- creation ------------------------------------------------------------------------- */

static int check_cfg(const struct pp_cfg *c, char *err)
{
	const struct sched *s = c->sched;
	if (!s) return errf(err, "pp: no schedule given");
	if (!c->comm) return errf(err, "pp: no pipeline communicator given");
	if (comm_size(c->comm) != s->pp)
		return errf(err, "pp: pipeline group has %d ranks but the schedule has pp %d", comm_size(c->comm), s->pp);
	if (c->B <= 0 || c->T <= 0)
		return errf(err, "pp: micro-batch B (%d) and T (%d) must be positive", c->B, c->T);
	for (int d = 0; d < s->ndirs; d++)
		if (!c->models[d])
			return errf(err, "pp: %s needs %d model copies, copy %d is missing",
			            schedule_name(s->type), s->ndirs, d);
	const struct llama *m = c->models[0];
	if (s->ndirs == 2) {
		const struct llama *m1 = c->models[1];
		if (m1 == m) return errf(err, "pp: dualpipe needs two distinct model copies");
		if (m1->cfg.layers != m->cfg.layers || m1->cfg.hidden != m->cfg.hidden)
			return errf(err, "pp: dualpipe model copies differ in shape");
	}
	if (!c->stage_layers) return errf(err, "pp: no stage_layers given");
	int sum = 0;
	for (int i = 0; i < s->nstages; i++) {
		if (c->stage_layers[i] < 0)
			return errf(err, "pp: stage_layers[%d] (%d) must be >= 0", i, c->stage_layers[i]);
		sum += c->stage_layers[i];
	}
	if (sum != m->cfg.layers)
		return errf(err, "pp: stage_layers sum to %d, not the model's layers (%d)", sum, m->cfg.layers);
	for (int d = 0; d < s->ndirs; d++) {
		const struct llama *md = c->models[d];
		if (!md->cfg.tied && md->final_norm != SIZE_MAX && md->lm_head != md->final_norm + (size_t)md->cfg.hidden)
			return errf(err, "pp: model layout: lm_head does not follow final_norm");
	}
	return 0;
}

/* Index of this rank's op of class F (0) or B/BW (1) for (dir, chunk, mb). */
static size_t key_of(const struct sched *s, int dir, int chunk, int mb, int cls)
{
	size_t k = ((size_t)dir * (size_t)s->chunks + (size_t)chunk) * (size_t)s->mb_per_dir + (size_t)mb;
	return k << 1 | (size_t)cls;
}

/* The peer a sched op of rank `r` sends to (-1: none or the same rank). */
static int send_peer_of(const struct sched *s, int r, const struct sched_op *o, int *to_stage)
{
	int st = sched_stage(s, r, o->chunk, o->dir), q, c;
	if (o->kind == OP_F && st < s->nstages - 1) *to_stage = st + 1;
	else if ((o->kind == OP_B || o->kind == OP_BW) && st > 0) *to_stage = st - 1;
	else return -1;
	sched_locate(s, o->dir, *to_stage, &q, &c);
	return q == r ? -1 : q;
}

/* Each peer's sends to this rank, in the peer's own order, each naming the op here that
 * consumes it (at[]: this rank's op index by key_of). */
static int build_queues(struct pp *p, const size_t *at, char *err)
{
	const struct sched *s = p->s;
	const int r = p->rank;
	for (int q = 0; q < s->pp; q++) {
		if (q == r) continue;
		struct pp_rq *rq = &p->rq[q];
		for (int pass = 0; pass < 2; pass++) {
			rq->n = 0;
			for (size_t i = s->off[q]; i < s->off[q + 1]; i++) {
				const struct sched_op *o = &s->ops[i];
				int to, rr, cc;
				if (send_peer_of(s, q, o, &to) != r) continue;
				sched_locate(s, o->dir, to, &rr, &cc);
				size_t k = at[key_of(s, o->dir, cc, o->mb, o->kind != OP_F)];
				if (k == SIZE_MAX || p->ops[k].recv_peer != q)
					return errf(err, "pp: schedule: %s of micro-batch %d (dir %d) on rank %d "
					            "has no consumer on rank %d",
					            op_kind_name((enum op_kind)o->kind), o->mb, o->dir, q, r);
				if (pass) p->ops[k].recv_idx = rq->n;
				rq->n++;
			}
			if (!pass) {
				rq->req = calloc((size_t)rq->n + 1, sizeof *rq->req);
				rq->buf = calloc((size_t)rq->n + 1, sizeof *rq->buf);
				if (!rq->req || !rq->buf) return errf(err, "pp: out of memory");
			}
		}
	}
	for (size_t i = 0; i < p->nops; i++)
		if (p->ops[i].recv_peer >= 0 && p->ops[i].recv_idx < 0)
			return errf(err, "pp: schedule: rank %d's %s of micro-batch %d waits for a message rank %d never sends",
			            r, op_kind_name((enum op_kind)p->ops[i].op.kind), p->ops[i].op.mb, p->ops[i].recv_peer);
	return 0;
}

/* Stage, layers, copy and peers of each op of this rank. */
static int resolve_ops(struct pp *p, const int *stage_layers, char *err)
{
	const struct sched *s = p->s;
	const int r = p->rank;
	const struct sched_op *mine = s->ops + s->off[r];
	p->nops = sched_rank_len(s, r);
	p->ops = calloc(p->nops ? p->nops : 1, sizeof *p->ops);
	p->layer0 = malloc(sizeof(int) * ((size_t)s->nstages + 1));
	size_t nkeys = key_of(s, s->ndirs - 1, s->chunks - 1, s->mb_per_dir - 1, 1) + 1;
	size_t *at = malloc(sizeof(size_t) * nkeys);
	if (!p->ops || !p->layer0 || !at) { free(at); return errf(err, "pp: out of memory"); }
	p->layer0[0] = 0;
	for (int i = 0; i < s->nstages; i++) p->layer0[i + 1] = p->layer0[i] + stage_layers[i];
	for (size_t k = 0; k < nkeys; k++) at[k] = SIZE_MAX;
	for (size_t i = 0; i < p->nops; i++) {
		struct pp_op *o = &p->ops[i];
		o->op = mine[i];
		o->stage = sched_stage(s, r, o->op.chunk, o->op.dir);
		o->l0 = p->layer0[o->stage];
		o->l1 = p->layer0[o->stage + 1];
		o->copy = o->op.dir;
		o->recv_peer = o->recv_idx = -1;
		int to, from = -1, q, c;
		o->send_peer = send_peer_of(s, r, &o->op, &to);
		if (o->op.kind == OP_F && o->stage > 0) from = o->stage - 1;
		if ((o->op.kind == OP_B || o->op.kind == OP_BW) && o->stage < s->nstages - 1) from = o->stage + 1;
		if (from >= 0) {
			sched_locate(s, o->op.dir, from, &q, &c);
			if (q != r) o->recv_peer = q;
		}
		if (o->op.kind != OP_W) at[key_of(s, o->op.dir, o->op.chunk, o->op.mb, o->op.kind != OP_F)] = i;
	}
	int rc = build_queues(p, at, err);
	free(at);
	return rc;
}

/* Activation sets: a (dir, mb) takes a set at its first op on this rank (an F) and returns it
 * after its last; the pool is the peak number taken. */
static int assign_sets(struct pp *p, char *err)
{
	const struct sched *s = p->s;
	size_t nkeys = (size_t)s->ndirs * (size_t)s->mb_per_dir;
	size_t *last = malloc(sizeof(size_t) * nkeys);
	int *slot = malloc(sizeof(int) * nkeys), *freel = malloc(sizeof(int) * (nkeys + 1));
	size_t *chunk_last = malloc(sizeof(size_t) * (size_t)s->chunks);
	int rc = 0, nfree = 0, used = 0;
	if (!last || !slot || !freel || !chunk_last) { rc = errf(err, "pp: out of memory"); goto out; }
	for (size_t k = 0; k < nkeys; k++) { last[k] = SIZE_MAX; slot[k] = -1; }
	for (int c = 0; c < s->chunks; c++) chunk_last[c] = SIZE_MAX;
	for (size_t i = 0; i < p->nops; i++) {
		const struct sched_op *o = &p->ops[i].op;
		last[(size_t)o->dir * (size_t)s->mb_per_dir + (size_t)o->mb] = i;
		if (o->kind == OP_W || o->kind == OP_BW) chunk_last[o->chunk] = i;
	}
	for (size_t i = 0; i < p->nops; i++) {
		struct pp_op *o = &p->ops[i];
		size_t k = (size_t)o->op.dir * (size_t)s->mb_per_dir + (size_t)o->op.mb;
		if (slot[k] < 0) {
			if (o->op.kind != OP_F) {
				rc = errf(err, "pp: schedule: rank %d runs %s of micro-batch %d before its F",
				          p->rank, op_kind_name((enum op_kind)o->op.kind), o->op.mb);
				goto out;
			}
			slot[k] = nfree ? freel[--nfree] : used++;
		}
		o->slot = slot[k];
		if (last[k] == i) freel[nfree++] = slot[k];
		o->chunk_done = chunk_last[o->op.chunk] == i;
	}
	p->nsets = used;
out:
	free(last);
	free(slot);
	free(freel);
	free(chunk_last);
	return rc;
}

void pp_head_specs(const struct llama *m, int *embed, int *fn, int *head)
{
	*embed = *fn = *head = -1;
	for (int i = 0; i < m->n_specs; i++) {
		if (m->specs[i].layer >= 0) continue;
		if (m->specs[i].offset == m->embed) *embed = i;
		else if (m->specs[i].offset == m->final_norm) *fn = i;
		else if (!m->cfg.tied && m->specs[i].offset == m->lm_head) *head = i;
	}
}

/* Which tensors of which copy this rank holds and counts once in the global norm. Each copy
 * is indexed by its own spec table (a shard holds only its stages' tensors). */
static int mark_holdings(struct pp *p, char *err)
{
	const struct sched *s = p->s;
	const struct llama *m = p->models[0];
	for (int c = 0; c < p->ncopies; c++) {
		p->hold[c] = calloc((size_t)p->models[c]->n_specs + 1, 1);
		if (!p->hold[c]) return errf(err, "pp: out of memory");
	}
	p->embed_spec[0] = p->embed_spec[1] = -1;
	for (int ch = 0; ch < s->chunks; ch++) {
		int dir = op_dir(s, ch), st = sched_stage(s, p->rank, ch, dir);
		const struct llama *md = p->models[dir];
		int es, fs, hs;
		pp_head_specs(md, &es, &fs, &hs);
		unsigned char *h = p->hold[dir], cnt = dir == 0 ? COUNT : 0;
		for (int i = 0; i < md->n_specs; i++) {
			int l = md->specs[i].layer;
			if (l >= p->layer0[st] && l < p->layer0[st + 1]) {
				if (!llama_holds_layer(md, l))
					return errf(err, "pp: model copy %d lacks layer %d of stage %d", dir, l, st);
				h[i] |= HOLD | cnt;
			}
		}
		if (st == 0) {
			if (es < 0) return errf(err, "pp: model copy %d lacks the embedding of stage 0", dir);
			h[es] |= HOLD | cnt;
			p->embed_spec[dir] = es;
			p->has_first = 1;
		}
		if (st == s->nstages - 1) {
			if (fs < 0 || (hs < 0 && (!md->cfg.tied || es < 0)))
				return errf(err, "pp: model copy %d lacks the final norm or LM head of the last stage", dir);
			h[fs] |= HOLD | cnt;
			if (hs >= 0) h[hs] |= HOLD | cnt;
			else h[es] |= HOLD; /* tied: counted where stage 0 lives */
			if (md->cfg.tied) p->embed_spec[dir] = es;
			p->has_last = 1;
		}
	}
	int r0, rl, c;
	sched_locate(s, 0, 0, &r0, &c);
	sched_locate(s, 0, s->nstages - 1, &rl, &c);
	p->tied_sum = m->cfg.tied && (s->ndirs == 2 || r0 != rl);
	size_t en = (size_t)m->cfg.vocab * (size_t)m->cfg.hidden;
	if (p->tied_sum && !(p->tied_buf = kern_alloc(m->k, sizeof(float) * en))) return errf(err, "pp: out of memory");
	if (s->ndirs == 2) {
		p->partner = s->pp - 1 - p->rank;
		for (int cp = 0; cp < 2; cp++)
			for (int i = 0; i < p->models[cp]->n_specs; i++)
				if ((p->hold[cp][i] & HOLD) && !(p->tied_sum && i == p->embed_spec[cp]))
					p->xlen[cp] += p->models[cp]->specs[i].numel;
		size_t n = p->xlen[0] + p->xlen[1];
		p->xsend = kern_alloc(m->k, sizeof(float) * (n ? n : 1));
		p->xrecv = kern_alloc(m->k, sizeof(float) * (n ? n : 1));
		if (!p->xsend || !p->xrecv) return errf(err, "pp: out of memory");
	}
	return 0;
}

int pp_create(const struct pp_cfg *cfg, struct pp **out, char *err)
{
	*out = NULL;
	if (check_cfg(cfg, err)) return -1;
	struct pp *p = calloc(1, sizeof *p);
	if (!p) return errf(err, "pp: out of memory");
	const struct sched *s = cfg->sched;
	p->s = s;
	p->comm = cfg->comm;
	p->rank = comm_rank(cfg->comm);
	p->ncopies = s->ndirs;
	p->models[0] = cfg->models[0];
	p->models[1] = s->ndirs == 2 ? cfg->models[1] : NULL;
	p->B = cfg->B;
	p->T = cfg->T;
	p->N = cfg->B * cfg->T;
	p->m = s->m;
	p->partner = -1;
	p->msg_floats = (size_t)p->N * (size_t)p->models[0]->cfg.hidden;
	p->rq = calloc((size_t)s->pp, sizeof *p->rq);
	int rc = p->rq ? 0 : errf(err, "pp: out of memory");
	if (!rc) rc = resolve_ops(p, cfg->stage_layers, err);
	if (!rc) rc = assign_sets(p, err);
	if (!rc) rc = mark_holdings(p, err);
	if (!rc) {
		int split_w = 0;
		for (size_t i = 0; i < p->nops; i++) split_w |= p->ops[i].op.kind == OP_W;
		p->sets = calloc((size_t)p->nsets + 1, sizeof *p->sets);
		p->times = calloc(p->nops + 1, sizeof *p->times);
		p->pool = malloc(sizeof(float *) * 1);
		if (!p->sets || !p->times || !p->pool) rc = errf(err, "pp: out of memory");
		/* the sets serve every copy: slots for the layers any copy holds (DualPipe's
		 * sharded copies hold different layers) */
		struct llama view = *p->models[0];
		unsigned char *held = malloc((size_t)view.cfg.layers + 1);
		if (!held) rc = errf(err, "pp: out of memory");
		for (int l = 0; l < view.cfg.layers && !rc; l++)
			held[l] = llama_holds_layer(p->models[0], l) ||
			          (p->ncopies == 2 && llama_holds_layer(p->models[1], l));
		view.held = held;
		/* a deferred W pass of a fully recomputed layer re-runs its forward, which would
		 * replace the expert exchange the pending W pass reads */
		for (int l = 0; l < view.cfg.layers && !rc && split_w && cfg->recompute; l++)
			if (held[l] && cfg->recompute[l] == LLAMA_RC_FULL && model_layer_is_moe(&view.cfg, l) &&
			    view.ep_size > 1)
				rc = errf(err, "not yet supported by the runtime: full recompute of MoE layers under "
				               "expert parallelism with a split-W schedule");
		for (int i = 0; i < p->nsets && !rc; i++)
			rc = llama_acts_create_rc(&p->sets[i], &view, p->B, p->T, split_w, cfg->recompute, err);
		free(held);
		if (!rc && p->nsets) {
			/* under context parallelism a rank holds T/cp rows of each sequence, under
			 * sequence parallelism 1/tp of the residual stream's rows */
			p->N = p->sets[0]->N;
			p->msg_floats = (size_t)p->sets[0]->Nl * (size_t)p->models[0]->cfg.hidden;
		}
	}
	if (rc) {
		pp_destroy(p);
		return -1;
	}
	*out = p;
	return 0;
}

/* The schedule of a resolved plan, checked against its layer split; NULL with err. */
static struct sched *plan_sched(const struct plan *pl, char *err)
{
	int vpp = sched_family(pl->schedule)->flags & SCHED_F_VIRTUAL ? pl->vpp : 1;
	if (pl->dp <= 0 || pl->mbs <= 0 || pl->gbs <= 0) {
		errf(err, "pp: plan has no resolved dp, mbs and gbs (call plan_resolve)");
		return NULL;
	}
	struct sched *s = sched_create(pl->schedule, pl->pp, plan_microbatches(pl), vpp, err);
	if (s && pl->nstage_layers != s->nstages) {
		errf(err, "pp: plan has %d stage_layers entries but %s has %d stages (call plan_resolve)",
		     pl->nstage_layers, schedule_name(pl->schedule), s->nstages);
		sched_destroy(s);
		return NULL;
	}
	return s;
}

int pp_create_from_ctx(const struct ctx *x, struct llama *const *models, struct pp **out, char *err)
{
	*out = NULL;
	const struct plan *pl = &x->plan;
	struct sched *s = plan_sched(pl, err);
	if (!s) return -1;
	const int layers = models[0]->cfg.layers;
	unsigned char *rcm = malloc((size_t)layers + 1);
	if (!rcm) {
		sched_destroy(s);
		return errf(err, "pp: out of memory");
	}
	pp_recompute_modes(pl, layers, rcm);
	struct pp_cfg c = {.sched = s, .comm = ctx_comm(x, GROUP_PP), .stage_layers = pl->stage_layers,
	                   .models = {models[0], s->ndirs == 2 ? models[1] : NULL}, .B = pl->mbs, .T = pl->seq,
	                   .recompute = rcm};
	int rc = pp_create(&c, out, err);
	free(rcm);
	if (rc) {
		sched_destroy(s);
		return -1;
	}
	(*out)->own_sched = s;
	return 0;
}

void pp_recompute_modes(const struct plan *p, int layers, unsigned char *out)
{
	memset(out, LLAMA_RC_NONE, (size_t)layers);
	if (p->recompute == RC_SELECTIVE) memset(out, LLAMA_RC_ATTN, (size_t)layers);
	if (p->recompute != RC_FULL) return;
	int total = 0;
	for (int i = 0; i < p->nstage_layers; i++) total += p->stage_layers[i];
	int one[1] = {layers};
	const int *st = p->nstage_layers > 0 && total == layers ? p->stage_layers : one;
	const int ns = st == one ? 1 : p->nstage_layers;
	for (int i = 0, l0 = 0; i < ns; l0 += st[i++])
		for (int j = 0; j < st[i]; j++)
			if (p->recompute_layers < 0 || j < p->recompute_layers) out[l0 + j] = LLAMA_RC_FULL;
}

void pp_destroy(struct pp *p)
{
	if (!p) return;
	if (p->rq)
		for (int q = 0; q < p->s->pp; q++) {
			free(p->rq[q].req);
			free(p->rq[q].buf);
		}
	free(p->rq);
	if (p->sets)
		for (int i = 0; i < p->nsets; i++) llama_acts_destroy(p->sets[i]);
	free(p->sets);
	/* after a failed step, requests may still target the buffers: leave them to the exit */
	struct kern *k = p->models[0] ? p->models[0]->k : NULL;
	if (!p->broken && k)
		for (int i = 0; i < p->nbufs; i++) kern_free(k, p->bufs[i]);
	free(p->bufs);
	free(p->pool);
	free(p->sends);
	free(p->hold[0]);
	free(p->hold[1]);
	if (k) {
		kern_free(k, p->tied_buf);
		kern_free(k, p->xsend);
		kern_free(k, p->xrecv);
	}
	free(p->times);
	free(p->ops);
	free(p->layer0);
	if (p->own_models) {
		llama_destroy(p->models[0]);
		llama_destroy(p->models[1]);
	}
	sched_destroy(p->own_sched);
	free(p);
}

void pp_set_ready_hook(struct pp *p, pp_ready_fn fn, void *arg)
{
	p->ready = fn;
	p->ready_arg = arg;
}

int pp_act_sets(const struct pp *p) { return p->nsets; }
int pp_msg_buffers(const struct pp *p) { return p->nbufs; }
double pp_act_bytes(const struct pp *p)
{
	double b = (double)p->nbufs * (double)kern_act_size(p->models[0]->k, p->msg_floats);
	for (int i = 0; i < p->nsets; i++) b += (double)p->sets[i]->slab_bytes + 4.0 * (double)p->sets[i]->n_ints;
	return b;
}
int pp_copies(const struct pp *p) { return p->ncopies; }
const struct sched *pp_sched(const struct pp *p) { return p->s; }

int pp_holds(const struct pp *p, int copy, int spec)
{
	if (copy < 0 || copy >= p->ncopies || spec < 0 || spec >= p->models[copy]->n_specs) return 0;
	return p->hold[copy][spec] & HOLD;
}

const struct pp_op_time *pp_times(const struct pp *p, size_t *n)
{
	*n = p->nops;
	return p->times;
}


struct llama *pp_model(const struct pp *p, int copy)
{
	return copy >= 0 && copy < p->ncopies ? p->models[copy] : NULL;
}

int pp_copy_par(const struct sched *s, int rank, const int *stage_layers, int copy,
                struct llama_layer_range *ranges, int *n_ranges, int *has_embed, int *has_head)
{
	*n_ranges = *has_embed = *has_head = 0;
	for (int ch = 0; ch < s->chunks; ch++) {
		if (op_dir(s, ch) != copy) continue;
		int st = sched_stage(s, rank, ch, copy), l0 = 0;
		for (int i = 0; i < st; i++) l0 += stage_layers[i];
		if (stage_layers[st] > 0) ranges[(*n_ranges)++] = (struct llama_layer_range){l0, l0 + stage_layers[st]};
		if (st == 0) *has_embed = 1;
		if (st == s->nstages - 1) *has_head = 1;
	}
	return 0;
}

int pp_create_sharded(const struct ctx *x, const struct model *cfg, const struct llama_opts *lo,
                      const struct llama_par *base, struct pp **out, char *err)
{
	*out = NULL;
	const struct plan *pl = &x->plan;
	struct sched *s = plan_sched(pl, err);
	if (!s) return -1;
	struct llama *models[2] = {NULL, NULL};
	struct llama_layer_range *ranges = malloc(sizeof(*ranges) * ((size_t)s->chunks + 1));
	int rc = ranges ? 0 : errf(err, "pp: out of memory");
	int rank = comm_rank(ctx_comm(x, GROUP_PP));
	for (int d = 0; d < s->ndirs && !rc; d++) {
		struct llama_par par = *base;
		pp_copy_par(s, rank, pl->stage_layers, d, ranges, &par.n_ranges, &par.has_embed, &par.has_head);
		par.ranges = ranges;
		if (!par.n_ranges) /* a shard with no range would mean every layer */
			rc = errf(err, "pp: pipeline rank %d's stages hold no decoder layer (stage_layers); "
			          "the runtime needs at least one per rank", rank);
		if (!rc) rc = llama_create_par(&models[d], cfg, lo, &par, err);
	}
	free(ranges);
	unsigned char *rcm = malloc((size_t)cfg->layers + 1);
	if (!rc && !rcm) rc = errf(err, "pp: out of memory");
	if (!rc) pp_recompute_modes(pl, cfg->layers, rcm);
	struct pp_cfg c = {.sched = s, .comm = ctx_comm(x, GROUP_PP), .stage_layers = pl->stage_layers,
	                   .models = {models[0], models[1]}, .B = pl->mbs, .T = pl->seq, .recompute = rcm};
	if (!rc) rc = pp_create(&c, out, err);
	free(rcm);
	if (rc) {
		llama_destroy(models[0]);
		llama_destroy(models[1]);
		sched_destroy(s);
		return -1;
	}
	(*out)->own_sched = s;
	(*out)->own_models = 1;
	return 0;
}
