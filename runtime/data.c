/* data — synthetic token samples and llm.c token files (format in data.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/data.h"
#include "sim/outfile.h"
#include "sim/util.h"

struct data {
	int vocab;
	uint64_t seed;
	uint16_t *tok;   /* NULL: synthetic */
	size_t ntok;
};

static uint64_t mix64(uint64_t z) /* splitmix64's finaliser (Steele et al. 2014) */
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int data_open_synthetic(int vocab, uint64_t seed, struct data **out, char *err)
{
	*out = NULL;
	if (vocab < 2) return errf(err, "data: vocabulary (%d) must have at least 2 tokens", vocab);
	struct data *d = calloc(1, sizeof(*d));
	if (!d) return errf(err, "data: out of memory");
	d->vocab = vocab;
	d->seed = seed;
	*out = d;
	return 0;
}

static uint32_t le32(const unsigned char *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

int data_open_file(const char *path, int vocab, int seq, struct data **out, char *err)
{
	*out = NULL;
	unsigned char hdr[DATA_HEADER_INTS * 4];
	FILE *f = fopen(path, "rb");
	if (!f) return errf(err, "data: cannot open %s: %s", path, strerror(errno));
	struct data *d = NULL;
	int rc = -1;
	if (fread(hdr, 1, sizeof(hdr), f) != sizeof(hdr)) {
		errf(err, "data: %s is truncated: shorter than the %d-byte header", path, (int)sizeof(hdr));
		goto out;
	}
	uint32_t magic = le32(hdr), version = le32(hdr + 4), count = le32(hdr + 8);
	if (magic != DATA_MAGIC) {
		errf(err, "data: %s is not a token file: magic %u, want %d", path, magic, DATA_MAGIC);
		goto out;
	}
	if (version != DATA_VERSION) {
		errf(err, "data: %s: version %u, want %d (uint16 tokens)", path, version, DATA_VERSION);
		goto out;
	}
	if ((long)count < (long)seq + 1) {
		errf(err, "data: %s holds %u tokens, fewer than one sample of seq+1 (%d)", path, count, seq + 1);
		goto out;
	}
	d = calloc(1, sizeof(*d));
	if (d) d->tok = malloc((size_t)count * sizeof(uint16_t));
	if (!d || !d->tok) {
		errf(err, "data: out of memory for %u tokens of %s", count, path);
		goto out;
	}
	unsigned char *raw = (unsigned char *)d->tok;
	size_t got = fread(raw, 1, (size_t)count * 2, f);
	if (got != (size_t)count * 2) {
		errf(err, "data: %s is truncated: header says %u tokens, file holds %zu", path, count, got / 2);
		goto out;
	}
	for (size_t i = 0; i < count; i++) {
		uint16_t t = (uint16_t)(raw[2 * i] | raw[2 * i + 1] << 8);   /* little-endian */
		if (t >= vocab) {
			errf(err, "data: %s: token %zu is %u, not below the model's vocab_size %d", path, i, t, vocab);
			goto out;
		}
		d->tok[i] = t;
	}
	d->vocab = vocab;
	d->ntok = count;
	*out = d;
	d = NULL;
	rc = 0;
out:
	fclose(f);
	data_close(d);
	return rc;
}

void data_identity(const struct data *d, char *buf, size_t cap)
{
	if (!d->tok) snprintf(buf, cap, "synthetic");
	else snprintf(buf, cap, "token file: %zu tokens, FNV-1a %016llx", d->ntok,
		      fnv1a(FNV1A_INIT, d->tok, d->ntok * sizeof(uint16_t)));
}

void data_close(struct data *d)
{
	if (!d) return;
	free(d->tok);
	free(d);
}

void data_sample(const struct data *d, uint64_t index, int seq, int *tokens, int *targets)
{
	if (d->tok) {
		size_t windows = (d->ntok - 1) / (size_t)seq;
		const uint16_t *w = d->tok + (size_t)(index % windows) * (size_t)seq;
		for (int t = 0; t < seq; t++) {
			tokens[t] = w[t];
			targets[t] = w[t + 1];
		}
		return;
	}
	uint64_t key = mix64(d->seed ^ mix64(index + 0x6a09e667f3bcc909ull));
	/* strides 1-4: a bigram model can get to ~ln 4 + noise, so the loss visibly falls */
	uint64_t start = key % (uint64_t)d->vocab, stride = 1 + (key >> 32) % 4;
	for (int t = 0; t <= seq; t++) {
		uint64_t r = mix64(key + (uint64_t)(t + 1) * 0x9e3779b97f4a7c15ull);
		int tok = (int)((start + (uint64_t)t * stride) % (uint64_t)d->vocab);
		if ((r & 7) == 0) tok = (int)((r >> 8) % (uint64_t)d->vocab);   /* one in 8: noise */
		if (t < seq) tokens[t] = tok;
		if (t > 0) targets[t - 1] = tok;
	}
}

int data_write_file(const char *path, const uint16_t *tokens, size_t n, char *err)
{
	if (n > 0x7fffffff) return errf(err, "data: %zu tokens do not fit the header's int32 count", n);
	struct outfile o;
	char e2[ERR_LEN];
	if (outfile_open(&o, path, e2)) return errf(err, "data: cannot create %s", e2);
	unsigned char hdr[DATA_HEADER_INTS * 4] = {0};
	uint32_t h[3] = {DATA_MAGIC, DATA_VERSION, (uint32_t)n};
	for (int i = 0; i < 3; i++)
		for (int b = 0; b < 4; b++) hdr[4 * i + b] = (unsigned char)(h[i] >> (8 * b));
	int bad = outfile_write(&o, hdr, sizeof(hdr), e2);
	unsigned char chunk[8192];
	for (size_t i = 0; !bad && i < n; i += sizeof(chunk) / 2) {
		size_t k = n - i < sizeof(chunk) / 2 ? n - i : sizeof(chunk) / 2;
		for (size_t j = 0; j < k; j++) {
			chunk[2 * j] = (unsigned char)(tokens[i + j] & 0xff);   /* little-endian */
			chunk[2 * j + 1] = (unsigned char)(tokens[i + j] >> 8);
		}
		bad = outfile_write(&o, chunk, 2 * k, e2);
	}
	if (bad) outfile_abort(&o);
	if (bad || outfile_commit(&o, e2)) return errf(err, "data: writing %s", e2);
	return 0;
}
