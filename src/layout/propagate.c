/* layout/propagate: gives every value of a differentiated graph its layout,
 * node by node in graph order (see propagate.h). */
#include "layout/propagate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hp_propagation_free(hp_propagation *p) {
    if (!p) return;
    free(p->val);
    free(p->need);
    free(p->notes);
    free(p->own_order);
    memset(p, 0, sizeof *p);
}

static const char *kind_name(hp_vkind k) {
    switch (k) {
    case HP_V_INPUT: return "input";
    case HP_V_PARAM: return "parameter";
    case HP_V_CONST: return "constant";
    case HP_V_GRAD: return "gradient";
    default: return "activation";
    }
}

/* Layouts of the values nobody produces: fixed ones, then defaults. */
static hp_status seed_layouts(hp_propagation *p, unsigned char *known, const hp_graph *g, const hp_mesh *m,
                              const hp_layout *fixed, const unsigned char *is_fixed) {
    for (int v = 0; v < g->nvals; v++) {
        const hp_value *val = &g->vals[v];
        if (is_fixed && is_fixed[v]) {
            hp_status s = hp_layout_check(&fixed[v], m, val->shape.ndim, val->name);
            if (s) return hp_error_wrap(s, "propagate: %s '%s'", kind_name(val->kind), val->name);
            if ((val->kind == HP_V_PARAM || val->kind == HP_V_INPUT) && hp_layout_has_partial(&fixed[v])) {
                char ls[160];
                return hp_errorf("propagate: %s '%s' is laid out as %s: parameters and inputs cannot be Partial",
                                 kind_name(val->kind), val->name, hp_layout_str(ls, sizeof ls, &fixed[v], m));
            }
            p->val[v] = fixed[v];
            known[v] = 1;
        } else if (val->producer < 0) {
            if (val->kind == HP_V_PARAM || val->kind == HP_V_INPUT)
                return hp_errorf("propagate: %s '%s' has no layout (the plan must fix every parameter and input)",
                                 kind_name(val->kind), val->name);
            p->val[v] = hp_layout_replicated(m);
            known[v] = 1;
        }
    }
    /* the zero gradient of an unused parameter: the parameter's layout */
    for (int v = 0; v < g->nvals; v++) {
        const hp_value *val = &g->vals[v];
        if (val->producer < 0 && !(is_fixed && is_fixed[v]) && val->kind == HP_V_CONST && val->grad_of >= 0 &&
            g->vals[val->grad_of].kind == HP_V_PARAM)
            p->val[v] = p->val[val->grad_of];
    }
    return HP_OK;
}

static void add_note(hp_propagation *p, const hp_node *n, int cap) {
    if (p->nnotes >= cap) return;
    snprintf(p->notes[p->nnotes++], HP_NOTE_LEN,
             "%.90s: operator '%.40s' has no sharding rule; it runs on Replicate inputs", n->name, n->op->name);
}

/* rounded[v]: 1 + the first mesh axis over which some value v is computed from was a bf16 Partial (each rank
 * rounded its term before the sum), 0 none */
static hp_status walk(hp_propagation *p, unsigned char *known, const hp_graph *g, const hp_mesh *m,
                      const int *blockers, int *rounded) {
    hp_rule_ctx ctx = {.val = p->val, .partial_blockers = blockers};
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        hp_layout arriving[HP_MAX_IN];
        for (int k = 0; k < n->nin; k++) {
            int v = n->in[k];
            if (!known[v])
                return hp_errorf("propagate: %s reads '%s' before any node writes it", n->name, g->vals[v].name);
            arriving[k] = p->val[v];
        }
        hp_strategy st;
        hp_status s = hp_sharding_rule(&st, g, i, arriving, m, &ctx);
        if (s) return hp_error_wrap(s, "propagate");
        for (int k = 0; k < HP_MAX_IN; k++) p->need[i][k] = k < n->nin ? st.in[k] : hp_layout_replicated(m);
        int own_in = 0, round_in = 0; /* an input in a rank's own row order: the outputs follow it unless put back */
        for (int k = 0; k < n->nin; k++) {
            own_in |= p->own_order[n->in[k]];
            if (!round_in) round_in = rounded[n->in[k]];
        }
        for (int j = 0; j < n->nout; j++) {
            if (n->out[j] < 0) continue;
            p->val[n->out[j]] = st.out[j];
            p->own_order[n->out[j]] = (st.own_order >> j & 1) || (own_in && !(st.tensor_order >> j & 1));
            rounded[n->out[j]] = round_in;
            for (int a = 0; a < m->ndim && !rounded[n->out[j]]; a++)
                if (g->vals[n->out[j]].dtype == HP_BF16 && st.out[j].p[a].kind == HP_PARTIAL && m->size[a] > 1)
                    rounded[n->out[j]] = a + 1;
            known[n->out[j]] = 1;
        }
        if (st.per_piece && p->differs_node < 0)
            p->differs_node = i, p->differs_axis = st.per_piece_axis, p->differs_why = st.per_piece;
        if (st.discrete && round_in && p->differs_node < 0)
            p->differs_node = i, p->differs_axis = round_in - 1,
            p->differs_why = "its top-k choice reads values whose Partial terms each rank rounds to bf16 before they are "
                             "summed, so a near tie can turn against one rank's choice";
        p->comm_bytes += st.cost;
        if (st.no_rule) add_note(p, n, g->nnodes);
    }
    return HP_OK;
}

hp_status hp_propagate(hp_propagation *out, const hp_graph *g, const hp_mesh *m, const hp_layout *fixed,
                       const unsigned char *is_fixed) {
    memset(out, 0, sizeof *out);
    if (hp_graph_status(g)) return hp_errorf("propagate: the graph has an error: %s", hp_status_msg(hp_graph_status(g)));
    if (m->ndim < 1 || m->ndim > HP_MESH_MAX_DIMS)
        return hp_errorf("propagate: the mesh has %d axes, must be 1..%d", m->ndim, HP_MESH_MAX_DIMS);
    size_t nv = (size_t)(g->nvals ? g->nvals : 1), nn = (size_t)(g->nnodes ? g->nnodes : 1);
    hp_propagation p;
    memset(&p, 0, sizeof p);
    p.val = calloc(nv, sizeof *p.val);
    p.need = calloc(nn, sizeof *p.need);
    p.notes = calloc(nn, sizeof *p.notes);
    p.own_order = calloc(nv, 1);
    p.differs_node = p.differs_axis = -1;
    unsigned char *known = calloc(nv, 1);
    int *blockers = calloc(nv, sizeof *blockers), *rounded = calloc(nv, sizeof *rounded);
    hp_status s = HP_OK;
    if (!p.val || !p.need || !p.notes || !p.own_order || !known || !blockers || !rounded)
        s = hp_errorf("propagate: out of memory");
    if (!s) s = seed_layouts(&p, known, g, m, fixed, is_fixed);
    if (!s) {
        hp_rule_partial_blockers(blockers, g, m);
        s = walk(&p, known, g, m, blockers, rounded);
    }
    free(known);
    free(blockers);
    free(rounded);
    if (s) {
        hp_propagation_free(&p);
        return s;
    }
    *out = p;
    return HP_OK;
}

hp_status hp_param_grad_target(hp_layout *out, const hp_propagation *p, const hp_graph *g, int grad) {
    if (grad < 0 || grad >= g->nvals) return hp_errorf("param grad target: value %d is not in the graph", grad);
    int of = g->vals[grad].grad_of;
    if (of < 0 || g->vals[of].kind != HP_V_PARAM)
        return hp_errorf("param grad target: '%s' is not the gradient of a parameter", g->vals[grad].name);
    *out = p->val[of];
    return HP_OK;
}
