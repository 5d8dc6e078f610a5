/* test_watchdog — the communicator watchdog (runtime/watchdog.c) behind a fake backend: a
 * comm_ops row whose requests complete after a set number of polls, never complete, or report
 * a peer's or a local error part way, the way runtime/comm_nccl.cu's requests poll a CUDA event
 * and NCCL's asynchronous error. Checked: the deadline rule, the classification of NCCL's
 * result codes (the numbers of nccl.h's ncclResult_t), that a hang ends after timeout_s and an
 * error at once, that every communicator of the rank is cancelled exactly once with the
 * failing one first, that later operations fail without waiting, that comm_abort goes through
 * the bootstrap after cancelling, and the message (operation, group, size, timeout). */
#include <stdlib.h>
#include <string.h>
#include "runtime/comm_impl.h"
#include "runtime/watchdog.h"
#include "sim/util.h"
#include "tests/test.h"

enum fake_mode { FAKE_COMPLETES, FAKE_HANGS, FAKE_PEER_DIES, FAKE_LOCAL_ERROR };

/* what the fake rank saw: cancels in order, and the bootstrap's abort */
struct fake_rank {
	struct watchdog *wd;
	struct comm *cancelled[8];
	int ncancelled;
	int job_abort_code;     /* -1 until the bootstrap was asked to end the job */
	int lib_destroys;       /* communicators destroyed through the library (not aborted) */
};

struct fake_impl {
	struct fake_rank *rank;
	enum fake_mode mode;
	long polls;             /* polls until the mode's event: completion or the error */
};

struct fake_req {
	struct comm_req base;
	long polls_left;
	enum fake_mode mode;
};

static struct fake_impl *impl_of(struct comm *c) { return c->impl; }

static enum wd_status fake_probe(void *ctx, char *detail, size_t len)
{
	struct fake_req *q = ctx;
	if (q->mode == FAKE_HANGS || q->polls_left-- > 0) return WD_RUNNING;
	switch (q->mode) {
	case FAKE_PEER_DIES:
		snprintf(detail, len, "NCCL remote error: remote process exited");
		return watchdog_classify_nccl(6);
	case FAKE_LOCAL_ERROR:
		snprintf(detail, len, "CUDA illegal address");
		return WD_LOCAL_ERROR;
	default:
		return WD_COMPLETE;
	}
}

static int fake_start(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err)
{
	struct fake_req *q = calloc(1, sizeof(*q));
	if (!q) return errf(err, "fake: out of memory");
	q->base.comm = c;
	q->base.coll = a->coll;
	q->base.start_s = now_s();
	q->polls_left = impl_of(c)->polls;
	q->mode = impl_of(c)->mode;
	*req = &q->base;
	return 0;
}

static int fake_wait(struct comm_req *r, char *err)
{
	struct fake_rank *k = impl_of(r->comm)->rank;
	int rc = watchdog_wait(k->wd, r->comm, r->coll, r->start_s, fake_probe, r, err);
	free(r);
	return rc;
}

static int fake_test(struct comm_req *r, int *done, char *err)
{
	(void)err;
	char d[64];
	*done = fake_probe(r, d, sizeof(d)) == WD_COMPLETE;
	return 0;
}

static int fake_split(struct comm *p, int color, int key, struct comm **out, char *err)
{
	(void)p, (void)color, (void)key, (void)out;
	return errf(err, "fake: no split");
}

static void fake_destroy(struct comm *c)
{
	struct fake_impl *m = impl_of(c);
	if (!watchdog_cancelled(m->rank->wd, c)) m->rank->lib_destroys++;
	watchdog_remove(m->rank->wd, c);
	free(m);
}

/* as comm_nccl.cu's: cancel every communicator of the rank, then the bootstrap ends the job */
static void fake_abort(struct comm *c, int code)
{
	struct fake_rank *k = impl_of(c)->rank;
	watchdog_abort_all(k->wd, c);
	k->job_abort_code = code;
}

static const struct comm_ops fake_ops = {
	.name = "fake", .start = fake_start, .wait = fake_wait, .test = fake_test,
	.split = fake_split, .destroy = fake_destroy, .abort = fake_abort,
};

/* the rank of a communicator is found through its impl; the hook records the order */
static void fake_cancel(struct comm *c)
{
	struct fake_rank *k = impl_of(c)->rank;
	if (k->ncancelled < 8) k->cancelled[k->ncancelled++] = c;
}

static struct comm *fake_comm(struct fake_rank *k, const char *name, int size, double timeout_s)
{
	struct comm *c = comm_alloc(size);
	struct fake_impl *m = calloc(1, sizeof(*m));
	char err[ERR_LEN];
	if (!c || !m) { free(m); if (c) { free(c->ranks); free(c); } return NULL; }
	m->rank = k;
	c->ops = &fake_ops;
	c->impl = m;
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->timeout_s = timeout_s;
	if (watchdog_add(k->wd, c, err)) { comm_destroy(c); return NULL; }
	return c;
}

static void set_mode(struct comm *c, enum fake_mode mode, long polls)
{
	impl_of(c)->mode = mode;
	impl_of(c)->polls = polls;
}

/* world (8 ranks), dp (2), tp (4), registered in that order */
static int rank_setup(struct fake_rank *k, struct comm **w, struct comm **dp, struct comm **tp, double timeout_s)
{
	char err[ERR_LEN];
	memset(k, 0, sizeof(*k));
	k->job_abort_code = -1;
	if (watchdog_create(fake_cancel, &k->wd, err)) return -1;
	*w = fake_comm(k, "world", 8, timeout_s);
	*dp = fake_comm(k, "dp", 2, timeout_s);
	*tp = fake_comm(k, "tp", 4, timeout_s);
	return *w && *dp && *tp ? 0 : -1;
}

static void rank_teardown(struct fake_rank *k, struct comm *w, struct comm *dp, struct comm *tp)
{
	comm_destroy(tp);
	comm_destroy(dp);
	comm_destroy(w);
	watchdog_destroy(k->wd);
}

static void test_rules(void)
{
	CHECK(!watchdog_deadline_passed(0, 1e9, 0), "timeout 0 never passes");
	CHECK(!watchdog_deadline_passed(10, 15, 5), "exactly at the deadline is not past it");
	CHECK(watchdog_deadline_passed(10, 15.001, 5), "just past the deadline");
	CHECK(!watchdog_deadline_passed(10, 10.5, 1), "inside the deadline");
	/* nccl.h: ncclSuccess 0, ncclUnhandledCudaError 1, ncclSystemError 2, ncclInternalError 3,
	 * ncclInvalidArgument 4, ncclInvalidUsage 5, ncclRemoteError 6, ncclInProgress 7 */
	int running[] = {0, 7}, peer[] = {2, 6}, local[] = {1, 3, 4, 5, 8, -1};
	for (int i = 0; i < 2; i++) CHECK(watchdog_classify_nccl(running[i]) == WD_RUNNING, "nccl %d runs", running[i]);
	for (int i = 0; i < 2; i++) CHECK(watchdog_classify_nccl(peer[i]) == WD_PEER_ERROR, "nccl %d is a peer's", peer[i]);
	for (int i = 0; i < 6; i++) CHECK(watchdog_classify_nccl(local[i]) == WD_LOCAL_ERROR, "nccl %d is local", local[i]);
	char err[ERR_LEN];
	struct watchdog *wd;
	CHECK(watchdog_create(NULL, &wd, err) == -1 && strstr(err, "cancel"), "a watchdog without cancel: %s", err);
	watchdog_destroy(NULL);
}

static void test_completes(void)
{
	struct fake_rank k;
	struct comm *w, *dp, *tp;
	char err[ERR_LEN] = "";
	if (rank_setup(&k, &w, &dp, &tp, 0)) { CHECK(0, "setup"); return; }
	float x[4] = {1, 2, 3, 4};
	set_mode(tp, FAKE_COMPLETES, 100);
	CHECK(comm_allreduce(tp, x, x, 4, COMM_F32, err) == 0, "completes after 100 polls: %s", err);
	/* past the polls after which the wait sleeps between polls; no limit set */
	set_mode(dp, FAKE_COMPLETES, 6000);
	CHECK(comm_allgather(dp, x, x, 2, COMM_F32, err) == 0, "completes after 6000 polls: %s", err);
	CHECK(k.ncancelled == 0 && !watchdog_aborted(k.wd), "nothing cancelled after completions");
	CHECK(watchdog_count(k.wd) == 3, "3 communicators registered: %d", watchdog_count(k.wd));
	rank_teardown(&k, w, dp, tp);
	CHECK(k.lib_destroys == 3, "3 destroyed through the library: %d", k.lib_destroys);
}

static void test_hang_times_out(void)
{
	struct fake_rank k;
	struct comm *w, *dp, *tp;
	char err[ERR_LEN] = "";
	if (rank_setup(&k, &w, &dp, &tp, 0.05)) { CHECK(0, "setup"); return; }
	float x[4] = {0};
	set_mode(tp, FAKE_HANGS, 0);
	double t0 = now_s();
	int rc = comm_allreduce(tp, x, x, 4, COMM_F32, err);
	double dt = now_s() - t0;
	CHECK(rc == -1, "a hung all-reduce fails");
	CHECK(dt >= 0.05 && dt < 2, "it fails after the 0.05 s timeout, not before or much later: %.3f s", dt);
	CHECK(strstr(err, "allreduce on group tp (4 ranks) did not complete within 0.05 s") &&
	      strstr(err, "aborted 3 communicators"), "message: %s", err);
	CHECK(k.ncancelled == 3 && k.cancelled[0] == tp && k.cancelled[1] == dp && k.cancelled[2] == w,
	      "tp cancelled first, then dp and world: %d cancels", k.ncancelled);
	CHECK(watchdog_aborted(k.wd) && watchdog_cancelled(k.wd, w) && watchdog_cancelled(k.wd, dp),
	      "every communicator marked cancelled");
	/* the next operation, on another group, fails at once and cancels nothing again */
	set_mode(dp, FAKE_HANGS, 0);
	t0 = now_s();
	rc = comm_reduce_scatter(dp, x, x + 2, 1, COMM_F32, err);
	CHECK(rc == -1 && now_s() - t0 < 0.04 && strstr(err, "reducescatter on group dp (2 ranks)") &&
	      strstr(err, "earlier failure"), "after the abort: %s", err);
	CHECK(k.ncancelled == 3, "no communicator cancelled twice: %d", k.ncancelled);
	/* the caller then ends the job through the bootstrap */
	comm_abort(w, 1);
	CHECK(k.job_abort_code == 1 && k.ncancelled == 3, "comm_abort reached the bootstrap: code %d", k.job_abort_code);
	rank_teardown(&k, w, dp, tp);
	CHECK(k.lib_destroys == 0, "aborted communicators are not destroyed through the library: %d", k.lib_destroys);
}

static void test_errors_end_at_once(void)
{
	struct fake_rank k;
	struct comm *w, *dp, *tp;
	char err[ERR_LEN] = "";
	/* no timeout: only the error can end these waits */
	if (rank_setup(&k, &w, &dp, &tp, 0)) { CHECK(0, "setup"); return; }
	float x[2] = {0};
	set_mode(dp, FAKE_PEER_DIES, 10);
	CHECK(comm_broadcast(dp, x, x, 2, COMM_F32, 0, err) == -1, "a dead peer fails the broadcast");
	CHECK(strstr(err, "broadcast on group dp (2 ranks, timeout 0 s) failed: a member rank died") &&
	      strstr(err, "aborted 3 communicators") && strstr(err, "remote process exited"), "message: %s", err);
	CHECK(k.ncancelled == 3 && k.cancelled[0] == dp && k.cancelled[1] == tp && k.cancelled[2] == w,
	      "dp first, then tp and world");
	rank_teardown(&k, w, dp, tp);

	if (rank_setup(&k, &w, &dp, &tp, 30)) { CHECK(0, "setup"); return; }
	set_mode(w, FAKE_LOCAL_ERROR, 0);
	double t0 = now_s();
	CHECK(comm_barrier(w, err) == -1 && now_s() - t0 < 5, "a local error fails the barrier at once");
	CHECK(strstr(err, "barrier on group world (8 ranks, timeout 30 s) failed on this rank") &&
	      strstr(err, "illegal address"), "message: %s", err);
	CHECK(k.ncancelled == 3 && k.cancelled[0] == w, "world first");
	rank_teardown(&k, w, dp, tp);
}

static void test_abort_without_failure(void)
{
	struct fake_rank k;
	struct comm *w, *dp, *tp;
	if (rank_setup(&k, &w, &dp, &tp, 0)) { CHECK(0, "setup"); return; }
	/* a failure outside communication (cli/ calls comm_abort): every communicator goes */
	comm_abort(dp, 3);
	CHECK(k.job_abort_code == 3 && k.ncancelled == 3 && k.cancelled[0] == dp, "comm_abort cancels all, dp first");
	comm_destroy(tp);
	CHECK(watchdog_count(k.wd) == 2, "a destroyed group leaves the registry");
	CHECK(watchdog_abort_all(k.wd, NULL) == 0, "nothing left to cancel");
	comm_destroy(dp);
	comm_destroy(w);
	watchdog_destroy(k.wd);
}

int main(void)
{
	test_rules();
	test_completes();
	test_hang_times_out();
	test_errors_end_at_once();
	test_abort_without_failure();
	return test_summary("test_watchdog");
}
