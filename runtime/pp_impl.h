/* pp_impl — the pipeline executor's state, shared by its two files: pp.c (creation: this
 * rank's resolved op list, activation sets, holdings; the sharded constructors) and
 * pp_exec.c (message queues, running the ops, the end-of-step sums, AdamW). Not a public
 * header: other modules use runtime/pp.h. */
#ifndef SCALEPLAN_PP_IMPL_H
#define SCALEPLAN_PP_IMPL_H

#include "runtime/pp.h"

#define RECV_AHEAD 2     /* receives kept posted ahead of use, per peer */
#define HOLD 1           /* hold[] flags: this rank holds the tensor ... */
#define COUNT 2          /* ... and counts it in the global gradient norm */

struct pp_op {
	struct sched_op op;
	int stage, l0, l1, copy, slot;
	int recv_peer, recv_idx;   /* message consumed before the op; peer -1: none (or local) */
	int send_peer;             /* message produced by the op; -1: none (or local) */
	int chunk_done;            /* last W/BW of its chunk: the chunk's gradients are final */
};

struct pp_rq {                     /* messages from one peer, in the order the peer sends them */
	int n, posted, taken;
	struct comm_req **req;
	float **buf;
};

struct pp_send { struct comm_req *req; float *buf; };

struct pp {
	const struct sched *s;
	struct sched *own_sched;
	struct comm *comm;
	int rank;
	struct llama *models[2];
	int ncopies, B, T, N, m;
	size_t msg_floats;             /* N * hidden */
	int *layer0;                   /* nstages + 1: first decoder block of each stage */
	struct pp_op *ops;
	size_t nops;
	int nsets;
	struct llama_acts **sets;
	struct pp_rq *rq;              /* [pp] */
	float **pool;                  /* free message buffers */
	int npool;
	float **bufs;                  /* every message buffer, for pp_destroy */
	int nbufs, cap_bufs;
	struct pp_send *sends;
	int nsends, cap_sends;
	unsigned char *hold[2];        /* per spec of each copy: HOLD | COUNT */
	int embed_spec[2];             /* per copy: spec of the embedding, -1 when not held */
	int own_models;                /* pp_create_sharded: the models are the executor's */
	int has_first, has_last;       /* this rank holds stage 0 / the last stage of some copy */
	int tied_sum;                  /* a tied embedding is used on several ranks or copies */
	float *tied_buf;
	int partner;                   /* DualPipe: pp-1-rank; else -1 */
	float *xsend, *xrecv;          /* DualPipe exchange: copy 0 then copy 1 held gradients */
	size_t xlen[2];
	pp_ready_fn ready;
	void *ready_arg;
	struct pp_op_time *times;
	double loss_sum, t0;
	int broken;
};

/* the direction (model copy) a chunk's ops run in: DualPipe's chunk c is copy c */
static inline int op_dir(const struct sched *s, int chunk) { return s->ndirs == 2 ? chunk : 0; }

/* The specs of copy `m` that are its embedding, final norm and (untied) LM head; -1 where
 * the model does not hold them (a shard of other stages). */
void pp_head_specs(const struct llama *m, int *embed, int *fn, int *head);

#endif
