/* ops/norm: LayerNorm and RMSNorm over the last dimension. bf16: x, y and
 * dx bf16; weights, their gradients and the row statistics fp32. */
#include <stdio.h>

#include "kernels/bf16.h"
#include "ops/ops.h"
#include "ops/ops_util.h"

static hp_status check_vec(const hp_graph *g, const hp_node *n, int k, int64_t C, const char *what) {
    const hp_shape *s = in_shape(g, n, k);
    char b[64];
    if (s->ndim != 1 || s->d[0] != C)
        return SHAPE_ERR("%s %s '%s' is %s, must be [%lld]", n->op->name, what,
                         g->vals[n->in[k]].name, hp_shape_str(b, sizeof b, s), (long long)C);
    return HP_OK;
}

/* Per-row statistics keep the leading dims of x ([B,T] for [B,T,C]), so a
 * batch- or sequence-sharded x shards them the same way. */
static hp_shape stats_shape(const hp_shape *x) {
    hp_shape s = *x;
    if (s.ndim > 1)
        s.ndim--;
    else
        s.d[0] = 1;
    return s;
}

/* ---- LayerNorm: in (x, w, b) -> out (y, mean[...], rstd[...]) ---- */
static hp_status ln_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *x = in_shape(g, n, 0);
    HP_TRY(check_vec(g, n, 1, last_dim(x), "weight"));
    HP_TRY(check_vec(g, n, 2, last_dim(x), "bias"));
    os[0] = *x;
    os[1] = stats_shape(x);
    os[2] = os[1];
    od[0] = od[1] = od[2] = HP_F32;
    return HP_OK;
}

/* bf16 kernels need scratch in the forward too */
static size_t norm_scratch(const hp_graph *g, const hp_node *n, int nt) {
    return in_bf16(g, n, 0) ? hp_kb_norm_scratch(last_dim(in_shape(g, n, 0)), nt) : 0;
}

static void ln_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    if (is_bf16(&in[0])) {
        kern_of(k)->kb_layernorm_fwd(k->pool, BF(out[0]), F32(out[1]), F32(out[2]), CBF(in[0]), CF32(in[1]), CF32(in[2]),
                            k->scratch, t_rows(&in[0]), t_last(&in[0]), (float)n->a.f[0]);
        return;
    }
    kern_of(k)->k_layernorm_fwd(k->pool, F32(out[0]), F32(out[1]), F32(out[2]), CF32(in[0]), CF32(in[1]),
                       CF32(in[2]), t_rows(&in[0]), t_last(&in[0]), (float)n->a.f[0]);
}

static void ln_backward(hp_graph *g, int node, const int *gout, int *gin) {
    /* the kernel always writes all three gradients */
    int dx = hp_grad_value(g, g->nodes[node].in[0]), dw = hp_grad_value(g, g->nodes[node].in[1]);
    int db = hp_grad_value(g, g->nodes[node].in[2]);
    const hp_node *n = &g->nodes[node];
    int in[5] = {gout[0], n->in[0], n->in[1], n->out[1], n->out[2]};
    int out[3] = {dx, dw, db};
    emit_bwd(g, &hp_op_layernorm_bwd, node, in, 5, out, 3);
    gin[0] = dx, gin[1] = dw, gin[2] = db;
}

static double ln_flops(const hp_graph *g, const hp_node *n) { return 8.0 * (double)in_numel(g, n, 0); }

const hp_opdef hp_op_layernorm = {
    .name = "layernorm", .nout = 3, .nograd_outs = 6, .infer = ln_infer, .run = ln_run,
    .backward = ln_backward, .scratch = norm_scratch, .flops = ln_flops, .bytes = hp_ops_io_bytes,
    .bf16 = HP_PREC("bff", "bff"),
};

/* backward: in (dy, x, w, mean, rstd) -> out (dx, dw, db) */
static void ln_run_bwd(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)n;
    if (is_bf16(&in[1])) {
        kern_of(k)->kb_layernorm_bwd(k->pool, BF(out[0]), F32(out[1]), F32(out[2]), CBF(in[0]), CBF(in[1]), CF32(in[2]),
                            CF32(in[3]), CF32(in[4]), k->scratch, t_rows(&in[1]), t_last(&in[1]));
        return;
    }
    kern_of(k)->k_layernorm_bwd(k->pool, F32(out[0]), F32(out[1]), F32(out[2]),
                       CF32(in[0]), CF32(in[1]), CF32(in[2]), CF32(in[3]), CF32(in[4]), k->scratch,
                       t_rows(&in[1]), t_last(&in[1]));
}

static size_t ln_scratch_bwd(const hp_graph *g, const hp_node *n, int nt) {
    const hp_shape *x = in_shape(g, n, 1);
    if (in_bf16(g, n, 1)) return hp_kb_norm_scratch(last_dim(x), nt);
    return hp_k_layernorm_bwd_scratch(rows_of(x), last_dim(x), nt);
}

static double ln_flops_bwd(const hp_graph *g, const hp_node *n) {
    return 14.0 * (double)in_numel(g, n, 1);
}

const hp_opdef hp_op_layernorm_bwd = {
    .name = "layernorm_bwd", .nout = 3, .run = ln_run_bwd, .scratch = ln_scratch_bwd,
    .flops = ln_flops_bwd, .bytes = hp_ops_io_bytes,
};

/* ---- RMSNorm: in (x, w) -> out (y, rstd[...]) ---- */
static hp_status rms_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *x = in_shape(g, n, 0);
    HP_TRY(check_vec(g, n, 1, last_dim(x), "weight"));
    os[0] = *x;
    os[1] = stats_shape(x);
    od[0] = od[1] = HP_F32;
    return HP_OK;
}

static void rms_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    if (is_bf16(&in[0])) {
        kern_of(k)->kb_rmsnorm_fwd(k->pool, BF(out[0]), F32(out[1]), CBF(in[0]), CF32(in[1]), k->scratch, t_rows(&in[0]),
                          t_last(&in[0]), (float)n->a.f[0]);
        return;
    }
    kern_of(k)->k_rmsnorm_fwd(k->pool, F32(out[0]), F32(out[1]), CF32(in[0]), CF32(in[1]), t_rows(&in[0]),
                     t_last(&in[0]), (float)n->a.f[0]);
}

static void rms_backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dx = hp_grad_value(g, g->nodes[node].in[0]), dw = hp_grad_value(g, g->nodes[node].in[1]);
    const hp_node *n = &g->nodes[node];
    int in[4] = {gout[0], n->in[0], n->in[1], n->out[1]};
    int out[2] = {dx, dw};
    emit_bwd(g, &hp_op_rmsnorm_bwd, node, in, 4, out, 2);
    gin[0] = dx, gin[1] = dw;
}

static double rms_flops(const hp_graph *g, const hp_node *n) { return 5.0 * (double)in_numel(g, n, 0); }

const hp_opdef hp_op_rmsnorm = {
    .name = "rmsnorm", .nout = 2, .nograd_outs = 2, .infer = rms_infer, .run = rms_run,
    .backward = rms_backward, .scratch = norm_scratch, .flops = rms_flops, .bytes = hp_ops_io_bytes,
    .bf16 = HP_PREC("bf", "bf"),
};

/* backward: in (dy, x, w, rstd) -> out (dx, dw) */
static void rms_run_bwd(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)n;
    if (is_bf16(&in[1])) {
        kern_of(k)->kb_rmsnorm_bwd(k->pool, BF(out[0]), F32(out[1]), CBF(in[0]), CBF(in[1]), CF32(in[2]), CF32(in[3]),
                          k->scratch, t_rows(&in[1]), t_last(&in[1]));
        return;
    }
    kern_of(k)->k_rmsnorm_bwd(k->pool, F32(out[0]), F32(out[1]), CF32(in[0]),
                     CF32(in[1]), CF32(in[2]), CF32(in[3]), k->scratch, t_rows(&in[1]),
                     t_last(&in[1]));
}

static size_t rms_scratch_bwd(const hp_graph *g, const hp_node *n, int nt) {
    const hp_shape *x = in_shape(g, n, 1);
    if (in_bf16(g, n, 1)) return hp_kb_norm_scratch(last_dim(x), nt);
    return hp_k_rmsnorm_bwd_scratch(rows_of(x), last_dim(x), nt);
}

static double rms_flops_bwd(const hp_graph *g, const hp_node *n) {
    return 9.0 * (double)in_numel(g, n, 1);
}

const hp_opdef hp_op_rmsnorm_bwd = {
    .name = "rmsnorm_bwd", .nout = 2, .run = rms_run_bwd, .scratch = rms_scratch_bwd,
    .flops = rms_flops_bwd, .bytes = hp_ops_io_bytes,
};
