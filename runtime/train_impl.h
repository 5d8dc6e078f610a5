/* train_impl — the trainer's state, shared by its two files: train.c (creation, layout of
 * the flat buffer into units, ZeRO and model-parallel setup, events, memory) and
 * train_step.c (micro-batches, reductions, the optimizer step). Not a public header: every
 * other module goes through runtime/train.h. */
#ifndef SCALEPLAN_TRAIN_IMPL_H
#define SCALEPLAN_TRAIN_IMPL_H

#include "runtime/train.h"
#include "runtime/zero.h"

struct trainer {
	struct kern *k;                /* the rank's compute backend, owned */
	struct ctx *x;
	const struct data *data;
	struct train_opts o;
	struct llama *m;
	/* params changed outside llama's optimizer (a ZeRO step, a checkpoint load through
	 * train_state): the next step first refreshes the copies' compute weights */
	int wc_stale;
	struct llama_acts *a;
	int L, nunits, micro, stage, steps;
	size_t *bound;                 /* [nunits+1]: unit u is [bound[u], bound[u+1]) */
	struct decay_range *decay;
	int ndecay;
	struct zero *z;                /* stages 0-2 */
	struct zero3 *z3;              /* stage 3 */
	struct llama_layer_offsets *rebased;  /* stage 3: layer l's offsets minus bound[1+l] */
	int *tokens, *targets;         /* (mbs, seq) */
	double t0_s;
	double static_bytes, peak_bytes;
	struct train_event *ev;
	size_t nev, cap;
	double rs_start_s;             /* stages 0-2: when the first bucket started, or -1 */
	/* ---- model parallelism (tp, pp, cp or ep > 1): a shard per rank, zero 0 ---- */
	int par;
	struct pp *pp;                 /* pp > 1: the executor, which owns the model copies */
	struct llama *copy[2];         /* copy[0] == m; DualPipe's second copy */
	int ncopies;
	int Tl;                        /* rows of each sequence on this rank (seq/cp) */
	int *mtok, *mtgt;              /* (micro, mbs, Tl): this rank's rows of the step's batch */
	int *stage_l0;                 /* [nstages+1] first layer of each pipeline stage */
	int *tok, *tgt;                /* the micro-batch in use: tokens/targets or mtok/mtgt */
	struct decay_range *skip;      /* flat ranges left out of this rank's share of the norm */
	int nskip;
	/* ---- ZeRO 1/2 with ep > 1: dense tensors packed into one zero over dp*cp (z), routed
	 * experts into one over the expert-DP group (ze; NULL when the rank holds none). Pack k
	 * (0 dense, 1 experts) is runs of the model's flat buffer laid end to end. */
	struct zero *ze;
	struct ep_pack {
		struct decay_range *runs, *decay, *skip; /* runs: model offsets; decay, skip: packed */
		int nruns, ndecay, nskip;
		size_t n;                  /* packed elements */
		float *buf;                /* zero_padded() floats: packed gradients for the reduction,
		                            * then packed parameters for the step and its gathers */
	} pk[2];
};

/* appends a trace event (no-op unless o.trace) */
void train_record(struct trainer *t, int name, int stream, double s, double e, int mb, int l0, int l1);
/* raises peak_bytes to the bytes live now */
void train_note_peak(struct trainer *t);
/* the process's peak resident set, bytes */
double train_peak_rss_bytes(void);

#endif
