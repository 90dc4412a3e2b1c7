/* ops/vocab_parallel: local operators of the vocabulary-parallel embedding
 * and cross-entropy. They only appear in per-rank programs (the compile pass
 * puts them there), so they have no shape rule or backward rule. Attributes:
 * i[0] = first global row/column this rank holds, i[1] = V (real vocabulary),
 * i[2] = divisor (global number of positions). bf16 tables, logits and their
 * gradients take the kernels' bf16 forms (fp32 statistics and probabilities). */
#include "kernels/vocab_parallel.h"
#include "ops/ops.h"
#include "ops/ops_util.h"

/* (ids, table_local) -> out */
static void emb_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    if (is_bf16(&in[1])) {
        kern_of(k)->kb_embedding_vp_fwd(k->pool, BF(out[0]), I32(in[0]), CBF(in[1]), (long)hp_shape_numel(&in[0].shape),
                               in[1].shape.d[1], (long)n->a.i[0], in[1].shape.d[0]);
        return;
    }
    kern_of(k)->k_embedding_vp_fwd(k->pool, F32(out[0]), I32(in[0]), CF32(in[1]), (long)hp_shape_numel(&in[0].shape),
                          in[1].shape.d[1], (long)n->a.i[0], in[1].shape.d[0]);
}
const hp_opdef hp_op_embedding_vp = {.name = "embedding_vp", .nout = 1, .run = emb_run, .bytes = hp_ops_io_bytes};

/* (dy, ids) -> dtable_local */
static void emb_bwd_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    if (is_bf16(&in[0])) {
        kern_of(k)->kb_embedding_vp_bwd(k->pool, F32(out[0]), NULL, CBF(in[0]), I32(in[1]), (long)hp_shape_numel(&in[1].shape),
                               out[0].shape.d[1], (long)n->a.i[0], out[0].shape.d[0]);
        return;
    }
    kern_of(k)->k_embedding_vp_bwd(k->pool, F32(out[0]), CF32(in[0]), I32(in[1]), (long)hp_shape_numel(&in[1].shape),
                          out[0].shape.d[1], (long)n->a.i[0], out[0].shape.d[0]);
}
const hp_opdef hp_op_embedding_vp_bwd = {.name = "embedding_vp_bwd", .nout = 1, .run = emb_bwd_run,
                                         .bytes = hp_ops_io_bytes};

/* (dy, ids, dsofar_local) -> dtable_local = dsofar + own rows of dy */
static void emb_bwd_acc_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    if (is_bf16(&in[0])) {
        kern_of(k)->kb_embedding_vp_bwd(k->pool, F32(out[0]), CF32(in[2]), CBF(in[0]), I32(in[1]),
                               (long)hp_shape_numel(&in[1].shape), out[0].shape.d[1], (long)n->a.i[0],
                               out[0].shape.d[0]);
        return;
    }
    kern_of(k)->k_embedding_vp_bwd_acc(k->pool, F32(out[0]), CF32(in[2]), CF32(in[0]), I32(in[1]),
                              (long)hp_shape_numel(&in[1].shape), out[0].shape.d[1], (long)n->a.i[0],
                              out[0].shape.d[0]);
}
static int vp_grad_rows(const hp_node *n, int *rows, int *ids, int *sofar) {
    *rows = n->in[0], *ids = n->in[1], *sofar = n->in[2];
    return 1;
}
const hp_opdef hp_op_embedding_vp_bwd_acc = {.name = "embedding_vp_bwd_acc", .nout = 1, .run = emb_bwd_acc_run,
                                             .bytes = hp_ops_io_bytes, .grad_rows = vp_grad_rows,
                                             .fresh = &hp_op_embedding_vp_bwd};

/* (logits_local, targets) -> stats[3, rows] */
static void stats_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    if (is_bf16(&in[0])) {
        kern_of(k)->kb_xent_vp_stats(k->pool, F32(out[0]), CBF(in[0]), I32(in[1]), t_rows(&in[0]), t_last(&in[0]),
                            (long)n->a.i[0], (long)n->a.i[1]);
        return;
    }
    kern_of(k)->k_xent_vp_stats(k->pool, F32(out[0]), CF32(in[0]), I32(in[1]), t_rows(&in[0]), t_last(&in[0]),
                       (long)n->a.i[0], (long)n->a.i[1]);
}
const hp_opdef hp_op_xent_vp_stats = {.name = "cross_entropy_vp_stats", .nout = 1, .run = stats_run,
                                      .bytes = hp_ops_io_bytes};

/* (logits_local, gathered[k, 3, rows]) -> (loss[1], probs_local, losses) */
static void finish_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    if (is_bf16(&in[0])) {
        kern_of(k)->kb_xent_vp_finish(k->pool, F32(out[1]), F32(out[2]), F32(out[0]), CBF(in[0]), CF32(in[1]),
                             in[1].shape.d[0], t_rows(&in[0]), t_last(&in[0]), (long)n->a.i[0], (long)n->a.i[1],
                             (long)n->a.i[2]);
        return;
    }
    kern_of(k)->k_xent_vp_finish(k->pool, F32(out[1]), F32(out[2]), F32(out[0]), CF32(in[0]), CF32(in[1]),
                        in[1].shape.d[0], t_rows(&in[0]), t_last(&in[0]), (long)n->a.i[0], (long)n->a.i[1],
                        (long)n->a.i[2]);
}
const hp_opdef hp_op_xent_vp_finish = {.name = "cross_entropy_vp", .nout = 3, .run = finish_run,
                                       .bytes = hp_ops_io_bytes};

/* (dloss[1], probs_local, targets) -> dlogits_local */
static void bwd_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    if (is_bf16(&out[0])) {
        kern_of(k)->kb_xent_vp_bwd(k->pool, BF(out[0]), CF32(in[1]), I32(in[2]), CF32(in[0])[0], k->scratch, t_rows(&in[1]),
                          t_last(&in[1]), (long)n->a.i[0], (long)n->a.i[1], (long)n->a.i[2]);
        return;
    }
    kern_of(k)->k_xent_vp_bwd(k->pool, F32(out[0]), CF32(in[1]), I32(in[2]), CF32(in[0])[0], t_rows(&in[1]),
                     t_last(&in[1]), (long)n->a.i[0], (long)n->a.i[1], (long)n->a.i[2]);
}
static size_t bwd_scratch(const hp_graph *g, const hp_node *n, int nt) {
    const hp_value *d = &g->vals[n->out[0]];
    return d->dtype == HP_BF16 ? hp_kb_xent_vp_bwd_scratch(last_dim(&d->shape), nt) : 0;
}
const hp_opdef hp_op_xent_vp_bwd = {.name = "cross_entropy_vp_bwd", .nout = 1, .run = bwd_run,
                                    .scratch = bwd_scratch, .bytes = hp_ops_io_bytes};
