/* estimate_check — what the estimate tests share (tests/test_estimate.c,
 * tests/test_estimate_framework.c): a plan from key/value pairs resolved, validated and
 * estimated, an idealised fabric, and a rank kind's model-state bytes. */
#ifndef SCALEPLAN_ESTIMATE_CHECK_H
#define SCALEPLAN_ESTIMATE_CHECK_H

#include "sim/estimate.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/util.h"
#include "tests/test.h"

/* a fabric with every tier at `bw` bytes/s (no NVLS, no oversubscription) and, if `nolat`, no
 * collective latency: isolates the bandwidth terms of a test */
static inline void ideal_fabric(struct hw *h, double bw, int nolat)
{
	for (int t = 0; t < h->ntiers; t++) {
		if (bw > 0) h->tier[t].busbw_bps = bw;
		h->tier[t].nvls_busbw_bps = 0;
		h->tier[t].oversub = 1;
	}
	h->curve.n = 0; /* exact bandwidth: no measured curve against NCCL's model */
	for (int a = 0; nolat && a < ALGO_COUNT; a++)
		for (int q = 0; q < PROTO_COUNT; q++) {
			if (h->lib.base_s[a][q] > 0) h->lib.base_s[a][q] = 0;
			if (h->lib.hop_nvl_s[a][q] > 0) h->lib.hop_nvl_s[a][q] = 0;
			if (h->lib.hop_net_s[a][q] > 0) h->lib.hop_net_s[a][q] = 0;
		}
}

/* h0 on that fabric at bandwidth X, without latency or derating (comm_eff 1) */
static inline void ideal_copy(struct hw *h, const struct hw *h0, double X)
{
	*h = *h0;
	ideal_fabric(h, X, 1);
	h->comm_eff = 1;
}

/* all-reduce of `bytes` over n ranks on that fabric, without latency: 2(n-1)/n of the bytes
 * cross each rank's link at X [NCCLT busbw] */
static inline double ar_time_s(double bytes, int n, double X) { return bytes * 2.0 * (n - 1) / n / X; }

/* Resolves, validates and estimates a plan given as key/value pairs (NULL-terminated). */
/* the plan of kv (key, value pairs), then key = value when key is not NULL, estimated */
static inline int run_with(const struct model *m, const struct hw *h, const char *const *kv, const char *key,
			   const char *value, struct plan *p, struct estimate *e)
{
	char err[ERR_LEN] = "";
	plan_defaults(p);
	int rc = 0;
	for (; kv[0] && !rc; kv += 2) rc = plan_set(p, kv[0], kv[1], err);
	if (!rc && key) rc = plan_set(p, key, value, err);
	if (!rc) rc = plan_resolve(p, m, h, err);
	if (!rc) rc = plan_validate(p, m, h, err);
	if (!rc) rc = estimate_plan(m, h, p, e, err);
	CHECK(rc == 0, "plan rejected: %s", err);
	return rc;
}

static inline int run(const struct model *m, const struct hw *h, const char *const *kv, struct plan *p,
		      struct estimate *e)
{
	return run_with(m, h, kv, NULL, NULL, p, e);
}

/* the same plan with a boolean key off (into off) and on (into on) */
static inline int run_off_on(const struct model *m, const struct hw *h, const char *const *kv, const char *key,
			     struct plan *p, struct estimate *off, struct estimate *on)
{
	return run_with(m, h, kv, key, "0", p, off) || run_with(m, h, kv, key, "1", p, on);
}
#define KV(...) ((const char *const[]){__VA_ARGS__, NULL})

static inline const struct rank_est *kind_at_stage(const struct estimate *e, int stage)
{
	for (int i = 0; i < e->nkinds; i++)
		if (e->kind[i].stage == stage) return &e->kind[i];
	return NULL;
}

static inline double states(const struct rank_est *k)
{
	return k->weights_bytes + k->grads_bytes + k->optim_bytes;
}

#endif
