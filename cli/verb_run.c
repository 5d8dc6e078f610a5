/* run — `scaleplan run`: execute a plan for real, one MPI rank per GPU of the plan (mpirun -np
 * N), on the compute backend --backend names (kernels/backend.h: cpu, or cuda (bf16) and
 * cuda-fp32 in a build that links the CUDA backend; the default is kern_choose's). Every rank
 * parses the same flags; errors every rank sees alike are printed once, by rank 0, and every
 * rank exits with the same code. Rank 0 prints the per-step lines, writes the trace, the
 * weights dump and the database rows.
 *
 * Worlds: MPI (or the one-rank world of a NOMPI build) starts every run and carries this
 * verb's own host-side exchanges (failure flags, memory, trace events). A CUDA row with more
 * than one rank trains over the NCCL world bootstrapped from it (runtime/comm_nccl.h), whose
 * groups move the rows' device buffers; the CPU row and one rank train over the MPI world. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "kernels/backend.h"
#include "reports/json_out.h"
#include "reports/trace.h"
#include "runtime/ckpt.h"
#include "runtime/comm_nccl.h"
#include "runtime/data.h"
#include "runtime/train.h"
#include "sim/estimate.h"
#include "sim/hw.h"
#include "sim/outfile.h"
#include "sim/util.h"
#include "tuner/store.h"

#define DEFAULT_GPU "h100-sxm"

/* Linked only into a build with the CUDA backend (`make CUDA=1`), NULL otherwise. */
extern int comm_nccl_world(struct comm *bootstrap, int device, struct comm **out, char *err) __attribute__((weak));

struct run_opts {
	struct plan plan;
	long steps, save_every;
	struct train_opts train;
	const char *data, *db, *trace, *save, *resume, *dump;
	long finalist;            /* --finalist: the tune finalist this run benchmarks (store link) */
	double timeout_s;
	long finalist_id;          /* --id: a stored finalist's plan, recorded with the run */
	int json, no_db;
	enum kern_want backend;    /* --backend */
	const char *backend_name;  /* the row chosen (kern_choose) */
	double predicted_live_bytes; /* the simulator's live peak of the plan, worst rank */
};

static void run_usage(FILE *f)
{
	fprintf(f,
		"usage: mpirun -np N scaleplan run --model M PLAN-FLAGS [--steps K] [--seed S] [--data FILE]\n"
		"           [--db PATH | --no-db] [--id N] [--trace FILE.json] [--json] [--save DIR [--save-every K]]\n"
		"           [--resume DIR] [--dump-weights FILE] [--lr X] [--comm-timeout S]\n"
		"           [--bucket-params N] [--finalist ID] [--backend cuda|cuda-fp32|cpu]\n\n"
		"Trains the model with the plan on the runtime, one MPI rank per GPU of the plan\n"
		"(--gpus defaults to the number of ranks). Every parallel dimension runs: tp (with --sp),\n"
		"pp with each --schedule (and --vpp for interleaved), cp (ring attention over zig-zag\n"
		"rows), ep (MoE experts split inside dp*cp; needs tp 1), and dp with --zero 0-3; ZeRO-3\n"
		"needs ep = 1 and pp = 1, ZeRO 1/2 with ep > 1 shard experts over expert-DP (no --save or\n"
		"--resume), and DualPipe runs at ZeRO 0 (other plans stop with \"not yet supported by the\n"
		"runtime\"). Under a pipeline or with ep > 1, ZeRO 2 reduces once per step as ZeRO 1. Each rank\n"
		"builds only its shard: its TP slices, its pipeline stages' layers, its experts.\n"
		"--recompute full keeps only each recomputed layer's input (--recompute-layers: the first\n"
		"N layers of each stage) and re-runs its forward before its backward; selective drops the\n"
		"attention core's outputs and recomputes them from the kept qkv. The numerics are those of\n"
		"--recompute none, bit for bit; full recompute of MoE layers under ep > 1 with a split-W\n"
		"schedule (zb-h1, zb-v, DualPipe) is not yet supported.\n");
	fprintf(f,
		"The backend sets the arithmetic whatever --precision says; --gpu (default " DEFAULT_GPU ")\n"
		"only feeds the plan's validation.\n\n"
		"  --backend B        where the kernels run, one GPU per rank for the CUDA ones (rank r on\n"
		"                     GPU r mod the GPUs visible; a build with `make CUDA=1`): cuda (bf16\n"
		"                     activations and weights, fp32 master weights, gradients, moments and\n"
		"                     accumulation: cuBLASLt, cuDNN attention), cuda-fp32 (fp32 CUDA\n"
		"                     kernels, to compare with the CPU), or cpu (the fp32 reference\n"
		"                     kernels). Default: cuda when this build has it and a GPU is visible,\n"
		"                     else cpu. A GPU backend runs tp = pp = cp = ep = 1 plans without\n"
		"                     --save/--resume for now (cuda also without zero 3)\n"
		);
	fprintf(f,
		"  --steps K          train until K optimizer steps are done (a resumed run counts the\n"
		"                     checkpoint's steps), default 10\n"
		"  --seed S           initial weights and synthetic data (default 1234); same seed and\n"
		"                     plan give the same losses\n"
		"  --data FILE        llm.c token file: 256 little-endian int32 header (magic 20240520,\n"
		"                     version 1, token count N), then N uint16 tokens, each < vocab_size;\n"
		"                     sample i is the window at token (i mod W)*seq, W = (N-1)/seq.\n"
		"                     Default: synthetic tokens, a pure function of (seed, sample, position)\n"
		"  --lr X             AdamW learning rate (default 3e-4; betas 0.9/0.95, eps 1e-8, weight\n"
		"                     decay 0.1 on matrices only, clipping at global norm 1.0)\n"
		"  --json             one JSON object per step on stdout: step, loss, grad_norm,\n"
		"                     step_time_s, tokens_per_s, peak_mem_bytes (largest rank),\n"
		"                     peak_mem_bytes_per_rank, peak_rss_bytes_per_rank; then one\n"
		"                     {\"summary\": {steps, mean_step_time_s, tokens_per_s (the first step\n"
		"                     left out when there are more), peak_mem_bytes_per_rank (over the\n"
		"                     run), final_loss, backend, backend_peak_bytes_per_rank (the high-\n"
		"                     water mark of the backend allocator's bytes while training),\n"
		"                     predicted_live_peak_bytes\n"
		"                     (`sim`'s live-tensor peak of the plan, worst rank, at the plan's\n"
		"                     --precision), plan}}\n"
		"  --trace FILE.json  measured Chrome Trace Event JSON: ph \"X\" events, pid = rank,\n"
		"                     tid = stream (thread_name metadata; cat repeats it): 0 \"compute\"\n"
		"                     (F, B, W, BW: args {mb, chunk, stage, layers: count,\n"
		"                     first_layer}; optimizer: args {stage}) or 1 \"comm\" (allreduce, reduce_scatter,\n"
		"                     allgather: from the first bucket's start to the last wait's\n"
		"                     end; at ZeRO-3 each unit's gather from its call to its wait and\n"
		"                     the step's final wait for the unit reduce-scatters),\n"
		"                     ts/dur in microseconds since the ranks' common start\n"
		);
	fprintf(f,
		"  --db PATH          record the run and one measurement row per step (SQLite); --json\n"
		"                     lines then carry run_id; `scaleplan db runs` shows them beside their\n"
		"                     prediction\n"
		"  --no-db            record nothing (the default without --db)\n"
		"  --finalist ID      the tune finalist this run measures (recorded with the run; what\n"
		"                     `tune --bench-top` passes)\n"
		"  --id N             run stored finalist N (scaleplan db show TUNE) from the --db store\n"
		"                     (default scaleplan.db), recorded with it; plan flags given as well\n"
		"                     override its keys\n"
		"  --save DIR         save a checkpoint at the end (and every K steps with --save-every\n"
		"                     K) into DIR/save-S-step-N/: one file per rank, then rank 0's\n"
		"                     COMMIT once every file is on disk; older saves are deleted only\n"
		"                     after that, so a failed save (full disk, killed rank) leaves the\n"
		"                     previous one; leftovers of a failed save are removed at start\n"
		"  --resume DIR       continue from DIR's newest committed save (same plan, world size,\n"
		"                     seed, --lr and data; a difference is named and refused)\n"
		"  --dump-weights F   rank 0 writes every parameter after the last step, fp32\n"
		"                     little-endian, in the single-rank layout\n"
		"  --bucket-params N  gradient bucket size in parameters (default Megatron's\n"
		"                     max(40e6, 1e6*dp)); smaller buckets overlap backward more\n"
		"  --comm-timeout S   a collective waiting longer than S seconds ends the job (default\n"
		"                     300; 0 waits for ever)\n\n"
		"Memory per rank is the bytes of the buffers the rank holds at their peak: weights,\n"
		"gradients, AdamW moments, gradient shard, one micro-batch's activations and ZeRO-3's\n"
		"gathered units and gradient buffers (GiB = 2^30 bytes); the process's peak resident set\n"
		"size is reported beside it (peak_rss_bytes_per_rank).\n\n");
	plan_print_flags_help(f);
}

/* Returns 1 when argv[*i] was ours, 0 when not, -1 with err on a bad value. */
static int run_flag(int argc, char **argv, int *i, struct run_opts *o, char *err)
{
	const char *a = argv[*i];
	if (!strcmp(a, "--json")) { o->json = 1; return 1; }
	if (!strcmp(a, "--no-db")) { o->no_db = 1; return 1; }
	static const char *const with_value[] = {"--steps", "--seed", "--data", "--db", "--trace", "--save",
						 "--save-every", "--resume", "--dump-weights", "--lr",
						 "--comm-timeout", "--bucket-params", "--finalist", "--id", "--backend"};
	int k = -1;
	for (int j = 0; j < (int)(sizeof(with_value) / sizeof(with_value[0])); j++)
		if (!strcmp(a, with_value[j])) k = j;
	if (k < 0) return 0;
	if (*i + 1 >= argc) return errf(err, "%s: missing value", a);
	const char *v = argv[++*i];
	long n;
	double x;
	switch (k) {
	case 0: if (parse_int(v, "--steps", 1, 100000000, &o->steps, err)) return -1; break;
	case 1:
		if (parse_int(v, "--seed", 0, 0x7fffffffffffffffL, &n, err)) return -1;
		o->train.seed = (uint64_t)n;
		break;
	case 2: o->data = v; break;
	case 3: o->db = v; break;
	case 4: o->trace = v; break;
	case 5: o->save = v; break;
	case 6: if (parse_int(v, "--save-every", 1, 100000000, &o->save_every, err)) return -1; break;
	case 7: o->resume = v; break;
	case 8: o->dump = v; break;
	case 9:
		if (parse_double(v, "--lr", 0, 10, &x, err)) return -1;
		o->train.opt.lr = (float)x;
		break;
	case 10: if (parse_double(v, "--comm-timeout", 0, 1e6, &o->timeout_s, err)) return -1; break;
	case 12: if (parse_int(v, "--finalist", 1, 1L << 40, &o->finalist, err)) return -1; break;
	case 13: if (parse_int(v, "--id", 1, 1L << 40, &o->finalist_id, err)) return -1; break;
	case 14:
		if (!strcmp(v, "cpu")) o->backend = KERN_WANT_CPU;
		else if (!strcmp(v, "cuda")) o->backend = KERN_WANT_CUDA;
		else if (!strcmp(v, "cuda-fp32")) o->backend = KERN_WANT_CUDA_FP32;
		else return errf(err, "--backend: '%s' is not cuda, cuda-fp32 or cpu", v);
		break;
	case 11:
		if (parse_int(v, "--bucket-params", 1, 0x7fffffffffffL, &n, err)) return -1;
		o->train.bucket_params = (size_t)n;
		break;
	}
	return 1;
}

/* The plan of stored finalist id (what `export --id` reads). */
static int load_finalist(const char *db, long id, struct plan *p, char *err)
{
	struct store *s;
	struct store_finalist fin;
	if (store_open(db, 0, &s, err)) return -1;
	int rc = store_get_finalist(s, id, &fin, err);
	store_close(s);
	if (rc) return -1;
	rc = plan_from_json(fin.plan_json, p, err);
	store_finalist_clear(&fin);
	if (rc) return errf(err, "finalist %ld: %s", id, err);
	/* the tuner resolved it for its cluster: let this run's world size decide again */
	p->gpus = 0;
	return 0;
}

/* Every rank parses; returns 0, or -1 with err (printed by the caller on rank 0). */
static int parse(int argc, char **argv, struct run_opts *o, int *help, char *err)
{
	memset(o, 0, sizeof(*o));
	plan_defaults(&o->plan);
	train_opts_default(&o->train);
	o->steps = 10;
	o->timeout_s = 300;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { *help = 1; return EXIT_OK; }
		int r = run_flag(argc, argv, &i, o, err);
		if (r < 0) return -1;
	}
	if (o->no_db && o->db) return errf(err, "--db and --no-db exclude each other");
	if (o->finalist_id && o->no_db) return errf(err, "--id reads the store; it does not go with --no-db");
	/* a stored finalist's plan first, so that plan flags override its keys */
	if (o->finalist_id && load_finalist(o->db ? o->db : STORE_DEFAULT_PATH, o->finalist_id, &o->plan, err)) return -1;
	if (o->finalist_id && !o->db) o->db = STORE_DEFAULT_PATH;
	if (o->finalist_id) o->finalist = o->finalist_id;
	for (int i = 1; i < argc; i++) {
		struct run_opts scratch = *o;
		int r = run_flag(argc, argv, &i, &scratch, err);
		if (r == 0) r = cli_plan_flag(argc, argv, &i, &o->plan, err);
		if (r < 0) return -1;
		if (r == 0) return errf(err, "unknown option '%s'", argv[i]);
	}
	if (!o->plan.model[0]) return errf(err, "--model is required");
	if (o->save_every && !o->save) return errf(err, "--save-every needs --save DIR");
	if (o->finalist && !o->db) return errf(err, "--finalist needs --db PATH (the store that holds the finalist)");
	return 0;
}

static int load_plan(struct run_opts *o, int world, struct model *m, char *err)
{
	struct hw h;
	struct plan *p = &o->plan;
	if (!p->gpu[0]) snprintf(p->gpu, sizeof(p->gpu), "%s", DEFAULT_GPU);
	if (!p->gpus && !p->dp) p->gpus = world;
	if (model_load(p->model, m, err) || hw_load(p->gpu, &h, err) || plan_prepare(p, m, &h, err) ||
	    train_supported(p, m, err))
		return -1;
	struct estimate e;
	if (estimate_plan(m, &h, p, &e, err)) return -1;
	o->predicted_live_bytes = e.live_peak_bytes;
	if ((o->save || o->resume) && p->zero > 0 && p->ep > 1)
		return errf(err, "not yet supported by the runtime: --save/--resume with zero %d and ep %d (the "
		            "optimizer state is split over two groups)", p->zero, p->ep);
	if (p->gpus != world)
		return errf(err, "the plan needs %d ranks (--gpus %d) but mpirun started %d; run mpirun -np %d",
			    p->gpus, p->gpus, world, p->gpus);
	return 0;
}

/* The backend row of this run: kern_choose over what this build has and what it sees; rank r
 * takes GPU r mod the visible count (one node's ranks, one GPU each). */
static int pick_backend(struct run_opts *o, const struct model *m, int rank, char *err)
{
	const struct kern_ops *cuda = kern_cuda_row();
	int gpus = cuda && cuda->device_count ? cuda->device_count() : 0;
	const char *name = kern_choose(o->backend, cuda != NULL, gpus, err);
	if (!name) return -1;
	o->backend_name = name;
	o->train.backend = kern_row(name);
	o->train.device = o->train.backend != &kern_cpu_ops && gpus > 0 ? rank % gpus : 0;
	if ((o->save || o->resume) && !o->train.backend->host_visible)
		return errf(err, "--backend %s: --save and --resume are not yet supported on it (checkpoints read "
		            "host memory); use --backend cpu", name);
	/* a device row's limits before a communicator is made for it (train_create checks again) */
	return o->train.backend->host_visible ? 0 : train_supported_on(&o->plan, m, o->train.backend, err);
}

/* The world the trainer's groups split from: for a row whose memory the host cannot read and
 * more than one rank, NCCL's over the MPI bootstrap (*out), whose collectives read device
 * buffers; else none (*out NULL: the bootstrap itself). Collective over the bootstrap. */
static int train_world(const struct run_opts *o, struct comm *boot, struct comm **out, char *err)
{
	*out = NULL;
	if (o->train.backend->host_visible || comm_size(boot) == 1) return 0;
	if (!comm_nccl_world)
		return errf(err, "--backend %s with %d ranks: this build has no NCCL communicator (build with `make "
		            "CUDA=1`)", o->backend_name, comm_size(boot));
	if (comm_nccl_world(boot, o->train.device, out, err)) return -1;
	comm_set_timeout(*out, o->timeout_s);
	return 0;
}

/* 1 when any rank of the world failed (sum of flags), so every rank takes the same branch. */
static int any_failed(struct comm *world, int failed)
{
	double f = failed ? 1 : 0;
	char e2[ERR_LEN];
	if (comm_allreduce(world, &f, &f, 1, COMM_F64, e2)) return 1;
	return f > 0;
}

/* ---- output ------------------------------------------------------------------------- */

static void print_step(const struct run_opts *o, const struct train_stats *st, const double *mem,
		       int world, long run_id)
{
	double peak = 0;
	for (int r = 0; r < world; r++) peak = mem[2 * r] > peak ? mem[2 * r] : peak;
	if (o->json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddNumberToObject(j, "step", st->step);
		json_add_exact(j, "loss", st->loss);   /* every bit: resumes compare it bit for bit */
		json_add_sig(j, "grad_norm", st->grad_norm, 9);
		json_add_sig(j, "step_time_s", st->step_time_s, 6);
		json_add_sig(j, "tokens_per_s", st->tokens_per_s, 6);
		json_add_fixed(j, "peak_mem_bytes", peak, 0);
		cJSON *a = cJSON_AddArrayToObject(j, "peak_mem_bytes_per_rank"), *b = cJSON_AddArrayToObject(j, "peak_rss_bytes_per_rank");
		for (int r = 0; r < world; r++) {
			cJSON_AddItemToArray(a, cJSON_CreateNumber(json_fixed(mem[2 * r], 0)));
			cJSON_AddItemToArray(b, cJSON_CreateNumber(json_fixed(mem[2 * r + 1], 0)));
		}
		if (run_id) cJSON_AddNumberToObject(j, "run_id", (double)run_id);
		json_print(stdout, j, 0);
		cJSON_Delete(j);
	} else {
		printf("step %4d  loss %.6f  grad norm %.4f  %.4f s  %.0f tokens/s  peak mem GiB/rank:",
		       st->step, st->loss, st->grad_norm, st->step_time_s, st->tokens_per_s);
		for (int r = 0; r < world; r++) printf(" %.4f", mem[2 * r] / GIB);
		printf("\n");
	}
	fflush(stdout);
}

/* the --json run's last line */
static void print_summary(const struct run_opts *o, int steps, double mean_s, double tps, const double *peak_rank,
			  const double *backend_peak, int world, double last_loss, const char *plan_json)
{
	cJSON *doc = cJSON_CreateObject(), *sm = cJSON_AddObjectToObject(doc, "summary");
	cJSON_AddNumberToObject(sm, "steps", steps);
	json_add_sig(sm, "mean_step_time_s", mean_s, 6);
	json_add_sig(sm, "tokens_per_s", tps, 6);
	cJSON *a = cJSON_AddArrayToObject(sm, "peak_mem_bytes_per_rank");
	for (int r = 0; r < world; r++) cJSON_AddItemToArray(a, cJSON_CreateNumber(json_fixed(peak_rank[r], 0)));
	json_add_exact(sm, "final_loss", last_loss);
	cJSON_AddStringToObject(sm, "backend", o->backend_name);
	cJSON *bp = cJSON_AddArrayToObject(sm, "backend_peak_bytes_per_rank");
	for (int r = 0; r < world; r++) cJSON_AddItemToArray(bp, cJSON_CreateNumber(json_fixed(backend_peak[r], 0)));
	json_add_fixed(sm, "predicted_live_peak_bytes", o->predicted_live_bytes, 0);
	cJSON_AddItemToObject(sm, "plan", cJSON_Parse(plan_json));
	json_print(stdout, doc, 0);
	cJSON_Delete(doc);
}

#define EVF 9  /* doubles per gathered event */

/* Rank 0 gathers every rank's events (padded to the largest count) and writes the trace. */
static int write_trace(struct ctx *x, struct comm *boot, struct trainer *t, const char *path, const char *plan_json,
                       char *err)
{
	size_t n;
	const struct train_event *ev = train_events(t, &n);
	double cnt = (double)n, *counts = malloc(sizeof(double) * (size_t)x->world);
	if (!counts) return errf(err, "trace: out of memory");
	int rc = comm_allgather(boot, &cnt, counts, 1, COMM_F64, err);
	size_t most = 0;
	for (int r = 0; !rc && r < x->world; r++) most = (size_t)counts[r] > most ? (size_t)counts[r] : most;
	double *mine = calloc(most * EVF + 1, sizeof(double));
	double *all = calloc(most * EVF * (size_t)x->world + 1, sizeof(double));
	if (!rc && (!mine || !all)) rc = errf(err, "trace: out of memory for %zu events", most);
	for (size_t i = 0; !rc && i < n; i++) {
		const struct train_event *e = &ev[i];
		double row[EVF] = {e->start_s, e->end_s, e->name, e->stream, e->mb, e->chunk, e->stage,
				   e->layer0, e->layer1};
		memcpy(mine + i * EVF, row, sizeof(row));
	}
	if (!rc) rc = comm_allgather(boot, mine, all, most * EVF, COMM_F64, err);
	if (!rc && x->rank == 0) {
		struct trace_op *ops = calloc(most * (size_t)x->world + 1, sizeof(*ops));
		size_t *nops = calloc((size_t)x->world, sizeof(*nops));
		if (!ops || !nops) rc = errf(err, "trace: out of memory for %zu events", most);
		for (int r = 0; !rc && r < x->world; r++) {
			nops[r] = (size_t)counts[r];
			for (size_t i = 0; i < nops[r]; i++) {
				const double *e = all + ((size_t)r * most + i) * EVF;
				ops[(size_t)r * most + i] = (struct trace_op){
					.start_s = e[0], .end_s = e[1], .name = train_ev_name((int)e[2]),
					.stream = (int)e[3] == EV_COMPUTE ? TRACE_COMPUTE : TRACE_COMM, .mb = (int)e[4],
					.chunk = (int)e[5], .stage = (int)e[6], .layer0 = (int)e[7], .layer1 = (int)e[8]};
			}
		}
		if (!rc) rc = trace_write_measured(path, plan_json, x->world, nops, ops, most, err);
		free(ops);
		free(nops);
	}
	free(counts);
	free(mine);
	free(all);
	return rc;
}

static int dump_weights(struct ctx *x, struct trainer *t, const char *path, char *err)
{
	size_t n = train_n_params(t);
	float *full = malloc(n * sizeof(float));
	if (!full) return errf(err, "--dump-weights: out of memory for %zu parameters", n);
	int rc = train_full_params(t, full, err);
	if (!rc && x->rank == 0) {
		struct outfile o;
		char e2[ERR_LEN];
		if (outfile_open(&o, path, e2)) rc = errf(err, "--dump-weights: %s", e2);
		else if (outfile_write(&o, full, n * sizeof(float), e2)) {
			outfile_abort(&o);
			rc = errf(err, "--dump-weights: %s", e2);
		} else if (outfile_commit(&o, e2)) {
			rc = errf(err, "--dump-weights: %s", e2);
		}
	}
	free(full);
	return rc;
}

/* ---- the run ------------------------------------------------------------------------ */

struct job {
	struct run_opts o;
	struct model m;
	struct ctx *x;
	struct comm *boot;     /* the MPI world: host-side exchanges (borrowed) */
	struct data *data;
	struct trainer *t;
	struct store *db;
	long run_id;
	char *plan_json;
	char *settings_json;   /* what a checkpoint must match besides the plan: lr, data */
	int agreed;            /* the failure is known to every rank: no need to abort the job */
};

/* Collective: every rank returns the same value; err is empty except on the reporting rank. */
static int save(struct job *j, char *err)
{
	struct train_state s;
	train_state(j->t, &s);
	struct ckpt_meta meta = {j->x->rank, j->x->world, j->plan_json, j->settings_json, j->o.train.seed,
				 (uint64_t)*s.steps_done * (uint64_t)j->o.plan.gbs};
	if (ckpt_save_all(j->boot, j->o.save, &meta, &s, err)) {
		j->agreed = 1;
		return -1;
	}
	return 0;
}

static char *settings_json(const struct run_opts *o, const struct data *d)
{
	char ident[128];
	data_identity(d, ident, sizeof(ident));
	cJSON *x = cJSON_CreateObject();
	if (!x) return NULL;
	cJSON_AddNumberToObject(x, "lr", o->train.opt.lr);
	cJSON_AddStringToObject(x, "data", ident);
	char *s = cJSON_PrintUnformatted(x);
	cJSON_Delete(x);
	return s;
}

/* Rank 0 opens the store and records the run; the others only learn whether it worked. */
static int open_db(struct job *j, char *err)
{
	if (j->x->rank != 0) return 0;
	char host[256] = "unknown";
	gethostname(host, sizeof(host) - 1);
	if (store_open(j->o.db, 1, &j->db, err)) return -1;
	return store_add_run(j->db, j->o.finalist, j->plan_json, host, &j->run_id, err);
}

static int train_loop(struct job *j, char *err)
{
	int world = j->x->world;
	double *mem = malloc(sizeof(double) * 2 * (size_t)world);
	if (!mem) return errf(err, "out of memory");
	int rc = 0, first = train_steps_done(j->t) + 1, timed = 0;
	const struct plan *p = &j->o.plan;
	if (j->x->rank == 0 && !j->o.json) {
		char desc[512];
		plan_describe(p, desc, sizeof(desc));
		printf("run: %s, %zu parameters, %d ranks, steps %d..%ld, %d micro-batches of %d x %d tokens per pipeline\n"
		       "plan: %s\n", j->m.name, train_n_params(j->t), j->x->world, first, j->o.steps, plan_microbatches(p),
		       p->mbs, p->seq, desc);
	}
	double sum_s = 0, first_s = 0, last_loss = 0;
	double *peak_rank = calloc((size_t)world, sizeof(double));
	if (!peak_rank) { free(mem); return errf(err, "out of memory"); }
	while (!rc && train_steps_done(j->t) < j->o.steps) {
		struct train_stats st;
		double mine[2];
		if (train_step(j->t, &st, err)) { rc = -1; break; }
		mine[0] = st.mem_bytes_local;
		mine[1] = st.rss_bytes_local;
		if (comm_allgather(j->boot, mine, mem, 2, COMM_F64, err)) { rc = -1; break; }
		if (st.step > first) sum_s += st.step_time_s, timed++;   /* the first step warms up */
		else first_s = st.step_time_s;
		last_loss = st.loss;
		for (int r = 0; r < world; r++) if (mem[2 * r] > peak_rank[r]) peak_rank[r] = mem[2 * r];
		if (j->x->rank == 0) {
			print_step(&j->o, &st, mem, world, j->run_id);
			double peak = 0;
			for (int r = 0; r < world; r++) peak = mem[2 * r] > peak ? mem[2 * r] : peak;
			if (j->db && store_add_measurement(j->db, j->run_id, st.step, st.step_time_s, st.tokens_per_s,
							   peak, st.loss, err))
				rc = -1;
		}
		if (!rc && j->o.save_every && st.step % j->o.save_every == 0 && st.step < j->o.steps && save(j, err))
			rc = -1;
	}
	int steps = train_steps_done(j->t) - first + 1;
	/* the backend allocator's high-water mark of every rank (collective) */
	double kpeak = (double)train_backend(j->t)->peak_bytes;
	double *kpeak_rank = calloc((size_t)world, sizeof(double));
	if (!rc && !kpeak_rank) rc = errf(err, "out of memory");
	if (!rc && comm_allgather(j->boot, &kpeak, kpeak_rank, 1, COMM_F64, err)) rc = -1;
	double mean_s = timed ? sum_s / timed : first_s, tps = mean_s > 0 ? (double)p->gbs * p->seq / mean_s : 0;
	if (!rc && j->x->rank == 0 && !j->o.json && steps > 0)
		printf("run: mean step time over steps %d..%ld: %.4f s, %.0f tokens/s\n", timed ? first + 1 : first,
		       j->o.steps, mean_s, tps);
	if (!rc && j->x->rank == 0 && j->o.json && steps > 0) {
		print_summary(&j->o, steps, mean_s, tps, peak_rank, kpeak_rank, world, last_loss, j->plan_json);
		fflush(stdout);
	}
	if (!rc && j->x->rank == 0 && !j->o.json && steps > 0)
		printf("run: backend %s, allocator peak %.4f GiB on rank 0 (sim's live peak of the plan %.4f GiB)\n",
		       j->o.backend_name, kpeak / GIB, j->o.predicted_live_bytes / GIB);
	free(kpeak_rank);
	free(peak_rank);
	free(mem);
	return rc;
}

/* Input checks every rank makes; returns the exit code all ranks share. Messages are
 * printed here (err is left empty). */
static int setup(struct job *j, struct comm *world, char *err)
{
	err[0] = 0;
	struct run_opts *o = &j->o;
	int rank = comm_rank(world);
	/* the data file: every rank reads it and reports its own failure */
	char e2[ERR_LEN] = "";
	int bad = o->data ? data_open_file(o->data, j->m.vocab, o->plan.seq, &j->data, e2)
			  : data_open_synthetic(j->m.vocab, o->train.seed, &j->data, e2);
	if (bad) cli_error("run", "rank %d: %s", rank, e2);
	if (any_failed(world, bad)) return EXIT_BADINPUT;
	if (train_create(j->x, &j->m, &o->train, j->data, &j->t, e2)) {
		if (rank == 0) cli_error("run", "%s", e2);
		return EXIT_BADINPUT;
	}
	j->plan_json = plan_to_json(&o->plan);
	j->settings_json = settings_json(o, j->data);
	if (!j->plan_json || !j->settings_json) return errf(err, "out of memory"), EXIT_RUNTIME;
	if (o->resume) {
		struct train_state s;
		train_state(j->t, &s);
		struct ckpt_meta meta = {rank, j->x->world, j->plan_json, j->settings_json, o->train.seed, 0};
		if (ckpt_load_all(world, o->resume, &meta, &s, e2)) {
			if (e2[0]) cli_error("run", "rank %d: %s", rank, e2);
			return EXIT_BADINPUT;
		}
	}
	/* leftovers of a failed save (its directory without COMMIT) go before the first save */
	bad = o->save && rank == 0 && ckpt_clean(o->save, e2);
	if (bad) cli_error("run", "%s", e2);
	if (any_failed(world, bad)) return EXIT_RUNTIME;
	bad = o->db && open_db(j, e2);
	if (bad) cli_error("run", "%s", e2);
	if (any_failed(world, bad)) return EXIT_BADINPUT;
	return EXIT_OK;
}

static int finish(struct job *j, char *err)
{
	if (j->o.dump && dump_weights(j->x, j->t, j->o.dump, err)) return -1;
	if (j->o.trace && write_trace(j->x, j->boot, j->t, j->o.trace, j->plan_json, err)) return -1;
	if (j->o.save && save(j, err)) return -1;
	if (j->db && store_finish_run(j->db, j->run_id, "finished", err)) return -1;
	return 0;
}

int cmd_run(int argc, char **argv)
{
	char err[ERR_LEN] = "";
	struct comm *world = NULL, *nccl = NULL;
	if (comm_mpi_world(&world, err)) {
		cli_error("run", "%s", err);
		return EXIT_RUNTIME;
	}
	int rank = comm_rank(world), help = 0;
	struct job j;
	memset(&j, 0, sizeof(j));
	int rc = parse(argc, argv, &j.o, &help, err) ? EXIT_BADINPUT : EXIT_OK;
	if (help) {
		if (rank == 0) run_usage(stdout);
		goto out;
	}
	if (!rc && load_plan(&j.o, comm_size(world), &j.m, err)) rc = EXIT_BADINPUT;
	if (!rc && pick_backend(&j.o, &j.m, rank, err)) rc = EXIT_BADINPUT;
	if (rc) {
		if (rank == 0) cli_error("run", "%s", err);
		goto out;
	}
	comm_set_timeout(world, j.o.timeout_s);
	j.boot = world;
	if (train_world(&j.o, world, &nccl, err)) {
		cli_error("run", "rank %d: %s", rank, err);
		rc = EXIT_RUNTIME;
		fflush(stderr);
		comm_abort(world, EXIT_RUNTIME);   /* the others may be inside the NCCL bootstrap */
		goto out;
	}
	j.o.train.trace = j.o.trace != NULL;
	if (ctx_create(nccl ? nccl : world, &j.o.plan, &j.x, err)) {
		if (rank == 0) cli_error("run", "%s", err);
		rc = EXIT_BADINPUT;
		goto out;
	}
	rc = setup(&j, world, err);
	if (rc) {
		/* setup printed per-rank messages itself; others are the same everywhere */
		if (err[0]) cli_error("run", "rank %d: %s", rank, err);
		goto out;
	}
	if (train_loop(&j, err) || finish(&j, err)) {
		if (err[0]) cli_error("run", "rank %d: %s", rank, err);
		if (j.db) store_finish_run(j.db, j.run_id, "failed", NULL);
		rc = EXIT_RUNTIME;
		/* a failure only this rank saw leaves the others waiting in a collective: end the
		 * whole job; one every rank agreed on (a failed save) ends each rank cleanly */
		if (!j.agreed) {
			fflush(stderr);
			comm_abort(world, EXIT_RUNTIME);
			exit(EXIT_RUNTIME); /* a backend that cannot end the job returns (runtime/comm.h) */
		}
	}
out:
	store_close(j.db);
	train_destroy(j.t);
	data_close(j.data);
	free(j.plan_json);
	free(j.settings_json);
	ctx_destroy(j.x);
	comm_destroy(nccl);   /* after the groups the context split from it */
	comm_destroy(world);
	return rc;
}
