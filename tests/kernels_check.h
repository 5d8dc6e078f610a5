/* kernels_check — what the kernel tests share (tests/test_kernels.c, tests/test_attention.c):
 * a seeded uniform generator, random and zero buffers, and the finite-difference check of a
 * backward against its forward. */
#ifndef SCALEPLAN_KERNELS_CHECK_H
#define SCALEPLAN_KERNELS_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "tests/test.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static inline float frand(void) /* splitmix64 -> uniform [-1, 1) */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (float)((z >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static inline float *rnd(size_t n, float scale)
{
	float *p = malloc(sizeof(float) * n);
	for (size_t i = 0; i < n; i++) p[i] = frand() * scale;
	return p;
}

static inline float *zeros(size_t n) { return calloc(n, sizeof(float)); }

static inline double dot(const float *a, const float *b, size_t n)
{
	double s = 0.0;
	for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
	return s;
}

/* Largest |fd - analytic| over (at most 48 sampled) elements of x, relative to the largest
 * gradient magnitude seen; f recomputes the scalar loss. */
typedef double (*loss_fn)(void *ctx);
static inline double fd_error(loss_fn f, void *ctx, float *x, const float *g, size_t n, float eps)
{
	size_t step = n > 48 ? n / 48 : 1;
	double maxerr = 0.0, maxg = 1e-12;
	for (size_t i = 0; i < n; i += step) {
		float s = x[i], xp = s + eps, xm = s - eps;
		x[i] = xp;
		double lp = f(ctx);
		x[i] = xm;
		double lm = f(ctx);
		x[i] = s;
		double fd = (lp - lm) / ((double)xp - xm);
		maxerr = fmax(maxerr, fabs(fd - g[i]));
		maxg = fmax(maxg, fmax(fabs(fd), fabs(g[i])));
	}
	return maxerr / maxg;
}

#define CHECK_GRAD(name, f, ctx, x, g, n, eps) do { \
	double e_ = fd_error(f, ctx, x, g, n, eps); \
	CHECK(e_ <= 1e-2, "%s: finite-difference relative error %.3g > 1e-2", name, e_); \
} while (0)

#endif
