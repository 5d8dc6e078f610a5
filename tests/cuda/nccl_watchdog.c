/* The NCCL backend's watchdog on a real communicator (tests/gpu/run.sh links it against the
 * CUDA objects; one rank, one GPU): a receive from this rank itself with no matching send is
 * an NCCL operation that never completes, the one-GPU stand-in for a peer that stopped. With
 * a 2 s timeout its wait must fail after 2 s (and well before 30), with the watchdog's message
 * naming the operation, the group, its size and the timeout; the world and the group split
 * from it must both be aborted (every later operation fails at once), and destroying them
 * afterwards must not hang. Without a GPU, creating the NCCL world must fail with a message. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include "runtime/comm_nccl.h"
#include "sim/util.h"
#include "tests/test.h"

#define N 1024

static void hang(struct comm *w)
{
	char err[ERR_LEN] = "";
	float *buf;
	struct comm *g = NULL;
	int zero = 0;
	CHECK(cudaMalloc((void **)&buf, N * sizeof(float)) == cudaSuccess, "cudaMalloc");
	CHECK(comm_create_group(w, &zero, 1, "tp", &g, err) == 0, "group: %s", err);
	CHECK(comm_allreduce(w, buf, buf, N, COMM_F32, err) == 0, "a completing all-reduce first: %s", err);
	comm_set_timeout(w, 2);
	struct comm_req *r = NULL;
	CHECK(comm_irecv(w, buf, N, COMM_F32, 0, &r, err) == 0, "irecv: %s", err);
	double t0 = now_s();
	int rc = comm_wait(r, err);
	double dt = now_s() - t0;
	CHECK(rc == -1, "an unmatched receive must fail its wait");
	CHECK(dt >= 2 && dt < 30, "it fails after the 2 s timeout: %.1f s", dt);
	CHECK(strstr(err, "sendrecv on group world (1 ranks) did not complete within 2 s") != NULL,
	      "message: %s", err);
	CHECK(strstr(err, "aborted 2 communicators") != NULL, "both communicators aborted: %s", err);
	printf("watchdog: %.1f s: %s\n", dt, err);
	if (g) {
		t0 = now_s();
		CHECK(comm_allreduce(g, buf, buf, N, COMM_F32, err) == -1 && strstr(err, "earlier failure") &&
		      now_s() - t0 < 1, "the group after the abort: %s", err);
		comm_destroy(g);
	}
	cudaFree(buf);
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
		hang(nc);
		double t0 = now_s();
		comm_destroy(nc);
		CHECK(now_s() - t0 < 10, "destroying the aborted world took %.1f s", now_s() - t0);
	}
	comm_destroy(w);
	return test_summary("nccl_watchdog");
}
