/* search_fix — what a tune request pins (--fix k=v) and the names the search reports with:
 * parsing a pin through the one plan parser, checking the pins against the request before a
 * search (so an impossible pin is bad input naming its rule, not an empty result), and the
 * reason, order and objective names. Enumeration: search.c. */
#include <stdio.h>
#include <string.h>
#include "tuner/search.h"
#include "tuner/search_impl.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/schedule.h"
#include "sim/util.h"

static const char *const reason_names[REJ_COUNT] = {
	"tp larger than a node", "tp does not divide heads/kv heads/vocab/ffn",
	"2*cp does not divide seq", "tp does not divide seq/cp (SP)", "more stages than layers",
	"ep does not divide experts or dp*cp", "dp*mbs does not divide the global batch",
	"schedule micro-batch rules", "other plan rule", "does not fit in memory",
	"does not fit in memory (model states alone)",
	"does not fit in memory (smaller micro-batch already did not)",
	"dominated (less recompute already fits)",
	"dominated (the same plan with the overlap switch on is never slower)",
	"dominated (1F1B: the same time, no more memory)",
	"cannot rank (slower than less recompute, already below the K-th best and its shapes' best)",
	"rank-order twin (the same estimate as an order listed with it)"};
static const char *const objective_names[] = {"throughput", "cost", "time"};
static const char *const overlap_keys[OV_COUNT] = {"overlap_grad_reduce", "overlap_param_gather", "overlap_tp_comm",
						   "overlap_p2p", "overlap_tp_bwd"};

const char *search_reason_name(enum reject_reason r) { return r < REJ_COUNT ? reason_names[r] : "?"; }
const char *search_order_name(int order) { return order >= 0 && order < SEARCH_ORDERS ? search_order_names[order] : "?"; }
const char *objective_name(enum objective o) { return o <= OBJ_TIME ? objective_names[o] : "?"; }

void search_orders_text(int orders, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = 0;
	for (int o = 0; o < SEARCH_ORDERS && n < cap; o++)
		if (orders & (1 << o)) n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", search_order_names[o]);
}

int search_is_tie(const struct search_cand *best, const struct search_cand *k)
{
	return k->score >= best->score * (1 - SEARCH_TIE_REL);
}

void search_fix_init(struct search_fix *f)
{
	f->dp = f->tp = f->pp = f->cp = f->ep = f->vpp = f->zero = f->sp = -1;
	f->recompute = f->recompute_layers = f->mbs = f->schedule = f->order = -1;
	for (int i = 0; i < OV_COUNT; i++) f->overlap[i] = -1;
}

int search_fix_parse(struct search_req *rq, const char *kv, char *err)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv) return errf(err, "--fix: '%s' is not key=value", kv);
	char key[64];
	size_t n = (size_t)(eq - kv);
	if (n >= sizeof(key)) return errf(err, "--fix: key too long in '%s'", kv);
	memcpy(key, kv, n);
	key[n] = 0;
	for (char *c = key; *c; c++) if (*c == '-') *c = '_';
	/* parse through the one plan parser, then read the value back */
	struct plan probe = rq->base;
	if (plan_set(&probe, key, eq + 1, err)) return -1;
	struct search_fix *f = &rq->fix;
	struct { const char *k; int *dst; int val; } dims[] = {
		{"dp", &f->dp, probe.dp}, {"tp", &f->tp, probe.tp}, {"pp", &f->pp, probe.pp},
		{"cp", &f->cp, probe.cp}, {"ep", &f->ep, probe.ep}, {"vpp", &f->vpp, probe.vpp},
		{"zero", &f->zero, probe.zero}, {"sp", &f->sp, probe.sp},
		{"recompute", &f->recompute, (int)probe.recompute},
		{"recompute_layers", &f->recompute_layers, probe.recompute_layers},
		{"mbs", &f->mbs, probe.mbs}, {"schedule", &f->schedule, (int)probe.schedule},
		{"overlap_grad_reduce", &f->overlap[0], probe.overlap_grad_reduce},
		{"overlap_param_gather", &f->overlap[1], probe.overlap_param_gather},
		{"overlap_tp_comm", &f->overlap[2], probe.overlap_tp_comm},
		{"overlap_p2p", &f->overlap[3], probe.overlap_p2p},
		{"overlap_tp_bwd", &f->overlap[4], probe.overlap_tp_bwd}};
	for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++)
		if (!strcmp(key, dims[i].k)) { *dims[i].dst = dims[i].val; return 0; }
	if (!strcmp(key, "order")) {
		for (int o = 0; o < SEARCH_ORDERS; o++)
			if (!strcmp(probe.order, search_order_names[o])) { f->order = o; return 0; }
		return errf(err, "--fix order: the search knows %s, %s and %s", search_order_names[0], search_order_names[1], search_order_names[2]);
	}
	if (!strcmp(key, "stage_layers"))
		return errf(err, "--fix stage_layers: the tuner balances each finalist's split itself; pin pp and schedule instead");
	if (!strcmp(key, "gpus") || !strcmp(key, "gbs") || !strcmp(key, "seq") ||
	    !strcmp(key, "model") || !strcmp(key, "gpu"))
		return errf(err, "--fix %s: give it as its own option, not a fix", key);
	rq->base = probe; /* precision, fp32_grads, gpus_per_node, flash_attn, ... */
	return 0;
}

/* The rules of one pinned degree on its own. */
static int check_degree(const struct search_req *rq, const char *k, int v, int gpn, char *err)
{
	const struct model *m = rq->m;
	if (v < 0) return 0;
	if (rq->gpus % v) return errf(err, "--fix %s=%d: %s must divide the number of GPUs (%d)", k, v, k, rq->gpus);
	if (!strcmp(k, "tp")) {
		if (v > gpn) return errf(err, "--fix tp=%d: tp is larger than a node (%d GPUs per node)", v, gpn);
		struct { const char *what; int n; } shape[] = {{"num_attention_heads", m->heads}, {"vocab_size", m->vocab},
			{"intermediate_size", m->ffn_hidden}};
		for (size_t i = 0; i < sizeof(shape) / sizeof(shape[0]); i++)
			if (shape[i].n % v) return errf(err, "--fix tp=%d: tp does not divide %s (%d)", v, shape[i].what, shape[i].n);
		if (m->kv_heads % v && v % m->kv_heads)
			return errf(err, "--fix tp=%d: tp and num_key_value_heads (%d) do not divide one another", v, m->kv_heads);
	}
	if (!strcmp(k, "pp") && v > m->layers)
		return errf(err, "--fix pp=%d: more pipeline stages than layers (%d)", v, m->layers);
	if (!strcmp(k, "cp") && v > 1 && rq->seq % (2 * v))
		return errf(err, "--fix cp=%d: 2*cp (%d) does not divide seq (%d)", v, 2 * v, rq->seq);
	if (!strcmp(k, "ep") && v > 1 && !model_is_moe(m))
		return errf(err, "--fix ep=%d: %s has no experts", v, m->name);
	if (!strcmp(k, "ep") && v > 1 && m->moe_experts % v)
		return errf(err, "--fix ep=%d: ep does not divide the %d experts", v, m->moe_experts);
	if (!strcmp(k, "dp") && rq->gbs % v)
		return errf(err, "--fix dp=%d: dp does not divide the global batch (%d sequences)", v, rq->gbs);
	return 0;
}

int search_fix_check(const struct search_req *rq, char *err)
{
	const struct search_fix *f = &rq->fix;
	int gpn = rq->base.gpus_per_node > 0 ? rq->base.gpus_per_node : rq->h->gpus_per_node;
	struct { const char *k; int v; } deg[] = {{"dp", f->dp}, {"tp", f->tp}, {"pp", f->pp}, {"cp", f->cp}, {"ep", f->ep}};
	long prod = 1;
	/* every plan lays its ranks out node by node (plan_validate): a cluster that is not whole
	 * nodes admits none, whatever the degrees, so say so before searching (the rule counts
	 * would name a rule that is not the cause) */
	if (rq->gpus > gpn && rq->gpus % gpn)
		return errf(err, "--gpus %d: not a whole number of %s nodes (%d GPUs each, the NVLink domain); give a multiple of %d, "
			    "or --fix gpus_per_node=N for the GPUs a job uses in each", rq->gpus, rq->h->name, gpn, gpn);
	for (size_t i = 0; i < sizeof(deg) / sizeof(deg[0]); i++) {
		if (check_degree(rq, deg[i].k, deg[i].v, gpn, err)) return -1;
		if (deg[i].v > 0 && i < 4) prod *= deg[i].v;
	}
	if (rq->gpus % prod)
		return errf(err, "--fix: the pinned degrees multiply to %ld, which does not divide the %d GPUs", prod, rq->gpus);
	if (f->mbs > 0 && rq->gbs % f->mbs)
		return errf(err, "--fix mbs=%d: mbs does not divide the global batch (%d sequences)", f->mbs, rq->gbs);
	if (f->sp == 1 && f->tp == 1)
		return errf(err, "--fix sp=1: sequence parallelism needs tp > 1, and tp is pinned to 1");
	if (f->pp == 1 && f->schedule > SCHED_NONE)
		return errf(err, "--fix schedule=%s: a schedule needs pp > 1, and pp is pinned to 1", schedule_name((enum schedule)f->schedule));
	if (f->vpp > 1 && f->schedule >= 0 && !(sched_family((enum schedule)f->schedule)->flags & SCHED_F_VIRTUAL))
		return errf(err, "--fix vpp=%d: model chunks per rank need schedule=interleaved", f->vpp);
	if (f->recompute_layers >= 0 && f->recompute >= 0 && f->recompute != RC_FULL)
		return errf(err, "--fix recompute_layers=%d: needs recompute=full", f->recompute_layers);
	if (f->recompute == RC_OP && !(rq->has_fw && framework_selective_is_op(&rq->fw, NULL)))
		return errf(err, "--fix recompute=op: the search's recompute modes are none, selective and full "
			    "(per-op checkpointing in place of selective with a --framework that has it, torchtitan)");
	if (f->order == 1 && f->pp == 1)
		return errf(err, "--fix order=%s: needs pp > 1, and pp is pinned to 1", search_order_names[1]);
	if (f->order == 2 && f->cp == 1)
		return errf(err, "--fix order=%s: needs cp > 1, and cp is pinned to 1", search_order_names[2]);
	int no_p2p = f->schedule >= 0 && !(sched_family((enum schedule)f->schedule)->flags & SCHED_F_BLOCKING_P2P);
	for (int i = 0; i < OV_COUNT; i++)
		if (f->overlap[i] == 1 && ((i == 3 && no_p2p) ||
					   ((i == 2 || i == 4) && f->tp == 1) || (i == 1 && f->zero == 0)))
			return errf(err, "--fix %s=1: applies only to %s", overlap_keys[i],
				    i == 3 ? "the AFAB, 1F1B and interleaved schedules" : i == 2 || i == 4 ? "tp > 1" : "ZeRO 1-3");
	return 0;
}

void search_no_valid_plan(const struct search_req *rq, const struct search_result *res, char *err)
{
	int worst = -1;
	for (int i = 0; i < REJ_MEMORY; i++)
		if (res->rejected[i] && (worst < 0 || res->rejected[i] > res->rejected[worst])) worst = i;
	if (worst < 0) {
		errf(err, "no plan of %d GPUs matches the pins (--fix)", rq->gpus);
		return;
	}
	errf(err, "no valid plan: %ld of the %ld plans enumerated break the rule '%s'%s", res->rejected[worst],
	     res->enumerated, reason_names[worst], rq->fix.mbs > 0 || rq->fix.dp > 0 ? " (check the pinned dp and mbs)" : "");
}
