/* parallel/fsdp_slots: see the header. */
#include "parallel/fsdp_slots.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hp_fsdp_slots_free(hp_fsdp_slots *s) {
    free(s->pc), free(s->bwd_start), free(s->bwd_wait);
    memset(s, 0, sizeof *s);
}

typedef struct {
    int first[2], last[2]; /* per phase (0 forward, 1 backward): the first and last node reading the unit */
    int start[2];          /* the node its gather starts before */
} unit_use;

typedef struct {
    long a, b; /* times */
    int unit, bwd;
} interval;

static long when(int node, int bwd, int n0) { return bwd ? (long)n0 + node : node; }

/* units of phase ph in first-use order: ord[n], returns n */
static int order_of(int *ord, const unit_use *use, int nu, int ph) {
    int n = 0;
    for (int u = 0; u < nu; u++)
        if (use[u].first[ph] >= 0) ord[n++] = u;
    for (int i = 1; i < n; i++) /* insertion sort: a few dozen units */
        for (int j = i; j > 0 && use[ord[j]].first[ph] < use[ord[j - 1]].first[ph]; j--) {
            int t = ord[j];
            ord[j] = ord[j - 1], ord[j - 1] = t;
        }
    return n;
}

static int by_start(const void *x_, const void *y_) {
    const interval *x = x_, *y = y_;
    if (x->a != y->a) return x->a < y->a ? -1 : 1;
    return x->bwd - y->bwd;
}

/* Checks slot s's intervals in time order and marks backward gathers;
 * returns a unit whose interval overlaps the one before it, or -1. */
static int check_slot(hp_fsdp_plan *f, const unit_use *use, interval *iv, int s, int n0) {
    int n = 0;
    for (int u = 0; u < f->nunits; u++) {
        if (f->units[u].slot != s) continue;
        for (int ph = 0; ph < 2; ph++)
            if (use[u].first[ph] >= 0)
                iv[n++] = (interval){when(use[u].start[ph], ph, n0), when(use[u].last[ph], ph, n0), u, ph};
    }
    qsort(iv, (size_t)n, sizeof *iv, by_start);
    int cur = -1;
    long end = -1;
    for (int i = 0; i < n; i++) {
        if (iv[i].bwd && iv[i].unit == cur) { /* still in the slot since its forward: no second gather */
            f->units[cur].bwd_gather = 0;
            if (iv[i].b > end) end = iv[i].b;
            continue;
        }
        if (iv[i].a <= end) return iv[i].unit;
        cur = iv[i].unit, end = iv[i].b;
        if (iv[i].bwd) f->units[cur].bwd_gather = 1;
    }
    return -1;
}

/* hyperpar: each backward gather starts as soon as its slot is free — right
 * after the last reader of the interval before it in the slot, at the
 * backward's first node at the earliest — so the backward's gathers run as
 * far ahead as the slots allow (the fsdp2 style keeps its `prefetch`). */
static void early_starts(hp_fsdp_slots *out, const hp_fsdp_plan *f, const unit_use *use, const hp_graph *g, int n0) {
    for (int u = 0; u < f->nunits; u++) {
        if (out->bwd_start[u] < 0) continue;
        long a = when(use[u].start[1], 1, n0), prev = -1;
        for (int v = 0; v < f->nunits; v++) {
            if (f->units[v].slot != f->units[u].slot) continue;
            for (int ph = 0; ph < 2; ph++) {
                if (use[v].first[ph] < 0 || (v == u && ph == 1)) continue;
                long b = when(use[v].last[ph], ph, n0);
                if (b < a && b > prev) prev = b;
            }
        }
        for (int i = 0; i < n0; i++) { /* the first backward node after prev */
            if (g->nodes[i].phase != HP_PHASE_BWD || when(i, 1, n0) <= prev) continue;
            if (i < out->bwd_start[u]) out->bwd_start[u] = i;
            break;
        }
    }
}

hp_status hp_fsdp_slots_make(hp_fsdp_slots *out, hp_fsdp_plan *f, hp_graph *g, const int *ids, int n0) {
    memset(out, 0, sizeof *out);
    int nu = f->nunits, np = f->nparams;
    unit_use *use = calloc((size_t)(nu ? nu : 1), sizeof *use);
    int *kof = malloc(sizeof(int) * (size_t)(g->nvals ? g->nvals : 1));
    int *ord = malloc(sizeof(int) * (size_t)(nu ? nu : 1));
    long *slot_end = malloc(sizeof(long) * (size_t)(nu ? nu : 1));
    interval *iv = malloc(sizeof *iv * (size_t)(2 * nu + 1));
    int *slot_val = malloc(sizeof(int) * (size_t)(nu ? nu : 1));
    out->pc = malloc(sizeof(int) * (size_t)(np ? np : 1));
    out->bwd_start = malloc(sizeof(int) * (size_t)(nu ? nu : 1));
    out->bwd_wait = malloc(sizeof(int) * (size_t)(nu ? nu : 1));
    hp_status st = use && kof && ord && slot_end && iv && slot_val && out->pc && out->bwd_start && out->bwd_wait
                       ? HP_OK
                       : hp_errorf("fsdp: out of memory");
    if (st) goto done;
    for (int v = 0; v < g->nvals; v++) kof[v] = -1;
    for (int k = 0; k < np; k++) {
        out->pc[k] = -1;
        if (f->unit_of[k] >= 0) kof[ids[k]] = k;
    }
    for (int u = 0; u < nu; u++) {
        use[u] = (unit_use){{-1, -1}, {-1, -1}, {-1, -1}};
        f->units[u].slot = -1;
        f->units[u].bwd_gather = 0;
        f->units[u].keep = 0;
        out->bwd_start[u] = out->bwd_wait[u] = -1;
    }
    /* the readers of each unit, per phase */
    for (int i = 0; i < n0; i++) {
        const hp_node *n = &g->nodes[i];
        if (n->phase != HP_PHASE_FWD && n->phase != HP_PHASE_BWD) continue;
        int ph = n->phase == HP_PHASE_BWD;
        for (int q = 0; q < hp_node_nin_all(n); q++) {
            int v = hp_node_input(g, n, q);
            if (v < 0 || kof[v] < 0) continue;
            unit_use *x = &use[f->unit_of[kof[v]]];
            if (x->first[ph] < 0) x->first[ph] = i;
            x->last[ph] = i;
        }
    }
    /* gather starts: `prefetch` units ahead in each phase's first-use order */
    for (int ph = 0; ph < 2; ph++) {
        int n = order_of(ord, use, nu, ph);
        for (int q = 0; q < n; q++) use[ord[q]].start[ph] = use[ord[q - f->prefetch < 0 ? 0 : q - f->prefetch]].first[ph];
    }
    /* keep_bytes: units kept from the forward to the backward, the backward's first ones first */
    int nbk = order_of(ord, use, nu, 1);
    int64_t kept = 0;
    for (int q = 0; q < nbk && f->keep_bytes > 0; q++) {
        int u = ord[q];
        int64_t b = (int64_t)f->units[u].size * (int64_t)sizeof(float);
        if (use[u].first[0] < 0 || kept + b > f->keep_bytes) break;
        kept += b;
        f->units[u].keep = 1;
    }
    /* slots in forward order: the lowest one free when the unit's gather starts (a kept unit's: never again) */
    int nf = order_of(ord, use, nu, 0);
    f->nslots = 0;
    for (int q = 0; q < nf; q++) {
        int u = ord[q], s = 0;
        long a = when(use[u].start[0], 0, n0);
        while (s < f->nslots && slot_end[s] >= a) s++;
        if (s == f->nslots) f->nslots++;
        slot_end[s] = f->units[u].keep ? LONG_MAX : when(use[u].last[0], 0, n0);
        f->units[u].slot = s;
    }
    for (int u = 0; u < nu; u++) /* read in the backward only: a slot of its own */
        if (f->units[u].slot < 0 && use[u].first[1] >= 0) f->units[u].slot = f->nslots++;
    /* the backward's intervals: a unit that would overlap another in its slot moves to a slot of its own */
    for (int guard = 0; guard <= nu; guard++) {
        int bad = -1;
        for (int s = 0; s < f->nslots && bad < 0; s++) bad = check_slot(f, use, iv, s, n0);
        if (bad < 0) break;
        if (guard == nu) {
            st = hp_errorf("fsdp: no slot assignment found for unit '%s'", f->units[bad].name);
            goto done;
        }
        f->units[bad].slot = f->nslots++;
    }
    for (int u = 0; u < nu; u++)
        if (f->units[u].bwd_gather) out->bwd_start[u] = use[u].start[1], out->bwd_wait[u] = use[u].first[1];
    if (f->style == HP_FSDP_STYLE_HYPERPAR) early_starts(out, f, use, g, n0);
    /* each slot the size of the largest unit it holds, one after the other */
    f->slot_at = calloc((size_t)f->nslots + 1, sizeof *f->slot_at);
    if (!f->slot_at) {
        st = hp_errorf("fsdp: out of memory");
        goto done;
    }
    for (int u = 0; u < nu; u++) {
        int s = f->units[u].slot;
        if (s >= 0 && f->units[u].size > f->slot_at[s + 1]) f->slot_at[s + 1] = f->units[u].size;
    }
    for (int s = 0; s < f->nslots; s++) f->slot_at[s + 1] += f->slot_at[s]; /* unit sizes: multiples of 16 floats */
    f->slot_floats = f->slot_at[f->nslots];
    /* the slots' values and the compute copies, views at each parameter's place in its unit */
    char nm[HP_NAME_LEN];
    for (int s = 0; s < f->nslots; s++) {
        snprintf(nm, sizeof nm, "fsdp.slot%d", s);
        slot_val[s] = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1((int64_t)(f->slot_at[s + 1] - f->slot_at[s])), nm);
        if (slot_val[s] < 0) break;
        g->vals[slot_val[s]].persistent = 1;
        g->vals[slot_val[s]].no_grad = 1;
        g->vals[slot_val[s]].store_slot = s;
    }
    for (int k = 0; !hp_graph_status(g) && k < np; k++) {
        int u = f->unit_of[k];
        if (u < 0 || f->units[u].slot < 0) continue;
        snprintf(nm, sizeof nm, "%.80s@slot", g->vals[ids[k]].name);
        out->pc[k] = hp_graph_view(g, slot_val[f->units[u].slot], (int64_t)(f->offset[k] - f->units[u].offset),
                                   g->vals[ids[k]].shape, nm);
        if (out->pc[k] >= 0) g->vals[out->pc[k]].no_grad = 1;
    }
    st = hp_graph_error(g);
    /* the readers read the copies */
    for (int i = 0; !st && i < n0; i++) {
        hp_node *n = &g->nodes[i];
        if (n->phase != HP_PHASE_FWD && n->phase != HP_PHASE_BWD) continue;
        for (int q = 0; q < n->nin; q++)
            if (n->in[q] >= 0 && kof[n->in[q]] >= 0) n->in[q] = out->pc[kof[n->in[q]]];
        for (int q = 0; q < n->nxin; q++) {
            int *x = &g->xin[n->xin_at + q];
            if (*x >= 0 && kof[*x] >= 0) *x = out->pc[kof[*x]];
        }
    }
done:
    free(use), free(kof), free(ord), free(slot_end), free(iv), free(slot_val);
    if (st) hp_fsdp_slots_free(out);
    return st;
}
