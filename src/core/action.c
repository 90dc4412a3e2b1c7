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
