/* ops/linear: y[..., O...] = x[..., IC] . W[O..., IC]^T + b[O...]. fp32: GEMM
 * through OpenBLAS, or oneDNN (attribute HP_LINEAR_GEMM, set by the compile
 * pass parallel/gemm_policy: oneDNN for every product, or per product the
 * faster measured at program creation). bf16 (x, W and y bf16, bias fp32, dW and db fp32): the
 * products through oneDNN primitives prepared once per node when the rank's
 * program is created (kernels/gemm.h), fp32 accumulation. The weight may have
 * more than two dims (e.g. a fused QKV weight [3, C, C]): its leading dims
 * are the output features, in memory order, so each can be sharded on its
 * own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bf16.h"
#include "kernels/gemm.h"
#include "ops/ops.h"
#include "ops/ops_util.h"

static hp_status infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *x = in_shape(g, n, 0), *w = in_shape(g, n, 1);
    char b1[64], b2[64];
    if (w->ndim < 2)
        return SHAPE_ERR("linear weight '%s' must have 2 or more dims (out..., in), got %s",
                         g->vals[n->in[1]].name, hp_shape_str(b1, sizeof b1, w));
    if (last_dim(x) != last_dim(w))
        return SHAPE_ERR("linear input %s does not match weight '%s' %s (in features)",
                         hp_shape_str(b1, sizeof b1, x), g->vals[n->in[1]].name,
                         hp_shape_str(b2, sizeof b2, w));
    if (x->ndim - 1 + w->ndim - 1 > HP_MAX_DIMS)
        return SHAPE_ERR("linear output of %s and %s has more than %d dims", hp_shape_str(b1, sizeof b1, x),
                         hp_shape_str(b2, sizeof b2, w), HP_MAX_DIMS);
    hp_shape bs = *w;
    bs.ndim--;
    if (n->nin == 3 && !hp_shape_eq(in_shape(g, n, 2), &bs))
        return SHAPE_ERR("linear bias '%s' %s must be %s", g->vals[n->in[2]].name,
                         hp_shape_str(b1, sizeof b1, in_shape(g, n, 2)), hp_shape_str(b2, sizeof b2, &bs));
    os[0] = *x;
    os[0].ndim = x->ndim - 1;
    for (int i = 0; i < w->ndim - 1; i++) os[0].d[os[0].ndim++] = w->d[i];
    od[0] = HP_F32;
    return HP_OK;
}

/* Does product p run on oneDNN? bf16: always; fp32: as the node's policy says. */
static hp_status on_onednn(int *yes, const hp_kctx *k, const hp_node *n, hp_dtype dt, hp_linear_product p, long N,
                           long IC, long OC) {
    long policy = n->a.i[HP_LINEAR_GEMM];
    *yes = dt == HP_BF16 || policy == HP_GEMM_FP32_ONEDNN;
    if (dt == HP_BF16 || policy != HP_GEMM_FP32_AUTO) return HP_OK;
    hp_gemm_backend b;
    HP_TRY(kern_of(k)->gemm_f32_pick(&b, k->gemm, p, N, IC, OC));
    *yes = b == HP_GEMM_ONEDNN;
    return HP_OK;
}

/* A node's prepared products and the backend table that made them (and
 * frees them); the products first, so the state reads as an hp_gemm_linear. */
typedef struct {
    hp_gemm_linear l;
    const hp_kbackend *kern;
} linear_state;

/* The node's products on oneDNN (forward: fwd; backward: bwd_data and/or
 * bwd_weight, as the node has dx and dW outputs); a product left NULL runs on
 * OpenBLAS (fp32), and no state at all when none is on oneDNN. */
static hp_status prepare_products(void **state, const hp_kctx *k, const hp_node *n, hp_dtype dt, long N, long IC,
                                  long OC, int fwd) {
    *state = NULL;
    if (!k->gemm) return hp_errorf("linear '%s': oneDNN products need the rank's matmul context", n->name);
    linear_state *ls = calloc(1, sizeof *ls);
    if (!ls) return hp_errorf("linear '%s': out of memory", n->name);
    hp_gemm_linear *l = &ls->l;
    ls->kern = kern_of(k);
    hp_status st = HP_OK;
    int yes = 0;
    if (fwd) {
        hp_gemm_desc d = hp_gemm_linear_desc(HP_LINEAR_FWD, N, IC, OC, dt, dt);
        d.bias = n->nin == 3;
        st = on_onednn(&yes, k, n, dt, HP_LINEAR_FWD, N, IC, OC);
        if (!st && yes) st = kern_of(k)->gemm_prepare(&l->fwd, k->gemm, &d);
    } else {
        hp_gemm_desc dd = hp_gemm_linear_desc(HP_LINEAR_BWD_DATA, N, IC, OC, dt, dt);
        hp_gemm_desc dw = hp_gemm_linear_desc(HP_LINEAR_BWD_WEIGHT, N, IC, OC, dt, dt);
        if (n->out[0] >= 0) st = on_onednn(&yes, k, n, dt, HP_LINEAR_BWD_DATA, N, IC, OC);
        if (!st && n->out[0] >= 0 && yes) st = kern_of(k)->gemm_prepare(&l->bwd_data, k->gemm, &dd);
        if (!st && n->out[1] >= 0) st = on_onednn(&yes, k, n, dt, HP_LINEAR_BWD_WEIGHT, N, IC, OC);
        if (!st && n->out[1] >= 0 && yes) st = kern_of(k)->gemm_prepare(&l->bwd_weight, k->gemm, &dw);
    }
    if (!st && !l->fwd && !l->bwd_data && !l->bwd_weight) { /* all on OpenBLAS */
        free(ls);
        return HP_OK;
    }
    if (st) {
        ls->kern->gemm_linear_free(l);
        free(ls);
        return hp_error_wrap(st, "linear '%s' (N=%ld IC=%ld OC=%ld)", n->name, N, IC, OC);
    }
    *state = ls;
    return HP_OK;
}

static void release(void *state) {
    linear_state *ls = state;
    if (!ls) return;
    ls->kern->gemm_linear_free(&ls->l);
    free(ls);
}

/* bf16, or an fp32 node whose policy is not OpenBLAS */
static int uses_gemm(const hp_graph *g, const hp_node *n) {
    int x = n->op == &hp_op_linear ? 0 : 1;
    return in_bf16(g, n, x) || n->a.i[HP_LINEAR_GEMM] != HP_GEMM_FP32_OPENBLAS;
}

static hp_status prepare(void **state, const hp_kctx *k, const hp_node *n, const hp_tensor *in, const hp_tensor *out) {
    (void)out;
    *state = NULL;
    if (!uses_gemm(k->graph, n)) return HP_OK;
    return prepare_products(state, k, n, in[0].dtype, t_rows(&in[0]), t_last(&in[1]), t_rows(&in[1]), 1);
}

static void run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long IC = t_last(&in[1]), OC = t_rows(&in[1]);
    const hp_gemm_linear *l = hp_kctx_state(k, n);
    if (l && l->fwd) {
        hp_status st = kern_of(k)->gemm_linear_fwd(l, out[0].data, in[0].data, in[1].data, n->nin == 3 ? CF32(in[2]) : NULL);
        if (st) *k->err = st;
        return;
    }
    kern_of(k)->k_matmul_fwd(k->pool, F32(out[0]), CF32(in[0]), CF32(in[1]), n->nin == 3 ? CF32(in[2]) : NULL,
                    t_rows(&in[0]), IC, OC);
}

static void backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dx = grad_for(g, node, 0), dw = grad_for(g, node, 1);
    int db = g->nodes[node].nin == 3 ? grad_for(g, node, 2) : -1;
    int has_bias = g->nodes[node].nin == 3; /* read before emitting: the node array may move */
    int in[3] = {gout[0], g->nodes[node].in[0], g->nodes[node].in[1]};
    int out[3] = {dx, dw, db};
    emit_bwd(g, &hp_op_linear_bwd, node, in, 3, out, 3);
    gin[0] = dx;
    gin[1] = dw;
    if (has_bias) gin[2] = db;
}

static double flops(const hp_graph *g, const hp_node *n) {
    return 2.0 * (double)rows_of(in_shape(g, n, 0)) * (double)hp_val_numel(g, n->in[1]);
}

const hp_opdef hp_op_linear = {
    .name = "linear", .nout = 1, .infer = infer, .run = run, .backward = backward,
    .flops = flops, .bytes = hp_ops_io_bytes, .bf16 = HP_PREC("bbf", "b"), .prepare = prepare, .release = release,
    .uses_gemm = uses_gemm,
};

/* backward: in (dy, x, W) -> out (dx, dW, db), any output may be -1. */
static hp_status prepare_bwd(void **state, const hp_kctx *k, const hp_node *n, const hp_tensor *in,
                             const hp_tensor *out) {
    (void)out;
    *state = NULL;
    if (!uses_gemm(k->graph, n)) return HP_OK;
    return prepare_products(state, k, n, in[1].dtype, t_rows(&in[1]), t_last(&in[2]), t_rows(&in[2]), 0);
}

static void run_bwd(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long IC = t_last(&in[2]), OC = t_rows(&in[2]);
    const hp_gemm_linear *l = hp_kctx_state(k, n);
    if (is_bf16(&in[1])) {
        hp_status st = kern_of(k)->gemm_linear_bwd(l, n->out[0] >= 0 ? out[0].data : NULL, n->out[1] >= 0 ? F32(out[1]) : NULL,
                                          in[0].data, in[1].data, in[2].data);
        if (st) *k->err = st;
        if (n->out[2] >= 0) kern_of(k)->kb_colsum(k->pool, F32(out[2]), CBF(in[0]), t_rows(&in[1]), OC);
        return;
    }
    if (l) { /* fp32: the products on oneDNN, the rest (and the bias) on the engine's kernels */
        int dx_dnnl = n->out[0] >= 0 && l->bwd_data, dw_dnnl = n->out[1] >= 0 && l->bwd_weight;
        hp_status st = kern_of(k)->gemm_linear_bwd(l, dx_dnnl ? out[0].data : NULL, dw_dnnl ? F32(out[1]) : NULL, in[0].data,
                                          in[1].data, in[2].data);
        if (st) *k->err = st;
        float *dx = n->out[0] >= 0 && !dx_dnnl ? F32(out[0]) : NULL, *dw = n->out[1] >= 0 && !dw_dnnl ? F32(out[1]) : NULL;
        float *db = n->out[2] >= 0 ? F32(out[2]) : NULL;
        if (dx || dw || db)
            kern_of(k)->k_matmul_bwd(k->pool, dx, dw, db, CF32(in[0]), CF32(in[1]), CF32(in[2]), t_rows(&in[1]), IC, OC);
        return;
    }
    kern_of(k)->k_matmul_bwd(k->pool, n->out[0] >= 0 ? F32(out[0]) : NULL, n->out[1] >= 0 ? F32(out[1]) : NULL,
                    n->out[2] >= 0 ? F32(out[2]) : NULL, CF32(in[0]), CF32(in[1]), CF32(in[2]),
                    t_rows(&in[1]), IC, OC);
}

static double flops_bwd(const hp_graph *g, const hp_node *n) {
    double f = 2.0 * (double)rows_of(in_shape(g, n, 1)) * (double)hp_val_numel(g, n->in[2]);
    return f * ((n->out[0] >= 0) + (n->out[1] >= 0));
}

const hp_opdef hp_op_linear_bwd = {
    .name = "linear_bwd", .nout = 3, .run = run_bwd,
    .flops = flops_bwd, .bytes = hp_ops_io_bytes, .prepare = prepare_bwd, .release = release,
    .uses_gemm = uses_gemm,
};

int hp_op_is_linear_bwd(const hp_opdef *op) { return op == &hp_op_linear_bwd; }

int hp_op_is_linear(const hp_opdef *op) { return op == &hp_op_linear; }

int hp_op_linear_gemm_input(const hp_opdef *op) {
    return op == &hp_op_linear ? 0 : op == &hp_op_linear_bwd ? 1 : -1;
}

int hp_linear_bwd_split_node(hp_graph *g, int node) {
    const hp_node *n = &g->nodes[node];
    if (n->op != &hp_op_linear_bwd || n->out[0] < 0 || (n->out[1] < 0 && n->out[2] < 0)) return -1;
    int in[3] = {n->in[0], n->in[1], n->in[2]}, out[3] = {-1, n->out[1], n->out[2]};
    hp_attrs a = n->a;
    char name[HP_NAME_LEN];
    snprintf(name, sizeof name, "%.88s.wgrad", n->name);
    int w = hp_graph_node_into(g, &hp_op_linear_bwd, in, 3, out, 3, &a, n->phase, n->fwd_node);
    if (w < 0) return -1;
    memcpy(g->nodes[w].name, name, HP_NAME_LEN);
    g->nodes[node].out[1] = g->nodes[node].out[2] = -1;
    return w;
}

hp_status hp_linear_bwd_split(int *nsplit, hp_graph *g, int *order, int *norder, int cap) {
    *nsplit = 0;
    for (int i = 0; i < *norder; i++) {
        const hp_node *n = &g->nodes[order[i]];
        if (n->op != &hp_op_linear_bwd || n->out[0] < 0 || (n->out[1] < 0 && n->out[2] < 0)) continue;
        if (*norder >= cap) return hp_errorf("linear_bwd split: the order has no room for node %d", *norder + 1);
        int w = hp_linear_bwd_split_node(g, order[i]);
        HP_TRY(hp_graph_error(g));
        memmove(order + i + 2, order + i + 1, sizeof(int) * (size_t)(*norder - i - 1));
        order[++i] = w;
        ++*norder, ++*nsplit;
    }
    return HP_OK;
}
