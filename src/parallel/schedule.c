/* parallel/schedule: the schedule pass (see the header). */
#include "parallel/schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/opdef.h"
#include "parallel/rank.h"

/* Splits parameter-gradient reductions into start + wait; returns the count. */
static int split_reductions(hp_rank_graph *rg, int window) {
    hp_graph *g = rg->g;
    int n0 = g->nnodes, split = 0;
    for (int i = 0; i < n0 && !hp_graph_status(g); i++) {
        hp_node *nd = &g->nodes[i];
        if (nd->op != &hp_op_redistribute || nd->phase != HP_PHASE_BWD) continue;
        int dst = nd->out[0], src = nd->in[0];
        if (g->vals[dst].grad_of < 0 || !g->vals[dst].persistent) continue;
        if (!hp_redist_plan_async(&rg->ctx.plans[nd->a.i[0]])) continue;
        nd->op = &hp_op_redistribute_start;
        nd->a.i[1] = split % window;
        hp_attrs a = nd->a;
        char name[HP_NAME_LEN];
        snprintf(name, sizeof name, "%.80s.wait", nd->name);
        int in[2] = {dst, src};
        int w = hp_graph_node_into(g, &hp_op_redistribute_wait, in, 2, NULL, 0, &a, HP_PHASE_BWD, -1);
        if (w >= 0) memcpy(g->nodes[w].name, name, HP_NAME_LEN);
        split++;
    }
    return split;
}

static int reads(const hp_graph *g, const hp_node *n, int v) {
    for (int k = 0; k < hp_node_nin_all(n); k++)
        if (hp_node_input(g, n, k) == v) return 1;
    return 0;
}

hp_status hp_pass_schedule(hp_schedule *out, hp_rank_graph *rg, const hp_schedule_opts *o) {
    memset(out, 0, sizeof *out);
    hp_graph *g = rg->g;
    int window = o->max_inflight > 0 ? o->max_inflight : 4;
    int n0 = g->nnodes;
    out->nsplit = o->overlap ? split_reductions(rg, window) : 0;
    HP_TRY(hp_graph_status(g));
    HP_TRY(hp_rank_graph_sync_nodes(rg));
    rg->ctx.nslots = out->nsplit < window ? out->nsplit : window;
    int nn = g->nnodes;
    out->order = malloc(sizeof(int) * (size_t)(nn ? nn : 1));
    int *wait_of = malloc(sizeof(int) * (size_t)(nn ? nn : 1)); /* start node -> its wait */
    int *pending = malloc(sizeof(int) * (size_t)(nn ? nn : 1));  /* waits not yet placed, FIFO */
    if (!out->order || !wait_of || !pending) {
        free(wait_of), free(pending);
        hp_schedule_free(out);
        return hp_errorf("schedule: out of memory");
    }
    for (int i = 0; i < nn; i++) wait_of[i] = -1;
    for (int i = n0, s = 0; i < nn; i++) { /* waits were appended in start order */
        while (s < n0 && g->nodes[s].op != &hp_op_redistribute_start) s++;
        wait_of[s++] = i;
    }
    int np = 0, head = 0;
    for (int ph = 0; ph < HP_NPHASES; ph++) {
        out->begin[ph] = out->n;
        for (int i = 0; i < n0; i++) {
            const hp_node *nd = &g->nodes[i];
            if ((int)nd->phase != ph) continue;
            /* a step that reads a value still in flight waits for it (and for the older ones) */
            for (int q = head; q < np; q++)
                if (reads(g, nd, g->nodes[pending[q]].in[0])) {
                    while (head <= q) out->order[out->n++] = pending[head++];
                    break;
                }
            if (wait_of[i] >= 0 && np - head >= window) out->order[out->n++] = pending[head++];
            out->order[out->n++] = i;
            if (wait_of[i] >= 0) pending[np++] = wait_of[i];
        }
        while (head < np) out->order[out->n++] = pending[head++];
    }
    out->begin[HP_NPHASES] = out->n;
    free(wait_of), free(pending);
    if (out->n != nn) {
        hp_schedule_free(out);
        return hp_errorf("schedule: %d of %d nodes placed", out->n, nn);
    }
    return HP_OK;
}

void hp_schedule_free(hp_schedule *s) {
    free(s->order);
    memset(s, 0, sizeof *s);
}
