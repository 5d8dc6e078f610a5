/* ckpt_dir — save directories, the commit marker and the collective save/load protocol
 * (ckpt.h). Only rank 0 creates, commits and deletes save directories; every rank writes and
 * reads its own file. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "runtime/ckpt.h"
#include "sim/outfile.h"
#include "sim/util.h"

#define COMMIT "COMMIT"

struct save {
	long serial, step;
	int committed;
};

/* "DIR/save-SSSSSS-step-NNNNNNNN" as a malloc'd string */
static char *save_dir(const char *dir, long serial, long step)
{
	size_t n = strlen(dir) + 48;
	char *p = malloc(n);
	if (p) snprintf(p, n, "%s/save-%06ld-step-%08ld", dir, serial, step);
	return p;
}

/* serial and step from a directory entry's name; 0 when it is not a save directory */
static int parse_name(const char *name, struct save *sv)
{
	int used = 0;
	if (sscanf(name, "save-%ld-step-%ld%n", &sv->serial, &sv->step, &used) != 2 || name[used] || sv->serial < 1 ||
	    sv->step < 0)
		return 0;
	return 1;
}

/* 1 when COMMIT of a save directory exists and agrees with its name (it is written whole,
 * or not at all), 0 when not, -1 when out of memory */
static int read_commit(const char *savedir, const struct save *sv, int *world)
{
	char err[ERR_LEN], *path = malloc(strlen(savedir) + sizeof(COMMIT) + 1);
	if (!path) return -1;
	sprintf(path, "%s/%s", savedir, COMMIT);
	char *text = read_file(path, 4096, err);
	free(path);
	long serial = -1, step = -1;
	int ok = text && sscanf(text, "scaleplan checkpoint commit\nserial %ld\nstep %ld\nworld %d\n", &serial, &step,
				world) == 3 && serial == sv->serial && step == sv->step;
	free(text);
	return ok;
}

/* Every save directory in dir (at most cap); -1 with err when dir cannot be read. */
static int list_saves(const char *dir, struct save *out, int cap, int *n, char *err)
{
	DIR *d = opendir(dir);
	*n = 0;
	if (!d) return errf(err, "checkpoint: cannot read %s: %s", dir, strerror(errno));
	int oom = 0;
	for (struct dirent *e; !oom && (e = readdir(d)) && *n < cap;) {
		struct save sv;
		if (!parse_name(e->d_name, &sv)) continue;
		char *sd = save_dir(dir, sv.serial, sv.step);
		int world;
		sv.committed = sd ? read_commit(sd, &sv, &world) : -1;
		free(sd);
		oom = sv.committed < 0;  /* never guess: an unknown state could delete a save */
		if (!oom) out[(*n)++] = sv;
	}
	closedir(d);
	return oom ? errf(err, "checkpoint: out of memory reading %s", dir) : 0;
}

#define MAX_SAVES 4096

int ckpt_newest(const char *dir, char *buf, size_t cap, long *step, char *err)
{
	struct save *sv = malloc(MAX_SAVES * sizeof(*sv)), *best = NULL;
	int n;
	if (!sv) return errf(err, "checkpoint: out of memory");
	if (list_saves(dir, sv, MAX_SAVES, &n, err)) {
		free(sv);
		return -1;
	}
	for (int i = 0; i < n; i++)
		if (sv[i].committed && (!best || sv[i].serial > best->serial)) best = &sv[i];
	int rc = 0;
	if (!best) {
		char *old_layout = malloc(strlen(dir) + 32);
		int old = old_layout && (sprintf(old_layout, "%s/rank-00000.ckpt", dir), !access(old_layout, F_OK));
		free(old_layout);
		rc = errf(err, "checkpoint: no committed checkpoint in %s%s", dir,
			  old ? " (its rank-NNNNN.ckpt files are of an earlier scaleplan, not read)" : "");
	} else {
		snprintf(buf, cap, "%s/save-%06ld-step-%08ld", dir, best->serial, best->step);
		*step = best->step;
	}
	free(sv);
	return rc;
}

/* Deletes a save directory: COMMIT first (and made durable), so a crash half-way leaves an
 * uncommitted directory that the next ckpt_clean removes, never a damaged committed save. */
static int remove_save(const char *dir, const char *savedir)
{
	size_t n = strlen(savedir) + 300;
	char *path = malloc(n);
	DIR *d = path ? opendir(savedir) : NULL;
	if (!d) {
		free(path);
		return -1;
	}
	snprintf(path, n, "%s/%s", savedir, COMMIT);
	int bad = unlink(path) && errno != ENOENT;
	bad |= fsync_dir(savedir);
	for (struct dirent *e; (e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
		snprintf(path, n, "%s/%s", savedir, e->d_name);
		bad |= unlink(path) != 0;
	}
	closedir(d);
	free(path);
	bad |= rmdir(savedir) != 0;
	bad |= fsync_dir(dir) != 0;
	return bad ? -1 : 0;
}

/* Removes every save directory but `keep` (serial; 0 keeps none) that is uncommitted, or
 * older than keep when prune_committed. */
static int remove_saves(const char *dir, long keep, int prune_committed, char *err)
{
	struct save *sv = malloc(MAX_SAVES * sizeof(*sv));
	int n, bad = 0;
	if (!sv) return errf(err, "checkpoint: out of memory");
	if (list_saves(dir, sv, MAX_SAVES, &n, err)) {
		free(sv);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (sv[i].serial == keep || (sv[i].committed && !(prune_committed && sv[i].serial < keep))) continue;
		char *sd = save_dir(dir, sv[i].serial, sv[i].step);
		if (!sd || remove_save(dir, sd)) bad = 1;
		free(sd);
	}
	free(sv);
	return bad ? errf(err, "checkpoint: could not remove old saves in %s", dir) : 0;
}

int ckpt_clean(const char *dir, char *err)
{
	struct stat st;
	if (stat(dir, &st) && errno == ENOENT) return 0;
	return remove_saves(dir, 0, 0, err);
}

/* Rank 0, step 1: DIR, the new save directory, both durable. The new serial, or -1. */
static long prepare(const char *dir, long step, char *err)
{
	if (mkdir(dir, 0777) && errno != EEXIST)
		return errf(err, "checkpoint: cannot create directory %s: %s", dir, strerror(errno));
	struct save *sv = malloc(MAX_SAVES * sizeof(*sv));
	int n;
	if (!sv) return errf(err, "checkpoint: out of memory");
	if (list_saves(dir, sv, MAX_SAVES, &n, err)) {
		free(sv);
		return -1;
	}
	long serial = 1;
	for (int i = 0; i < n; i++)
		if (sv[i].serial >= serial) serial = sv[i].serial + 1;
	free(sv);
	char *sd = save_dir(dir, serial, step);
	long rc = serial;
	if (!sd) rc = errf(err, "checkpoint: out of memory");
	else if (mkdir(sd, 0777)) rc = errf(err, "checkpoint: cannot create directory %s: %s", sd, strerror(errno));
	else if (fsync_dir(dir)) rc = errf(err, "checkpoint: %s: %s", dir, strerror(errno));
	free(sd);
	return rc;
}

/* Rank 0, step 4: the commit marker, durable, then the directory entry of the save. */
static int commit(const char *dir, const char *savedir, long serial, long step, int world, char *err)
{
	size_t n = strlen(savedir) + 16;
	char *path = malloc(n), e2[ERR_LEN];
	if (!path) return errf(err, "checkpoint: out of memory");
	snprintf(path, n, "%s/%s", savedir, COMMIT);
	struct outfile o;
	int rc = outfile_open(&o, path, e2);
	free(path);
	if (rc) return errf(err, "checkpoint: cannot create %s", e2);
	FILE *f = outfile_text(&o);
	if (f) fprintf(f, "scaleplan checkpoint commit\nserial %ld\nstep %ld\nworld %d\n", serial, step, world);
	if (outfile_commit(&o, e2)) return errf(err, "checkpoint: writing %s", e2);
	if (fsync_dir(dir)) return errf(err, "checkpoint: %s: %s", dir, strerror(errno));
	return 0;
}

/* The lowest rank whose flag is set (-1: none); -2 with err when the exchange failed. */
static int first_failed(struct comm *world, int failed, char *err)
{
	int n = comm_size(world);
	double mine = failed ? 1 : 0, *all = malloc(sizeof(double) * (size_t)n);
	if (!all) return errf(err, "checkpoint: out of memory"), -2;
	int first = -1;
	if (comm_allgather(world, &mine, all, 1, COMM_F64, err)) first = -2;
	for (int r = 0; first == -1 && r < n; r++)
		if (all[r] != 0) first = r;
	free(all);
	return first;
}

/* The collective verdict: 0 when no rank failed; else -1, err kept only on the first failing
 * rank (the one that reports). */
static int verdict(struct comm *world, int failed, char *err)
{
	char e2[ERR_LEN];
	int first = first_failed(world, failed, e2);
	if (first == -1) return 0;
	if (first == -2) return errf(err, "%s", e2);
	if (comm_rank(world) != first) err[0] = 0;
	return -1;
}

int ckpt_save_all(struct comm *world, const char *dir, const struct ckpt_meta *meta,
		  const struct train_state *s, char *err)
{
	int rank = comm_rank(world);
	long step = *s->steps_done;
	double serial = 0;
	err[0] = 0;
	if (rank == 0) serial = (double)prepare(dir, step, err);
	if (comm_broadcast(world, &serial, &serial, 1, COMM_F64, 0, err)) return -1;
	if (serial < 1) return -1;  /* rank 0 has the reason */
	char *savedir = save_dir(dir, (long)serial, step), *path = savedir ? malloc(strlen(savedir) + 32) : NULL;
	int bad = !path ? errf(err, "checkpoint: out of memory") : 0;
	if (!bad) {
		ckpt_path(path, strlen(savedir) + 32, savedir, rank);
		bad = ckpt_write_file(path, meta, s, err);
	}
	int rc = verdict(world, bad, err);
	if (!rc) {
		bad = rank == 0 && commit(dir, savedir, (long)serial, step, meta->world, err);
		rc = verdict(world, bad, err);
	}
	if (rank == 0 && savedir) {
		char e2[ERR_LEN];
		if (rc) remove_save(dir, savedir);           /* the failed save; ckpt_clean retries */
		else remove_saves(dir, (long)serial, 1, e2);  /* older saves: best effort */
	}
	free(path);
	free(savedir);
	return rc;
}

int ckpt_load_all(struct comm *world, const char *dir, const struct ckpt_meta *meta,
		  struct train_state *s, char *err)
{
	size_t cap = strlen(dir) + 64;
	char *savedir = malloc(cap), *path = malloc(cap + 32);
	long step = -1;
	err[0] = 0;
	int bad = !savedir || !path ? errf(err, "checkpoint: out of memory") : ckpt_newest(dir, savedir, cap, &step, err);
	if (!bad) {
		ckpt_path(path, cap + 32, savedir, meta->rank);
		bad = ckpt_read_file(path, meta, s, err);
		if (!bad && *s->steps_done != step)
			bad = errf(err, "checkpoint: %s holds step %d, its save is of step %ld", path, *s->steps_done, step);
	}
	free(savedir);
	free(path);
	int rc = verdict(world, bad, err);
	if (rc) return -1;
	/* every rank must have read the same save (one could have been committed in between) */
	int n = comm_size(world);
	double mine = (double)step, *all = malloc(sizeof(double) * (size_t)n);
	if (!all) return errf(err, "checkpoint: out of memory");
	rc = comm_allgather(world, &mine, all, 1, COMM_F64, err);
	for (int r = 1; !rc && r < n; r++)
		if (all[r] != all[0])
			rc = comm_rank(world) == 0 ? errf(err, "checkpoint: the ranks read different saves in %s (steps %.0f and %.0f); was a save running?",
							    dir, all[0], all[r]) : (err[0] = 0, -1);
	free(all);
	return rc;
}
