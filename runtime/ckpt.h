/* ckpt — checkpoints that survive any failure during a save. A checkpoint directory DIR holds
 * one sub-directory per save, DIR/save-SSSSSS-step-NNNNNNNN (S: a serial number, one more
 * than any save directory already there; N: the steps done), with one file per rank,
 * rank-RRRRR.ckpt, and rank 0's commit marker COMMIT. A save (ckpt_save_all, collective):
 *
 *   1. rank 0 creates the save directory (and DIR) and fsyncs DIR; the serial is broadcast;
 *   2. every rank writes its file: temporary file -> fsync -> rename -> fsync of the directory
 *      (sim/outfile.h);
 *   3. the ranks agree that all of them succeeded (a barrier that carries the result);
 *   4. rank 0 writes COMMIT the same way and fsyncs DIR: the save now exists;
 *   5. only then does rank 0 delete the older saves (COMMIT first, so a half-deleted save is
 *      never taken for a whole one).
 *
 * A failure anywhere before 4 (a full disk, a rank killed) leaves the previous committed save
 * untouched; the failed save's directory is removed when the failure is seen, or by
 * ckpt_clean() at the next start. ckpt_load_all() (collective) reads the committed save with
 * the highest serial and refuses anything else, so a mix of files from two saves cannot load.
 *
 * One rank's file, little-endian as the machine writes it: "SPCKPT01", u32 version (2), u32
 * rank, u32 world, u32 plan_len, u32 settings_len, u32 reserved, u64 seed, i64 steps_done,
 * i64 adam_step, u64 next_sample, u64 n_params, u64 n_moments, plan_len bytes of plan JSON,
 * settings_len bytes of settings JSON (what else must match to continue bit for bit: the
 * learning rate, the data), n_params fp32, n_moments fp32 m, n_moments fp32 v, then the u64
 * FNV-1a of every byte before it. A load checks the size and the checksum first (a damaged
 * file is reported as damaged, whatever byte was hit), then the header against the job
 * (world, rank, plan, settings, seed, sizes), each refusal naming the file and what differs;
 * the trainer's state is written only after every check passed.
 *
 * Ownership: nothing is kept; strings in ckpt_meta are borrowed. Units: elements, steps. */
#ifndef SCALEPLAN_CKPT_H
#define SCALEPLAN_CKPT_H

#include <stddef.h>
#include <stdint.h>
#include "runtime/comm.h"
#include "runtime/train.h"

struct ckpt_meta {
	int rank, world;
	const char *plan_json;      /* the running plan; compared key by key on load */
	const char *settings_json;  /* {"lr": ..., "data": ...}; compared key by key on load */
	uint64_t seed;
	uint64_t next_sample;       /* steps_done · gbs */
};

/* Collective over `world` (every rank calls it): one save of the state at *s->steps_done.
 * Returns the same value on every rank: 0, or -1 with err on the rank whose failure is
 * reported (the lowest failing rank) and err empty on the others. */
int ckpt_save_all(struct comm *world, const char *dir, const struct ckpt_meta *meta,
		  const struct train_state *s, char *err);
/* Collective: loads this rank's file of the newest committed save in dir; the same return
 * value and err convention as ckpt_save_all. */
int ckpt_load_all(struct comm *world, const char *dir, const struct ckpt_meta *meta,
		  struct train_state *s, char *err);
/* One process (rank 0, before any save): removes the save directories of failed saves
 * (those without COMMIT) and stray temporary files in dir. A missing dir is fine. */
int ckpt_clean(const char *dir, char *err);

/* The newest committed save in dir: its directory (into buf) and step. 0, or -1 with err
 * ("no committed checkpoint in DIR"). */
int ckpt_newest(const char *dir, char *buf, size_t cap, long *step, char *err);

/* One rank's file (the layer under the collective calls). */
int ckpt_write_file(const char *path, const struct ckpt_meta *meta, const struct train_state *s, char *err);
int ckpt_read_file(const char *path, const struct ckpt_meta *meta, struct train_state *s, char *err);
/* SAVEDIR/rank-RRRRR.ckpt into buf. */
void ckpt_path(char *buf, size_t len, const char *savedir, int rank);

#endif
