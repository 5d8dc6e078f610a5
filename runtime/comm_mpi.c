/* comm_mpi — the MPI backend of runtime/comm.h: non-blocking MPI-3 collectives on host
 * buffers. The world communicator is a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN,
 * which every group split from it inherits, so a failed peer turns into an error message
 * instead of the default abort inside the library. bf16 sums use a user reduction
 * (fp32 accumulate, round to nearest even), created once with the world and shared by its
 * groups: destroy every group before the world. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/comm_impl.h"
#include "sim/util.h"

struct mpi_impl {
	MPI_Comm comm;
	MPI_Op bf16_sum;
	int owns_op;        /* the world created bf16_sum */
	int finalize;       /* the world initialised MPI */
};

static const struct comm_ops comm_mpi_ops;

struct mpi_req {
	struct comm_req base;
	MPI_Request r[2];
	int nr;
	int *v;             /* all-to-all-v counts/displacements, alive until completion */
};

static struct mpi_impl *impl_of(struct comm *c) { return c->impl; }

static int mpi_fail(struct comm *c, const char *op, int rc, char *err)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof(msg), "error %d", rc);
	return errf(err, "comm: %s on group %s (%d ranks) failed: %s", op, c->name, c->size, msg);
}

static MPI_Datatype mpi_type(enum comm_dtype t)
{
	switch (t) {
	case COMM_F32: return MPI_FLOAT;
	case COMM_F64: return MPI_DOUBLE;
	case COMM_BF16: return MPI_UINT16_T;
	default: return MPI_BYTE;
	}
}

/* bf16 <-> fp32: bf16 is the top half of an fp32; rounding to nearest even as in
 * Kalamkar et al. 2019 ("A Study of BFLOAT16 for Deep Learning Training", §2). */
static float bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof(f));
	return f;
}

static uint16_t f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof(u));
	if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
		return (uint16_t)((u >> 16) | 0x40);      /* NaN stays a quiet NaN */
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

static void bf16_sum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	const uint16_t *a = in;
	uint16_t *b = inout;
	for (int i = 0; i < *len; i++)
		b[i] = f32_to_bf16(bf16_to_f32(a[i]) + bf16_to_f32(b[i]));
}

static MPI_Op sum_op(struct comm *c, enum comm_dtype t)
{
	return t == COMM_BF16 ? impl_of(c)->bf16_sum : MPI_SUM;
}

static int start_alltoallv(struct comm *c, const struct comm_args *a, struct mpi_req *q, MPI_Datatype dt)
{
	int n = c->size;
	q->v = malloc(sizeof(int) * 4 * (size_t)n);
	if (!q->v) return MPI_ERR_NO_MEM;
	for (int i = 0; i < n; i++) {
		q->v[i] = (int)a->send_counts[i];
		q->v[n + i] = (int)a->send_displs[i];
		q->v[2 * n + i] = (int)a->recv_counts[i];
		q->v[3 * n + i] = (int)a->recv_displs[i];
	}
	return MPI_Ialltoallv(a->send, q->v, q->v + n, dt, a->recv, q->v + 2 * n, q->v + 3 * n, dt,
			      impl_of(c)->comm, &q->r[q->nr++]);
}

static int start_one(struct comm *c, const struct comm_args *a, struct mpi_req *q)
{
	MPI_Comm mc = impl_of(c)->comm;
	MPI_Datatype dt = mpi_type(a->dtype);
	size_t eb = comm_dtype_bytes(a->dtype);
	int n = (int)a->count;
	switch (a->coll) {
	case COLL_ALLREDUCE:
		return MPI_Iallreduce(a->send == a->recv ? MPI_IN_PLACE : a->send, a->recv, n, dt,
				      sum_op(c, a->dtype), mc, &q->r[q->nr++]);
	case COLL_REDUCESCATTER:
		return MPI_Ireduce_scatter_block(a->send, a->recv, n, dt, sum_op(c, a->dtype), mc,
						 &q->r[q->nr++]);
	case COLL_ALLGATHER: {
		const char *mine = (const char *)a->recv + (size_t)c->rank * a->count * eb;
		if (a->send == mine)
			return MPI_Iallgather(MPI_IN_PLACE, 0, dt, a->recv, n, dt, mc, &q->r[q->nr++]);
		return MPI_Iallgather(a->send, n, dt, a->recv, n, dt, mc, &q->r[q->nr++]);
	}
	case COLL_ALLTOALL:
		return MPI_Ialltoall(a->send, n, dt, a->recv, n, dt, mc, &q->r[q->nr++]);
	case COLL_ALLTOALLV:
		return start_alltoallv(c, a, q, dt);
	case COLL_BROADCAST:
		if (c->rank == a->root && a->send != a->recv && a->count)
			memcpy(a->recv, a->send, a->count * eb);
		return MPI_Ibcast(a->recv, n, dt, a->root, mc, &q->r[q->nr++]);
	case COLL_SENDRECV: {
		int rc = MPI_SUCCESS;
		if (a->peer_recv >= 0)
			rc = MPI_Irecv(a->recv, (int)a->recv_count, dt, a->peer_recv, 0, mc, &q->r[q->nr++]);
		if (rc == MPI_SUCCESS && a->peer_send >= 0)
			rc = MPI_Isend(a->send, n, dt, a->peer_send, 0, mc, &q->r[q->nr++]);
		return rc;
	}
	case COLL_BARRIER:
		return MPI_Ibarrier(mc, &q->r[q->nr++]);
	default:
		return MPI_ERR_OP;
	}
}

static void req_free(struct mpi_req *q)
{
	free(q->v);
	free(q);
}

static int mpi_start(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err)
{
	struct mpi_req *q = calloc(1, sizeof(*q));
	if (!q) return errf(err, "comm: out of memory starting %s on group %s", comm_colls[a->coll].name, c->name);
	q->base.comm = c;
	q->base.coll = a->coll;
	q->base.start_s = now_s();
	q->r[0] = q->r[1] = MPI_REQUEST_NULL;
	int rc = start_one(c, a, q);
	if (rc != MPI_SUCCESS) {
		/* a started receive whose send failed to start is left to the abort that follows */
		req_free(q);
		return mpi_fail(c, comm_colls[a->coll].name, rc, err);
	}
	*req = &q->base;
	return 0;
}

static int mpi_test(struct comm_req *r, int *done, char *err)
{
	struct mpi_req *q = (struct mpi_req *)r;
	int rc = MPI_Testall(q->nr, q->r, done, MPI_STATUSES_IGNORE);
	if (rc != MPI_SUCCESS) return mpi_fail(r->comm, comm_colls[r->coll].name, rc, err);
	return 0;
}

static int mpi_wait(struct comm_req *r, char *err)
{
	struct mpi_req *q = (struct mpi_req *)r;
	struct comm *c = r->comm;
	int rc = MPI_SUCCESS;
	if (c->timeout_s <= 0) {
		rc = MPI_Waitall(q->nr, q->r, MPI_STATUSES_IGNORE);
	} else {
		/* MPI has no timed wait: poll, reading the clock every few hundred tests */
		int done = 0;
		for (unsigned i = 1; rc == MPI_SUCCESS && !done; i++) {
			rc = MPI_Testall(q->nr, q->r, &done, MPI_STATUSES_IGNORE);
			if (!done && i % 256 == 0 && now_s() - r->start_s > c->timeout_s) {
				int ret = errf(err, "comm: %s on group %s (%d ranks) did not complete within "
					       "%g s; a member rank may have failed", comm_colls[r->coll].name,
					       c->name, c->size, c->timeout_s);
				/* point-to-point requests are cancelled so no later message lands in
				 * them; collectives cannot be, and the caller is expected to abort */
				if (r->coll == COLL_SENDRECV)
					for (int k = 0; k < q->nr; k++)
						if (q->r[k] != MPI_REQUEST_NULL) {
							MPI_Cancel(&q->r[k]);
							MPI_Request_free(&q->r[k]);
						}
				free(q->v);
				free(q);
				return ret;
			}
		}
	}
	enum coll coll = r->coll;
	req_free(q);
	if (rc != MPI_SUCCESS) return mpi_fail(c, comm_colls[coll].name, rc, err);
	return 0;
}

static int wrap(MPI_Comm mc, MPI_Op op, int owns_op, int finalize, struct comm **out, char *err)
{
	int rank, size;
	MPI_Comm_rank(mc, &rank);
	MPI_Comm_size(mc, &size);
	struct comm *c = comm_alloc(size);
	struct mpi_impl *m = calloc(1, sizeof(*m));
	if (!c || !m) {
		free(m);
		if (c) { free(c->ranks); free(c); }
		return errf(err, "comm: out of memory creating a communicator of %d ranks", size);
	}
	m->comm = mc;
	m->bf16_sum = op;
	m->owns_op = owns_op;
	m->finalize = finalize;
	c->ops = &comm_mpi_ops;
	c->impl = m;
	c->rank = rank;
	*out = c;
	return 0;
}

static int mpi_split(struct comm *parent, int color, int key, struct comm **out, char *err)
{
	MPI_Comm mc;
	int rc = MPI_Comm_split(impl_of(parent)->comm, color, key, &mc);
	if (rc != MPI_SUCCESS) return mpi_fail(parent, "split", rc, err);
	if (wrap(mc, impl_of(parent)->bf16_sum, 0, 0, out, err)) {
		MPI_Comm_free(&mc);
		return -1;
	}
	return 0;
}

static void mpi_destroy(struct comm *c)
{
	struct mpi_impl *m = impl_of(c);
	if (!m) return;
	MPI_Comm_free(&m->comm);
	if (m->owns_op) MPI_Op_free(&m->bf16_sum);
	if (m->finalize) MPI_Finalize();
	free(m);
}

static void mpi_abort(struct comm *c, int code)
{
	MPI_Abort(c->impl ? impl_of(c)->comm : MPI_COMM_WORLD, code);
}

static const struct comm_ops comm_mpi_ops = {
	.name = "mpi", .start = mpi_start, .wait = mpi_wait, .test = mpi_test,
	.split = mpi_split, .destroy = mpi_destroy, .abort = mpi_abort,
};

int comm_mpi_world(struct comm **out, char *err)
{
	*out = NULL;
	int inited = 0, finalized = 0;
	MPI_Initialized(&inited);
	MPI_Finalized(&finalized);
	if (finalized) return errf(err, "comm: MPI was already finalised in this process");
	if (!inited) {
		int provided;
		if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
			return errf(err, "comm: MPI_Init_thread failed");
	}
	MPI_Comm mc;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	int rc = MPI_Comm_dup(MPI_COMM_WORLD, &mc);
	if (rc != MPI_SUCCESS) return errf(err, "comm: MPI_Comm_dup of the world failed (%d)", rc);
	MPI_Comm_set_errhandler(mc, MPI_ERRORS_RETURN);
	MPI_Op op;
	MPI_Op_create(bf16_sum_fn, 1, &op);
	if (wrap(mc, op, 1, !inited, out, err)) {
		MPI_Op_free(&op);
		MPI_Comm_free(&mc);
		return -1;
	}
	struct comm *c = *out;
	for (int i = 0; i < c->size; i++) c->ranks[i] = i;
	snprintf(c->name, sizeof(c->name), "world");
	return 0;
}
