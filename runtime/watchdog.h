/* watchdog — what a rank does when a communication it waits for cannot finish: a peer died,
 * a link broke, or the ranks issued different collectives and one of them waits for ever.
 * Device communicators (NCCL, runtime/comm_nccl.cu) run asynchronously, so a wait polls the
 * operation through a probe (for NCCL: cudaEventQuery, then ncclCommGetAsyncError) until it
 * completes, reports an error, or passes the communicator's deadline (struct comm's
 * timeout_s; 0 waits without limit). On error or deadline the watchdog aborts every
 * communicator registered with it on this rank (ncclCommAbort, through the `cancel` hook),
 * so that nothing on the rank stays blocked in the library, and fills err with one message
 * naming the operation, the group, its size and the timeout. The caller then ends the job
 * through the bootstrap (comm_abort -> watchdog_abort_all, then MPI_Abort): library code
 * never exits.
 *
 * Ownership: a watchdog is created with a world communicator and shared by every group split
 * from it; it holds the communicators by pointer (not owned). Destroy it after every group.
 * Units: seconds (now_s() clock). Invariant: each registered communicator is cancelled at
 * most once, the failing one first; a cancelled communicator must not be used again (its
 * operations fail at once) and must not be destroyed through the library (the abort freed it). */
#ifndef SCALEPLAN_WATCHDOG_H
#define SCALEPLAN_WATCHDOG_H

#include <stddef.h>

#include "sim/coll.h"

#ifdef __cplusplus
extern "C" {
#endif

struct comm;
struct watchdog;

/* What one poll of an operation found. */
enum wd_status {
	WD_RUNNING,       /* not finished, no error: keep polling */
	WD_COMPLETE,
	WD_PEER_ERROR,    /* another rank or the link failed (NCCL remote or system error) */
	WD_LOCAL_ERROR,   /* this rank's own failure (CUDA error, invalid usage, internal) */
	WD_TIMED_OUT,     /* still running at the deadline (watchdog_fail's reason; no probe's) */
};

/* One poll: returns the status and, for an error, writes a short detail into detail[len]
 * (the library's own error text). ctx is the caller's (an event, a request). */
typedef enum wd_status (*wd_probe_fn)(void *ctx, char *detail, size_t len);

/* cancel aborts one communicator without waiting for its peers (ncclCommAbort). */
int watchdog_create(void (*cancel)(struct comm *c), struct watchdog **out, char *err);
void watchdog_destroy(struct watchdog *wd);   /* NULL is accepted */
int watchdog_add(struct watchdog *wd, struct comm *c, char *err);
void watchdog_remove(struct watchdog *wd, struct comm *c);

/* 1 when an operation started at start_s has run past timeout_s at now (timeout_s 0: never). */
int watchdog_deadline_passed(double start_s, double now, double timeout_s);

/* NCCL's result codes (nccl.h, ncclResult_t, stable since NCCL 2.4: 0 success, 1 unhandled
 * CUDA error, 2 system error, 3 internal error, 4 invalid argument, 5 invalid usage, 6 remote
 * error, 7 in progress) as a wait sees them: system and remote errors are a peer's or the
 * network's (a dead peer's sockets fail), in-progress and success are still running. */
enum wd_status watchdog_classify_nccl(int nccl_result);

/* Polls probe(ctx) until complete (returns 0) or failed: on an error status or once the
 * deadline of c (c->timeout_s after start_s) passes, aborts every communicator of this rank
 * and returns -1 with the message in err. `op` names the operation. Returns -1 at once when
 * the watchdog has already aborted. */
int watchdog_wait(struct watchdog *wd, struct comm *c, enum coll op, double start_s,
		  wd_probe_fn probe, void *ctx, char *err);

/* The failure path of watchdog_wait, for a caller that found the error itself: aborts every
 * communicator (c first), writes the message and returns -1. */
int watchdog_fail(struct watchdog *wd, struct comm *c, enum coll op, enum wd_status why,
		  const char *detail, char *err);

/* Cancels every registered communicator not yet cancelled (first, when not NULL, before the
 * others; the rest newest first: groups before the world they came from); returns how many
 * it cancelled now. */
int watchdog_abort_all(struct watchdog *wd, struct comm *first);

int watchdog_aborted(const struct watchdog *wd);            /* 1 once anything was cancelled */
int watchdog_cancelled(const struct watchdog *wd, const struct comm *c);
int watchdog_count(const struct watchdog *wd);              /* registered communicators */

#ifdef __cplusplus
}
#endif

#endif
