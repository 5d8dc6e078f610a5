/* loss — softmax cross-entropy over fp32 logits, per token; the mean is the caller's dloss. */
#include <math.h>
#include <string.h>
#include "kernels/cpu.h"

void crossentropy_forward(float *losses, float *lse, const float *logits, const int *targets, int N, int V)
{
	for (int n = 0; n < N; n++) {
		const float *z = logits + (size_t)n * V;
		if (targets[n] < 0) { losses[n] = 0.0f; lse[n] = 0.0f; continue; }
		float mx = z[0];
		for (int v = 1; v < V; v++) mx = z[v] > mx ? z[v] : mx;
		double sum = 0.0;
		for (int v = 0; v < V; v++) sum += expf(z[v] - mx);
		float l = mx + (float)log(sum);
		lse[n] = l;
		losses[n] = l - z[targets[n]];
	}
}

/* d loss_n / d z_v = softmax(z)_v - [v == target] */
void crossentropy_backward(float *dlogits, const float *logits, const float *lse, const int *targets,
                           float dloss, int N, int V)
{
	for (int n = 0; n < N; n++) {
		const float *z = logits + (size_t)n * V;
		float *dz = dlogits + (size_t)n * V;
		if (targets[n] < 0) { memset(dz, 0, sizeof(float) * (size_t)V); continue; }
		const float l = lse[n];
		for (int v = 0; v < V; v++) dz[v] = dloss * expf(z[v] - l);
		dz[targets[n]] -= dloss;
	}
}
