/* schedule — the table of pipeline schedules and the op lists built from it
 * (reference/model.md §4). Each row (sim/sched_*.c) generates one rank's ops; sched_create()
 * runs it for every rank.
 *
 * How to add a schedule:
 *   1. add its enum value to enum schedule (sim/plan.h), before SCHED_COUNT;
 *   2. write sim/sched_<name>.c with one `const struct sched_family sched_row_<name>` (see the
 *      fields in sim/schedule.h: name, chunks, stage map, rules, in-flight activations,
 *      closed-form span, generator, framework names) and declare it in sim/sched_impl.h;
 *   3. add the row to `rows` below;
 *   4. tests: tests/test_sched_table.c checks every row's closed form against the event engine
 *      and its names; add the schedule's own published vectors to tests/test_schedule.c.
 * Nothing else switches on the schedule: the plan, estimate, event engine, tuner, exports and
 * runtime ask the row. */
#include <stdlib.h>
#include <string.h>
#include "sim/sched_impl.h"
#include "sim/util.h"

#define SCHED_MAX_PP 4096
#define SCHED_MAX_M (1 << 20)
#define SCHED_MAX_VPP 64
#define SCHED_MAX_OPS ((size_t)1 << 27)

int sched_stage_rank(int pp, int rank, int chunk, int dir)
{
	(void)pp; (void)chunk; (void)dir;
	return rank;
}

void sched_locate_rank(int pp, int dir, int stage, int *rank, int *chunk)
{
	(void)pp; (void)dir;
	*rank = stage;
	*chunk = 0;
}

/* no pipeline (pp 1): every micro-batch runs F, B+W in turn on the one rank */
static double inflight_none(double pp, double v, int r, int mb, double w_ratio)
{
	(void)pp; (void)v; (void)r; (void)mb; (void)w_ratio;
	return 1;
}

static double span_none(const struct sched_span_in *in, double *pp_exposed)
{
	*pp_exposed = 0;
	return in->mb * in->Tmax;
}

static const struct sched_family row_none = {
	.id = SCHED_NONE, .name = "none", .ndirs = 1, .chunks = 1,
	.stage = sched_stage_rank, .locate = sched_locate_rank,
	.inflight = inflight_none, .span = span_none,
};

static const struct sched_family *const rows[SCHED_COUNT] = {
	[SCHED_NONE] = &row_none,
	[SCHED_AFAB] = &sched_row_afab,
	[SCHED_1F1B] = &sched_row_1f1b,
	[SCHED_INTERLEAVED] = &sched_row_interleaved,
	[SCHED_ZBH1] = &sched_row_zbh1,
	[SCHED_ZBH2] = &sched_row_zbh2,
	[SCHED_ZBV] = &sched_row_zbv,
	[SCHED_DUALPIPE] = &sched_row_dualpipe,
	[SCHED_DUALPIPEV] = &sched_row_dualpipev,
};

const struct sched_family *sched_family(enum schedule t)
{
	return (unsigned)t < SCHED_COUNT && rows[t] ? rows[t] : &row_none;
}

const struct sched_family *sched_by_name(const char *name)
{
	for (int i = 0; i < SCHED_COUNT; i++) {
		const struct sched_family *f = rows[i];
		if (f && (strcmp(name, f->name) == 0 || (f->alias && strcmp(name, f->alias) == 0))) return f;
	}
	return NULL;
}

const char *sched_name_list(char *buf, size_t cap, const char *sep, int with_none)
{
	size_t n = 0;
	buf[0] = 0;
	for (int i = 0; i <= SCHED_COUNT; i++) {
		const struct sched_family *f = i < SCHED_COUNT ? rows[i] : &row_none;
		if (i < SCHED_COUNT ? f == &row_none : !with_none) continue;
		int k = snprintf(buf + n, cap - n, "%s%s", n ? sep : "", f->name);
		if (k < 0 || (size_t)k >= cap - n) break;
		n += (size_t)k;
	}
	return buf;
}

int sched_chunks(const struct sched_family *f, int vpp)
{
	return f->flags & SCHED_F_VIRTUAL ? vpp : f->chunks;
}

int sched_nstages(const struct sched_family *f, int pp, int vpp)
{
	return f->ndirs > 1 ? pp : pp * sched_chunks(f, vpp);
}

int sched_plan_rules(const struct sched_family *f, int pp, int vpp, int mb, char *err)
{
	if (f->flags & SCHED_F_VIRTUAL) {
		if (vpp < 2) return errf(err, "plan: %s schedule needs vpp >= 2", f->name);
	} else if (vpp != 1) {
		return errf(err, "plan: vpp (%d) > 1 needs the interleaved schedule, not %s", vpp, f->name);
	}
	if (f->pp_rule && f->pp_rule(f, pp, err)) return -1;
	if (f->mb_rule && f->mb_rule(f, pp, mb, err)) return -1;
	return 0;
}

int sched_check(enum schedule type, int pp, int m, int vpp, char *err)
{
	if (type <= SCHED_NONE || type >= SCHED_COUNT)
		return errf(err, "schedule: no pipeline schedule given");
	const struct sched_family *f = sched_family(type);
	const char *name = f->name;
	if (pp < 1 || pp > SCHED_MAX_PP)
		return errf(err, "%s: pp (%d) must be in [1, %d]", name, pp, SCHED_MAX_PP);
	if (m < 1 || m > SCHED_MAX_M)
		return errf(err, "%s: microbatches (%d) must be in [1, %d]", name, m, SCHED_MAX_M);
	if (f->flags & SCHED_F_VIRTUAL) {
		if (vpp < 2 || vpp > SCHED_MAX_VPP)
			return errf(err, "%s: vpp (%d) must be in [2, %d]", name, vpp, SCHED_MAX_VPP);
	} else if (vpp > 1) {
		return errf(err, "%s: vpp (%d) applies only to the interleaved schedule", name, vpp);
	}
	if (f->gen_rule && f->gen_rule(f, pp, m, err)) return -1;
	int chunks = sched_chunks(f, vpp);
	if ((size_t)pp * (size_t)m * (size_t)chunks * 3 > SCHED_MAX_OPS)
		return errf(err, "%s: pp*microbatches*chunks (%zu) is too large", name,
			    (size_t)pp * (size_t)m * (size_t)chunks);
	return 0;
}

static void sched_shape(struct sched *s, enum schedule type, int pp, int m, int vpp)
{
	s->type = type;
	s->fam = sched_family(type);
	s->pp = pp;
	s->m = m;
	s->chunks = sched_chunks(s->fam, vpp);
	s->ndirs = s->fam->ndirs;
	s->nstages = sched_nstages(s->fam, pp, vpp);
	s->mb_per_dir = m / s->ndirs;
}

struct sched *sched_create(enum schedule type, int pp, int m, int vpp, char *err)
{
	if (sched_check(type, pp, m, vpp, err)) return NULL;
	struct sched *s = calloc(1, sizeof(*s));
	if (!s) { errf(err, "schedule: out of memory"); return NULL; }
	sched_shape(s, type, pp, m, vpp);
	/* every rank runs at most 3 ops (F, B, W) per micro-batch and chunk */
	size_t per_rank = (size_t)3 * (size_t)s->mb_per_dir * (size_t)s->chunks * (size_t)s->ndirs;
	s->off = calloc((size_t)pp + 1, sizeof(*s->off));
	s->ops = malloc(per_rank * (size_t)pp * sizeof(*s->ops));
	int *wq = malloc(((size_t)m * 2 + 1) * sizeof(*wq));
	if (!s->off || !s->ops || !wq) {
		free(wq);
		sched_destroy(s);
		errf(err, "schedule: out of memory");
		return NULL;
	}
	struct sched_emit e = {s->ops, 0};
	for (int r = 0; r < pp; r++) {
		s->off[r] = e.n;
		s->fam->gen(&e, s, r, wq);
	}
	s->off[pp] = e.n;
	s->nops = e.n;
	free(wq);
	return s;
}

void sched_destroy(struct sched *s)
{
	if (!s) return;
	free(s->off);
	free(s->ops);
	free(s);
}

int sched_stage(const struct sched *s, int rank, int chunk, int dir)
{
	return s->fam->stage(s->pp, rank, chunk, dir);
}

void sched_locate(const struct sched *s, int dir, int stage, int *rank, int *chunk)
{
	s->fam->locate(s->pp, dir, stage, rank, chunk);
}

const char *op_kind_name(enum op_kind k)
{
	static const char *const names[] = {"F", "B", "W", "BW"};
	return (unsigned)k < OP_KIND_COUNT ? names[k] : "?";
}
