/* ops/attention: fused causal multi-head self-attention and rotary embedding,
 * both on the fused qkv[B,T,3,C] layout (q | k | v, heads of size hs
 * contiguous inside each). The attribute is the head size, so a rank holding
 * a slice of the heads (C' = C/tp columns of each of q, k, v) runs the same
 * kernel on C'/hs heads. bf16: qkv, y and their gradients bf16; scores,
 * softmax and att fp32. rope has no bf16 kernel (runs in fp32, cast around). */
#include <stdio.h>
#include <stdlib.h>

#include "kernels/bf16.h"
#include "ops/ops.h"
#include "ops/ops_util.h"

static hp_status check_qkv(const hp_graph *g, const hp_node *n) {
    const hp_shape *s = in_shape(g, n, 0);
    char b[64];
    long hs = (long)n->a.i[0];
    if (s->ndim != 4 || s->d[2] != 3)
        return SHAPE_ERR("%s input %s must be [B, T, 3, C]", n->op->name, hp_shape_str(b, sizeof b, s));
    if (hs < 1 || s->d[3] % hs)
        return SHAPE_ERR("%s: C = %lld is not a multiple of the head size %ld", n->op->name, (long long)s->d[3], hs);
    return HP_OK;
}

/* The input holding qkv[B,T,3,C]: 0 of a forward node, 1 of a backward node. */
static int qkv_in(const hp_node *n) { return n->op == &hp_op_attention ? 0 : 1; }
#define NHEADS(s, n) ((s)->d[3] / (n)->a.i[0])

/* ---- attention: qkv[B,T,3,C] -> out (y[B,T,C], att[B,NH,T,T]) ---- */
static hp_status att_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    HP_TRY(check_qkv(g, n));
    const hp_shape *s = in_shape(g, n, 0);
    os[0] = hp_shape3(s->d[0], s->d[1], s->d[3]);
    os[1] = hp_shape4(s->d[0], NHEADS(s, n), s->d[1], s->d[1]);
    od[0] = od[1] = HP_F32;
    return HP_OK;
}

/* bf16 nodes: the products on oneDNN's bf16 matmul, prepared once per node
 * (kernels/bf16_attention_mm); no state where oneDNN has none (the widened
 * path of kernels/bf16_attention runs then). */
static int att_uses_gemm(const hp_graph *g, const hp_node *n) {
    return in_bf16(g, n, qkv_in(n));
}

/* A node's prepared products and the backend table that made them (and frees them). */
typedef struct {
    hp_kb_att_mm *mm;
    const hp_kbackend *kern;
} att_state;

static const hp_kb_att_mm *att_mm(const hp_kctx *k, const hp_node *n) {
    const att_state *s = hp_kctx_state(k, n);
    return s ? s->mm : NULL;
}

static hp_status att_prepare(void **state, const hp_kctx *k, const hp_node *n, const hp_tensor *in,
                             const hp_tensor *out) {
    (void)out;
    *state = NULL;
    if (!att_uses_gemm(k->graph, n)) return HP_OK;
    if (!k->gemm) return hp_errorf("attention '%s': bf16 products need the rank's matmul context", n->name);
    const hp_shape *s = &in[qkv_in(n)].shape;
    hp_kb_att_mm *mm = NULL;
    hp_status st = kern_of(k)->kb_att_mm_prepare(&mm, k->gemm, s->d[1], n->a.i[0]);
    if (st) return hp_error_wrap(st, "attention '%s'", n->name);
    if (!mm) return HP_OK; /* no products: the hand-written kernels run */
    att_state *made = malloc(sizeof *made);
    if (!made) {
        kern_of(k)->kb_att_mm_free(mm);
        return hp_errorf("attention '%s': out of memory", n->name);
    }
    *made = (att_state){mm, kern_of(k)};
    *state = made;
    return HP_OK;
}

static void att_release(void *state) {
    att_state *s = state;
    if (!s) return;
    s->kern->kb_att_mm_free(s->mm);
    free(s);
}

static void att_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    const hp_shape *s = &in[0].shape;
    const hp_kb_att_mm *mm = att_mm(k, n);
    if (mm) {
        hp_status st = kern_of(k)->kb_attention_mm_fwd(mm, k->pool, BF(out[0]), F32(out[1]), CBF(in[0]), k->scratch, s->d[0],
                                              s->d[1], s->d[3], NHEADS(s, n));
        if (st) *k->err = st;
        return;
    }
    if (is_bf16(&in[0])) {
        kern_of(k)->kb_attention_fwd(k->pool, BF(out[0]), F32(out[1]), CBF(in[0]), k->scratch, s->d[0], s->d[1], s->d[3],
                            NHEADS(s, n));
        return;
    }
    kern_of(k)->k_attention_fwd(k->pool, F32(out[0]), F32(out[1]), CF32(in[0]), k->scratch, s->d[0], s->d[1],
                       s->d[3], NHEADS(s, n));
}

static size_t att_scratch(const hp_graph *g, const hp_node *n, int nt) {
    /* forward node: input 0 is qkv; backward node: input 1 is qkv */
    int k = qkv_in(n);
    const hp_shape *s = in_shape(g, n, k);
    if (in_bf16(g, n, k)) { /* either path: the matmul one where prepared, else the widened one */
        size_t a = hp_kb_attention_scratch(s->d[0], s->d[1], s->d[3], NHEADS(s, n), nt);
        size_t b = hp_kb_att_mm_scratch(s->d[1], n->a.i[0], nt);
        return a > b ? a : b;
    }
    return hp_k_attention_scratch(s->d[0], s->d[1], s->d[3], NHEADS(s, n), nt);
}

static void att_backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dqkv = grad_for(g, node, 0);
    if (dqkv < 0) return;
    const hp_node *n = &g->nodes[node];
    int in[3] = {gout[0], n->in[0], n->out[1]};
    emit_bwd(g, &hp_op_attention_bwd, node, in, 3, &dqkv, 1);
    gin[0] = dqkv;
}

static double att_flops(const hp_graph *g, const hp_node *n) {
    const hp_shape *s = in_shape(g, n, qkv_in(n));
    double B = (double)s->d[0], T = (double)s->d[1], C = (double)s->d[3];
    double f = 4.0 * B * T * T * C; /* q k^T and att v */
    return n->op == &hp_op_attention ? f : 2.0 * f;
}

const hp_opdef hp_op_attention = {
    .name = "attention", .nout = 2, .nograd_outs = 2, .infer = att_infer, .run = att_run,
    .backward = att_backward, .scratch = att_scratch, .flops = att_flops, .bytes = hp_ops_io_bytes,
    .bf16 = HP_PREC("b", "bf"), .prepare = att_prepare, .release = att_release, .uses_gemm = att_uses_gemm,
};

/* backward: in (dy, qkv, att) -> dqkv */
static void att_run_bwd(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    const hp_shape *s = &in[1].shape;
    const hp_kb_att_mm *mm = att_mm(k, n);
    if (mm) {
        hp_status st = kern_of(k)->kb_attention_mm_bwd(mm, k->pool, BF(out[0]), CBF(in[0]), CBF(in[1]), CF32(in[2]),
                                              k->scratch, s->d[0], s->d[1], s->d[3], NHEADS(s, n));
        if (st) *k->err = st;
        return;
    }
    if (is_bf16(&in[1])) {
        kern_of(k)->kb_attention_bwd(k->pool, BF(out[0]), CBF(in[0]), CBF(in[1]), CF32(in[2]), k->scratch, s->d[0], s->d[1],
                            s->d[3], NHEADS(s, n));
        return;
    }
    kern_of(k)->k_attention_bwd(k->pool, F32(out[0]), CF32(in[0]), CF32(in[1]), CF32(in[2]), k->scratch,
                       s->d[0], s->d[1], s->d[3], NHEADS(s, n));
}

const hp_opdef hp_op_attention_bwd = {
    .name = "attention_bwd", .nout = 1, .run = att_run_bwd, .scratch = att_scratch,
    .flops = att_flops, .bytes = hp_ops_io_bytes, .prepare = att_prepare, .release = att_release,
    .uses_gemm = att_uses_gemm,
};

/* ---- rope: qkv[B,T,3,C] -> qkv with q and k rotated ---- */
static hp_status rope_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    HP_TRY(check_qkv(g, n));
    const hp_shape *s = in_shape(g, n, 0);
    if (n->a.i[0] % 2) return SHAPE_ERR("rope: head size %lld must be even", (long long)n->a.i[0]);
    os[0] = *s;
    od[0] = HP_F32;
    return HP_OK;
}

static void rope_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    const hp_shape *s = &in[0].shape;
    kern_of(k)->k_rope_fwd(k->pool, F32(out[0]), CF32(in[0]), s->d[0], s->d[1], s->d[3], NHEADS(s, n),
                  (float)n->a.f[0]);
}

static void rope_backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dx = grad_for(g, node, 0);
    if (dx < 0) return;
    emit_bwd(g, &hp_op_rope_bwd, node, gout, 1, &dx, 1);
    gin[0] = dx;
}

static double rope_flops(const hp_graph *g, const hp_node *n) { return 2.0 * (double)in_numel(g, n, 0); }

const hp_opdef hp_op_rope = {
    .name = "rope", .nout = 1, .infer = rope_infer, .run = rope_run, .backward = rope_backward,
    .flops = rope_flops, .bytes = hp_ops_io_bytes,
};

static void rope_run_bwd(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    const hp_shape *s = &in[0].shape;
    kern_of(k)->k_rope_bwd(k->pool, F32(out[0]), CF32(in[0]), s->d[0], s->d[1], s->d[3], NHEADS(s, n),
                  (float)n->a.f[0]);
}

const hp_opdef hp_op_rope_bwd = {
    .name = "rope_bwd", .nout = 1, .run = rope_run_bwd, .flops = rope_flops, .bytes = hp_ops_io_bytes,
};
