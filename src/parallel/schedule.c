/* parallel/schedule: the schedule pass (see the header). */
#include "parallel/schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/opdef.h"
#include "parallel/rank.h"

/* A blocking redistribution that reduces a parameter's gradient (lowering's mark). */
static int grad_reduction(const hp_graph *g, const hp_node *n) {
    hp_coll_desc d;
    return hp_coll_describe(&d, g, n) && d.kind == HP_COLL_REDISTRIBUTE && d.role == HP_COLL_BLOCKING && d.grad;
}

/* A redistribution's start (the schedule's split made it). */
static int redist_start(const hp_graph *g, const hp_node *n) {
    hp_coll_desc d;
    return hp_coll_describe(&d, g, n) && d.kind == HP_COLL_REDISTRIBUTE && d.role == HP_COLL_START;
}

/* Splits parameter-gradient reductions into start + wait; returns the count. */
static int split_reductions(hp_rank_graph *rg, int window) {
    hp_graph *g = rg->g;
    int n0 = g->nnodes, split = 0, base = rg->ctx.nslots; /* above the slots earlier passes numbered */
    for (int i = 0; i < n0 && !hp_graph_status(g); i++) {
        hp_node *nd = &g->nodes[i];
        if (!grad_reduction(g, nd)) continue;
        int dst = nd->out[0], src = nd->in[0];
        if (!hp_redist_plan_async(&rg->ctx.plans[nd->a.i[0]])) continue;
        nd->op = &hp_op_redistribute_start;
        nd->a.i[1] = base + split % window;
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

typedef struct {
    hp_rank_graph *rg;
    hp_schedule *out;
    int window, slot0, nstarted; /* the split reductions' slots: slot0 + (starts placed so far) % window */
    int *wait_of, *pending, np, head; /* pending: the starts in flight, oldest first from head */
    int *before, *after, *after_wait, *next; /* hinted nodes: per anchor, linked lists in creation order */
} placer;

/* Node nd needs the collective started by node st complete: it reads the
 * value in flight, or an output of a node placed right after its wait. */
static int needs(const placer *s, const hp_node *nd, int st) {
    const hp_graph *g = s->rg->g;
    if (reads(g, nd, g->nodes[st].out[0])) return 1;
    for (int j = s->after_wait[st]; j >= 0; j = s->next[j])
        for (int k = 0; k < g->nodes[j].nout; k++)
            if (g->nodes[j].out[k] >= 0 && reads(g, nd, g->nodes[j].out[k])) return 1;
    return 0;
}

static void place(placer *s, int i);

/* The oldest collective in flight waited, then the nodes placed after its wait. */
static void wait_oldest(placer *s) {
    int st = s->pending[s->head++];
    s->out->order[s->out->n++] = s->wait_of[st];
    for (int j = s->after_wait[st]; j >= 0; j = s->next[j]) place(s, j);
}

static void place(placer *s, int i) {
    hp_graph *g = s->rg->g;
    /* a start with the window full waits for the oldest first (before the nodes placed right before it) */
    if (s->wait_of[i] >= 0 && s->np - s->head >= s->window) wait_oldest(s);
    for (int j = s->before[i]; j >= 0; j = s->next[j]) place(s, j);
    const hp_node *nd = &g->nodes[i];
    /* a step that reads values still in flight waits for them (and for the older ones) */
    int upto = -1;
    for (int q = s->head; q < s->np; q++)
        if (needs(s, nd, s->pending[q])) upto = q;
    while (s->head <= upto) wait_oldest(s);
    s->out->order[s->out->n++] = i;
    if (s->wait_of[i] >= 0) { /* numbered in the order placed: at most `window` in flight, waited oldest first */
        int slot = s->slot0 + s->nstarted++ % s->window;
        g->nodes[i].a.i[1] = g->nodes[s->wait_of[i]].a.i[1] = slot;
        s->pending[s->np++] = i;
    }
    for (int j = s->after[i]; j >= 0; j = s->next[j]) place(s, j);
}

static void link_hint(placer *s, int *list, int j) {
    int *at = &list[0];
    while (*at >= 0) at = &s->next[*at];
    *at = j;
}

/* Each node's model chunk: as a pass recorded it (rg->chunk), else that of what makes its inputs, else that of
 * its readers, else 0. */
static hp_status chunks_of(hp_schedule *out, const hp_rank_graph *rg) {
    const hp_graph *g = rg->g;
    int n = g->nnodes;
    out->chunk_of = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!out->chunk_of) return hp_errorf("schedule: out of memory");
    int *c = out->chunk_of;
    for (int i = 0; i < n; i++) {
        c[i] = rg->chunk && i < rg->nnode_of ? rg->chunk[i] : -1;
        for (int k = 0; c[i] < 0 && k < hp_node_nin_all(&g->nodes[i]); k++) {
            int v = hp_node_input(g, &g->nodes[i], k), pr = v >= 0 ? g->vals[v].producer : -1;
            if (v >= 0 && g->vals[v].view_of >= 0) pr = g->vals[g->vals[v].view_of].producer;
            if (pr >= 0 && pr < i) c[i] = c[pr];
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        if (c[i] >= 0) continue;
        const hp_node *nd = &g->nodes[i];
        for (int j = i + 1; j < n && c[i] < 0; j++)
            for (int k = 0; k < hp_node_nin_all(&g->nodes[j]) && c[i] < 0; k++)
                for (int o = 0; o < nd->nout; o++)
                    if (nd->out[o] >= 0 && hp_node_input(g, &g->nodes[j], k) == nd->out[o]) c[i] = c[j];
        if (c[i] < 0) c[i] = 0;
    }
    return HP_OK;
}

/* The step's actions: F0 B0 F1 B1 ... Opt (a phase with no steps has no
 * actions); evaluation: forwards of nfwd micro-batches. */
static hp_status write_actions(hp_schedule *out, const hp_rank_graph *rg, const hp_schedule_opts *o) {
    int K = o->micro > 1 ? o->micro : 1;
    int bwd = out->begin[HP_PHASE_BWD + 1] > out->begin[HP_PHASE_BWD];
    int opt = out->begin[HP_PHASE_OPT + 1] > out->begin[HP_PHASE_OPT];
    int ne = o->tree ? K : 1;
    out->step.act = malloc(sizeof(hp_action) * (size_t)(2 * K + 1 + (o->stage_act ? o->nstage_act : 0)));
    out->eval.act = malloc(sizeof(hp_action) * (size_t)ne * (size_t)(o->chunks > 1 ? o->chunks : 1));
    if (!out->step.act || !out->eval.act) return hp_errorf("schedule: out of memory");
    hp_action_list *s = &out->step;
    for (int i = 0; o->stage_act && i < o->nstage_act; i++) s->act[s->n++] = o->stage_act[i];
    for (int m = 0; !o->stage_act && m < K; m++) {
        s->act[s->n++] = (hp_action){HP_ACT_FWD, m, 0};
        if (bwd) s->act[s->n++] = (hp_action){HP_ACT_BWD, m, 0};
    }
    if (opt) s->act[s->n++] = (hp_action){HP_ACT_OPT, -1, 0};
    s->nmicro = K, s->loss = rg->loss, s->tree = o->tree;
    int C = o->chunks > 1 ? o->chunks : 1;
    for (int m = 0; m < ne; m++)
        for (int c = 0; c < C; c++) out->eval.act[out->eval.n++] = (hp_action){HP_ACT_FWD, m, c};
    out->eval.nmicro = ne, out->eval.loss = rg->loss, out->eval.tree = 1;
    s->chunk_of = out->eval.chunk_of = out->chunk_of;
    s->nchunks = out->eval.nchunks = C;
    return HP_OK;
}

hp_status hp_pass_schedule(hp_schedule *out, hp_rank_graph *rg, const hp_schedule_opts *o) {
    memset(out, 0, sizeof *out);
    hp_graph *g = rg->g;
    int window = o->max_inflight > 0 ? o->max_inflight : 4;
    int n0 = g->nnodes;
    out->nsplit = o->overlap ? split_reductions(rg, window) : 0;
    HP_TRY(hp_graph_error(g));
    HP_TRY(hp_rank_graph_sync_nodes(rg));
    int split_slots = out->nsplit < window ? out->nsplit : window;
    rg->ctx.nslots += split_slots; /* after the slots earlier passes numbered (a pipeline's sends hold theirs
                                    * across the step) */
    int nn = g->nnodes;
    size_t sz = sizeof(int) * (size_t)(nn ? nn : 1);
    out->order = malloc(sz);
    placer s = {rg, out, window, rg->ctx.nslots - split_slots, 0, malloc(sz), malloc(sz), 0, 0,
                malloc(sz), malloc(sz), malloc(sz), malloc(sz)};
    hp_status st = HP_OK;
    if (!out->order || !s.wait_of || !s.pending || !s.before || !s.after || !s.after_wait || !s.next)
        st = hp_errorf("schedule: out of memory");
    for (int i = 0; !st && i < nn; i++) s.wait_of[i] = s.before[i] = s.after[i] = s.after_wait[i] = s.next[i] = -1;
    for (int i = n0, k = 0; !st && i < nn; i++) { /* waits were appended in start order */
        while (k < n0 && !redist_start(g, &g->nodes[k])) k++;
        s.wait_of[k++] = i;
    }
    for (int j = 0; !st && j < n0; j++) {
        int h = rg->hint[j];
        if (h < 0) continue;
        int anchor = h / 3, kind = h % 3;
        if (anchor >= n0 || anchor == j || g->nodes[anchor].phase != g->nodes[j].phase)
            st = hp_errorf("schedule: node '%s' is placed next to a node of another phase", g->nodes[j].name);
        else if (kind == 2 && s.wait_of[anchor] >= 0) /* after the wait of a split reduction */
            link_hint(&s, &s.after_wait[anchor], j);
        else
            link_hint(&s, kind ? &s.after[anchor] : &s.before[anchor], j);
    }
    for (int ph = 0; !st && ph < HP_NPHASES; ph++) {
        out->begin[ph] = out->n;
        for (int i = 0; i < n0; i++)
            if ((int)g->nodes[i].phase == ph && rg->hint[i] == -1) place(&s, i);
        for (int i = 0; i < n0; i++)
            if ((int)g->nodes[i].phase == ph && rg->hint[i] == HP_HINT_END) place(&s, i);
        while (s.head < s.np) wait_oldest(&s);
    }
    out->begin[HP_NPHASES] = out->n;
    free(s.wait_of), free(s.pending), free(s.before), free(s.after), free(s.after_wait), free(s.next);
    if (!st && out->n != nn) st = hp_errorf("schedule: %d of %d nodes placed", out->n, nn);
    if (!st && o->chunks > 1) st = chunks_of(out, rg);
    if (!st) st = write_actions(out, rg, o);
    if (st) hp_schedule_free(out);
    return st;
}

void hp_schedule_free(hp_schedule *s) {
    free(s->order);
    free(s->chunk_of);
    free(s->step.act);
    free(s->eval.act);
    memset(s, 0, sizeof *s);
}
