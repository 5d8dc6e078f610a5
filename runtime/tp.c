/* tp — tensor- and sequence-parallel collectives and the vocabulary-parallel cross-entropy
 * (runtime/tp.h), on the buffers of a backend instance. */
#include "runtime/tp.h"

int tp_size_of(const struct comm *g)
{
	return g ? comm_size(g) : 1;
}

int tp_rank_of(const struct comm *g)
{
	return g ? comm_rank(g) : 0;
}

enum comm_dtype tp_act_dtype(const struct kern *k)
{
	return k->ops->act_bytes == 2 ? COMM_BF16 : COMM_F32;
}

int tp_seq_gather(struct comm *g, struct kern *k, float *full, size_t local_count, char *err)
{
	if (tp_size_of(g) == 1) return 0;
	if (kern_sync(k, err)) return -1;
	return comm_allgather(g, kern_act_at(k, full, (size_t)comm_rank(g) * local_count), full, local_count,
	                      tp_act_dtype(k), err);
}

int tp_reduce(struct comm *g, struct kern *k, int sp, float *partial, float *out, size_t full_count, char *err)
{
	const int n = tp_size_of(g);
	if (n == 1) {
		if (out != partial) kern_copy_dev(k, out, partial, kern_act_size(k, full_count));
		return 0;
	}
	if (kern_sync(k, err)) return -1;
	if (!sp) return comm_allreduce(g, partial, out, full_count, tp_act_dtype(k), err);
	return comm_reduce_scatter(g, partial, out, full_count / (size_t)n, tp_act_dtype(k), err);
}

int tp_allreduce(struct comm *g, struct kern *k, float *buf, size_t count, char *err)
{
	if (tp_size_of(g) == 1) return 0;
	if (kern_sync(k, err)) return -1;
	return comm_allreduce(g, buf, buf, count, COMM_F32, err);
}

size_t tp_ce_scratch_floats(int N, int tp)
{
	return (size_t)N * (size_t)tp + 2 * (size_t)N;
}

int tp_crossentropy_forward(struct comm *g, struct kern *k, float *losses, float *lse, const float *logits,
                            const int *targets, int N, int V_local, int v0, float *scratch, char *err)
{
	const int n = tp_size_of(g), r = tp_rank_of(g);
	float *maxima = scratch;                       /* (tp, N): rank q's maxima at q·N */
	float *sums = scratch + (size_t)N * n;         /* (2, N): sum of exp, target logit */
	k->ops->ce_shard_max(k->state, maxima + (size_t)r * N, logits, N, V_local);
	if (n > 1 && (kern_sync(k, err) ||
	              comm_allgather(g, maxima + (size_t)r * N, maxima, (size_t)N, COMM_F32, err)))
		return -1;
	k->ops->ce_shard_sums(k->state, sums, maxima, logits, targets, N, V_local, v0, n);
	if (n > 1 && (kern_sync(k, err) || comm_allreduce(g, sums, sums, 2 * (size_t)N, COMM_F32, err))) return -1;
	k->ops->ce_shard_loss(k->state, losses, lse, maxima, sums, targets, N);
	return 0;
}

void tp_crossentropy_backward(struct kern *k, float *dlogits, const float *logits, const float *lse,
                              const int *targets, float dloss, int N, int V_local, int v0)
{
	k->ops->ce_shard_backward(k->state, dlogits, logits, lse, targets, dloss, N, V_local, v0);
}
