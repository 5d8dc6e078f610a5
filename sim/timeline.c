/* timeline — a growable array of events and the names of their kinds and streams. */
#include <stdlib.h>
#include <string.h>
#include "sim/timeline.h"
#include "sim/util.h"

int timeline_init(struct timeline *tl, int nranks, size_t cap, char *err)
{
	memset(tl, 0, sizeof(*tl));
	tl->nranks = nranks;
	if (cap) {
		tl->ev = malloc(cap * sizeof(*tl->ev));
		if (!tl->ev) return errf(err, "timeline: out of memory for %zu events", cap);
		tl->cap = cap;
	}
	return 0;
}

void timeline_free(struct timeline *tl)
{
	if (!tl) return;
	free(tl->ev);
	tl->ev = NULL;
	tl->n = tl->cap = 0;
}

struct tl_event *timeline_push(struct timeline *tl)
{
	if (tl->n == tl->cap) {
		size_t cap = tl->cap ? tl->cap * 2 : 256;
		struct tl_event *e = realloc(tl->ev, cap * sizeof(*e));
		if (!e) return NULL;
		tl->ev = e;
		tl->cap = cap;
	}
	struct tl_event *e = &tl->ev[tl->n++];
	memset(e, 0, sizeof(*e));
	return e;
}

double timeline_end(const struct timeline *tl)
{
	double t = 0;
	for (size_t i = 0; i < tl->n; i++)
		if (tl->ev[i].end > t) t = tl->ev[i].end;
	return t;
}

const char *tl_kind_name(int kind)
{
	static const char *const names[] = {"F", "B", "W", "BW", "p2p", "dp-reduce", "param-gather",
					    "optimizer"};
	return kind >= 0 && kind < TL_KIND_COUNT ? names[kind] : "?";
}

const char *tl_stream_name(int stream)
{
	static const char *const names[] = {"compute", "p2p send fwd", "p2p send bwd", "dp comm",
					    "param gather"};
	return stream >= 0 && stream < TL_STREAM_COUNT ? names[stream] : "?";
}
