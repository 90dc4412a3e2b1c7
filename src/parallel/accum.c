/* parallel/accum: the gradient-accumulation pass (see the header). */
#include "parallel/accum.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int accumulator(hp_graph *g, int grad, const char *name) {
    char nm[HP_NAME_LEN];
    snprintf(nm, sizeof nm, "accum.%.80s", name);
    int a = hp_graph_value(g, HP_V_ACT, HP_F32, g->vals[grad].shape, nm);
    if (a >= 0) g->vals[a].persistent = 1, g->vals[a].no_grad = 1;
    return a;
}

/* The tree's levels 1 .. L-1 of a gradient (level L-1 ... 1 partial sums;
 * level 0 is the accumulator itself, see accumulate_run): appended to xin. */
static int tree_levels(hp_graph *g, int grad, const char *name, int L, int *xin, int nx) {
    for (int l = 1; l < L; l++) {
        char nm[HP_NAME_LEN];
        snprintf(nm, sizeof nm, "accum.l%d.%.70s", l, name);
        int a = hp_graph_value(g, HP_V_ACT, HP_F32, g->vals[grad].shape, nm);
        if (a < 0) return -1;
        g->vals[a].persistent = 1, g->vals[a].no_grad = 1;
        xin[nx++] = a;
    }
    return nx;
}

/* log2(K) for a power of two K, else -1. */
static int log2_exact(int K) {
    int L = 0;
    while ((1 << L) < K) L++;
    return (1 << L) == K ? L : -1;
}

/* comm_last: per unit, the whole gradient accumulated where it is complete,
 * its reduction rewired to the accumulator and told the micro-batch. */
static hp_status unit_accumulators(hp_rank_graph *rg, hp_fsdp_plan *f, int micro) {
    hp_graph *g = rg->g;
    for (int u = 0; u < f->nunits; u++) {
        hp_fsdp_unit *un = &f->units[u];
        if (un->reduce_node[0] < 0) continue; /* nothing in the backward touches it: no gradient to reduce */
        int a = accumulator(g, un->grad, g->vals[un->grad].name), xin[2] = {un->grad, a};
        hp_attrs at;
        memset(&at, 0, sizeof at);
        int node = a >= 0 ? hp_graph_node_list(g, &hp_op_grad_accumulate, &micro, 1, xin, 2, NULL, 0, &at, HP_PHASE_BWD)
                          : -1;
        HP_TRY(hp_graph_error(g));
        snprintf(g->nodes[node].name, HP_NAME_LEN, "fsdp.%.60s.grad_accumulate", un->name);
        HP_TRY(hp_rank_graph_sync_nodes(rg));
        rg->hint[node] = HP_HINT_BEFORE(un->reduce_node[0]);
        if (rg->chunk) rg->chunk[node] = un->chunk;
        /* the unit's reduce start and wait, and the replicas' wait: read the accumulator, skip until the last */
        for (int q = 0; q < 3; q++) {
            if (un->reduce_node[q] < 0) continue;
            hp_node *n = &g->nodes[un->reduce_node[q]];
            if (n->nin >= HP_MAX_IN) return hp_errorf("accumulate: node '%s' has no room for an input", n->name);
            for (int k = 0; k < n->nin; k++)
                if (n->in[k] == un->grad) n->in[k] = a;
            n->in[n->nin++] = micro;
            n->a.i[1] = 1;
        }
    }
    return HP_OK;
}

hp_status hp_pass_accumulate(int *micro, hp_rank_graph *rg, hp_fsdp_plan *f, int K, int comm_last, int tree) {
    *micro = -1;
    if (K <= 1) return HP_OK;
    int L = tree ? log2_exact(K) : 0; /* buffers per tensor in the tree: the accumulator and L - 1 levels */
    if (L < 0) return hp_errorf("accumulate: a tree-ordered accumulation needs a power-of-two micro-batch count, got %d", K);
    if (tree && comm_last)
        return hp_errorf("accumulate: a tree-ordered accumulation reduces every micro-batch (not at the last only)");
    int per = L > 1 ? L + 1 : 2; /* inputs per tensor */
    if (comm_last && (!f || !f->level))
        return hp_errorf("accumulate: communicating at the last micro-batch only is built for FSDP (levels 2, 3)");
    if (comm_last && f->level == 1)
        return hp_errorf("accumulate: communicating at the last micro-batch only needs FSDP level 2 or 3 (level 1 "
                         "reduces its gradients in place)");
    hp_graph *g = rg->g;
    int np = hp_graph_params(g, NULL, 0), nx = 0;
    int *ids = malloc(sizeof(int) * (size_t)(np ? np : 1));
    int *xin = malloc(sizeof(int) * (size_t)per * (size_t)(np + (f ? f->nunits : 0) + 1));
    if (!ids || !xin) {
        free(ids), free(xin);
        return hp_errorf("accumulate: out of memory");
    }
    hp_graph_params(g, ids, np);
    /* an interleaved pipeline stage's chunks: one accumulating node per chunk, run by that chunk's backward (a
     * chunk's gradients are rewritten by its next micro-batch before another chunk's backward runs) */
    int nchunk = 1, *group_at = NULL;
    for (int k = 0; rg->chunk && k < np; k++) {
        int gv = g->vals[ids[k]].grad, pr = gv >= 0 ? g->vals[gv].producer : -1;
        if (pr >= 0 && rg->chunk[pr] + 1 > nchunk) nchunk = rg->chunk[pr] + 1;
    }
    for (int u = 0; rg->chunk && f && f->level && u < f->nunits; u++)
        if (f->units[u].chunk + 1 > nchunk) nchunk = f->units[u].chunk + 1;
    group_at = malloc(sizeof(int) * (size_t)(nchunk + 1));
    if (!group_at) {
        free(ids), free(xin);
        return hp_errorf("accumulate: out of memory");
    }
    for (int c = 0; c < nchunk; c++) {
        group_at[c] = nx;
        for (int k = 0; k < np && nx >= 0; k++) {
            int p = ids[k], gv = g->vals[p].grad;
            if (gv < 0 || (f && f->level && f->unit_of[k] >= 0)) continue; /* FSDP's: per unit below */
            int pr = g->vals[gv].producer, ck = rg->chunk && pr >= 0 && rg->chunk[pr] > 0 ? rg->chunk[pr] : 0;
            if (ck != c) continue;
            int a = accumulator(g, gv, g->vals[p].name);
            if (a < 0) {
                nx = -1;
                break;
            }
            xin[nx++] = gv, xin[nx++] = a;
            if ((nx = tree_levels(g, gv, g->vals[p].name, L, xin, nx)) < 0) break;
            g->vals[p].grad = a; /* the optimizer reads the accumulator */
        }
        /* FSDP's reduced shards, each with its unit's chunk */
        for (int u = 0; nx >= 0 && f && f->level && !comm_last && u < f->nunits; u++) {
            hp_fsdp_unit *un = &f->units[u];
            if ((un->chunk > 0 ? un->chunk : 0) != c) continue;
            int a = accumulator(g, un->grad_shard, g->vals[un->grad_shard].name);
            if (a < 0) {
                nx = -1;
                break;
            }
            xin[nx++] = un->grad_shard, xin[nx++] = a;
            if ((nx = tree_levels(g, un->grad_shard, g->vals[un->grad_shard].name, L, xin, nx)) < 0) break;
            un->grad_acc = a;
        }
        if (nx < 0) break;
    }
    group_at[nchunk] = nx;
    *micro = hp_graph_value(g, HP_V_ACT, HP_I32, hp_shape1(2), "accum.micro");
    if (*micro >= 0) g->vals[*micro].persistent = 1, g->vals[*micro].no_grad = 1;
    /* FSDP's forward gathers at the first micro-batch only: nothing writes the store before the optimizer, so
     * the units it gathered stay gathered (not transient units: their slots are shared) */
    for (int u = 0; *micro >= 0 && f && f->level && !f->transient && u < f->nunits; u++)
        for (int q = 0; q < 2; q++) {
            if (f->units[u].gather_node[q] < 0) continue;
            hp_node *n = &g->nodes[f->units[u].gather_node[q]];
            if (n->nin >= HP_MAX_IN) {
                free(ids), free(xin), free(group_at);
                return hp_errorf("accumulate: node '%s' has no room for an input", n->name);
            }
            n->in[n->nin++] = *micro;
            n->a.i[1] = 2;
        }
    if (comm_last && *micro >= 0) {
        hp_status st = unit_accumulators(rg, f, *micro);
        if (st) {
            free(ids), free(xin), free(group_at);
            return st;
        }
    }
    if (nx <= 0) { /* nothing else to accumulate (or out of memory: the graph's status says) */
        free(ids), free(xin), free(group_at);
        return hp_graph_error(g);
    }
    hp_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = per - 2;
    hp_status st = HP_OK;
    for (int c = 0; c < nchunk && !st; c++) {
        int n = group_at[c + 1] - group_at[c];
        if (n <= 0) continue;
        int node = hp_graph_node_list(g, &hp_op_grad_accumulate, micro, 1, xin + group_at[c], n, NULL, 0, &at,
                                      HP_PHASE_BWD);
        if (node >= 0)
            snprintf(g->nodes[node].name, HP_NAME_LEN, "grad_accumulate[%d tensors%s]", n / per, L > 1 ? ", tree" : "");
        st = hp_graph_error(g);
        if (!st) st = hp_rank_graph_sync_nodes(rg);
        if (st) break;
        rg->hint[node] = HP_HINT_END;
        if (rg->chunk) rg->chunk[node] = c;
    }
    free(ids), free(xin), free(group_at);
    return st;
}

/* Micro-batch m of K into a binary tree of partial sums: lv[0] is the
 * accumulator, lv[1..L-1] the levels above (L = log2 K). The micro-batch's
 * gradient closes the levels of the trailing 1 bits of m, earlier sums on the
 * left: c = lv[t-1] + (... + (lv[0] + g)), stored at level t (the trailing
 * ones' count), or into the accumulator when m = K - 1 (every bit set), which
 * is then ((g0+g1)+(g2+g3))+... Levels 1 .. t-1 are free again. Level 0 is
 * the accumulator: when t = 0 it starts a pair; at the last micro-batch it
 * is read (as level 0) and written (the result) at one index at a time. */
static void tree_step(float *const *lv, int L, const float *gr, int64_t e, int m) {
    int t = 0;
    while (t < L && ((unsigned)m >> t & 1u)) t++;
    float *dst = t == L ? lv[0] : lv[t];
    if (t == 0) {
        memcpy(dst, gr, sizeof(float) * (size_t)e);
        return;
    }
    for (int64_t i = 0; i < e; i++) {
        float c = gr[i];
        for (int l = 0; l < t; l++) c = lv[l][i] + c;
        dst[i] = c;
    }
}

/* in[0]: micro i32 [2] (index, K); then per tensor the gradient, its
 * accumulator and a.i[0] tree levels (0: left-to-right sums), one shape each */
static void accumulate_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)out;
    const int32_t *m = in[0].data;
    int first = m[0] == 0, last = m[0] == m[1] - 1, nl = (int)n->a.i[0], per = 2 + nl;
    float K = (float)m[1];
    for (int t = 0; t < n->nxin / per; t++) {
        const float *gr = in[1 + per * t].data;
        float *acc = in[2 + per * t].data;
        int64_t e = hp_shape_numel(&in[1 + per * t].shape);
        if (nl > 0) {
            float *lv[32];
            lv[0] = acc;
            for (int l = 1; l <= nl; l++) lv[l] = in[2 + per * t + l].data;
            tree_step(lv, nl + 1, gr, e, m[0]);
        } else if (first) {
            memcpy(acc, gr, sizeof(float) * (size_t)e);
        } else {
            for (int64_t i = 0; i < e; i++) acc[i] += gr[i];
        }
        if (last)
            for (int64_t i = 0; i < e; i++) acc[i] /= K;
    }
    (void)k;
}

/* Gradient elements of the node: per tensor its extra inputs are the gradient, the accumulator and the tree
 * levels (2 + a.i[0]). */
static double accumulate_numel(const hp_graph *g, const hp_node *n) {
    int per = 2 + (int)n->a.i[0];
    double e = 0;
    for (int k = 0; k < n->nxin; k += per) e += (double)hp_val_numel(g, g->xin[n->xin_at + k]);
    return e;
}
/* an add (and on the last micro-batch a divide) an element; the gradient and the accumulator read, the
 * accumulator written */
static double accumulate_flops(const hp_graph *g, const hp_node *n) { return accumulate_numel(g, n); }
static double accumulate_bytes(const hp_graph *g, const hp_node *n) { return 12.0 * accumulate_numel(g, n); }

const hp_opdef hp_op_grad_accumulate = {.name = "grad_accumulate", .run = accumulate_run, .flops = accumulate_flops,
                                        .bytes = accumulate_bytes};
