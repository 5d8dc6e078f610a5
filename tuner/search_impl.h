/* search_impl — what the search's two files share: search.c (enumeration, pricing, pruning,
 * refinement) and search_split.c (layer partitioning of the finalists). Other modules use
 * tuner/search.h. */
#ifndef SCALEPLAN_SEARCH_IMPL_H
#define SCALEPLAN_SEARCH_IMPL_H

#include "tuner/search.h"

/* the objective's figure of merit of a priced candidate: higher is better */
static inline double search_score(const struct search_req *rq, const struct search_cand *k)
{
	return rq->objective == OBJ_TIME ? k->tokens_per_s : k->tokens_per_s_per_gpu;
}

/* Re-splits a finalist's layers over its stages (time-balanced, or by the MILP when memory
 * binds, within milp_s seconds) and keeps the split when it prices better. */
void search_partition_finalist(const struct search_req *rq, struct search_cand *k, double milp_s);

#endif
