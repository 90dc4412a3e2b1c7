/* ops/pointwise: GELU (tanh), residual add, SwiGLU; bf16 in and out where
 * the input is bf16 (computed in fp32, rounded once). */
#include <stdio.h>
#include <string.h>

#include "kernels/bf16.h"
#include "ops/ops.h"
#include "ops/ops_util.h"

static hp_status same_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    os[0] = *in_shape(g, n, 0);
    od[0] = HP_F32;
    return HP_OK;
}

/* ---- GELU ---- */
static void gelu_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)n;
    if (is_bf16(&in[0])) {
        kern_of(k)->kb_gelu_fwd(k->pool, BF(out[0]), CBF(in[0]), (long)hp_shape_numel(&in[0].shape));
        return;
    }
    kern_of(k)->k_gelu_fwd(k->pool, F32(out[0]), CF32(in[0]), (long)hp_shape_numel(&in[0].shape));
}

static void gelu_backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dx = grad_for(g, node, 0);
    if (dx < 0) return;
    int in[2] = {gout[0], g->nodes[node].in[0]};
    emit_bwd(g, &hp_op_gelu_bwd, node, in, 2, &dx, 1);
    gin[0] = dx;
}

static double gelu_flops(const hp_graph *g, const hp_node *n) { return 10.0 * (double)in_numel(g, n, 0); }

const hp_opdef hp_op_gelu = {
    .name = "gelu", .nout = 1, .infer = same_infer, .run = gelu_run, .backward = gelu_backward,
    .flops = gelu_flops, .bytes = hp_ops_io_bytes, .bf16 = HP_PREC("b", "b"),
};

/* backward: in (dy, x) -> dx */
static void gelu_run_bwd(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)n;
    if (is_bf16(&in[1])) {
        kern_of(k)->kb_gelu_bwd(k->pool, BF(out[0]), CBF(in[0]), CBF(in[1]), (long)hp_shape_numel(&in[1].shape));
        return;
    }
    kern_of(k)->k_gelu_bwd(k->pool, F32(out[0]), CF32(in[0]), CF32(in[1]), (long)hp_shape_numel(&in[1].shape));
}

static double gelu_flops_bwd(const hp_graph *g, const hp_node *n) {
    return 20.0 * (double)in_numel(g, n, 1);
}

const hp_opdef hp_op_gelu_bwd = {
    .name = "gelu_bwd", .nout = 1, .run = gelu_run_bwd, .flops = gelu_flops_bwd,
    .bytes = hp_ops_io_bytes,
};

/* ---- add: out = a + b (same shapes); its backward passes dy through ---- */
static hp_status add_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    char b1[64], b2[64];
    if (!hp_shape_eq(in_shape(g, n, 0), in_shape(g, n, 1)))
        return SHAPE_ERR("add of %s and %s: shapes differ", hp_shape_str(b1, sizeof b1, in_shape(g, n, 0)),
                         hp_shape_str(b2, sizeof b2, in_shape(g, n, 1)));
    return same_infer(g, n, os, od);
}

static void add_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)n;
    if (is_bf16(&out[0])) {
        kern_of(k)->kb_add(k->pool, BF(out[0]), CBF(in[0]), CBF(in[1]), (long)hp_shape_numel(&in[0].shape));
        return;
    }
    kern_of(k)->k_add(k->pool, F32(out[0]), CF32(in[0]), CF32(in[1]), (long)hp_shape_numel(&in[0].shape));
}

static void add_backward(hp_graph *g, int node, const int *gout, int *gin) {
    (void)g, (void)node;
    gin[0] = gout[0];
    gin[1] = gout[0];
}

static double add_flops(const hp_graph *g, const hp_node *n) { return (double)in_numel(g, n, 0); }

const hp_opdef hp_op_add = {
    .name = "add", .nout = 1, .infer = add_infer, .run = add_run, .backward = add_backward,
    .flops = add_flops, .bytes = hp_ops_io_bytes, .bf16 = HP_PREC("bb", "b"),
};

int hp_op_is_add(const hp_opdef *op) { return op == &hp_op_add; }

/* ---- SwiGLU: x[..., 2, H] -> silu(x[..., 0, :]) * x[..., 1, :] ----
 * (gate and up as separate slices, so H can be sharded on its own). An
 * optional second input, ids[...] i32 (one per row; expert parallelism's
 * received rows, parallel/ep_pass): only the leading rows with an id >= 0
 * are computed, the rest are zero (the exchange's room for rows that did not
 * come); the backward takes them as its third input. */
static long rows_used(const hp_node *n, const hp_tensor *ids, long rows) {
    if (n->nin < 2 + (n->op == &hp_op_swiglu_bwd)) return rows;
    const int32_t *e = I32(*ids);
    long p = 0;
    while (p < rows && e[p] >= 0) p++;
    return p;
}

static hp_status swiglu_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *x = in_shape(g, n, 0);
    char b[64];
    if (x->ndim < 2 || x->d[x->ndim - 2] != 2)
        return SHAPE_ERR("swiglu input %s must be [..., 2, H] (gate, up)", hp_shape_str(b, sizeof b, x));
    if (n->nin > 1 && (g->vals[n->in[1]].dtype != HP_I32 || in_numel(g, n, 1) * 2 * last_dim(x) != hp_shape_numel(x)))
        return SHAPE_ERR("swiglu: row ids %s must be i32, one per row of %s",
                         hp_shape_str(b, sizeof b, in_shape(g, n, 1)), "the input");
    os[0] = *x;
    os[0].ndim--;
    os[0].d[os[0].ndim - 1] = x->d[x->ndim - 1];
    od[0] = HP_F32;
    return HP_OK;
}

static void swiglu_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long rows = t_rows(&in[0]) / 2, H = t_last(&in[0]), used = rows_used(n, &in[1], rows);
    size_t es = hp_dtype_size(out[0].dtype);
    memset((char *)out[0].data + es * (size_t)(used * H), 0, es * (size_t)((rows - used) * H));
    if (is_bf16(&in[0])) {
        kern_of(k)->kb_swiglu_fwd(k->pool, BF(out[0]), CBF(in[0]), k->scratch, used, H);
        return;
    }
    kern_of(k)->k_swiglu_fwd(k->pool, F32(out[0]), CF32(in[0]), used, H);
}

static void swiglu_backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dx = grad_for(g, node, 0);
    if (dx < 0) return;
    int in[3] = {gout[0], g->nodes[node].in[0], g->nodes[node].nin > 1 ? g->nodes[node].in[1] : -1};
    emit_bwd(g, &hp_op_swiglu_bwd, node, in, g->nodes[node].nin > 1 ? 3 : 2, &dx, 1);
    gin[0] = dx;
}

/* bf16 only: rows of H floats per thread (forward: x is input 0, backward: input 1) */
static size_t swiglu_scratch(const hp_graph *g, const hp_node *n, int nt) {
    int k = n->op == &hp_op_swiglu ? 0 : 1;
    return in_bf16(g, n, k) ? hp_kb_swiglu_scratch(last_dim(in_shape(g, n, k)), nt) : 0;
}

static double swiglu_flops(const hp_graph *g, const hp_node *n) { return 3.0 * (double)in_numel(g, n, 0); }

const hp_opdef hp_op_swiglu = {
    .name = "swiglu", .nout = 1, .infer = swiglu_infer, .run = swiglu_run,
    .backward = swiglu_backward, .scratch = swiglu_scratch, .flops = swiglu_flops, .bytes = hp_ops_io_bytes,
    .bf16 = HP_PREC("b", "b"),
};

static void swiglu_run_bwd(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long rows = t_rows(&in[1]) / 2, H = t_last(&in[1]), used = rows_used(n, &in[2], rows);
    size_t es = hp_dtype_size(out[0].dtype);
    memset((char *)out[0].data + es * (size_t)(used * 2 * H), 0, es * (size_t)((rows - used) * 2 * H));
    if (is_bf16(&in[1])) {
        kern_of(k)->kb_swiglu_bwd(k->pool, BF(out[0]), CBF(in[0]), CBF(in[1]), k->scratch, used, H);
        return;
    }
    kern_of(k)->k_swiglu_bwd(k->pool, F32(out[0]), CF32(in[0]), CF32(in[1]), used, H);
}

static double swiglu_flops_bwd(const hp_graph *g, const hp_node *n) {
    return 6.0 * (double)in_numel(g, n, 1);
}

const hp_opdef hp_op_swiglu_bwd = {
    .name = "swiglu_bwd", .nout = 1, .run = swiglu_run_bwd, .scratch = swiglu_scratch, .flops = swiglu_flops_bwd,
    .bytes = hp_ops_io_bytes,
};
