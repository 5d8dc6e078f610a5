/* Token samples (runtime/data.h) and checkpoint files (runtime/ckpt.h) without MPI:
 *  - synthetic samples are a pure function of (seed, index): repeatable, in range, targets
 *    shifted by one, different for another seed or index;
 *  - a token file written by data_write_file reads back as the windows data.h describes;
 *    missing, truncated, foreign-magic, wrong-version and out-of-vocabulary files are refused
 *    with messages naming the rule;
 *  - a checkpoint round-trips every field exactly, leaves no temporary file, and is refused
 *    when a byte changes, when it is cut short, or when plan, world, rank or seed differ —
 *    with the state untouched by a refused load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/ckpt.h"
#include "runtime/data.h"
#include "sim/util.h"
#include "tests/test.h"

static char dir[] = "/tmp/sp_dckpt_XXXXXX";

static void test_synthetic(void)
{
	char err[ERR_LEN];
	struct data *a = NULL, *b = NULL;
	CHECK(data_open_synthetic(256, 1, &a, err) == 0 && data_open_synthetic(256, 2, &b, err) == 0, "%s", err);
	if (!a || !b) return;
	int t1[33], g1[33], t2[33], g2[33], t3[33], g3[33];
	data_sample(a, 5, 33, t1, g1);
	data_sample(a, 5, 33, t2, g2);
	data_sample(a, 6, 33, t3, g3);
	int same = !memcmp(t1, t2, sizeof(t1)) && !memcmp(g1, g2, sizeof(g1)), range = 1, shifted = 1;
	for (int i = 0; i < 33; i++) range &= t1[i] >= 0 && t1[i] < 256 && g1[i] >= 0 && g1[i] < 256;
	for (int i = 0; i + 1 < 33; i++) shifted &= g1[i] == t1[i + 1];
	CHECK(same, "sample 5 twice differs");
	CHECK(range, "token out of [0, 256)");
	CHECK(shifted, "targets are not the inputs shifted by one");
	CHECK(memcmp(t1, t3, sizeof(t1)), "samples 5 and 6 are equal");
	data_sample(b, 5, 33, t2, g2);
	CHECK(memcmp(t1, t2, sizeof(t1)), "seeds 1 and 2 give the same sample");
	/* a longer sample starts with the shorter one: position t depends on (seed, index, t) only */
	int t4[8], g4[8];
	data_sample(a, 5, 8, t4, g4);
	CHECK(!memcmp(t4, t1, sizeof(t4)), "a sample's tokens depend on its length");
	data_close(a);
	data_close(b);
	data_close(NULL);
	CHECK(data_open_synthetic(1, 1, &b, err) == -1 && !b && strstr(err, "at least 2"), "vocab 1: '%s'", err);
}

static void path_in(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", dir, name); }

static void test_file(void)
{
	char err[ERR_LEN], p[256];
	uint16_t tok[41];
	for (int i = 0; i < 41; i++) tok[i] = (uint16_t)(i * 3);
	path_in(p, sizeof(p), "tok.bin");
	CHECK(data_write_file(p, tok, 41, err) == 0, "%s", err);
	struct data *d = NULL;
	/* 41 tokens, seq 10: W = 4 windows at 0, 10, 20, 30 */
	CHECK(data_open_file(p, 256, 10, &d, err) == 0, "%s", err);
	if (d) {
		int t[10], g[10], ok = 1;
		data_sample(d, 6, 10, t, g);   /* 6 mod 4 = window 2, tokens 20..30 */
		for (int i = 0; i < 10; i++) ok &= t[i] == 3 * (20 + i) && g[i] == 3 * (21 + i);
		CHECK(ok, "sample 6 is not the window at token 20");
		data_close(d);
	}
	CHECK(data_open_file(p, 100, 10, &d, err) == -1 && strstr(err, "token 34 is 102, not below the model's vocab_size 100"),
	      "vocab: '%s'", err);
	CHECK(data_open_file(p, 256, 40, &d, err) == 0, "exactly one sample of 40: %s", err);
	data_close(d);
	CHECK(data_open_file(p, 256, 41, &d, err) == -1 && strstr(err, "fewer than one sample"), "too short: '%s'", err);
	/* truncated: header says 41, the file holds 20 */
	FILE *f = fopen(p, "r+b");
	if (f) {
		CHECK(ftruncate(fileno(f), 1024 + 40) == 0, "truncate");
		fclose(f);
	}
	CHECK(data_open_file(p, 256, 10, &d, err) == -1 && strstr(err, "header says 41 tokens, file holds 20"),
	      "truncated: '%s'", err);
	/* a wrong magic and a wrong version */
	unsigned char hdr[1024] = {0};
	path_in(p, sizeof(p), "bad.bin");
	f = fopen(p, "wb");
	if (f) { fwrite(hdr, 1, sizeof(hdr), f); fclose(f); }
	CHECK(data_open_file(p, 256, 10, &d, err) == -1 && strstr(err, "not a token file: magic 0"), "magic: '%s'", err);
	uint32_t h[3] = {DATA_MAGIC, 2, 41};
	memcpy(hdr, h, sizeof(h));   /* little-endian machine, as the format */
	f = fopen(p, "wb");
	if (f) { fwrite(hdr, 1, sizeof(hdr), f); fclose(f); }
	CHECK(data_open_file(p, 256, 10, &d, err) == -1 && strstr(err, "version 2, want 1"), "version: '%s'", err);
	path_in(p, sizeof(p), "none.bin");
	CHECK(data_open_file(p, 256, 10, &d, err) == -1 && strstr(err, "cannot open"), "missing: '%s'", err);
	CHECK(d == NULL, "failed opens leave no data");
}

#define NP 37
#define NM 19

struct st { float p[NP], m[NM], v[NM]; int adam, steps; struct train_state s; };

static void st_init(struct st *x, float base)
{
	for (int i = 0; i < NP; i++) x->p[i] = base + 0.25f * i;
	for (int i = 0; i < NM; i++) x->m[i] = base - i, x->v[i] = base * i;
	x->adam = (int)base;
	x->steps = 2 * (int)base;
	x->s = (struct train_state){x->p, NP, x->m, x->v, NM, &x->adam, &x->steps};
}

static int st_equal(const struct st *a, const struct st *b)
{
	return !memcmp(a->p, b->p, sizeof(a->p)) && !memcmp(a->m, b->m, sizeof(a->m)) &&
	       !memcmp(a->v, b->v, sizeof(a->v)) && a->adam == b->adam && a->steps == b->steps;
}

static void flip_byte(const char *path, long at)
{
	FILE *f = fopen(path, "r+b");
	if (!f) return;
	fseek(f, at, SEEK_SET);
	int c = fgetc(f);
	fseek(f, at, SEEK_SET);
	fputc(c ^ 0x20, f);
	fclose(f);
}

static void test_ckpt(void)
{
	char err[ERR_LEN], d[256], file[300];
	path_in(d, sizeof(d), "ck");
	const char *plan = "{\"zero\":1,\"dp\":2}";
	struct ckpt_meta meta = {1, 2, plan, 42, 80};
	struct st a, b, c;
	st_init(&a, 5.0f);
	st_init(&b, 9.0f);
	st_init(&c, 9.0f);
	CHECK(ckpt_save(d, &meta, &a.s, err) == 0, "%s", err);
	ckpt_path(file, sizeof(file), d, 1);
	CHECK(access(file, F_OK) == 0, "no %s", file);
	char tmp[300];
	snprintf(tmp, sizeof(tmp), "%s/.rank-00001.ckpt.tmp", d);
	CHECK(access(tmp, F_OK) != 0, "temporary file left behind");
	CHECK(ckpt_load(d, &meta, &b.s, err) == 0 && st_equal(&a, &b), "round trip: %s", err);

	struct ckpt_meta other = meta;
	other.plan_json = "{\"zero\":2,\"dp\":2}";
	CHECK(ckpt_load(d, &other, &c.s, err) == -1 && strstr(err, "different plan: zero is 1 there, 2 now"), "plan: '%s'", err);
	other = meta;
	other.world = 4;
	CHECK(ckpt_load(d, &other, &c.s, err) == -1 && strstr(err, "saved by 2 ranks, this job has 4"), "world: '%s'", err);
	other = meta;
	other.seed = 7;
	CHECK(ckpt_load(d, &other, &c.s, err) == -1 && strstr(err, "--seed 42"), "seed: '%s'", err);
	other = meta;
	other.rank = 0;
	CHECK(ckpt_load(d, &other, &c.s, err) == -1 && strstr(err, "rank-00000.ckpt"), "rank 0 has no file: '%s'", err);
	struct st small;
	st_init(&small, 9.0f);
	small.s.n_moments = NM - 1;
	CHECK(ckpt_load(d, &meta, &small.s, err) == -1 && strstr(err, "this rank needs"), "sizes: '%s'", err);
	struct st fresh;
	st_init(&fresh, 9.0f);
	CHECK(st_equal(&c, &fresh), "refused loads changed the state");

	flip_byte(file, 200);   /* inside the parameters */
	CHECK(ckpt_load(d, &meta, &c.s, err) == -1 && strstr(err, "checksum mismatch"), "corrupt: '%s'", err);
	CHECK(st_equal(&c, &fresh), "a corrupt file changed the state");
	flip_byte(file, 200);
	CHECK(ckpt_load(d, &meta, &c.s, err) == 0, "restored file: %s", err);
	FILE *f = fopen(file, "r+b");
	if (f) {
		CHECK(ftruncate(fileno(f), 150) == 0, "truncate");
		fclose(f);
	}
	CHECK(ckpt_load(d, &meta, &c.s, err) == -1 && strstr(err, "truncated"), "truncated: '%s'", err);
	/* a directory that cannot be created */
	CHECK(ckpt_save("/proc/no/such/dir", &meta, &a.s, err) == -1 && strstr(err, "cannot create directory"),
	      "unwritable: '%s'", err);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_synthetic();
	test_file();
	test_ckpt();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
	return test_summary("test_data_ckpt");
}
