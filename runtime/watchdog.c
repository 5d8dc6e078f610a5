/* watchdog — registry of a rank's communicators, the polling wait with its deadline, and the
 * one failure path (runtime/watchdog.h). Plain C: the NCCL backend supplies the probe and the
 * cancel hook, tests supply fakes. The clock is read every 64 polls (a poll of a CUDA event
 * costs about a microsecond); after the first few thousand polls each one is followed by a
 * 20 µs sleep, so that a long wait does not spin a core at full speed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "runtime/comm_impl.h"
#include "runtime/watchdog.h"
#include "sim/util.h"

struct wd_entry {
	struct comm *c;
	int cancelled;
};

struct watchdog {
	void (*cancel)(struct comm *c);
	struct wd_entry *e;       /* in registration order */
	int n, cap;
	int aborted;
};

int watchdog_create(void (*cancel)(struct comm *c), struct watchdog **out, char *err)
{
	*out = NULL;
	if (!cancel) return errf(err, "watchdog: a cancel function is required");
	struct watchdog *wd = calloc(1, sizeof(*wd));
	if (!wd) return errf(err, "watchdog: out of memory");
	wd->cancel = cancel;
	*out = wd;
	return 0;
}

void watchdog_destroy(struct watchdog *wd)
{
	if (!wd) return;
	free(wd->e);
	free(wd);
}

int watchdog_add(struct watchdog *wd, struct comm *c, char *err)
{
	if (wd->n == wd->cap) {
		int cap = wd->cap ? 2 * wd->cap : 8;
		struct wd_entry *e = realloc(wd->e, sizeof(*e) * (size_t)cap);
		if (!e) return errf(err, "watchdog: out of memory registering group %s", comm_name(c));
		wd->e = e;
		wd->cap = cap;
	}
	wd->e[wd->n++] = (struct wd_entry){c, 0};
	return 0;
}

static int find(const struct watchdog *wd, const struct comm *c)
{
	for (int i = 0; i < wd->n; i++)
		if (wd->e[i].c == c) return i;
	return -1;
}

void watchdog_remove(struct watchdog *wd, struct comm *c)
{
	int i = find(wd, c);
	if (i < 0) return;
	memmove(wd->e + i, wd->e + i + 1, sizeof(*wd->e) * (size_t)(wd->n - i - 1));
	wd->n--;
}

int watchdog_deadline_passed(double start_s, double now, double timeout_s)
{
	return timeout_s > 0 && now - start_s > timeout_s;
}

enum wd_status watchdog_classify_nccl(int nccl_result)
{
	switch (nccl_result) {
	case 0: /* ncclSuccess */
	case 7: /* ncclInProgress */
		return WD_RUNNING;
	case 2: /* ncclSystemError: a socket or a system call failed, as when a peer is gone */
	case 6: /* ncclRemoteError */
		return WD_PEER_ERROR;
	default:
		return WD_LOCAL_ERROR;
	}
}

static void cancel_one(struct watchdog *wd, int i, int *count)
{
	if (wd->e[i].cancelled) return;
	wd->e[i].cancelled = 1;
	wd->aborted = 1;
	wd->cancel(wd->e[i].c);
	(*count)++;
}

int watchdog_abort_all(struct watchdog *wd, struct comm *first)
{
	int count = 0, f = first ? find(wd, first) : -1;
	if (f >= 0) cancel_one(wd, f, &count);
	for (int i = wd->n - 1; i >= 0; i--) cancel_one(wd, i, &count);
	return count;
}

int watchdog_aborted(const struct watchdog *wd) { return wd->aborted; }
int watchdog_count(const struct watchdog *wd) { return wd->n; }

int watchdog_cancelled(const struct watchdog *wd, const struct comm *c)
{
	int i = find(wd, c);
	return i >= 0 && wd->e[i].cancelled;
}

/* the part of the message that says what happened, by reason */
static const char *what_happened(enum wd_status why)
{
	switch (why) {
	case WD_PEER_ERROR: return "failed: a member rank died or a link to it broke";
	case WD_LOCAL_ERROR: return "failed on this rank";
	case WD_TIMED_OUT: return "did not complete";
	default: return "stopped";
	}
}

int watchdog_fail(struct watchdog *wd, struct comm *c, enum coll op, enum wd_status why,
		  const char *detail, char *err)
{
	int n = watchdog_abort_all(wd, c);
	const char *name = op < COLL_COUNT ? comm_colls[op].name : "operation";
	/* the detail (the library's text) goes last: ERR_LEN cuts it first */
	if (why == WD_TIMED_OUT)
		return errf(err, "comm: %s on group %s (%d ranks) did not complete within %g s: a member "
			    "rank may have died or stopped, or the ranks issued different collectives; "
			    "aborted %d communicators of this rank", name, comm_name(c), comm_size(c),
			    c->timeout_s, n);
	return errf(err, "comm: %s on group %s (%d ranks, timeout %g s) %s; aborted %d communicators "
		    "of this rank: %s", name, comm_name(c), comm_size(c), c->timeout_s, what_happened(why),
		    n, detail && detail[0] ? detail : "no detail");
}

static void nap_20us(void)
{
	struct timespec ts = {0, 20000};
	nanosleep(&ts, NULL);
}

int watchdog_wait(struct watchdog *wd, struct comm *c, enum coll op, double start_s,
		  wd_probe_fn probe, void *ctx, char *err)
{
	if (wd->aborted)
		return errf(err, "comm: %s on group %s (%d ranks): this rank's communicators were aborted "
			    "after an earlier failure", op < COLL_COUNT ? comm_colls[op].name : "operation",
			    comm_name(c), comm_size(c));
	for (unsigned long i = 1;; i++) {
		char detail[128] = "";
		enum wd_status st = probe(ctx, detail, sizeof(detail));
		if (st == WD_COMPLETE) return 0;
		if (st != WD_RUNNING) return watchdog_fail(wd, c, op, st, detail, err);
		if (i % 64 == 0 && watchdog_deadline_passed(start_s, now_s(), c->timeout_s))
			return watchdog_fail(wd, c, op, WD_TIMED_OUT, NULL, err);
		if (i > 4096) nap_20us();
	}
}
