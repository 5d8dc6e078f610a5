/* test — the smallest harness: CHECK macros count passes and failures; each test binary ends
 * with test_summary(), which prints "N passed, N failed" (tests/run.sh adds them up) and
 * returns the exit status. Expected values in tests come from a cited source or an
 * independent computation, never from the code under test. */
#ifndef SCALEPLAN_TEST_H
#define SCALEPLAN_TEST_H

#include <math.h>
#include <stdio.h>

static int test_passed, test_failed;

#define CHECK(cond, ...) do { \
	if (cond) test_passed++; \
	else { test_failed++; fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	       fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } \
} while (0)

/* |got - want| <= rel * |want| (or <= rel when want == 0) */
#define CHECK_REL(got, want, rel, name) do { \
	double g_ = (got), w_ = (want); \
	double tol_ = (rel) * (w_ != 0 ? fabs(w_) : 1.0); \
	CHECK(fabs(g_ - w_) <= tol_, "%s: got %.10g, want %.10g (rel tol %g)", name, g_, w_, (double)(rel)); \
} while (0)

#define CHECK_ABS(got, want, tol, name) do { \
	double g_ = (got), w_ = (want); \
	CHECK(fabs(g_ - w_) <= (tol), "%s: got %.10g, want %.10g (abs tol %g)", name, g_, w_, (double)(tol)); \
} while (0)

static inline int test_summary(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, test_passed, test_failed);
	return test_failed ? 1 : 0;
}

/* Every split of L layers into S non-empty contiguous stages, as cut points cut[0] = 0 <
 * cut[1] < ... < cut[S] = L (brute-force references for the partitioners): split_first sets
 * the first, split_next steps to the next and returns 0 after the last. */
static inline void split_first(int *cut, int S, int L)
{
	cut[0] = 0; cut[S] = L;
	for (int i = 1; i < S; i++) cut[i] = i;
}

static inline int split_next(int *cut, int S, int L)
{
	int i = S - 1;
	while (i >= 1 && cut[i] == L - (S - i)) i--;
	if (i < 1) return 0;
	cut[i]++;
	for (int j = i + 1; j < S; j++) cut[j] = cut[j - 1] + 1;
	return 1;
}

#endif
