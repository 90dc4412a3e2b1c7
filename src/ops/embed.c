/* ops/embed: token embedding lookup and learned position embedding. bf16:
 * tables (the parameters' bf16 copies) and outputs bf16, table gradients fp32. */
#include <stdio.h>

#include "kernels/bf16.h"
#include "ops/ops.h"
#include "ops/ops_util.h"

/* ---- embedding: in (ids[...] i32, table[R, C]) -> out[..., C] ---- */
static hp_status emb_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_value *ids = &g->vals[n->in[0]];
    const hp_shape *t = in_shape(g, n, 1);
    char b[64];
    if (ids->dtype != HP_I32) return SHAPE_ERR("embedding ids '%s' must be i32", ids->name);
    if (t->ndim != 2)
        return SHAPE_ERR("embedding table '%s' must be 2-D, got %s", g->vals[n->in[1]].name,
                         hp_shape_str(b, sizeof b, t));
    if (ids->shape.ndim >= HP_MAX_DIMS) return SHAPE_ERR("embedding ids '%s' have too many dimensions", ids->name);
    os[0] = ids->shape;
    os[0].d[os[0].ndim++] = t->d[1];
    od[0] = HP_F32;
    return HP_OK;
}

static void emb_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)n;
    if (is_bf16(&in[1])) {
        kern_of(k)->kb_embedding_fwd(k->pool, BF(out[0]), I32(in[0]), CBF(in[1]), (long)hp_shape_numel(&in[0].shape),
                            in[1].shape.d[1]);
        return;
    }
    kern_of(k)->k_embedding_fwd(k->pool, F32(out[0]), I32(in[0]), CF32(in[1]),
                       (long)hp_shape_numel(&in[0].shape), in[1].shape.d[1]);
}

/* A table that already has a gradient from a later use (a tied LM head) gets
 * the rows added to it by one accumulating node instead of a fresh table-sized
 * gradient and an add. */
static void emb_backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dt = grad_for(g, node, 1);
    if (dt < 0) return;
    int table = g->nodes[node].in[1], sofar = hp_grad_take(g, table);
    if (sofar >= 0) {
        int in[3] = {gout[0], g->nodes[node].in[0], sofar};
        emit_bwd(g, &hp_op_embedding_bwd_acc, node, in, 3, &dt, 1);
    } else {
        int in[2] = {gout[0], g->nodes[node].in[0]};
        emit_bwd(g, &hp_op_embedding_bwd, node, in, 2, &dt, 1);
    }
    gin[1] = dt;
}

const hp_opdef hp_op_embedding = {
    .name = "embedding", .nout = 1, .infer = emb_infer, .run = emb_run, .backward = emb_backward,
    .bytes = hp_ops_io_bytes, .bf16 = HP_PREC("-b", "b"),
};

/* backward: in (dy[..., C], ids) -> dtable[R, C] */
static void emb_run_bwd(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)n;
    if (is_bf16(&in[0])) {
        kern_of(k)->kb_embedding_bwd(k->pool, F32(out[0]), CBF(in[0]), I32(in[1]), (long)hp_shape_numel(&in[1].shape),
                            out[0].shape.d[1], out[0].shape.d[0]);
        return;
    }
    kern_of(k)->k_embedding_bwd(k->pool, F32(out[0]), CF32(in[0]), I32(in[1]),
                       (long)hp_shape_numel(&in[1].shape), out[0].shape.d[1], out[0].shape.d[0]);
}

static double emb_flops_bwd(const hp_graph *g, const hp_node *n) { return (double)in_numel(g, n, 0); }

const hp_opdef hp_op_embedding_bwd = {
    .name = "embedding_bwd", .nout = 1, .run = emb_run_bwd, .flops = emb_flops_bwd,
    .bytes = hp_ops_io_bytes,
};

/* backward, accumulating: in (dy[..., C], ids, dsofar[R, C]) -> dtable[R, C] =
 * dsofar + the rows of dy (copied first unless the executor gave both the
 * same storage). */
static void emb_run_bwd_acc(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)n;
    long C = out[0].shape.d[1], rows = out[0].shape.d[0];
    if (out[0].data != in[2].data) kern_of(k)->k_copy(k->pool, F32(out[0]), CF32(in[2]), rows * C);
    if (is_bf16(&in[0])) {
        kern_of(k)->kb_embedding_bwd_acc(k->pool, F32(out[0]), CBF(in[0]), I32(in[1]), (long)hp_shape_numel(&in[1].shape), C);
        return;
    }
    kern_of(k)->k_embedding_bwd_acc(k->pool, F32(out[0]), CF32(in[0]), I32(in[1]),
                           (long)hp_shape_numel(&in[1].shape), C);
}

static double emb_flops_bwd_acc(const hp_graph *g, const hp_node *n) { return (double)in_numel(g, n, 0); }

static int emb_grad_rows(const hp_node *n, int *rows, int *ids, int *sofar) {
    *rows = n->in[0], *ids = n->in[1], *sofar = n->in[2];
    return 1;
}

const hp_opdef hp_op_embedding_bwd_acc = {
    .name = "embedding_bwd_acc", .nout = 1, .run = emb_run_bwd_acc, .flops = emb_flops_bwd_acc,
    .bytes = hp_ops_io_bytes, .grad_rows = emb_grad_rows, .fresh = &hp_op_embedding_bwd,
};

/* grad_rows: in (dy[..., C], ids[...], grad[R, C]), no output: the rows of dy
 * added into grad at ids, in place (what embedding_bwd_acc adds, by the same
 * kernel); a.i[0] the parameter. Its local form (parallel/lower_rules) has
 * the first two inputs only and does nothing: the rows pass adds the rows
 * after the gradient's reduction. */
static void rows_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)out;
    if (n->nin < 3) return;
    long C = in[2].shape.d[1], N = (long)hp_shape_numel(&in[1].shape);
    if (is_bf16(&in[0])) {
        kern_of(k)->kb_embedding_bwd_acc(k->pool, F32(in[2]), CBF(in[0]), I32(in[1]), N, C);
        return;
    }
    kern_of(k)->k_embedding_bwd_acc(k->pool, F32(in[2]), CF32(in[0]), I32(in[1]), N, C);
}

const hp_opdef hp_op_grad_rows = {
    .name = "grad_rows", .nout = 0, .run = rows_run, .flops = emb_flops_bwd_acc, .bytes = hp_ops_io_bytes,
};

int hp_op_is_grad_rows(const hp_opdef *op) { return op == &hp_op_grad_rows; }

int hp_op_is_embedding_bwd_acc(const hp_opdef *op) { return op == &hp_op_embedding_bwd_acc; }

/* ---- add_pos: in (x[B,T,C], pos[P,C]) -> x + pos[t] ---- */
static hp_status pos_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *x = in_shape(g, n, 0), *p = in_shape(g, n, 1);
    char b1[64], b2[64];
    if (x->ndim != 3 || p->ndim != 2 || p->d[1] != x->d[2] || p->d[0] < x->d[1])
        return SHAPE_ERR("add_pos: input %s needs a position table [>= T, C], got '%s' %s",
                         hp_shape_str(b1, sizeof b1, x), g->vals[n->in[1]].name,
                         hp_shape_str(b2, sizeof b2, p));
    os[0] = *x;
    od[0] = HP_F32;
    return HP_OK;
}

static void pos_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)n;
    const hp_shape *x = &in[0].shape;
    if (is_bf16(&in[0])) {
        kern_of(k)->kb_add_pos_fwd(k->pool, BF(out[0]), CBF(in[0]), CBF(in[1]), x->d[0], x->d[1], x->d[2]);
        return;
    }
    kern_of(k)->k_add_pos_fwd(k->pool, F32(out[0]), CF32(in[0]), CF32(in[1]), x->d[0], x->d[1], x->d[2]);
}

static void pos_backward(hp_graph *g, int node, const int *gout, int *gin) {
    gin[0] = gout[0];
    int dp = grad_for(g, node, 1);
    if (dp < 0) return;
    emit_bwd(g, &hp_op_add_pos_bwd, node, gout, 1, &dp, 1);
    gin[1] = dp;
}

static double pos_flops(const hp_graph *g, const hp_node *n) { return (double)in_numel(g, n, 0); }

const hp_opdef hp_op_add_pos = {
    .name = "add_pos", .nout = 1, .infer = pos_infer, .run = pos_run, .backward = pos_backward,
    .flops = pos_flops, .bytes = hp_ops_io_bytes, .bf16 = HP_PREC("bb", "b"),
};

/* backward: in (dy[B,T,C]) -> dpos[P,C] */
static void pos_run_bwd(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)n;
    const hp_shape *x = &in[0].shape;
    if (is_bf16(&in[0])) {
        kern_of(k)->kb_add_pos_bwd(k->pool, F32(out[0]), CBF(in[0]), x->d[0], x->d[1], x->d[2], out[0].shape.d[0]);
        return;
    }
    kern_of(k)->k_add_pos_bwd(k->pool, F32(out[0]), CF32(in[0]), x->d[0], x->d[1], x->d[2], out[0].shape.d[0]);
}

const hp_opdef hp_op_add_pos_bwd = {
    .name = "add_pos_bwd", .nout = 1, .run = pos_run_bwd, .flops = pos_flops, .bytes = hp_ops_io_bytes,
};
