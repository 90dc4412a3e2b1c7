/* ops/loss_fused: the LM head and the mean softmax cross-entropy in one
 * operator that never stores the logits whole (the compile's loss-chunk
 * pass, parallel/loss_chunk, makes it from a bias-free linear feeding a
 * cross-entropy). The vocabulary is taken a chunk of columns at a time: the
 * forward makes each chunk's logits [rows, w], folds them into every row's
 * running softmax statistics and keeps only the rows' log-sum-exp; the
 * backward makes each chunk's logits again, turns them into their gradient
 * in place, and from it the chunk's rows of the weight's gradient and its
 * part of the input's. Memory: one chunk and one input-sized buffer
 * (scratch) instead of the logits, their probabilities and their gradient;
 * time: the head's forward product once more in the backward.
 * Attributes: i[0] = V (real vocabulary), i[1] = divisor (the global number
 * of positions: a rank holding some rows computes its share of the mean, as
 * ops/loss), i[2] = w (columns per chunk). fp32 only (under bf16 the
 * precision pass casts its input). */
#include <string.h>

#include "ops/ops.h"
#include "ops/ops_util.h"

/* in (x[..., C], W[Vp, C], targets[...] i32) -> out (loss[1], lse[...], losses[...]) */
static hp_status infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *x = in_shape(g, n, 0), *w = in_shape(g, n, 1);
    const hp_value *t = &g->vals[n->in[2]];
    char b1[64], b2[64];
    if (w->ndim != 2 || w->d[1] != last_dim(x))
        return SHAPE_ERR("fused head and loss: weight %s does not match input %s (expected [Vp, %lld])",
                         hp_shape_str(b1, sizeof b1, w), hp_shape_str(b2, sizeof b2, x), (long long)last_dim(x));
    if (t->dtype != HP_I32) return SHAPE_ERR("fused head and loss: targets '%s' must be i32", t->name);
    if (hp_shape_numel(&t->shape) != rows_of(x))
        return SHAPE_ERR("fused head and loss: targets %s do not match input %s",
                         hp_shape_str(b1, sizeof b1, &t->shape), hp_shape_str(b2, sizeof b2, x));
    if (n->a.i[0] < 1 || n->a.i[0] > w->d[0])
        return SHAPE_ERR("fused head and loss: vocabulary %lld not in 1..%lld (padded size)", (long long)n->a.i[0],
                         (long long)w->d[0]);
    if (n->a.i[2] < 1) return SHAPE_ERR("fused head and loss: %lld columns per chunk", (long long)n->a.i[2]);
    os[0] = hp_shape1(1);
    os[1] = os[2] = t->shape;
    od[0] = od[1] = od[2] = HP_F32;
    return HP_OK;
}

static float share(const hp_node *n, long rows) {
    return n->a.i[1] > 0 ? (float)((double)rows / (double)n->a.i[1]) : 1.0f;
}

static long chunk_cols(const hp_node *n) { return n->a.i[2] < n->a.i[0] ? (long)n->a.i[2] : (long)n->a.i[0]; }

/* scratch: forward, a chunk [rows, w] and the statistics [rows, 3]; backward, a chunk and an input-sized
 * buffer [rows, C] (the input's gradient part of each chunk after the first) */
static size_t scratch(const hp_graph *g, const hp_node *n, int nt) {
    (void)nt;
    int fwd = n->op == &hp_op_linear_xent;
    const hp_shape *x = &g->vals[n->in[fwd ? 0 : 1]].shape;
    size_t rows = (size_t)rows_of(x), w = (size_t)chunk_cols(n);
    return rows * w + (fwd ? 3 * rows : rows * (size_t)last_dim(x));
}

static void run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long N = t_rows(&in[0]), C = t_last(&in[0]), V = (long)n->a.i[0], w = chunk_cols(n);
    const hp_kbackend *kb = kern_of(k);
    float *chunk = k->scratch, *stats = chunk + (size_t)N * (size_t)w;
    const float *W = CF32(in[1]);
    for (long v0 = 0; v0 < V; v0 += w) {
        long cw = V - v0 < w ? V - v0 : w;
        kb->k_matmul_fwd(k->pool, chunk, CF32(in[0]), W + (size_t)v0 * (size_t)C, NULL, N, C, cw);
        kb->k_xent_chunk_stats(k->pool, stats, chunk, I32(in[2]), N, cw, v0, v0 == 0);
    }
    kb->k_xent_chunk_finish(F32(out[1]), F32(out[2]), F32(out[0]), stats, N);
    float s = share(n, N);
    if (s != 1.0f) F32(out[0])[0] *= s;
}

static void backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dx = grad_for(g, node, 0), dw = grad_for(g, node, 1);
    if (dx < 0 && dw < 0) return;
    const hp_node *n = &g->nodes[node];
    int in[5] = {gout[0], n->in[0], n->in[1], n->in[2], n->out[1]};
    int out[2] = {dx, dw};
    emit_bwd(g, &hp_op_linear_xent_bwd, node, in, 5, out, 2);
    gin[0] = dx;
    gin[1] = dw;
}

/* the head's product, the softmax's few passes */
static double flops(const hp_graph *g, const hp_node *n) {
    double rows = (double)rows_of(in_shape(g, n, 0)), C = (double)last_dim(in_shape(g, n, 0));
    return rows * (double)n->a.i[0] * (2.0 * C + 5.0);
}

const hp_opdef hp_op_linear_xent = {
    .name = "linear_cross_entropy", .nout = 3, .nograd_outs = 6, .infer = infer, .run = run,
    .backward = backward, .scratch = scratch, .flops = flops, .bytes = hp_ops_io_bytes,
};

/* backward: in (dloss[1], x, W, targets, lse) -> out (dx, dW), either may be -1 */
static void run_bwd(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long N = t_rows(&in[1]), C = t_last(&in[1]), V = (long)n->a.i[0], w = chunk_cols(n);
    long Vp = t_rows(&in[2]);
    const hp_kbackend *kb = kern_of(k);
    float *chunk = k->scratch, *part = chunk + (size_t)N * (size_t)w;
    float *dx = n->out[0] >= 0 ? F32(out[0]) : NULL, *dW = n->out[1] >= 0 ? F32(out[1]) : NULL;
    const float *x = CF32(in[1]), *W = CF32(in[2]);
    float scale = N > 0 ? CF32(in[0])[0] * share(n, N) / (float)N : 0.0f;
    for (long v0 = 0; v0 < V; v0 += w) {
        long cw = V - v0 < w ? V - v0 : w;
        const float *Wc = W + (size_t)v0 * (size_t)C;
        kb->k_matmul_fwd(k->pool, chunk, x, Wc, NULL, N, C, cw);
        kb->k_xent_chunk_grad(k->pool, chunk, chunk, CF32(in[4]), I32(in[3]), scale, N, cw, v0);
        float *d = dx && v0 > 0 ? part : dx;
        kb->k_matmul_bwd(k->pool, d, dW ? dW + (size_t)v0 * (size_t)C : NULL, NULL, chunk, x, Wc, N, C, cw);
        if (dx && v0 > 0) kb->k_add(k->pool, dx, dx, part, N * C);
    }
    if (dx && V == 0) memset(dx, 0, sizeof(float) * (size_t)N * (size_t)C);
    if (dW && Vp > V) memset(dW + (size_t)V * (size_t)C, 0, sizeof(float) * (size_t)(Vp - V) * (size_t)C);
}

static double flops_bwd(const hp_graph *g, const hp_node *n) {
    double rows = (double)rows_of(in_shape(g, n, 1)), C = (double)last_dim(in_shape(g, n, 1));
    return rows * (double)n->a.i[0] * (2.0 * C * (1 + (n->out[0] >= 0) + (n->out[1] >= 0)) + 3.0);
}

const hp_opdef hp_op_linear_xent_bwd = {
    .name = "linear_cross_entropy_bwd", .nout = 2, .run = run_bwd, .scratch = scratch, .flops = flops_bwd,
    .bytes = hp_ops_io_bytes,
};
