/* cpu_shard — the reference kernels of kernels/cpu_shard.h. The arithmetic (which maximum,
 * exp in float summed in double, log in double) is that of the vocabulary-parallel loss
 * runtime/tp.c ran on the host before it went through the backend, so the CPU row's results
 * are unchanged bit for bit. */
#include <math.h>
#include <string.h>
#include "kernels/cpu_shard.h"

void ce_shard_max(float *mx, const float *logits, int N, int V)
{
	for (int i = 0; i < N; i++) {
		const float *z = logits + (size_t)i * V;
		float m = z[0];
		for (int v = 1; v < V; v++) m = z[v] > m ? z[v] : m;
		mx[i] = m;
	}
}

void ce_shard_sums(float *sums, float *maxima, const float *logits, const int *targets, int N, int V, int v0, int tp)
{
	for (int i = 0; i < N; i++) {
		const float *z = logits + (size_t)i * V;
		float mx = maxima[i];
		for (int q = 1; q < tp; q++) mx = maxima[(size_t)q * N + i] > mx ? maxima[(size_t)q * N + i] : mx;
		maxima[i] = mx;
		double sum = 0.0;
		for (int v = 0; v < V; v++) sum += expf(z[v] - mx);
		sums[i] = (float)sum;
		const int t = targets[i] - v0;
		sums[N + i] = targets[i] >= 0 && t >= 0 && t < V ? z[t] : 0.0f;
	}
}

void ce_shard_loss(float *losses, float *lse, const float *maxima, const float *sums, const int *targets, int N)
{
	for (int i = 0; i < N; i++) {
		if (targets[i] < 0) { losses[i] = 0.0f; lse[i] = 0.0f; continue; }
		lse[i] = maxima[i] + (float)log((double)sums[i]);
		losses[i] = lse[i] - sums[N + i];
	}
}

void ce_shard_backward(float *dlogits, const float *logits, const float *lse, const int *targets, float dloss,
                       int N, int V, int v0)
{
	for (int i = 0; i < N; i++) {
		const float *z = logits + (size_t)i * V;
		float *dz = dlogits + (size_t)i * V;
		if (targets[i] < 0) { memset(dz, 0, sizeof(float) * (size_t)V); continue; }
		for (int v = 0; v < V; v++) dz[v] = dloss * expf(z[v] - lse[i]);
		const int t = targets[i] - v0;
		if (t >= 0 && t < V) dz[t] -= dloss;
	}
}

void act_copy_rows(float *dst, size_t ld_dst, const float *src, size_t ld_src, size_t rows, size_t width)
{
	for (size_t r = 0; r < rows; r++) memcpy(dst + r * ld_dst, src + r * ld_src, sizeof(float) * width);
}

void fill_f32(float *p, size_t n, float value)
{
	for (size_t i = 0; i < n; i++) p[i] = value;
}
