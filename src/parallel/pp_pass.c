/* parallel/pp_pass: the stage pass — the rank's graph cut to its stage, the transfers between stages
 * (see the header). */
#include "parallel/pp_pass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "parallel/rank.h"

/* ---- stage: the rank's graph cut to its stage ---- */

typedef struct {
    hp_rank_graph *rg;
    hp_pp_plan *pp;
    int n0, nv0;
    uint64_t *mask;      /* [n0]: the stages running each local node */
    int *padd;           /* [n0]: a tied parameter's accumulating node (tied_acc): the global parameter, else -1 */
    int *sofar;          /* [n0]: such a node's input holding the sum so far (-1: an add of two parts) */
    int *subst;          /* [nv0]: a dropped adding node's output: the part it stands for (-1: none) */
    unsigned char *keep; /* [nnodes after the transfers were added] */
} stage_state;

static int resolve(const stage_state *s, int v) {
    while (v >= 0 && v < s->nv0 && s->subst[v] >= 0) v = s->subst[v];
    return v;
}

/* The local nodes' stages: a lowered node its global node's, an inserted one (redistributions) those of
 * what makes its inputs, else of its readers, else every stage. */
static void local_masks(stage_state *s, const hp_graph *global) {
    hp_rank_graph *rg = s->rg;
    const hp_graph *g = rg->g;
    uint64_t all = s->pp->vstages == 64 ? ~(uint64_t)0 : hp_pp_bit(s->pp->vstages) - 1;
    for (int i = 0; i < s->n0; i++) {
        const hp_node *n = &g->nodes[i];
        int gn = rg->node_of[i];
        uint64_t m = 0;
        s->padd[i] = -1;
        if (gn >= 0) {
            m = s->pp->node_mask[gn];
            s->padd[i] = hp_pp_tied_acc(global, &global->nodes[gn], s->pp->val_mask, &s->sofar[i]);
        } else {
            for (int k = 0; k < hp_node_nin_all(n); k++) {
                int v = hp_pp_base(g, hp_node_input(g, n, k));
                if (g->vals[v].producer >= 0) m |= s->mask[g->vals[v].producer];
            }
        }
        s->mask[i] = m;
    }
    for (int i = s->n0 - 1; i >= 0; i--) {
        if (s->mask[i]) continue;
        const hp_node *n = &g->nodes[i];
        uint64_t m = 0;
        for (int j = i + 1; j < s->n0; j++)
            for (int k = 0; k < hp_node_nin_all(&g->nodes[j]); k++)
                for (int o = 0; o < n->nout; o++)
                    if (n->out[o] >= 0 && hp_pp_base(g, hp_node_input(g, &g->nodes[j], k)) == hp_pp_base(g, n->out[o]))
                        m |= s->mask[j];
        s->mask[i] = m ? m : all;
    }
}

/* Whether value v exists on this rank: no producer, or made (or stood for) by a node one of its virtual stages
 * runs. */
static int made_here(const stage_state *s, int v) {
    const hp_graph *g = s->rg->g;
    int pr = g->vals[hp_pp_base(g, v)].producer;
    return pr < 0 || (s->mask[pr] & s->pp->mine);
}

/* Tied parameters' accumulating nodes on this stage: kept where the sum so far and the new part are both
 * made here; else the output stands for what is (the sum so far, or an add's one part), or the node takes its
 * form without the sum so far (grad_rows' fresh form: the new part alone). */
static hp_status substitute(stage_state *s, const hp_graph *global) {
    hp_graph *g = s->rg->g;
    uint64_t mine = s->pp->mine;
    for (int v = 0; v < s->nv0; v++) s->subst[v] = -1;
    for (int i = 0; i < s->n0; i++) {
        if (s->padd[i] < 0 || !(s->mask[i] & mine)) continue;
        hp_node *n = &g->nodes[i];
        int sk = s->sofar[i];
        if (sk >= 0 && (!n->op->grad_rows || !n->op->fresh || sk != n->nin - 1))
            return hp_errorf("pipeline: '%s' adds to a tied parameter's gradient but its operator %s has no form "
                             "without the sum so far", n->name, n->op->name);
        int a = sk >= 0 ? n->in[sk] : n->in[0], b = sk >= 0 ? -1 : n->in[1];
        a = resolve(s, a), b = b >= 0 ? resolve(s, b) : -1;
        /* the sum so far and an add's parts never travel; an accumulating operator's new part is this rank's
         * when it runs the forward node the operator differentiates (the rows, an activation's gradient, are
         * then received like any other) */
        int ha = a >= 0 && a < s->nv0 && s->subst[a] != -2 && made_here(s, a), hb;
        if (sk < 0) {
            hb = b >= 0 && s->subst[b] != -2 && made_here(s, b);
        } else {
            int gn = s->rg->node_of[i], f = gn >= 0 ? global->nodes[gn].fwd_node : -1;
            hb = f >= 0 && (s->pp->node_mask[f] & mine);
        }
        if (ha && hb) continue;
        if (sk >= 0 && hb) { /* the new part alone */
            n->op = n->op->fresh;
            n->nin--;
            continue;
        }
        s->mask[i] &= ~mine;
        s->subst[n->out[0]] = ha ? a : hb ? b : -2; /* -2: no part here */
    }
    return HP_OK;
}

typedef struct {
    int v, from, anchor, phase;
} recv_item;

/* The stages that make local value v's base as the lowering placed them (before this stage's
 * substitutions, which only this stage sees). */
static uint64_t maker(const stage_state *s, int v) {
    const hp_graph *g = s->rg->g;
    int pr = g->vals[hp_pp_base(g, v)].producer;
    if (pr < 0) return 0;
    return s->mask[pr] | (s->padd[pr] >= 0 ? s->pp->val_mask[s->padd[pr]] : 0);
}

static void count_transfer(hp_pp_plan *pp, const hp_graph *g, int v, int send) {
    double b = (double)hp_val_numel(g, v) * (double)hp_dtype_size(g->vals[v].dtype);
    if (send) pp->nsend++, pp->send_bytes += b;
    else pp->nrecv++, pp->recv_bytes += b;
}

/* The receives this stage needs and the sends it owes, as nodes hinted into place. */
static hp_status transfers(stage_state *s) {
    hp_rank_graph *rg = s->rg;
    hp_graph *g = rg->g;
    hp_pp_plan *pp = s->pp;
    int me = pp->stage, p = pp->stages;
    uint64_t mine = pp->mine;
    /* need[v]: the other ranks that read v (as lowered) and do not make it; first_use[v]: this rank's first
     * reader of v (through its substitutions) when another rank makes it */
    uint64_t *need = calloc((size_t)s->nv0, sizeof *need);
    int *first_use = malloc(sizeof(int) * (size_t)s->nv0);
    recv_item *rv = malloc(sizeof *rv * (size_t)(s->nv0 ? s->nv0 : 1));
    if (!need || !first_use || !rv) {
        free(need), free(first_use), free(rv);
        return hp_errorf("pipeline: out of memory");
    }
    for (int v = 0; v < s->nv0; v++) first_use[v] = -1;
    for (int i = 0; i < s->n0; i++) {
        const hp_node *n = &g->nodes[i];
        if (s->padd[i] >= 0) continue; /* a tied gradient's parts never travel per micro-batch */
        for (int k = 0; k < hp_node_nin_all(n); k++) {
            int v = hp_node_input(g, n, k);
            if (v < 0) continue;
            int b = hp_pp_base(g, v);
            uint64_t mk = maker(s, b);
            if (mk) need[b] |= hp_pp_ranks_of(pp, s->mask[i] & ~mk) & ~hp_pp_bit(hp_pp_lowest(mk) % p);
            if (!(s->mask[i] & mine)) continue;
            int r = hp_pp_base(g, resolve(s, v)), pr = g->vals[r].producer;
            if (pr >= 0 && !(s->mask[pr] & mine) && first_use[r] < 0) first_use[r] = i;
        }
    }
    hp_status st = HP_OK;
    int nr = 0;
    for (int v = 0; v < s->nv0 && !st; v++) {
        if (!need[v] && first_use[v] < 0) continue;
        const hp_value *x = &g->vals[v];
        if (x->view_of >= 0) {
            st = hp_errorf("pipeline: '%s' crosses stages as a view", x->name);
            break;
        }
        int pr = x->producer, from = hp_pp_lowest(maker(s, v)) % p;
        if (first_use[v] >= 0) rv[nr++] = (recv_item){v, from, first_use[v], (int)g->nodes[first_use[v]].phase};
        if (from != me) continue;
        for (int t = 0; t < p && !st; t++) {
            if (t == me || !(need[v] & hp_pp_bit(t))) continue;
            int node = hp_comm_op_send_staged(g, v, pp->axis, t, rg->ctx.nslots++, g->nodes[pr].phase);
            st = node < 0 ? hp_graph_error(g) : hp_rank_graph_sync_nodes(rg);
            if (st) break;
            rg->hint[node] = HP_HINT_AFTER(pr);
            g->nodes[node].a.i[HP_P2P_CHANNEL] = g->nodes[pr].phase == HP_PHASE_BWD;
            if (rg->chunk) rg->chunk[node] = hp_pp_lowest(s->mask[pr] & mine) / p;
            count_transfer(pp, g, v, 1);
        }
    }
    /* receives from one stage in one phase come in the order the sender makes them (its sends follow their
     * producers, several after one producer in value order): sorted so, each is placed before its own first
     * reader and before the next one's place */
    for (int i = 1; i < nr; i++)
        for (int j = i; j > 0; j--) {
            int pa = g->vals[rv[j - 1].v].producer, pb = g->vals[rv[j].v].producer;
            if (pa < pb || (pa == pb && rv[j - 1].v < rv[j].v)) break;
            recv_item t = rv[j];
            rv[j] = rv[j - 1], rv[j - 1] = t;
        }
    for (int i = nr - 2; i >= 0; i--)
        for (int j = i + 1; j < nr; j++)
            if (rv[j].from == rv[i].from && rv[j].phase == rv[i].phase) {
                if (rv[j].anchor < rv[i].anchor) rv[i].anchor = rv[j].anchor;
                break;
            }
    int slot = nr ? rg->ctx.nslots++ : -1;
    for (int i = 0; i < nr && !st; i++) {
        int n1 = g->nnodes;
        g->vals[rv[i].v].producer = -1; /* the recv makes it here */
        int w = hp_comm_op_recv(g, rv[i].v, pp->axis, rv[i].from, slot, (hp_phase)rv[i].phase);
        st = w < 0 ? hp_graph_error(g) : hp_rank_graph_sync_nodes(rg);
        for (int k = n1; !st && k < g->nnodes; k++) {
            rg->hint[k] = HP_HINT_BEFORE(rv[i].anchor);
            g->nodes[k].a.i[HP_P2P_CHANNEL] = rv[i].phase == HP_PHASE_BWD;
            if (rg->chunk) rg->chunk[k] = hp_pp_lowest(s->mask[rv[i].anchor] & mine) / p;
        }
        count_transfer(pp, g, rv[i].v, 0);
    }
    free(need), free(first_use), free(rv);
    return st;
}

/* Keeps the marked nodes and the values they touch; renumbers everything the rank graph records. */
static hp_status compact(stage_state *s) {
    hp_rank_graph *rg = s->rg;
    hp_graph *g = rg->g;
    int nn = g->nnodes, nv = g->nvals;
    int *newn = malloc(sizeof(int) * (size_t)(nn ? nn : 1)), *newv = malloc(sizeof(int) * (size_t)(nv ? nv : 1));
    unsigned char *kv = calloc((size_t)(nv ? nv : 1), 1);
    if (!newn || !newv || !kv) {
        free(newn), free(newv), free(kv);
        return hp_errorf("pipeline: out of memory");
    }
    uint64_t me = s->pp->mine;
    /* inputs through the substitutions; a parameter's gradient likewise */
    for (int i = 0; i < nn; i++) {
        int keep = i >= s->n0 || (s->mask[i] & me);
        if (keep && i < s->n0 && rg->chunk) rg->chunk[i] = hp_pp_lowest(s->mask[i] & me) / s->pp->stages;
        s->keep[i] = (unsigned char)keep;
        if (!keep) continue;
        hp_node *n = &g->nodes[i];
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0) n->in[k] = resolve(s, n->in[k]);
        for (int k = 0; k < n->nxin; k++)
            if (g->xin[n->xin_at + k] >= 0) g->xin[n->xin_at + k] = resolve(s, g->xin[n->xin_at + k]);
    }
    for (int v = 0; v < s->nv0; v++) {
        if (s->subst[v] < 0) continue;
        int to = resolve(s, v);
        if (to < 0) continue;
        /* the part stands for the sum: it is the parameter's gradient where the sum was */
        if (g->vals[v].grad_of >= 0) g->vals[to].grad_of = g->vals[v].grad_of;
        g->vals[to].persistent |= g->vals[v].persistent;
    }
    for (int v = 0; v < nv; v++)
        if (g->vals[v].kind == HP_V_PARAM && g->vals[v].grad >= 0) g->vals[v].grad = resolve(s, g->vals[v].grad);
    for (int i = 0; i < nn; i++) {
        if (!s->keep[i]) continue;
        const hp_node *n = &g->nodes[i];
        for (int k = 0; k < hp_node_nin_all(n); k++) {
            int v = hp_node_input(g, n, k);
            if (v >= 0) kv[v] = 1, kv[hp_pp_base(g, v)] = 1;
        }
        for (int k = 0; k < n->nout; k++)
            if (n->out[k] >= 0) kv[n->out[k]] = 1, kv[hp_pp_base(g, n->out[k])] = 1;
    }
    hp_status st = HP_OK;
    int k = 0;
    for (int i = 0; i < nn; i++) newn[i] = s->keep[i] ? k++ : -1;
    k = 0;
    for (int v = 0; v < nv; v++) newv[v] = kv[v] ? k++ : -1;
    for (int v = 0; v < nv && !st; v++) {
        if (!kv[v]) continue;
        const hp_value *x = &g->vals[v];
        if (x->producer >= 0 && !s->keep[x->producer])
            st = hp_errorf("pipeline (rank %d, stage %d): '%s' is read here but made on another stage", rg->ctx.rank,
                           s->pp->stage, x->name);
    }
    for (int v = 0; v < nv && !st; v++) {
        if (!kv[v]) continue;
        hp_value x = g->vals[v];
#define REMAP(f) x.f = x.f >= 0 ? newv[x.f] : -1
        REMAP(grad);
        REMAP(grad_of);
        REMAP(state_of);
        REMAP(view_of);
        REMAP(mirror_of);
#undef REMAP
        x.producer = x.producer >= 0 ? newn[x.producer] : -1;
        g->vals[newv[v]] = x;
    }
    for (int i = 0; i < nn && !st; i++) {
        if (!s->keep[i]) continue;
        hp_node n = g->nodes[i];
        for (int q = 0; q < n.nin; q++) n.in[q] = n.in[q] >= 0 ? newv[n.in[q]] : -1;
        for (int q = 0; q < n.nout; q++) n.out[q] = n.out[q] >= 0 ? newv[n.out[q]] : -1;
        n.fwd_node = n.fwd_node >= 0 ? newn[n.fwd_node] : -1;
        int h = rg->hint[i];
        rg->hint[newn[i]] = h >= 0 ? 3 * newn[h / 3] + h % 3 : h;
        rg->node_of[newn[i]] = rg->node_of[i];
        if (rg->chunk) rg->chunk[newn[i]] = rg->chunk[i];
        g->nodes[newn[i]] = n;
    }
    for (int i = 0; i < g->nxin && !st; i++) g->xin[i] = g->xin[i] >= 0 ? newv[g->xin[i]] : -1;
    if (!st) {
        for (int v = 0; v < nv; v++)
            if (kv[v]) rg->global_of[newv[v]] = v < rg->nglobal_of ? rg->global_of[v] : -1;
        for (int gv = 0; gv < rg->nglobal; gv++) {
            int lv = rg->map[gv] >= 0 ? resolve(s, rg->map[gv]) : -1;
            rg->map[gv] = lv >= 0 ? newv[lv] : -1;
        }
        rg->loss = rg->loss >= 0 ? newv[rg->loss] : -1;
        g->loss = rg->loss;
        g->loss_seed = g->loss_seed >= 0 ? newv[g->loss_seed] : -1;
        int nodes = 0;
        for (int i = 0; i < nn; i++) nodes += s->keep[i];
        g->nnodes = nodes;
        int nvals = 0;
        for (int v = 0; v < nv; v++) nvals += kv[v];
        g->nvals = nvals;
        rg->nnode_of = g->nnodes;
        rg->nglobal_of = g->nvals;
    }
    free(newn), free(newv), free(kv);
    return st;
}

hp_status hp_pass_pp_stage(hp_pp_plan *p, hp_rank_graph *rg, const hp_graph *global) {
    if (p->axis < 0) return HP_OK;
    stage_state s = {rg, p, rg->g->nnodes, rg->g->nvals, NULL, NULL, NULL, NULL, NULL};
    s.mask = malloc(sizeof *s.mask * (size_t)(s.n0 ? s.n0 : 1));
    s.padd = malloc(sizeof(int) * (size_t)(s.n0 ? s.n0 : 1));
    s.sofar = malloc(sizeof(int) * (size_t)(s.n0 ? s.n0 : 1));
    s.subst = malloc(sizeof(int) * (size_t)(s.nv0 ? s.nv0 : 1));
    hp_status st = s.mask && s.padd && s.sofar && s.subst ? HP_OK : hp_errorf("pipeline: out of memory");
    if (!st && p->chunks > 1) { /* each node's model chunk, for the schedule's actions */
        rg->chunk = malloc(sizeof(int) * (size_t)(rg->capnode > s.n0 ? rg->capnode : s.n0 + 1));
        if (!rg->chunk) st = hp_errorf("pipeline: out of memory");
        for (int i = 0; !st && i < s.n0; i++) rg->chunk[i] = -1;
    }
    if (!st) {
        local_masks(&s, global);
        st = substitute(&s, global);
    }
    if (!st) st = transfers(&s);
    if (!st) {
        s.keep = malloc((size_t)rg->g->nnodes + 1);
        st = s.keep ? compact(&s) : hp_errorf("pipeline: out of memory");
    }
    free(s.mask), free(s.padd), free(s.sofar), free(s.subst), free(s.keep);
    return st;
}
