/* comm_nccl — NCCL backend: one ncclComm_t and one CUDA stream per communicator; groups come
 * from ncclCommSplit of the world, the world from a unique id broadcast over the bootstrap
 * (MPI, or the one-rank world of a NOMPI build). All-to-all(-v) and send/recv are grouped
 * ncclSend/ncclRecv, so a ring or a pipeline exchange never deadlocks.
 *
 * Waits go through the world's watchdog (runtime/watchdog.h), shared by every group split
 * from it: a wait polls the request's event and the communicator's asynchronous error until
 * the operation completes, fails, or passes timeout_s; on failure every communicator of the
 * rank is aborted (ncclCommAbort) and the wait returns the watchdog's message, so that the
 * caller can end the job through the bootstrap (comm_abort). An aborted communicator is freed
 * by ncclCommAbort: destroy skips ncclCommDestroy for it. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/comm_impl.h"
#include "runtime/comm_nccl.h"
#include "runtime/watchdog.h"
extern "C" {
#include "sim/util.h"
}

/* runtime/watchdog.c classifies NCCL's result codes by number */
static_assert(ncclSuccess == 0 && ncclUnhandledCudaError == 1 && ncclSystemError == 2 &&
	      ncclInternalError == 3 && ncclInvalidArgument == 4 && ncclInvalidUsage == 5 &&
	      ncclRemoteError == 6 && ncclInProgress == 7, "ncclResult_t numbering changed");

struct nccl_impl {
	ncclComm_t nc;
	cudaStream_t stream;
	float *scratch;            /* one device float, for the barrier */
	struct comm *bootstrap;    /* for comm_abort */
	struct watchdog *wd;       /* the world's, shared by its groups */
	int owns_wd;               /* the world: destroys wd */
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
	if (watchdog_aborted(impl_of(c)->wd))
		return errf(err, "comm: %s on group %s (%d ranks): this rank's communicators were aborted "
			    "after an earlier failure", op, c->name, c->size);
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
		if (q->ev) cudaEventDestroy(q->ev);
		free(q);
		return fail_cuda(c, op, e, err);
	}
	*req = &q->base;
	return 0;
}

/* One poll for the watchdog: the event first (done means done, whatever came after), then
 * NCCL's asynchronous error, which is where a dead peer shows. */
static enum wd_status probe(void *ctx, char *detail, size_t len)
{
	struct nccl_req *q = (struct nccl_req *)ctx;
	struct nccl_impl *m = impl_of(q->base.comm);
	cudaError_t e = cudaEventQuery(q->ev);
	if (e == cudaSuccess) return WD_COMPLETE;
	if (e != cudaErrorNotReady) {
		snprintf(detail, len, "CUDA %s", cudaGetErrorString(e));
		return WD_LOCAL_ERROR;
	}
	ncclResult_t ar = ncclSuccess;
	ncclResult_t r = ncclCommGetAsyncError(m->nc, &ar);
	if (r != ncclSuccess) {
		snprintf(detail, len, "ncclCommGetAsyncError: %s", ncclGetErrorString(r));
		return WD_LOCAL_ERROR;
	}
	enum wd_status st = watchdog_classify_nccl((int)ar);
	if (st != WD_RUNNING)
		snprintf(detail, len, "NCCL %s: %s", ncclGetErrorString(ar), ncclGetLastError(m->nc));
	return st;
}

static int nccl_test(struct comm_req *r, int *done, char *err)
{
	struct nccl_impl *m = impl_of(r->comm);
	char detail[128] = "";
	*done = 0;
	if (watchdog_aborted(m->wd))
		return watchdog_wait(m->wd, r->comm, r->coll, r->start_s, probe, r, err);
	enum wd_status st = probe(r, detail, sizeof(detail));
	*done = st == WD_COMPLETE;
	if (st == WD_RUNNING && watchdog_deadline_passed(r->start_s, now_s(), r->comm->timeout_s))
		st = WD_TIMED_OUT;
	if (st == WD_COMPLETE || st == WD_RUNNING) return 0;
	return watchdog_fail(m->wd, r->comm, r->coll, st, detail, err);
}

/* An event still pending at a failure is destroyed all the same: CUDA releases it once the
 * device passes it (cudaEventDestroy's contract), and the abort ends what it waits for. */
static int nccl_wait(struct comm_req *r, char *err)
{
	struct nccl_req *q = (struct nccl_req *)r;
	struct comm *c = r->comm;
	int rc = watchdog_wait(impl_of(c)->wd, c, r->coll, r->start_s, probe, r, err);
	cudaEventDestroy(q->ev);
	free(q);
	return rc;
}

static int wrap(ncclComm_t nc, struct comm *bootstrap, struct watchdog *wd, struct comm **out, char *err);

static int nccl_split(struct comm *parent, int color, int key, struct comm **out, char *err)
{
	ncclComm_t nc;
	ncclResult_t r = ncclCommSplit(impl_of(parent)->nc, color, key, &nc, NULL);
	if (r != ncclSuccess) return fail_nccl(parent, "split", r, err);
	if (wrap(nc, impl_of(parent)->bootstrap, impl_of(parent)->wd, out, err)) {
		ncclCommDestroy(nc);
		return -1;
	}
	return 0;
}

static void nccl_destroy(struct comm *c)
{
	struct nccl_impl *m = impl_of(c);
	if (!m) return;
	if (!watchdog_cancelled(m->wd, c)) ncclCommDestroy(m->nc);
	watchdog_remove(m->wd, c);
	if (m->owns_wd) watchdog_destroy(m->wd);
	cudaStreamDestroy(m->stream);
	cudaFree(m->scratch);
	free(m);
}

/* the watchdog's cancel hook */
static void nccl_cancel(struct comm *c)
{
	ncclCommAbort(impl_of(c)->nc);
}

/* NCCL cannot end the job itself: abort every communicator of the rank (nothing stays
 * blocked in one), then hand over to the bootstrap (MPI_Abort ends every process; the one-rank
 * bootstrap returns and the caller ends this process) */
static void nccl_abort(struct comm *c, int code)
{
	struct nccl_impl *m = impl_of(c);
	if (m) watchdog_abort_all(m->wd, c);
	if (m && m->bootstrap) comm_abort(m->bootstrap, code);
}

/* positional: name, start, wait, test, split, destroy, abort (C++ has no designators here) */
static const struct comm_ops nccl_ops = {
	"nccl", nccl_start, nccl_wait, nccl_test, nccl_split, nccl_destroy, nccl_abort,
};

/* wd NULL: a world, which creates the watchdog its groups share */
static int wrap(ncclComm_t nc, struct comm *bootstrap, struct watchdog *wd, struct comm **out, char *err)
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
	m->wd = wd;
	if (!wd && watchdog_create(nccl_cancel, &m->wd, err) == 0) m->owns_wd = 1;
	if (!m->wd || watchdog_add(m->wd, c, err)) {
		if (m->owns_wd) watchdog_destroy(m->wd);
		cudaStreamDestroy(m->stream);
		cudaFree(m->scratch);
		free(m);
		free(c->ranks);
		free(c);
		return -1;
	}
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
	if (wrap(nc, bootstrap, NULL, out, err)) {
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
