/* hw_share — the fixed point of processor sharing over an estimate (sim/hw_share.h). Compute
 * is moved through the efficiency fields the tables scale with (sim/hw_table.h): a kernel's
 * time is the table's times reference/eff, so eff/F makes it F times the table's. */
#include <math.h>
#include <string.h>
#include "sim/estimate.h"
#include "sim/hw.h"
#include "sim/hw_share.h"
#include "sim/plan.h"

/* the mean over ranks of the share of the step they keep a core busy: kernels, optimizer, and
 * communication (on a CPU a collective is the core copying and adding bytes); what is left is
 * waiting (bubbles, fixed overhead), when the core serves another rank */
static double compute_fraction(const struct estimate *e, int gpus)
{
	double busy = 0;
	for (int j = 0; j < e->nkinds; j++) {
		const struct rank_est *k = &e->kind[j];
		busy += k->ranks * (k->compute_s + k->optimizer_s + k->tp_comm_s + k->cp_comm_s + k->ep_comm_s +
				    k->pp_comm_s + k->dp_exposed_s);
	}
	return e->step_time_s > 0 && gpus > 0 ? busy / (gpus * e->step_time_s) : 1;
}

int hw_share_adjust(const struct model *m, const struct hw *h, const struct plan *p, struct estimate *e,
		    double *factor, char *err)
{
	if (factor) *factor = 1;
	const struct hw_tables *t = &h->tables;
	if (!(t->cores > 0 && t->ranks > t->cores)) return 0;
	double floor = (double)t->cores / t->ranks, F = 1;
	struct hw s = *h;
	s.tables.cores = 0; /* the re-estimates below do not share again */
	/* F -> max(C/R, f(F)) falls from 1 to the fixed point: f(F) shrinks with F, since the
	 * step keeps its communication as the kernels speed up */
	for (int it = 0; it < 20; it++) {
		double next = fmax(floor, fmin(1, compute_fraction(e, p->gpus)));
		if (fabs(next - F) < 1e-4) break;
		F = next;
		s.gemm_eff = h->gemm_eff / F;
		s.attn_eff = h->attn_eff / F;
		s.attn_eff_cudnn = h->attn_eff_cudnn / F;
		s.mem_eff = h->mem_eff / F;
		if (estimate_plan(m, &s, p, e, err)) return -1;
	}
	if (factor) *factor = F;
	return 0;
}
