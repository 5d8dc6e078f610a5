/* comm_self — the one-rank backend (runtime/comm_self.h). With one member the buffer
 * conventions of runtime/comm.h reduce to copies: the all-reduce sum over one rank is its own
 * send buffer, a reduce-scatter keeps block 0, an all-gather or all-to-all moves block 0, a
 * broadcast's root is rank 0. Copies use memmove, so the in-place forms comm.h allows work.
 *
 * Point-to-point: a send or receive that finds its partner already posted on the same
 * communicator completes both at once (MPI's matching order for one source and tag: first in,
 * first out); otherwise it waits in the communicator's queue for its partner. A wait on a
 * request still queued fails: one thread cannot post the partner while it waits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/comm_impl.h"
#include "runtime/comm_self.h"
#include "sim/util.h"

struct self_req {
	struct comm_req base;
	int done;
	int is_send;
	const void *send;         /* is_send: the data */
	void *recv;               /* !is_send: where it goes */
	size_t bytes;             /* sent, or room to receive */
	size_t truncated;         /* !is_send: bytes of a matched send that did not fit, else 0 */
	struct self_req *next;    /* queue of unmatched requests */
	struct self_req *half;    /* a sendrecv's send half, owned by its receive half */
};

struct self_impl {
	struct self_req *head;    /* unmatched sends or receives, oldest first (never both) */
};

static const struct comm_ops self_ops;

static struct self_impl *impl_of(struct comm *c) { return c->impl; }

static void copy(void *dst, const void *src, size_t bytes)
{
	if (bytes && dst != src) memmove(dst, src, bytes);
}

static int self_fail(struct comm *c, enum coll coll, const char *why, char *err)
{
	return errf(err, "comm: %s on group %s (%d ranks): %s", comm_colls[coll].name, c->name,
		    c->size, why);
}

/* the one block of an all-to-all-v: rank 0 sends send_counts[0] and expects recv_counts[0] */
static int alltoallv_self(struct comm *c, const struct comm_args *a, size_t eb, char *err)
{
	if (a->send_counts[0] != a->recv_counts[0])
		return self_fail(c, a->coll, "the rank sends itself a count other than it expects to receive", err);
	copy((char *)a->recv + a->recv_displs[0] * eb, (const char *)a->send + a->send_displs[0] * eb,
	     a->send_counts[0] * eb);
	return 0;
}

static int collective(struct comm *c, const struct comm_args *a, char *err)
{
	size_t bytes = a->count * comm_dtype_bytes(a->dtype);
	switch (a->coll) {
	case COLL_ALLREDUCE:
	case COLL_REDUCESCATTER:
	case COLL_ALLGATHER:
	case COLL_ALLTOALL:
	case COLL_BROADCAST:
		copy(a->recv, a->send, bytes);
		return 0;
	case COLL_ALLTOALLV:
		return alltoallv_self(c, a, comm_dtype_bytes(a->dtype), err);
	case COLL_BARRIER:
		return 0;
	default:
		return errf(err, "comm: unknown collective %d on group %s", (int)a->coll, c->name);
	}
}

static void deliver(struct self_req *send, struct self_req *recv)
{
	size_t n = send->bytes < recv->bytes ? send->bytes : recv->bytes;
	copy(recv->recv, send->send, n);
	recv->truncated = send->bytes - n;
	send->done = recv->done = 1;
}

/* Matches q against the oldest queued request of the other direction, or queues it. */
static void post(struct comm *c, struct self_req *q)
{
	struct self_impl *m = impl_of(c);
	if (m->head && m->head->is_send != q->is_send) {
		struct self_req *p = m->head;
		m->head = p->next;
		p->next = NULL;
		if (q->is_send) deliver(q, p);
		else deliver(p, q);
		return;
	}
	struct self_req **tail = &m->head;
	while (*tail) tail = &(*tail)->next;
	*tail = q;
}

static void unqueue(struct comm *c, struct self_req *q)
{
	for (struct self_req **p = &impl_of(c)->head; *p; p = &(*p)->next)
		if (*p == q) { *p = q->next; return; }
}

static struct self_req *req_new(struct comm *c, enum coll coll, int done)
{
	struct self_req *q = calloc(1, sizeof(*q));
	if (!q) return NULL;
	q->base.comm = c;
	q->base.coll = coll;
	q->base.start_s = now_s();
	q->done = done;
	return q;
}

/* A send/recv to self posts the receive first, as comm_mpi.c does, so that one call carrying
 * both completes by itself. With both, the request handed out is the receive and owns the
 * send as its `half`. */
static int sendrecv(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err)
{
	size_t eb = comm_dtype_bytes(a->dtype);
	struct self_req *r = NULL, *s = NULL;
	if ((a->peer_recv >= 0 && !(r = req_new(c, a->coll, 0))) ||
	    (a->peer_send >= 0 && !(s = req_new(c, a->coll, 0)))) {
		free(r);
		return errf(err, "comm: out of memory starting sendrecv on group %s", c->name);
	}
	if (r) {
		r->recv = a->recv;
		r->bytes = a->recv_count * eb;
		post(c, r);
	}
	if (s) {
		s->is_send = 1;
		s->send = a->send;
		s->bytes = a->count * eb;
		post(c, s);
	}
	if (r) r->half = s;
	*req = r ? &r->base : &s->base;
	return 0;
}

static int self_start(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err)
{
	if (a->coll == COLL_SENDRECV) return sendrecv(c, a, req, err);
	struct self_req *q = req_new(c, a->coll, 1);
	if (!q) return errf(err, "comm: out of memory starting %s on group %s", comm_colls[a->coll].name, c->name);
	if (collective(c, a, err)) { free(q); return -1; }
	*req = &q->base;
	return 0;
}

/* one half of a point-to-point exchange: done, or still waiting for its partner */
static int half_state(struct comm *c, struct self_req *q, char *err)
{
	if (!q->done)
		return self_fail(c, COLL_SENDRECV, q->is_send ?
				 "a send to this rank has no matching receive and would never complete" :
				 "a receive from this rank has no matching send and would never complete", err);
	if (q->truncated) {
		char why[96];
		snprintf(why, sizeof(why), "the message is %zu bytes longer than the receive buffer", q->truncated);
		return self_fail(c, COLL_SENDRECV, why, err);
	}
	return 0;
}

static int self_test(struct comm_req *r, int *done, char *err)
{
	(void)err;
	struct self_req *q = (struct self_req *)r;
	*done = q->done && (!q->half || q->half->done);
	return 0;
}

/* Checks one half, takes it out of the queue if it never matched, and frees it. */
static int finish_half(struct comm *c, struct self_req *q, char *err)
{
	int rc = half_state(c, q, err);
	if (!q->done) unqueue(c, q);
	free(q);
	return rc;
}

static int self_wait(struct comm_req *r, char *err)
{
	struct self_req *q = (struct self_req *)r;
	if (r->coll != COLL_SENDRECV) {
		free(q);
		return 0;
	}
	/* the receive's failure is reported before its send half's */
	struct comm *c = r->comm;
	struct self_req *half = q->half;
	int rc = finish_half(c, q, err);
	if (half) {
		char e2[ERR_LEN];
		if (finish_half(c, half, rc ? e2 : err)) rc = -1;
	}
	return rc;
}

static struct comm *world_alloc(char *err)
{
	struct comm *c = comm_alloc(1);
	struct self_impl *m = calloc(1, sizeof(*m));
	if (!c || !m) {
		free(m);
		if (c) { free(c->ranks); free(c); }
		errf(err, "comm: out of memory creating a one-rank communicator");
		return NULL;
	}
	c->ops = &self_ops;
	c->impl = m;
	c->rank = 0;
	c->ranks[0] = 0;
	return c;
}

/* every color forms its own group, and with one rank each group is that rank */
static int self_split(struct comm *parent, int color, int key, struct comm **out, char *err)
{
	(void)color;
	(void)key;
	*out = world_alloc(err);
	if (!*out) return -1;
	(*out)->ranks[0] = parent->ranks[0];
	return 0;
}

/* requests still queued belong to their callers, who free them at their waits */
static void self_destroy(struct comm *c)
{
	free(c->impl);
	c->impl = NULL;
}

/* one rank: no other process to end; the caller ends this one (runtime/comm.h) */
static void self_abort(struct comm *c, int code)
{
	(void)c;
	(void)code;
}

static const struct comm_ops self_ops = {
	.name = "self", .start = self_start, .wait = self_wait, .test = self_test,
	.split = self_split, .destroy = self_destroy, .abort = self_abort,
};

int comm_self_world(struct comm **out, char *err)
{
	*out = world_alloc(err);
	if (!*out) return -1;
	snprintf((*out)->name, sizeof((*out)->name), "world");
	return 0;
}

#ifdef SCALEPLAN_NOMPI
/* Launchers export the job's size to every process: Open MPI's mpirun OMPI_COMM_WORLD_SIZE,
 * MPICH's Hydra and Slurm's PMI PMI_SIZE. N copies of a one-rank program would each train
 * alone and overwrite each other's files, so a multi-rank launch is refused. */
static int launched_ranks(const char **var)
{
	static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);
		long n = v ? strtol(v, NULL, 10) : 0;
		if (n > 1) { *var = vars[i]; return (int)n; }
	}
	return 1;
}

int comm_mpi_world(struct comm **out, char *err)
{
	*out = NULL;
	const char *var = NULL;
	int n = launched_ranks(&var);
	if (n > 1)
		return errf(err, "comm: this build has no MPI (make NOMPI=1) and runs one rank, but the "
			    "launcher started %d (%s); use the MPI build for several ranks", n, var);
	return comm_self_world(out, err);
}
#endif
