/* profile: the host-side logic of the profiler's backend table — which rows this build has
 * (the CUDA row exactly when the binary links it), the device each rank drives, the default
 * profile name, the limits each kind of backend defaults to — and the driver's use of a
 * backend with a device (the device handed to open, its name and memory in the result, a
 * one-rank world measuring no collective), through a fake row on the one-rank world. Expected
 * values are computed independently: devices by filling nodes rank after rank, names and
 * limits written out by hand from the header's contract. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/comm.h"
#include "runtime/comm_self.h"
#include "runtime/profile.h"
#include "sim/util.h"
#include "tests/test.h"

static void test_table(void)
{
	CHECK(profile_backend_known("cpu") && profile_backend_known("cuda"), "cpu and cuda are known backends");
	CHECK(!profile_backend_known("tpu") && !profile_backend_known(""), "tpu is not a backend");
	const struct profile_backend *cpu = profile_backend_find("cpu");
	CHECK(cpu && !strcmp(cpu->name, "cpu") && !strcmp(cpu->dtype, "fp32") && cpu->shares_cores, "the cpu row");
	CHECK(cpu && !cpu->device_count && !cpu->coll_world && !cpu->device_info, "the cpu row has no device methods");
	CHECK(!profile_backend_find("tpu"), "no row for an unknown name");
	const struct profile_backend *cuda = profile_backend_find("cuda");
	const char *names = profile_backend_names();
	/* every listed name has a row, and the rows found are listed, in table order */
	char want[64];
	snprintf(want, sizeof(want), "cpu%s", cuda ? ", cuda" : "");
	CHECK(!strcmp(names, want), "names '%s', want '%s'", names, want);
	if (cuda) {
		CHECK(!strcmp(cuda->dtype, "bf16") && !cuda->shares_cores, "the cuda row: bf16, one device per rank");
		CHECK(cuda->device_count && cuda->coll_world && cuda->device_info && cuda->open && cuda->sync,
		      "the cuda row has every device method");
	}
	printf("profile: backends built in: %s\n", names);
}

static void test_device_for(void)
{
	char err[ERR_LEN];
	for (int visible = 1; visible <= 8; visible++) {
		/* ranks fill one node's devices in order, then the next node's */
		int node_dev = 0, ok_all = 1;
		for (int rank = 0; rank < 40; rank++) {
			int dev = -1;
			if (profile_device_for("cuda", rank, visible, &dev, err) || dev != node_dev) ok_all = 0;
			if (++node_dev == visible) node_dev = 0;
		}
		CHECK(ok_all, "%d visible devices: rank r drives device r mod %d", visible, visible);
	}
	int dev = 7;
	err[0] = 0;
	CHECK(profile_device_for("cuda", 3, 0, &dev, err) == -1 && dev == 7, "no device visible is an error");
	CHECK(strstr(err, "rank 3 sees no cuda device") && strstr(err, "--backend cuda"), "the message names rank and backend: %s", err);
	CHECK(profile_device_for("cuda", -1, 2, &dev, err) == -1 && strstr(err, "rank (-1)"), "a negative rank is refused");
}

static void test_default_name(void)
{
	char n[96];
	profile_default_name("cuda", "NVIDIA H200", "gpu-box", 1, n, sizeof(n));
	CHECK(!strcmp(n, "cuda-NVIDIA-H200-1r"), "device name: %s", n);
	profile_default_name("cuda", "NVIDIA A100-SXM4-80GB (MIG 1g/10gb)", "h", 8, n, sizeof(n));
	CHECK(!strcmp(n, "cuda-NVIDIA-A100-SXM4-80GB--MIG-1g-10gb--8r"), "odd characters become '-': %s", n);
	profile_default_name("cpu", "", "node-3.example", 2, n, sizeof(n));
	CHECK(!strcmp(n, "cpu-node-3.example-2r"), "no device: the host: %s", n);
	profile_default_name("cpu", NULL, "h", 4, n, sizeof(n));
	CHECK(!strcmp(n, "cpu-h-4r"), "NULL device: the host: %s", n);
	char small[8];
	profile_default_name("cuda", "NVIDIA H200", "h", 1, small, sizeof(small));
	CHECK(!strcmp(small, "cuda-NV"), "a short buffer truncates and terminates: %s", small);
}

static int fake_count(void);

static void test_limits(void)
{
	struct profile_limits l;
	memset(&l, 0, sizeof(l));
	profile_limits_default(profile_backend_find("cpu"), &l);
	CHECK(l.max_dim == 2048 && l.max_seq == 1024 && l.heads == 4 && l.head_dim == 64 && l.max_bytes == 16u << 20,
	      "host limits: %d %d %d %d %zu", l.max_dim, l.max_seq, l.heads, l.head_dim, l.max_bytes);
	struct profile_backend dev_row;
	memset(&dev_row, 0, sizeof(dev_row));
	dev_row.device_count = fake_count; /* a row with devices */
	memset(&l, 0, sizeof(l));
	l.max_seq = 256; /* a flag given: kept */
	profile_limits_default(&dev_row, &l);
	CHECK(l.max_dim == 8192 && l.max_seq == 256 && l.heads == 16 && l.head_dim == 128 && l.max_bytes == (size_t)256 << 20,
	      "device limits: %d %d %d %d %zu", l.max_dim, l.max_seq, l.heads, l.head_dim, l.max_bytes);
	struct profile_opts o;
	profile_opts_default(&o);
	CHECK(o.lim.max_dim == 2048 && o.min_time_s == 0.05 && !o.coll_world && !o.device, "opts default to the host's");
}

/* a fake row with one device: records what the driver hands it */
struct fake_ws { int device, opened, calls; char buf[2][4096]; };

static int fake_open(const struct profile_limits *lim, int device, void **ws, char *err)
{
	(void)lim;
	(void)err;
	struct fake_ws *f = calloc(1, sizeof(*f));
	if (!f) return -1;
	f->device = device;
	f->opened = 1;
	*ws = f;
	return 0;
}
static struct fake_ws *last_closed;   /* the test's own record, read once after profile_run */
static void fake_close(void *ws) { last_closed = ws; }
static int fake_gemm(void *ws, int M, int N, int K, char *err) { (void)M; (void)N; (void)K; (void)err; ((struct fake_ws *)ws)->calls++; return 0; }
static int fake_att(void *ws, int T, int H, int d, int bw, char *err) { (void)T; (void)H; (void)d; (void)bw; (void)err; ((struct fake_ws *)ws)->calls++; return 0; }
static int fake_elem(void *ws, size_t bytes, double *moved, char *err) { (void)err; ((struct fake_ws *)ws)->calls++; *moved = (double)bytes; return 0; }
static int fake_stream(void *ws, size_t bytes, char *err) { (void)bytes; (void)err; ((struct fake_ws *)ws)->calls++; return 0; }
static void *fake_buf(void *ws, int which) { return ((struct fake_ws *)ws)->buf[which ? 1 : 0]; }
static int fake_sync(void *ws, char *err) { (void)ws; (void)err; return 0; }
static int fake_count(void) { return 1; }
static void fake_info(void *ws, char *name, size_t len, double *mem)
{
	snprintf(name, len, "Fake GPU %d", ((struct fake_ws *)ws)->device);
	*mem = 80e9;
}

static void test_driver_device(void)
{
	const struct profile_backend fake = {
		"fake", "bf16", 0, fake_open, fake_close, fake_gemm, fake_att, fake_elem, fake_stream,
		fake_buf, fake_sync, fake_count, NULL, fake_info,
	};
	char err[ERR_LEN];
	struct comm *w, *cw;
	if (comm_self_world(&w, err) || comm_self_world(&cw, err)) { CHECK(0, "world: %s", err); return; }
	struct profile_opts o;
	profile_opts_default(&o);
	o.lim.max_dim = 64;
	o.lim.max_seq = 64;
	o.lim.max_bytes = 64 << 10;
	o.min_time_s = 1e-4;
	o.device = 5;
	o.coll_world = cw;
	struct profile_result r;
	last_closed = NULL;
	int rc = profile_run(&fake, w, &o, &r, err);
	CHECK(rc == 0, "profile_run: %s", err);
	CHECK(last_closed && last_closed->device == 5, "open got the rank's device");
	CHECK(!strcmp(r.device, "Fake GPU 5") && r.device_mem_bytes == 80e9, "device info in the result: '%s'", r.device);
	CHECK(r.ranks == 1 && r.t.cores == 0, "one rank with a device of its own (cores 0)");
	int colls = 0;
	for (int op = 0; op < HWT_COLL_OPS; op++)
		for (int g = 0; g < HWT_MAX_GROUPS; g++) colls += r.t.coll[op][g].n;
	CHECK(colls == 0 && r.coll_busbw_bps == 0, "one rank: no collective measured");
	/* GEMM axis 16, 64 on each of 3 axes = 8 shapes; attention T = 32, 64, forward and
	 * backward = 4; memory 16K, 64K, element-wise and stream = 4: each a warm-up, a trial and
	 * at least one timed call */
	CHECK(r.t.gm == 2 && r.t.attn_fwd.n == 2 && r.t.mem.n == 2, "tables: gemm %d, attention %d, memory %d", r.t.gm,
	      r.t.attn_fwd.n, r.t.mem.n);
	CHECK(last_closed && last_closed->calls >= 3 * (8 + 4 + 4), "every measurement called (%d calls)",
	      last_closed ? last_closed->calls : 0);
	free(last_closed);
	comm_destroy(cw);
	comm_destroy(w);
}

int main(void)
{
	test_table();
	test_device_for();
	test_default_name();
	test_limits();
	test_driver_device();
	return test_summary("test_profile");
}
