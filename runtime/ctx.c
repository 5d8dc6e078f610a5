/* ctx — builds the group communicators of one rank from the plan's layout. */
#include <stdlib.h>
#include "runtime/ctx.h"
#include "sim/util.h"

static int check_world(const struct plan *p, int world, char *err)
{
	if (p->tp < 1 || p->cp < 1 || p->dp < 1 || p->pp < 1 || p->ep < 1)
		return errf(err, "ctx: the plan's degrees must be resolved and >= 1 "
			    "(tp %d, cp %d, dp %d, pp %d, ep %d)", p->tp, p->cp, p->dp, p->pp, p->ep);
	long gpus = (long)p->tp * p->cp * p->dp * p->pp;
	if (p->gpus > 0 && p->gpus != gpus)
		return errf(err, "ctx: the plan's gpus (%d) is not tp*cp*dp*pp (%ld)", p->gpus, gpus);
	if (gpus != world)
		return errf(err, "ctx: the world has %d ranks but the plan needs %ld GPUs "
			    "(tp %d x cp %d x dp %d x pp %d); start %ld ranks", world, gpus,
			    p->tp, p->cp, p->dp, p->pp, gpus);
	return 0;
}

int ctx_create(struct comm *world, const struct plan *p, struct ctx **out, char *err)
{
	*out = NULL;
	int nworld = comm_size(world);
	if (check_world(p, nworld, err)) return -1;
	struct ctx *c = calloc(1, sizeof(*c));
	int *ranks = malloc(sizeof(int) * (size_t)nworld);
	int rc = -1;
	if (!c || !ranks) {
		errf(err, "ctx: out of memory");
		goto out;
	}
	c->plan = *p;
	c->rank = comm_rank(world);
	c->world = nworld;
	c->world_comm = world;
	if (layout_init(&c->layout, p, err)) goto out;
	layout_coords(&c->layout, c->rank, &c->coords);
	for (int g = 0; g < GROUP_COUNT; g++) {
		int n = layout_group(&c->layout, (enum group_kind)g, c->rank, ranks, nworld);
		if (n < 0) {
			errf(err, "ctx: no %s group for rank %d", group_name((enum group_kind)g), c->rank);
			goto out;
		}
		if (comm_create_group(world, ranks, n, group_name((enum group_kind)g), &c->group[g], err))
			goto out;
	}
	*out = c;
	c = NULL;
	rc = 0;
out:
	free(ranks);
	ctx_destroy(c);
	return rc;
}

void ctx_destroy(struct ctx *c)
{
	if (!c) return;
	for (int g = GROUP_COUNT - 1; g >= 0; g--) comm_destroy(c->group[g]);
	free(c);
}
