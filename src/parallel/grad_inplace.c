/* parallel/grad_inplace: the tied-gradient pass (see the header). */
#include "parallel/grad_inplace.h"

#include "ops/ops.h"

hp_status hp_pass_grad_inplace(int *n, hp_rank_graph *rg) {
    *n = 0;
    hp_graph *g = rg->g;
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *nd = &g->nodes[i];
        if (!hp_op_is_embedding_bwd_acc(nd->op) || nd->nin < 3 || nd->out[0] < 0) continue;
        int sofar = nd->in[2], out = nd->out[0];
        hp_value *s = &g->vals[sofar];
        const hp_value *o = &g->vals[out];
        if (s->persistent || s->view_of >= 0 || s->mirror_of >= 0 || s->store_slot >= 0 || s->kind == HP_V_PARAM ||
            s->producer < 0 || s->dtype != o->dtype || hp_val_numel(g, sofar) != hp_val_numel(g, out) ||
            o->mirror_of >= 0 || o->store_slot >= 0 || hp_graph_readers(g, sofar) != 1)
            continue;
        s->view_of = o->view_of >= 0 ? o->view_of : out;
        s->view_offset = o->view_of >= 0 ? o->view_offset : 0;
        ++*n;
    }
    return HP_OK;
}
