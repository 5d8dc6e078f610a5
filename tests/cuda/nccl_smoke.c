/* NCCL backend smoke test (tests/cli/nccl_smoke.sh links it against build/libscaleplan_cuda.a):
 * without a usable GPU, creating the NCCL world must fail with a message naming the rank and
 * device; with one, every collective on a 1-rank world (and a group split from it) must
 * return its input, checked on the host. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include "runtime/comm_nccl.h"
#include "sim/util.h"
#include "tests/test.h"

#define N 4096

static void run(struct comm *nc)
{
	char err[ERR_LEN];
	float h[N], out[N];
	float *a, *b;
	for (int i = 0; i < N; i++) h[i] = (float)(i % 1000);
	CHECK(cudaMalloc((void **)&a, N * sizeof(float)) == cudaSuccess, "cudaMalloc");
	CHECK(cudaMalloc((void **)&b, N * sizeof(float)) == cudaSuccess, "cudaMalloc");
	cudaMemcpy(a, h, sizeof(h), cudaMemcpyHostToDevice);
	struct comm_req *r;
	CHECK(comm_iallreduce(nc, a, b, N, COMM_F32, &r, err) == 0 && comm_wait(r, err) == 0, "%s", err);
	cudaMemcpy(out, b, sizeof(out), cudaMemcpyDeviceToHost);
	CHECK(memcmp(out, h, sizeof(h)) == 0, "allreduce on 1 rank changed the data");
	CHECK(comm_allgather(nc, a, b, N, COMM_F32, err) == 0, "%s", err);
	CHECK(comm_reduce_scatter(nc, a, b, N, COMM_F32, err) == 0, "%s", err);
	CHECK(comm_alltoall(nc, a, b, N, COMM_F32, err) == 0, "%s", err);
	CHECK(comm_broadcast(nc, a, b, N, COMM_F32, 0, err) == 0, "%s", err);
	CHECK(comm_sendrecv(nc, a, N, 0, b, N, 0, COMM_F32, err) == 0, "%s", err);
	CHECK(comm_barrier(nc, err) == 0, "%s", err);
	cudaMemcpy(out, b, sizeof(out), cudaMemcpyDeviceToHost);
	CHECK(memcmp(out, h, sizeof(h)) == 0, "sendrecv to self changed the data");
	int zero = 0;
	struct comm *g;
	CHECK(comm_create_group(nc, &zero, 1, "tp", &g, err) == 0, "%s", err);
	if (g) {
		CHECK(comm_allreduce(g, a, a, N, COMM_F32, err) == 0, "%s", err);
		comm_destroy(g);
	}
	cudaFree(a);
	cudaFree(b);
}

int main(void)
{
	char err[ERR_LEN];
	struct comm *w, *nc;
	if (comm_mpi_world(&w, err)) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		CHECK(comm_nccl_world(w, 0, &nc, err) == -1 && strstr(err, "rank 0 cannot use CUDA device 0"),
		      "no GPU: want a message naming the rank and device, got '%s'", err);
		printf("no GPU: %s\n", err);
	} else if (comm_nccl_world(w, 0, &nc, err)) {
		CHECK(0, "%s", err);
	} else {
		CHECK(strcmp(comm_backend(nc), "nccl") == 0 && comm_nccl_stream(nc) != NULL, "backend");
		run(nc);
		comm_destroy(nc);
	}
	comm_destroy(w);
	return test_summary("nccl_smoke");
}
