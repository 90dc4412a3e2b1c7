/* parallel/reduce_dtype: the reduce-dtype pass (see the header). */
#include "parallel/reduce_dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "parallel/rank.h"

/* A bf16 value of v's shape, named v's name + suffix. */
static int narrow_value(hp_graph *g, int v, const char *suffix) {
    char nm[HP_NAME_LEN];
    snprintf(nm, sizeof nm, "%.80s%s", g->vals[v].name, suffix);
    int id = hp_graph_value(g, HP_V_ACT, HP_BF16, g->vals[v].shape, nm);
    if (id >= 0) g->vals[id].no_grad = 1;
    return id;
}

static int cast_node(hp_graph *g, int from, int to, hp_dtype dt, const char *name, const char *suffix) {
    hp_attrs a;
    memset(&a, 0, sizeof a);
    a.i[0] = dt;
    int n = hp_graph_node_into(g, &hp_op_cast, &from, 1, &to, 1, &a, HP_PHASE_BWD, -1);
    if (n >= 0) snprintf(g->nodes[n].name, HP_NAME_LEN, "%.80s%s", name, suffix);
    return n;
}

/* Node i (a gradient all-reduce of fp32 src into dst) rewritten around bf16
 * values; returns the narrowing cast's node (the widening one follows it). */
static int rewrite(hp_rank_graph *rg, int i) {
    hp_graph *g = rg->g;
    int src = g->nodes[i].in[0], dst = g->nodes[i].out[0];
    char name[HP_NAME_LEN];
    memcpy(name, g->nodes[i].name, sizeof name);
    int s16 = narrow_value(g, src, ".bf16"), r16 = s16 >= 0 ? narrow_value(g, dst, ".bf16.reduced") : -1;
    if (r16 < 0) return -1;
    int narrow = cast_node(g, src, s16, HP_BF16, name, ".narrow");
    if (narrow < 0) return -1;
    g->nodes[i].in[0] = s16;
    g->nodes[i].out[0] = r16;
    g->vals[r16].producer = i;
    if (cast_node(g, r16, dst, HP_F32, name, ".widen") < 0) return -1;
    hp_redist *plan = &rg->ctx.plans[g->nodes[i].a.i[0]];
    double before = plan->bytes;
    hp_redist_set_elem_bytes(plan, (int)hp_dtype_size(HP_BF16));
    g->nodes[i].a.f[0] = plan->bytes;
    rg->bytes[1] += plan->bytes - before;
    return narrow;
}

hp_status hp_pass_reduce_dtype(hp_reduce_dtype_result *out, hp_rank_graph *rg, hp_dtype dt) {
    memset(out, 0, sizeof *out);
    if (dt == HP_F32) return HP_OK;
    if (dt != HP_BF16)
        return hp_errorf("reduce dtype: gradient all-reduces run in fp32 or bf16, not %s", hp_dtype_name(dt));
    hp_graph *g = rg->g;
    int n0 = g->nnodes;
    int *anchor = malloc(sizeof(int) * (size_t)(n0 ? n0 : 1)), *narrow = malloc(sizeof(int) * (size_t)(n0 ? n0 : 1));
    if (!anchor || !narrow) {
        free(anchor), free(narrow);
        return hp_errorf("reduce dtype: out of memory");
    }
    int n = 0;
    for (int i = 0; i < n0 && !hp_graph_status(g); i++) {
        const hp_node *nd = &g->nodes[i];
        hp_coll_desc d; /* a blocking redistribution reducing a parameter's gradient */
        if (!hp_coll_describe(&d, g, nd) || d.kind != HP_COLL_REDISTRIBUTE || d.role != HP_COLL_BLOCKING || !d.grad)
            continue;
        const hp_redist *plan = &rg->ctx.plans[nd->a.i[0]];
        if (!hp_redist_plan_async(plan) || g->vals[nd->in[0]].dtype != HP_F32) continue;
        out->bytes_before += plan->bytes;
        int c = rewrite(rg, i);
        if (c < 0) break;
        out->bytes_after += rg->ctx.plans[g->nodes[i].a.i[0]].bytes;
        anchor[n] = i, narrow[n] = c, n++;
    }
    hp_status st = hp_graph_error(g);
    if (!st) st = hp_rank_graph_sync_nodes(rg);
    for (int k = 0; !st && k < n; k++) {
        rg->hint[narrow[k]] = HP_HINT_BEFORE(anchor[k]);
        rg->hint[narrow[k] + 1] = HP_HINT_AFTER_WAIT(anchor[k]);
    }
    out->nreductions = n;
    free(anchor), free(narrow);
    return st;
}
