/* bf16_check — what the bf16 GPU checks share (tests/gpu/test_bf16_cuda.cu and
 * tests/gpu/test_gemm_attention_cuda.cu): host bf16 rounding, random data, device buffers that
 * can be poisoned, and the comparison that prints one line per check.
 *
 * Tolerances are multiples of bf16's unit roundoff u = 2^-8 (8 significant bits, round to
 * nearest) applied to the largest reference value: an error is |gpu - cpu| / max |cpu|. The
 * CPU reference runs in fp32 on the same bf16-rounded inputs, so a bf16 output differs from it
 * by the output's own rounding (<= u relative) plus fp32 noise; each check states its growth
 * factor (TOL_BF16 = 2u for one rounding, more where bf16 intermediates are rounded inside the
 * kernel, e.g. attention's probabilities). fp32 outputs are held to TOL_F32 = 2^-12, far above
 * fp32 reordering noise and far below a single bf16 rounding, so an accidental bf16 round trip
 * fails. Poisoned outputs (all bits set: NaN in bf16 and fp32, -1 in int) fail any comparison,
 * so an element a kernel forgot to write is caught. */
#ifndef SCALEPLAN_TESTS_GPU_BF16_CHECK_H
#define SCALEPLAN_TESTS_GPU_BF16_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <vector>
#include <cuda_runtime.h>
#include "kernels/cuda_bf16.h"

#define U_BF16 (1.0 / 256.0)
#define TOL_BF16 (2 * U_BF16)
#define TOL_F32 (1.0 / 4096.0)

typedef std::vector<float> vec;
typedef std::vector<int> ivec;

struct check_state {
	int passed, failed;
	uint64_t rng;
};

static inline float frand(check_state *cs)
{
	cs->rng ^= cs->rng << 13;
	cs->rng ^= cs->rng >> 7;
	cs->rng ^= cs->rng << 17;
	return (float)((double)(cs->rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

/* round to nearest even in bf16, as __float2bfloat16_rn (finite inputs) */
static inline uint16_t bf_bits(float x)
{
	uint32_t u;
	memcpy(&u, &x, 4);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

static inline float bf_val(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float x;
	memcpy(&x, &u, 4);
	return x;
}

static inline float bf(float x) { return bf_val(bf_bits(x)); }

/* random values in [-s, s], already representable in bf16 */
static inline vec rnd_bf(check_state *cs, size_t n, float s = 1.0f)
{
	vec v(n);
	for (auto &x : v) x = bf(frand(cs) * s);
	return v;
}

static inline vec rnd_f(check_state *cs, size_t n, float s = 1.0f)
{
	vec v(n);
	for (auto &x : v) x = frand(cs) * s;
	return v;
}

/* A device buffer that frees itself. Element type T on the device; bf16 buffers are loaded from
 * and read back as float vectors. */
template <typename T> struct dbuf {
	T *p = nullptr;
	size_t n = 0;
	explicit dbuf(size_t count) : n(count) { cudaMalloc(&p, sizeof(T) * (n ? n : 1)); poison(); }
	~dbuf() { cudaFree(p); }
	void poison() { cudaMemset(p, 0xff, sizeof(T) * (n ? n : 1)); }
	dbuf(const dbuf &) = delete;
	dbuf &operator=(const dbuf &) = delete;
};

static inline void put(dbuf<float> &d, const vec &h) { cudaMemcpy(d.p, h.data(), 4 * h.size(), cudaMemcpyHostToDevice); }
static inline void put(dbuf<int> &d, const ivec &h) { cudaMemcpy(d.p, h.data(), 4 * h.size(), cudaMemcpyHostToDevice); }
static inline void put(dbuf<bf16_t> &d, const vec &h)
{
	std::vector<uint16_t> b(h.size());
	for (size_t i = 0; i < h.size(); i++) b[i] = bf_bits(h[i]);
	cudaMemcpy(d.p, b.data(), 2 * b.size(), cudaMemcpyHostToDevice);
}

static inline vec get(const dbuf<float> &d)
{
	vec h(d.n);
	cudaMemcpy(h.data(), d.p, 4 * d.n, cudaMemcpyDeviceToHost);
	return h;
}

static inline ivec get(const dbuf<int> &d)
{
	ivec h(d.n);
	cudaMemcpy(h.data(), d.p, 4 * d.n, cudaMemcpyDeviceToHost);
	return h;
}

static inline vec get(const dbuf<bf16_t> &d)
{
	std::vector<uint16_t> b(d.n);
	cudaMemcpy(b.data(), d.p, 2 * d.n, cudaMemcpyDeviceToHost);
	vec h(d.n);
	for (size_t i = 0; i < d.n; i++) h[i] = bf_val(b[i]);
	return h;
}

static inline void report(check_state *cs, int bad, const char *name, const char *detail)
{
	char err[256] = "";
	if (cudaDeviceSynchronize() != cudaSuccess || cuda_bf16_last_error(err)) {
		bad = 1;
		if (!err[0]) snprintf(err, sizeof err, "cuda: %s", cudaGetErrorString(cudaGetLastError()));
	}
	printf("%-4s %-44s %s%s%s\n", bad ? "FAIL" : "ok", name, detail, err[0] ? "  " : "", err);
	if (bad) cs->failed++;
	else cs->passed++;
}

/* max |ref - got| / max |ref| against tol; NaN anywhere fails */
static inline void compare(check_state *cs, const char *name, const vec &ref, const vec &got, double tol)
{
	double maxerr = 0.0, maxref = 1e-30;
	int nan = ref.size() != got.size();
	for (size_t i = 0; i < ref.size() && i < got.size(); i++) {
		if (isnan(got[i]) || isnan(ref[i])) nan = 1;
		maxerr = fmax(maxerr, fabs((double)ref[i] - got[i]));
		maxref = fmax(maxref, fabs((double)ref[i]));
	}
	const double rel = maxerr / maxref;
	char detail[128];
	snprintf(detail, sizeof detail, "err %.3g (tol %.3g)%s", rel, tol, nan ? " NaN/size mismatch" : "");
	report(cs, nan || !(rel <= tol), name, detail);
}

static inline void compare_int(check_state *cs, const char *name, const ivec &ref, const ivec &got)
{
	size_t bad = ref.size() != got.size();
	for (size_t i = 0; i < ref.size() && i < got.size(); i++) bad += ref[i] != got[i];
	char detail[128];
	snprintf(detail, sizeof detail, "%zu of %zu differ", bad, ref.size());
	report(cs, bad != 0, name, detail);
}

static inline int finish(check_state *cs)
{
	printf("%d passed, %d failed\n", cs->passed, cs->failed);
	return cs->failed ? 1 : 0;
}

#endif
