/* search_cand — the two conversions between the search's compact candidate and the rest of
 * the program: candidate -> struct plan (resolved and validated), and an estimate of that plan
 * -> the candidate's figures. Below search.c (enumeration), search_split.c (partitioning) and
 * the reports, which all convert through these. */
#include <string.h>
#include "tuner/search_impl.h"
#include "sim/estimate.h"

const char *const search_order_names[SEARCH_ORDERS] = {"tp-cp-dp-pp", "tp-cp-pp-dp", "tp-dp-cp-pp"};

/* The keys a candidate chooses (or the request pins): a framework's defaults never override
 * them; everything else it documents, it sets. The mask is built on the first call (the key
 * table is static) and read by every candidate after it */
static uint64_t chosen_keys(void)
{
	static const char *const keys[] = {"gpus", "dp", "tp", "pp", "cp", "ep", "etp", "vpp", "zero", "sp",
		"recompute", "recompute_layers", "mbs", "gbs", "seq", "schedule", "order", "overlap_grad_reduce",
		"overlap_param_gather", "overlap_tp_comm", "overlap_p2p", "overlap_tp_bwd", "stage_layers"};
	static uint64_t mask;
	if (!mask)
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			int b = plan_key_index(keys[i]);
			if (b >= 0) mask |= (uint64_t)1 << b;
		}
	return mask;
}

int search_selective_modules(const struct search_req *rq)
{
	if (plan_key_stated(&rq->base, "recompute_modules")) return rq->base.recompute_modules;
	return framework_cheap_modules(rq->has_fw ? &rq->fw : NULL, rq->m, rq->base.flash_attn);
}

int search_cand_plan(const struct search_req *rq, const struct search_cand *k, struct plan *p, char *err)
{
	*p = rq->base;
	p->gpus = k->gpus;
	p->dp = k->dp; p->tp = k->tp; p->pp = k->pp; p->cp = k->cp; p->ep = k->ep;
	p->etp = k->etp > 0 ? k->etp : k->tp;
	p->vpp = k->vpp; p->zero = k->zero; p->sp = k->sp;
	p->recompute = (enum recompute)k->recompute;
	p->recompute_layers = k->recompute_layers;
	if (p->recompute == RC_SELECTIVE) p->recompute_modules = search_selective_modules(rq);
	p->mbs = k->mbs; p->gbs = rq->gbs; p->seq = rq->seq;
	p->schedule = (enum schedule)k->schedule;
	strcpy(p->order, search_order_names[k->order]);
	p->overlap_grad_reduce = !!(k->overlap & OV_GRAD);
	p->overlap_param_gather = !!(k->overlap & OV_PARAM);
	p->overlap_tp_comm = !!(k->overlap & OV_TP);
	p->overlap_p2p = !!(k->overlap & OV_P2P);
	p->overlap_tp_bwd = !!(k->overlap & OV_TPBWD);
	p->nstage_layers = 0;
	if (k->stage_layers && k->nstage_layers > 0 && k->nstage_layers <= PLAN_MAX_STAGES) {
		memcpy(p->stage_layers, k->stage_layers, sizeof(int) * (size_t)k->nstage_layers);
		p->nstage_layers = k->nstage_layers;
	}
	if (rq->has_fw) {
		p->stated |= chosen_keys();
		if (framework_apply(&rq->fw, p, 0, NULL, 0, NULL, err) < 0) return -1;
	}
	return plan_prepare(p, rq->m, rq->h, err);
}

void search_cand_priced(const struct search_req *rq, struct search_cand *k, const struct estimate *e)
{
	k->step_s = k->analytic_step_s = e->step_time_s;
	k->tokens_per_s = e->tokens_per_s;
	k->tokens_per_s_per_gpu = e->tokens_per_s_per_gpu;
	k->mfu = e->mfu;
	k->peak_bytes = e->peak_mem_bytes;
	k->capacity_bytes = e->capacity_bytes;
	k->bubble_fraction = e->bubble_fraction;
	k->exposed_comm_s = e->exposed_comm_s;
	k->fits = e->fits;
	k->score = search_score(rq, k);
}
