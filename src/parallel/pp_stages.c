/* parallel/pp_stages: pipeline stage splits of a model (see the header). */
#include "parallel/pp_stages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/opdef.h"
#include "core/tensor.h"

/* The block of name under prefix ("h.12.attn" -> 12), -1: none. plen: strlen(prefix). */
static int block_of(const char *name, const char *prefix, size_t plen) {
    if (strncmp(name, prefix, plen) || name[plen] != '.') return -1;
    const char *d = name + plen + 1;
    int l = 0, any = 0;
    while (*d >= '0' && *d <= '9' && l < 1000000) l = l * 10 + (*d++ - '0'), any = 1;
    return any && *d == '.' ? l : -1;
}

/* The prefix most parameters share as "<prefix>.<digits>."; 0 when none. */
static int find_prefix(char *out, size_t cap, const hp_graph *g) {
    int best = 0;
    out[0] = 0;
    for (int v = 0; v < g->nvals; v++) {
        const hp_value *x = &g->vals[v];
        if (x->kind != HP_V_PARAM) continue;
        const char *dot = strchr(x->name, '.');
        size_t plen = dot ? (size_t)(dot - x->name) : 0;
        if (!plen || plen >= cap || block_of(x->name, x->name, plen) < 0) continue;
        char pre[32];
        memcpy(pre, x->name, plen), pre[plen] = 0;
        int n = 0;
        for (int w = 0; w < g->nvals; w++)
            if (g->vals[w].kind == HP_V_PARAM && block_of(g->vals[w].name, pre, plen) >= 0) n++;
        if (n > best) best = n, snprintf(out, cap, "%s", pre);
    }
    return best > 0;
}

void hp_pp_units_free(hp_pp_units *u) {
    free(u->cost), free(u->unit_of);
    memset(u, 0, sizeof *u);
}

hp_status hp_pp_units_of(hp_pp_units *out, const hp_graph *g) {
    memset(out, 0, sizeof *out);
    if (!find_prefix(out->prefix, sizeof out->prefix, g))
        return hp_errorf("pipeline stages: the model has no blocks (parameters named '<prefix>.<layer>.<name>')");
    size_t plen = strlen(out->prefix);
    int L = 0;
    for (int v = 0; v < g->nvals; v++) {
        int l = g->vals[v].kind == HP_V_PARAM ? block_of(g->vals[v].name, out->prefix, plen) : -1;
        if (l + 1 > L) L = l + 1;
    }
    out->nblocks = L;
    out->cost = calloc((size_t)L + 2, sizeof *out->cost);
    out->unit_of = malloc(sizeof *out->unit_of * (size_t)(g->nnodes ? g->nnodes : 1));
    if (!out->cost || !out->unit_of) {
        hp_pp_units_free(out);
        return hp_errorf("pipeline stages: out of memory");
    }
    /* a forward node's unit: its scope's block; outside any, the embeddings before the first block's nodes and
     * the head after */
    int last = 0; /* the last unit seen, in node order */
    hp_status st = HP_OK;
    for (int i = 0; i < g->nnodes && !st; i++) {
        const hp_node *n = &g->nodes[i];
        out->unit_of[i] = -1;
        if (n->phase != HP_PHASE_FWD) continue;
        int l = block_of(n->name, out->prefix, plen), u = l >= 0 ? 1 + l : last == 0 ? 0 : L + 1;
        if (l >= L) u = L + 1;
        if (u < last)
            st = hp_errorf("pipeline stages: node '%s' (%s) runs after the nodes of %s %d: the blocks interleave",
                           n->name, u == 0 ? "the embeddings" : "a block", u > L ? "the head" : "block", last - 1);
        last = u;
        out->unit_of[i] = u;
        out->cost[u] += n->op->flops ? n->op->flops(g, n) : 0;
    }
    if (st) hp_pp_units_free(out);
    return st;
}

static hp_status check_np(int n, int p) {
    if (p < 1) return hp_errorf("pp: the stages must be >= 1, got %d", p);
    if (n < p) return hp_errorf("pp: %d stages for %d units (the embeddings, the blocks, the head): at most one stage per unit", p, n);
    return HP_OK;
}

hp_status hp_pp_split_even(int *first, int n, int p) {
    HP_TRY(check_np(n, p));
    first[0] = 0;
    for (int s = 0; s < p; s++) first[s + 1] = first[s] + n / p + (s < n % p);
    return HP_OK;
}

/* Whether units a .. n - 1 split into k runs of at most cap each (greedy). */
static int fits(const double *cost, int a, int n, int k, double cap) {
    double run = 0;
    int runs = 1;
    for (int i = a; i < n; i++) {
        if (cost[i] > cap) return 0;
        if (run + cost[i] > cap) runs++, run = cost[i];
        else run += cost[i];
    }
    return a >= n ? k == 0 : runs <= k && n - a >= k;
}

hp_status hp_pp_split_balanced(int *first, const double *cost, int n, int p) {
    HP_TRY(check_np(n, p));
    /* the cheapest largest stage: the smallest prefix-sum difference that fits, searched over the candidates */
    double *pre = malloc(sizeof(double) * (size_t)(n + 1));
    if (!pre) return hp_errorf("pipeline stages: out of memory");
    pre[0] = 0;
    for (int i = 0; i < n; i++) pre[i + 1] = pre[i] + (cost[i] > 0 ? cost[i] : 0);
    double best = pre[n];
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b <= n; b++) {
            double c = pre[b] - pre[a];
            if (c < best && fits(cost, 0, n, p, c)) best = c;
        }
    /* earliest stages take as many units as fit, leaving every later stage one at least */
    first[0] = 0;
    for (int s = 0; s < p; s++) {
        int a = first[s], b = s == p - 1 ? n : n - (p - s - 1);
        while (s < p - 1 && b > a + 1 && !(pre[b] - pre[a] <= best && fits(cost, b, n, p - s - 1, best))) b--;
        first[s + 1] = b;
    }
    free(pre);
    return HP_OK;
}

hp_status hp_pp_split_explicit(int *first, const int *blocks, int n, int p) {
    HP_TRY(check_np(n, p));
    int sum = 0;
    for (int s = 0; s < p; s++) {
        if (blocks[s] < 1) return hp_errorf("pp_layers: stage %d has %d blocks (at least 1)", s, blocks[s]);
        sum += blocks[s];
    }
    if (sum != n - 2) return hp_errorf("pp_layers: the stages' blocks add up to %d, the model has %d", sum, n - 2);
    first[0] = 0;
    for (int s = 0; s < p; s++) first[s + 1] = first[s] + blocks[s] + (s == 0); /* the embeddings with stage 0 */
    first[p] = n;                                                               /* the head with the last */
    return HP_OK;
}

double hp_pp_split_imbalance(const int *first, const double *cost, int p) {
    double mx = 0, sum = 0;
    for (int s = 0; s < p; s++) {
        double c = 0;
        for (int i = first[s]; i < first[s + 1]; i++) c += cost[i];
        sum += c, mx = c > mx ? c : mx;
    }
    return sum > 0 ? mx / (sum / p) : 1.0;
}

/* ---- what a split cuts ---- */

void hp_pp_cut_free(hp_pp_cut *c) {
    free(c->stage_of), free(c->send), free(c->shared);
    memset(c, 0, sizeof *c);
}

/* The storage a value names (a view's base). */
static int base_of(const hp_graph *g, int v) { return g->vals[v].view_of >= 0 ? g->vals[v].view_of : v; }

hp_status hp_pp_cut_of(hp_pp_cut *out, const hp_graph *g, const hp_pp_units *u, const int *first, int p) {
    memset(out, 0, sizeof *out);
    int n = u->nblocks + 2;
    if (p < 1 || first[0] != 0 || first[p] != n) return hp_errorf("pp: the split does not cover the model's %d units", n);
    out->stages = p;
    out->stage_of = malloc(sizeof(int) * (size_t)(g->nnodes ? g->nnodes : 1));
    int *made = malloc(sizeof(int) * (size_t)(g->nvals ? g->nvals : 1)); /* the stage producing each value */
    int *lo = malloc(sizeof(int) * (size_t)(g->nvals ? g->nvals : 1)), *hi = malloc(sizeof(int) * (size_t)(g->nvals ? g->nvals : 1));
    unsigned char *seen = calloc((size_t)(g->nvals ? g->nvals : 1) * (size_t)p, 1); /* (value, reading stage) recorded */
    out->send = malloc(sizeof *out->send * (size_t)(g->nvals ? g->nvals : 1) * (size_t)p);
    out->shared = malloc(sizeof *out->shared * (size_t)(g->nvals ? g->nvals : 1));
    hp_status st = HP_OK;
    if (!out->stage_of || !made || !lo || !hi || !seen || !out->send || !out->shared) {
        st = hp_errorf("pipeline stages: out of memory");
        goto done;
    }
    for (int v = 0; v < g->nvals; v++) made[v] = -1, lo[v] = p, hi[v] = -1;
    for (int i = 0; i < g->nnodes; i++) {
        int un = u->unit_of[i], s = -1;
        if (un >= 0)
            for (s = 0; s < p - 1 && un >= first[s + 1];) s++;
        out->stage_of[i] = s;
        if (s < 0) continue;
        const hp_node *nd = &g->nodes[i];
        for (int k = 0; k < hp_node_nin_all(nd); k++) {
            int v = base_of(g, hp_node_input(g, nd, k));
            const hp_value *x = &g->vals[v];
            if (x->kind == HP_V_INPUT || x->kind == HP_V_PARAM) {
                lo[v] = s < lo[v] ? s : lo[v], hi[v] = s > hi[v] ? s : hi[v];
            } else if (made[v] >= 0 && made[v] < s && !seen[(size_t)v * (size_t)p + (size_t)s]) {
                seen[(size_t)v * (size_t)p + (size_t)s] = 1;
                out->send[out->nsend++] = (hp_pp_send){v, made[v], s,
                                                      (int64_t)hp_dtype_size(x->dtype) * hp_shape_numel(&x->shape)};
            } else if (made[v] > s) {
                st = hp_errorf("pp: node '%s' on stage %d reads '%s' from the later stage %d", nd->name, s, x->name,
                               made[v]);
                goto done;
            }
        }
        for (int k = 0; k < nd->nout; k++) made[base_of(g, nd->out[k])] = s;
    }
    for (int v = 0; v < g->nvals; v++)
        if (hi[v] > lo[v]) out->shared[out->nshared++] = (hp_pp_shared){v, lo[v], hi[v]};
done:
    free(made), free(lo), free(hi), free(seen);
    if (st) hp_pp_cut_free(out);
    return st;
}
