#include "parallel/lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "parallel/lower_rules.h"

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
    const hp_layout *grad_layout;
    conv_entry *conv;
    int nconv, capconv;
} cstate;

/* node_of[local node] = global node (-1: inserted by this pass). */
static int record_node(cstate *c, int node, int global) {
    hp_rank_graph *r = c->out;
    if (node >= r->capnode) {
        int cap = r->capnode ? 2 * r->capnode : 256;
        while (cap <= node) cap *= 2;
        int *p = realloc(r->node_of, sizeof *p * (size_t)cap);
        if (!p) {
            hp_graph_fail(r->g, hp_errorf("lower: out of memory"));
            return -1;
        }
        r->node_of = p;
        r->capnode = cap;
    }
    r->node_of[node] = global;
    return 0;
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
        lv->no_grad = gv->no_grad;
        lv->persistent = gv->persistent || kind == HP_V_PARAM || kind == HP_V_INPUT || kind == HP_V_CONST ||
                         kind == HP_V_STATE;
        lv->init = gv->init >= 0 ? hp_graph_blob(c->out->g, hp_graph_blob_at(c->g, gv->init),
                                                  (size_t)hp_val_numel(c->g, v) * hp_dtype_size(gv->dtype))
                                 : -1;
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
    hp_redist_set_elem_bytes(&plan, (int)hp_dtype_size(c->g->vals[v].dtype)); /* bf16 values move 2 bytes each */
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
    if (node >= 0) {
        snprintf(c->out->g->nodes[node].name, HP_NAME_LEN, "%.60s.redistribute", why);
        if (record_node(c, node, -1)) return -1;
    }
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
        if (!e) {
            hp_graph_fail(c->out->g, hp_errorf("lower: out of memory"));
            return -1;
        }
        c->conv = e;
        c->capconv = cap;
    }
    c->conv[c->nconv++] = (conv_entry){v, *need, dst};
    return dst;
}

/* The reverse maps, once the local graph is complete (node_of was recorded
 * as each node was emitted). */
static hp_status build_global_of(hp_rank_graph *r, const hp_graph *g) {
    hp_graph *lg = r->g;
    r->global_of = malloc(sizeof(int) * (size_t)(lg->nvals ? lg->nvals : 1));
    if (!r->global_of) return hp_errorf("lower: out of memory");
    for (int v = 0; v < lg->nvals; v++) r->global_of[v] = -1;
    for (int v = 0; v < g->nvals; v++)
        if (r->map[v] >= 0) r->global_of[r->map[v]] = v;
    return HP_OK;
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
    int first = c->out->g->nnodes, emitted = 0;
    hp_lower_ctx lc = {g, c->prop, c->m, c->rank, c->out->g, i, in, out, &emitted};
    hp_lower_fn rule = hp_lower_rule_of(gn->op);
    if (!rule || !rule(&lc)) hp_lower_emit(&lc, gn->op, in, gn->nin, out, gn->nout, &gn->a);
    for (int n = first; n < c->out->g->nnodes; n++)
        if (record_node(c, n, i)) return;
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
            const hp_layout *target = c->grad_layout && c->grad_layout[p].ndim ? &c->grad_layout[p] : &c->prop->val[p];
            if (!hp_layout_eq(&c->prop->val[v], target)) {
                char why[HP_NAME_LEN + 8];
                snprintf(why, sizeof why, "%.80s.grad", g->vals[p].name);
                fin = emit_redist(c, v, local, &c->prop->val[v], target, HP_PHASE_BWD, why);
                if (fin < 0) return;
                c->out->g->nodes[c->out->g->vals[fin].producer].a.i[HP_REDIST_GRAD] = 1;
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

hp_status hp_lower_rank(hp_rank_graph *out, const hp_graph *g, const hp_propagation *prop, const hp_mesh *m,
                        int rank, const hp_layout *grad_layout) {
    memset(out, 0, sizeof *out);
    out->loss = -1;
    if (g->loss < 0) return hp_errorf("lower: the graph has no loss");
    HP_TRY(hp_graph_create(&out->g));
    out->nglobal = g->nvals;
    out->map = malloc(sizeof(int) * (size_t)g->nvals);
    if (!out->map) {
        hp_rank_graph_free(out);
        return hp_errorf("lower: out of memory");
    }
    out->ctx.rank = rank;
    out->ctx.mesh = m;
    cstate c = {g, prop, m, rank, out, grad_layout, NULL, 0, 0};
    for (int v = 0; v < g->nvals; v++) {
        const hp_value *gv = &g->vals[v];
        out->map[v] = new_local(&c, v, &prop->val[v], gv->kind, "");
    }
    out->g->loss_seed = g->loss_seed >= 0 ? out->map[g->loss_seed] : -1;
    for (int i = 0; i < g->nnodes && !hp_graph_status(out->g); i++) {
        emit_node(&c, i);
        finish_outputs(&c, i);
    }
    free(c.conv);
    out->g->loss = out->loss;
    hp_status st = hp_graph_error(out->g);
    if (!st) {
        st = build_global_of(out, g);
        out->nnode_of = out->g->nnodes;
        out->hint = malloc(sizeof(int) * (size_t)(out->g->nnodes ? out->g->nnodes : 1));
        if (!out->hint && !st) st = hp_errorf("lower: out of memory");
        for (int i = 0; out->hint && i < out->g->nnodes; i++) out->hint[i] = -1;
        out->nglobal_of = out->g->nvals;
        if (st) hp_graph_fail(out->g, st);
        st = hp_graph_error(out->g);
    }
    if (st) {
        hp_status e = hp_errorf("lower (rank %d): %s", rank, hp_status_msg(st));
        hp_status_free(st);
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
    free(r->hint);
    free(r->chunk);
    hp_rank_ctx_free(&r->ctx);
    memset(r, 0, sizeof *r);
    r->loss = -1;
}

hp_status hp_rank_graph_sync_nodes(hp_rank_graph *r) {
    int nv = r->g->nvals;
    if (nv > r->nglobal_of) {
        int *p = realloc(r->global_of, sizeof *p * (size_t)nv);
        if (!p) return hp_errorf("lower: out of memory");
        for (int v = r->nglobal_of; v < nv; v++) p[v] = -1;
        r->global_of = p;
        r->nglobal_of = nv;
    }
    int n = r->g->nnodes;
    if (n > r->capnode) {
        int *p = realloc(r->node_of, sizeof *p * (size_t)n);
        if (!p) return hp_errorf("lower: out of memory");
        r->node_of = p;
        r->capnode = n;
    }
    int *h = realloc(r->hint, sizeof *h * (size_t)(n ? n : 1));
    if (!h) return hp_errorf("lower: out of memory");
    r->hint = h;
    if (r->chunk) {
        int *c = realloc(r->chunk, sizeof *c * (size_t)(n ? n : 1));
        if (!c) return hp_errorf("lower: out of memory");
        r->chunk = c;
        for (int i = r->nnode_of; i < n; i++) r->chunk[i] = -1;
    }
    for (int i = r->nnode_of; i < n; i++) r->node_of[i] = -1, r->hint[i] = -1;
    r->nnode_of = n;
    return HP_OK;
}

hp_status hp_rank_graph_place_before(hp_rank_graph *r, int from) {
    HP_TRY(hp_rank_graph_sync_nodes(r));
    hp_graph *g = r->g;
    int n = g->nnodes;
    int *perm = malloc(sizeof(int) * (size_t)(n ? n : 1)), *order = malloc(sizeof(int) * (size_t)(n ? n : 1));
    int *ih = malloc(sizeof(int) * (size_t)(n ? n : 1));
    hp_node *nodes = malloc(sizeof *nodes * (size_t)(n ? n : 1));
    if (!perm || !order || !ih || !nodes) {
        free(perm), free(order), free(ih), free(nodes);
        return hp_errorf("lower: out of memory");
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        int moved = i >= from && r->hint[i] >= 0 && r->hint[i] % 3 == 0;
        if (moved) continue;
        for (int j = from > i ? from : i + 1; j < n; j++) /* the moved nodes anchored here, in creation order */
            if (r->hint[j] >= 0 && r->hint[j] % 3 == 0 && r->hint[j] / 3 == i) order[k++] = j;
        order[k++] = i;
    }
    for (int i = 0; i < k; i++) perm[order[i]] = i;
    for (int i = 0; i < k; i++) {
        int o = order[i], h = r->hint[o];
        int moved = o >= from && h >= 0 && h % 3 == 0;
        nodes[i] = g->nodes[o];
        if (nodes[i].fwd_node >= 0) nodes[i].fwd_node = perm[nodes[i].fwd_node];
        ih[i] = moved ? -1 : h >= 0 ? 3 * perm[h / 3] + h % 3 : h;
    }
    hp_status st = k == n ? HP_OK : hp_errorf("lower: %d of %d nodes placed (an anchor among the moved nodes)", k, n);
    if (!st) {
        memcpy(g->nodes, nodes, sizeof *nodes * (size_t)n);
        memcpy(r->hint, ih, sizeof(int) * (size_t)n);
        if (r->chunk) { /* the chunks follow the nodes (ih is free again) */
            for (int i = 0; i < n; i++) ih[i] = r->chunk[order[i]];
            memcpy(r->chunk, ih, sizeof(int) * (size_t)n);
        }
        for (int i = 0; i < n; i++) order[i] = r->node_of[order[i]];
        memcpy(r->node_of, order, sizeof(int) * (size_t)n);
        for (int v = 0; v < g->nvals; v++)
            if (g->vals[v].producer >= 0) g->vals[v].producer = perm[g->vals[v].producer];
    }
    free(perm), free(order), free(ih), free(nodes);
    return st;
}
