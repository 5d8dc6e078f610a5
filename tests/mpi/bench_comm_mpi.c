/* `make bench-comm`: nccl-tests-style figures for the MPI backend on this machine's shared
 * memory, run under mpirun with 2, 4 and 8 ranks. For each collective of the descriptor
 * table and each size: time per call (max over ranks), algbw = S/t and busbw = algbw *
 * factor (model.md §3.1), then one more call with integer inputs whose result must be exact
 * (the "#wrong" column). Last, a single-rank memcpy bandwidth as the ceiling shared memory
 * gives. Exits non-zero when a result is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/comm.h"
#include "sim/util.h"

static void fill(enum coll c, float *s, size_t count, int n, int r)
{
	size_t len = c == COLL_ALLREDUCE || c == COLL_BROADCAST ? count : count * (size_t)n;
	if (c == COLL_ALLGATHER) len = count;
	for (size_t i = 0; i < len; i++) {
		if (c == COLL_ALLTOALL) s[i] = (float)(1000 * (r + 1) + 10 * (int)(i / count) + (int)(i % count % 7));
		else s[i] = (float)(r + 1 + (int)(i % 1000));
	}
}

static size_t check(enum coll c, const float *o, size_t count, int n, int r)
{
	size_t wrong = 0, len = c == COLL_ALLREDUCE || c == COLL_BROADCAST || c == COLL_REDUCESCATTER
				       ? count : count * (size_t)n;
	for (size_t i = 0; i < len; i++) {
		float w;
		size_t j = i / count, k = i % count;
		switch (c) {
		case COLL_ALLREDUCE: w = (float)(n * (n + 1) / 2 + n * (int)(i % 1000)); break;
		case COLL_REDUCESCATTER: w = (float)(n * (n + 1) / 2 + n * (int)(((size_t)r * count + i) % 1000)); break;
		case COLL_ALLGATHER: w = (float)((int)j + 1 + (int)(k % 1000)); break;
		case COLL_ALLTOALL: w = (float)(1000 * ((int)j + 1) + 10 * r + (int)(k % 7)); break;
		default: w = (float)(1 + (int)(i % 1000)); break;
		}
		wrong += o[i] != w;
	}
	return wrong;
}

static int bench_one(struct comm *w, enum coll c, size_t bytes, float *s, float *o, char *err)
{
	int n = comm_size(w), r = comm_rank(w);
	size_t total = bytes / sizeof(float);
	size_t count = c == COLL_ALLREDUCE || c == COLL_BROADCAST ? total : total / (size_t)n;
	struct comm_args a = {.coll = c, .dtype = COMM_F32, .send = s, .recv = o, .count = count,
			      .peer_send = -1, .peer_recv = -1};
	int iters = bytes >= (8u << 20) ? 5 : 20;
	fill(c, s, count, n, r);
	double t0 = 0;
	for (int it = -2; it < iters; it++) {      /* two warm-up calls */
		if (it == 0) {
			if (comm_barrier(w, err)) return -1;
			t0 = now_s();
		}
		struct comm_req *q;
		if (comm_start(w, &a, &q, err) || comm_wait(q, err)) return -1;
	}
	double t = (now_s() - t0) / iters, tmax;
	double all[8];
	if (comm_allgather(w, &t, all, 1, COMM_F64, err)) return -1;
	tmax = 0;
	for (int i = 0; i < n; i++) tmax = all[i] > tmax ? all[i] : tmax;
	memset(o, 0, bytes);
	struct comm_req *q;
	if (comm_start(w, &a, &q, err) || comm_wait(q, err)) return -1;
	double wrong = (double)check(c, o, count, n, r);
	if (comm_allreduce(w, &wrong, &wrong, 1, COMM_F64, err)) return -1;
	size_t S = comm_colls[c].size_bytes(count, sizeof(float), n);
	double alg = S / tmax / 1e9;
	if (r == 0)
		printf("%10zu %10zu  float %-14s %10.1f %8.2f %8.2f %6.0f\n", S, count, comm_colls[c].name,
		       tmax * 1e6, alg, alg * comm_colls[c].busbw_factor(n), wrong);
	return wrong > 0 ? 1 : 0;
}

int main(void)
{
	char err[ERR_LEN];
	struct comm *w;
	if (comm_mpi_world(&w, err)) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	int n = comm_size(w), bad = 0;
	size_t maxb = 16u << 20;
	float *s = malloc(maxb), *o = malloc(maxb);
	if (comm_rank(w) == 0)
		printf("# MPI shared memory, %d ranks\n#%9s %10s  %5s %-14s %10s %8s %8s %6s\n", n, "size(B)",
		       "count", "type", "collective", "time(us)", "algbw", "busbw", "#wrong");
	static const enum coll colls[] = {COLL_ALLREDUCE, COLL_REDUCESCATTER, COLL_ALLGATHER,
					       COLL_ALLTOALL, COLL_BROADCAST};
	for (size_t ci = 0; ci < sizeof(colls) / sizeof(colls[0]); ci++)
		for (size_t b = 64u << 10; b <= maxb; b *= 16) {
			int rc = bench_one(w, colls[ci], b, s, o, err);
			if (rc < 0) {
				fprintf(stderr, "%s\n", err);
				comm_abort(w, 1);
			}
			bad |= rc;
		}
	if (comm_rank(w) == 0) {
		double t0 = now_s();
		for (int i = 0; i < 10; i++) memcpy(o, s, maxb);
		printf("# memcpy on one core (the ceiling for shared-memory copies): %.2f GB/s\n",
		       10.0 * maxb / (now_s() - t0) / 1e9);
	}
	free(s);
	free(o);
	comm_destroy(w);
	return bad;
}
