/* comm_impl — what a communication backend provides (runtime/comm_mpi.c, runtime/comm_nccl.cu)
 * and the fields every communicator and request share. Only backends and runtime/comm.c
 * include this; everyone else sees runtime/comm.h.
 *
 * Invariant: a backend's request type starts with `struct comm_req`, and a backend's
 * communicator is a `struct comm` whose `impl` only that backend reads. */
#ifndef SCALEPLAN_COMM_IMPL_H
#define SCALEPLAN_COMM_IMPL_H

#include "runtime/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

struct comm_ops {
	const char *name;
	/* arguments were checked by runtime/comm.c */
	int (*start)(struct comm *c, const struct comm_args *a, struct comm_req **req, char *err);
	int (*wait)(struct comm_req *r, char *err);              /* completes and frees */
	int (*test)(struct comm_req *r, int *done, char *err);
	/* collective over parent: members with equal color form one group ordered by key;
	 * returns a new communicator with ops, impl, rank and size set */
	int (*split)(struct comm *parent, int color, int key, struct comm **out, char *err);
	void (*destroy)(struct comm *c);                         /* frees impl, not c */
	void (*abort)(struct comm *c, int code);
};

struct comm {
	const struct comm_ops *ops;
	void *impl;
	int rank, size;
	int *ranks;          /* world rank of each member, by position */
	char name[16];
	double timeout_s;    /* 0 = wait without limit */
};

struct comm_req {
	struct comm *comm;
	enum coll coll;
	double start_s;
};

/* Allocates a struct comm with `size` member slots (ranks filled with -1); NULL on OOM. */
struct comm *comm_alloc(int size);

#ifdef __cplusplus
}
#endif

#endif
