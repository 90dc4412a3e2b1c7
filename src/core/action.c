/* core/action: node parts and activation slots of an action list (see the header). */
#include "core/action.h"

#include <stdlib.h>
#include <string.h>

hp_status hp_action_parts(hp_action_kind *part, const hp_graph *g, const int *order, int n) {
    char *need = calloc((size_t)(g->nvals ? g->nvals : 1), 1); /* read by an input-part node */
    if (!need) return hp_errorf("actions: out of memory");
    /* backwards through the order: every reader of a value comes after its writers */
    for (int i = n - 1; i >= 0; i--) {
        const hp_node *nd = &g->nodes[order[i]];
        if (nd->phase != HP_PHASE_BWD) {
            part[order[i]] = nd->phase == HP_PHASE_FWD ? HP_ACT_FWD : HP_ACT_OPT;
            continue;
        }
        int in_part = 0;
        for (int k = 0; k < nd->nout; k++) {
            int v = nd->out[k];
            if (v < 0) continue;
            const hp_value *val = &g->vals[v];
            int of = val->grad_of;
            if (need[v] || (val->kind == HP_V_GRAD && (of < 0 || g->vals[of].kind != HP_V_PARAM))) in_part = 1;
        }
        part[order[i]] = in_part ? HP_ACT_BWD_INPUT : HP_ACT_BWD_WEIGHT;
        if (in_part)
            for (int k = 0; k < hp_node_nin_all(nd); k++) need[hp_node_input(g, nd, k)] = 1;
    }
    /* a backward node whose outputs nothing reads (a collective's wait, a send) goes with what made its first
     * input (the wait with its start, the send with the value sent) */
    memset(need, 0, (size_t)(g->nvals ? g->nvals : 1));
    for (int i = 0; i < n; i++) {
        const hp_node *nd = &g->nodes[order[i]];
        for (int k = 0; k < hp_node_nin_all(nd); k++) need[hp_node_input(g, nd, k)] = 1;
    }
    for (int i = 0; i < n; i++) {
        const hp_node *nd = &g->nodes[order[i]];
        if (nd->phase != HP_PHASE_BWD || nd->nin < 1 || nd->in[0] < 0) continue;
        int read = 0;
        for (int k = 0; k < nd->nout; k++) read |= nd->out[k] >= 0 && need[nd->out[k]];
        int pr = g->vals[nd->in[0]].producer;
        if (!read && pr >= 0 && g->nodes[pr].phase == HP_PHASE_BWD) part[order[i]] = part[pr];
    }
    free(need);
    return HP_OK;
}

hp_status hp_action_slots(int *slot, int *nslots, const hp_action_list *l) {
    int nm = l->nmicro > 0 ? l->nmicro : 1;
    int *last = malloc(sizeof(int) * (size_t)nm * 2), *held = last + nm;
    if (!last) return hp_errorf("actions: out of memory");
    for (int m = 0; m < nm; m++) last[m] = -1, held[m] = -1;
    for (int i = 0; i < l->n; i++) {
        int m = l->act[i].micro;
        if (m >= nm) {
            free(last);
            return hp_errorf("actions: action %d is of micro-batch %d of %d", i, m, nm);
        }
        if (m >= 0) last[m] = i;
    }
    int most = 1;
    unsigned long long busy = 0; /* slots held */
    for (int i = 0; i < l->n; i++) {
        int m = l->act[i].micro;
        slot[i] = 0;
        if (m < 0) continue;
        if (held[m] < 0) {
            int s = 0;
            while (s < 63 && busy >> s & 1ull) s++;
            held[m] = s, busy |= 1ull << s;
            if (s + 1 > most) most = s + 1;
        }
        slot[i] = held[m];
        if (last[m] == i) busy &= ~(1ull << held[m]);
    }
    free(last);
    *nslots = most;
    return HP_OK;
}

hp_status hp_action_expand(hp_action_expansion *ex, const hp_graph *g, const int *order, int norder,
                           const hp_action_list *l) {
    memset(ex, 0, sizeof *ex);
    ex->l = l;
    size_t cap = (size_t)norder * (size_t)(l->n ? l->n : 1) + 1;
    ex->part = malloc(sizeof *ex->part * (size_t)(g->nnodes ? g->nnodes : 1));
    ex->act_slot = malloc(sizeof(int) * (size_t)(l->n ? l->n : 1));
    ex->nodes = malloc(sizeof(int) * cap);
    ex->tenure = malloc(sizeof(int) * cap);
    ex->ntenures = (l->nmicro > 0 ? l->nmicro : 1) + 1;
    ex->slot_of = calloc((size_t)ex->ntenures, sizeof(int));
    hp_status st = !ex->part || !ex->act_slot || !ex->nodes || !ex->tenure || !ex->slot_of
                       ? hp_errorf("actions: out of memory")
                       : HP_OK;
    if (!st) st = hp_action_parts(ex->part, g, order, norder);
    if (!st) st = hp_action_slots(ex->act_slot, &ex->nslots, l);
    for (int a = 0; !st && a < l->n; a++) {
        int t = l->act[a].micro >= 0 ? l->act[a].micro : ex->ntenures - 1;
        ex->slot_of[t] = ex->act_slot[a];
        for (int i = 0; i < norder; i++)
            if (hp_action_list_runs(l, &l->act[a], order[i], ex->part[order[i]])) {
                ex->nodes[ex->n] = order[i];
                ex->tenure[ex->n++] = t;
            }
    }
    if (st) hp_action_expansion_free(ex);
    return st;
}

void hp_action_expansion_free(hp_action_expansion *ex) {
    free(ex->part), free(ex->act_slot), free(ex->nodes), free(ex->tenure), free(ex->slot_of);
    memset(ex, 0, sizeof *ex);
}

hp_status hp_action_list_needs_slots(int *needs, const hp_action_list *l) {
    int *slot = malloc(sizeof(int) * (size_t)(l->n ? l->n : 1)), nslots = 1, split = 0;
    hp_status st = slot ? hp_action_slots(slot, &nslots, l) : hp_errorf("actions: out of memory");
    free(slot);
    for (int i = 0; i < l->n; i++) split |= l->act[i].kind == HP_ACT_BWD_INPUT || l->act[i].kind == HP_ACT_BWD_WEIGHT;
    *needs = !st && (nslots > 1 || split);
    return st;
}
