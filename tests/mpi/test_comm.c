/* Every collective of runtime/comm.h on the groups of several plans' layouts, verified with
 * integer-valued fp32 inputs (sums of at most 8 values below 2^20 are exact, so results must
 * be equal, not close); non-blocking overlap; argument errors; timeouts; the context's groups
 * against sim/layout.h. Run under mpirun with 2, 4 or 8 ranks (tests/cli/mpi.sh). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/comm.h"
#include "runtime/ctx.h"
#include "sim/util.h"
#include "tests/mpi/harness.h"
#include "tests/test.h"

#define C 1031   /* elements per rank: odd, so no size lines up with a power of two */

/* value rank R contributes at index i: an integer below 2^20 */
static float val(int R, size_t i) { return (float)((R + 1) * 4096 + (int)(i % 4093)); }

static int expect_eq(const float *got, const float *want, size_t n, const char *what, const char *grp)
{
	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i]) {
			CHECK(0, "%s on %s: element %zu is %g, want %g", what, grp, i, got[i], want[i]);
			return -1;
		}
	CHECK(1, "ok");
	return 0;
}

static void test_allreduce(struct comm *g, const int *m, int n, int R)
{
	char err[ERR_LEN];
	float *s = malloc(C * sizeof(float)), *r = malloc(C * sizeof(float)), *w = malloc(C * sizeof(float));
	for (size_t i = 0; i < C; i++) {
		s[i] = val(R, i);
		w[i] = 0;
		for (int j = 0; j < n; j++) w[i] += val(m[j], i);
	}
	CHECK(comm_allreduce(g, s, r, C, COMM_F32, err) == 0, "%s", err);
	expect_eq(r, w, C, "allreduce", comm_name(g));
	CHECK(comm_allreduce(g, s, s, C, COMM_F32, err) == 0, "%s", err);
	expect_eq(s, w, C, "allreduce in place", comm_name(g));
	free(s); free(r); free(w);
}

static void test_reduce_scatter(struct comm *g, const int *m, int n, int k, int R)
{
	char err[ERR_LEN];
	float *s = malloc((size_t)n * C * sizeof(float)), *r = malloc(C * sizeof(float)), *w = malloc(C * sizeof(float));
	for (size_t i = 0; i < (size_t)n * C; i++) s[i] = val(R, i);
	for (size_t i = 0; i < C; i++) {
		w[i] = 0;
		for (int j = 0; j < n; j++) w[i] += val(m[j], (size_t)k * C + i);
	}
	CHECK(comm_reduce_scatter(g, s, r, C, COMM_F32, err) == 0, "%s", err);
	expect_eq(r, w, C, "reducescatter", comm_name(g));
	free(s); free(r); free(w);
}

static void test_allgather(struct comm *g, const int *m, int n, int k, int R)
{
	char err[ERR_LEN];
	float *s = malloc(C * sizeof(float)), *r = malloc((size_t)n * C * sizeof(float));
	float *w = malloc((size_t)n * C * sizeof(float));
	for (size_t i = 0; i < C; i++) s[i] = val(R, i);
	for (int j = 0; j < n; j++)
		for (size_t i = 0; i < C; i++) w[(size_t)j * C + i] = val(m[j], i);
	CHECK(comm_allgather(g, s, r, C, COMM_F32, err) == 0, "%s", err);
	expect_eq(r, w, (size_t)n * C, "allgather", comm_name(g));
	memset(r, 0, (size_t)n * C * sizeof(float));
	memcpy(r + (size_t)k * C, s, C * sizeof(float));
	CHECK(comm_allgather(g, r + (size_t)k * C, r, C, COMM_F32, err) == 0, "%s", err);
	expect_eq(r, w, (size_t)n * C, "allgather in place", comm_name(g));
	free(s); free(r); free(w);
}

/* value member `src` sends to member `dst` at index i */
static float a2a(int src_global, int dst, size_t i) { return (float)(src_global * 65536 + dst * 4096 + (int)(i % 4096)); }

static void test_alltoall(struct comm *g, const int *m, int n, int k, int R)
{
	char err[ERR_LEN];
	size_t N = (size_t)n * C;
	float *s = malloc(N * sizeof(float)), *r = malloc(N * sizeof(float)), *w = malloc(N * sizeof(float));
	for (int j = 0; j < n; j++)
		for (size_t i = 0; i < C; i++) {
			s[(size_t)j * C + i] = a2a(R, j, i);
			w[(size_t)j * C + i] = a2a(m[j], k, i);
		}
	CHECK(comm_alltoall(g, s, r, C, COMM_F32, err) == 0, "%s", err);
	expect_eq(r, w, N, "alltoall", comm_name(g));
	free(s); free(r); free(w);
}

/* elements member src sends to member dst: uneven, sometimes zero */
static size_t vcount(int src, int dst) { return (size_t)((src * 7 + dst * 3) % 5) * 37; }

static void test_alltoallv(struct comm *g, const int *m, int n, int k, int R)
{
	char err[ERR_LEN];
	size_t sc[8], sd[8], rc[8], rd[8], ns = 0, nr = 0;
	for (int j = 0; j < n; j++) {
		sc[j] = vcount(k, j); sd[j] = ns; ns += sc[j];
		rc[j] = vcount(j, k); rd[j] = nr; nr += rc[j];
	}
	float *s = malloc((ns + 1) * sizeof(float)), *r = malloc((nr + 1) * sizeof(float));
	float *w = malloc((nr + 1) * sizeof(float));
	for (int j = 0; j < n; j++) {
		for (size_t i = 0; i < sc[j]; i++) s[sd[j] + i] = a2a(R, j, i);
		for (size_t i = 0; i < rc[j]; i++) w[rd[j] + i] = a2a(m[j], k, i);
	}
	CHECK(comm_alltoallv(g, s, sc, sd, r, rc, rd, COMM_F32, err) == 0, "%s", err);
	expect_eq(r, w, nr, "alltoallv", comm_name(g));
	free(s); free(r); free(w);
}

static void test_bcast_p2p(struct comm *g, const int *m, int n, int k, int R)
{
	char err[ERR_LEN];
	float *s = malloc(C * sizeof(float)), *r = malloc(C * sizeof(float)), *w = malloc(C * sizeof(float));
	int root = n - 1;
	for (size_t i = 0; i < C; i++) { s[i] = val(R, i); w[i] = val(m[root], i); r[i] = -1; }
	CHECK(comm_broadcast(g, s, r, C, COMM_F32, root, err) == 0, "%s", err);
	expect_eq(r, w, C, "broadcast", comm_name(g));
	/* ring: send to the next member, receive from the previous one */
	int next = (k + 1) % n, prev = (k + n - 1) % n;
	for (size_t i = 0; i < C; i++) w[i] = val(m[prev], i);
	CHECK(comm_sendrecv(g, s, C, next, r, C, prev, COMM_F32, err) == 0, "%s", err);
	expect_eq(r, w, C, "sendrecv ring", comm_name(g));
	/* pairs: even members send to the odd member after them */
	if (k % 2 == 0 && k + 1 < n) {
		CHECK(comm_send(g, s, C, COMM_F32, k + 1, err) == 0, "%s", err);
	} else if (k % 2 == 1) {
		for (size_t i = 0; i < C; i++) w[i] = val(m[k - 1], i);
		CHECK(comm_recv(g, r, C, COMM_F32, k - 1, err) == 0, "%s", err);
		expect_eq(r, w, C, "send/recv", comm_name(g));
	}
	CHECK(comm_barrier(g, err) == 0, "%s", err);
	free(s); free(r); free(w);
}

static void test_other_types(struct comm *g, const int *m, int n, int R)
{
	char err[ERR_LEN];
	/* bf16 holds integers up to 256 exactly; sums stay below 8*15 */
	uint16_t b[64];
	double d[64], dw[64];
	int bad = 0;
	for (int i = 0; i < 64; i++) {
		float f = (float)((R + i) % 16);
		uint32_t u;
		memcpy(&u, &f, 4);
		b[i] = (uint16_t)(u >> 16);
		d[i] = R * 1e9 + i;
		dw[i] = 0;
		for (int j = 0; j < n; j++) dw[i] += m[j] * 1e9 + i;
	}
	CHECK(comm_allreduce(g, b, b, 64, COMM_BF16, err) == 0, "%s", err);
	for (int i = 0; i < 64; i++) {
		float want = 0, got;
		for (int j = 0; j < n; j++) want += (float)((m[j] + i) % 16);
		uint32_t u = (uint32_t)b[i] << 16;
		memcpy(&got, &u, 4);
		bad += got != want;
	}
	CHECK(bad == 0, "bf16 allreduce on %s: %d wrong", comm_name(g), bad);
	CHECK(comm_allreduce(g, d, d, 64, COMM_F64, err) == 0, "%s", err);
	CHECK(memcmp(d, dw, sizeof(d)) == 0, "f64 allreduce on %s", comm_name(g));
}

/* The communicator's member list is the layout's, in the layout's order: each member's world
 * rank, gathered over the group, must equal layout_group(). */
static void test_membership(struct ctx *x, enum group_kind gk)
{
	char err[ERR_LEN];
	struct comm *g = ctx_comm(x, gk);
	int m[8];
	int n = layout_group(&x->layout, gk, x->rank, m, 8);
	CHECK(n == comm_size(g), "%s size %d, layout %d", group_name(gk), comm_size(g), n);
	CHECK(comm_rank(g) == layout_group_index(&x->layout, gk, x->rank), "%s position", group_name(gk));
	float me = (float)x->rank, all[8];
	CHECK(comm_allgather(g, &me, all, 1, COMM_F32, err) == 0, "%s", err);
	for (int j = 0; j < n; j++)
		CHECK(all[j] == m[j] && comm_global_rank(g, j) == m[j], "%s member %d is rank %g, layout says %d",
		      group_name(gk), j, all[j], m[j]);
}

static void test_plan(struct comm *world, const char *const *kv)
{
	char err[ERR_LEN];
	struct plan p;
	plan_defaults(&p);
	for (; kv[0]; kv += 2)
		CHECK(plan_set(&p, kv[0], kv[1], err) == 0, "%s", err);
	if (!p.dp) p.dp = 1;
	p.gpus = p.tp * p.cp * p.dp * p.pp;
	struct ctx *x;
	if (ctx_create(world, &p, &x, err)) {
		CHECK(0, "ctx_create: %s", err);
		return;
	}
	for (int gk = 0; gk < GROUP_COUNT; gk++) {
		struct comm *g = ctx_comm(x, (enum group_kind)gk);
		int m[8];
		int n = layout_group(&x->layout, (enum group_kind)gk, x->rank, m, 8);
		int k = comm_rank(g);
		test_membership(x, (enum group_kind)gk);
		test_allreduce(g, m, n, x->rank);
		test_reduce_scatter(g, m, n, k, x->rank);
		test_allgather(g, m, n, k, x->rank);
		test_alltoall(g, m, n, k, x->rank);
		test_alltoallv(g, m, n, k, x->rank);
		test_bcast_p2p(g, m, n, k, x->rank);
		test_other_types(g, m, n, x->rank);
	}
	ctx_destroy(x);
}

/* Two collectives in flight on two groups while the rank "computes"; comm_test drives MPI's
 * progress. Results must be those of the blocking calls. */
static void test_overlap(struct comm *world)
{
	char err[ERR_LEN];
	int n = comm_size(world), R = comm_rank(world);
	size_t N = 1 << 18;
	float *a = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float));
	for (size_t i = 0; i < N; i++) { a[i] = val(R, i); b[i] = (float)(R * 2 + (int)(i % 3)); }
	int all[8];
	for (int j = 0; j < n; j++) all[j] = j;
	struct comm *dup;
	CHECK(comm_create_group(world, all, n, "dup", &dup, err) == 0, "%s", err);
	struct comm_req *ra, *rb;
	CHECK(comm_iallreduce(world, a, a, N, COMM_F32, &ra, err) == 0, "%s", err);
	CHECK(comm_iallreduce(dup, b, b, N, COMM_F32, &rb, err) == 0, "%s", err);
	volatile double work = 0;
	int done_a = 0, done_b = 0, polls = 0, rc = 0;
	while (!(done_a && done_b) && !rc) {
		for (int i = 0; i < 10000; i++) work += i * 1e-9;  /* stands for backward compute */
		if (!done_a) rc |= comm_test(ra, &done_a, err);
		if (!done_b) rc |= comm_test(rb, &done_b, err);
		polls++;
	}
	CHECK(rc == 0, "comm_test: %s", err);
	CHECK(comm_wait(ra, err) == 0 && comm_wait(rb, err) == 0, "%s", err);
	int bad = 0;
	for (size_t i = 0; i < N; i++) {
		float wa = 0, wb = 0;
		for (int j = 0; j < n; j++) { wa += val(j, i); wb += (float)(j * 2 + (int)(i % 3)); }
		bad += a[i] != wa || b[i] != wb;
	}
	CHECK(bad == 0, "overlapped allreduces: %d wrong elements after %d polls", bad, polls);
	comm_destroy(dup);
	free(a); free(b);
}

static void test_errors(struct comm *world)
{
	char err[ERR_LEN] = "";
	float x[64] = {0};
	int n = comm_size(world);
	CHECK(comm_reduce_scatter(world, x, x + 1, 1, COMM_F32, err) == -1 && strstr(err, "overlap"),
	      "overlapping reduce-scatter: '%s'", err);
	CHECK(comm_broadcast(world, x, x, 4, COMM_F32, n, err) == -1 && strstr(err, "root outside"),
	      "bad root: '%s'", err);
	CHECK(comm_allreduce(world, x, x, 4, COMM_BYTE, err) == -1 && strstr(err, "cannot sum"),
	      "byte sum: '%s'", err);
	/* a plan for another world size */
	struct plan p;
	plan_defaults(&p);
	p.dp = 2 * n;
	struct ctx *c = (struct ctx *)1;
	CHECK(ctx_create(world, &p, &c, err) == -1 && c == NULL && strstr(err, "plan needs"),
	      "ctx on a wrong world: '%s'", err);
	CHECK(strstr(err, "the world has") != NULL, "message names the world size: '%s'", err);
	ctx_destroy(NULL);
	comm_destroy(NULL);
	CHECK(comm_wait(NULL, err) == 0, "wait(NULL)");
	/* a receive nobody answers fails after the timeout instead of hanging */
	int all[8];
	for (int j = 0; j < n; j++) all[j] = j;
	struct comm *t;
	CHECK(comm_create_group(world, all, n, "timeout", &t, err) == 0, "%s", err);
	comm_set_timeout(t, 0.2);
	if (comm_rank(t) == 0) {
		double t0 = now_s();
		int rc = comm_recv(t, x, 4, COMM_F32, n - 1, err);
		CHECK(rc == -1 && strstr(err, "did not complete within 0.2 s"), "timeout: rc %d '%s'", rc, err);
		CHECK(now_s() - t0 < 5, "timeout took %g s", now_s() - t0);
	}
	CHECK(comm_barrier(world, err) == 0, "%s", err);
	comm_destroy(t);
}

static void test_table(void)
{
	/* TV-N1 (model.md §5.6): nccl-tests factors */
	CHECK(comm_colls[COLL_ALLREDUCE].busbw_factor(2) == 1.0, "allreduce n=2");
	CHECK(comm_colls[COLL_ALLREDUCE].busbw_factor(4) == 1.5, "allreduce n=4");
	CHECK(comm_colls[COLL_ALLREDUCE].busbw_factor(8) == 1.75, "allreduce n=8");
	CHECK(comm_colls[COLL_REDUCESCATTER].busbw_factor(8) == 0.875, "reducescatter n=8");
	CHECK(comm_colls[COLL_ALLGATHER].busbw_factor(8) == 0.875, "allgather n=8");
	CHECK(comm_colls[COLL_ALLTOALL].busbw_factor(8) == 0.875, "alltoall n=8");
	CHECK(comm_colls[COLL_BROADCAST].busbw_factor(8) == 1.0, "broadcast");
	CHECK(comm_colls[COLL_SENDRECV].busbw_factor(8) == 1.0, "sendrecv");
	/* TV-N2: all-gather S = sendcount*sizeof*n */
	CHECK(comm_colls[COLL_ALLGATHER].size_bytes(100, 4, 8) == 3200, "allgather size");
	CHECK(comm_colls[COLL_ALLREDUCE].size_bytes(100, 4, 8) == 400, "allreduce size");
	for (int i = 0; i < COLL_COUNT; i++)
		CHECK(comm_colls[i].name && comm_colls[i].start, "descriptor %d complete", i);
}

int main(void)
{
	struct comm *world;
	if (harness_world(&world, 0)) return 1;
	int n = comm_size(world);
	test_table();
	test_errors(world);
	test_overlap(world);
	/* plans whose layouts cover every group kind at this world size */
	static const char *const p2[][12] = {
		{"tp", "2", NULL}, {"dp", "2", "ep", "2", NULL}, {"pp", "2", NULL}, {"cp", "2", NULL},
	};
	static const char *const p4[][12] = {
		{"tp", "2", "dp", "2", NULL}, {"dp", "4", "ep", "2", NULL},
		{"dp", "2", "cp", "2", "ep", "2", "order", "dp-cp-tp-pp", NULL}, {"pp", "2", "cp", "2", NULL},
	};
	static const char *const p8[][12] = {
		{"tp", "2", "dp", "2", "pp", "2", NULL}, {"dp", "4", "cp", "2", "ep", "4", NULL},
		{"tp", "2", "dp", "2", "cp", "2", "ep", "2", "order", "pp-dp-cp-tp", NULL},
		{"dp", "8", "ep", "8", NULL},
	};
	const char *const (*plans)[12] = n == 2 ? p2 : n == 4 ? p4 : n == 8 ? p8 : NULL;
	CHECK(plans != NULL, "run with 2, 4 or 8 ranks, not %d", n);
	for (int i = 0; plans && i < 4; i++) test_plan(world, plans[i]);

	return harness_finish(world, "test_comm");
}
