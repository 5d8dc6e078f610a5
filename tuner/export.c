/* export — a plan to another framework's settings: the table of formats and what they share.
 * Each format is its own file (tuner/export_impl.h); flag and key names are the frameworks'
 * own, checked by tests/test_export.c against the lists in tests/frameworks/ (read from
 * Megatron-LM arguments.py, torchtitan's job_config.py, nanotron's config classes and
 * DeepSpeed's config-json.md). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "tuner/export.h"
#include "tuner/export_impl.h"
#include "sim/util.h"

static const struct export_method *const methods[] = {
	[EXPORT_MEGATRON] = &export_megatron_method, [EXPORT_NANOTRON] = &export_nanotron_method,
	[EXPORT_TORCHTITAN] = &export_torchtitan_method, [EXPORT_DEEPSPEED] = &export_deepspeed_method};
#define NMETHODS (sizeof(methods) / sizeof(methods[0]))

int export_format_from_name(const char *name, enum export_format *fmt)
{
	for (size_t i = 0; i < NMETHODS; i++)
		if (!strcmp(name, methods[i]->name)) { *fmt = (enum export_format)i; return 0; }
	return -1;
}

const char *export_format_name(enum export_format fmt)
{
	return (size_t)fmt < NMETHODS ? methods[fmt]->name : "?";
}

void export_comment(struct out *o, const char *fmt, ...)
{
	va_list ap;
	fprintf(o->notes, "%s ", o->comment);
	va_start(ap, fmt);
	vfprintf(o->notes, fmt, ap);
	va_end(ap);
	fputc('\n', o->notes);
}

void export_noeq(struct out *o, const char *fmt, ...)
{
	va_list ap;
	fprintf(o->notes, "%s no equivalent: ", o->comment);
	va_start(ap, fmt);
	vfprintf(o->notes, fmt, ap);
	va_end(ap);
	fputc('\n', o->notes);
	o->nnotes++;
}

int export_uniform_split(const struct plan *p)
{
	for (int i = 1; i < p->nstage_layers; i++)
		if (p->stage_layers[i] != p->stage_layers[0]) return 0;
	return 1;
}

void export_split_text(const struct plan *p, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = 0;
	for (int i = 0; i < p->nstage_layers && n + 12 < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%d", i ? "," : "", p->stage_layers[i]);
}

int export_grad_applies(const struct plan *p) { return (long)p->dp * p->cp > 1; }
int export_gather_applies(const struct plan *p) { return p->zero >= 1 && (long)p->dp * p->cp > 1; }

int export_plan(const struct plan *p, const struct model *m, enum export_format fmt, FILE *f, char *err)
{
	if (p->dp < 1 || p->gbs < 1 || p->nstage_layers < 1)
		return errf(err, "export: the plan is not resolved (dp %d, gbs %d, %d stages)", p->dp, p->gbs, p->nstage_layers);
	if ((size_t)fmt >= NMETHODS) return errf(err, "export: unknown format %d", (int)fmt);
	const struct export_method *x = methods[fmt];
	struct out o = {f, f, x->comment, 0};
	if (p->compile && !x->compiles)
		export_noeq(&o, "torch.compile of the blocks; %s runs its own fused kernels", x->name);
	/* what the plan was priced with that the format runs otherwise: one line, worded from
	 * the side of the plan (priced) or of the format (runs) */
	int fused = x->fuses_block || (x->compiles && p->compile);
	const struct { int applies, priced, runs; const char *if_priced, *if_runs; } differ[] = {
		{1, p->eager_block, !fused, "the block's norms and rotary embedding priced as eager PyTorch ops; %s runs them fused",
		 "the block's norms and rotary embedding priced fused; %s runs them as eager PyTorch ops unless compiled"},
		{p->tp > 1 && p->sp, p->tp_seq_copies, x->seq_copies,
		 "SP collectives that copy each gathered tensor into place; %s gathers in place",
		 "SP collectives gathered in place; %s copies each gathered tensor into its batch-first layout"},
		{p->pp > 1 && p->tp > 1 && !p->sp, p->pp_scatter_gather, x->scatters,
		 "pipeline sends split over TP and gathered on receipt (scatter/gather); %s sends the whole tensor from every TP rank",
		 "pipeline sends of the whole tensor from every TP rank; %s splits them over TP and gathers them on receipt"},
		{p->ep > 1, p->moe_routing == ROUTE_CONSECUTIVE, 0, /* no format runs the fake gate */
		 "experts priced as NeMo AutoModel's fake balanced gate routes them (token i to experts i*k .. i*k+k-1); %s routes with the trained router",
		 NULL}};
	for (size_t i = 0; i < sizeof(differ) / sizeof(differ[0]); i++)
		if (differ[i].applies && !differ[i].priced != !differ[i].runs)
			export_noeq(&o, differ[i].priced ? differ[i].if_priced : differ[i].if_runs, x->name);
	if (x->write(&o, p, m, err)) return -1;
	return o.nnotes;
}
