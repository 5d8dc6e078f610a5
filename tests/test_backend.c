/* test_backend — the compute backend table (kernels/backend.h) on the host: the choice of row
 * for `scaleplan run --backend` over fake GPU counts, the tracking allocator's counters against
 * sizes summed here, the CPU row against direct calls of the reference kernels (bit for bit),
 * and the runtime's buffers all coming from the backend (the model's four flat buffers and
 * the activation slabs, counted from the model's own tables), the activation layout of a
 * 2-byte (bf16) row recomputed from the table's specs, and the parallel runtime's entries
 * (kernels/cpu_shard.h): the vocabulary-parallel loss over two shards against
 * crossentropy_forward/backward over the whole vocabulary, the strided row copy and the fill;
 * and the same entries at a larger shape on poisoned outputs against the reference kernels on
 * the row's own (rounded) inputs, on the CPU row and, where a CUDA row is linked in and a GPU
 * is visible, on each CUDA row (else the test says the GPU part was skipped). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/backend.h"
#include "runtime/model.h"
#include "tests/test.h"
#include "tests/tiny.h"

static void test_choose(void)
{
	char err[256];
	/* (want, have_cuda, gpus) -> row; the rule of kern_choose's comment */
	static const struct { enum kern_want w; int have, gpus; const char *want; } cases[] = {
		{KERN_WANT_DEFAULT, 0, 0, "cpu"}, {KERN_WANT_DEFAULT, 0, 4, "cpu"}, {KERN_WANT_DEFAULT, 1, 0, "cpu"},
		{KERN_WANT_DEFAULT, 1, 1, "cuda"}, {KERN_WANT_DEFAULT, 1, 8, "cuda"}, {KERN_WANT_CPU, 1, 8, "cpu"},
		{KERN_WANT_CPU, 0, 0, "cpu"}, {KERN_WANT_CUDA, 1, 2, "cuda"}, {KERN_WANT_CUDA, 0, 2, NULL},
		{KERN_WANT_CUDA, 1, 0, NULL}, {KERN_WANT_CUDA, 0, 0, NULL},
		{KERN_WANT_CUDA_FP32, 1, 1, "cuda-fp32"}, {KERN_WANT_CUDA_FP32, 1, 0, NULL}, {KERN_WANT_CUDA_FP32, 0, 3, NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		err[0] = 0;
		const char *got = kern_choose(cases[i].w, cases[i].have, cases[i].gpus, err);
		int same = cases[i].want ? got && !strcmp(got, cases[i].want) : got == NULL;
		CHECK(same, "choose case %zu: got %s, want %s", i, got ? got : "NULL", cases[i].want ? cases[i].want : "NULL");
		const char *flag = cases[i].w == KERN_WANT_CUDA_FP32 ? "--backend cuda-fp32:" : "--backend cuda:";
		if (!cases[i].want)
			CHECK(strstr(err, flag) && strchr(err, '\n') == NULL, "case %zu: one line naming %s '%s'", i, flag, err);
	}
	kern_choose(KERN_WANT_CUDA, 0, 4, err);
	CHECK(strstr(err, "make CUDA=1") != NULL, "no CUDA build: the message says how to build it: '%s'", err);
	kern_choose(KERN_WANT_CUDA, 1, 0, err);
	CHECK(strstr(err, "no GPU") != NULL, "no GPU: the message says so: '%s'", err);
	CHECK(kern_row("cpu") == &kern_cpu_ops, "kern_row(cpu) is the CPU row");
	CHECK(kern_row("gpu") == NULL && kern_row(NULL) == NULL, "unknown rows are NULL");
	CHECK((kern_row("cuda") != NULL) == (kern_cuda_row() != NULL), "the cuda row exists exactly when linked in");
	CHECK((kern_row("cuda-fp32") != NULL) == (kern_cuda_row() != NULL), "cuda-fp32 comes with the cuda row");
	if (kern_cuda_row()) {
		CHECK(kern_row("cuda")->act_bytes == 2 && kern_row("cuda")->cast_weights, "cuda is the bf16 row");
		CHECK(kern_row("cuda-fp32")->act_bytes == 4 && !kern_row("cuda-fp32")->cast_weights, "cuda-fp32 is fp32");
	}
	CHECK(kern_row("cuda-") == NULL && kern_row("cpu ") == NULL, "a name matches exactly");
}

static void test_tracking(void)
{
	char err[256];
	struct kern *k;
	CHECK(kern_create(&k, &kern_cpu_ops, 0, err) == 0, "create: %s", err);
	if (!k) return;
	const size_t sz[5] = {1000, 64, 4096, 3, 100000};
	void *p[5];
	size_t in_use = 0, peak = 0;
	for (int i = 0; i < 5; i++) {
		p[i] = kern_alloc(k, sz[i]);
		in_use += sz[i];
		peak = in_use > peak ? in_use : peak;
	}
	CHECK(k->bytes_in_use == in_use && k->peak_bytes == peak, "after 5 allocations: %zu/%zu, want %zu/%zu",
	      k->bytes_in_use, k->peak_bytes, in_use, peak);
	kern_free(k, p[4]);
	kern_free(k, p[1]);
	in_use -= sz[4] + sz[1];
	CHECK(k->bytes_in_use == in_use && k->peak_bytes == peak, "frees lower bytes in use, not the peak: %zu/%zu",
	      k->bytes_in_use, k->peak_bytes);
	int foreign;
	kern_free(k, &foreign);
	kern_free(k, NULL);
	CHECK(k->bytes_in_use == in_use, "a foreign pointer and NULL change nothing: %zu", k->bytes_in_use);
	void *big = kern_zalloc(k, 200000);
	in_use += 200000;
	peak = in_use > peak ? in_use : peak;
	int zero = 1;
	for (size_t i = 0; big && i < 200000; i++) zero &= ((unsigned char *)big)[i] == 0;
	CHECK(big && zero, "kern_zalloc zeroes");
	CHECK(k->bytes_in_use == in_use && k->peak_bytes == peak, "a larger block raises the peak: %zu/%zu, want %zu/%zu",
	      k->bytes_in_use, k->peak_bytes, in_use, peak);
	void *none = kern_alloc(k, 0);
	CHECK(none && k->bytes_in_use == in_use + 1, "a zero-byte request takes one byte");
	kern_free(k, none);
	kern_free(k, big);
	in_use -= 200000;
	kern_reset_peak(k);
	CHECK(k->peak_bytes == in_use, "reset: the peak starts again at the bytes in use (%zu, want %zu)", k->peak_bytes,
	      in_use);
	void *again = kern_alloc(k, 10);
	kern_free(k, again);
	CHECK(k->peak_bytes == in_use + 10, "the new peak follows later allocations: %zu", k->peak_bytes);
	kern_free(k, p[0]);
	kern_free(k, p[2]);
	kern_free(k, p[3]);
	CHECK(k->bytes_in_use == 0 && k->nblocks == 0, "everything freed: %zu bytes in %zu blocks", k->bytes_in_use,
	      k->nblocks);
	kern_destroy(k);
	kern_destroy(NULL);
}

static void fill(float *x, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		x[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 2.0f;
	}
}

/* The CPU row's entries against the reference kernels they wrap. */
static void test_cpu_row(void)
{
	const struct kern_ops *o = &kern_cpu_ops;
	enum { N = 24, IC = 16, OC = 12, B = 2, T = 12, H = 4, HKV = 2, D = 8, QKV = (H + 2 * HKV) * D };
	float x[N * IC], w[OC * IC], bias[OC], y1[N * OC], y2[N * OC];
	fill(x, N * IC, 1);
	fill(w, OC * IC, 2);
	fill(bias, OC, 3);
	linear_forward(y1, x, w, bias, N, IC, OC);
	o->linear_forward(NULL, y2, x, w, bias, N, IC, OC);
	CHECK(!memcmp(y1, y2, sizeof y1), "linear_forward through the table");
	float g[IC], r1[N], r2[N], n1[N * IC], n2[N * IC];
	fill(g, IC, 4);
	rmsnorm_forward(n1, r1, x, g, N, IC, 1e-5f);
	o->rmsnorm_forward(NULL, n2, r2, x, g, N, IC, 1e-5f);
	CHECK(!memcmp(n1, n2, sizeof n1) && !memcmp(r1, r2, sizeof r1), "rmsnorm_forward through the table");
	float qkv[B * T * QKV], a1[B * T * H * D], a2[B * T * H * D], l1[B * H * T], l2[B * H * T];
	size_t ns = attention_scratch_floats(B, T, H);
	float *s1 = malloc(sizeof(float) * ns), *s2 = malloc(sizeof(float) * ns);
	fill(qkv, B * T * QKV, 5);
	attention_forward(a1, l1, qkv, s1, B, T, H, HKV, D);
	o->attention_forward(NULL, a2, l2, qkv, s2, B, T, H, HKV, D);
	CHECK(!memcmp(a1, a2, sizeof a1) && !memcmp(l1, l2, sizeof l1), "attention_forward through the table");
	free(s1);
	free(s2);
	float p1[N * IC], p2[N * IC], m1[N * IC] = {0}, m2[N * IC] = {0}, v1[N * IC] = {0}, v2[N * IC] = {0};
	memcpy(p1, x, sizeof p1);
	memcpy(p2, x, sizeof p2);
	adamw_step(p1, n1, m1, v1, N * IC, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1, 0.5f);
	o->adamw_step(NULL, p2, n1, m2, v2, N * IC, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1, 0.5f);
	CHECK(!memcmp(p1, p2, sizeof p1) && !memcmp(m1, m2, sizeof m1) && !memcmp(v1, v2, sizeof v1),
	      "adamw_step through the table");
	/* the double sum, independently */
	double want = 0.0;
	for (int i = 0; i < N * IC; i++) want += (double)x[i] * x[i];
	double acc = 0.0;
	o->grad_sumsq_acc(NULL, &acc, x, 100);
	o->grad_sumsq_acc(NULL, &acc, x + 100, N * IC - 100);
	CHECK(acc == want, "grad_sumsq_acc in two pieces is the one double sum: %.17g vs %.17g", acc, want);
	float fs = 0.0f;
	grad_sumsq(&fs, x, N * IC);
	CHECK(fs == 0.0f + (float)want, "grad_sumsq's float is the rounded double sum");
	float y[8] = {1, 2, 3, 4, 5, 6, 7, 8}, z[8] = {8, 7, 6, 5, 4, 3, 2, 1};
	o->add(NULL, y, z, 8);
	int all9 = 1;
	for (int i = 0; i < 8; i++) all9 &= y[i] == 9.0f;
	CHECK(all9, "add: y += x");
	o->grad_div(NULL, y, 8, 3.0f);
	CHECK(y[0] == 9.0f / 3.0f && y[7] == 3.0f, "grad_div divides");
	o->grad_add_div(NULL, y, z, 8, 2.0f);
	CHECK(y[0] == 3.0f + 8.0f / 2.0f && y[7] == 3.0f + 0.5f, "grad_add_div: y += x / d");
	/* MoE statistics: 3 tokens, 3 experts, top-2 */
	const float probs[9] = {0.5f, 0.25f, 0.25f, 0.125f, 0.75f, 0.125f, 0.0f, 0.5f, 0.5f};
	const int topi[6] = {0, 1, 1, 2, 1, 2};
	float cnt[3], psum[3];
	o->moe_stats(NULL, cnt, psum, probs, topi, 3, 3, 2);
	CHECK(cnt[0] == 1 && cnt[1] == 3 && cnt[2] == 2, "moe_stats counts: %g %g %g", cnt[0], cnt[1], cnt[2]);
	CHECK(psum[0] == 0.625f && psum[1] == 1.5f && psum[2] == 0.875f, "moe_stats probability sums");
}

static double rel_err(const float *got, const float *want, size_t n)
{
	double e = 0.0, m = 1e-30;
	for (size_t i = 0; i < n; i++) {
		e = fmax(e, fabs((double)got[i] - want[i]));
		m = fmax(m, fabs((double)want[i]));
	}
	return e / m;
}

/* The vocabulary-parallel loss composed over TP shards as runtime/tp.c composes it (maxima
 * gathered, sums added between the steps) against the whole-vocabulary reference. */
static void test_ce_shards(void)
{
	const struct kern_ops *o = &kern_cpu_ops;
	enum { N = 7, V = 10, TP = 2, VL = V / TP };
	float z[N * V], shard[TP][N * VL], maxima[TP * N], sums[TP][2 * N], tot[2 * N];
	float loss[N], lse[N], rl[N], rlse[N], dref[N * V], d[TP][N * VL];
	const int tgt[N] = {0, 4, 5, 9, -1, 7, 2};
	fill(z, N * V, 11);
	for (int i = 0; i < N; i++) z[i * V + i % V] += 3.0f;   /* one large logit per row */
	for (int q = 0; q < TP; q++)
		for (int i = 0; i < N; i++) memcpy(shard[q] + i * VL, z + i * V + q * VL, sizeof(float) * VL);
	for (int q = 0; q < TP; q++) o->ce_shard_max(NULL, maxima + q * N, shard[q], N, VL);
	for (int q = 0; q < TP; q++) {
		float mx[TP * N];
		memcpy(mx, maxima, sizeof mx);   /* each rank reduces its own copy of the gathered maxima */
		o->ce_shard_sums(NULL, sums[q], mx, shard[q], tgt, N, VL, q * VL, TP);
		if (q == TP - 1) memcpy(maxima, mx, sizeof mx);
	}
	for (int i = 0; i < 2 * N; i++) tot[i] = sums[0][i] + sums[1][i];
	o->ce_shard_loss(NULL, loss, lse, maxima, tot, tgt, N);
	crossentropy_forward(rl, rlse, z, tgt, N, V);
	CHECK(rel_err(loss, rl, N) <= 1e-6 && rel_err(lse, rlse, N) <= 1e-6,
	      "ce_shard_*: the loss over %d shards is crossentropy_forward's (loss %.3g, lse %.3g)", TP,
	      rel_err(loss, rl, N), rel_err(lse, rlse, N));
	CHECK(loss[4] == 0.0f && lse[4] == 0.0f, "ce_shard_loss: an ignored target (-1) gives loss 0 and lse 0");
	crossentropy_backward(dref, z, rlse, tgt, 0.5f, N, V);
	double e = 0.0;
	for (int q = 0; q < TP; q++) {
		memcpy(d[q], shard[q], sizeof d[q]);   /* in place, as the head's backward runs it */
		o->ce_shard_backward(NULL, d[q], d[q], lse, tgt, 0.5f, N, VL, q * VL);
		for (int i = 0; i < N; i++)
			for (int v = 0; v < VL; v++) {
				const double w = dref[i * V + q * VL + v];
				e = fmax(e, fabs(d[q][i * VL + v] - w));
			}
	}
	CHECK(e <= 1e-7, "ce_shard_backward in place on %d shards is crossentropy_backward's (max error %.3g)", TP, e);
}

/* act_copy_rows moves width elements of each row between two strides; fill sets fp32 values. */
static void test_rows_and_fill(void)
{
	const struct kern_ops *o = &kern_cpu_ops;
	float src[5 * 7], dst[5 * 4];
	for (int i = 0; i < 5 * 7; i++) src[i] = (float)i;
	o->fill(NULL, dst, 5 * 4, -1.5f);
	int filled = 1;
	for (int i = 0; i < 5 * 4; i++) filled &= dst[i] == -1.5f;
	CHECK(filled, "fill sets every element");
	o->act_copy_rows(NULL, dst, 4, src + 2, 7, 5, 3);
	int ok = 1;
	for (int r = 0; r < 5; r++) {
		for (int c = 0; c < 3; c++) ok &= dst[r * 4 + c] == (float)(r * 7 + 2 + c);
		ok &= dst[r * 4 + 3] == -1.5f;   /* past the width: untouched */
	}
	CHECK(ok, "act_copy_rows: dst[r*4 + c] = src[r*7 + 2 + c] for c < 3, the rest untouched");
}

/* ---- the parallel runtime's entries on the CUDA rows (a GPU only) ------------------------ */

/* n activation elements of k's row from fp32 host values (rounded by the row's cast) */
static void act_up(struct kern *k, float *dev, const float *host, size_t n)
{
	if (k->ops->act_bytes == sizeof(float)) { kern_to_dev(k, dev, host, sizeof(float) * n); return; }
	float *stage = kern_alloc(k, sizeof(float) * n);
	kern_to_dev(k, stage, host, sizeof(float) * n);
	k->ops->cast_weights(k->state, dev, stage, n);
	kern_free(k, stage);
}

/* n activation elements of k's row widened to fp32 on the host (bf16 is fp32's top half) */
static void act_down(struct kern *k, float *host, const float *dev, size_t n)
{
	if (k->ops->act_bytes == sizeof(float)) { kern_to_host(k, host, dev, sizeof(float) * n); return; }
	uint16_t *h = malloc(sizeof(uint16_t) * n);
	kern_to_host(k, h, dev, sizeof(uint16_t) * n);
	for (size_t i = 0; i < n; i++) {
		const uint32_t bits = (uint32_t)h[i] << 16;
		memcpy(host + i, &bits, sizeof bits);
	}
	free(h);
}

static void poison(struct kern *k, void *dev, size_t bytes)
{
	unsigned char *h = malloc(bytes);
	memset(h, 0xff, bytes);   /* NaN in fp32 and bf16 */
	kern_to_dev(k, dev, h, bytes);
	free(h);
}

/* The loss over two vocabulary shards on the row (maxima gathered and sums added on the host,
 * as the collectives would) against crossentropy_forward/backward over the row's rounded
 * logits; the row copy and the fill exactly. */
static void test_shards_on(const struct kern_ops *row)
{
	enum { N = 33, V = 1000, TP = 2, VL = V / TP };
	char err[256] = "";
	struct kern *k = NULL;
	if (kern_create(&k, row, 0, err)) { CHECK(0, "%s: kern_create: %s", row->name, err); return; }
	const int ab = (int)row->act_bytes;
	float *z = malloc(sizeof(float) * N * V), *zr = malloc(sizeof(float) * N * V), *sh = malloc(sizeof(float) * N * VL);
	float *dref = malloc(sizeof(float) * N * V), *dgot = malloc(sizeof(float) * N * VL);
	int tgt[N];
	fill(z, (size_t)N * V, 21);
	for (int i = 0; i < N; i++) {
		z[(size_t)i * V + (size_t)(i * 37) % V] += 4.0f;
		tgt[i] = i == 5 ? -1 : (i * 131) % V;
	}
	float *dz[TP], *dmx = kern_alloc(k, sizeof(float) * TP * N), *dmxq = kern_alloc(k, sizeof(float) * TP * N);
	float *dsum = kern_alloc(k, sizeof(float) * 2 * N), *dloss = kern_alloc(k, sizeof(float) * N);
	float *dlse = kern_alloc(k, sizeof(float) * N);
	int *dt = kern_alloc(k, sizeof(int) * N);
	kern_to_dev(k, dt, tgt, sizeof tgt);
	for (int q = 0; q < TP; q++) {
		dz[q] = kern_alloc(k, kern_act_size(k, (size_t)N * VL));
		for (int i = 0; i < N; i++) memcpy(sh + (size_t)i * VL, z + (size_t)i * V + q * VL, sizeof(float) * VL);
		act_up(k, dz[q], sh, (size_t)N * VL);
		act_down(k, sh, dz[q], (size_t)N * VL);   /* the row's rounded logits: the reference's input */
		for (int i = 0; i < N; i++) memcpy(zr + (size_t)i * V + q * VL, sh + (size_t)i * VL, sizeof(float) * VL);
	}
	poison(k, dmx, sizeof(float) * TP * N);
	for (int q = 0; q < TP; q++) row->ce_shard_max(k->state, dmx + q * N, dz[q], N, VL);
	float tot[2 * N] = {0}, part[2 * N], loss[N], lse[N], rl[N], rlse[N];
	for (int q = 0; q < TP; q++) {
		kern_copy_dev(k, dmxq, dmx, sizeof(float) * TP * N);
		poison(k, dsum, sizeof(float) * 2 * N);
		row->ce_shard_sums(k->state, dsum, dmxq, dz[q], dt, N, VL, q * VL, TP);
		kern_to_host(k, part, dsum, sizeof part);
		for (int i = 0; i < 2 * N; i++) tot[i] += part[i];
	}
	kern_to_dev(k, dsum, tot, sizeof tot);
	poison(k, dloss, sizeof(float) * N);
	poison(k, dlse, sizeof(float) * N);
	row->ce_shard_loss(k->state, dloss, dlse, dmxq, dsum, dt, N);
	kern_to_host(k, loss, dloss, sizeof loss);
	kern_to_host(k, lse, dlse, sizeof lse);
	crossentropy_forward(rl, rlse, zr, tgt, N, V);
	CHECK(rel_err(loss, rl, N) <= 1e-5 && rel_err(lse, rlse, N) <= 1e-5,
	      "%s: ce_shard_* over %d shards is crossentropy_forward's on the row's logits (loss %.3g, lse %.3g)",
	      row->name, TP, rel_err(loss, rl, N), rel_err(lse, rlse, N));
	crossentropy_backward(dref, zr, rlse, tgt, 0.5f, N, V);
	double e = 0.0, mx = 0.0;
	for (int q = 0; q < TP; q++) {
		row->ce_shard_backward(k->state, dz[q], dz[q], dlse, dt, 0.5f, N, VL, q * VL);   /* in place */
		act_down(k, dgot, dz[q], (size_t)N * VL);
		for (int i = 0; i < N; i++)
			for (int v = 0; v < VL; v++) {
				const double w = dref[(size_t)i * V + q * VL + v];
				e = fmax(e, fabs(dgot[(size_t)i * VL + v] - w));
				mx = fmax(mx, fabs(w));
			}
	}
	/* fp32: the reference's own rounding; bf16: one rounding of the output, u = 2^-8 */
	const double bound = ab == 2 ? mx / 256.0 + 1e-6 : 1e-6;
	CHECK(e <= bound, "%s: ce_shard_backward in place is crossentropy_backward's (max error %.3g, bound %.3g)",
	      row->name, e, bound);
	/* rows 2.. of a (N, VL) block, columns 3..3+50, into a (N, 64) block */
	float *dc = kern_alloc(k, kern_act_size(k, (size_t)N * 64)), *got = malloc(sizeof(float) * N * 64);
	float *src = malloc(sizeof(float) * N * VL);
	act_down(k, src, dz[0], (size_t)N * VL);
	poison(k, dc, kern_act_size(k, (size_t)N * 64));
	row->act_copy_rows(k->state, dc, 64, kern_act_at(k, dz[0], 3), VL, N, 50);
	act_down(k, got, dc, (size_t)N * 64);
	int same = 1;
	for (int i = 0; i < N; i++)
		for (int c = 0; c < 50; c++) same &= !memcmp(got + i * 64 + c, src + (size_t)i * VL + 3 + c, sizeof(float));
	CHECK(same, "%s: act_copy_rows copies each row's 50 elements exactly", row->name);
	row->fill(k->state, dloss, N, -INFINITY);
	kern_to_host(k, loss, dloss, sizeof loss);
	int filled = 1;
	for (int i = 0; i < N; i++) filled &= isinf(loss[i]) && loss[i] < 0;
	CHECK(filled, "%s: fill writes -inf everywhere", row->name);
	CHECK(row->sync(k->state, err) == 0, "%s: sync after the shard entries: %s", row->name, err);
	for (int q = 0; q < TP; q++) kern_free(k, dz[q]);
	kern_free(k, dmx); kern_free(k, dmxq); kern_free(k, dsum); kern_free(k, dloss); kern_free(k, dlse);
	kern_free(k, dt); kern_free(k, dc);
	kern_destroy(k);
	free(z); free(zr); free(sh); free(dref); free(dgot); free(got); free(src);
}

static void test_shards_on_rows(void)
{
	test_shards_on(&kern_cpu_ops);   /* the check itself, on the reference row */
	const char *names[] = {"cuda-fp32", "cuda"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		const struct kern_ops *row = kern_row(names[i]);
		if (!row || !row->device_count || row->device_count() < 1) {
			printf("backend: GPU checks of %s's shard entries skipped (%s)\n", names[i],
			       row ? "no GPU visible" : "no CUDA row in this build");
			continue;
		}
		test_shards_on(row);
	}
}

/* Every flat buffer of the model and every activation slab is the backend's: its bytes in use
 * are 4 buffers x n_params floats, then the slabs of the activation table on top, then 0. */
static void test_runtime_allocations(void)
{
	char err[256];
	struct kern *k;
	if (kern_create(&k, &kern_cpu_ops, 0, err)) { CHECK(0, "%s", err); return; }
	struct model cfg = tiny_dense("tiny", 2);
	struct llama_par par;
	llama_par_default(&par);
	par.backend = k;
	struct llama *m;
	if (llama_create_par(&m, &cfg, NULL, &par, err)) { CHECK(0, "%s", err); kern_destroy(k); return; }
	const size_t model_bytes = 4 * sizeof(float) * m->n_params;
	CHECK(k->bytes_in_use == model_bytes, "model: %zu bytes in use, want 4 x 4 x %zu = %zu", k->bytes_in_use,
	      m->n_params, model_bytes);
	struct llama_acts *a;
	if (llama_acts_create(&a, m, 2, 16, 0, err)) {
		CHECK(0, "%s", err);
	} else {
		size_t want = model_bytes + a->slab_bytes + sizeof(int) * a->n_ints;
		CHECK(k->bytes_in_use == want, "activations: %zu bytes in use, want %zu", k->bytes_in_use, want);
		llama_acts_destroy(a);
	}
	CHECK(k->bytes_in_use == model_bytes, "activations freed back to the model's %zu", model_bytes);
	llama_destroy(m);
	CHECK(k->bytes_in_use == 0 && k->peak_bytes > model_bytes, "model freed: %zu in use, peak %zu", k->bytes_in_use,
	      k->peak_bytes);
	kern_destroy(k);
}

/* A host-visible stand-in for a bf16 row's compute copy: the upper 16 bits of each float
 * (truncation, so the test can recompute it with a shift). */
static void cast_hi16(void *st, void *dst, const float *src, size_t n)
{
	(void)st;
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &src[i], sizeof u);
		((uint16_t *)dst)[i] = (uint16_t)(u >> 16);
	}
}

/* The bytes of the tensors of a's table laid out on a row of ab-byte activations, recomputed
 * from the specs (fp32 statistics 4 bytes, ints in their own slab), each tensor rounded up to
 * 64 bytes; and every tensor pointer inside the slab, disjoint from the others. */
static size_t layout_bytes(const struct llama_acts *a, size_t ab, const char *what)
{
	size_t total = 0, prev_end = 0;
	for (int i = 0; i < a->n_specs; i++) {
		const struct act_spec *sp = &a->specs[i];
		if (sp->is_int) continue;
		const size_t bytes = sp->numel * (sp->is_f32 ? 4 : ab), at = sp->offset * ab;
		CHECK(at >= prev_end && at + bytes <= a->slab_bytes, "%s: %s at byte %zu (+%zu) overlaps or leaves the slab "
		      "(%zu)", what, sp->name, at, bytes, a->slab_bytes);
		prev_end = at + bytes;
		total += (bytes + 63) / 64 * 64;
	}
	return total;
}

/* Activations of a 2-byte row are packed: every activation tensor takes 2 bytes per element and
 * the fp32 statistics 4, at the offsets kern_act_at gives; a 4-byte row's layout is the fp32 one;
 * a 3-byte row is refused by name. The compute copy of the weights is made and filled. */
static void test_act_layout(void)
{
	char err[256] = "";
	size_t bytes[2] = {0, 0}, want[2] = {0, 0};
	for (int h = 0; h < 2; h++) {
		struct kern_ops row = kern_cpu_ops;
		row.name = h ? "half" : "cpu";
		row.act_bytes = h ? 2 : 4;
		row.cast_weights = h ? cast_hi16 : NULL;
		struct kern *k;
		if (kern_create(&k, &row, 0, err)) { CHECK(0, "%s", err); return; }
		struct model cfg = tiny_dense("tiny", 2);
		cfg.moe_experts = 4; /* layer 1 MoE: its router, probability and permutation tensors too */
		cfg.moe_topk = 2;
		cfg.moe_ffn_hidden = 16;
		cfg.moe_shared_experts = 1;
		cfg.moe_dense_layers = 1;
		struct llama_par par;
		llama_par_default(&par);
		par.backend = k;
		struct llama *m;
		if (llama_create_par(&m, &cfg, NULL, &par, err)) { CHECK(0, "%s", err); kern_destroy(k); return; }
		CHECK((m->wc != NULL) == h, "%s: a compute copy exactly when the row casts", row.name);
		if (h && m->wc) {
			size_t bad = 0;
			for (size_t i = 0; i < m->n_params; i++) {
				uint32_t u;
				memcpy(&u, &m->params[i], sizeof u);
				bad += ((const uint16_t *)m->wc)[i] != (uint16_t)(u >> 16);
			}
			CHECK(bad == 0, "half: %zu of %zu compute weights are not the cast of the master", bad, m->n_params);
			CHECK((char *)llama_w(m, 7) == (char *)m->wc + 14, "half: weight 7 at byte 14 of the compute copy");
			CHECK((char *)kern_act_at(k, m->params, 5) == (char *)m->params + 10, "half: kern_act_at counts 2 bytes");
		} else {
			CHECK(llama_w(m, 7) == m->params + 7, "cpu: the kernels read the master weights");
		}
		struct llama_acts *a = NULL;
		if (llama_acts_create(&a, m, 2, 16, 1, err)) {
			CHECK(0, "%s: %s", row.name, err);
		} else {
			want[h] = layout_bytes(a, row.act_bytes, row.name);
			bytes[h] = a->slab_bytes;
			CHECK(bytes[h] == want[h], "%s: slab of %zu bytes, the table's tensors need %zu", row.name, bytes[h],
			      want[h]);
			const struct act_spec *res = NULL;
			for (int i = 0; i < a->n_specs; i++)
				if (!strcmp(a->specs[i].name, "res")) res = &a->specs[i];
			CHECK(res && (char *)a->res == (char *)a->slab + res->offset * row.act_bytes &&
			      (char *)kern_act_at(k, a->res, 3) == (char *)a->res + 3 * row.act_bytes,
			      "%s: res sits at its spec's offset in activation elements", row.name);
			llama_acts_destroy(a);
		}
		llama_destroy(m);
		kern_destroy(k);
	}
	CHECK(bytes[1] < bytes[0] && bytes[1] * 3 > bytes[0], "bf16 slab %zu bytes vs fp32 %zu: about half", bytes[1],
	      bytes[0]);
	struct kern_ops odd = kern_cpu_ops;
	odd.name = "odd";
	odd.act_bytes = 3;
	struct kern *k;
	if (kern_create(&k, &odd, 0, err)) { CHECK(0, "%s", err); return; }
	struct model cfg = tiny_dense("tiny", 2);
	struct llama_par par;
	llama_par_default(&par);
	par.backend = k;
	struct llama *m;
	if (llama_create_par(&m, &cfg, NULL, &par, err)) { CHECK(0, "%s", err); kern_destroy(k); return; }
	struct llama_acts *a = NULL;
	int rc = llama_acts_create(&a, m, 2, 16, 0, err);
	CHECK(rc == -1 && a == NULL && strstr(err, "odd") && strstr(err, "3-byte"), "3-byte activations refused: '%s'", err);
	llama_destroy(m);
	kern_destroy(k);
}

int main(void)
{
	test_choose();
	test_tracking();
	test_cpu_row();
	test_runtime_allocations();
	test_act_layout();
	test_ce_shards();
	test_rows_and_fill();
	test_shards_on_rows();
	return test_summary("backend");
}
