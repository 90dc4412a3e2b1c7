/* parallel/optim_phase: the optimizer-phase pass (see the header). */
#include "parallel/optim_phase.h"

#include <stdlib.h>
#include <string.h>

#include "parallel/muon_dist.h"

#include "parallel/rank.h"

/* Every trained parameter whole: Muon refused on those distributed Muon does
 * not handle (a tensor-parallel cut; parallel/muon_dist), all named at once. */
static hp_status check_muon(const hp_graph *g, const hp_rank_graph *rg, const hp_mesh *m, const hp_muon_plan *plan,
                            const hp_optim_config *cfg, const int *ids, int np) {
    if (cfg->kind != HP_OPT_MUON) return HP_OK;
    int *whole = malloc(sizeof(int) * (size_t)(np ? np : 1)), *sharded = malloc(sizeof(int) * (size_t)(np ? np : 1));
    if (!whole || !sharded) {
        free(whole), free(sharded);
        return hp_errorf("optimizer phase: out of memory");
    }
    int n = 0;
    for (int k = 0; k < np; k++) {
        int p = ids[k], gp = rg->global_of[p];
        if (g->vals[p].grad < 0 || gp < 0) continue;
        int s = 0;
        for (int i = 0; i < plan->nmat; i++)
            if (plan->mat[i].v == gp && !hp_muon_dist_handles(plan, i, m)) s = 1;
        whole[n] = p, sharded[n] = s, n++;
    }
    hp_status st = hp_optim_check_sharded_muon(g, cfg, whole, sharded, n);
    free(whole), free(sharded);
    return st;
}

hp_status hp_pass_optimizer(hp_optim_phase_io *io, hp_rank_graph *rg, const hp_graph *global,
                            const hp_propagation *prop, const hp_mesh *m, const hp_optim_config *cfg,
                            float max_norm, const hp_fsdp_plan *fsdp, const hp_pp_plan *pipe) {
    int pp_axis = pipe ? pipe->axis : -1;
    hp_graph *g = rg->g;
    int np = hp_graph_params(g, NULL, 0);
    int *ids = malloc(sizeof(int) * (size_t)(np ? np : 1));
    hp_optim_phase_param *pp = malloc(sizeof *pp * (size_t)(np ? np : 1));
    if (!ids || !pp) {
        free(ids), free(pp);
        return hp_errorf("optimizer phase: out of memory");
    }
    hp_graph_params(g, ids, np);
    int n = 0;
    hp_muon_plan plan;
    memset(&plan, 0, sizeof plan);
    hp_status st = HP_OK;
    if (cfg->kind == HP_OPT_MUON && hp_mesh_size(m) > 1)
        st = hp_muon_plan_build_as(&plan, global, prop, m, fsdp && fsdp->level > 0 ? fsdp : NULL, cfg,
                                   (hp_muon_dist)cfg->muon_dist);
    if (!st) st = check_muon(g, rg, m, &plan, cfg, ids, np);
    for (int k = 0; k < np && !st; k++) {
        int p = ids[k], gp = rg->global_of[p];
        if (g->vals[p].grad < 0 || gp < 0) continue; /* not trained */
        const hp_layout *l = &prop->val[gp];
        int fsdp_managed = fsdp && fsdp->unit_of[k] >= 0;
        int replicas = 1, sharded = 0, cut = 0, nd = g->vals[p].shape.ndim;
        for (int a = 0; a < l->ndim; a++) {
            if (a == pp_axis) {
                replicas *= hp_pp_copies(pipe, gp);
                continue;
            }
            if (l->p[a].kind == HP_REPLICATE && !(fsdp_managed && a == fsdp->shard_axis)) replicas *= m->size[a];
            /* a cut of a matrix's rows or columns; a stack's leading dims leave its matrices whole */
            if (l->p[a].kind == HP_SHARD && m->size[a] > 1) sharded = 1, cut |= l->p[a].dim >= nd - 2;
        }
        if (fsdp_managed) {
            int got = hp_fsdp_optim_pieces(&pp[n], fsdp, rg, p, k, replicas);
            if (got < 0) st = hp_graph_error(g);
            else n += got;
            continue;
        }
        pp[n++] = (hp_optim_phase_param){p, g->vals[p].grad, replicas, sharded, -1, sharded && !cut};
    }
    int exact = rg->ctx.tree; /* the deterministic mode: the norm summed exactly, combined even on one rank */
    if (!st) st = hp_optim_phase_norm(io, g, pp, n, exact);
    if (!st && (hp_mesh_size(m) > 1 || exact)) {
        int sum = hp_graph_value(g, HP_V_ACT, HP_F64, hp_shape1(1), "opt.sumsq");
        hp_attrs a = {{hp_mesh_size(m)}, {0}};
        int node = hp_graph_node_into(g, exact ? &hp_op_sumsq_combine_exact : &hp_op_sumsq_combine,
                                      &io->sumsq_local, 1, &sum, 1, &a, HP_PHASE_OPT, -1);
        if (node >= 0) {
            g->vals[sum].persistent = 1;
            io->sumsq = sum;
        }
        st = hp_graph_error(g);
    }
    unsigned char *taken = calloc((size_t)(n ? n : 1), 1);
    if (!st && !taken) st = hp_errorf("optimizer phase: out of memory");
    if (!st && plan.nmat) st = hp_pass_muon_dist(io, rg, m, cfg, max_norm, fsdp, &plan, pp, n, taken);
    int rest = 0;
    for (int k = 0; !st && k < n; k++)
        if (!taken[k]) pp[rest++] = pp[k];
    if (!st) st = hp_optim_phase_updates(io, g, cfg, max_norm, pp, rest);
    if (!st) st = hp_rank_graph_sync_nodes(rg);
    hp_muon_plan_free(&plan);
    free(ids), free(pp), free(taken);
    return st;
}
