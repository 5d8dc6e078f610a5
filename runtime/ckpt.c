/* ckpt — per-rank checkpoint files written atomically and checked on load (format in ckpt.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "runtime/ckpt.h"
#include "sim/util.h"

#define CKPT_MAGIC "SPCKPT01"
#define CKPT_VERSION 1u

struct hdr {
	char magic[8];
	uint32_t version, rank, world, plan_len;
	uint64_t seed;
	int64_t steps_done, adam_step;
	uint64_t next_sample, n_params, n_moments;
};

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}
#define FNV_INIT 0xcbf29ce484222325ull

void ckpt_path(char *buf, size_t len, const char *dir, int rank)
{
	snprintf(buf, len, "%s/rank-%05d.ckpt", dir, rank);
}

/* writes n bytes and folds them into the checksum */
static int put(FILE *f, uint64_t *h, const void *p, size_t n)
{
	*h = fnv1a(*h, p, n);
	return fwrite(p, 1, n, f) == n ? 0 : -1;
}

int ckpt_save(const char *dir, const struct ckpt_meta *meta, const struct train_state *s, char *err)
{
	if (mkdir(dir, 0777) && errno != EEXIST)
		return errf(err, "checkpoint: cannot create directory %s: %s", dir, strerror(errno));
	size_t plen = strlen(dir) + 64;
	char *path = malloc(plen), *tmp = malloc(plen);
	if (!path || !tmp) {
		free(path);
		free(tmp);
		return errf(err, "checkpoint: out of memory");
	}
	ckpt_path(path, plen, dir, meta->rank);
	snprintf(tmp, plen, "%s/.rank-%05d.ckpt.tmp", dir, meta->rank);
	struct hdr h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CKPT_MAGIC, 8);
	h.version = CKPT_VERSION;
	h.rank = (uint32_t)meta->rank;
	h.world = (uint32_t)meta->world;
	h.plan_len = (uint32_t)strlen(meta->plan_json);
	h.seed = meta->seed;
	h.steps_done = *s->steps_done;
	h.adam_step = *s->adam_step;
	h.next_sample = meta->next_sample;
	h.n_params = s->n_params;
	h.n_moments = s->n_moments;
	int rc = -1;
	FILE *f = fopen(tmp, "wb");
	if (!f) {
		errf(err, "checkpoint: cannot create %s: %s", tmp, strerror(errno));
		goto out;
	}
	uint64_t sum = FNV_INIT;
	int bad = put(f, &sum, &h, sizeof(h)) || put(f, &sum, meta->plan_json, h.plan_len) ||
		  put(f, &sum, s->params, s->n_params * sizeof(float)) ||
		  put(f, &sum, s->m, s->n_moments * sizeof(float)) ||
		  put(f, &sum, s->v, s->n_moments * sizeof(float));
	bad = bad || fwrite(&sum, sizeof(sum), 1, f) != 1 || fflush(f) || fsync(fileno(f));
	if (fclose(f) || bad) {
		errf(err, "checkpoint: writing %s failed: %s", tmp, strerror(errno));
		remove(tmp);
		goto out;
	}
	if (rename(tmp, path)) {
		errf(err, "checkpoint: cannot rename %s to %s: %s", tmp, path, strerror(errno));
		remove(tmp);
		goto out;
	}
	rc = 0;
out:
	free(path);
	free(tmp);
	return rc;
}

/* Checks the header against the running job; the message names the file and the rule. */
static int check_hdr(const char *path, const struct hdr *h, const struct ckpt_meta *meta, char *err)
{
	if (memcmp(h->magic, CKPT_MAGIC, 8))
		return errf(err, "checkpoint: %s is not a scaleplan checkpoint (bad magic)", path);
	if (h->version != CKPT_VERSION)
		return errf(err, "checkpoint: %s has version %u, this program reads %u", path, h->version, CKPT_VERSION);
	if ((int)h->world != meta->world)
		return errf(err, "checkpoint: %s was saved by %u ranks, this job has %d", path, h->world, meta->world);
	if ((int)h->rank != meta->rank)
		return errf(err, "checkpoint: %s belongs to rank %u, not rank %d", path, h->rank, meta->rank);
	if (h->plan_len > (1u << 20))
		return errf(err, "checkpoint: %s is corrupt (plan of %u bytes)", path, h->plan_len);
	return 0;
}

static int check_state(const char *path, const struct hdr *h, const struct ckpt_meta *meta,
		       const struct train_state *s, char *err)
{
	if (h->seed != meta->seed)
		return errf(err, "checkpoint: %s was saved with --seed %llu, this run has %llu", path,
			    (unsigned long long)h->seed, (unsigned long long)meta->seed);
	if (h->n_params != s->n_params || h->n_moments != s->n_moments)
		return errf(err, "checkpoint: %s holds %llu parameters and %llu moments, this rank needs %zu and %zu",
			    path, (unsigned long long)h->n_params, (unsigned long long)h->n_moments, s->n_params,
			    s->n_moments);
	if (h->steps_done < 0 || h->adam_step < 0)
		return errf(err, "checkpoint: %s is corrupt (impossible header values)", path);
	return 0;
}

/* Names the first plan key whose value differs between the checkpoint and the job. */
static void plan_diff(const char *path, const char *saved, const char *now, char *err)
{
	cJSON *a = cJSON_Parse(saved), *b = cJSON_Parse(now);
	errf(err, "checkpoint: %s was saved for a different plan", path);
	for (cJSON *x = a ? a->child : NULL; x && b; x = x->next) {
		cJSON *y = cJSON_GetObjectItemCaseSensitive(b, x->string);
		char *sx = cJSON_PrintUnformatted(x), *sy = y ? cJSON_PrintUnformatted(y) : NULL;
		int differ = !sx || !sy || strcmp(sx, sy);
		if (differ)
			errf(err, "checkpoint: %s was saved for a different plan: %s is %s there, %s now", path,
			     x->string, sx ? sx : "?", sy ? sy : "absent");
		free(sx);
		free(sy);
		if (differ) break;
	}
	cJSON_Delete(a);
	cJSON_Delete(b);
}

int ckpt_load(const char *dir, const struct ckpt_meta *meta, struct train_state *s, char *err)
{
	size_t plen = strlen(dir) + 64;
	char *path = malloc(plen), *plan = NULL;
	float *buf = NULL;
	int rc = -1;
	FILE *f = NULL;
	if (!path) return errf(err, "checkpoint: out of memory");
	ckpt_path(path, plen, dir, meta->rank);
	f = fopen(path, "rb");
	if (!f) {
		errf(err, "checkpoint: cannot open %s: %s", path, strerror(errno));
		goto out;
	}
	struct hdr h;
	if (fread(&h, sizeof(h), 1, f) != 1) {
		errf(err, "checkpoint: %s is truncated (no complete header)", path);
		goto out;
	}
	if (check_hdr(path, &h, meta, err)) goto out;
	plan = malloc(h.plan_len + 1);
	if (!plan || fread(plan, 1, h.plan_len, f) != h.plan_len) {
		errf(err, "checkpoint: %s is truncated (plan)", path);
		goto out;
	}
	plan[h.plan_len] = 0;
	if (strcmp(plan, meta->plan_json)) {
		plan_diff(path, plan, meta->plan_json, err);
		goto out;
	}
	if (check_state(path, &h, meta, s, err)) goto out;
	size_t nfl = h.n_params + 2 * h.n_moments;
	buf = malloc((nfl ? nfl : 1) * sizeof(float));
	if (!buf) {
		errf(err, "checkpoint: out of memory reading %s", path);
		goto out;
	}
	uint64_t sum = fnv1a(FNV_INIT, &h, sizeof(h)), want;
	if (fread(buf, sizeof(float), nfl, f) != nfl || fread(&want, sizeof(want), 1, f) != 1) {
		errf(err, "checkpoint: %s is truncated", path);
		goto out;
	}
	sum = fnv1a(fnv1a(sum, plan, h.plan_len), buf, nfl * sizeof(float));
	if (sum != want || fgetc(f) != EOF) {
		errf(err, "checkpoint: %s is corrupt (checksum mismatch)", path);
		goto out;
	}
	memcpy(s->params, buf, h.n_params * sizeof(float));
	memcpy(s->m, buf + h.n_params, h.n_moments * sizeof(float));
	memcpy(s->v, buf + h.n_params + h.n_moments, h.n_moments * sizeof(float));
	*s->steps_done = (int)h.steps_done;
	*s->adam_step = (int)h.adam_step;
	rc = 0;
out:
	if (f) fclose(f);
	free(path);
	free(plan);
	free(buf);
	return rc;
}
