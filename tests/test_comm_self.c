/* test_comm_self — the one-rank backend (runtime/comm_self.c) against the buffer conventions
 * of runtime/comm.h written out for one member: every collective delivers the rank's own
 * block (checked element by element against the input pattern), groups have one member,
 * send/recv to self pairs first in, first out, and what could never complete (an unmatched
 * send, a receive too small, a peer outside the group) fails with a message naming the
 * operation and the group. In a NOMPI=1 build, comm_mpi_world is this world and refuses a
 * multi-rank launch. */
#include <stdlib.h>
#include <string.h>
#include "runtime/comm_self.h"
#include "sim/util.h"
#include "tests/test.h"

#define N 12

static void pattern(float *x, int n, float base)
{
	for (int i = 0; i < n; i++) x[i] = base + 0.25f * (float)i;
}

static int same(const float *a, const float *b, int n)
{
	return memcmp(a, b, sizeof(float) * (size_t)n) == 0;
}

static void test_world_and_groups(void)
{
	char err[ERR_LEN];
	struct comm *w = NULL, *g = NULL;
	CHECK(comm_self_world(&w, err) == 0, "world: %s", err);
	CHECK(comm_size(w) == 1 && comm_rank(w) == 0, "world: size %d rank %d", comm_size(w), comm_rank(w));
	CHECK(!strcmp(comm_backend(w), "self") && !strcmp(comm_name(w), "world"), "world: %s/%s",
	      comm_backend(w), comm_name(w));
	CHECK(comm_global_rank(w, 0) == 0 && comm_global_rank(w, 1) == -1, "world: global ranks");
	int me = 0, other = 1, two[2] = {0, 0};
	CHECK(comm_create_group(w, &me, 1, "tp", &g, err) == 0, "group tp: %s", err);
	CHECK(g && comm_size(g) == 1 && !strcmp(comm_name(g), "tp") && comm_global_rank(g, 0) == 0,
	      "group tp: one member named tp");
	comm_destroy(g);
	g = NULL;
	CHECK(comm_create_group(w, &other, 1, "dp", &g, err) == -1 && strstr(err, "outside"),
	      "a group naming rank 1 of a one-rank world: %s", err);
	/* two members listed, one after the split: the callers' groups do not partition */
	CHECK(comm_create_group(w, two, 2, "pp", &g, err) == -1 && strstr(err, "partition"),
	      "a group of two in a one-rank world: %s", err);
	comm_set_timeout(w, 5);
	CHECK(comm_create_group(w, &me, 1, "cp", &g, err) == 0, "group cp: %s", err);
	comm_destroy(g);
	comm_destroy(w);
	comm_destroy(NULL);
}

static void test_collectives(void)
{
	char err[ERR_LEN];
	struct comm *w;
	if (comm_self_world(&w, err)) { CHECK(0, "world: %s", err); return; }
	float in[N], out[N], want[N];
	pattern(in, N, 1);
	memcpy(want, in, sizeof(in));

	memset(out, 0xff, sizeof(out));
	CHECK(comm_allreduce(w, in, out, N, COMM_F32, err) == 0 && same(out, want, N), "allreduce: %s", err);
	CHECK(comm_allreduce(w, in, in, N, COMM_F32, err) == 0 && same(in, want, N), "allreduce in place");
	memset(out, 0xff, sizeof(out));
	CHECK(comm_reduce_scatter(w, in, out, N, COMM_F32, err) == 0 && same(out, want, N),
	      "reduce-scatter keeps block 0: %s", err);
	CHECK(comm_reduce_scatter(w, in, in + 2, 4, COMM_F32, err) == -1 && strstr(err, "overlap"),
	      "reduce-scatter with overlapping buffers: %s", err);
	memset(out, 0xff, sizeof(out));
	CHECK(comm_allgather(w, in, out, N, COMM_F32, err) == 0 && same(out, want, N), "allgather: %s", err);
	CHECK(comm_allgather(w, out, out, N, COMM_F32, err) == 0 && same(out, want, N), "allgather in place");
	memset(out, 0xff, sizeof(out));
	CHECK(comm_alltoall(w, in, out, N, COMM_F32, err) == 0 && same(out, want, N), "alltoall: %s", err);
	memset(out, 0xff, sizeof(out));
	CHECK(comm_broadcast(w, in, out, N, COMM_F32, 0, err) == 0 && same(out, want, N), "broadcast: %s", err);
	CHECK(comm_broadcast(w, in, out, N, COMM_F32, 1, err) == -1 && strstr(err, "root"),
	      "broadcast from root 1: %s", err);
	CHECK(comm_barrier(w, err) == 0, "barrier: %s", err);

	/* bf16 and f64 move their bits untouched: a sum over one rank rounds nothing */
	unsigned short h[3] = {0x3f80, 0x7fc1, 0x0001}, hr[3] = {0};
	CHECK(comm_allreduce(w, h, hr, 3, COMM_BF16, err) == 0 && !memcmp(h, hr, sizeof(h)), "bf16 allreduce");
	double d[2] = {1.0 / 3, -2e300}, dr[2] = {0};
	CHECK(comm_allreduce(w, d, dr, 2, COMM_F64, err) == 0 && dr[0] == d[0] && dr[1] == d[1], "f64 allreduce");
	CHECK(comm_allreduce(w, in, out, 1, COMM_BYTE, err) == -1 && strstr(err, "cannot sum"),
	      "byte allreduce refused: %s", err);

	/* all-to-all-v: 5 elements from send offset 3 to receive offset 6 */
	size_t sc = 5, sd = 3, rcn = 5, rd = 6;
	memset(out, 0, sizeof(out));
	CHECK(comm_alltoallv(w, in, &sc, &sd, out, &rcn, &rd, COMM_F32, err) == 0 &&
	      same(out + 6, want + 3, 5) && out[5] == 0 && out[11] == 0, "alltoallv block: %s", err);
	rcn = 4;
	CHECK(comm_alltoallv(w, in, &sc, &sd, out, &rcn, &rd, COMM_F32, err) == -1 && strstr(err, "count"),
	      "alltoallv sending itself 5 but expecting 4: %s", err);
	comm_destroy(w);
}

static void test_point_to_point(void)
{
	char err[ERR_LEN];
	struct comm *w;
	if (comm_self_world(&w, err)) { CHECK(0, "world: %s", err); return; }
	float a[N], b[N], r1[N], r2[N];
	pattern(a, N, 10);
	pattern(b, N, -7);

	memset(r1, 0, sizeof(r1));
	CHECK(comm_sendrecv(w, a, N, 0, r1, N, 0, COMM_F32, err) == 0 && same(r1, a, N), "sendrecv to self: %s", err);
	CHECK(comm_sendrecv(w, a, N, 0, r1, N - 1, 0, COMM_F32, err) == -1 && strstr(err, "longer"),
	      "sendrecv into a short buffer: %s", err);
	CHECK(comm_sendrecv(w, a, N, 1, r1, N, 0, COMM_F32, err) == -1 && strstr(err, "peer outside"),
	      "sendrecv to rank 1: %s", err);

	/* two sends, then two receives: first in, first out */
	struct comm_req *s1, *s2, *q1, *q2;
	int done = -1;
	CHECK(comm_isend(w, a, N, COMM_F32, 0, &s1, err) == 0, "isend a: %s", err);
	CHECK(comm_isend(w, b, N, COMM_F32, 0, &s2, err) == 0, "isend b: %s", err);
	CHECK(comm_test(s1, &done, err) == 0 && done == 0, "isend before its receive is pending");
	CHECK(comm_irecv(w, r1, N, COMM_F32, 0, &q1, err) == 0, "irecv 1: %s", err);
	CHECK(comm_test(s1, &done, err) == 0 && done == 1, "isend completes once received");
	CHECK(comm_irecv(w, r2, N, COMM_F32, 0, &q2, err) == 0, "irecv 2: %s", err);
	CHECK(comm_wait(q2, err) == 0 && comm_wait(s2, err) == 0 && comm_wait(q1, err) == 0 &&
	      comm_wait(s1, err) == 0, "waits: %s", err);
	CHECK(same(r1, a, N) && same(r2, b, N), "receives in the order of the sends");

	/* a receive posted first is matched by the later send */
	memset(r1, 0, sizeof(r1));
	CHECK(comm_irecv(w, r1, N, COMM_F32, 0, &q1, err) == 0 && comm_send(w, b, N, COMM_F32, 0, err) == 0 &&
	      comm_wait(q1, err) == 0 && same(r1, b, N), "irecv then send: %s", err);

	/* an unmatched send fails at its wait and leaves the queue: a later receive has nothing */
	CHECK(comm_isend(w, a, N, COMM_F32, 0, &s1, err) == 0, "isend: %s", err);
	CHECK(comm_wait(s1, err) == -1 && strstr(err, "no matching receive") && strstr(err, "world"),
	      "unmatched send: %s", err);
	CHECK(comm_recv(w, r1, N, COMM_F32, 0, err) == -1 && strstr(err, "no matching send"),
	      "receive after the failed send: %s", err);
	comm_destroy(w);
}

static void test_nompi_world(void)
{
#ifdef SCALEPLAN_NOMPI
	char err[ERR_LEN];
	struct comm *w = NULL;
	setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
	CHECK(comm_mpi_world(&w, err) == -1 && strstr(err, "started 4") && !w,
	      "NOMPI world under a 4-rank launch: %s", err);
	setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
	CHECK(comm_mpi_world(&w, err) == 0 && w && comm_size(w) == 1 && !strcmp(comm_backend(w), "self"),
	      "NOMPI world under a 1-rank launch: %s", err);
	comm_destroy(w);
	unsetenv("OMPI_COMM_WORLD_SIZE");
#endif
}

int main(void)
{
	test_world_and_groups();
	test_collectives();
	test_point_to_point();
	test_nompi_world();
	return test_summary("test_comm_self");
}
