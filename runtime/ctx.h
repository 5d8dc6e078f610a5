/* ctx — one rank's runtime context: world rank and size, the plan, its rank layout, this
 * rank's coordinates, and one communicator per group kind (tp, cp, dp, pp, dp*cp, ep, edp),
 * every one built from sim/layout.h's membership, never computed here.
 *
 * Ownership: ctx_create borrows `world` (which must outlive the context: destroy the
 * context first, then the world) and owns the group communicators; ctx_destroy frees them
 * and accepts NULL. Creation is collective over the world. The context is the state every
 * runtime call takes; nothing in the runtime is global.
 *
 * Invariant: comm_rank(ctx->group[g]) == layout_group_index(&ctx->layout, g, ctx->rank) and
 * comm_size(ctx->group[g]) == layout_group_size(&ctx->layout, g). */
#ifndef SCALEPLAN_CTX_H
#define SCALEPLAN_CTX_H

#include "runtime/comm.h"
#include "sim/layout.h"
#include "sim/plan.h"

struct ctx {
	int rank, world;
	struct plan plan;
	struct layout layout;
	struct coords coords;
	struct comm *world_comm;            /* borrowed */
	struct comm *group[GROUP_COUNT];
};

/* Collective over `world`. Fails with a message when the world size differs from the
 * plan's GPU count (dp*tp*pp*cp) or the plan's degrees do not make a layout. */
int ctx_create(struct comm *world, const struct plan *p, struct ctx **out, char *err);
void ctx_destroy(struct ctx *c);

static inline struct comm *ctx_comm(const struct ctx *c, enum group_kind g) { return c->group[g]; }

#endif
