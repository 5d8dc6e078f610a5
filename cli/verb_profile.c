/* profile — `scaleplan profile`: measure this machine and write a hardware profile in the
 * format of profiles/hw (so `--gpu FILE.json` takes it everywhere), with the measured tables
 * the simulator interpolates (sim/hw_table.h). Run under mpirun -np N (one rank per "GPU"), or
 * give --ranks N and this verb starts mpirun itself. Rank 0 writes the file and prints.
 * --backend cuda (a CUDA=1 build): rank r drives GPU r mod the visible GPUs, collectives run on
 * an NCCL world bootstrapped over the MPI world (the one-rank world in a NOMPI build); one GPU
 * measures no collective, and the profile says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "sim/collective.h"
#include "sim/hw.h"
#include "sim/outfile.h"
#include "runtime/comm.h"
#include "runtime/profile.h"
#include "sim/util.h"
#include "tuner/store.h"

static void profile_usage(FILE *f)
{
	fprintf(f,
		"usage: mpirun -np N scaleplan profile [--backend cpu|cuda] [-o PROFILE.json] [--db PATH]\n"
		"                      [--name NAME] [--max-dim D] [--max-seq S] [--max-bytes B]\n"
		"                      [--heads H] [--head-dim D] [--min-time S] [--fabric GPU]\n"
		"       scaleplan profile --ranks N ...   (starts mpirun --oversubscribe -np N itself)\n\n"
		"Measures the machine with every rank busy at once, as a training job's ranks are, and\n"
		"writes a hardware profile (profiles/README.md) whose \"tables\" the simulator interpolates:\n"
		"GEMM throughput by (M, N, K) from 16 to D (default 2048; cuda 8192), attention forward/\n"
		"backward of H heads (4; cuda 16) of width D (64; cuda 128) by sequence length up to S\n"
		"(1024; cuda 4096), memory-bound kernels and streaming bandwidth by size, and nccl-tests-style\n"
		"collective time and bus bandwidth by operation, message size (1 KiB to B, default 16M; cuda\n"
		"256M) and group size (2, 4, ... N consecutive ranks, all groups at once). The\n"
		"scalar fields (peak, bandwidths, efficiencies) are derived from the tables so that profiles\n"
		"without tables keep working; `scaleplan calibrate` fits them to measured runs.\n\n"
		"  --backend B   cpu (OpenBLAS and the runtime's kernels, MPI collectives), cuda (bf16:\n"
		"                cuBLASLt GEMMs, cuDNN attention, bf16 RMSNorm + SwiGLU, device copies, NCCL;\n"
		"                one GPU per rank, rank r on GPU r mod the visible ones); built here: %s\n"
		"  -o FILE       write the profile there (default: stdout)\n"
		"  --db PATH     also record it in the results store\n"
		"  --name NAME   the profile's name (default cpu-HOST-Nr, cuda-DEVICE-Nr)\n"
		"  --min-time S  each measurement repeats for at least S seconds (default 0.05)\n"
		"  --fabric GPU  the network tiers beyond what was measured, and NCCL's buffer sizes, from a\n"
		"                hardware profile (a built-in name or a file): with one rank every tier (no\n"
		"                collective was measured), with several ranks the tiers above the first\n",
		profile_backend_names());
}

struct prof_args {
	const char *backend, *out, *db, *name, *fabric;
	long ranks;
	struct hw fab;             /* --fabric's profile, loaded before anything is measured */
	struct profile_opts o;
};

static int parse_args(int argc, char **argv, struct prof_args *a, char *err)
{
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (i + 1 >= argc) return errf(err, "unknown option or missing value: '%s'", o);
		const char *v = argv[++i];
		long n;
		double x;
		if (!strcmp(o, "--backend")) a->backend = v;
		else if (!strcmp(o, "-o") || !strcmp(o, "--output")) a->out = v;
		else if (!strcmp(o, "--db")) a->db = v;
		else if (!strcmp(o, "--name")) a->name = v;
		else if (!strcmp(o, "--fabric")) a->fabric = v;
		else if (!strcmp(o, "--ranks")) { if (parse_int(v, "--ranks", 1, 4096, &a->ranks, err)) return -1; }
		else if (!strcmp(o, "--max-dim")) { if (parse_int(v, "--max-dim", 16, 16384, &n, err)) return -1; a->o.lim.max_dim = (int)n; }
		else if (!strcmp(o, "--max-seq")) { if (parse_int(v, "--max-seq", 32, 65536, &n, err)) return -1; a->o.lim.max_seq = (int)n; }
		else if (!strcmp(o, "--heads")) { if (parse_int(v, "--heads", 1, 256, &n, err)) return -1; a->o.lim.heads = (int)n; }
		else if (!strcmp(o, "--head-dim")) { if (parse_int(v, "--head-dim", 8, 256, &n, err)) return -1; a->o.lim.head_dim = (int)n; }
		else if (!strcmp(o, "--max-bytes")) {
			if (parse_size_suffix(v, "--max-bytes", &x, err)) return -1;
			if (x < 4096 || x > 1e10) return errf(err, "--max-bytes (%g) must be in [4K, 10G]", x);
			a->o.lim.max_bytes = (size_t)x;
		} else if (!strcmp(o, "--min-time")) { if (parse_double(v, "--min-time", 1e-4, 10, &a->o.min_time_s, err)) return -1; }
		else return errf(err, "unknown option '%s'", o);
	}
	return 0;
}

/* --ranks N outside a launcher: run this very command under mpirun, without --ranks */
static int relaunch(int argc, char **argv, long ranks)
{
	char np[24], self[4096], *args[256];
	int k = 0;
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0) { cli_error("profile", "cannot find this program's path to start it under mpirun"); return EXIT_RUNTIME; }
	self[len] = 0;
	snprintf(np, sizeof(np), "%ld", ranks);
	args[k++] = "mpirun";
	args[k++] = "--oversubscribe";
	args[k++] = "-np";
	args[k++] = np;
	args[k++] = self;
	args[k++] = "profile";
	for (int i = 1; i < argc && k < 250; i++) {
		if (!strcmp(argv[i], "--ranks")) { i++; continue; }
		args[k++] = argv[i];
	}
	args[k] = NULL;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) { cli_error("profile", "cannot start mpirun"); return EXIT_RUNTIME; }
	if (pid == 0) {
		execvp("mpirun", args);
		cli_error("profile", "cannot run mpirun (is Open MPI installed?)");
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0) return EXIT_RUNTIME;
	return WIFEXITED(st) ? WEXITSTATUS(st) : EXIT_RUNTIME;
}

static void on_progress(void *ctx, const char *what, double f)
{
	(void)ctx;
	fprintf(stderr, "\rprofile: %-12s %3.0f%%", what, 100 * f);
	if (f >= 1) fputs("\r\033[K", stderr);
	fflush(stderr);
}

static double mem_per_rank_bytes(int ranks)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	return pages > 0 && size > 0 ? (double)pages * size / ranks : GIB;
}

/* the half-efficiency dimension of eff = n / (n + h) (sim/layer_cost.c) that each table entry
 * implies, n its smallest dimension, eff its throughput over the best; their median */
static double half_dim(const struct profile_result *r)
{
	const struct hw_tables *t = &r->t;
	double h[HWT_MAX_AXIS * HWT_MAX_AXIS * HWT_MAX_AXIS];
	int n = 0;
	for (int i = 0; i < t->gm; i++)
		for (int j = 0; j < t->gn; j++)
			for (int k = 0; k < t->gk; k++) {
				double mn = t->gemm_m[i], e = t->gemm_flops[i][j][k] / r->peak_flops;
				if (t->gemm_n[j] < mn) mn = t->gemm_n[j];
				if (t->gemm_k[k] < mn) mn = t->gemm_k[k];
				if (e < 1) h[n++] = mn * (1 - e) / e;
			}
	if (!n) return 0;
	for (int i = 1; i < n; i++) /* insertion sort: at most 512 entries */
		for (int j = i; j > 0 && h[j] < h[j - 1]; j--) { double x = h[j]; h[j] = h[j - 1]; h[j - 1] = x; }
	return h[n / 2];
}

static void add_num(cJSON *o, const char *key, double v, const char *fmt)
{
	char buf[32];
	snprintf(buf, sizeof(buf), fmt, v);
	cJSON_AddItemToObject(o, key, cJSON_CreateRaw(buf));
}

/* the profile as profiles/hw JSON: scalar fields derived from the tables (file units) */
static cJSON *profile_json(const struct prof_args *a, const struct profile_backend *b, struct profile_result *r,
			   const char *host, const char *when)
{
	struct hw_tables *t = &r->t;
	double bw = r->stream_bps > r->elem_bps ? r->stream_bps : r->elem_bps;
	double busbw = r->ranks > 1 ? r->coll_busbw_bps : bw / 2;
	if (busbw < 0.1e9) busbw = 0.1e9;
	double attn_eff = r->attn_flops / (2 * r->peak_flops);
	if (attn_eff > 1) attn_eff = 1;
	snprintf(t->backend, sizeof(t->backend), "%s", b->name);
	snprintf(t->dtype, sizeof(t->dtype), "%s", b->dtype);
	snprintf(t->host, sizeof(t->host), "%s", host);
	snprintf(t->measured, sizeof(t->measured), "%s", when);
	t->ref_gemm_eff = 1;
	t->ref_attn_eff = attn_eff;
	t->ref_mem_eff = r->elem_bps / bw;
	t->ref_comm_eff = 1;
	t->ref_bw_bps = busbw;
	cJSON *o = cJSON_CreateObject();
	char name[96];
	int fp32 = !strcmp(b->dtype, "fp32"), dev = b->device_count != NULL;
	if (a->name) snprintf(name, sizeof(name), "%s", a->name);
	else profile_default_name(b->name, r->device, host, r->ranks, name, sizeof(name));
	cJSON_AddStringToObject(o, "name", name);
	/* fp32 plans price GEMMs at half the 16-bit peak (sim/estimate.c), so the best fp32
	 * GEMM measured is written as half of peak_bf16; a bf16 backend's best GEMM is the peak */
	add_num(o, "peak_bf16_tflops", (fp32 ? 2 : 1) * r->peak_flops / 1e12, "%.6g");
	add_num(o, "peak_fp8_tflops", 0, "%g");
	add_num(o, "hbm_gib", (r->device_mem_bytes > 0 ? r->device_mem_bytes : mem_per_rank_bytes(r->ranks)) / GIB, "%.4g");
	add_num(o, "hbm_bw_gbps", bw / 1e9, "%.4g");
	/* the ranks of this machine are one "NVLink domain" (shared memory); what lies beyond it is
	 * not measured: the network tier repeats its bandwidth, unless --fabric names a profile
	 * whose tiers stand in for what was not measured (all of them with one rank) */
	cJSON *net = cJSON_AddArrayToObject(o, "network");
	const struct hw *fab = a->fabric ? &a->fab : NULL;
	int ntiers = fab ? fab->ntiers : 2;
	for (int i = 0; i < ntiers; i++) {
		cJSON *tier = cJSON_CreateObject();
		if (fab && (i > 0 || r->ranks == 1)) {
			const struct hw_tier *ft = &fab->tier[i];
			cJSON_AddStringToObject(tier, "name", ft->name);
			cJSON_AddNumberToObject(tier, "gpus", ft->gpus);
			cJSON_AddStringToObject(tier, "link", ft->net ? "net" : "nvlink");
			add_num(tier, "busbw_gbps", ft->busbw_bps / 1e9, "%.4g");
			if (ft->nvls_busbw_bps > 0) add_num(tier, "nvls_busbw_gbps", ft->nvls_busbw_bps / 1e9, "%.4g");
			if (ft->oversub > 1) add_num(tier, "oversubscription", ft->oversub, "%.4g");
			if (ft->has_hop) { /* the fabric's own per-hop latency goes with its tier */
				cJSON *hop = cJSON_AddArrayToObject(tier, "hop_us");
				for (int p = 0; p < PROTO_COUNT; p++) cJSON_AddItemToArray(hop, cJSON_CreateNumber(ft->hop_s[p] * 1e6));
			}
		} else {
			int last = i == ntiers - 1;
			cJSON_AddStringToObject(tier, "name", i ? "network" : dev ? "node" : "shared-memory");
			/* a measured first tier below --fabric's keeps the fabric's multiples valid */
			cJSON_AddNumberToObject(tier, "gpus", last && i ? 0 : fab ? fab->tier[0].gpus : r->ranks);
			cJSON_AddStringToObject(tier, "link", i ? "net" : "nvlink");
			add_num(tier, "busbw_gbps", busbw / 1e9, "%.4g");
		}
		cJSON_AddItemToArray(net, tier);
	}
	if (fab && r->ranks == 1) t->ref_bw_bps = fab->tier[0].busbw_bps;
	if (fab && r->ranks == 1 && fab->curve.n) { /* the NVLink domain's measured collective goes with it */
		cJSON *cv = cJSON_AddObjectToObject(o, "nvlink_coll_curve");
		cJSON_AddStringToObject(cv, "op", coll_name(fab->curve.op));
		cJSON_AddNumberToObject(cv, "ranks", fab->curve.ranks);
		cJSON *mib = cJSON_AddArrayToObject(cv, "mib"), *gbps = cJSON_AddArrayToObject(cv, "busbw_gbps");
		for (int i = 0; i < fab->curve.n; i++) {
			cJSON_AddItemToArray(mib, cJSON_CreateNumber(fab->curve.mib[i]));
			cJSON_AddItemToArray(gbps, cJSON_CreateNumber(fab->curve.gbps[i]));
		}
	}
	add_num(o, "gemm_eff", 1, "%g");
	add_num(o, "gemm_half_dim", half_dim(r), "%.4g");
	add_num(o, "attn_eff", attn_eff < 0.01 ? 0.01 : attn_eff, "%.4g");
	add_num(o, "mem_eff", t->ref_mem_eff < 0.01 ? 0.01 : t->ref_mem_eff, "%.4g");
	add_num(o, "comm_eff", 1, "%g");
	/* no device allocator, context or communicator buffers on a CPU: malloc'd buffers are
	 * what the runtime counts; on a device these overheads, and what an overlapped collective
	 * costs the compute under it, are not measured here and stay 0 until calibrated */
	static const char *const zero[] = {"overlap_slowdown", "workspace_mib", "context_gib", "nccl_conn_mib", "step_overhead_ms", "kernel_us", "host_op_us", "host_collective_us"};
	for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
		if (!fab || strcmp(zero[i], "nccl_conn_mib")) add_num(o, zero[i], 0, "%g");
	if (fab) { /* NCCL's buffers follow the fabric's channels (hw profile "nccl" source) */
		add_num(o, "nccl_conn_mib", fab->nccl_conn_bytes / 1048576.0, "%.4g");
		cJSON_AddNumberToObject(o, "nccl_channels", fab->nccl_channels);
		cJSON_AddNumberToObject(o, "nccl_p2p_net_channels", fab->nccl_p2p_net_channels);
	} else {
		cJSON_AddNumberToObject(o, "nccl_channels", 1); /* MPI: no channel buffers (nccl_conn_mib 0) */
		cJSON_AddNumberToObject(o, "nccl_p2p_net_channels", 1);
	}
	add_num(o, "alloc_frag_native", 1, "%g");
	add_num(o, "alloc_frag_expandable", 1, "%g");
	cJSON *src = cJSON_AddObjectToObject(o, "sources");
	char s[256];
	snprintf(s, sizeof(s), "scaleplan profile --backend %s (%s) on %s%s%s, %d ranks at once, %s", b->name, b->dtype, host,
		 r->device[0] ? ", " : "", r->device, r->ranks, when);
	cJSON_AddStringToObject(src, "measured", s);
	if (dev) {
		snprintf(s, sizeof(s), "%s, %.1f GiB (rank 0's; one device per rank)", r->device[0] ? r->device : "unknown device",
			 r->device_mem_bytes / GIB);
		cJSON_AddStringToObject(src, "device", s);
	}
	cJSON_AddStringToObject(src, "peak", fp32 ? "twice the best GEMM of the table (its arithmetic is tables.dtype; fp32 plans price GEMMs at half of peak_bf16)"
						  : "the best GEMM of the table (its arithmetic is tables.dtype)");
	if (fab) {
		snprintf(s, sizeof(s), "%s from gpu profile %s (its own sources), not measured here; NCCL buffer sizes from it too",
			 r->ranks > 1 ? "tiers above the first (the first: the all-reduce busbw of every rank)" : "every tier (one rank measures no collective)",
			 fab->name);
		cJSON_AddStringToObject(src, "fabric", s);
		if (r->ranks == 1 && fab->curve.n) {
			snprintf(s, sizeof(s), "from gpu profile %s (its own sources), not measured here", fab->name);
			cJSON_AddStringToObject(src, "nvlink_coll_curve", s);
		}
	} else {
		cJSON_AddStringToObject(src, "fabric", r->ranks > 1 ? (dev ? "NCCL all-reduce over every rank: busbw at the largest message; the tables hold every op, size and group size measured (latencies beyond them are NCCL's); the network tier is not measured and repeats it"
									   : "all-reduce over every rank: busbw at the largest message; the tables hold every op, size and group size measured (latencies beyond them are the collective library's); the network tier is not measured and repeats it")
							     : "one rank: no collective measured (no collective table); busbw is half the streaming copy bandwidth");
	}
	cJSON_AddStringToObject(src, "efficiencies", "gemm_eff 1 (peak is the best GEMM), gemm_half_dim the median fit of the table, attn_eff and mem_eff the longest measured attention and largest element-wise pass; overheads 0 until calibrated");
	cJSON_AddStringToObject(o, "notes", r->ranks > 1 ? "Measured by scaleplan profile. The simulator interpolates the tables and scales each by the ratio of its efficiency field to tables.reference (sim/hw_table.h); scaleplan calibrate moves the fields."
						     : "Measured by scaleplan profile on one rank: GEMM, attention and memory tables, no collective table (collectives are priced from the network tiers). The simulator interpolates the tables and scales each by the ratio of its efficiency field to tables.reference (sim/hw_table.h); scaleplan calibrate moves the fields.");
	cJSON_AddItemToObject(o, "tables", hw_tables_to_json(t));
	return o;
}

static void summary(const struct profile_result *r, FILE *f)
{
	if (r->device[0]) fprintf(f, "profile: device %s (rank 0)\n", r->device);
	fprintf(f, "profile: %d ranks; best GEMM %.1f GFLOP/s per rank, attention %.1f GFLOP/s, "
		   "element-wise %.2f GB/s, stream %.2f GB/s", r->ranks, r->peak_flops / 1e9, r->attn_flops / 1e9,
		r->elem_bps / 1e9, r->stream_bps / 1e9);
	if (r->ranks > 1)
		fprintf(f, ", all-reduce busbw %.2f GB/s, latency %.1f us", r->coll_busbw_bps / 1e9, r->coll_lat_s * 1e6);
	fprintf(f, "\n");
}

/* rank 0: checks the profile loads as a --gpu profile, writes it, records it */
static int write_profile(const struct prof_args *a, cJSON *o, const struct profile_result *r, const char *host)
{
	char err[ERR_LEN];
	char *text = cJSON_Print(o);
	struct hw h;
	if (!text) { cli_error("profile", "out of memory"); return EXIT_RUNTIME; }
	int rc = EXIT_OK;
	if (hw_from_json(text, "profile", &h, err)) { cli_error("profile", "the profile written does not load: %s", err); rc = EXIT_RUNTIME; }
	if (!rc && !a->out) {
		printf("%s\n", text);
	} else if (!rc) {
		size_t len = strlen(text);
		text[len] = '\n';   /* the string's NUL becomes the file's last newline */
		int bad = outfile_put(a->out, text, len + 1, err);
		text[len] = 0;
		if (bad) { cli_error("profile", "%s", err); rc = EXIT_RUNTIME; }
		else { summary(r, stdout); printf("profile: wrote %s\n", a->out); }
	}
	struct store *s = NULL;
	if (!rc && a->db) {
		long id;
		if (store_open(a->db, STORE_CREATE, &s, err) || store_add_profile(s, host, a->backend, r->ranks, text, &id, err)) {
			cli_error("profile", "%s", err);
			rc = EXIT_RUNTIME;
		} else if (a->out) printf("profile: recorded as profile %ld in %s\n", id, a->db);
		store_close(s);
	}
	free(text);
	return rc;
}

/* a backend with devices: every rank picks its device (rank mod visible) and the ranks agree
 * that all have one before any of them starts the collective world (NCCL's initialisation
 * would wait for a rank that never comes); then that world, bootstrapped over `world` */
static int open_devices(const struct profile_backend *b, struct comm *world, struct profile_opts *o, struct comm **cw)
{
	char err[ERR_LEN] = "", e2[ERR_LEN];
	int rank = comm_rank(world);
	double bad = profile_device_for(b->name, rank, b->device_count(), &o->device, err) ? 1 : 0, any = bad;
	if (comm_allreduce(world, &bad, &any, 1, COMM_F64, e2)) { cli_error("profile", "%s", e2); return EXIT_RUNTIME; }
	if (any) {
		if (rank == 0 && bad) cli_error("profile", "%s", err);
		else if (rank == 0) cli_error("profile", "--backend %s: another rank sees no device", b->name);
		return EXIT_BADINPUT;
	}
	if (!b->coll_world) return EXIT_OK;
	if (b->coll_world(world, o->device, cw, err)) {
		cli_error("profile", "rank %d: the collective world: %s", rank, err);
		comm_abort(world, EXIT_RUNTIME);
		exit(EXIT_RUNTIME); /* the one-rank world cannot end the job: it returns */
	}
	o->coll_world = *cw;
	return EXIT_OK;
}

int cmd_profile(int argc, char **argv)
{
	char err[ERR_LEN];
	struct prof_args a;
	memset(&a, 0, sizeof(a));
	a.backend = "cpu";
	profile_opts_default(&a.o);
	memset(&a.o.lim, 0, sizeof(a.o.lim)); /* the backend's defaults fill what no flag set */
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { profile_usage(stdout); return EXIT_OK; }
	if (parse_args(argc, argv, &a, err)) { cli_error("profile", "%s", err); return EXIT_BADINPUT; }
	const struct profile_backend *b = profile_backend_find(a.backend);
	if (!b) {
		if (profile_backend_known(a.backend))
			cli_error("profile", "--backend %s: this version has no %s profiling backend yet (it has: %s)",
				  a.backend, a.backend, profile_backend_names());
		else
			cli_error("profile", "--backend: '%s' is not a backend (cpu, cuda)", a.backend);
		return EXIT_BADINPUT;
	}
	profile_limits_default(b, &a.o.lim);
	if (a.fabric && hw_load(a.fabric, &a.fab, err)) { cli_error("profile", "--fabric: %s", err); return EXIT_BADINPUT; }
	if (a.ranks > 1) return relaunch(argc, argv, a.ranks);
	struct comm *world, *cw = NULL;
	if (comm_mpi_world(&world, err)) { cli_error("profile", "%s", err); return EXIT_RUNTIME; }
	int rank = comm_rank(world), rc = EXIT_OK;
	if (rank == 0 && isatty(2)) a.o.progress = on_progress;
	if (b->device_count && (rc = open_devices(b, world, &a.o, &cw)) != EXIT_OK) {
		comm_destroy(world);
		return rc;
	}
	struct profile_result r;
	if (profile_run(b, world, &a.o, &r, err)) {
		cli_error("profile", "rank %d: %s", rank, err);
		if (cw) comm_abort(cw, EXIT_RUNTIME); /* NCCL's: aborts its communicators, then the bootstrap */
		comm_abort(world, EXIT_RUNTIME);
		exit(EXIT_RUNTIME); /* a backend that cannot end the job returns (runtime/comm.h) */
		rc = EXIT_RUNTIME;
	} else if (rank == 0) {
		char host[64] = "unknown", when[32];
		gethostname(host, sizeof(host) - 1);
		time_t now = time(NULL);
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		cJSON *o = profile_json(&a, b, &r, host, when);
		rc = write_profile(&a, o, &r, host);
		cJSON_Delete(o);
	}
	comm_destroy(cw);
	comm_destroy(world);
	return rc;
}
