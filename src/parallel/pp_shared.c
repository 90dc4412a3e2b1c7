/* parallel/pp_shared: a tied parameter's gradient parts summed across its stages, and zero bubble's split
 * backward (see pp_pass.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "parallel/fsdp.h"
#include "parallel/pp_pass.h"
#include "parallel/rank.h"

/* ---- shared: a tied parameter's gradient parts summed across its stages ---- */

hp_status hp_pass_pp_shared(hp_pp_plan *p, hp_rank_graph *rg, const hp_graph *global, struct hp_fsdp_plan *f) {
    if (p->axis < 0) return HP_OK;
    hp_graph *g = rg->g;
    int np = hp_graph_params(g, NULL, 0);
    int *ids = malloc(sizeof(int) * (size_t)(np ? np : 1));
    if (!ids) return hp_errorf("pipeline: out of memory");
    hp_graph_params(g, ids, np);
    int slot = -1;
    hp_status st = HP_OK;
    for (int k = 0; k < np && !st; k++) {
        int lp = ids[k], gp = rg->global_of[lp];
        if (gp < 0 || g->vals[lp].grad < 0 || __builtin_popcountll(p->val_mask[gp]) < 2) continue;
        /* FSDP: the unit (the parameter alone: fsdp_prepare) has the same shards on every holder; the
         * rank's reduced (and accumulated) shard travels */
        hp_fsdp_unit *un = f && f->level && k < f->nparams && f->unit_of[k] >= 0 ? &f->units[f->unit_of[k]] : NULL;
        if (un && un->nparams != 1)
            st = hp_errorf("pipeline: '%s' is read on several stages but shares FSDP unit '%s'", g->vals[lp].name,
                           un->name);
        if (st) break;
        int G = !un ? g->vals[lp].grad : un->grad_acc >= 0 ? un->grad_acc : un->grad_shard;
        int part[HP_PP_MAX_STAGES] = {0}, nparts = 0;
        if (slot < 0) slot = rg->ctx.nslots++;
        uint64_t holders = hp_pp_ranks_of(p, p->val_mask[gp]);
        if (__builtin_popcountll(holders) < 2) continue; /* one rank's chunks hold every part */
        for (int t = 0; t < p->stages && !st; t++) {
            if (!(holders & hp_pp_bit(t))) continue;
            if (t == p->stage) {
                part[nparts++] = G;
                continue;
            }
            char nm[HP_NAME_LEN];
            snprintf(nm, sizeof nm, "%.70s.stage%d", g->vals[G].name, t);
            int r = hp_graph_value(g, HP_V_ACT, g->vals[G].dtype, g->vals[G].shape, nm);
            part[nparts++] = r;
            /* pairwise in stage order: the lower stage sends first, the higher receives first */
            if (p->stage < t) {
                hp_comm_op_send(g, G, p->axis, t, slot, HP_PHASE_OPT);
                hp_comm_op_recv(g, r, p->axis, t, slot, HP_PHASE_OPT);
            } else {
                hp_comm_op_recv(g, r, p->axis, t, slot, HP_PHASE_OPT);
                hp_comm_op_send(g, G, p->axis, t, slot, HP_PHASE_OPT);
            }
            st = hp_graph_error(g);
        }
        int acc = part[0];
        for (int i = 1; i < nparts && !st; i++) {
            char nm[HP_NAME_LEN];
            snprintf(nm, sizeof nm, "%.70s.stages%d", global->vals[gp].name, i + 1);
            int sum = hp_graph_value(g, HP_V_ACT, g->vals[G].dtype, g->vals[G].shape, nm);
            int in[2] = {acc, part[i]};
            if (sum < 0 || hp_graph_node_into(g, &hp_op_add, in, 2, &sum, 1, NULL, HP_PHASE_OPT, -1) < 0)
                st = hp_graph_error(g);
            acc = sum;
        }
        if (!st) {
            g->vals[acc].persistent = 1, g->vals[acc].no_grad = 1;
            if (un) {
                un->grad_sum = acc;
            } else {
                g->vals[acc].grad_of = lp;
                g->vals[lp].grad = acc;
            }
            p->nshared++;
        }
    }
    free(ids);
    if (!st) st = hp_rank_graph_sync_nodes(rg);
    return st;
}

hp_status hp_pass_pp_split_backward(int *nsplit, const hp_pp_plan *p, hp_rank_graph *rg) {
    *nsplit = 0;
    if (p->axis < 0 || p->kind != HP_PP_ZBH1) return HP_OK;
    hp_graph *g = rg->g;
    int n0 = g->nnodes;
    for (int i = 0; i < n0; i++) {
        if (g->nodes[i].phase != HP_PHASE_BWD) continue;
        int w = hp_linear_bwd_split_node(g, i);
        if (w < 0) {
            HP_TRY(hp_graph_error(g));
            continue;
        }
        HP_TRY(hp_rank_graph_sync_nodes(rg));
        rg->hint[w] = HP_HINT_AFTER(i);
        rg->node_of[w] = rg->node_of[i];
        ++*nsplit;
    }
    return HP_OK;
}
