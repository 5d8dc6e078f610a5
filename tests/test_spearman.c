/* spearman(): rank correlation with average ranks for ties, against values computed by hand. */
#include "sim/validate.h"
#include "tests/test.h"

int main(void)
{
	double up[] = {1, 2, 3, 4, 5}, scaled[] = {10, 20, 40, 80, 160}, down[] = {5, 4, 3, 2, 1};
	CHECK_ABS(spearman(up, scaled, 5), 1.0, 1e-12, "same order, any monotone scale: 1");
	CHECK_ABS(spearman(up, down, 5), -1.0, 1e-12, "reversed order: -1");

	/* Textbook example without ties (IQ vs hours of TV per week, the worked example in the
	 * Wikipedia article "Spearman's rank correlation coefficient"): Σd² = 194, n = 10,
	 * ρ = 1 − 6·194/(10·99) = −29/165. */
	double iq[] = {106, 100, 86, 101, 99, 103, 97, 113, 112, 110};
	double tv[] = {7, 27, 2, 50, 28, 29, 20, 12, 6, 17};
	CHECK_ABS(spearman(iq, tv, 10), -29.0 / 165.0, 1e-12, "IQ vs TV hours: -29/165");

	/* Ties: y = {1, 2, 2, 3, 5} has ranks {1, 2.5, 2.5, 4, 5}; with x ranked 1..5 the Pearson
	 * correlation of the ranks is 9.5 / sqrt(10 · 9.5) = sqrt(0.95). */
	double y[] = {1, 2, 2, 3, 5};
	CHECK_ABS(spearman(up, y, 5), sqrt(0.95), 1e-12, "one tie: sqrt(0.95)");
	/* Ties on both sides: x ranks {1.5, 1.5, 3, 4}, y ranks {1, 2, 3.5, 3.5}; deviations
	 * from 2.5: x {-1, -1, .5, 1.5}, y {-1.5, -.5, 1, 1}; Σdxdy = 1.5 + .5 + .5 + 1.5 = 4,
	 * Σdx² = 4.5, Σdy² = 4.5 -> 4/4.5 = 8/9. */
	double xt[] = {7, 7, 8, 9}, yt[] = {1, 2, 3, 3};
	CHECK_ABS(spearman(xt, yt, 4), 8.0 / 9.0, 1e-12, "ties on both sides: 8/9");

	/* undefined: a constant series or fewer than two points gives 0 (validate.h) */
	double flat[] = {3, 3, 3, 3, 3};
	CHECK(spearman(up, flat, 5) == 0, "constant series: 0");
	CHECK(spearman(up, up, 1) == 0, "one point: 0");
	return test_summary("test_spearman");
}
