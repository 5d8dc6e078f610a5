/* comm — one interface to the collectives the runtime needs, over two backends: MPI (CPU
 * buffers; what the tests run) and NCCL (device buffers; runtime/comm_nccl.cu, declared in
 * runtime/comm_nccl.h). A `struct comm` is one group of global ranks; it is created from the
 * world communicator and the member list the rank layout (sim/layout.h) gives, collectively
 * by every world rank. Every operation exists blocking and non-blocking; a non-blocking call
 * returns a request that comm_wait() completes and frees exactly once.
 *
 * Units: counts are elements of `dtype`, ranks inside a communicator are positions in its
 * member list (0..size). Ownership: the caller owns every buffer, and must keep the buffers of
 * a non-blocking call untouched until comm_wait() returns; comm_destroy() frees a
 * communicator (NULL is accepted) and must come after every request on it is waited for.
 * Errors return -1 with a message naming the operation and group; nothing exits.
 *
 * Buffer conventions (those of NCCL, so both backends behave alike):
 *   all-reduce (sum)  recv[i] = sum over ranks of send[i], i < count; in place if send == recv
 *   reduce-scatter    recv[0..count) = sum over ranks of send[rank*count ..][0..count);
 *                     send and recv must not overlap
 *   all-gather        recv[r*count ..] = send of rank r; in place if send == recv + rank*count
 *   all-to-all        recv[r*count ..] = send[rank*count ..] of rank r
 *   all-to-all-v      as all-to-all with per-peer element counts and displacements
 *   broadcast         recv = send of root (send ignored elsewhere); in place if send == recv
 *   send/recv         point-to-point with a peer; comm_sendrecv pairs one of each so that
 *                     rings and pipeline exchanges cannot deadlock
 *
 * Invariant: on one communicator, every member issues the same collectives in the same order
 * (both MPI and NCCL match collectives by order, not by name). */
#ifndef SCALEPLAN_COMM_H
#define SCALEPLAN_COMM_H

#include <stddef.h>

#include "sim/coll.h"

#ifdef __cplusplus
extern "C" {
#endif

enum comm_dtype { COMM_F32, COMM_BF16, COMM_F64, COMM_BYTE, COMM_DTYPE_COUNT };


struct comm;
struct comm_req;

/* One operation, as the backends and the descriptor table take it. Unused fields are 0;
 * peer_send / peer_recv of -1 mean "no send" / "no receive". */
struct comm_args {
	enum coll coll;
	enum comm_dtype dtype;
	const void *send;
	void *recv;
	size_t count;                 /* see the buffer conventions above */
	const size_t *send_counts, *send_displs, *recv_counts, *recv_displs;  /* all-to-all-v */
	int root;                     /* broadcast */
	int peer_send, peer_recv;     /* send/recv */
	size_t recv_count;            /* send/recv: elements received (count is elements sent) */
};

/* nccl-tests descriptor of one collective: its name, the bus-bandwidth factor for n ranks,
 * the byte size S nccl-tests reports for `count` (model.md §3.1, TV-N1/TV-N2), and the
 * function that starts it. */
struct comm_coll_desc {
	const char *name;
	double (*busbw_factor)(int n);
	size_t (*size_bytes)(size_t count, size_t elem_bytes, int n);
	int (*start)(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err);
};
extern const struct comm_coll_desc comm_colls[COLL_COUNT];

size_t comm_dtype_bytes(enum comm_dtype t);
const char *comm_dtype_name(enum comm_dtype t);

/* --- communicators ------------------------------------------------------------------- */

/* MPI world: initialises MPI (thread level FUNNELED) unless the program already did, and
 * sets MPI_ERRORS_RETURN so that failures become messages. comm_destroy() of the world
 * finalises MPI when this call initialised it (MPI cannot be initialised twice per process). */
int comm_mpi_world(struct comm **out, char *err);

/* Collective over `parent`: every member calls it with the members of its own group (global
 * ranks, i.e. parent positions when parent is the world), ordered by position; the groups of
 * all callers must partition the parent. `name` labels messages ("tp", "dp*cp"). */
int comm_create_group(struct comm *parent, const int *ranks, int n, const char *name,
		      struct comm **out, char *err);
void comm_destroy(struct comm *c);

int comm_rank(const struct comm *c);          /* position in the group */
int comm_size(const struct comm *c);
int comm_global_rank(const struct comm *c, int pos);  /* world rank of member `pos` */
const char *comm_name(const struct comm *c);
const char *comm_backend(const struct comm *c);       /* "mpi" or "nccl" */

/* Every wait on `c` (and on groups created from it afterwards) fails after timeout_s seconds
 * instead of blocking for ever; 0 (the default) waits without limit. */
void comm_set_timeout(struct comm *c, double timeout_s);

/* Ends every process of the job (MPI_Abort); for the program's top level after an error. A
 * backend that cannot (NCCL without its MPI bootstrap) tears its communicator down and
 * returns: the caller (cli/) then ends the process with `code`. */
void comm_abort(struct comm *c, int code);

/* --- operations: blocking ------------------------------------------------------------ */

int comm_allreduce(struct comm *c, const void *send, void *recv, size_t count,
		   enum comm_dtype t, char *err);
int comm_reduce_scatter(struct comm *c, const void *send, void *recv, size_t count,
			enum comm_dtype t, char *err);
int comm_allgather(struct comm *c, const void *send, void *recv, size_t count,
		   enum comm_dtype t, char *err);
int comm_alltoall(struct comm *c, const void *send, void *recv, size_t count,
		  enum comm_dtype t, char *err);
int comm_alltoallv(struct comm *c, const void *send, const size_t *send_counts,
		   const size_t *send_displs, void *recv, const size_t *recv_counts,
		   const size_t *recv_displs, enum comm_dtype t, char *err);
int comm_broadcast(struct comm *c, const void *send, void *recv, size_t count,
		   enum comm_dtype t, int root, char *err);
int comm_send(struct comm *c, const void *buf, size_t count, enum comm_dtype t, int peer,
	      char *err);
int comm_recv(struct comm *c, void *buf, size_t count, enum comm_dtype t, int peer, char *err);
int comm_sendrecv(struct comm *c, const void *send, size_t send_count, int dst, void *recv,
		  size_t recv_count, int src, enum comm_dtype t, char *err);
int comm_barrier(struct comm *c, char *err);

/* --- operations: non-blocking -------------------------------------------------------- */

/* Starts any operation described by `a`; *req is then owned by the caller until comm_wait. */
int comm_start(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err);
int comm_iallreduce(struct comm *c, const void *send, void *recv, size_t count,
		    enum comm_dtype t, struct comm_req **req, char *err);
int comm_ireduce_scatter(struct comm *c, const void *send, void *recv, size_t count,
			 enum comm_dtype t, struct comm_req **req, char *err);
int comm_iallgather(struct comm *c, const void *send, void *recv, size_t count,
		    enum comm_dtype t, struct comm_req **req, char *err);
int comm_ialltoall(struct comm *c, const void *send, void *recv, size_t count,
		   enum comm_dtype t, struct comm_req **req, char *err);
int comm_ibroadcast(struct comm *c, const void *send, void *recv, size_t count,
		    enum comm_dtype t, int root, struct comm_req **req, char *err);
int comm_isend(struct comm *c, const void *buf, size_t count, enum comm_dtype t, int peer,
	       struct comm_req **req, char *err);
int comm_irecv(struct comm *c, void *buf, size_t count, enum comm_dtype t, int peer,
	       struct comm_req **req, char *err);

/* Completes and frees the request (NULL is accepted and does nothing). The request is freed
 * even when the operation failed. */
int comm_wait(struct comm_req *req, char *err);
/* *done = 1 once complete (the request then still needs comm_wait, which returns at once).
 * MPI makes progress only inside MPI calls, so code that overlaps work with communication
 * calls comm_test now and then. */
int comm_test(struct comm_req *req, int *done, char *err);

#ifdef __cplusplus
}
#endif

#endif
