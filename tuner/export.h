/* export — a plan written as another framework's launch settings: Megatron-LM
 * pretrain_gpt.py flags, a nanotron YAML fragment, a torchtitan v0.2.x TOML fragment (plus the
 * equivalent --section.key overrides for torchtitan main), or a DeepSpeed config. Flag and key
 * names are the frameworks' own (tests/frameworks/ lists them from each framework's source and
 * tests/test_export.c checks every name written). Overlap switches are written exactly as the
 * estimate priced them, the layer split as the framework rebuilds it, and the flags a feature
 * needs travel with it (Megatron-FSDP's checkpoint format, the rank-order mapping).
 *
 * Ownership: nothing is allocated; output goes to the caller's FILE.
 *
 * Invariant: every plan feature the framework cannot express is named on a comment line of
 * the output ("# no equivalent: ..."; "//" in the DeepSpeed config, which DeepSpeed reads
 * with hjson), never silently dropped; the return value counts those lines. */
#ifndef SCALEPLAN_EXPORT_H
#define SCALEPLAN_EXPORT_H

#include <stdio.h>

struct plan;
struct model;

enum export_format { EXPORT_MEGATRON, EXPORT_NANOTRON, EXPORT_TORCHTITAN, EXPORT_DEEPSPEED };

int export_format_from_name(const char *name, enum export_format *fmt);
const char *export_format_name(enum export_format fmt);

/* p must be resolved and valid (plan_resolve + plan_validate). m may be NULL: the model's
 * architecture flags/keys are then left out. Returns the number of "no equivalent" notes
 * written, or -1 with err. */
int export_plan(const struct plan *p, const struct model *m, enum export_format fmt, FILE *f,
		char *err);

#endif
