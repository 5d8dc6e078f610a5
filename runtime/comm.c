/* comm — the backend-independent half: the nccl-tests descriptor table, argument checks
 * that name the operation and group, the blocking wrappers (start + wait), and group
 * creation from a member list. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/comm_impl.h"
#include "sim/util.h"

static const size_t dtype_bytes[COMM_DTYPE_COUNT] = {4, 2, 8, 1};
static const char *const dtype_names[COMM_DTYPE_COUNT] = {"f32", "bf16", "f64", "byte"};

size_t comm_dtype_bytes(enum comm_dtype t) { return (unsigned)t < COMM_DTYPE_COUNT ? dtype_bytes[t] : 0; }
const char *comm_dtype_name(enum comm_dtype t) { return (unsigned)t < COMM_DTYPE_COUNT ? dtype_names[t] : "?"; }

/* nccl-tests bus-bandwidth factors, model.md §3.1 / TV-N1 */
static double factor_allreduce(int n) { return n > 0 ? 2.0 * (n - 1) / n : 0; }
static double factor_nm1_n(int n) { return n > 0 ? (double)(n - 1) / n : 0; }
static double factor_one(int n) { (void)n; return 1; }
static double factor_zero(int n) { (void)n; return 0; }

/* nccl-tests size conventions, TV-N2 */
static size_t size_buffer(size_t count, size_t eb, int n) { (void)n; return count * eb; }
static size_t size_total(size_t count, size_t eb, int n) { return count * eb * (size_t)n; }
static size_t size_none(size_t count, size_t eb, int n) { (void)count; (void)eb; (void)n; return 0; }

static int is_reducible(enum comm_dtype t) { return t == COMM_F32 || t == COMM_BF16 || t == COMM_F64; }

static int bad(struct comm *c, const struct comm_args *a, char *err, const char *why)
{
	return errf(err, "comm: %s on group %s (%d ranks): %s", comm_colls[a->coll].name,
		    c->name, c->size, why);
}

/* Every backend passes counts to MPI or NCCL; MPI takes int counts, so the total element
 * count of one call is kept below INT_MAX on both (the same limit everywhere). */
static int check_common(struct comm *c, const struct comm_args *a, size_t total, char *err)
{
	if ((unsigned)a->dtype >= COMM_DTYPE_COUNT)
		return bad(c, a, err, "unknown data type");
	if (total > INT_MAX)
		return bad(c, a, err, "more than INT_MAX elements in one call");
	return 0;
}

static int start_backend(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err)
{
	*req = NULL;
	return c->ops->start(c, a, req, err);
}

static int start_allreduce(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err)
{
	if (check_common(c, a, a->count, err)) return -1;
	if (!is_reducible(a->dtype)) return bad(c, a, err, "cannot sum this data type");
	return start_backend(c, a, req, err);
}

static int start_reduce_scatter(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err)
{
	size_t eb = comm_dtype_bytes(a->dtype);
	if (check_common(c, a, a->count * (size_t)c->size, err)) return -1;
	if (!is_reducible(a->dtype)) return bad(c, a, err, "cannot sum this data type");
	uintptr_t s = (uintptr_t)a->send, r = (uintptr_t)a->recv;
	if (a->count && s < r + a->count * eb && r < s + a->count * eb * (size_t)c->size)
		return bad(c, a, err, "send and receive buffers overlap");
	return start_backend(c, a, req, err);
}

static int start_gather_like(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err)
{
	if (check_common(c, a, a->count * (size_t)c->size, err)) return -1;
	return start_backend(c, a, req, err);
}

static int start_alltoallv(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err)
{
	if (!a->send_counts || !a->send_displs || !a->recv_counts || !a->recv_displs)
		return bad(c, a, err, "counts and displacements are required");
	size_t ts = 0, tr = 0;
	for (int i = 0; i < c->size; i++) {
		if (a->send_displs[i] > INT_MAX || a->recv_displs[i] > INT_MAX)
			return bad(c, a, err, "displacement above INT_MAX elements");
		ts += a->send_counts[i];
		tr += a->recv_counts[i];
	}
	if (check_common(c, a, ts > tr ? ts : tr, err)) return -1;
	return start_backend(c, a, req, err);
}

static int start_broadcast(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err)
{
	if (check_common(c, a, a->count, err)) return -1;
	if (a->root < 0 || a->root >= c->size) return bad(c, a, err, "root outside the group");
	return start_backend(c, a, req, err);
}

static int start_sendrecv(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err)
{
	if (check_common(c, a, a->count > a->recv_count ? a->count : a->recv_count, err)) return -1;
	if (a->peer_send >= c->size || a->peer_recv >= c->size || a->peer_send < -1 || a->peer_recv < -1)
		return bad(c, a, err, "peer outside the group");
	if (a->peer_send < 0 && a->peer_recv < 0) return bad(c, a, err, "neither a send nor a receive");
	return start_backend(c, a, req, err);
}

static int start_barrier(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err)
{
	return start_backend(c, a, req, err);
}

const struct comm_coll_desc comm_colls[COLL_COUNT] = {
	[COLL_ALLREDUCE]      = {"allreduce",     factor_allreduce, size_buffer, start_allreduce},
	[COLL_REDUCESCATTER] = {"reducescatter", factor_nm1_n,     size_total,  start_reduce_scatter},
	[COLL_ALLGATHER]      = {"allgather",     factor_nm1_n,     size_total,  start_gather_like},
	[COLL_ALLTOALL]       = {"alltoall",      factor_nm1_n,     size_total,  start_gather_like},
	[COLL_ALLTOALLV]      = {"alltoallv",     factor_nm1_n,     size_total,  start_alltoallv},
	[COLL_BROADCAST]      = {"broadcast",     factor_one,       size_buffer, start_broadcast},
	[COLL_SENDRECV]       = {"sendrecv",      factor_one,       size_buffer, start_sendrecv},
	[COLL_BARRIER]        = {"barrier",       factor_zero,      size_none,   start_barrier},
};

/* --- communicators --------------------------------------------------------------------- */

struct comm *comm_alloc(int size)
{
	struct comm *c = calloc(1, sizeof(*c));
	if (!c) return NULL;
	c->ranks = malloc(sizeof(int) * (size_t)(size > 0 ? size : 1));
	if (!c->ranks) { free(c); return NULL; }
	for (int i = 0; i < size; i++) c->ranks[i] = -1;
	c->size = size;
	return c;
}

int comm_create_group(struct comm *parent, const int *ranks, int n, const char *name,
		      struct comm **out, char *err)
{
	*out = NULL;
	int key = -1, color = INT_MAX;
	for (int i = 0; i < n; i++) {
		if (ranks[i] < 0 || ranks[i] >= parent->size)
			return errf(err, "comm: group %s lists rank %d outside %s (%d ranks)", name,
				    ranks[i], parent->name, parent->size);
		if (ranks[i] == parent->rank) key = i;
		if (ranks[i] < color) color = ranks[i];
	}
	if (key < 0)
		return errf(err, "comm: group %s does not contain the calling rank %d", name, parent->rank);
	struct comm *c;
	if (parent->ops->split(parent, color, key, &c, err)) return -1;
	if (c->size != n || c->rank != key) {
		int got = c->size;
		comm_destroy(c);
		return errf(err, "comm: group %s has %d members on this rank but %d after the split "
			    "(the callers' groups do not partition %s)", name, n, got, parent->name);
	}
	for (int i = 0; i < n; i++) c->ranks[i] = parent->ranks[ranks[i]];
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->timeout_s = parent->timeout_s;
	*out = c;
	return 0;
}

void comm_destroy(struct comm *c)
{
	if (!c) return;
	c->ops->destroy(c);
	free(c->ranks);
	free(c);
}

int comm_rank(const struct comm *c) { return c->rank; }
int comm_size(const struct comm *c) { return c->size; }
int comm_global_rank(const struct comm *c, int pos) { return pos >= 0 && pos < c->size ? c->ranks[pos] : -1; }
const char *comm_name(const struct comm *c) { return c->name; }
const char *comm_backend(const struct comm *c) { return c->ops->name; }
void comm_set_timeout(struct comm *c, double timeout_s) { c->timeout_s = timeout_s > 0 ? timeout_s : 0; }
void comm_abort(struct comm *c, int code) { c->ops->abort(c, code); }

/* --- operations ------------------------------------------------------------------------ */

int comm_start(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err)
{
	*req = NULL;
	if ((unsigned)a->coll >= COLL_COUNT)
		return errf(err, "comm: unknown collective %d on group %s", (int)a->coll, c->name);
	return comm_colls[a->coll].start(c, a, req, err);
}

int comm_wait(struct comm_req *req, char *err)
{
	if (!req) return 0;
	return req->comm->ops->wait(req, err);
}

int comm_test(struct comm_req *req, int *done, char *err)
{
	*done = 1;
	if (!req) return 0;
	return req->comm->ops->test(req, done, err);
}

static int run_blocking(struct comm *c, const struct comm_args *a, char *err)
{
	struct comm_req *r;
	if (comm_start(c, a, &r, err)) return -1;
	return comm_wait(r, err);
}

static struct comm_args args_of(enum coll coll, const void *send, void *recv, size_t count,
				enum comm_dtype t)
{
	struct comm_args a = {.coll = coll, .dtype = t, .send = send, .recv = recv, .count = count,
			      .peer_send = -1, .peer_recv = -1};
	return a;
}

int comm_iallreduce(struct comm *c, const void *send, void *recv, size_t count, enum comm_dtype t,
		    struct comm_req **req, char *err)
{
	struct comm_args a = args_of(COLL_ALLREDUCE, send, recv, count, t);
	return comm_start(c, &a, req, err);
}

int comm_ireduce_scatter(struct comm *c, const void *send, void *recv, size_t count,
			 enum comm_dtype t, struct comm_req **req, char *err)
{
	struct comm_args a = args_of(COLL_REDUCESCATTER, send, recv, count, t);
	return comm_start(c, &a, req, err);
}

int comm_iallgather(struct comm *c, const void *send, void *recv, size_t count, enum comm_dtype t,
		    struct comm_req **req, char *err)
{
	struct comm_args a = args_of(COLL_ALLGATHER, send, recv, count, t);
	return comm_start(c, &a, req, err);
}

int comm_ialltoall(struct comm *c, const void *send, void *recv, size_t count, enum comm_dtype t,
		   struct comm_req **req, char *err)
{
	struct comm_args a = args_of(COLL_ALLTOALL, send, recv, count, t);
	return comm_start(c, &a, req, err);
}

int comm_ibroadcast(struct comm *c, const void *send, void *recv, size_t count, enum comm_dtype t,
		    int root, struct comm_req **req, char *err)
{
	struct comm_args a = args_of(COLL_BROADCAST, send, recv, count, t);
	a.root = root;
	return comm_start(c, &a, req, err);
}

int comm_isend(struct comm *c, const void *buf, size_t count, enum comm_dtype t, int peer,
	       struct comm_req **req, char *err)
{
	struct comm_args a = args_of(COLL_SENDRECV, buf, NULL, count, t);
	a.peer_send = peer;
	return comm_start(c, &a, req, err);
}

int comm_irecv(struct comm *c, void *buf, size_t count, enum comm_dtype t, int peer,
	       struct comm_req **req, char *err)
{
	struct comm_args a = args_of(COLL_SENDRECV, NULL, buf, 0, t);
	a.recv_count = count;
	a.peer_recv = peer;
	return comm_start(c, &a, req, err);
}

int comm_allreduce(struct comm *c, const void *send, void *recv, size_t count, enum comm_dtype t, char *err)
{
	struct comm_args a = args_of(COLL_ALLREDUCE, send, recv, count, t);
	return run_blocking(c, &a, err);
}

int comm_reduce_scatter(struct comm *c, const void *send, void *recv, size_t count,
			enum comm_dtype t, char *err)
{
	struct comm_args a = args_of(COLL_REDUCESCATTER, send, recv, count, t);
	return run_blocking(c, &a, err);
}

int comm_allgather(struct comm *c, const void *send, void *recv, size_t count, enum comm_dtype t, char *err)
{
	struct comm_args a = args_of(COLL_ALLGATHER, send, recv, count, t);
	return run_blocking(c, &a, err);
}

int comm_alltoall(struct comm *c, const void *send, void *recv, size_t count, enum comm_dtype t, char *err)
{
	struct comm_args a = args_of(COLL_ALLTOALL, send, recv, count, t);
	return run_blocking(c, &a, err);
}

int comm_alltoallv(struct comm *c, const void *send, const size_t *send_counts,
		   const size_t *send_displs, void *recv, const size_t *recv_counts,
		   const size_t *recv_displs, enum comm_dtype t, char *err)
{
	struct comm_args a = args_of(COLL_ALLTOALLV, send, recv, 0, t);
	a.send_counts = send_counts;
	a.send_displs = send_displs;
	a.recv_counts = recv_counts;
	a.recv_displs = recv_displs;
	return run_blocking(c, &a, err);
}

int comm_broadcast(struct comm *c, const void *send, void *recv, size_t count, enum comm_dtype t,
		   int root, char *err)
{
	struct comm_args a = args_of(COLL_BROADCAST, send, recv, count, t);
	a.root = root;
	return run_blocking(c, &a, err);
}

int comm_send(struct comm *c, const void *buf, size_t count, enum comm_dtype t, int peer, char *err)
{
	struct comm_req *r;
	if (comm_isend(c, buf, count, t, peer, &r, err)) return -1;
	return comm_wait(r, err);
}

int comm_recv(struct comm *c, void *buf, size_t count, enum comm_dtype t, int peer, char *err)
{
	struct comm_req *r;
	if (comm_irecv(c, buf, count, t, peer, &r, err)) return -1;
	return comm_wait(r, err);
}

int comm_sendrecv(struct comm *c, const void *send, size_t send_count, int dst, void *recv,
		  size_t recv_count, int src, enum comm_dtype t, char *err)
{
	struct comm_args a = args_of(COLL_SENDRECV, send, recv, send_count, t);
	a.recv_count = recv_count;
	a.peer_send = dst;
	a.peer_recv = src;
	return run_blocking(c, &a, err);
}

int comm_barrier(struct comm *c, char *err)
{
	struct comm_args a = args_of(COLL_BARRIER, NULL, NULL, 0, COMM_F32);
	return run_blocking(c, &a, err);
}
