/* cp — ring attention over the zig-zag split (runtime/cp.h). Step s of the ring gives rank r
 * the K/V block of rank (r − s) mod cp; with two chunks per rank, each of the four
 * (query chunk, key chunk) pairs is empty (key chunk later), diagonal (same chunk: causal
 * within) or full (key chunk earlier), decided by chunk index alone, and the block kernel
 * masks by global position, so all three cases are one call or none. */
#include <math.h>
#include <string.h>
#include "kernels/backend.h"
#include "runtime/cp.h"
#include "runtime/tp.h"
#include "sim/util.h"

/* activation addressing (kernels/backend.h) and one kernel of the instance */
#define AT(p, n) kern_act_at(s->k, (p), (n))
#define K(fn, ...) s->k->ops->fn(s->k->state, __VA_ARGS__)

/* the shape of one call, with the strides of its three layouts */
struct cp_shape {
	struct kern *k;       /* borrowed */
	int n, rank;          /* group size, position in the ring */
	int B, Tl, Tc;        /* sequences, local rows per sequence, rows per chunk */
	int H, Hkv, d;
	int ld, ldkv, ldo;    /* qkv row, packed k|v row (2·Hkv·d), out row (H·d) */
	size_t nkv;           /* elements of one packed K/V block: B·Tl·ldkv */
};

/* global chunk index of the rank's first (half 0) or second (half 1) chunk */
static int chunk_of(int n, int rank, int half) { return half ? 2 * n - 1 - rank : rank; }

static int check_split(int T, int cp, int rank, char *err)
{
	if (cp < 1) return errf(err, "cp: degree (%d) must be at least 1", cp);
	if (rank < 0 || rank >= cp) return errf(err, "cp: rank (%d) must be in [0, %d)", rank, cp);
	if (T < 2 * cp || T % (2 * cp))
		return errf(err, "cp: sequence length T (%d) must be a positive multiple of 2*cp (%d)", T, 2 * cp);
	return 0;
}

int cp_positions(int *pos, int T, int cp, int rank, char *err)
{
	if (check_split(T, cp, rank, err)) return -1;
	const int Tc = T / (2 * cp);
	for (int i = 0; i < 2 * Tc; i++) pos[i] = chunk_of(cp, rank, i / Tc) * Tc + i % Tc;
	return 0;
}

/* rows of row_bytes bytes: dst[b][i] = src[b][pos[i]] */
static int shard_bytes(void *dst, const void *src, int B, int T, size_t row_bytes, int cp, int rank, char *err)
{
	if (B < 1) return errf(err, "cp: batch B (%d) must be at least 1", B);
	if (check_split(T, cp, rank, err)) return -1;
	const int Tl = T / cp, Tc = Tl / 2;
	for (int b = 0; b < B; b++)
		for (int h = 0; h < 2; h++)
			memcpy((char *)dst + ((size_t)b * Tl + (size_t)h * Tc) * row_bytes,
			       (const char *)src + ((size_t)b * T + (size_t)chunk_of(cp, rank, h) * Tc) * row_bytes,
			       (size_t)Tc * row_bytes);
	return 0;
}

int cp_shard_tokens(int *dst, const int *src, int B, int T, int cp, int rank, char *err)
{
	return shard_bytes(dst, src, B, T, sizeof(int), cp, rank, err);
}

int cp_shard_rows(float *dst, const float *src, int B, int T, int width, int cp, int rank, char *err)
{
	if (width < 1) return errf(err, "cp: row width (%d) must be at least 1", width);
	return shard_bytes(dst, src, B, T, sizeof(float) * (size_t)width, cp, rank, err);
}

size_t cp_attention_scratch_floats(int B, int Tl, int H, int Hkv, int d)
{
	(void)H;
	const int Tc = Tl / 2 > 0 ? Tl / 2 : 1;
	return attention_block_scratch_floats(Tc, Tc) + 5 * (size_t)B * Tl * 2 * Hkv * d;
}

static int shape_of(struct cp_shape *s, struct comm *cp, struct kern *k, int B, int Tl, int H, int Hkv, int d,
                    char *err)
{
	if (B < 1) return errf(err, "cp: batch B (%d) must be at least 1", B);
	if (Tl < 2 || Tl % 2)
		return errf(err, "cp: local sequence length Tl (%d) must be even and positive (two chunks)", Tl);
	if (H < 1 || Hkv < 1 || H % Hkv)
		return errf(err, "cp: kv heads (%d) must divide query heads (%d)", Hkv, H);
	if (d < 1) return errf(err, "cp: head dim d (%d) must be at least 1", d);
	s->k = k;
	s->n = comm_size(cp);
	s->rank = comm_rank(cp);
	s->B = B;
	s->Tl = Tl;
	s->Tc = Tl / 2;
	s->H = H;
	s->Hkv = Hkv;
	s->d = d;
	s->ld = (H + 2 * Hkv) * d;
	s->ldkv = 2 * Hkv * d;
	s->ldo = H * d;
	s->nkv = (size_t)B * Tl * s->ldkv;
	return 0;
}

/* the K and V columns of every local row, packed into one block that travels the ring */
static void pack_kv(float *kv, const float *qkv, const struct cp_shape *s)
{
	K(act_copy_rows, kv, (size_t)s->ldkv, AT(qkv, (size_t)s->H * s->d), (size_t)s->ld, (size_t)s->B * s->Tl,
	  (size_t)s->ldkv);
}

static void unpack_kv(float *qkv, const float *kv, const struct cp_shape *s)
{
	K(act_copy_rows, AT(qkv, (size_t)s->H * s->d), (size_t)s->ld, kv, (size_t)s->ldkv, (size_t)s->B * s->Tl,
	  (size_t)s->ldkv);
}

/* Starts one ring shift: send to the next rank, receive from the previous one. The kernels
 * issued before have finished first: they wrote the block sent and read the one overwritten. */
static int ring_start(struct comm *cp, const struct cp_shape *s, const float *send, float *recv,
                      struct comm_req **req, char *err)
{
	if (kern_sync(s->k, err)) return -1;
	struct comm_args a = {.coll = COLL_SENDRECV, .dtype = tp_act_dtype(s->k), .send = send, .recv = recv,
	                      .count = s->nkv, .recv_count = s->nkv,
	                      .peer_send = (s->rank + 1) % s->n, .peer_recv = (s->rank + s->n - 1) % s->n};
	return comm_start(cp, &a, req, err);
}

/* MPI moves data only inside MPI calls: poke the transfers in flight between blocks. */
static int progress(struct comm_req *const *req, int nreq, char *err)
{
	for (int i = 0; i < nreq; i++) {
		int done;
		if (comm_test(req[i], &done, err)) return -1;
	}
	return 0;
}

/* The block of one (sequence, query half, key half) pair, or 0 when no query sees a key. */
static int block_of(struct att_block *blk, const struct cp_shape *s, int src, int qh, int kh)
{
	const int cq = chunk_of(s->n, s->rank, qh), ck = chunk_of(s->n, src, kh);
	if (ck > cq) return 0;
	struct att_block b = {s->Tc, s->Tc, cq * s->Tc, ck * s->Tc, s->H, s->Hkv, s->d,
	                      s->ld, s->ldkv, s->ldo, s->Tl};
	*blk = b;
	return 1;
}

/* One ring step of the forward: this rank's queries against the K/V block of rank src. */
static int step_forward(const struct cp_shape *s, int src, float *out, float *lse, const float *qkv,
                        const float *kv, float *bs, struct comm_req *const *req, int nreq, char *err)
{
	for (int b = 0; b < s->B; b++)
		for (int qh = 0; qh < 2; qh++)
			for (int kh = 0; kh < 2; kh++) {
				struct att_block blk;
				if (!block_of(&blk, s, src, qh, kh)) continue;
				const size_t qr = (size_t)b * s->Tl + (size_t)qh * s->Tc;
				const float *kb = AT(kv, ((size_t)b * s->Tl + (size_t)kh * s->Tc) * s->ldkv);
				K(attention_block_forward, AT(out, qr * s->ldo), lse + (size_t)b * s->H * s->Tl + (size_t)qh * s->Tc,
				  AT(qkv, qr * s->ld), kb, AT(kb, (size_t)s->Hkv * s->d), bs, &blk);
				if (progress(req, nreq, err)) return -1;
			}
	return 0;
}

int cp_attention_forward(struct comm *cp, struct kern *k, float *out, float *lse, const float *qkv, float *scratch,
                         int B, int Tl, int H, int Hkv, int d, char *err)
{
	struct cp_shape s;
	if (shape_of(&s, cp, k, B, Tl, H, Hkv, d, err)) return -1;
	float *bs = scratch, *kv = bs + attention_block_scratch_floats(s.Tc, s.Tc), *kv_next = kern_act_at(k, kv, s.nkv);
	kern_zero(k, out, kern_act_size(k, (size_t)B * Tl * s.ldo));
	k->ops->fill(k->state, lse, (size_t)B * H * Tl, -INFINITY);
	pack_kv(kv, qkv, &s);
	for (int step = 0; step < s.n; step++) {
		struct comm_req *req = NULL;
		if (step < s.n - 1 && ring_start(cp, &s, kv, kv_next, &req, err)) return -1;
		const int rc = step_forward(&s, (s.rank + s.n - step) % s.n, out, lse, qkv, kv, bs, &req, 1, err);
		char werr[ERR_LEN];
		if (comm_wait(req, werr) && !rc) return errf(err, "%s", werr);
		if (rc) return -1;
		float *t = kv; kv = kv_next; kv_next = t;
	}
	return 0;
}

/* One ring step of the backward: dq of this rank's queries (into dqkv) and the dK/dV share
 * of the K/V block of rank src (into dkv), which then travels on towards its owner. */
static int step_backward(const struct cp_shape *s, int src, float *dqkv, float *dkv, const float *dout,
                         const float *qkv, const float *out, const float *lse, const float *kv,
                         float *bs, struct comm_req *const *req, int nreq, char *err)
{
	const size_t vo = (size_t)s->Hkv * s->d;
	for (int b = 0; b < s->B; b++)
		for (int qh = 0; qh < 2; qh++)
			for (int kh = 0; kh < 2; kh++) {
				struct att_block blk;
				if (!block_of(&blk, s, src, qh, kh)) continue;
				const size_t qr = (size_t)b * s->Tl + (size_t)qh * s->Tc;
				const size_t kr = ((size_t)b * s->Tl + (size_t)kh * s->Tc) * s->ldkv;
				K(attention_block_backward, AT(dqkv, qr * s->ld), AT(dkv, kr), AT(dkv, kr + vo),
				  AT(dout, qr * s->ldo), AT(out, qr * s->ldo), lse + (size_t)b * s->H * s->Tl + (size_t)qh * s->Tc,
				  AT(qkv, qr * s->ld), AT(kv, kr), AT(kv, kr + vo), bs, &blk);
				if (progress(req, nreq, err)) return -1;
			}
	return 0;
}

/* Ring shifts of the backward, in the order every rank issues them: at step s the K/V block
 * moves on (s < n−1) while the step computes; after it, the dK/dV sums that arrived from the
 * previous rank (for the same block) are added to this rank's share and the total moves on. */
static int backward_ring(struct comm *cp, const struct cp_shape *s, float *dqkv, const float *dout,
                         const float *qkv, const float *out, const float *lse, float *scratch,
                         struct comm_req **kreq, struct comm_req **dreq, float **own, char *err)
{
	float *bs = scratch, *kv = bs + attention_block_scratch_floats(s->Tc, s->Tc), *kv_next = AT(kv, s->nkv);
	float *dkv = AT(kv_next, s->nkv), *dkv_sent = AT(dkv, s->nkv), *dkv_in = AT(dkv_sent, s->nkv);
	const size_t kvb = kern_act_size(s->k, s->nkv);
	pack_kv(kv, qkv, s);
	kern_zero(s->k, dkv, kvb);
	for (int step = 0; step < s->n; step++) {
		if (step < s->n - 1 && ring_start(cp, s, kv, kv_next, kreq, err)) return -1;
		struct comm_req *inflight[2] = {*kreq, *dreq};
		if (step_backward(s, (s->rank + s->n - step) % s->n, dqkv, dkv, dout, qkv, out, lse, kv, bs,
		                  inflight, 2, err))
			return -1;
		struct comm_req *r = *kreq;
		*kreq = NULL;
		if (comm_wait(r, err)) return -1;
		float *t = kv; kv = kv_next; kv_next = t;
		if (s->n == 1) break;
		if (step > 0) {
			r = *dreq;
			*dreq = NULL;
			if (comm_wait(r, err)) return -1;
			K(act_add, dkv, dkv_in, s->nkv);
		}
		if (ring_start(cp, s, dkv, dkv_in, dreq, err)) return -1;
		t = dkv; dkv = dkv_sent; dkv_sent = t;
		kern_zero(s->k, dkv, kvb);
	}
	*own = s->n == 1 ? dkv : dkv_in;   /* complete once the last shift is waited for */
	return 0;
}

int cp_attention_backward(struct comm *cp, struct kern *k, float *dqkv, const float *dout, const float *qkv,
                          const float *out, const float *lse, float *scratch,
                          int B, int Tl, int H, int Hkv, int d, char *err)
{
	struct cp_shape s;
	if (shape_of(&s, cp, k, B, Tl, H, Hkv, d, err)) return -1;
	kern_zero(k, dqkv, kern_act_size(k, (size_t)B * Tl * s.ld));
	struct comm_req *kreq = NULL, *dreq = NULL;
	float *own = NULL;
	int rc = backward_ring(cp, &s, dqkv, dout, qkv, out, lse, scratch, &kreq, &dreq, &own, err);
	char werr[ERR_LEN];
	/* every request is completed and freed, also after an error */
	if (comm_wait(kreq, werr) && !rc) rc = errf(err, "%s", werr);
	if (comm_wait(dreq, werr) && !rc) rc = errf(err, "%s", werr);
	if (rc) return -1;
	unpack_kv(dqkv, own, &s);
	return 0;
}
