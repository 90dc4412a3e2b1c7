/* ops/cast: y = x converted to another dtype (fp32 <-> bf16, round to
 * nearest even when narrowing). The precision pass puts one before every
 * operator input whose dtype differs from what the operator computes in:
 * the bf16 copy of a parameter, or the fp32 input of an operator without a
 * bf16 kernel. Attribute i[0]: the output dtype. Its gradient is the output's
 * gradient, cast back where the two dtypes differ (a parameter's copy has an
 * fp32 gradient, so nothing is emitted for it). */
#include <stdio.h>

#include "kernels/bf16.h"
#include "ops/ops.h"
#include "ops/ops_util.h"

static hp_status cast_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    hp_dtype from = g->vals[n->in[0]].dtype, to = (hp_dtype)n->a.i[0];
    if ((from != HP_F32 && from != HP_BF16) || (to != HP_F32 && to != HP_BF16) || from == to)
        return SHAPE_ERR("cast of '%s' from %s to %s: only fp32 and bf16 convert, into each other", g->vals[n->in[0]].name,
                         hp_dtype_name(from), hp_dtype_name(to));
    os[0] = *in_shape(g, n, 0);
    od[0] = to;
    return HP_OK;
}

static void cast_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)n;
    long numel = (long)hp_shape_numel(&in[0].shape);
    if (is_bf16(&out[0]))
        kern_of(k)->kb_f32_to_bf16(k->pool, (uint16_t *)out[0].data, CF32(in[0]), numel);
    else
        kern_of(k)->kb_bf16_to_f32(k->pool, F32(out[0]), (const uint16_t *)in[0].data, numel);
}

static void cast_backward(hp_graph *g, int node, const int *gout, int *gin) {
    int x = g->nodes[node].in[0];
    hp_dtype want = hp_grad_dtype(g, x);
    if (g->vals[gout[0]].dtype == want) {
        gin[0] = gout[0];
        return;
    }
    int dx = hp_grad_value(g, x);
    if (dx < 0) return;
    hp_attrs a = {.i = {want}};
    hp_graph_node_into(g, &hp_op_cast, gout, 1, &dx, 1, &a, HP_PHASE_BWD, node);
    gin[0] = dx;
}

static double cast_flops(const hp_graph *g, const hp_node *n) { return (double)in_numel(g, n, 0); }

const hp_opdef hp_op_cast = {
    .name = "cast", .nout = 1, .infer = cast_infer, .run = cast_run, .backward = cast_backward,
    .flops = cast_flops, .bytes = hp_ops_io_bytes,
};

int hp_op_is_cast(const hp_opdef *op) { return op == &hp_op_cast; }
