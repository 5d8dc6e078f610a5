/* export_impl — what the export formats share (tuner/export.c) and the table of formats, one
 * file each: export_megatron.c, export_nanotron.c, export_torchtitan.c, export_deepspeed.c.
 * Adding a format is a file and a row in export.c's table. Other modules use tuner/export.h. */
#ifndef SCALEPLAN_EXPORT_IMPL_H
#define SCALEPLAN_EXPORT_IMPL_H

#include <stddef.h>
#include <stdio.h>
#include "sim/plan.h"
#include "sim/schedule.h"

struct model;

struct out {
	FILE *f;             /* flags / keys (Megatron: a buffer printed after the comments) */
	FILE *notes;         /* comment lines */
	const char *comment; /* "#" or "//" */
	int nnotes;
};

struct export_method {
	const char *name;
	const char *comment;  /* the format's comment marker */
	/* writes p (resolved, valid; m may be NULL); 0, or -1 with err */
	int (*write)(struct out *o, const struct plan *p, const struct model *m, char *err);
	int compiles;         /* writes the plan's torch.compile switch (else a compiled plan is a
	                       * "no equivalent" line) */
	int fuses_block;      /* runs a block's norms and rotary embedding as fused kernels (0:
	                       * as eager PyTorch ops unless compiled, when `compiles` says the
	                       * format writes the switch); a plan priced otherwise (plan key
	                       * eager_block) gets a "no equivalent" line */
	int seq_copies;       /* its SP collectives copy the gathered tensor into place (a
	                       * batch-first layout through functional collectives: plan key
	                       * tp_seq_copies; a plan priced otherwise gets a "no equivalent" line) */
	int scatters;         /* its pipeline splits a stage's output over TP to send it and
	                       * all-gathers it on receipt when SP does not already split it (plan
	                       * key pp_scatter_gather; a plan priced otherwise gets a "no
	                       * equivalent" line) */
};
extern const struct export_method export_megatron_method, export_nanotron_method,
	export_torchtitan_method, export_deepspeed_method;

/* a comment line; a "no equivalent: ..." line, counted */
void export_comment(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void export_noeq(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* do all pipeline stages hold the same number of layers? */
int export_uniform_split(const struct plan *p);
/* "20,19,21,20" */
void export_split_text(const struct plan *p, char *buf, size_t cap);
/* Overlap switches that apply to the plan (the search's rule, tuner/search.h): gradient
 * reduction with dp·cp > 1, parameter gathers with ZeRO >= 1 as well, TP collectives with
 * tp > 1, pipeline sends with the interleaved schedule. */
int export_grad_applies(const struct plan *p);
int export_gather_applies(const struct plan *p);

#endif
