/* cudnn_attention_graph — the forward and backward operation graphs of causal GQA attention in
 * the cuDNN backend API, and the plan finalized from the heuristics' engine configs.
 *
 * Forward (S = scale·QKᵀ masked, P = softmax S, O = PV; Stats = max + log Σ exp, the lse):
 *   S = Q·Kᵀ, S *= scale, S = select(row >= col, S, -inf), M = max_j S, E = exp(S - M),
 *   Z = Σ_j E, Stats = M + log Z, P = E / Z, O = P·V
 * Backward (Dao 2023, FlashAttention-2, Algorithm 2; D_i = dO_i · O_i):
 *   D = Σ_d dO⊙O, P = exp(select(row >= col, scale·Q·Kᵀ - Stats, -inf)),
 *   dV = Pᵀ·dO, dP = dO·Vᵀ, dS = scale·P⊙(dP - D), dK = dSᵀ·Q, dQ = dS·K
 * With H > Hkv the dK and dV products are per query head and a reduction sums each group of
 * H / Hkv consecutive heads into its kv head (the layout of kernels/cpu.h: head h reads kv head
 * h / (H / Hkv)). dQ is accumulated in fp32 (UID_DQ_ACCUM) and converted by an identity op.
 * Every score-shaped tensor is virtual: the fused engine keeps them on chip. Node order, data
 * types and strides follow what cudnn-frontend 1.x emits for its SDPA nodes on cuDNN 9, the
 * pattern the fused engines are matched against. */
#include <string.h>
#include "kernels/cudnn_attention_impl.h"

struct dims {
	int64_t v[4];
};

static struct dims D4(int64_t a, int64_t b, int64_t c, int64_t d)
{
	struct dims x = {{a, b, c, d}};
	return x;
}

static cudnnBackendDescriptor_t make(struct att_graph *g, cudnnBackendDescriptorType_t t, const char *what)
{
	if (g->st != CUDNN_STATUS_SUCCESS) return NULL;
	if (g->nowned == ATT_MAX_DESC) {
		g->st = CUDNN_STATUS_BAD_PARAM;
		g->what = "descriptor table full";
		return NULL;
	}
	cudnnBackendDescriptor_t d = NULL;
	g->st = cudnnBackendCreateDescriptor(t, &d);
	if (g->st != CUDNN_STATUS_SUCCESS) { g->what = what; return NULL; }
	g->owned[g->nowned++] = d;
	return d;
}

static void set(struct att_graph *g, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                cudnnBackendAttributeType_t type, int64_t count, const void *v, const char *what)
{
	if (g->st != CUDNN_STATUS_SUCCESS) return;
	g->st = cudnnBackendSetAttribute(d, name, type, count, v);
	if (g->st != CUDNN_STATUS_SUCCESS) g->what = what;
}

static void finalize(struct att_graph *g, cudnnBackendDescriptor_t d, const char *what)
{
	if (g->st != CUDNN_STATUS_SUCCESS) return;
	g->st = cudnnBackendFinalize(d);
	if (g->st != CUDNN_STATUS_SUCCESS) g->what = what;
}

static void add_op(struct att_graph *g, cudnnBackendDescriptor_t op)
{
	if (g->st != CUDNN_STATUS_SUCCESS) return;
	if (g->nops == ATT_MAX_OPS) { g->st = CUDNN_STATUS_BAD_PARAM; g->what = "operation table full"; return; }
	g->ops[g->nops++] = op;
}

/* A 4-d tensor; uid 0 means virtual (the next id from 100). 16-byte alignment, as the
 * tensor-core engines require. */
static cudnnBackendDescriptor_t tensor(struct att_graph *g, int64_t uid, cudnnDataType_t dt, struct dims dim,
                                       struct dims str, bool by_value)
{
	const bool virt = uid == 0;
	const int64_t id = virt ? g->next_uid++ : uid, align = 16;
	cudnnBackendDescriptor_t t = make(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor descriptor");
	set(g, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id, "TENSOR_UNIQUE_ID");
	set(g, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "TENSOR_DATA_TYPE");
	set(g, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim.v, "TENSOR_DIMENSIONS");
	set(g, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, str.v, "TENSOR_STRIDES");
	set(g, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "TENSOR_BYTE_ALIGNMENT");
	set(g, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt, "TENSOR_IS_VIRTUAL");
	if (by_value) set(g, t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value, "TENSOR_IS_BY_VALUE");
	finalize(g, t, "tensor finalize");
	return t;
}

static cudnnBackendDescriptor_t scalar(struct att_graph *g, int64_t uid)
{
	return tensor(g, uid, CUDNN_DATA_FLOAT, D4(1, 1, 1, 1), D4(1, 1, 1, 1), true);
}

/* y = mode(x [, b [, t]]); axis >= 0 only for GEN_INDEX */
static void pointwise(struct att_graph *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec, cudnnBackendDescriptor_t x,
                      cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y, int64_t axis)
{
	cudnnBackendDescriptor_t pw = make(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise descriptor");
	set(g, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "POINTWISE_MODE");
	set(g, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, "POINTWISE_MATH_PREC");
	if (axis >= 0) set(g, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, "POINTWISE_AXIS");
	finalize(g, pw, "pointwise finalize");
	cudnnBackendDescriptor_t op = make(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise operation");
	set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw, "PW_DESCRIPTOR");
	set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "POINTWISE_XDESC");
	if (b) set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, "POINTWISE_BDESC");
	if (t) set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t, "POINTWISE_TDESC");
	set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "POINTWISE_YDESC");
	finalize(g, op, "pointwise operation finalize");
	add_op(g, op);
}

static void matmul(struct att_graph *g, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
                   cudnnBackendDescriptor_t c)
{
	const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
	cudnnBackendDescriptor_t mm = make(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul descriptor");
	set(g, mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, "MATMUL_COMP_TYPE");
	finalize(g, mm, "matmul finalize");
	cudnnBackendDescriptor_t op = make(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul operation");
	set(g, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a, "MATMUL_ADESC");
	set(g, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, "MATMUL_BDESC");
	set(g, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c, "MATMUL_CDESC");
	set(g, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mm, "MATMUL_DESC");
	finalize(g, op, "matmul operation finalize");
	add_op(g, op);
}

static void reduction(struct att_graph *g, cudnnReduceTensorOp_t rop, cudnnBackendDescriptor_t x,
                      cudnnBackendDescriptor_t y)
{
	const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
	cudnnBackendDescriptor_t rd = make(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction descriptor");
	set(g, rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &rop, "REDUCTION_OPERATOR");
	set(g, rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, "REDUCTION_COMP_TYPE");
	finalize(g, rd, "reduction finalize");
	cudnnBackendDescriptor_t op = make(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction operation");
	set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "REDUCTION_XDESC");
	set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "REDUCTION_YDESC");
	set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd, "REDUCTION_DESC");
	finalize(g, op, "reduction operation finalize");
	add_op(g, op);
}

static void reshape(struct att_graph *g, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y)
{
	cudnnBackendDescriptor_t op = make(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "reshape operation");
	set(g, op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "RESHAPE_XDESC");
	set(g, op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "RESHAPE_YDESC");
	finalize(g, op, "reshape operation finalize");
	add_op(g, op);
}

/* y = select(row >= col, x, -inf) over the last two axes (top-left aligned causal mask) */
static void causal_mask(struct att_graph *g, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t neginf,
                        cudnnBackendDescriptor_t y, struct dims sd, struct dims ss)
{
	cudnnBackendDescriptor_t row = tensor(g, 0, CUDNN_DATA_INT32, sd, ss, false);
	cudnnBackendDescriptor_t col = tensor(g, 0, CUDNN_DATA_INT32, sd, ss, false);
	cudnnBackendDescriptor_t keep = tensor(g, 0, CUDNN_DATA_BOOLEAN, sd, ss, false);
	pointwise(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, x, NULL, NULL, row, 2);
	pointwise(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, x, NULL, NULL, col, 3);
	pointwise(g, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, col, NULL, keep, -1);
	pointwise(g, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, x, neginf, keep, y, -1);
}

/* strides of the packed buffers (elements) */
struct layout {
	struct dims q, kv, kt, o, s, st, r, full, q_d, kv_d, r_d, s_d;
};

static struct layout layout_of(const struct att_shape *sh)
{
	const int64_t B = sh->B, T = sh->T, H = sh->H, Hkv = sh->Hkv, d = sh->d;
	const int64_t ld = (H + 2 * Hkv) * d, ldo = H * d;
	struct layout l;
	l.q_d = D4(B, H, T, d);
	l.kv_d = D4(B, Hkv, T, d);
	l.s_d = D4(B, H, T, T);
	l.r_d = D4(B, H, T, 1);
	l.q = D4(T * ld, d, ld, 1);          /* q, dq (and k, v, dk, dv with Hkv heads) */
	l.kv = D4(T * ld, d, ld, 1);
	l.kt = D4(T * ld, d, 1, ld);         /* Kᵀ, Vᵀ viewed as (B, Hkv, d, T) */
	l.o = D4(T * ldo, d, ldo, 1);        /* out, dout */
	l.s = D4(H * T * T, T * T, T, 1);    /* scores (virtual) */
	l.st = D4(H * T * T, T * T, 1, T);   /* their transpose */
	l.r = D4(H * T, T, 1, 1);            /* per-row statistics: lse (B, H, T) */
	l.full = D4(H * T * d, T * d, d, 1); /* per-query-head dK, dV before the GQA sum; dQ accumulator */
	return l;
}

static void build_forward(struct att_graph *g, const struct att_shape *sh)
{
	const struct layout l = layout_of(sh);
	const int64_t B = sh->B, Hkv = sh->Hkv, d = sh->d, T = sh->T;
	const cudnnDataType_t bf = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;
	cudnnBackendDescriptor_t q = tensor(g, UID_Q, bf, l.q_d, l.q, false);
	cudnnBackendDescriptor_t kt = tensor(g, UID_K, bf, D4(B, Hkv, d, T), l.kt, false);
	cudnnBackendDescriptor_t v = tensor(g, UID_V, bf, l.kv_d, l.kv, false);
	cudnnBackendDescriptor_t o = tensor(g, UID_O, bf, l.q_d, l.o, false);
	cudnnBackendDescriptor_t stats = tensor(g, UID_STATS, f32, l.r_d, l.r, false);
	cudnnBackendDescriptor_t scale = scalar(g, UID_SCALE), neginf = scalar(g, UID_NEGINF);
	cudnnBackendDescriptor_t s0 = tensor(g, 0, f32, l.s_d, l.s, false), s1 = tensor(g, 0, f32, l.s_d, l.s, false);
	cudnnBackendDescriptor_t s2 = tensor(g, 0, f32, l.s_d, l.s, false);
	matmul(g, q, kt, s0);
	pointwise(g, CUDNN_POINTWISE_MUL, f32, s0, scale, NULL, s1, -1);
	causal_mask(g, s1, neginf, s2, l.s_d, l.s);
	cudnnBackendDescriptor_t m = tensor(g, 0, f32, l.r_d, l.r, false), sub = tensor(g, 0, f32, l.s_d, l.s, false);
	cudnnBackendDescriptor_t e = tensor(g, 0, f32, l.s_d, l.s, false), z = tensor(g, 0, f32, l.r_d, l.r, false);
	cudnnBackendDescriptor_t lz = tensor(g, 0, f32, l.r_d, l.r, false), p = tensor(g, 0, f32, l.s_d, l.s, false);
	reduction(g, CUDNN_REDUCE_TENSOR_MAX, s2, m);
	pointwise(g, CUDNN_POINTWISE_SUB, f32, s2, m, NULL, sub, -1);
	pointwise(g, CUDNN_POINTWISE_EXP, f32, sub, NULL, NULL, e, -1);
	reduction(g, CUDNN_REDUCE_TENSOR_ADD, e, z);
	pointwise(g, CUDNN_POINTWISE_LOG, f32, z, NULL, NULL, lz, -1);
	pointwise(g, CUDNN_POINTWISE_ADD, f32, m, lz, NULL, stats, -1);
	pointwise(g, CUDNN_POINTWISE_DIV, f32, e, z, NULL, p, -1);
	matmul(g, p, v, o);
}

/* dX (B, Hkv, T, d) from per-query-head products: direct when H == Hkv, else summed by group */
static void kv_grad(struct att_graph *g, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
                    cudnnBackendDescriptor_t out, const struct att_shape *sh, const struct layout *l)
{
	if (sh->H == sh->Hkv) { matmul(g, a, b, out); return; }
	cudnnBackendDescriptor_t full = tensor(g, 0, CUDNN_DATA_BFLOAT16, l->q_d, l->full, false);
	matmul(g, a, b, full);
	reduction(g, CUDNN_REDUCE_TENSOR_ADD, full, out);
}

static void build_backward(struct att_graph *g, const struct att_shape *sh)
{
	const struct layout l = layout_of(sh);
	const int64_t B = sh->B, H = sh->H, Hkv = sh->Hkv, d = sh->d, T = sh->T;
	const cudnnDataType_t bf = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;
	cudnnBackendDescriptor_t q = tensor(g, UID_Q, bf, l.q_d, l.q, false);
	cudnnBackendDescriptor_t kt = tensor(g, UID_K, bf, D4(B, Hkv, d, T), l.kt, false);
	cudnnBackendDescriptor_t vt = tensor(g, UID_V, bf, D4(B, Hkv, d, T), l.kt, false);
	cudnnBackendDescriptor_t o = tensor(g, UID_O, bf, l.q_d, l.o, false);
	cudnnBackendDescriptor_t dO = tensor(g, UID_DO, bf, l.q_d, l.o, false);
	cudnnBackendDescriptor_t stats = tensor(g, UID_STATS, f32, l.r_d, l.r, false);
	cudnnBackendDescriptor_t dq = tensor(g, UID_DQ, bf, l.q_d, l.q, false);
	cudnnBackendDescriptor_t dk = tensor(g, UID_DK, bf, l.kv_d, l.kv, false);
	cudnnBackendDescriptor_t dv = tensor(g, UID_DV, bf, l.kv_d, l.kv, false);
	cudnnBackendDescriptor_t scale = scalar(g, UID_SCALE), neginf = scalar(g, UID_NEGINF), one = scalar(g, UID_ONE);
	cudnnBackendDescriptor_t rowsum = tensor(g, UID_SOFTMAX_SUM, f32, l.r_d, l.r, false);
	cudnnBackendDescriptor_t dq_acc = tensor(g, UID_DQ_ACCUM, f32, l.q_d, l.full, false);
	/* D = Σ_d dO ⊙ O */
	cudnnBackendDescriptor_t dOo = tensor(g, 0, f32, l.q_d, D4(H * T * d, T * d, H * d, 1), false);
	cudnnBackendDescriptor_t red = tensor(g, 0, f32, l.r_d, l.r, false);
	pointwise(g, CUDNN_POINTWISE_MUL, f32, dO, o, NULL, dOo, -1);
	reduction(g, CUDNN_REDUCE_TENSOR_ADD, dOo, red);
	pointwise(g, CUDNN_POINTWISE_MUL, f32, red, one, NULL, rowsum, -1);
	/* P = exp(mask(scale·QKᵀ - Stats)) */
	cudnnBackendDescriptor_t s0 = tensor(g, 0, f32, l.s_d, l.s, false), s1 = tensor(g, 0, f32, l.s_d, l.s, false);
	cudnnBackendDescriptor_t s2 = tensor(g, 0, f32, l.s_d, l.s, false), s3 = tensor(g, 0, f32, l.s_d, l.s, false);
	cudnnBackendDescriptor_t p = tensor(g, 0, f32, l.s_d, l.s, false);
	matmul(g, q, kt, s0);
	pointwise(g, CUDNN_POINTWISE_MUL, f32, s0, scale, NULL, s1, -1);
	pointwise(g, CUDNN_POINTWISE_SUB, f32, s1, stats, NULL, s2, -1);
	causal_mask(g, s2, neginf, s3, l.s_d, l.s);
	pointwise(g, CUDNN_POINTWISE_EXP, f32, s3, NULL, NULL, p, -1);
	/* dV = Pᵀ dO */
	cudnnBackendDescriptor_t pt = tensor(g, 0, bf, l.s_d, l.st, false);
	reshape(g, p, pt);
	kv_grad(g, pt, dO, dv, sh, &l);
	/* dS = scale · P ⊙ (dO Vᵀ - D) */
	cudnnBackendDescriptor_t dp = tensor(g, 0, f32, l.s_d, l.s, false), ds0 = tensor(g, 0, f32, l.s_d, l.s, false);
	cudnnBackendDescriptor_t ds1 = tensor(g, 0, f32, l.s_d, l.s, false), ds = tensor(g, 0, f32, l.s_d, l.s, false);
	matmul(g, dO, vt, dp);
	pointwise(g, CUDNN_POINTWISE_SUB, f32, dp, rowsum, NULL, ds0, -1);
	pointwise(g, CUDNN_POINTWISE_MUL, f32, ds0, p, NULL, ds1, -1);
	pointwise(g, CUDNN_POINTWISE_MUL, f32, ds1, scale, NULL, ds, -1);
	/* dK = dSᵀ Q */
	cudnnBackendDescriptor_t dst = tensor(g, 0, bf, l.s_d, l.st, false);
	reshape(g, ds, dst);
	kv_grad(g, dst, q, dk, sh, &l);
	/* dQ = dS K, accumulated in fp32 */
	cudnnBackendDescriptor_t k = tensor(g, 0, bf, l.kv_d, l.kv, false);
	reshape(g, kt, k);
	matmul(g, ds, k, dq_acc);
	pointwise(g, CUDNN_POINTWISE_IDENTITY, f32, dq_acc, NULL, NULL, dq, -1);
}

/* The first engine config (heuristics mode A, then the fallback list) that finalizes. */
static int plan_from_heuristics(struct att_graph *g, cudnnHandle_t h, cudnnBackendDescriptor_t graph)
{
	const cudnnBackendHeurMode_t modes[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
	cudnnStatus_t first_st = CUDNN_STATUS_SUCCESS;
	const char *first_what = NULL;
	for (int mi = 0; mi < 2; mi++) {
		if (g->st != CUDNN_STATUS_SUCCESS) { /* mode A failed outright: keep its reason, try the fallback */
			first_st = g->st;
			first_what = g->what;
			g->st = CUDNN_STATUS_SUCCESS;
		}
		cudnnBackendDescriptor_t heur = make(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "engine heuristics");
		set(g, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph,
		    "ENGINEHEUR_OPERATION_GRAPH");
		set(g, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &modes[mi], "ENGINEHEUR_MODE");
		finalize(g, heur, "engine heuristics finalize");
		int64_t count = 0;
		if (g->st == CUDNN_STATUS_SUCCESS) {
			g->st = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
			                                 &count, NULL);
			if (g->st != CUDNN_STATUS_SUCCESS) g->what = "ENGINEHEUR_RESULTS count";
		}
		if (count > 8) count = 8;
		cudnnBackendDescriptor_t cfg[8];
		for (int64_t i = 0; i < count; i++) cfg[i] = make(g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config");
		int64_t got = 0;
		if (g->st == CUDNN_STATUS_SUCCESS && count > 0) {
			g->st = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
			                                 &got, cfg);
			if (g->st != CUDNN_STATUS_SUCCESS) g->what = "ENGINEHEUR_RESULTS";
		}
		for (int64_t i = 0; i < got && g->st == CUDNN_STATUS_SUCCESS; i++) {
			cudnnBackendDescriptor_t plan = make(g, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan");
			set(g, plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h, "EXECUTION_PLAN_HANDLE");
			set(g, plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i],
			    "EXECUTION_PLAN_ENGINE_CONFIG");
			if (g->st != CUDNN_STATUS_SUCCESS) return -1;
			if (cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS) continue; /* this engine cannot; try the next */
			int64_t ws = 0, n = 0;
			g->st = cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
			                                 &ws);
			if (g->st != CUDNN_STATUS_SUCCESS) { g->what = "EXECUTION_PLAN_WORKSPACE_SIZE"; return -1; }
			g->plan = plan;
			g->workspace_bytes = ws;
			return 0;
		}
	}
	if (g->st == CUDNN_STATUS_SUCCESS && first_what) {
		g->st = first_st;
		g->what = first_what;
	} else if (g->st == CUDNN_STATUS_SUCCESS) {
		g->st = CUDNN_STATUS_NOT_SUPPORTED;
		g->what = "no engine config finalizes (graph unsupported by this cuDNN and GPU)";
	}
	return -1;
}

int att_graph_build(struct att_graph *g, cudnnHandle_t h, const struct att_shape *sh)
{
	memset(g, 0, sizeof *g);
	g->st = CUDNN_STATUS_SUCCESS;
	g->next_uid = 100;
	if (sh->bwd) build_backward(g, sh);
	else build_forward(g, sh);
	cudnnBackendDescriptor_t graph = make(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
	set(g, graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h, "OPERATIONGRAPH_HANDLE");
	set(g, graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->nops, g->ops, "OPERATIONGRAPH_OPS");
	finalize(g, graph, "operation graph finalize");
	if (g->st != CUDNN_STATUS_SUCCESS) return -1;
	return plan_from_heuristics(g, h, graph);
}

void att_graph_release(struct att_graph *g)
{
	/* in reverse: operations before the tensors and descriptors they refer to */
	for (int i = g->nowned - 1; i >= 0; i--) cudnnBackendDestroyDescriptor(g->owned[i]);
	g->nowned = 0;
	g->nops = 0;
	g->plan = NULL;
}
