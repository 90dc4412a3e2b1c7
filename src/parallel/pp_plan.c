/* parallel/pp_plan: a pipeline's plan — the stage split, the virtual stages of every global node and
 * parameter, the schedule's table, who holds what (see pp_pass.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "parallel/pp_pass.h"
#include "parallel/pp_stages.h"

/* A backward node that adds a part to parameter P's gradient summed so far — autodiff's add of two
 * parts (*sofar = -1), or an operator accumulating rows into the sum (grad_rows: *sofar its input
 * index) — where several stages read P: P, else -1. */
int hp_pp_tied_acc(const hp_graph *g, const hp_node *n, const uint64_t *val_mask, int *sofar) {
    *sofar = -1;
    if (n->phase != HP_PHASE_BWD || n->nout != 1 || n->out[0] < 0) return -1;
    int of = g->vals[n->out[0]].grad_of;
    if (of < 0 || g->vals[of].kind != HP_V_PARAM || __builtin_popcountll(val_mask[of]) < 2) return -1;
    if (hp_op_is_add(n->op)) return of;
    int rows, ids, so;
    if (!n->op->grad_rows || !n->op->grad_rows(n, &rows, &ids, &so) || so < 0) return -1;
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] == so) *sofar = k;
    return *sofar >= 0 ? of : -1;
}

static hp_status split_units(hp_pp_plan *out, const hp_pp_units *u, const hp_pp_opts *o) {
    int n = u->nblocks + 2, p = out->vstages;
    if (n < p)
        return hp_errorf("pipeline: %d stages%s but the model has %d units (the embeddings, %d blocks, the head)", p,
                         out->chunks > 1 ? " (virtual: stages x chunks)" : "", n, u->nblocks);
    switch (o->split) {
    case HP_PP_SPLIT_EVEN: return hp_pp_split_even(out->first, n, p);
    case HP_PP_SPLIT_EXPLICIT:
        if (o->nblocks != p)
            return hp_errorf("pipeline: the split names blocks for %d stages, the mesh's pp axis has %d%s", o->nblocks,
                             p, out->chunks > 1 ? " (virtual: stages x chunks)" : "");
        return hp_pp_split_explicit(out->first, o->blocks, n, p);
    default: return hp_pp_split_balanced(out->first, u->cost, n, p);
    }
}

/* The stages of every global node (the header's rules). */
static hp_status node_masks(hp_pp_plan *out, const hp_graph *g, const hp_pp_cut *cut) {
    uint64_t all = out->vstages == 64 ? ~(uint64_t)0 : hp_pp_bit(out->vstages) - 1;
    uint64_t *made = calloc((size_t)(g->nvals ? g->nvals : 1), sizeof *made), *used = NULL;
    if (!made) return hp_errorf("pipeline: out of memory");
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        uint64_t m = 0;
        if (n->phase == HP_PHASE_FWD && cut->stage_of[i] >= 0) {
            m = hp_pp_bit(cut->stage_of[i]);
            for (int k = 0; k < hp_node_nin_all(n); k++) {
                int v = hp_pp_base(g, hp_node_input(g, n, k));
                if (g->vals[v].kind == HP_V_PARAM || g->vals[v].kind == HP_V_INPUT) out->val_mask[v] |= m;
            }
        }
        out->node_mask[i] = m;
    }
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        uint64_t m = out->node_mask[i];
        if (n->phase != HP_PHASE_FWD) {
            int so, P = hp_pp_tied_acc(g, n, out->val_mask, &so);
            if (P >= 0) m = out->val_mask[P];
            else if (n->fwd_node >= 0) m = out->node_mask[n->fwd_node];
            for (int k = 0; !m && k < hp_node_nin_all(n); k++) m |= made[hp_pp_base(g, hp_node_input(g, n, k))];
        }
        out->node_mask[i] = m;
        for (int k = 0; k < n->nout; k++)
            if (n->out[k] >= 0) made[hp_pp_base(g, n->out[k])] = m;
    }
    /* what none of the rules placed: the stages of its readers, else every stage */
    used = calloc((size_t)(g->nvals ? g->nvals : 1), sizeof *used);
    if (!used) {
        free(made);
        return hp_errorf("pipeline: out of memory");
    }
    for (int i = g->nnodes - 1; i >= 0; i--) {
        const hp_node *n = &g->nodes[i];
        if (!out->node_mask[i]) {
            for (int k = 0; k < n->nout; k++)
                if (n->out[k] >= 0) out->node_mask[i] |= used[hp_pp_base(g, n->out[k])];
            if (!out->node_mask[i]) out->node_mask[i] = all;
        }
        for (int k = 0; k < hp_node_nin_all(n); k++) used[hp_pp_base(g, hp_node_input(g, n, k))] |= out->node_mask[i];
    }
    free(made), free(used);
    return HP_OK;
}

hp_status hp_pp_plan_build(hp_pp_plan *out, const hp_graph *g, const hp_mesh *m, int rank, const hp_pp_opts *o,
                           int micro) {
    memset(out, 0, sizeof *out);
    out->axis = -1;
    out->loss_rank = -1;
    int a = hp_mesh_axis(m, "pp");
    if (a < 0 || m->size[a] < 2) return HP_OK;
    int p = m->size[a];
    if (p > HP_PP_MAX_STAGES) return hp_errorf("pipeline: %d stages (the pp axis) is above %d", p, HP_PP_MAX_STAGES);
    int V = o->kind == HP_PP_INTERLEAVED ? (o->chunks > 1 ? o->chunks : 2) : 1;
    if (o->kind != HP_PP_INTERLEAVED && o->chunks > 1)
        return hp_errorf("pipeline: model chunks per stage (%d) need the interleaved schedule", o->chunks);
    if ((long)p * V > HP_PP_MAX_STAGES)
        return hp_errorf("pipeline: %d stages x %d chunks is above %d virtual stages", p, V, HP_PP_MAX_STAGES);
    int coord[HP_MESH_MAX_DIMS];
    hp_mesh_coords(coord, m, rank);
    out->axis = a, out->stages = p, out->stage = coord[a], out->kind = o->kind, out->chunks = V;
    out->vstages = p * V;
    for (int j = out->stage; j < p * V; j += p) out->mine |= hp_pp_bit(j);
    out->micro = micro > 1 ? micro : 1;
    for (int d = 0; d < m->ndim; d++) coord[d] = d == a ? p - 1 : 0;
    out->loss_rank = hp_mesh_rank(m, coord);
    out->nglobal_vals = g->nvals;
    hp_pp_units u;
    hp_pp_cut cut;
    memset(&cut, 0, sizeof cut);
    HP_TRY(hp_pp_units_of(&u, g));
    out->nunits = u.nblocks + 2;
    hp_status st = split_units(out, &u, o);
    if (!st) out->imbalance = hp_pp_split_imbalance(out->first, u.cost, p * V);
    if (!st) st = hp_pp_cut_of(&cut, g, &u, out->first, p * V);
    if (!st) {
        out->node_mask = calloc((size_t)(g->nnodes ? g->nnodes : 1), sizeof *out->node_mask);
        out->val_mask = calloc((size_t)(g->nvals ? g->nvals : 1), sizeof *out->val_mask);
        if (!out->node_mask || !out->val_mask) st = hp_errorf("pipeline: out of memory");
    }
    if (!st) st = node_masks(out, g, &cut);
    if (!st) st = hp_pp_sched_build(&out->sched, o->kind, p, V, out->micro);
    hp_pp_cut_free(&cut);
    hp_pp_units_free(&u);
    if (st) hp_pp_plan_free(out);
    return st;
}

void hp_pp_plan_free(hp_pp_plan *p) {
    free(p->node_mask);
    free(p->val_mask);
    hp_pp_sched_free(&p->sched);
    memset(p, 0, sizeof *p);
    p->axis = -1;
    p->loss_rank = -1;
}

int hp_pp_holds(const hp_pp_plan *p, const hp_mesh *m, int v, int rank) {
    if (!p || p->axis < 0 || v < 0 || v >= p->nglobal_vals) return 1;
    int coord[HP_MESH_MAX_DIMS];
    hp_mesh_coords(coord, m, rank);
    for (int j = coord[p->axis]; j < p->vstages; j += p->stages)
        if (p->val_mask[v] & hp_pp_bit(j)) return 1;
    return 0;
}

/* The ranks (stages) of virtual-stage mask m, as a mask of stages. */
uint64_t hp_pp_ranks_of(const hp_pp_plan *p, uint64_t m) {
    uint64_t r = 0;
    for (int j = 0; j < p->vstages; j++)
        if (m & hp_pp_bit(j)) r |= hp_pp_bit(j % p->stages);
    return r;
}

int hp_pp_copies(const hp_pp_plan *p, int v) {
    if (!p || p->axis < 0 || v < 0 || v >= p->nglobal_vals) return 1;
    int n = __builtin_popcountll(hp_pp_ranks_of(p, p->val_mask[v]));
    return n ? n : 1;
}
