/* parallel/lower_rules: the registry of local lowerings (see the header). */
#include "parallel/lower_rules.h"

#include <stdio.h>
#include <string.h>

#include "ops/ops.h"
#include "parallel/ep.h"
#include "parallel/rank.h"

int hp_lower_shard_axis(const hp_layout *l, int dim) {
    for (int a = 0; a < l->ndim; a++)
        if (l->p[a].kind == HP_SHARD && l->p[a].dim == dim) return a;
    return -1;
}

int64_t hp_lower_offset(const hp_lower_ctx *c, const hp_layout *l, int v, int dim) {
    hp_shape local;
    int64_t off[HP_MAX_DIMS] = {0};
    hp_local_shape(&local, off, &c->g->vals[v].shape, l, c->m, c->rank);
    return off[dim];
}

int hp_lower_emit(hp_lower_ctx *c, const hp_opdef *op, const int *in, int nin, const int *out, int nout,
                  const hp_attrs *a) {
    const hp_node *gn = &c->g->nodes[c->node];
    int node = hp_graph_node_into(c->local, op, in, nin, out, nout, a, gn->phase, -1);
    if (node >= 0) {
        memcpy(c->local->nodes[node].name, gn->name, HP_NAME_LEN);
        (*c->emitted)++;
    }
    return node;
}

/* ---- embedding: a rank holding some table rows looks up only those ---- */

static int lower_embedding_as(hp_lower_ctx *c, const hp_layout *table, int table_value, const hp_opdef *op) {
    if (hp_lower_shard_axis(table, 0) < 0) return 0;
    const hp_node *gn = &c->g->nodes[c->node];
    hp_attrs a = gn->a;
    a.i[0] = hp_lower_offset(c, table, table_value, 0);
    hp_lower_emit(c, op, c->in, gn->nin, c->out, gn->nout, &a);
    return 1;
}

static int lower_embedding(hp_lower_ctx *c) {
    const hp_node *gn = &c->g->nodes[c->node];
    return lower_embedding_as(c, &c->prop->need[c->node][1], gn->in[1], &hp_op_embedding_vp);
}

static int lower_embedding_bwd(hp_lower_ctx *c) {
    const hp_node *gn = &c->g->nodes[c->node];
    return lower_embedding_as(c, &c->prop->val[gn->out[0]], gn->out[0], &hp_op_embedding_vp_bwd);
}

static int lower_embedding_bwd_acc(hp_lower_ctx *c) {
    const hp_node *gn = &c->g->nodes[c->node];
    return lower_embedding_as(c, &c->prop->val[gn->out[0]], gn->out[0], &hp_op_embedding_vp_bwd_acc);
}

/* ---- grad_rows: the rank keeps the rows; the rows pass (parallel/grad_rows)
 * adds them after the gradient's reduction, so the local node reads only the
 * rows and their indices, not the gradient ---- */
static int lower_grad_rows(hp_lower_ctx *c) {
    const hp_node *gn = &c->g->nodes[c->node];
    hp_lower_emit(c, gn->op, c->in, 2, NULL, 0, &gn->a);
    return 1;
}

/* ---- cross-entropy over vocabulary-sharded logits: local statistics, one
 * all-gather of them along the vocabulary axis, the local finish ---- */

static int lower_xent(hp_lower_ctx *c) {
    const hp_graph *g = c->g;
    const hp_node *gn = &g->nodes[c->node];
    const hp_layout *ll = &c->prop->need[c->node][0];
    int logits = gn->in[0];
    int last = g->vals[logits].shape.ndim - 1;
    int axis = hp_lower_shard_axis(ll, last);
    if (axis < 0) return 0;
    int64_t begin = hp_lower_offset(c, ll, logits, last);
    const hp_shape *ls = &c->local->vals[c->in[0]].shape;
    int64_t rows = hp_shape_numel(ls) / ls->d[ls->ndim - 1];
    char nm[HP_NAME_LEN];
    snprintf(nm, sizeof nm, "%.70s.stats", gn->name);
    int stats = hp_graph_value(c->local, HP_V_ACT, HP_F32, hp_shape2(3, rows), nm);
    snprintf(nm, sizeof nm, "%.70s.gathered", gn->name);
    int gathered = hp_graph_value(c->local, HP_V_ACT, HP_F32, hp_shape3(c->m->size[axis], 3, rows), nm);
    if (stats < 0 || gathered < 0) return 1;
    hp_attrs a;
    memset(&a, 0, sizeof a);
    a.i[0] = begin;
    a.i[1] = gn->a.i[0];
    a.i[2] = gn->a.i[1];
    int sin[2] = {c->in[0], c->in[1]};
    hp_lower_emit(c, &hp_op_xent_vp_stats, sin, 2, &stats, 1, &a);
    hp_attrs ga;
    memset(&ga, 0, sizeof ga);
    ga.i[0] = axis;
    hp_lower_emit(c, &hp_op_mesh_all_gather, &stats, 1, &gathered, 1, &ga);
    int fin[2] = {c->in[0], gathered};
    hp_lower_emit(c, &hp_op_xent_vp_finish, fin, 2, c->out, 3, &a);
    return 1;
}

static int lower_xent_bwd(hp_lower_ctx *c) {
    const hp_graph *g = c->g;
    const hp_node *gn = &g->nodes[c->node];
    const hp_layout *need = c->prop->need[c->node];
    int probs = gn->in[1], last = g->vals[probs].shape.ndim - 1;
    if (hp_lower_shard_axis(&need[1], last) < 0) return 0;
    hp_attrs va;
    memset(&va, 0, sizeof va);
    va.i[0] = hp_lower_offset(c, &need[1], probs, last);
    va.i[1] = gn->a.i[0];
    va.i[2] = gn->a.i[1];
    hp_lower_emit(c, &hp_op_xent_vp_bwd, c->in, gn->nin, c->out, gn->nout, &va);
    return 1;
}

/* ---- expert parallelism: the exchange's communicating forms (parallel/ep_ops), and each grouped GEMM over
 * its member's experts (the first one's id, so the kernel finds its rows' experts in the local stack) ---- */

static int lower_ep_as(hp_lower_ctx *c, const hp_opdef *local) {
    const hp_node *gn = &c->g->nodes[c->node];
    hp_lower_emit(c, local, c->in, gn->nin, c->out, gn->nout, &gn->a);
    return 1;
}

static int lower_ep_send(hp_lower_ctx *c) { return lower_ep_as(c, &hp_op_ep_send); }
static int lower_ep_return(hp_lower_ctx *c) { return lower_ep_as(c, &hp_op_ep_return); }
static int lower_ep_resend(hp_lower_ctx *c) { return lower_ep_as(c, &hp_op_ep_resend); }

static int lower_grouped_at(hp_lower_ctx *c, int w) {
    const hp_node *gn = &c->g->nodes[c->node];
    const hp_layout *wl = &c->prop->need[c->node][w];
    if (hp_lower_shard_axis(wl, 0) < 0) return 0;
    hp_attrs a = gn->a;
    a.i[HP_GROUPED_E0] = hp_lower_offset(c, wl, gn->in[w], 0);
    hp_lower_emit(c, gn->op, c->in, gn->nin, c->out, gn->nout, &a);
    return 1;
}

static int lower_grouped(hp_lower_ctx *c) { return lower_grouped_at(c, 1); }
static int lower_grouped_bwd(hp_lower_ctx *c) { return lower_grouped_at(c, 2); }

/* ---- the balancing loss per part (the deterministic mode): statistics partial over N ranks, each rank's
 * loss from its own with its own token count, weighted 1/N ---- */

static int lower_aux_at(hp_lower_ctx *c, int stats) {
    const hp_node *gn = &c->g->nodes[c->node];
    const hp_layout *l = &c->prop->need[c->node][stats];
    int parts = 1;
    for (int a = 0; a < l->ndim; a++)
        if (l->p[a].kind == HP_PARTIAL) parts *= c->m->size[a];
    if (parts <= 1) return 0;
    hp_attrs a = gn->a;
    a.i[0] = gn->a.i[0] / parts;
    a.f[1] = 1.0 / parts;
    hp_lower_emit(c, gn->op, c->in, gn->nin, c->out, gn->nout, &a);
    return 1;
}

static int lower_aux(hp_lower_ctx *c) { return lower_aux_at(c, 0); }
static int lower_aux_bwd(hp_lower_ctx *c) { return lower_aux_at(c, 1); }

static const struct {
    const hp_opdef *op;
    hp_lower_fn fn;
} registry[] = {
    {&hp_op_moe_aux, lower_aux},
    {&hp_op_moe_aux_bwd, lower_aux_bwd},
    {&hp_op_moe_ep_send, lower_ep_send},
    {&hp_op_moe_ep_return, lower_ep_return},
    {&hp_op_moe_ep_resend, lower_ep_resend},
    {&hp_op_grouped_linear, lower_grouped},
    {&hp_op_grouped_linear_bwd, lower_grouped_bwd},
    {&hp_op_embedding, lower_embedding},
    {&hp_op_embedding_bwd, lower_embedding_bwd},
    {&hp_op_embedding_bwd_acc, lower_embedding_bwd_acc},
    {&hp_op_grad_rows, lower_grad_rows},
    {&hp_op_xent, lower_xent},
    {&hp_op_xent_bwd, lower_xent_bwd},
};

hp_lower_fn hp_lower_rule_of(const hp_opdef *op) {
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (registry[i].op == op) return registry[i].fn;
    return NULL;
}
