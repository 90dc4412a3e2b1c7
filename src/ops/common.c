/* ops/common: cost helpers and the table of all operators. */
#include "ops/ops.h"
#include "ops/ops_util.h"

double hp_ops_io_bytes(const hp_graph *g, const hp_node *n) {
    double b = 0;
    for (int k = 0; k < n->nin; k++)
        b += (double)hp_dtype_size(g->vals[n->in[k]].dtype) * (double)hp_val_numel(g, n->in[k]);
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] >= 0) b += (double)hp_dtype_size(g->vals[n->out[k]].dtype) * (double)hp_val_numel(g, n->out[k]);
    return b;
}

static const hp_opdef *const all_ops[] = {
    &hp_op_embedding, &hp_op_embedding_bwd, &hp_op_add_pos,  &hp_op_add_pos_bwd,
    &hp_op_linear,    &hp_op_linear_bwd,    &hp_op_layernorm, &hp_op_layernorm_bwd,
    &hp_op_rmsnorm,   &hp_op_rmsnorm_bwd,   &hp_op_gelu,     &hp_op_gelu_bwd,
    &hp_op_add,       &hp_op_swiglu,        &hp_op_swiglu_bwd, &hp_op_attention,
    &hp_op_attention_bwd, &hp_op_rope,      &hp_op_rope_bwd, &hp_op_xent,
    &hp_op_xent_bwd,  &hp_op_embedding_bwd_acc, &hp_op_embedding_vp, &hp_op_embedding_vp_bwd, &hp_op_embedding_vp_bwd_acc, &hp_op_xent_vp_stats,
    &hp_op_xent_vp_finish, &hp_op_xent_vp_bwd, &hp_op_cast, &hp_op_concat, &hp_op_concat_bwd, &hp_op_pos_table,
    &hp_op_linear_xent, &hp_op_linear_xent_bwd, &hp_op_repeat_heads, &hp_op_repeat_heads_bwd,
    &hp_op_moe_route, &hp_op_moe_route_bwd, &hp_op_moe_aux, &hp_op_moe_aux_bwd, &hp_op_moe_dispatch,
    &hp_op_moe_dispatch_bwd, &hp_op_grouped_linear, &hp_op_grouped_linear_bwd, &hp_op_moe_combine,
    &hp_op_moe_combine_bwd, &hp_op_moe_ep_send, &hp_op_moe_ep_return, &hp_op_moe_ep_resend,
};

const hp_opdef *const *hp_ops_all(int *count) {
    *count = (int)(sizeof all_ops / sizeof all_ops[0]);
    return all_ops;
}

/* ---- builders ---- */
static int node1(hp_graph *g, const hp_opdef *op, const int *in, int nin, const hp_attrs *a) {
    return hp_graph_node(g, NULL, op, in, nin, a);
}

int hp_linear(hp_graph *g, int x, int w, int b) {
    int in[3] = {x, w, b};
    return node1(g, &hp_op_linear, in, b >= 0 ? 3 : 2, NULL);
}

int hp_layernorm(hp_graph *g, int x, int w, int b, float eps) {
    hp_attrs a = {.f = {eps}};
    int in[3] = {x, w, b};
    return node1(g, &hp_op_layernorm, in, 3, &a);
}

int hp_rmsnorm(hp_graph *g, int x, int w, float eps) {
    hp_attrs a = {.f = {eps}};
    int in[2] = {x, w};
    return node1(g, &hp_op_rmsnorm, in, 2, &a);
}

int hp_gelu(hp_graph *g, int x) { return node1(g, &hp_op_gelu, &x, 1, NULL); }

int hp_add(hp_graph *g, int a, int b) {
    int in[2] = {a, b};
    return node1(g, &hp_op_add, in, 2, NULL);
}

int hp_swiglu(hp_graph *g, int x) { return node1(g, &hp_op_swiglu, &x, 1, NULL); }

int hp_embedding(hp_graph *g, int ids, int table) {
    int in[2] = {ids, table};
    return node1(g, &hp_op_embedding, in, 2, NULL);
}

int hp_add_pos(hp_graph *g, int x, int pos) {
    int in[2] = {x, pos};
    return node1(g, &hp_op_add_pos, in, 2, NULL);
}

/* The attribute is the head size (C / nh), so sharded heads need no rewrite. */
static int64_t head_size(hp_graph *g, int qkv, int nh) {
    if (qkv < 0 || nh < 1) return 0;
    const hp_shape *s = &g->vals[qkv].shape;
    return s->d[s->ndim - 1] % nh ? 0 : s->d[s->ndim - 1] / nh;
}

int hp_attention(hp_graph *g, int qkv, int nh) {
    hp_attrs a = {.i = {head_size(g, qkv, nh)}};
    return node1(g, &hp_op_attention, &qkv, 1, &a);
}

int hp_rope(hp_graph *g, int qkv, int nh, float theta) {
    hp_attrs a = {.i = {head_size(g, qkv, nh)}, .f = {theta}};
    return node1(g, &hp_op_rope, &qkv, 1, &a);
}

int hp_moe(hp_graph *g, int *aux, int x, int router, int gate_up, int down, int top_k, int flags,
           double capacity_factor, double aux_coef, double z_coef) {
    if (aux) *aux = -1;
    if (hp_graph_status(g)) return -1;
    if (router < 0 || router >= g->nvals || x < 0 || x >= g->nvals) {
        hp_graph_fail(g, hp_errorf("hp_moe: x or the router's weight is not a value of the graph"));
        return -1;
    }
    const hp_shape *xs = &g->vals[x].shape;
    int64_t tokens = hp_shape_numel(xs) / xs->d[xs->ndim - 1];
    hp_attrs ra = {.i = {top_k, (flags & HP_MOE_SIGMOID) != 0, (flags & HP_MOE_RENORM) != 0, tokens},
                   .f = {capacity_factor, z_coef}};
    int rin[2] = {x, router}, rout[HP_MAX_OUT];
    if (hp_graph_node(g, rout, &hp_op_moe_route, rin, 2, &ra) < 0) return -1;
    hp_attrs da = {.i = {g->vals[router].shape.d[0]}};
    int din[2] = {x, rout[1]}, dout[HP_MAX_OUT];
    if (hp_graph_node(g, dout, &hp_op_moe_dispatch, din, 2, &da) < 0) return -1;
    hp_attrs none = {{0}, {0}};
    int gin[3] = {dout[0], gate_up, dout[1]};
    int h = node1(g, &hp_op_grouped_linear, gin, 3, &none); /* [N k, 2, F] */
    int din2[3] = {hp_swiglu(g, h), down, dout[1]};
    int yp = node1(g, &hp_op_grouped_linear, din2, 3, &none); /* [N k, C] */
    int cin[3] = {yp, rout[0], dout[2]};
    int y = node1(g, &hp_op_moe_combine, cin, 3, &none);
    hp_attrs aa = {.i = {tokens, top_k}, .f = {aux_coef}};
    int aout[HP_MAX_OUT];
    int a = hp_graph_node(g, aout, &hp_op_moe_aux, &rout[2], 1, &aa) < 0 ? -1 : aout[0];
    if (a >= 0) g->vals[aout[1]].persistent = 1; /* read after the step (the metrics) */
    if (aux && a >= 0) *aux = hp_add(g, a, rout[3]);
    return y;
}

int hp_repeat_heads(hp_graph *g, int x, int head_size, int copies) {
    hp_attrs a = {.i = {head_size, copies}};
    return node1(g, &hp_op_repeat_heads, &x, 1, &a);
}

int hp_xent(hp_graph *g, int logits, int targets, int V, int *per_position) {
    int64_t rows = 0;
    if (logits >= 0 && logits < g->nvals) {
        const hp_shape *s = &g->vals[logits].shape;
        rows = hp_shape_numel(s) / s->d[s->ndim - 1];
    }
    hp_attrs a = {.i = {V, rows}};
    int in[2] = {logits, targets}, out[HP_MAX_OUT];
    int loss = hp_graph_node(g, out, &hp_op_xent, in, 2, &a);
    if (loss >= 0 && per_position) *per_position = out[2];
    return loss;
}
