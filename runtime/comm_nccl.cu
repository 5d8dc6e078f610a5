/* comm_nccl — NCCL backend: one ncclComm_t and one CUDA stream per communicator; groups come
 * from ncclCommSplit of the world, the world from a unique id broadcast over the MPI
 * bootstrap. All-to-all(-v) and send/recv are grouped ncclSend/ncclRecv, so a ring or a
 * pipeline exchange never deadlocks. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/comm_impl.h"
#include "runtime/comm_nccl.h"
extern "C" {
#include "sim/util.h"
}

struct nccl_impl {
	ncclComm_t nc;
	cudaStream_t stream;
	float *scratch;            /* one device float, for the barrier */
	struct comm *bootstrap;    /* for comm_abort */
};

struct nccl_req {
	struct comm_req base;
	cudaEvent_t ev;
};

static struct nccl_impl *impl_of(struct comm *c) { return (struct nccl_impl *)c->impl; }

static int fail_nccl(struct comm *c, const char *op, ncclResult_t r, char *err)
{
	return errf(err, "comm: %s on group %s (%d ranks) failed: %s (%s)", op, c->name, c->size,
		    ncclGetErrorString(r), ncclGetLastError(impl_of(c) ? impl_of(c)->nc : NULL));
}

static int fail_cuda(struct comm *c, const char *op, cudaError_t e, char *err)
{
	return errf(err, "comm: %s on group %s (%d ranks) failed: CUDA %s", op, c->name, c->size,
		    cudaGetErrorString(e));
}

static ncclDataType_t nccl_type(enum comm_dtype t)
{
	switch (t) {
	case COMM_F32: return ncclFloat32;
	case COMM_BF16: return ncclBfloat16;
	case COMM_F64: return ncclFloat64;
	default: return ncclUint8;
	}
}

static ncclResult_t grouped_alltoall(struct comm *c, const struct comm_args *a, ncclDataType_t dt)
{
	struct nccl_impl *m = impl_of(c);
	size_t eb = comm_dtype_bytes(a->dtype);
	const char *s = (const char *)a->send;
	char *r = (char *)a->recv;
	ncclResult_t rc = ncclGroupStart();
	for (int p = 0; p < c->size && rc == ncclSuccess; p++) {
		size_t sc = a->coll == COLL_ALLTOALL ? a->count : a->send_counts[p];
		size_t sd = a->coll == COLL_ALLTOALL ? (size_t)p * a->count : a->send_displs[p];
		size_t rcn = a->coll == COLL_ALLTOALL ? a->count : a->recv_counts[p];
		size_t rd = a->coll == COLL_ALLTOALL ? (size_t)p * a->count : a->recv_displs[p];
		if (sc) rc = ncclSend(s + sd * eb, sc, dt, p, m->nc, m->stream);
		if (rc == ncclSuccess && rcn) rc = ncclRecv(r + rd * eb, rcn, dt, p, m->nc, m->stream);
	}
	ncclResult_t e = ncclGroupEnd();
	return rc != ncclSuccess ? rc : e;
}

static ncclResult_t enqueue(struct comm *c, const struct comm_args *a)
{
	struct nccl_impl *m = impl_of(c);
	ncclDataType_t dt = nccl_type(a->dtype);
	switch (a->coll) {
	case COLL_ALLREDUCE:
		return ncclAllReduce(a->send, a->recv, a->count, dt, ncclSum, m->nc, m->stream);
	case COLL_REDUCESCATTER:
		return ncclReduceScatter(a->send, a->recv, a->count, dt, ncclSum, m->nc, m->stream);
	case COLL_ALLGATHER:
		return ncclAllGather(a->send, a->recv, a->count, dt, m->nc, m->stream);
	case COLL_ALLTOALL:
	case COLL_ALLTOALLV:
		return grouped_alltoall(c, a, dt);
	case COLL_BROADCAST:
		return ncclBroadcast(a->send, a->recv, a->count, dt, a->root, m->nc, m->stream);
	case COLL_SENDRECV: {
		ncclResult_t rc = ncclGroupStart();
		if (rc == ncclSuccess && a->peer_send >= 0)
			rc = ncclSend(a->send, a->count, dt, a->peer_send, m->nc, m->stream);
		if (rc == ncclSuccess && a->peer_recv >= 0)
			rc = ncclRecv(a->recv, a->recv_count, dt, a->peer_recv, m->nc, m->stream);
		ncclResult_t e = ncclGroupEnd();
		return rc != ncclSuccess ? rc : e;
	}
	case COLL_BARRIER:
		return ncclAllReduce(m->scratch, m->scratch, 1, ncclFloat32, ncclSum, m->nc, m->stream);
	default:
		return ncclInvalidArgument;
	}
}

static int nccl_start(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err)
{
	const char *op = comm_colls[a->coll].name;
	struct nccl_req *q = (struct nccl_req *)calloc(1, sizeof(*q));
	if (!q) return errf(err, "comm: out of memory starting %s on group %s", op, c->name);
	q->base.comm = c;
	q->base.coll = a->coll;
	q->base.start_s = now_s();
	ncclResult_t r = enqueue(c, a);
	if (r != ncclSuccess) {
		free(q);
		return fail_nccl(c, op, r, err);
	}
	cudaError_t e = cudaEventCreateWithFlags(&q->ev, cudaEventDisableTiming);
	if (e == cudaSuccess) e = cudaEventRecord(q->ev, impl_of(c)->stream);
	if (e != cudaSuccess) {
		free(q);
		return fail_cuda(c, op, e, err);
	}
	*req = &q->base;
	return 0;
}

/* NCCL reports a failed peer asynchronously; look before and while waiting */
static int async_error(struct comm *c, const char *op, char *err)
{
	ncclResult_t ar = ncclSuccess;
	ncclResult_t r = ncclCommGetAsyncError(impl_of(c)->nc, &ar);
	if (r != ncclSuccess) return fail_nccl(c, op, r, err);
	if (ar != ncclSuccess && ar != ncclInProgress) return fail_nccl(c, op, ar, err);
	return 0;
}

static int nccl_test(struct comm_req *r, int *done, char *err)
{
	struct nccl_req *q = (struct nccl_req *)r;
	cudaError_t e = cudaEventQuery(q->ev);
	*done = e == cudaSuccess;
	if (e != cudaSuccess && e != cudaErrorNotReady)
		return fail_cuda(r->comm, comm_colls[r->coll].name, e, err);
	return *done ? 0 : async_error(r->comm, comm_colls[r->coll].name, err);
}

static int nccl_wait(struct comm_req *r, char *err)
{
	struct nccl_req *q = (struct nccl_req *)r;
	struct comm *c = r->comm;
	const char *op = comm_colls[r->coll].name;
	int rc = 0, done = 0;
	/* poll rather than cudaEventSynchronize, so a dead peer or the timeout ends the wait */
	for (unsigned i = 1; !rc && !done; i++) {
		rc = nccl_test(r, &done, err);
		if (!rc && !done && c->timeout_s > 0 && i % 256 == 0 && now_s() - r->start_s > c->timeout_s)
			rc = errf(err, "comm: %s on group %s (%d ranks) did not complete within %g s; a member "
				  "rank may have failed", op, c->name, c->size, c->timeout_s);
	}
	if (!rc || done) cudaEventDestroy(q->ev);   /* an event still pending is left to the abort */
	free(q);
	return rc;
}

static int wrap(ncclComm_t nc, struct comm *bootstrap, struct comm **out, char *err);

static int nccl_split(struct comm *parent, int color, int key, struct comm **out, char *err)
{
	ncclComm_t nc;
	ncclResult_t r = ncclCommSplit(impl_of(parent)->nc, color, key, &nc, NULL);
	if (r != ncclSuccess) return fail_nccl(parent, "split", r, err);
	if (wrap(nc, impl_of(parent)->bootstrap, out, err)) {
		ncclCommDestroy(nc);
		return -1;
	}
	return 0;
}

static void nccl_destroy(struct comm *c)
{
	struct nccl_impl *m = impl_of(c);
	if (!m) return;
	ncclCommDestroy(m->nc);
	cudaStreamDestroy(m->stream);
	cudaFree(m->scratch);
	free(m);
}

/* NCCL cannot end the job itself: abort the communicator (no rank stays blocked in it), then
 * hand over to the bootstrap (MPI_Abort ends every process); the caller ends this process */
static void nccl_abort(struct comm *c, int code)
{
	struct nccl_impl *m = impl_of(c);
	if (m) ncclCommAbort(m->nc);
	if (m && m->bootstrap) comm_abort(m->bootstrap, code);
}

/* positional: name, start, wait, test, split, destroy, abort (C++ has no designators here) */
static const struct comm_ops nccl_ops = {
	"nccl", nccl_start, nccl_wait, nccl_test, nccl_split, nccl_destroy, nccl_abort,
};

static int wrap(ncclComm_t nc, struct comm *bootstrap, struct comm **out, char *err)
{
	int rank = 0, size = 0;
	ncclCommUserRank(nc, &rank);
	ncclCommCount(nc, &size);
	struct comm *c = comm_alloc(size);
	struct nccl_impl *m = (struct nccl_impl *)calloc(1, sizeof(*m));
	if (!c || !m) {
		free(m);
		if (c) { free(c->ranks); free(c); }
		return errf(err, "comm: out of memory creating an NCCL communicator of %d ranks", size);
	}
	cudaError_t e = cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking);
	if (e == cudaSuccess) e = cudaMalloc((void **)&m->scratch, sizeof(float));
	if (e != cudaSuccess) {
		if (m->stream) cudaStreamDestroy(m->stream);
		free(m);
		free(c->ranks);
		free(c);
		return errf(err, "comm: creating an NCCL communicator: CUDA %s", cudaGetErrorString(e));
	}
	m->nc = nc;
	m->bootstrap = bootstrap;
	c->ops = &nccl_ops;
	c->impl = m;
	c->rank = rank;
	*out = c;
	return 0;
}

extern "C" int comm_nccl_world(struct comm *bootstrap, int device, struct comm **out, char *err)
{
	*out = NULL;
	cudaError_t e = cudaSetDevice(device);
	if (e != cudaSuccess)
		return errf(err, "comm: rank %d cannot use CUDA device %d: %s", comm_rank(bootstrap), device,
			    cudaGetErrorString(e));
	ncclUniqueId id;
	memset(&id, 0, sizeof(id));
	if (comm_rank(bootstrap) == 0) {
		ncclResult_t r = ncclGetUniqueId(&id);
		if (r != ncclSuccess)
			return errf(err, "comm: ncclGetUniqueId failed: %s", ncclGetErrorString(r));
	}
	if (comm_broadcast(bootstrap, &id, &id, sizeof(id), COMM_BYTE, 0, err)) return -1;
	ncclComm_t nc;
	ncclResult_t r = ncclCommInitRank(&nc, comm_size(bootstrap), id, comm_rank(bootstrap));
	if (r != ncclSuccess)
		return errf(err, "comm: ncclCommInitRank (rank %d of %d) failed: %s", comm_rank(bootstrap),
			    comm_size(bootstrap), ncclGetErrorString(r));
	if (wrap(nc, bootstrap, out, err)) {
		ncclCommDestroy(nc);
		return -1;
	}
	struct comm *c = *out;
	for (int i = 0; i < c->size; i++) c->ranks[i] = i;
	snprintf(c->name, sizeof(c->name), "world");
	c->timeout_s = bootstrap->timeout_s;
	return 0;
}

extern "C" void *comm_nccl_stream(struct comm *c)
{
	return c->ops == &nccl_ops ? (void *)impl_of(c)->stream : NULL;
}
