/* ops/loss: mean softmax cross-entropy over a padded vocabulary.
 * Attributes: i[0] = V (real vocabulary), i[1] = divisor (the global number of
 * positions). A rank holding only some rows computes its share of the global
 * mean (sum of its losses / divisor), so the ranks' losses and gradients add
 * up exactly (the loss is Partial(sum) over a batch-sharded axis). bf16:
 * logits and their gradient bf16; probabilities, losses and the mean fp32. */
#include <stdio.h>

#include "kernels/bf16.h"
#include "ops/ops.h"
#include "ops/ops_util.h"

/* in (logits[..., Vp], targets[...] i32) -> out (loss[1], probs[..., Vp], losses[...]) */
static hp_status infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *l = in_shape(g, n, 0);
    const hp_value *t = &g->vals[n->in[1]];
    char b1[64], b2[64];
    if (t->dtype != HP_I32) return SHAPE_ERR("cross-entropy targets '%s' must be i32", t->name);
    if (hp_shape_numel(&t->shape) != rows_of(l))
        return SHAPE_ERR("cross-entropy targets %s do not match logits %s",
                         hp_shape_str(b1, sizeof b1, &t->shape), hp_shape_str(b2, sizeof b2, l));
    if (n->a.i[0] < 1 || n->a.i[0] > last_dim(l))
        return SHAPE_ERR("cross-entropy vocabulary %lld not in 1..%lld (padded size)",
                         (long long)n->a.i[0], (long long)last_dim(l));
    os[0] = hp_shape1(1);
    os[1] = *l;
    os[2] = t->shape;
    od[0] = od[1] = od[2] = HP_F32;
    return HP_OK;
}

/* local rows / global divisor: 1 on a single rank */
static float share(const hp_node *n, long rows) {
    return n->a.i[1] > 0 ? (float)((double)rows / (double)n->a.i[1]) : 1.0f;
}

static void run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long rows = t_rows(&in[0]);
    if (is_bf16(&in[0]))
        kern_of(k)->kb_xent_fwd(k->pool, F32(out[1]), F32(out[2]), F32(out[0]), CBF(in[0]), I32(in[1]), k->scratch, rows,
                       (long)n->a.i[0], t_last(&in[0]));
    else
        kern_of(k)->k_xent_fwd(k->pool, F32(out[1]), F32(out[2]), F32(out[0]), CF32(in[0]), I32(in[1]), rows,
                      (long)n->a.i[0], t_last(&in[0]));
    float s = share(n, rows);
    if (s != 1.0f) F32(out[0])[0] *= s;
}

static void backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dl = grad_for(g, node, 0);
    if (dl < 0) return;
    const hp_node *n = &g->nodes[node];
    int in[3] = {gout[0], n->out[1], n->in[1]};
    emit_bwd(g, &hp_op_xent_bwd, node, in, 3, &dl, 1);
    gin[0] = dl;
}

/* bf16 only: a row of Vp floats per thread (forward: logits input 0; backward: dlogits output 0) */
static size_t scratch(const hp_graph *g, const hp_node *n, int nt) {
    int v = n->op == &hp_op_xent ? n->in[0] : n->out[0];
    return g->vals[v].dtype == HP_BF16 ? hp_kb_xent_scratch(last_dim(&g->vals[v].shape), nt) : 0;
}

static double flops(const hp_graph *g, const hp_node *n) { return 5.0 * (double)in_numel(g, n, 0); }

const hp_opdef hp_op_xent = {
    .name = "cross_entropy", .nout = 3, .nograd_outs = 6, .infer = infer, .run = run,
    .backward = backward, .scratch = scratch, .flops = flops, .bytes = hp_ops_io_bytes, .bf16 = HP_PREC("b-", "fff"),
};

/* backward: in (dloss[1], probs, targets) -> dlogits */
static void run_bwd(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long rows = t_rows(&in[1]);
    float dloss = CF32(in[0])[0] * share(n, rows);
    if (is_bf16(&out[0]))
        kern_of(k)->kb_xent_bwd(k->pool, BF(out[0]), CF32(in[1]), I32(in[2]), dloss, k->scratch, rows, (long)n->a.i[0],
                       t_last(&in[1]));
    else
        kern_of(k)->k_xent_bwd(k->pool, F32(out[0]), CF32(in[1]), I32(in[2]), dloss, rows, (long)n->a.i[0], t_last(&in[1]));
}

static double flops_bwd(const hp_graph *g, const hp_node *n) { return 2.0 * (double)in_numel(g, n, 1); }

const hp_opdef hp_op_xent_bwd = {
    .name = "cross_entropy_bwd", .nout = 1, .run = run_bwd, .scratch = scratch, .flops = flops_bwd,
    .bytes = hp_ops_io_bytes,
};

int hp_op_is_xent(const hp_opdef *op) { return op == &hp_op_xent; }
