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
 * all ({key, values, source}: nanotron's ZeRO stages are 0 and 1); a key it does not list takes
 * any value.
 *
 * Ownership: struct framework is plain data, filled by framework_load; no allocation kept. */
#ifndef SCALEPLAN_FRAMEWORK_H
#define SCALEPLAN_FRAMEWORK_H

#include <stddef.h>
#include <stdint.h>

struct plan;

#define FW_MAX_ENTRIES 64

struct fw_entry {
	char key[32];
	char value[32];
	char cond_key[32];      /* "" = no condition */
	char cond_op[3];        /* "=", "!=", ">", ">=", "<", "<=" */
	char cond_value[32];
	int since, until;       /* years; 0 = unbounded */
	char source[200];
};

#define FW_MAX_OFFERS 8
#define FW_MAX_VALUES 8

struct fw_offer {
	char key[32];
	char values[FW_MAX_VALUES][32];
	int n;
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

/* 1 when the framework offers `value` for plan key `key` (or lists no values for the key), else 0 */
int framework_offers(const struct framework *fw, const char *key, const char *value);

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
