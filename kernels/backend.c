/* backend — the instance around a row of kernels/backend.h: creation, the tracking
 * allocator (a table of live blocks, so that freeing knows the size and the counters stay
 * exact whatever the row's allocator is), the copies, and the choice of row for
 * `scaleplan run`. kernels/ depends on nothing of ours, so errors are written here with
 * snprintf rather than sim/util.h's errf. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/backend.h"

#define KERN_ERR 256

const struct kern_ops *kern_cuda_row(void)
{
	return &kern_cuda_ops ? &kern_cuda_ops : NULL;
}

const struct kern_ops *kern_row(const char *name)
{
	const struct kern_ops *rows[] = {&kern_cpu_ops, kern_cuda_row(), &kern_cuda_fp32_ops ? &kern_cuda_fp32_ops : NULL};
	if (!name) return NULL;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		if (rows[i] && !strcmp(rows[i]->name, name)) return rows[i];
	return NULL;
}

const char *kern_choose(enum kern_want want, int have_cuda, int n_gpus, char *err)
{
	const char *name = want == KERN_WANT_CUDA_FP32 ? "cuda-fp32" : "cuda";
	switch (want) {
	case KERN_WANT_CPU: return "cpu";
	case KERN_WANT_CUDA:
	case KERN_WANT_CUDA_FP32:
		if (!have_cuda) {
			if (err) snprintf(err, KERN_ERR, "--backend %s: this build has no CUDA backend "
			                  "(build with `make CUDA=1`, which needs nvcc, cuBLAS, cuDNN and NCCL)", name);
			return NULL;
		}
		if (n_gpus < 1) {
			if (err) snprintf(err, KERN_ERR, "--backend %s: no GPU is visible to this process "
			                  "(check CUDA_VISIBLE_DEVICES and the driver), or use --backend cpu", name);
			return NULL;
		}
		return name;
	default: return have_cuda && n_gpus > 0 ? "cuda" : "cpu";
	}
}

int kern_create(struct kern **out, const struct kern_ops *ops, int device, char *err)
{
	*out = NULL;
	struct kern *k = calloc(1, sizeof *k);
	if (!k) {
		if (err) snprintf(err, KERN_ERR, "backend %s: out of memory", ops->name);
		return -1;
	}
	k->ops = ops;
	if (ops->create && ops->create(&k->state, device, err)) {
		free(k);
		return -1;
	}
	*out = k;
	return 0;
}

void kern_destroy(struct kern *k)
{
	if (!k) return;
	/* blocks still live are left to the process's exit: after a failed collective a request in
	 * flight may still target one */
	free(k->blocks);
	if (k->ops->destroy) k->ops->destroy(k->state);
	free(k);
}

void *kern_alloc(struct kern *k, size_t bytes)
{
	if (!bytes) bytes = 1;
	if (k->nblocks == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 64;
		struct kern_block *b = realloc(k->blocks, cap * sizeof *b);
		if (!b) return NULL;
		k->blocks = b;
		k->cap = cap;
	}
	void *p = k->ops->alloc(k->state, bytes);
	if (!p) return NULL;
	k->blocks[k->nblocks++] = (struct kern_block){p, bytes};
	k->bytes_in_use += bytes;
	if (k->bytes_in_use > k->peak_bytes) k->peak_bytes = k->bytes_in_use;
	return p;
}

void *kern_zalloc(struct kern *k, size_t bytes)
{
	void *p = kern_alloc(k, bytes);
	if (p) k->ops->memset0(k->state, p, bytes ? bytes : 1);
	return p;
}

/* newest first: buffers are mostly freed in the reverse order of allocation */
void kern_free(struct kern *k, void *p)
{
	if (!p) return;
	for (size_t i = k->nblocks; i-- > 0;) {
		if (k->blocks[i].p != p) continue;
		k->bytes_in_use -= k->blocks[i].bytes;
		k->blocks[i] = k->blocks[--k->nblocks];
		k->ops->release(k->state, p);
		return;
	}
	/* not ours: leaking is safer than handing a foreign pointer to the row's allocator */
}

void kern_to_host(struct kern *k, void *host, const void *dev, size_t bytes)
{
	if (bytes) k->ops->copy(k->state, host, dev, bytes, KERN_D2H);
}

void kern_to_dev(struct kern *k, void *dev, const void *host, size_t bytes)
{
	if (bytes) k->ops->copy(k->state, dev, host, bytes, KERN_H2D);
}

void kern_copy_dev(struct kern *k, void *dst, const void *src, size_t bytes)
{
	if (bytes && dst != src) k->ops->copy(k->state, dst, src, bytes, KERN_D2D);
}

void kern_reset_peak(struct kern *k)
{
	k->peak_bytes = k->bytes_in_use;
}

void kern_zero(struct kern *k, void *p, size_t bytes)
{
	if (bytes) k->ops->memset0(k->state, p, bytes);
}

int kern_sync(struct kern *k, char *err)
{
	return k->ops->sync(k->state, err);
}
