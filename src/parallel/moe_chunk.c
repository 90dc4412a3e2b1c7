/* parallel/moe_chunk: the MoE-chunks pass (see parallel/moe_chunk.h). */
#include "parallel/moe_chunk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

/* The layer (dispatch node) each node belongs to, checked: its dispatch, the nodes that compute on the
 * dispatched rows (grouped GEMMs, row-wise or gated activations, casts), and its combine. comb[d]: the combine of
 * dispatch d. */
static hp_status find_layers(int *lay, int *comb, int *val_lay, int *rowof_lay, const hp_graph *g) {
    for (int i = 0; i < g->nnodes; i++) lay[i] = comb[i] = -1;
    for (int v = 0; v < g->nvals; v++) val_lay[v] = rowof_lay[v] = -1;
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        hp_moe_role role = hp_op_moe_role(n->op);
        if (role == HP_MOE_ROLE_DISPATCH) {
            if (n->a.i[HP_MOE_DISPATCH_CHUNKS] > 1)
                return hp_errorf("moe chunks: '%s' is cut into chunks already", n->name);
            lay[i] = i;
            val_lay[n->out[0]] = val_lay[n->out[1]] = i;
            rowof_lay[n->out[2]] = i;
            continue;
        }
        int d = -1, rows_at = -1, rowof_at = -1;
        for (int k = 0; k < hp_node_nin_all(n); k++) {
            int v = hp_node_input(g, n, k), l = val_lay[v] >= 0 ? val_lay[v] : rowof_lay[v];
            if (l < 0) continue;
            if (d >= 0 && d != l)
                return hp_errorf("moe chunks: '%s' reads the rows of two MoE layers ('%s', '%s')", n->name,
                                 g->nodes[d].name, g->nodes[l].name);
            d = l;
            if (rowof_lay[v] >= 0) rowof_at = k;
            else if (rows_at < 0) rows_at = k;
        }
        if (d < 0) continue;
        const hp_node *dn = &g->nodes[d];
        int ok = 0;
        if (role == HP_MOE_ROLE_EXPERTS)
            ok = rowof_at < 0 && n->nin == 3 && val_lay[n->in[0]] == d && n->in[2] == dn->out[1] &&
                 val_lay[n->in[1]] < 0;
        else if (role == HP_MOE_ROLE_GATED || role == HP_MOE_ROLE_ROWWISE)
            ok = rowof_at < 0 && n->nin == 1 && n->in[0] != dn->out[1];
        else if (role == HP_MOE_ROLE_COMBINE)
            ok = n->nin == 3 && val_lay[n->in[0]] == d && n->in[0] != dn->out[1] && n->in[2] == dn->out[2] &&
                 comb[d] < 0;
        if (!ok)
            return hp_errorf("moe chunks: '%s' reads what '%s' dispatched in a way the chunks do not follow; the "
                             "layer cannot be cut",
                             n->name, dn->name);
        lay[i] = d;
        if (role == HP_MOE_ROLE_COMBINE) comb[d] = i;
        else
            for (int k = 0; k < n->nout; k++)
                if (n->out[k] >= 0) val_lay[n->out[k]] = d;
    }
    for (int i = 0; i < g->nnodes; i++)
        if (lay[i] == i && comb[i] < 0)
            return hp_errorf("moe chunks: what '%s' dispatched is never combined", g->nodes[i].name);
    return HP_OK;
}

/* The scope for chunk c's copy of node n: its name less the operator's, then ".c<c>". */
static void scope_for(hp_graph *g, const hp_node *n, int c) {
    size_t ln = strlen(n->name), lo = strlen(n->op->name);
    int keep = (int)ln;
    if (ln > lo && !strcmp(n->name + ln - lo, n->op->name) && n->name[ln - lo - 1] == '.') keep = (int)(ln - lo - 1);
    hp_graph_scope(g, "%.*s.c%d", keep > 60 ? 60 : keep, n->name, c);
}

/* Chunk c's copy of node n, its inputs through map (chunk c's values; -1: the value itself), outputs into map. */
static int emit_copy(hp_graph *g, const hp_node *n, const hp_attrs *a, int *map, int c) {
    int in[HP_MAX_IN], out[HP_MAX_OUT];
    for (int k = 0; k < n->nin; k++) in[k] = map[n->in[k]] >= 0 ? map[n->in[k]] : n->in[k];
    scope_for(g, n, c);
    if (hp_graph_node(g, out, n->op, in, n->nin, a) < 0) return -1;
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] >= 0) map[n->out[k]] = out[k];
    return 0;
}

hp_status hp_pass_moe_chunk(int *nlayers, hp_graph *g, int chunks) {
    *nlayers = 0;
    if (chunks <= 1) return HP_OK;
    if (g->err) return hp_errorf("moe chunks: the graph has an error: %s", hp_status_msg(g->err));
    if (g->loss_seed >= 0) return hp_errorf("moe chunks: the graph is differentiated already");
    int nn = g->nnodes, nv0 = g->nvals, K = chunks;
    int *lay = malloc(sizeof(int) * (size_t)(nn ? nn : 1)), *comb = malloc(sizeof(int) * (size_t)(nn ? nn : 1));
    int *val_lay = malloc(sizeof(int) * (size_t)(nv0 ? nv0 : 1)), *rowof_lay = malloc(sizeof(int) * (size_t)(nv0 ? nv0 : 1));
    int *map = malloc(sizeof(int) * (size_t)K * (size_t)(nv0 ? nv0 : 1)), *yc = malloc(sizeof(int) * (size_t)K);
    hp_node *old = malloc(sizeof *old * (size_t)(nn ? nn : 1));
    hp_status st = HP_OK;
    if (!lay || !comb || !val_lay || !rowof_lay || !map || !yc || !old) st = hp_errorf("moe chunks: out of memory");
    if (!st) st = find_layers(lay, comb, val_lay, rowof_lay, g);
    int any = 0;
    for (int i = 0; !st && i < nn; i++) any |= lay[i] == i;
    if (st || !any) goto done;
    for (long v = 0; v < (long)K * nv0; v++) map[v] = -1;
    memcpy(old, g->nodes, sizeof *old * (size_t)nn);
    char scope[sizeof g->scope];
    memcpy(scope, g->scope, sizeof scope);
    for (int i = 0; i < nn; i++) /* each value's producer is set again as its node is (the uncut layer's: none) */
        for (int k = 0; k < old[i].nout; k++)
            if (old[i].out[k] >= 0) g->vals[old[i].out[k]].producer = -1;
    g->nnodes = 0;
    for (int i = 0; i < nn && !g->err; i++) {
        const hp_node *n = &old[i];
        int d = lay[i];
        if (d < 0) { /* outside every layer: as it was */
            int id = hp_graph_node_into(g, n->op, n->in, n->nin, n->out, n->nout, &n->a, n->phase, n->fwd_node);
            if (id >= 0) memcpy(g->nodes[id].name, n->name, sizeof n->name);
            continue;
        }
        if (d == i) { /* the dispatch: one per chunk */
            for (int c = 0; c < K; c++) {
                hp_attrs a = n->a;
                a.i[HP_MOE_DISPATCH_CHUNK] = c, a.i[HP_MOE_DISPATCH_CHUNKS] = K;
                emit_copy(g, n, &a, map + (long)c * nv0, c);
            }
            continue;
        }
        if (comb[d] != i) continue; /* the experts' nodes: at the combine, chunk after chunk */
        for (int c = 0; c < K; c++)
            for (int j = d + 1; j < i && !g->err; j++)
                if (lay[j] == d) emit_copy(g, &old[j], &old[j].a, map + (long)c * nv0, c);
        for (int c = 0; c < K; c++) {
            int *m = map + (long)c * nv0;
            emit_copy(g, n, &n->a, m, c);
            yc[c] = g->err ? -1 : m[n->out[0]];
        }
        if (g->err) break;
        int acc = yc[0];
        for (int c = 1; c < K && !g->err; c++) { /* the chunks' outputs summed into the layer's own */
            int in[2] = {acc, yc[c]};
            scope_for(g, n, c);
            if (c + 1 < K) {
                acc = hp_graph_node(g, NULL, &hp_op_add, in, 2, NULL);
            } else {
                int id = hp_graph_node_into(g, &hp_op_add, in, 2, &n->out[0], 1, NULL, n->phase, -1);
                if (id >= 0) snprintf(g->nodes[id].name, sizeof g->nodes[id].name, "%.80s.sum", n->name);
            }
        }
        ++*nlayers;
    }
    hp_graph_scope(g, "%s", scope);
    if (g->err) st = hp_errorf("moe chunks: %s", hp_status_msg(g->err));
done:
    free(lay), free(comb), free(val_lay), free(rowof_lay), free(map), free(yc), free(old);
    return st;
}
