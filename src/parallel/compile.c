#include "parallel/compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

typedef struct {
    int v; /* global value */
    hp_layout l;
    int local;
} conv_entry;

typedef struct {
    const hp_graph *g;
    const hp_propagation *prop;
    const hp_mesh *m;
    int rank;
    hp_rank_graph *out;
    conv_entry *conv;
    int nconv, capconv;
} cstate;

static int shard_axis_of(const hp_layout *l, int dim) {
    for (int a = 0; a < l->ndim; a++)
        if (l->p[a].kind == HP_SHARD && l->p[a].dim == dim) return a;
    return -1;
}

static int64_t local_offset(const cstate *c, const hp_layout *l, int v, int dim) {
    hp_shape local;
    int64_t off[HP_MAX_DIMS] = {0};
    hp_local_shape(&local, off, &c->g->vals[v].shape, l, c->m, c->rank);
    return off[dim];
}

/* A local value for global value v laid out as l. */
static int new_local(cstate *c, int v, const hp_layout *l, hp_vkind kind, const char *suffix) {
    const hp_value *gv = &c->g->vals[v];
    hp_shape local;
    hp_local_shape(&local, NULL, &gv->shape, l, c->m, c->rank);
    char nm[HP_NAME_LEN];
    snprintf(nm, sizeof nm, "%.80s%s", gv->name, suffix);
    int id = hp_graph_value(c->out->g, kind, gv->dtype, local, nm);
    if (id >= 0) {
        hp_value *lv = &c->out->g->vals[id];
        lv->hidden_matrix = gv->hidden_matrix;
        lv->no_grad = gv->no_grad;
        lv->persistent = kind == HP_V_PARAM || kind == HP_V_INPUT || kind == HP_V_CONST;
    }
    return id;
}

/* Emits a redistribution of local value `src` (global v, layout from) to layout to. */
static int emit_redist(cstate *c, int v, int src, const hp_layout *from, const hp_layout *to, hp_phase ph,
                       const char *why) {
    hp_redist plan;
    hp_status st = hp_redist_plan(&plan, &c->g->vals[v].shape, from, to, c->m);
    if (st) {
        hp_graph_fail(c->out->g, hp_error_wrap(st, "%s: value '%s'", why, c->g->vals[v].name));
        return -1;
    }
    int idx = hp_rank_ctx_add_plan(&c->out->ctx, &plan);
    if (idx < 0) {
        hp_graph_fail(c->out->g, hp_errorf("compile: out of memory"));
        return -1;
    }
    char buf[64];
    hp_layout_str(buf, sizeof buf, to, c->m);
    char suffix[80];
    snprintf(suffix, sizeof suffix, "@%s", buf);
    int dst = new_local(c, v, to, HP_V_ACT, suffix);
    if (dst < 0) return -1;
    hp_attrs a;
    memset(&a, 0, sizeof a);
    a.i[0] = idx;
    a.f[0] = plan.bytes;
    int node = hp_graph_node_into(c->out->g, &hp_op_redistribute, &src, 1, &dst, 1, &a, ph, -1);
    if (node >= 0)
        snprintf(c->out->g->nodes[node].name, HP_NAME_LEN, "%.60s.redistribute", why);
    c->out->nredist[ph == HP_PHASE_BWD]++;
    c->out->bytes[ph == HP_PHASE_BWD] += plan.bytes;
    return dst;
}

/* The local value of global v as layout `need` (converted once, then reused). */
static int input_as(cstate *c, int v, const hp_layout *need, hp_phase ph, const char *why) {
    const hp_layout *have = &c->prop->val[v];
    if (hp_layout_eq(have, need)) return c->out->map[v];
    for (int i = 0; i < c->nconv; i++)
        if (c->conv[i].v == v && hp_layout_eq(&c->conv[i].l, need)) return c->conv[i].local;
    int dst = emit_redist(c, v, c->out->map[v], have, need, ph, why);
    if (dst < 0) return -1;
    if (c->nconv == c->capconv) {
        int cap = c->capconv ? 2 * c->capconv : 64;
        conv_entry *e = realloc(c->conv, sizeof *e * (size_t)cap);
        if (!e) return -1;
        c->conv = e;
        c->capconv = cap;
    }
    c->conv[c->nconv++] = (conv_entry){v, *need, dst};
    return dst;
}

static int emit(cstate *c, const hp_opdef *op, const int *in, int nin, const int *out, int nout, const hp_attrs *a,
                const hp_node *gn) {
    int node = hp_graph_node_into(c->out->g, op, in, nin, out, nout, a, gn->phase, -1);
    if (node >= 0) memcpy(c->out->g->nodes[node].name, gn->name, HP_NAME_LEN);
    return node;
}

/* The reverse maps, once the local graph is complete. */
static hp_status build_reverse_maps(hp_rank_graph *r, const hp_graph *g) {
    hp_graph *lg = r->g;
    r->global_of = malloc(sizeof(int) * (size_t)(lg->nvals ? lg->nvals : 1));
    r->node_of = malloc(sizeof(int) * (size_t)(lg->nnodes ? lg->nnodes : 1));
    if (!r->global_of || !r->node_of) return hp_errorf("compile: out of memory");
    for (int v = 0; v < lg->nvals; v++) r->global_of[v] = -1;
    for (int v = 0; v < g->nvals; v++)
        if (r->map[v] >= 0) r->global_of[r->map[v]] = v;
    for (int i = 0; i < lg->nnodes; i++) {
        r->node_of[i] = -1;
        const hp_node *n = &lg->nodes[i];
        for (int k = 0; k < n->nout && r->node_of[i] < 0; k++) {
            int gv = n->out[k] >= 0 ? r->global_of[n->out[k]] : -1;
            if (gv >= 0 && g->vals[gv].producer >= 0 && !strcmp(g->nodes[g->vals[gv].producer].name, n->name))
                r->node_of[i] = g->vals[gv].producer;
        }
    }
    return HP_OK;
}

/* The vocabulary-parallel cross-entropy: local statistics, an all-gather of
 * them along the vocabulary axis, and the local finish. */
static void emit_parallel_xent(cstate *c, const hp_node *gn, const int *in, const int *out, int axis) {
    const hp_graph *g = c->g;
    const hp_layout *ll = &c->prop->need[gn - g->nodes][0];
    int logits = gn->in[0];
    int last = g->vals[logits].shape.ndim - 1;
    int64_t begin = local_offset(c, ll, logits, last);
    const hp_shape *ls = &c->out->g->vals[in[0]].shape;
    int64_t rows = hp_shape_numel(ls) / ls->d[ls->ndim - 1];
    char nm[HP_NAME_LEN];
    snprintf(nm, sizeof nm, "%.70s.stats", gn->name);
    int stats = hp_graph_value(c->out->g, HP_V_ACT, HP_F32, hp_shape2(3, rows), nm);
    snprintf(nm, sizeof nm, "%.70s.gathered", gn->name);
    int gathered = hp_graph_value(c->out->g, HP_V_ACT, HP_F32, hp_shape3(c->m->size[axis], 3, rows), nm);
    hp_attrs a;
    memset(&a, 0, sizeof a);
    a.i[0] = begin;
    a.i[1] = gn->a.i[0];
    a.i[2] = gn->a.i[1];
    int sin[2] = {in[0], in[1]};
    emit(c, &hp_op_xent_vp_stats, sin, 2, &stats, 1, &a, gn);
    hp_attrs ga;
    memset(&ga, 0, sizeof ga);
    ga.i[0] = axis;
    emit(c, &hp_op_mesh_all_gather, &stats, 1, &gathered, 1, &ga, gn);
    int fin[2] = {in[0], gathered};
    emit(c, &hp_op_xent_vp_finish, fin, 2, out, 3, &a, gn);
}

static void emit_node(cstate *c, int i) {
    const hp_graph *g = c->g;
    const hp_node *gn = &g->nodes[i];
    int in[HP_MAX_IN], out[HP_MAX_OUT];
    for (int k = 0; k < gn->nin; k++) {
        in[k] = input_as(c, gn->in[k], &c->prop->need[i][k], gn->phase, gn->name);
        if (in[k] < 0) return;
    }
    for (int k = 0; k < gn->nout; k++) out[k] = gn->out[k] >= 0 ? c->out->map[gn->out[k]] : -1;
    hp_attrs a = gn->a;
    const hp_layout *need = c->prop->need[i];
    if (gn->op == &hp_op_embedding && shard_axis_of(&need[1], 0) >= 0) {
        a.i[0] = local_offset(c, &need[1], gn->in[1], 0);
        emit(c, &hp_op_embedding_vp, in, gn->nin, out, gn->nout, &a, gn);
    } else if (gn->op == &hp_op_embedding_bwd && shard_axis_of(&c->prop->val[gn->out[0]], 0) >= 0) {
        a.i[0] = local_offset(c, &c->prop->val[gn->out[0]], gn->out[0], 0);
        emit(c, &hp_op_embedding_vp_bwd, in, gn->nin, out, gn->nout, &a, gn);
    } else if (gn->op == &hp_op_embedding_bwd_acc && shard_axis_of(&c->prop->val[gn->out[0]], 0) >= 0) {
        a.i[0] = local_offset(c, &c->prop->val[gn->out[0]], gn->out[0], 0);
        emit(c, &hp_op_embedding_vp_bwd_acc, in, gn->nin, out, gn->nout, &a, gn);
    } else if (gn->op == &hp_op_xent && c->prop->parallel_xent_axis[i] >= 0) {
        emit_parallel_xent(c, gn, in, out, c->prop->parallel_xent_axis[i]);
    } else if (gn->op == &hp_op_xent_bwd &&
               shard_axis_of(&need[1], g->vals[gn->in[1]].shape.ndim - 1) >= 0) {
        int probs = gn->in[1], last = g->vals[probs].shape.ndim - 1;
        hp_attrs va;
        memset(&va, 0, sizeof va);
        va.i[0] = local_offset(c, &need[1], probs, last);
        va.i[1] = gn->a.i[0];
        va.i[2] = gn->a.i[1];
        emit(c, &hp_op_xent_vp_bwd, in, gn->nin, out, gn->nout, &va, gn);
    } else {
        emit(c, gn->op, in, gn->nin, out, gn->nout, &a, gn);
    }
}

/* After the node producing global value v: parameter gradients to their
 * parameter's layout, the loss to Replicate. */
static void finish_outputs(cstate *c, int i) {
    const hp_graph *g = c->g;
    const hp_node *gn = &g->nodes[i];
    for (int k = 0; k < gn->nout; k++) {
        int v = gn->out[k];
        if (v < 0) continue;
        const hp_value *gv = &g->vals[v];
        if (gv->grad_of >= 0 && g->vals[gv->grad_of].kind == HP_V_PARAM && g->vals[gv->grad_of].grad == v) {
            int p = gv->grad_of;
            int local = c->out->map[v], fin = local;
            if (!hp_layout_eq(&c->prop->val[v], &c->prop->val[p])) {
                char why[HP_NAME_LEN + 8];
                snprintf(why, sizeof why, "%.80s.grad", g->vals[p].name);
                fin = emit_redist(c, v, local, &c->prop->val[v], &c->prop->val[p], HP_PHASE_BWD, why);
                if (fin < 0) return;
                c->out->g->vals[local].grad_of = -1;
                c->out->g->vals[local].persistent = 0;
                snprintf(c->out->g->vals[fin].name, HP_NAME_LEN, "%s", g->vals[v].name);
            }
            c->out->g->vals[fin].persistent = 1;
            c->out->g->vals[fin].grad_of = c->out->map[p];
            c->out->g->vals[c->out->map[p]].grad = fin;
        }
        if (v == g->loss) {
            hp_layout r = hp_layout_replicated(c->m);
            int lr = c->out->map[v];
            if (!hp_layout_eq(&c->prop->val[v], &r)) lr = emit_redist(c, v, lr, &c->prop->val[v], &r, HP_PHASE_FWD, "loss");
            if (lr < 0) return;
            c->out->g->vals[lr].persistent = 1;
            c->out->loss = lr;
        }
    }
}

hp_status hp_compile_rank(hp_rank_graph *out, const hp_graph *g, const hp_propagation *prop, const hp_mesh *m,
                          int rank) {
    memset(out, 0, sizeof *out);
    out->loss = -1;
    if (g->loss < 0 || g->loss_seed < 0) return hp_errorf("compile: the graph must be differentiated first");
    HP_TRY(hp_graph_create(&out->g));
    out->nglobal = g->nvals;
    out->map = malloc(sizeof(int) * (size_t)g->nvals);
    if (!out->map) {
        hp_rank_graph_free(out);
        return hp_errorf("compile: out of memory");
    }
    out->ctx.rank = rank;
    out->ctx.mesh = m;
    cstate c = {g, prop, m, rank, out, NULL, 0, 0};
    for (int v = 0; v < g->nvals; v++) {
        const hp_value *gv = &g->vals[v];
        out->map[v] = new_local(&c, v, &prop->val[v], gv->kind, "");
    }
    out->g->loss_seed = out->map[g->loss_seed];
    for (int i = 0; i < g->nnodes && !hp_graph_status(out->g); i++) {
        emit_node(&c, i);
        finish_outputs(&c, i);
    }
    free(c.conv);
    out->g->loss = out->loss;
    hp_status st = hp_graph_status(out->g);
    if (!st) {
        st = build_reverse_maps(out, g);
        if (st) hp_graph_fail(out->g, st);
        st = hp_graph_status(out->g);
    }
    if (st) {
        hp_status e = hp_errorf("compile (rank %d): %s", rank, hp_status_msg(st));
        hp_rank_graph_free(out);
        return e;
    }
    return HP_OK;
}

void hp_rank_graph_free(hp_rank_graph *r) {
    hp_graph_destroy(r->g);
    free(r->map);
    free(r->global_of);
    free(r->node_of);
    hp_rank_ctx_free(&r->ctx);
    memset(r, 0, sizeof *r);
    r->loss = -1;
}
