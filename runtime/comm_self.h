/* comm_self — the one-rank backend of runtime/comm.h (runtime/comm_self.c): a world of size 1
 * for builds and machines without MPI (`make NOMPI=1` into build-nompi/, e.g. a one-GPU box
 * with no Open MPI). Every group split from it has one member; collectives are copies of the
 * caller's own contribution (the sum of one rank is that rank's buffer); send and receive
 * reach the calling rank only, matched first in, first out per communicator.
 *
 * Ownership: as every backend (comm.h). Invariant: nothing here ever waits, so a request that
 * cannot complete by itself (a send to self with no receive posted, or the reverse) fails at
 * its wait with a message instead of hanging the single thread that would have to match it.
 * In a build with NOMPI=1, comm_mpi_world() is this world too, so the verbs that bootstrap
 * over MPI run unchanged on one rank; it refuses when a launcher started several ranks. */
#ifndef SCALEPLAN_COMM_SELF_H
#define SCALEPLAN_COMM_SELF_H

#include "runtime/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The one-rank world, named "world"; comm_destroy() frees it. */
int comm_self_world(struct comm **out, char *err);

#ifdef __cplusplus
}
#endif

#endif
