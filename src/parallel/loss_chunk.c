/* parallel/loss_chunk: the loss-chunk pass (see the header). */
#include "parallel/loss_chunk.h"

#include <stdio.h>
#include <string.h>

#include "ops/ops.h"

/* Node i out of the graph (a forward graph: no node refers to another but through its values). */
static void remove_node(hp_graph *g, int i) {
    for (int k = 0; k < g->nodes[i].nout; k++)
        if (g->nodes[i].out[k] >= 0) g->vals[g->nodes[i].out[k]].producer = -1;
    memmove(&g->nodes[i], &g->nodes[i + 1], sizeof *g->nodes * (size_t)(g->nnodes - i - 1));
    g->nnodes--;
    for (int v = 0; v < g->nvals; v++)
        if (g->vals[v].producer > i) g->vals[v].producer--;
}

hp_status hp_pass_loss_chunk(int *nfused, hp_graph *g, int64_t chunk, const hp_plan *plan) {
    *nfused = 0;
    if (chunk <= 0) return HP_OK;
    if (g->loss_seed >= 0) return hp_errorf("loss chunk: the model came differentiated (the pass fuses its forward)");
    for (int x = 0; x < g->nnodes; x++) {
        hp_node *xn = &g->nodes[x];
        if (!hp_op_is_xent(xn->op)) continue;
        int logits = xn->in[0], lin = g->vals[logits].producer;
        if (lin < 0 || !hp_op_is_linear(g->nodes[lin].op) || g->nodes[lin].nin != 2) continue;
        if (g->vals[logits].persistent || g->vals[logits].view_of >= 0 || hp_graph_readers(g, logits) != 1) continue;
        int w = g->nodes[lin].in[1];
        if (plan && g->vals[w].kind == HP_V_PARAM) {
            hp_layout l;
            HP_TRY(hp_plan_layout_of(&l, plan, g->vals[w].name, 0, g->vals[w].shape.ndim));
            for (int a = 0; a < l.ndim && a < plan->mesh.ndim; a++)
                if (l.p[a].kind == HP_SHARD && plan->mesh.size[a] > 1)
                    return hp_errorf("loss chunk: the head's weight '%s' is cut along %s (%s's vocabulary-parallel "
                                     "loss): the chunked loss has no such form (leave out --loss-chunk)",
                                     g->vals[w].name, plan->mesh.name[a], plan->mesh.name[a]);
        }
        int probs = xn->out[1];
        xn->op = &hp_op_linear_xent;
        xn->in[2] = xn->in[1];
        xn->in[0] = g->nodes[lin].in[0];
        xn->in[1] = w;
        xn->nin = 3;
        xn->a.i[2] = chunk;
        /* the probabilities' value becomes the rows' log-sum-exp */
        hp_value *pv = &g->vals[probs];
        pv->shape = g->vals[xn->in[2]].shape;
        char nm[HP_NAME_LEN];
        snprintf(nm, sizeof nm, "%.80s.lse", xn->name);
        memcpy(pv->name, nm, HP_NAME_LEN);
        remove_node(g, lin);
        x--; /* the cross-entropy moved down by one */
        ++*nfused;
    }
    return hp_graph_error(g);
}
