/* pp_exec — running the pipeline executor's op list (runtime/pp.h): message buffers and the
 * receive queues kept posted ahead per peer, each op with its receive before and send after,
 * then the end-of-step collectives over the pipeline group (DualPipe copies, tied embedding,
 * loss) in the same order on every rank, and AdamW over the held tensors. Creation: pp.c.
 * Message buffers and the exchange buffers are the models' backend's memory; every copy,
 * sum and update goes through it. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/backend.h"
#include "runtime/ctx.h"
#include "runtime/pp.h"
#include "runtime/pp_impl.h"
#include "runtime/zero.h"
#include "sim/util.h"

/* ---- message buffers and queues --------------------------------------------------------- */

/* A message is msg_floats activation elements (the residual stream or its gradient); on the
 * wire it travels as this many 4-byte words (COMM_F32 moves bits unchanged), so a bf16 row
 * sends half of the fp32 bytes. */
static size_t msg_words(const struct pp *p)
{
	return (kern_act_size(p->models[0]->k, p->msg_floats) + sizeof(float) - 1) / sizeof(float);
}

static float *buf_get(struct pp *p, char *err)
{
	if (p->npool) return p->pool[--p->npool];
	if (p->nbufs == p->cap_bufs) {
		int cap = p->cap_bufs ? 2 * p->cap_bufs : 8;
		float **b = realloc(p->bufs, sizeof(float *) * (size_t)cap);
		float **pl = b ? realloc(p->pool, sizeof(float *) * (size_t)cap) : NULL;
		if (b) p->bufs = b;
		if (!pl) { errf(err, "pp: out of memory for message buffers"); return NULL; }
		p->pool = pl;
		p->cap_bufs = cap;
	}
	float *f = kern_alloc(p->models[0]->k, sizeof(float) * msg_words(p));
	if (!f) { errf(err, "pp: out of memory for message buffers"); return NULL; }
	p->bufs[p->nbufs++] = f;
	return f;
}

static void buf_put(struct pp *p, float *f) { p->pool[p->npool++] = f; }

/* Posts the receives from `peer` up to position k (in the peer's send order). */
static int post_upto(struct pp *p, int peer, int k, char *err)
{
	struct pp_rq *q = &p->rq[peer];
	while (q->posted < q->n && q->posted <= k) {
		float *b = buf_get(p, err);
		if (!b) return -1;
		q->buf[q->posted] = b;
		if (comm_irecv(p->comm, b, msg_words(p), COMM_F32, peer, &q->req[q->posted], err)) {
			buf_put(p, b);
			return -1;
		}
		q->posted++;
	}
	return 0;
}

/* Waits for message k from `peer`; the caller returns the buffer with buf_put. */
static float *take_msg(struct pp *p, int peer, int k, char *err)
{
	struct pp_rq *q = &p->rq[peer];
	if (post_upto(p, peer, k, err)) return NULL;
	if (k >= q->posted || !q->buf[k]) {
		errf(err, "pp: message %d from rank %d was taken twice", k, peer);
		return NULL;
	}
	if (comm_wait(q->req[k], err)) { q->req[k] = NULL; return NULL; }
	q->req[k] = NULL;
	float *b = q->buf[k];
	q->buf[k] = NULL;
	q->taken++;
	if (post_upto(p, peer, q->taken + RECV_AHEAD - 1, err)) { buf_put(p, b); return NULL; }
	return b;
}

static int send_msg(struct pp *p, const float *src, int peer, char *err)
{
	if (p->nsends == p->cap_sends) {
		int cap = p->cap_sends ? 2 * p->cap_sends : 8;
		struct pp_send *n = realloc(p->sends, sizeof *n * (size_t)cap);
		if (!n) return errf(err, "pp: out of memory");
		p->sends = n;
		p->cap_sends = cap;
	}
	float *b = buf_get(p, err);
	if (!b) return -1;
	kern_copy_dev(p->models[0]->k, b, src, kern_act_size(p->models[0]->k, p->msg_floats));
	struct pp_send *sd = &p->sends[p->nsends];
	if (comm_isend(p->comm, b, msg_words(p), COMM_F32, peer, &sd->req, err)) { buf_put(p, b); return -1; }
	sd->buf = b;
	p->nsends++;
	return 0;
}

/* Completes sends (all of them with `all`, else those already done) and frees their buffers. */
static int reap_sends(struct pp *p, int all, char *err)
{
	for (int i = 0; i < p->nsends;) {
		int done = 1;
		if (!all && comm_test(p->sends[i].req, &done, err)) return -1;
		if (!done) { i++; continue; }
		if (comm_wait(p->sends[i].req, err)) return -1;
		buf_put(p, p->sends[i].buf);
		p->sends[i] = p->sends[--p->nsends];
	}
	return 0;
}

/* ---- gradient-ready hook -------------------------------------------------------------- */

static int fire(struct pp *p, int copy, enum pp_part part, int l0, int l1, size_t off, size_t count, char *err)
{
	if (!p->ready || !count) return 0;
	struct pp_ready r = {copy, part, l0, l1, off, count};
	return p->ready(p->ready_arg, &r, err) ? -1 : 0;
}

/* The ranges of chunk `ch`. A tied embedding is reported by finish_step instead, once its
 * uses on stage 0 and the last stage are summed. */
static int fire_chunk(struct pp *p, int ch, char *err)
{
	const struct sched *s = p->s;
	int dir = op_dir(s, ch), st = sched_stage(s, p->rank, ch, dir), l0 = p->layer0[st], l1 = p->layer0[st + 1];
	const struct llama *m = p->models[dir];
	int tied = m->cfg.tied, es, fs, hs;
	pp_head_specs(m, &es, &fs, &hs);
	if (l1 > l0) {
		size_t lo = SIZE_MAX, hi = 0;
		for (int i = 0; i < m->n_specs; i++) {
			const struct param_spec *sp = &m->specs[i];
			if (sp->layer < l0 || sp->layer >= l1) continue;
			if (sp->offset < lo) lo = sp->offset;
			if (sp->offset + sp->numel > hi) hi = sp->offset + sp->numel;
		}
		if (fire(p, dir, PP_PART_LAYERS, l0, l1, lo, hi - lo, err)) return -1;
	}
	if (st == 0 && !tied && fire(p, dir, PP_PART_EMBED, -1, -1, m->specs[es].offset, m->specs[es].numel, err))
		return -1;
	if (st == s->nstages - 1) {
		size_t n = m->specs[fs].numel + (hs >= 0 ? m->specs[hs].numel : 0);
		if (fire(p, dir, PP_PART_HEAD, -1, -1, m->final_norm, n, err)) return -1;
	}
	return 0;
}

/* ---- the step ------------------------------------------------------------------------- */

static int run_op(struct pp *p, size_t i, const int *tokens, const int *targets, char *err)
{
	const struct pp_op *o = &p->ops[i];
	struct llama *m = p->models[o->copy];
	struct llama_acts *a = p->sets[o->slot];
	const size_t NC = p->msg_floats;
	const size_t row = ((size_t)o->op.dir * (size_t)p->s->mb_per_dir + (size_t)o->op.mb) * (size_t)p->N;
	const float dloss = 1.0f / (float)p->m;
	struct pp_op_time *t = &p->times[i];
	double tw = now_s();
	float *in = NULL;
	if (o->recv_peer >= 0 && !(in = take_msg(p, o->recv_peer, o->recv_idx, err))) return -1;
	t->start_s = now_s() - p->t0;
	t->wait_s = t->start_s - (tw - p->t0);
	int rc = 0;
	if (o->op.kind == OP_F) {
		if (o->stage == 0) llama_embed_forward(m, a, tokens + row);
		else if (in) kern_copy_dev(m->k, kern_act_at(m->k, a->res, (size_t)o->l0 * NC), in, kern_act_size(m->k, NC));
		llama_layers_forward(m, a, o->l0, o->l1);
		p->loss_sum += llama_aux_loss(m, a, o->l0, o->l1);
		if (o->stage == p->s->nstages - 1) p->loss_sum += llama_head_forward(m, a, targets + row);
		if (o->send_peer >= 0) rc = send_msg(p, kern_act_at(m->k, a->res, (size_t)o->l1 * NC), o->send_peer, err);
	} else if (o->op.kind == OP_W) {
		for (int l = o->l1 - 1; l >= o->l0; l--) llama_layer_backward_w(m, a, l);
	} else {
		if (o->stage == p->s->nstages - 1) {
			llama_head_backward(m, a, dloss);
		} else {
			a->dloss = dloss; /* MoE aux-loss gradients read it */
			if (in) kern_copy_dev(m->k, a->dres, in, kern_act_size(m->k, NC));
		}
		for (int l = o->l1 - 1; l >= o->l0; l--) {
			llama_layer_backward_b(m, a, l);
			if (o->op.kind == OP_BW) llama_layer_backward_w(m, a, l);
		}
		if (o->stage == 0) llama_embed_backward(m, a);
		if (o->send_peer >= 0) rc = send_msg(p, a->dres, o->send_peer, err);
	}
	if (in) buf_put(p, in);
	if (!rc) rc = reap_sends(p, 0, err);
	t->end_s = now_s() - p->t0;
	t->kind = o->op.kind;
	t->mb = o->op.mb;
	t->chunk = o->op.chunk;
	t->dir = o->op.dir;
	t->stage = o->stage;
	if (!rc && o->chunk_done && p->s->ndirs == 1) rc = fire_chunk(p, o->op.chunk, err);
	return rc;
}

/* DualPipe: copy 0 here and copy 1 on the partner hold the same stage; add each other's. */
static int exchange_copies(struct pp *p, char *err)
{
	size_t at = 0;
	for (int c = 0; c < 2; c++)
		for (int i = 0; i < p->models[c]->n_specs; i++)
			if ((p->hold[c][i] & HOLD) && !(p->tied_sum && i == p->embed_spec[c])) {
				const struct param_spec *sp = &p->models[c]->specs[i];
				kern_copy_dev(p->models[c]->k, p->xsend + at, p->models[c]->grads + sp->offset,
				              sizeof(float) * sp->numel);
				at += sp->numel;
			}
	/* the partner sends its copy 0 (our copy 1's stage) first */
	if (comm_sendrecv(p->comm, p->xsend, at, p->partner, p->xrecv, at, p->partner, COMM_F32, err)) return -1;
	at = 0;
	for (int k = 0; k < 2; k++) {
		int c = 1 - k;
		for (int i = 0; i < p->models[c]->n_specs; i++)
			if ((p->hold[c][i] & HOLD) && !(p->tied_sum && i == p->embed_spec[c])) {
				const struct param_spec *sp = &p->models[c]->specs[i];
				struct kern *kn = p->models[c]->k;
				kn->ops->add(kn->state, p->models[c]->grads + sp->offset, p->xrecv + at, sp->numel);
				at += sp->numel;
			}
	}
	return 0;
}

/* A tied embedding is used by stage 0 and the last stage (of each direction): sum over all. */
static int sum_tied(struct pp *p, char *err)
{
	const struct llama *m = p->models[0];
	size_t n = (size_t)m->vocab_local * (size_t)m->cfg.hidden; /* this TP rank's vocabulary rows */
	kern_zero(m->k, p->tied_buf, sizeof(float) * n);
	for (int c = 0; c < p->ncopies; c++) {
		int e = p->embed_spec[c];
		if (e < 0 || !(p->hold[c][e] & HOLD)) continue;
		m->k->ops->add(m->k->state, p->tied_buf, p->models[c]->grads + p->models[c]->specs[e].offset, n);
	}
	if (comm_allreduce(p->comm, p->tied_buf, p->tied_buf, n, COMM_F32, err)) return -1;
	for (int c = 0; c < p->ncopies; c++) {
		int e = p->embed_spec[c];
		if (e >= 0 && (p->hold[c][e] & HOLD))
			kern_copy_dev(m->k, p->models[c]->grads + p->models[c]->specs[e].offset, p->tied_buf,
			              sizeof(float) * n);
	}
	return 0;
}

static int finish_step(struct pp *p, float *loss, char *err)
{
	for (int q = 0; q < p->s->pp; q++)
		if (p->rq[q].taken != p->rq[q].n)
			return errf(err, "pp: rank %d consumed %d of %d messages from rank %d",
			            p->rank, p->rq[q].taken, p->rq[q].n, q);
	if (reap_sends(p, 1, err)) return -1;
	if (p->s->ndirs == 2 && exchange_copies(p, err)) return -1;
	if (p->tied_sum && sum_tied(p, err)) return -1;
	for (int ch = 0; ch < p->s->chunks && p->s->ndirs == 2; ch++)
		if (fire_chunk(p, ch, err)) return -1;
	for (int c = 0; c < p->ncopies && p->models[0]->cfg.tied; c++) {
		int e = p->embed_spec[c];
		if (e < 0 || !(p->hold[c][e] & HOLD)) continue;
		const struct param_spec *es = &p->models[c]->specs[e];
		if (fire(p, c, PP_PART_EMBED, -1, -1, es->offset, es->numel, err)) return -1;
	}
	double sum = p->loss_sum;
	if (comm_allreduce(p->comm, &sum, &sum, 1, COMM_F64, err)) return -1;
	if (loss) *loss = (float)(sum / p->m);
	return 0;
}

int pp_step(struct pp *p, const int *tokens, const int *targets, float *loss, char *err)
{
	if (p->broken) return errf(err, "pp: an earlier step failed; the executor cannot run again");
	if (p->has_first && !tokens) return errf(err, "pp: rank %d holds stage 0 but got no tokens", p->rank);
	if (p->has_last && !targets) return errf(err, "pp: rank %d holds the last stage but got no targets", p->rank);
	p->t0 = now_s();
	p->loss_sum = 0.0;
	for (int c = 0; c < p->ncopies; c++) {
		struct llama *m = p->models[c];
		for (int i = 0; i < m->n_specs; i++)
			if (p->hold[c][i] & HOLD)
				kern_zero(m->k, m->grads + m->specs[i].offset, sizeof(float) * m->specs[i].numel);
	}
	int rc = 0;
	for (int q = 0; q < p->s->pp && !rc; q++) {
		p->rq[q].posted = p->rq[q].taken = 0;
		rc = post_upto(p, q, RECV_AHEAD - 1, err);
	}
	for (size_t i = 0; i < p->nops && !rc; i++) rc = run_op(p, i, tokens, targets, err);
	if (!rc) rc = finish_step(p, loss, err);
	if (rc) p->broken = 1;
	return rc;
}

int pp_adamw_step(struct pp *p, const struct adamw_opts *o, float *grad_norm, char *err)
{
	return pp_adamw_step_par(p, o, NULL, 0, grad_norm, err);
}

/* Whether copy-0 tensor i enters this rank's share of the global norm: counted on this
 * pipeline rank, and (shards) TP-replicated tensors on TP rank 0, all but routed experts on
 * EP rank 0 (llama_grad_sumsq's rule). */
static int counts(const struct pp *p, int c, int i)
{
	const struct llama *m = p->models[c];
	const struct param_spec *s = &m->specs[i];
	if (!(p->hold[c][i] & COUNT)) return 0;
	if (s->shard == SHARD_REPLICATED && m->tp_rank != 0) return 0;
	if (s->shard != SHARD_EXPERT && m->ep_rank != 0) return 0;
	return 1;
}

int pp_adamw_step_par(struct pp *p, const struct adamw_opts *o, struct comm *const *groups, int ngroups,
                      float *grad_norm, char *err)
{
	if (p->broken) return errf(err, "pp: an earlier step failed; the executor cannot run again");
	if (ngroups > 4) return errf(err, "pp: at most 4 extra groups for the gradient norm");
	double sumsq = 0.0;
	for (int c = 0; c < p->ncopies; c++) {
		const struct llama *m = p->models[c];
		for (int i = 0; i < m->n_specs; i++)
			if (counts(p, c, i)) {
				/* grad_sumsq's float per tensor, from its double sum */
				double acc = 0.0;
				m->k->ops->grad_sumsq_acc(m->k->state, &acc, m->grads + m->specs[i].offset, m->specs[i].numel);
				float part = 0.0f + (float)acc;
				sumsq += part;
			}
	}
	struct comm *all[8];
	int n = 0;
	all[n++] = p->comm;
	all[n++] = p->models[0]->tp;
	all[n++] = p->models[0]->ep;
	for (int i = 0; i < ngroups; i++) all[n++] = groups[i];
	double nrm;
	if (grad_norm_global(sumsq, all, n, &nrm, err)) return -1;
	sumsq = nrm * nrm;
	const float scale = grad_clip_factor((float)sumsq, o->max_grad_norm);
	for (int c = 0; c < p->ncopies; c++) {
		struct llama *m = p->models[c];
		m->step++;
		for (int i = 0; i < m->n_specs; i++) {
			const struct param_spec *s = &m->specs[i];
			if (!(p->hold[c][i] & HOLD)) continue;
			m->k->ops->adamw_step(m->k->state, m->params + s->offset, m->grads + s->offset, m->m + s->offset,
			                      m->v + s->offset, s->numel, o->lr, o->beta1, o->beta2, o->eps,
			                      s->decay ? o->weight_decay : 0.0f, m->step, scale);
		}
		llama_weights_refresh(m);
	}
	if (grad_norm) *grad_norm = sqrtf((float)sumsq);
	return 0;
}
