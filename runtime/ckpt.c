/* ckpt — one rank's checkpoint file: written whole or not at all, checked on load (format
 * in ckpt.h). The save directories and the protocol around them are in ckpt_dir.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>
#include "runtime/ckpt.h"
#include "sim/outfile.h"
#include "sim/util.h"

#define CKPT_MAGIC "SPCKPT01"
#define CKPT_VERSION 2u
#define MAX_PLAN_BYTES (1u << 20)
#define MAX_SETTINGS_BYTES (1u << 16)
#define MAX_ELEMS (1ull << 40)

struct hdr {
	char magic[8];
	uint32_t version, rank, world, plan_len, settings_len, reserved;
	uint64_t seed;
	int64_t steps_done, adam_step;
	uint64_t next_sample, n_params, n_moments;
};
_Static_assert(sizeof(struct hdr) == 80, "the header has no padding");

void ckpt_path(char *buf, size_t len, const char *savedir, int rank)
{
	snprintf(buf, len, "%s/rank-%05d.ckpt", savedir, rank);
}

/* writes n bytes and folds them into the checksum */
static int put(struct outfile *o, uint64_t *h, const void *p, size_t n, char *err)
{
	*h = fnv1a(*h, p, n);
	return outfile_write(o, p, n, err);
}

int ckpt_write_file(const char *path, const struct ckpt_meta *meta, const struct train_state *s, char *err)
{
	struct hdr h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CKPT_MAGIC, 8);
	h.version = CKPT_VERSION;
	h.rank = (uint32_t)meta->rank;
	h.world = (uint32_t)meta->world;
	h.plan_len = (uint32_t)strlen(meta->plan_json);
	h.settings_len = (uint32_t)strlen(meta->settings_json ? meta->settings_json : "");
	h.seed = meta->seed;
	h.steps_done = *s->steps_done;
	h.adam_step = *s->adam_step;
	h.next_sample = meta->next_sample;
	h.n_params = s->n_params;
	h.n_moments = s->n_moments;
	if (h.plan_len > MAX_PLAN_BYTES || h.settings_len > MAX_SETTINGS_BYTES)
		return errf(err, "checkpoint: plan or settings too long to save");
	struct outfile o;
	char e2[ERR_LEN];
	if (outfile_open(&o, path, e2)) return errf(err, "checkpoint: cannot create %s", e2);
	uint64_t sum = FNV1A_INIT;
	int bad = put(&o, &sum, &h, sizeof(h), e2) || put(&o, &sum, meta->plan_json, h.plan_len, e2) ||
		  put(&o, &sum, meta->settings_json, h.settings_len, e2) ||
		  put(&o, &sum, s->params, s->n_params * sizeof(float), e2) ||
		  put(&o, &sum, s->m, s->n_moments * sizeof(float), e2) ||
		  put(&o, &sum, s->v, s->n_moments * sizeof(float), e2) || outfile_write(&o, &sum, sizeof(sum), e2);
	if (bad) {
		outfile_abort(&o);
		return errf(err, "checkpoint: writing %s", e2);
	}
	if (outfile_commit(&o, e2)) return errf(err, "checkpoint: writing %s", e2);
	return 0;
}

/* Finds the first key of x whose value differs in y (absent there, or another value) and
 * says so in err; reverse: x is the running job's object. 1 when found. */
static int diff_pass(const cJSON *x, const cJSON *y, int reverse, const char *path, const char *what, char *err)
{
	for (const cJSON *it = x->child; it; it = it->next) {
		const cJSON *other = cJSON_GetObjectItemCaseSensitive(y, it->string);
		char *sx = cJSON_PrintUnformatted(it), *sy = other ? cJSON_PrintUnformatted(other) : NULL;
		int differ = !sx || !sy || strcmp(sx, sy);
		if (differ)
			errf(err, "checkpoint: %s was saved %s: %s is %s there, %s now", path, what, it->string,
			     reverse ? (sy ? sy : "absent") : (sx ? sx : "?"), reverse ? (sx ? sx : "?") : (sy ? sy : "absent"));
		free(sx);
		free(sy);
		if (differ) return 1;
	}
	return 0;
}

/* Names the first key whose value differs between the saved and the running JSON objects. */
static void json_diff(const char *path, const char *what, const char *saved, const char *now, char *err)
{
	cJSON *a = cJSON_Parse(saved), *b = cJSON_Parse(now);
	errf(err, "checkpoint: %s was saved %s", path, what);
	if (a && b && !diff_pass(a, b, 0, path, what, err)) diff_pass(b, a, 1, path, what, err);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

/* The header against the file's size; every field bounded before any arithmetic. */
static int check_size(const char *path, const struct hdr *h, uint64_t size, char *err)
{
	if (memcmp(h->magic, CKPT_MAGIC, 8))
		return errf(err, "checkpoint: %s is not a scaleplan checkpoint (bad magic)", path);
	if (h->version != CKPT_VERSION)
		return errf(err, "checkpoint: %s has version %u, this program reads %u", path, h->version, CKPT_VERSION);
	if (h->plan_len > MAX_PLAN_BYTES || h->settings_len > MAX_SETTINGS_BYTES || h->n_params > MAX_ELEMS ||
	    h->n_moments > MAX_ELEMS)
		return errf(err, "checkpoint: %s is corrupt (impossible header values)", path);
	uint64_t want = sizeof(*h) + h->plan_len + h->settings_len + 4 * (h->n_params + 2 * h->n_moments) + 8;
	if (size < want)
		return errf(err, "checkpoint: %s is truncated (%llu bytes, its header describes %llu)", path,
			    (unsigned long long)size, (unsigned long long)want);
	if (size > want)
		return errf(err, "checkpoint: %s is corrupt (%llu bytes, its header describes %llu)", path,
			    (unsigned long long)size, (unsigned long long)want);
	return 0;
}

/* The file (checksum already verified) against the running job. */
static int check_job(const char *path, const struct hdr *h, const char *plan, const char *settings,
		     const struct ckpt_meta *meta, const struct train_state *s, char *err)
{
	if ((int)h->world != meta->world)
		return errf(err, "checkpoint: %s was saved by %u ranks, this job has %d", path, h->world, meta->world);
	if ((int)h->rank != meta->rank)
		return errf(err, "checkpoint: %s belongs to rank %u, not rank %d", path, h->rank, meta->rank);
	if (strcmp(plan, meta->plan_json)) {
		json_diff(path, "for a different plan", plan, meta->plan_json, err);
		return -1;
	}
	const char *now = meta->settings_json ? meta->settings_json : "";
	if (strcmp(settings, now)) {
		json_diff(path, "with different settings", settings, now, err);
		return -1;
	}
	if (h->seed != meta->seed)
		return errf(err, "checkpoint: %s was saved with --seed %llu, this run has %llu", path,
			    (unsigned long long)h->seed, (unsigned long long)meta->seed);
	if (h->n_params != s->n_params || h->n_moments != s->n_moments)
		return errf(err, "checkpoint: %s holds %llu parameters and %llu moments, this rank needs %zu and %zu",
			    path, (unsigned long long)h->n_params, (unsigned long long)h->n_moments, s->n_params,
			    s->n_moments);
	if (h->steps_done < 0 || h->adam_step < 0 || h->steps_done > 0x7fffffff || h->adam_step > 0x7fffffff)
		return errf(err, "checkpoint: %s is corrupt (impossible step counts)", path);
	return 0;
}

/* The whole file into a malloc'd buffer (its size in *size); NULL with err. */
static unsigned char *slurp(const char *path, uint64_t *size, char *err)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		errf(err, "checkpoint: cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	unsigned char *buf = NULL;
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		errf(err, "checkpoint: %s is not a regular file", path);
	} else if ((uint64_t)st.st_size < sizeof(struct hdr)) {
		errf(err, "checkpoint: %s is truncated (%lld bytes, no complete header)", path, (long long)st.st_size);
	} else if (!(buf = malloc((size_t)st.st_size))) {
		errf(err, "checkpoint: out of memory reading %s (%lld bytes)", path, (long long)st.st_size);
	} else if (fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		errf(err, "checkpoint: reading %s failed", path);
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*size = (uint64_t)st.st_size;
	return buf;
}

int ckpt_read_file(const char *path, const struct ckpt_meta *meta, struct train_state *s, char *err)
{
	uint64_t size = 0;
	unsigned char *buf = slurp(path, &size, err);
	if (!buf) return -1;
	struct hdr h;
	memcpy(&h, buf, sizeof(h));
	int rc = -1;
	char *plan = NULL, *settings = NULL;
	if (check_size(path, &h, size, err)) goto out;
	uint64_t want;
	memcpy(&want, buf + size - 8, 8);
	if (fnv1a(FNV1A_INIT, buf, (size_t)size - 8) != want) {
		errf(err, "checkpoint: %s is corrupt (checksum mismatch)", path);
		goto out;
	}
	const unsigned char *p = buf + sizeof(h);
	plan = strndup((const char *)p, h.plan_len);
	settings = strndup((const char *)p + h.plan_len, h.settings_len);
	if (!plan || !settings) {
		errf(err, "checkpoint: out of memory reading %s", path);
		goto out;
	}
	if (strlen(plan) != h.plan_len || strlen(settings) != h.settings_len) {
		errf(err, "checkpoint: %s is corrupt (a NUL byte in its plan or settings)", path);
		goto out;
	}
	if (check_job(path, &h, plan, settings, meta, s, err)) goto out;
	p += h.plan_len + h.settings_len;
	memcpy(s->params, p, h.n_params * sizeof(float));
	memcpy(s->m, p + 4 * h.n_params, h.n_moments * sizeof(float));
	memcpy(s->v, p + 4 * (h.n_params + h.n_moments), h.n_moments * sizeof(float));
	*s->steps_done = (int)h.steps_done;
	*s->adam_step = (int)h.adam_step;
	rc = 0;
out:
	free(buf);
	free(plan);
	free(settings);
	return rc;
}
