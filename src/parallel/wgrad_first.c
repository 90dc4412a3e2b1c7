/* parallel/wgrad_first: the "wgrad first" pass (see the header). */
#include "parallel/wgrad_first.h"

#include <stdio.h>
#include <string.h>

#include "core/coll_desc.h"
#include "ops/ops.h"

static int reads(const hp_graph *g, const hp_node *n, int v) {
    for (int k = 0; k < hp_node_nin_all(n); k++)
        if (hp_node_input(g, n, k) == v) return 1;
    return 0;
}

/* v itself, or the value v is a view of. */
static int base_of(const hp_graph *g, int v) { return g->vals[v].view_of >= 0 ? g->vals[v].view_of : v; }

/* Node r reduces a gradient node i's weight (or bias) gradient completes:
 * 1 if it does and is placed right after i. */
static int reduces_after(const hp_rank_graph *rg, int r, int i, int dp_async) {
    const hp_graph *g = rg->g;
    const hp_node *n = &g->nodes[r], *lin = &g->nodes[i];
    if (n->phase != HP_PHASE_BWD) return 0;
    hp_coll_desc d;
    int described = hp_coll_describe(&d, g, n);
    if (described && d.kind == HP_COLL_REDUCE_SCATTER && d.role == HP_COLL_START && d.group == HP_COLL_GROUP_FSDP_SHARD) {
        /* an FSDP unit's reduction: the unit's gradient, which the weight gradient is a view of */
        if (rg->hint[r] != HP_HINT_AFTER(i)) return 0;
        for (int k = 1; k <= 2; k++)
            if (lin->out[k] >= 0 && base_of(g, lin->out[k]) == base_of(g, n->in[0])) return 1;
        return 0;
    }
    if (!dp_async || r <= i || rg->hint[r] != -1 || !described || d.kind != HP_COLL_REDISTRIBUTE || !d.grad)
        return 0;
    for (int k = 1; k <= 2; k++)
        if (lin->out[k] >= 0 && n->in[0] == lin->out[k]) return 1;
    return 0;
}

/* 1 if a node placed from i up to reduction r (by creation order, or
 * hinted next to one of them) reads v. */
static int read_between(const hp_rank_graph *rg, int i, int r, int v) {
    const hp_graph *g = rg->g;
    int lo = i + 1, hi = rg->hint[r] == -1 ? r : i; /* a reduction hinted after i: only what is placed next to them */
    for (int j = 0; j < g->nnodes; j++) {
        int h = rg->hint[j], anchor = h >= 0 ? h / 3 : -1;
        int between = (h == -1 && j >= lo && j <= hi) || anchor == i || anchor == r || (anchor >= lo && anchor <= hi);
        if (between && j != i && reads(g, &g->nodes[j], v)) return 1;
    }
    return 0;
}

hp_status hp_pass_wgrad_first(int *nsplit, hp_rank_graph *rg, int dp_async) {
    *nsplit = 0;
    hp_graph *g = rg->g;
    int n0 = g->nnodes;
    for (int i = 0; i < n0; i++) {
        const hp_node *n = &g->nodes[i];
        if (!hp_op_is_linear_bwd(n->op) || n->phase != HP_PHASE_BWD || n->out[0] < 0 || n->nout != 3 ||
            (n->out[1] < 0 && n->out[2] < 0))
            continue;
        int r = -1;
        for (int j = 0; j < n0 && r < 0; j++)
            if (reduces_after(rg, j, i, dp_async)) r = j;
        if (r < 0 || read_between(rg, i, r, n->out[0])) continue;
        int in[3] = {n->in[0], n->in[1], n->in[2]}, out[3] = {n->out[0], -1, -1};
        hp_attrs a = n->a;
        char name[HP_NAME_LEN];
        snprintf(name, sizeof name, "%.88s.dgrad", n->name);
        int w = hp_graph_node_into(g, n->op, in, 3, out, 3, &a, HP_PHASE_BWD, n->fwd_node);
        HP_TRY(hp_graph_error(g));
        HP_TRY(hp_rank_graph_sync_nodes(rg));
        memcpy(g->nodes[w].name, name, HP_NAME_LEN);
        g->nodes[i].out[0] = -1;
        rg->node_of[w] = rg->node_of[i];
        rg->hint[w] = HP_HINT_AFTER(r);
        ++*nsplit;
    }
    return HP_OK;
}
