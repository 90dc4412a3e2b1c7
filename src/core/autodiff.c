#include "core/autodiff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hp_grad_value(hp_graph *g, int of) {
    if (g->err) return -1;
    char nm[HP_NAME_LEN];
    snprintf(nm, sizeof nm, "%.80s.grad", g->vals[of].name);
    int id = hp_graph_value(g, HP_V_GRAD, hp_grad_dtype(g, of), g->vals[of].shape, nm);
    if (id >= 0) g->vals[id].grad_of = of;
    return id;
}

int hp_grad_take(hp_graph *g, int v) {
    int sum = g->vals[v].grad;
    g->vals[v].grad = -1;
    return sum;
}

/* grad[v] += c: the first contribution (or one that took the running sum) is
 * kept as is, later ones summed. */
static void contribute(hp_graph *g, int v, int c, const hp_opdef *add_op, int fwd_node) {
    int acc = g->vals[v].grad;
    if (acc < 0) {
        g->vals[v].grad = c;
        return;
    }
    int sum = hp_grad_value(g, v);
    if (sum < 0) return;
    int in[2] = {acc, c};
    hp_graph_node_into(g, add_op, in, 2, &sum, 1, NULL, HP_PHASE_BWD, fwd_node);
    g->vals[v].grad = sum;
}

hp_status hp_autodiff(hp_graph *g, int loss, const hp_opdef *add_op) {
    if (g->err) return hp_errorf("autodiff: the graph has an error: %s", hp_status_msg(g->err));
    if (loss < 0 || loss >= g->nvals || hp_val_numel(g, loss) != 1)
        return hp_errorf("autodiff: the loss must be a scalar value of the graph");
    if (g->loss_seed >= 0) return hp_errorf("autodiff: the graph is already differentiated");

    /* Which values depend on a parameter. */
    for (int v = 0; v < g->nvals; v++) g->vals[v].requires_grad = g->vals[v].kind == HP_V_PARAM;
    int nfwd = g->nnodes;
    for (int i = 0; i < nfwd; i++) {
        hp_node *n = &g->nodes[i];
        int rg = 0;
        for (int k = 0; k < n->nin; k++) rg |= g->vals[n->in[k]].requires_grad;
        for (int k = 0; k < n->nout; k++)
            g->vals[n->out[k]].requires_grad = rg && !g->vals[n->out[k]].no_grad;
    }
    if (!g->vals[loss].requires_grad) return hp_errorf("autodiff: the loss depends on no parameter");

    /* running sums of the gradients live in vals[v].grad during the pass */
    int nv0 = g->nvals;
    for (int v = 0; v < nv0; v++) g->vals[v].grad = -1;

    g->loss = loss;
    int seed = hp_graph_value(g, HP_V_CONST, HP_F32, hp_shape1(1), "loss.grad_seed");
    g->loss_seed = seed;
    if (seed < 0) return hp_errorf("autodiff: %s", hp_status_msg(g->err));
    g->vals[loss].grad = seed;

    for (int i = nfwd - 1; i >= 0 && !g->err; i--) {
        hp_node n = g->nodes[i]; /* copy: the node array may grow */
        int gout[HP_MAX_OUT], gin[HP_MAX_IN], any = 0, need = 0;
        for (int k = 0; k < n.nout; k++) {
            gout[k] = g->vals[n.out[k]].grad;
            any |= gout[k] >= 0;
        }
        for (int k = 0; k < n.nin; k++) {
            gin[k] = -1;
            need |= g->vals[n.in[k]].requires_grad;
        }
        if (!any || !need) continue;
        if (!n.op->backward)
            return hp_errorf("autodiff: operator '%s' (%s) has no backward rule", n.op->name, n.name);
        n.op->backward(g, i, gout, gin);
        for (int k = 0; k < n.nin; k++)
            if (gin[k] >= 0 && g->vals[n.in[k]].requires_grad) contribute(g, n.in[k], gin[k], add_op, i);
    }
    if (g->err) return hp_errorf("autodiff: %s", hp_status_msg(g->err));
    for (int v = 0; v < nv0; v++) {
        if (g->vals[v].kind != HP_V_PARAM) continue;
        int gv = g->vals[v].grad;
        if (gv < 0) { /* unused parameter: a zero gradient */
            char nm[HP_NAME_LEN];
            snprintf(nm, sizeof nm, "%.80s.grad", g->vals[v].name);
            gv = hp_graph_value(g, HP_V_CONST, HP_F32, g->vals[v].shape, nm);
            g->vals[v].grad = gv;
        }
        if (gv < 0) break;
        g->vals[gv].persistent = 1;
        g->vals[gv].grad_of = v;
        char pname[HP_NAME_LEN];
        memcpy(pname, g->vals[v].name, sizeof pname);
        snprintf(g->vals[gv].name, sizeof g->vals[gv].name, "%.80s.grad", pname);
    }
    if (g->err) return hp_errorf("autodiff: %s", hp_status_msg(g->err));
    return HP_OK;
}
