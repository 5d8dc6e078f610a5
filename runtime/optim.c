/* optim — AdamW, element-wise over a flat range. */
#include <math.h>
#include "runtime/optim.h"

void adamw_update(float *p, const float *g, float *m, float *v, size_t n, int step, float lr,
		  float beta1, float beta2, float eps, float wd)
{
	/* bias corrections once per call, in double: 1 - b^t loses digits for small t */
	float c1 = (float)(1.0 - pow(beta1, step));
	float c2 = (float)(1.0 - pow(beta2, step));
	float decay = 1.0f - lr * wd;
	for (size_t i = 0; i < n; i++) {
		float gi = g[i];
		m[i] = beta1 * m[i] + (1.0f - beta1) * gi;
		v[i] = beta2 * v[i] + (1.0f - beta2) * gi * gi;
		float mh = m[i] / c1, vh = v[i] / c2;
		p[i] = p[i] * decay - lr * mh / (sqrtf(vh) + eps);
	}
}
