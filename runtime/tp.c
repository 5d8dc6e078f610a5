/* tp — tensor- and sequence-parallel collectives and the vocabulary-parallel cross-entropy
 * (runtime/tp.h). */
#include <math.h>
#include <string.h>
#include "runtime/tp.h"

int tp_size_of(const struct comm *g)
{
	return g ? comm_size(g) : 1;
}

int tp_rank_of(const struct comm *g)
{
	return g ? comm_rank(g) : 0;
}

int tp_seq_gather(struct comm *g, float *full, size_t local_count, char *err)
{
	if (tp_size_of(g) == 1) return 0;
	return comm_allgather(g, full + (size_t)comm_rank(g) * local_count, full, local_count, COMM_F32, err);
}

int tp_reduce(struct comm *g, int sp, float *partial, float *out, size_t full_count, char *err)
{
	const int n = tp_size_of(g);
	if (n == 1) {
		if (out != partial) memcpy(out, partial, sizeof(float) * full_count);
		return 0;
	}
	if (!sp) return comm_allreduce(g, partial, out, full_count, COMM_F32, err);
	return comm_reduce_scatter(g, partial, out, full_count / (size_t)n, COMM_F32, err);
}

int tp_allreduce(struct comm *g, float *buf, size_t count, char *err)
{
	if (tp_size_of(g) == 1) return 0;
	return comm_allreduce(g, buf, buf, count, COMM_F32, err);
}

size_t tp_ce_scratch_floats(int N, int tp)
{
	return (size_t)N * (size_t)tp + 2 * (size_t)N;
}

int tp_crossentropy_forward(struct comm *g, float *losses, float *lse, const float *logits, const int *targets,
                            int N, int V_local, int v0, float *scratch, char *err)
{
	const int n = tp_size_of(g), r = tp_rank_of(g);
	float *maxima = scratch;                       /* (tp, N): rank q's maxima at q·N */
	float *sums = scratch + (size_t)N * n;         /* (2, N): sum of exp, target logit */
	for (int i = 0; i < N; i++) {
		const float *z = logits + (size_t)i * V_local;
		float mx = z[0];
		for (int v = 1; v < V_local; v++) mx = z[v] > mx ? z[v] : mx;
		maxima[(size_t)r * N + i] = mx;
	}
	if (n > 1 && comm_allgather(g, maxima + (size_t)r * N, maxima, (size_t)N, COMM_F32, err)) return -1;
	for (int i = 0; i < N; i++) {
		const float *z = logits + (size_t)i * V_local;
		float mx = maxima[i];
		for (int q = 1; q < n; q++) mx = maxima[(size_t)q * N + i] > mx ? maxima[(size_t)q * N + i] : mx;
		maxima[i] = mx; /* the global max, kept for the loss below */
		double sum = 0.0;
		for (int v = 0; v < V_local; v++) sum += expf(z[v] - mx);
		sums[i] = (float)sum;
		const int t = targets[i] - v0;
		sums[N + i] = targets[i] >= 0 && t >= 0 && t < V_local ? z[t] : 0.0f;
	}
	if (n > 1 && comm_allreduce(g, sums, sums, 2 * (size_t)N, COMM_F32, err)) return -1;
	for (int i = 0; i < N; i++) {
		if (targets[i] < 0) { losses[i] = 0.0f; lse[i] = 0.0f; continue; }
		lse[i] = maxima[i] + (float)log((double)sums[i]);
		losses[i] = lse[i] - sums[N + i];
	}
	return 0;
}

void tp_crossentropy_backward(float *dlogits, const float *logits, const float *lse, const int *targets,
                              float dloss, int N, int V_local, int v0)
{
	for (int i = 0; i < N; i++) {
		const float *z = logits + (size_t)i * V_local;
		float *dz = dlogits + (size_t)i * V_local;
		if (targets[i] < 0) { memset(dz, 0, sizeof(float) * (size_t)V_local); continue; }
		for (int v = 0; v < V_local; v++) dz[v] = dloss * expf(z[v] - lse[i]);
		const int t = targets[i] - v0;
		if (t >= 0 && t < V_local) dz[t] -= dloss;
	}
}
