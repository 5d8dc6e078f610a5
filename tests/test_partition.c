/* Stage partitioning: the DP and the GLPK MILP against brute force (every contiguous split,
 * every subset of recomputed layers) on small random problems, plus hand-checked cases. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tuner/partition.h"
#include "sim/util.h"
#include "tests/test.h"

#define MAXL 10
#define MAXS 4

static unsigned long long rng = 88172645463325252ULL;
static double urand(void) /* xorshift64, [0, 1) */
{
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

struct inst {
	double t[MAXL], rc[MAXL], w[MAXL], a[MAXL], ck[MAXL], fixed_s[MAXS], fixed_b[MAXS], k[MAXS], cap[MAXS];
	struct part_problem pb;
};

/* Best time of one stage holding layers [l0, l0+n): the cheapest recompute subset that fits. */
static double brute_stage(const struct part_problem *pb, int l0, int n, int s, int with_mem)
{
	double best = INFINITY;
	for (unsigned mask = 0; mask < (with_mem ? 1u << n : 1u); mask++) {
		double t = pb->stage_s ? pb->stage_s[s] : 0, b = pb->stage_bytes ? pb->stage_bytes[s] : 0;
		for (int i = 0; i < n; i++) {
			int rcm = (mask >> i) & 1;
			t += pb->time_s[l0 + i] + (rcm ? pb->recompute_s[l0 + i] : 0);
			if (with_mem)
				b += pb->weight_bytes[l0 + i] + pb->inflight[s] * (rcm ? pb->ckpt_bytes[l0 + i] : pb->act_bytes[l0 + i]);
		}
		if (with_mem && b > pb->cap_bytes[s]) continue;
		if (t < best) best = t;
	}
	return best;
}

/* Min over compositions of L into S positive parts of the max stage time. */
static double brute(const struct part_problem *pb, int with_mem)
{
	int L = pb->nlayers, S = pb->nstages, cut[MAXS + 1];
	double best = INFINITY;
	for (split_first(cut, S, L);;) {
		double worst = 0;
		for (int s = 0; s < S && worst < best; s++)
			worst = fmax(worst, brute_stage(pb, cut[s], cut[s + 1] - cut[s], s, with_mem));
		if (worst < best) best = worst;
		if (!split_next(cut, S, L)) break;
	}
	return best;
}

static void make_instance(struct inst *in, int L, int S, double tightness)
{
	memset(in, 0, sizeof(*in));
	double act_total = 0, w_total = 0;
	for (int l = 0; l < L; l++) {
		in->t[l] = 1 + 2 * urand();
		in->rc[l] = in->t[l] * (0.2 + 0.3 * urand());
		in->w[l] = 1e9 * (1 + urand());
		in->a[l] = 2e9 * (1 + urand());
		in->ck[l] = in->a[l] * 0.1;
		act_total += in->a[l];
		w_total += in->w[l];
	}
	for (int s = 0; s < S; s++) {
		in->k[s] = S - s; /* 1F1B: stage s holds S - s micro-batches */
		in->fixed_b[s] = 1e9;
		/* between "everything recomputed" and "nothing recomputed" for a balanced stage */
		double per = (w_total + in->k[s] * act_total) / S;
		in->cap[s] = 1e9 + per * tightness;
	}
	in->fixed_s[0] = urand();       /* embedding */
	in->fixed_s[S - 1] = 2 * urand(); /* LM head + loss */
	in->pb = (struct part_problem){L, S, in->t, in->fixed_s, in->rc, in->w, in->a, in->ck, in->k, in->fixed_b, in->cap};
}

static void test_dp_vs_brute(void)
{
	int counts[MAXS];
	char err[ERR_LEN];
	for (int trial = 0; trial < 60; trial++) {
		struct inst in;
		int L = 6 + trial % 5, S = 2 + trial % 3;
		make_instance(&in, L, S, 1);
		struct part_result r = {counts, NULL, 0, 0};
		CHECK(partition_dp(&in.pb, &r, err) == 0, "dp: %s", err);
		double want = brute(&in.pb, 0);
		CHECK_REL(r.max_stage_s, want, 1e-12, "dp optimum equals brute force");
		CHECK_REL(partition_stage_time(&in.pb, counts, NULL, NULL), r.max_stage_s, 1e-12, "dp split achieves its objective");
		int sum = 0, pos = 1;
		for (int s = 0; s < S; s++) { sum += counts[s]; pos &= counts[s] >= 1; }
		CHECK(sum == L && pos, "dp split sums to %d and is positive", L);
	}
}

static void test_milp_vs_brute(void)
{
	int counts[MAXS], rec[MAXL];
	char err[ERR_LEN];
	int infeasible = 0, binding = 0;
	for (int trial = 0; trial < 40; trial++) {
		struct inst in;
		int L = 6 + trial % 5, S = 2 + trial % 3;
		make_instance(&in, L, S, 0.35 + 0.5 * urand());
		struct part_result r = {counts, rec, 0, 0};
		CHECK(partition_milp(&in.pb, 20, &r, err) == 0, "milp: %s", err);
		double want = brute(&in.pb, 1);
		if (isinf(want)) {
			infeasible++;
			CHECK(r.status == PART_INFEASIBLE, "trial %d: brute force finds no split, milp status %d", trial, r.status);
			continue;
		}
		CHECK(r.status == PART_OPTIMAL, "trial %d: milp optimal (status %d)", trial, r.status);
		CHECK_REL(r.max_stage_s, want, 1e-6, "milp optimum equals brute force");
		for (int s = 0; s < S; s++)
			CHECK(partition_stage_bytes(&in.pb, counts, rec, s) <= in.cap[s] * (1 + 1e-9), "trial %d stage %d fits", trial, s);
		if (want > brute(&in.pb, 0) + 1e-9) binding++;
	}
	/* the random caps must exercise both outcomes, or the comparison proves little */
	CHECK(binding >= 5, "memory caps bind in %d trials", binding);
	CHECK(infeasible < 20, "%d infeasible trials", infeasible);
}

/* Capped DP: brute force over every split with the first r layers of each stage recomputed. */
static double brute_capped(const struct part_problem *pb, int rc_layers)
{
	int L = pb->nlayers, S = pb->nstages, cut[MAXS + 1], counts[MAXS], rec[MAXL];
	double best = INFINITY;
	for (split_first(cut, S, L);;) {
		for (int s = 0; s < S; s++) {
			counts[s] = cut[s + 1] - cut[s];
			int k = rc_layers < 0 || rc_layers > counts[s] ? counts[s] : rc_layers;
			for (int l = cut[s]; l < cut[s + 1]; l++) rec[l] = l < cut[s] + k;
		}
		int fits = 1;
		for (int s = 0; s < S; s++) fits &= partition_stage_bytes(pb, counts, rec, s) <= pb->cap_bytes[s];
		double t = partition_stage_time(pb, counts, rec, NULL);
		if (fits && t < best) best = t;
		if (!split_next(cut, S, L)) break;
	}
	return best;
}

static void test_dp_capped_vs_brute(void)
{
	int counts[MAXS], rec[MAXL];
	char err[ERR_LEN];
	int feasible = 0, infeasible = 0;
	for (int trial = 0; trial < 60; trial++) {
		struct inst in;
		int L = 6 + trial % 5, S = 2 + trial % 3, rcl = trial % 4 - 1; /* -1 (all), 0, 1, 2 */
		make_instance(&in, L, S, 0.35 + 0.6 * urand());
		struct part_result r = {counts, rec, 0, 0};
		CHECK(partition_dp_capped(&in.pb, rcl, &r, err) == 0, "dp capped: %s", err);
		double want = brute_capped(&in.pb, rcl);
		if (isinf(want)) {
			infeasible++;
			CHECK(r.status == PART_INFEASIBLE, "trial %d: brute force finds no split, capped dp status %d", trial, r.status);
			continue;
		}
		feasible++;
		CHECK(r.status == PART_OPTIMAL, "trial %d: capped dp optimal", trial);
		CHECK_REL(r.max_stage_s, want, 1e-12, "capped dp optimum equals brute force");
		CHECK_REL(partition_stage_time(&in.pb, counts, rec, NULL), r.max_stage_s, 1e-12, "capped split achieves its objective");
		for (int s = 0; s < S; s++)
			CHECK(partition_stage_bytes(&in.pb, counts, rec, s) <= in.cap[s], "trial %d stage %d fits", trial, s);
	}
	CHECK(feasible >= 20 && infeasible >= 3, "capped trials: %d feasible, %d infeasible", feasible, infeasible);
}

static void test_hand_cases(void)
{
	/* 8 unit layers, embedding 0.5 on the first stage, head 1.5 on the last, 4 stages:
	 * stage 0 takes 2 (2.5), stage 3 takes 1 (2.5), the middle 5 split 3/2 -> optimum 3 */
	double t[8] = {1, 1, 1, 1, 1, 1, 1, 1}, fx[4] = {0.5, 0, 0, 1.5};
	int counts[4];
	char err[ERR_LEN];
	struct part_problem pb = {8, 4, t, fx, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
	struct part_result r = {counts, NULL, 0, 0};
	CHECK(partition_dp(&pb, &r, err) == 0 && r.max_stage_s == 3.0, "embedding/head case: %g", r.max_stage_s);
	CHECK(counts[0] <= 2 && counts[3] == 1, "first stage <= 2 layers, last stage 1 (%d %d %d %d)", counts[0], counts[1], counts[2], counts[3]);
	pb.nstages = 9;
	CHECK(partition_dp(&pb, &r, err) != 0 && strstr(err, "9 stages"), "more stages than layers: %s", err);
	/* MILP with a cap no split can meet */
	double rc[8] = {0}, w[8], a[8], ck[8], k[4] = {4, 3, 2, 1}, cap[4] = {1, 1, 1, 1};
	for (int i = 0; i < 8; i++) { w[i] = 10; a[i] = 5; ck[i] = 1; }
	struct part_problem pm = {8, 4, t, fx, rc, w, a, ck, k, NULL, cap};
	int rec[8];
	struct part_result rm = {counts, rec, 0, 0};
	CHECK(partition_milp(&pm, 5, &rm, err) == 0 && rm.status == PART_INFEASIBLE, "tiny caps: infeasible (%d) %s", rm.status, err);
	/* unbounded caps: the MILP equals the DP and recomputes nothing */
	for (int s = 0; s < 4; s++) cap[s] = 1e12;
	for (int i = 0; i < 8; i++) rc[i] = 0.4;
	CHECK(partition_milp(&pm, 5, &rm, err) == 0 && rm.status == PART_OPTIMAL && rm.max_stage_s == 3.0, "loose caps: %g", rm.max_stage_s);
	int any = 0;
	for (int i = 0; i < 8; i++) any |= rec[i];
	CHECK(!any, "loose caps: no layer recomputed");
}

int main(void)
{
	test_hand_cases();
	test_dp_vs_brute();
	test_dp_capped_vs_brute();
	test_milp_vs_brute();
	return test_summary("test_partition");
}
