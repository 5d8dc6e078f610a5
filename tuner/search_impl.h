/* search_impl — what the search files share: search.c (enumeration, pricing, pruning),
 * search_rank.c (order of plans, twins, shapes), search_fix.c (pins and names),
 * search_split.c (layer partitioning of the finalists), search_report.c and search_doc.c (what
 * they print). Other modules use tuner/search.h. */
#ifndef SCALEPLAN_SEARCH_IMPL_H
#define SCALEPLAN_SEARCH_IMPL_H

#include "sim/schedule.h"
#include "tuner/search.h"

/* the objective's figure of merit of a priced candidate: higher is better */
static inline double search_score(const struct search_req *rq, const struct search_cand *k)
{
	return rq->objective == OBJ_TIME ? k->tokens_per_s : k->tokens_per_s_per_gpu;
}

/* Ranking (search_rank.c): best first by the objective's score, then less memory, fewer
 * stages, every knob and the rank order last (qsort comparators); search_rank_and_merge sorts
 * all[] and merges plans that differ only in rank order and price the same (counted as twins). */
int search_cmp_score(const void *a, const void *b);
int search_cmp_full(const void *a, const void *b);
void search_rank_and_merge(struct search_result *res);
/* For each order of ord[0..n) of candidate k's degrees (gpn GPUs per node): rep[i] the index
 * in ord[] of the first order whose groups sit on the same units at every fabric tier (itself
 * when none before it), and mask[] the orders that share it: they give the same estimate. */
void search_order_twins(const struct search_req *rq, int gpn, const struct search_cand *k, const int *ord, int n,
			int *rep, int *mask);

/* The shapes "best plan of each other shape" reports (search_rank.c): the search keeps the best
 * score of each so far, and the report prints the best plan of each. */
struct search_shape { const char *name; int (*has)(const struct search_cand *); };
#define SEARCH_NSHAPES 7
extern const struct search_shape search_shapes[SEARCH_NSHAPES];

/* What the text, JSON, Markdown and HTML outputs share (search_report.c). */
#define SEARCH_NCOLS 24
#define SEARCH_CELL 64
extern const char *const search_columns[SEARCH_NCOLS];
extern const char *const search_engine_note;
/* The cells of row i of the ranked table (res->top[i]), as search_columns names them. */
void search_row_cells(const struct search_req *rq, const struct search_result *res, int i,
		      char cells[SEARCH_NCOLS][SEARCH_CELL]);
/* "dp8 tp8 pp4 cp1 zero1 sp on, recompute none, mbs 1, zb-v, overlap RGT" */
void search_cand_short(const struct search_cand *k, char *buf, size_t cap);
/* The paragraphs under the table: ties, why #1 wins, the best plan of each other shape. */
void search_print_ties(const struct search_result *res, FILE *f);
void search_explain(const struct search_req *rq, const struct search_result *res, FILE *f);
void search_print_shapes(const struct search_req *rq, const struct search_result *res, FILE *f);

/* The rank orders the search tries, by search_cand.order (search_cand.c). */
extern const char *const search_order_names[SEARCH_ORDERS];
struct estimate;
/* The candidate's figures (step time, throughput, MFU, memory, fits, score) from an estimate of
 * its plan (search_cand.c); the other way is search_cand_plan (tuner/search.h). */
void search_cand_priced(const struct search_req *rq, struct search_cand *k, const struct estimate *e);

/* Re-splits a finalist's layers over its stages (time-balanced, or by the MILP when memory
 * binds, within milp_s seconds) and keeps the split when it prices better. */
void search_partition_finalist(const struct search_req *rq, struct search_cand *k, double milp_s);

#endif
