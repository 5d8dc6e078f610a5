/* ckpt — one checkpoint file per rank, DIR/rank-NNNNN.ckpt, holding what a resumed run needs
 * to continue bit for bit: the parameters this rank keeps (all of them at ZeRO 0-2, its
 * shard at ZeRO-3), its AdamW moments, the AdamW step counter, the steps done (= the data
 * position: the next step reads global samples from steps·gbs), the RNG state (the seed;
 * weights and synthetic data are pure functions of it, so nothing else evolves), the plan
 * as JSON and the world size, closed by a checksum.
 *
 * File layout, little-endian as the machine writes it: "SPCKPT01", u32 version, u32 rank,
 * u32 world, u32 plan_len, u64 seed, i64 steps_done, i64 adam_step, u64 next_sample,
 * u64 n_params, u64 n_moments, plan_len bytes of plan JSON, n_params fp32, n_moments fp32 m,
 * n_moments fp32 v, u64 FNV-1a of every byte before it.
 *
 * Writes are atomic: a temporary file in DIR, flushed and fsync'd, renamed over the final
 * name; on any failure the temporary is removed and the previous checkpoint stays.
 * Loads refuse (with a message naming the file and the rule) a file whose plan, world size,
 * rank, seed or sizes differ from the running job's, or whose checksum does not match; the
 * trainer's state is only written after every check passed. Units: elements, steps. */
#ifndef SCALEPLAN_CKPT_H
#define SCALEPLAN_CKPT_H

#include <stdint.h>
#include "runtime/train.h"

struct ckpt_meta {
	int rank, world;
	const char *plan_json;    /* the running plan; compared byte for byte on load */
	uint64_t seed;
	uint64_t next_sample;     /* steps_done · gbs */
};

int ckpt_save(const char *dir, const struct ckpt_meta *meta, const struct train_state *s, char *err);
int ckpt_load(const char *dir, const struct ckpt_meta *meta, struct train_state *s, char *err);
/* DIR/rank-NNNNN.ckpt into buf (at least strlen(dir)+32 bytes). */
void ckpt_path(char *buf, size_t len, const char *dir, int rank);

#endif
