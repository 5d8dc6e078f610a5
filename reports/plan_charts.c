/* plan_charts — from a simulated plan to the arguments of the chart writers. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "reports/plan_charts.h"
#include "sim/util.h"

_Static_assert(PLOT_CMP_PARTS == EVP_COUNT, "comparison parts are the event step parts");

void plan_short(const struct plan *p, char *buf, size_t cap)
{
	char extra[96] = "";
	size_t n = 0;
	if (p->ep > 1) n += (size_t)snprintf(extra + n, sizeof(extra) - n, " ep%d", p->ep);
	if (sched_family(p->schedule)->flags & SCHED_F_VIRTUAL) n += (size_t)snprintf(extra + n, sizeof(extra) - n, " v%d", p->vpp);
	if (p->order[0] && strcmp(p->order, "tp-cp-dp-pp")) snprintf(extra + n, sizeof(extra) - n, " %s", p->order);
	snprintf(buf, cap, "dp%d tp%d pp%d cp%d%s zero%d %s mbs%d rc %s", p->dp, p->tp, p->pp, p->cp, extra, p->zero,
		 p->pp > 1 ? schedule_name(p->schedule) : "no-pp", p->mbs, recompute_name(p->recompute));
}

int chart_bubble(const struct plan *p, const struct event_sim *s, const char *path, int max_rows, char *err)
{
	char desc[128], title[1024];
	plan_short(p, desc, sizeof(desc));
	snprintf(title, sizeof(title), "%s on %d x %s: %s, m=%d\nevent engine: step %.3f s, bubble fraction %.3f (bubble/ideal), rate %.3f (bubble/span)",
		 p->model, p->gpus, p->gpu, desc, s->sched->m, s->step_s, s->bubble_fraction, s->bubble_rate);
	struct plot_bubble_opts o = {.title = title, .time_unit = "s", .max_rows = max_rows};
	return plot_bubble(&s->r.tl, path, &o, err);
}

int chart_memory(const struct plan *p, const struct estimate *e, const struct event_sim *s, int panels,
		 const char *path, char *err)
{
	struct plot_mem_bar bars[EST_MAX_KINDS];
	double static_bytes[PLAN_MAX_STAGES];
	int pp = s->sched->pp;
	if (pp > PLAN_MAX_STAGES) return errf(err, "plot: more than %d pipeline ranks", PLAN_MAX_STAGES);
	/* the breakdown is the estimate's (the figures sim and tune print); the time panel is the
	 * event engine's walk through the schedule */
	for (int j = 0; j < e->nkinds; j++) {
		const struct rank_est *k = &e->kind[j];
		struct plot_mem_bar *b = &bars[j];
		snprintf(b->label, sizeof(b->label), "%s", k->label);
		b->bytes[PM_WEIGHTS] = k->weights_bytes;
		b->bytes[PM_GRADS] = k->grads_bytes;
		b->bytes[PM_OPTIM] = k->optim_bytes;
		b->bytes[PM_ACT] = k->act_bytes;
		b->bytes[PM_BUFFERS] = k->buffers_bytes + k->recv_bytes + k->logits_bytes;
		b->bytes[PM_OVERHEAD] = k->overhead_bytes; /* fixed + fragmentation on dynamic memory */
	}
	for (int r = 0; r < pp; r++) static_bytes[r] = s->rank[r].static_bytes;
	char desc[128], title[1024];
	plan_short(p, desc, sizeof(desc));
	snprintf(title, sizeof(title), "%s on %d x %s: %s  peak %.1f GiB of %.1f GiB (%s; analytical estimate)", p->model,
		 p->gpus, p->gpu, desc, e->peak_mem_bytes / GIB, e->capacity_bytes / GIB,
		 e->fits ? "fits" : "does not fit");
	struct plot_memory_in in = {.title = title, .bars = bars, .nbars = e->nkinds, .capacity_bytes = e->capacity_bytes,
				    .tl = &s->r.tl, .static_bytes = static_bytes, .act_scale = s->act_scale, .panels = panels};
	return plot_memory(&in, path, err);
}

void chart_cmp_entry(const char *label, const struct event_sim *s, struct plot_cmp_plan *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->label, sizeof(out->label), "%s", label);
	for (int k = 0; k < PLOT_CMP_PARTS; k++) out->part_s[k] = s->part_s[k];
	out->peak_bytes = s->peak_mem_bytes;
	out->capacity_bytes = s->capacity_bytes;
}

void chart_cmp_entry_est(const char *label, const struct estimate *e, struct plot_cmp_plan *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->label, sizeof(out->label), "%s", label);
	/* the busiest rank kind waits least, so its parts are the step's critical path */
	int j = 0;
	for (int i = 1; i < e->nkinds; i++)
		if (e->kind[i].bubble_s < e->kind[j].bubble_s) j = i;
	const struct rank_est *k = &e->kind[j];
	double *p = out->part_s;
	p[EVP_COMPUTE] = k->compute_s - k->recompute_s;
	p[EVP_RECOMPUTE] = k->recompute_s;
	p[EVP_TP] = k->tp_comm_s;
	p[EVP_CP] = k->cp_comm_s;
	p[EVP_EP] = k->ep_comm_s;
	p[EVP_PP] = k->pp_comm_s;
	p[EVP_BUBBLE] = k->bubble_s;
	p[EVP_OPT] = k->optimizer_s;
	p[EVP_OVERHEAD] = k->overhead_s;
	double rest = e->step_time_s;
	for (int i = 0; i < EVP_COUNT; i++) rest -= p[i];
	p[EVP_DP] = fmax(0, rest); /* the DP tail left exposed after the pipeline */
	if (rest < 0) p[EVP_BUBBLE] = fmax(0, p[EVP_BUBBLE] + rest);
	out->peak_bytes = e->peak_mem_bytes;
	out->capacity_bytes = e->capacity_bytes;
}

int chart_compare(const struct plot_cmp_plan *plans, int n, const char *title, const char *path, char *err)
{
	const char *names[PLOT_CMP_PARTS];
	for (int k = 0; k < PLOT_CMP_PARTS; k++) names[k] = ev_part_name(k);
	return plot_compare(plans, n, names, title, path, err);
}
