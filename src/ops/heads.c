/* ops/heads: repeating attention heads (grouped-query attention: n_kv_heads
 * keys and values shared by groups of rep query heads).
 *   repeat_heads(x[..., Hkv * hs]) -> [..., Hkv * rep * hs]: head j * rep + k
 *     of the output is head j of the input (i[0] = hs, i[1] = rep), the
 *     grouping of Llama's repeat_kv (query head i reads kv head i / rep);
 *     a copy of rows (k_copy_rows), any dtype;
 *   repeat_heads_bwd(dy) -> dx: each kv head the sum of its copies'
 *     gradients (k_sum_heads; bf16: summed in fp32). */
#include "ops/ops.h"
#include "ops/ops_util.h"

static hp_status infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *x = in_shape(g, n, 0);
    int64_t hs = n->a.i[0], rep = n->a.i[1];
    char b1[64];
    if (hs < 1 || rep < 1 || last_dim(x) % hs)
        return SHAPE_ERR("repeat_heads: %s is not heads of size %lld (x %lld copies)", hp_shape_str(b1, sizeof b1, x),
                         (long long)hs, (long long)rep);
    os[0] = *x;
    os[0].d[x->ndim - 1] = last_dim(x) * rep;
    od[0] = g->vals[n->in[0]].dtype;
    return HP_OK;
}

static void run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long hs = (long)n->a.i[0], rep = (long)n->a.i[1], es = (long)hp_dtype_size(in[0].dtype);
    long heads = (long)(hp_shape_numel(&in[0].shape) / hs); /* rows x kv heads */
    for (long r = 0; r < rep; r++) /* copy r of every kv head */
        kern_of(k)->k_copy_rows(k->pool, (char *)out[0].data + r * hs * es, rep * hs * es, in[0].data, hs * es, heads,
                                hs * es);
}

static void backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dx = grad_for(g, node, 0);
    if (dx < 0) return;
    emit_bwd(g, &hp_op_repeat_heads_bwd, node, gout, 1, &dx, 1);
    gin[0] = dx;
}

const hp_opdef hp_op_repeat_heads = {
    .name = "repeat_heads", .nout = 1, .infer = infer, .run = run, .backward = backward, .bytes = hp_ops_io_bytes,
    .bf16 = HP_PREC("b", "b"),
};

/* in (dy[..., Hkv * rep * hs]) -> out (dx[..., Hkv * hs]) */
static void run_bwd(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long hs = (long)n->a.i[0], rep = (long)n->a.i[1], w = t_last(&out[0]);
    long rows = t_rows(&out[0]);
    if (is_bf16(&in[0])) kern_of(k)->kb_sum_heads(k->pool, BF(out[0]), CBF(in[0]), rows, w / hs, hs, rep);
    else kern_of(k)->k_sum_heads(k->pool, F32(out[0]), CF32(in[0]), rows, w / hs, hs, rep);
}

static double flops_bwd(const hp_graph *g, const hp_node *n) { return (double)in_numel(g, n, 0); }

const hp_opdef hp_op_repeat_heads_bwd = {
    .name = "repeat_heads_bwd", .nout = 1, .run = run_bwd, .flops = flops_bwd, .bytes = hp_ops_io_bytes,
};
