/* harness — what every multi-rank test program (tests/mpi/test_*.c) shares, on top of
 * tests/test.h's CHECK counters. A header of static inline functions, not a .c file: the
 * Makefile builds every C file in tests/mpi as a program of its own.
 *
 * A program using it looks like
 *
 *     #include "tests/mpi/harness.h"
 *     int main(void)
 *     {
 *             struct comm *world;
 *             if (harness_world(&world, 60)) return 1;   // 60 s: a hang fails instead
 *             ... CHECK(...) on every rank; harness_ctx(world, tp, pp, cp, ep, &x, err) for
 *                 the groups of a layout ...
 *             return harness_finish(world, "test_foo");  // sums, prints, destroys world
 *     }
 *
 * harness_finish adds up every rank's pass/fail counts and rank 0 prints
 * "test_foo np=N: P passed, F failed", the line tests/cli/lib.sh's run_mpi reads.
 * Also here: a splitmix64 random fill whose state the caller owns (seed it identically on
 * every rank to build the same global problem everywhere) and the max-relative-error
 * comparison of two float arrays. Units: seconds for timeouts; errors are dimensionless. */
#ifndef SCALEPLAN_TESTS_MPI_HARNESS_H
#define SCALEPLAN_TESTS_MPI_HARNESS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "kernels/cpu.h"
#include "runtime/comm.h"
#include "runtime/ctx.h"
#include "sim/plan.h"
#include "sim/util.h"
#include "tests/test.h"

/* The MPI world communicator; timeout_s > 0 bounds every collective on it (0 keeps the
 * default). Prints the message and returns 1 when MPI cannot start. */
static inline int harness_world(struct comm **world, double timeout_s)
{
	char err[ERR_LEN];
	cli_blas_reexec(); /* before MPI starts: the GEMM kernels `scaleplan run` uses (kernels/blas_arch.c) */
	if (comm_mpi_world(world, err)) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (timeout_s > 0) comm_set_timeout(*world, timeout_s);
	return 0;
}

/* Sums every rank's test_passed/test_failed over `world`, prints "<name> np=N: P passed,
 * F failed" on rank 0, destroys `world` and returns the exit status (0 when nothing failed). */
static inline int harness_finish(struct comm *world, const char *name)
{
	char err[ERR_LEN];
	double cnt[2] = {test_passed, test_failed};
	if (comm_allreduce(world, cnt, cnt, 2, COMM_F64, err)) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	test_passed = (int)cnt[0];
	test_failed = (int)cnt[1];
	const int rc = test_failed ? 1 : 0;
	if (comm_rank(world) == 0) {
		char line[64];
		snprintf(line, sizeof line, "%s np=%d", name, comm_size(world));
		test_summary(line);
	}
	comm_destroy(world);
	return rc;
}

/* A context for the plan tp x pp x cp (with ep inside dp*cp) over the whole world; dp is the
 * rest of the world size. Returns ctx_create's result (message in err). */
static inline int harness_ctx(struct comm *world, int tp, int pp, int cp, int ep, struct ctx **x, char *err)
{
	struct plan p;
	plan_defaults(&p);
	p.tp = tp;
	p.pp = pp;
	p.cp = cp;
	p.ep = ep;
	p.dp = comm_size(world) / (tp * pp * cp);
	p.gpus = comm_size(world);
	*x = NULL;
	return ctx_create(world, &p, x, err);
}

/* splitmix64 -> uniform [-1, 1); *state is the caller's generator */
static inline float harness_frand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (float)((z >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

/* n floats uniform in [-scale, scale) (malloc'd, caller frees; at least one element) */
static inline float *harness_rnd(uint64_t *state, size_t n, float scale)
{
	float *p = malloc(sizeof(float) * (n ? n : 1));
	for (size_t i = 0; i < n; i++) p[i] = harness_frand(state) * scale;
	return p;
}

/* a malloc'd copy of n floats (caller frees) */
static inline float *harness_copy(const float *src, size_t n)
{
	float *p = malloc(sizeof(float) * (n ? n : 1));
	memcpy(p, src, sizeof(float) * n);
	return p;
}

/* max |got - want| / max |want| over n elements (the denominator floored at 1e-30) */
static inline double harness_rel_err(const float *got, const float *want, size_t n)
{
	double e = 0.0, m = 1e-30;
	for (size_t i = 0; i < n; i++) {
		e = fmax(e, fabs((double)got[i] - want[i]));
		m = fmax(m, fabs((double)want[i]));
	}
	return e / m;
}

#endif
