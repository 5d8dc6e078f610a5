/* Token samples (runtime/data.h) and checkpoint files (runtime/ckpt.h) without MPI:
 *  - synthetic samples are a pure function of (seed, index): repeatable, in range, targets
 *    shifted by one, different for another seed or index;
 *  - a token file written by data_write_file reads back as the windows data.h describes;
 *    missing, truncated, foreign-magic, wrong-version and out-of-vocabulary files are refused
 *    with messages naming the rule;
 *  - a checkpoint file round-trips every field exactly, leaves no temporary file, and is
 *    refused when a byte changes (the checksum is checked first: a damaged plan or header is
 *    reported as damage, not as another plan), when it is cut short, or when plan, settings
 *    (learning rate, data), world, rank or seed differ, naming what differs — with the state
 *    untouched by a refused load;
 *  - save directories: the newest committed save is the one with the highest serial and a
 *    COMMIT that agrees with its name; ckpt_clean removes only uncommitted ones. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* entries of a directory other than . and .. */
static int count_entries(const char *d)
{
	DIR *dd = opendir(d);
	int n = 0;
	if (!dd) return -1;
	for (struct dirent *e; (e = readdir(dd));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(dd);
	return n;
}

static void test_ckpt(void)
{
	char err[ERR_LEN], d[256], file[300];
	path_in(d, sizeof(d), "ck");
	CHECK(mkdir(d, 0777) == 0, "mkdir");
	snprintf(file, sizeof(file), "%s/rank-00001.ckpt", d);
	const char *plan = "{\"zero\":1,\"dp\":2}", *settings = "{\"lr\":0.0003,\"data\":\"synthetic\"}";
	struct ckpt_meta meta = {1, 2, plan, settings, 42, 80};
	struct st a, b, c;
	st_init(&a, 5.0f);
	st_init(&b, 9.0f);
	st_init(&c, 9.0f);
	CHECK(ckpt_write_file(file, &meta, &a.s, err) == 0, "%s", err);
	CHECK(access(file, F_OK) == 0 && count_entries(d) == 1, "one file and no temporary file in %s", d);
	CHECK(ckpt_read_file(file, &meta, &b.s, err) == 0 && st_equal(&a, &b), "round trip: %s", err);

	struct ckpt_meta other = meta;
	other.plan_json = "{\"zero\":2,\"dp\":2}";
	CHECK(ckpt_read_file(file, &other, &c.s, err) == -1 && strstr(err, "different plan: zero is 1 there, 2 now"), "plan: '%s'", err);
	other.plan_json = "{\"zero\":1,\"dp\":2,\"cp\":2}";
	CHECK(ckpt_read_file(file, &other, &c.s, err) == -1 && strstr(err, "different plan: cp is absent there, 2 now"), "new key: '%s'", err);
	other = meta;
	other.settings_json = "{\"lr\":0.001,\"data\":\"synthetic\"}";
	CHECK(ckpt_read_file(file, &other, &c.s, err) == -1 && strstr(err, "different settings: lr is 0.0003 there, 0.001 now"), "lr: '%s'", err);
	other.settings_json = "{\"lr\":0.0003,\"data\":\"token file: 9 tokens, FNV-1a 00000000000000ff\"}";
	CHECK(ckpt_read_file(file, &other, &c.s, err) == -1 && strstr(err, "data is \"synthetic\" there, \"token file"), "data: '%s'", err);
	other = meta;
	other.world = 4;
	CHECK(ckpt_read_file(file, &other, &c.s, err) == -1 && strstr(err, "saved by 2 ranks, this job has 4"), "world: '%s'", err);
	other = meta;
	other.seed = 7;
	CHECK(ckpt_read_file(file, &other, &c.s, err) == -1 && strstr(err, "--seed 42"), "seed: '%s'", err);
	other = meta;
	other.rank = 0;
	CHECK(ckpt_read_file(file, &other, &c.s, err) == -1 && strstr(err, "belongs to rank 1, not rank 0"), "rank: '%s'", err);
	struct st small;
	st_init(&small, 9.0f);
	small.s.n_moments = NM - 1;
	CHECK(ckpt_read_file(file, &meta, &small.s, err) == -1 && strstr(err, "this rank needs"), "sizes: '%s'", err);
	struct st fresh;
	st_init(&fresh, 9.0f);
	CHECK(st_equal(&c, &fresh), "refused loads changed the state");

	/* damage: in the parameters, in the header's world field (offset 16), in the plan JSON
	 * (offset 80 + 2): each is a checksum mismatch, never "another plan" or "other world" */
	long at[3] = {200, 16, 82};
	for (int k = 0; k < 3; k++) {
		flip_byte(file, at[k]);
		CHECK(ckpt_read_file(file, &meta, &c.s, err) == -1 && strstr(err, "corrupt (checksum mismatch)"),
		      "byte %ld changed: '%s'", at[k], err);
		flip_byte(file, at[k]);
	}
	CHECK(st_equal(&c, &fresh), "a corrupt file changed the state");
	CHECK(ckpt_read_file(file, &meta, &c.s, err) == 0, "restored file: %s", err);
	FILE *f = fopen(file, "r+b");
	if (f) {
		CHECK(ftruncate(fileno(f), 150) == 0, "truncate");
		fclose(f);
	}
	CHECK(ckpt_read_file(file, &meta, &c.s, err) == -1 && strstr(err, "is truncated (150 bytes, its header describes"),
	      "truncated: '%s'", err);
	CHECK(ckpt_write_file("/proc/no/such/dir/x.ckpt", &meta, &a.s, err) == -1 && strstr(err, "cannot create"),
	      "unwritable: '%s'", err);
}

/* save directories by hand: serial 1 committed, 2 without COMMIT (a failed save), 3 with a
 * COMMIT naming another step (not ours), 4 committed */
static void make_save(const char *d, int serial, int step, const char *commit_text)
{
	char p[400];
	snprintf(p, sizeof(p), "%s/save-%06d-step-%08d", d, serial, step);
	CHECK(mkdir(p, 0777) == 0, "mkdir %s", p);
	snprintf(p, sizeof(p), "%s/save-%06d-step-%08d/rank-00000.ckpt", d, serial, step);
	FILE *f = fopen(p, "w");
	if (f) fclose(f);
	if (!commit_text) return;
	snprintf(p, sizeof(p), "%s/save-%06d-step-%08d/COMMIT", d, serial, step);
	f = fopen(p, "w");
	if (f) { fputs(commit_text, f); fclose(f); }
}

static void test_save_dirs(void)
{
	char err[ERR_LEN], d[256], got[512];
	long step = -1;
	path_in(d, sizeof(d), "saves");
	CHECK(mkdir(d, 0777) == 0, "mkdir");
	CHECK(ckpt_newest(d, got, sizeof(got), &step, err) == -1 && strstr(err, "no committed checkpoint in"), "empty: '%s'", err);
	make_save(d, 1, 10, "scaleplan checkpoint commit\nserial 1\nstep 10\nworld 2\n");
	make_save(d, 2, 20, NULL);
	make_save(d, 3, 30, "scaleplan checkpoint commit\nserial 3\nstep 31\nworld 2\n");
	CHECK(ckpt_newest(d, got, sizeof(got), &step, err) == 0 && step == 10 && strstr(got, "/save-000001-step-00000010"),
	      "newest committed is serial 1: %s step %ld (%s)", got, step, err);
	make_save(d, 4, 5, "scaleplan checkpoint commit\nserial 4\nstep 5\nworld 2\n");
	CHECK(ckpt_newest(d, got, sizeof(got), &step, err) == 0 && step == 5, "the highest serial wins, not the highest step");
	CHECK(ckpt_clean(d, err) == 0, "clean: %s", err);
	CHECK(count_entries(d) == 2, "clean keeps the two committed saves, removes the other two (%d left)", count_entries(d));
	CHECK(ckpt_newest(d, got, sizeof(got), &step, err) == 0 && step == 5, "still serial 4 after cleaning");
	path_in(d, sizeof(d), "no-such-dir");
	CHECK(ckpt_clean(d, err) == 0, "cleaning a missing directory is fine: %s", err);
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
	test_save_dirs();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
	return test_summary("test_data_ckpt");
}
