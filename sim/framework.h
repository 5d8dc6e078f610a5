/* framework — a training framework's documented defaults and behaviour, read from
 * profiles/frameworks/NAME.json: which plan keys it sets when a launch does not (ZeRO stage,
 * overlap switches, gradient dtype, allocator mode, FP8 library, ...), each with the source that
 * documents it (a config file, an argument parser, a doc page). Nothing in a framework profile
 * is a fitted number: every value is a plan key's value.
 *
 * A profile is a list of entries {key, value, source, [if], [since], [until]}; for each key the
 * first entry whose condition holds applies. `if` compares a plan key with a value
 * ("pp>1", "precision=bf16", "tp>=2"); since/until bound the year of the run (a framework's
 * defaults change over time; a plan with no year takes entries without an `until`).
 *
 * A profile may also list, under "offers", the values a plan key can take in that framework at
 * all ({key, values, source, [if]}: nanotron's ZeRO stages are 0 and 1; DeepSpeed's are 0 and 1
 * under a pipeline); for each key the first entry whose condition holds applies, and a key
 * without one takes any value.
 *
 * Ownership: struct framework is plain data, filled by framework_load; no allocation kept. */
#ifndef SCALEPLAN_FRAMEWORK_H
#define SCALEPLAN_FRAMEWORK_H

#include <stddef.h>
#include <stdint.h>

struct plan;

#define FW_MAX_ENTRIES 64

/* `if`: a plan key compared with a value */
struct fw_cond {
	char key[32];           /* "" = no condition */
	char op[3];             /* "=", "!=", ">", ">=", "<", "<=" */
	char value[32];
};

struct fw_entry {
	char key[32];
	char value[32];
	struct fw_cond cond;
	int since, until;       /* years; 0 = unbounded */
	char source[200];
};

#define FW_MAX_OFFERS 8
#define FW_MAX_VALUES 8

struct fw_offer {
	char key[32];
	char values[FW_MAX_VALUES][32];
	int n;
	struct fw_cond cond;    /* the plans it speaks of (DeepSpeed's stages with a pipeline) */
	char source[200];
};

struct framework {
	char name[32];
	char describes[200];
	int n;
	struct fw_entry e[FW_MAX_ENTRIES];
	int noffers;
	struct fw_offer offers[FW_MAX_OFFERS];
};

/* A built-in name ("megatron-core") or a path to a JSON file of the same format. Unknown keys,
 * values the plan parser refuses, and entries without a source are errors. */
int framework_load(const char *name_or_path, struct framework *fw, char *err);
int framework_from_json(const char *text, const char *name, struct framework *fw, char *err);

/* The entry of the framework's offers for plan key `key` that applies to plan p (the first
 * whose condition holds; p NULL: only one without a condition), or NULL: any value. */
const struct fw_offer *framework_offer(const struct framework *fw, const char *key, const struct plan *p);

/* 1 when the framework offers `value` for plan key `key` in plan p (or no entry for the key
 * holds for p), else 0. p NULL: only entries without a condition count. */
int framework_offers(const struct framework *fw, const char *key, const char *value, const struct plan *p);

/* 1 when the framework's partial recomputation is per-op checkpointing rather than Megatron's
 * core-attention recompute: its recompute offers for plan p (NULL: unconditional ones) list "op"
 * and not "selective" (torchtitan). A row's "selective", and the search's partial mode, mean op
 * there. */
int framework_selective_is_op(const struct framework *fw, const struct plan *p);
/* The selective recompute that frees memory cheaply where the model has it (plan
 * recompute_modules): MLA's up-projections, the experts' activation, and the norms of MLA and
 * MoE blocks, those the framework offers (fw NULL: all); the core attention only where attention
 * is unfused, since with flash attention its recompute frees nothing (Megatron-Bridge,
 * "Activation Recompute": with fused or flash attention compare core_attn against no module;
 * MLA starts with mla_up_proj, grouped MoE with moe_act, then layernorm); the core attention
 * when none applies */
struct model;
int framework_cheap_modules(const struct framework *fw, const struct model *m, int flash_attn);

/* 1 when some offer of the framework has a condition (the search then asks per plan) */
int framework_offers_conditional(const struct framework *fw);

/* Names of the built-in framework profiles, NULL-terminated, static storage. */
const char *const *framework_builtin_names(void);

/* Sets every key the plan does not state (plan_key_stated) from the first matching entry, in
 * file order (a condition sees the values set before it). year: the run's year, 0 = now.
 * Appends "key value (NAME)" for each key it sets to `applied` (n bytes, may be NULL) and
 * their bits (plan_key_index) to *mask (may be NULL). The keys it sets stay unstated.
 * Returns the number of keys set, or -1 with err. */
int framework_apply(const struct framework *fw, struct plan *p, int year, char *applied, size_t n,
		    uint64_t *mask, char *err);

#endif
