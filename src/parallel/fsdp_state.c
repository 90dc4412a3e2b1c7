/* parallel/fsdp_state: FSDP's run-time state of one rank (hp_fsdp_rt, see
 * parallel/fsdp.h): the request slots and, per style and precision, the
 * staging and bf16 reduction buffers; made by the compile's rank-state hook. */
#include "parallel/fsdp.h"

#include <stdlib.h>

#include "core/alloc.h"
#include "parallel/rank.h"

hp_status hp_fsdp_rt_attach(hp_rank_ctx *ctx, const void *plan, const hp_mesh_comm *mc, int rank, float *params,
                            uint16_t *params16, float *slots) {
    return hp_fsdp_rt_create(&ctx->fsdp, plan, mc, rank, params, params16, slots);
}

void hp_fsdp_rt_detach(hp_rank_ctx *ctx) {
    hp_fsdp_rt_destroy(ctx->fsdp);
    ctx->fsdp = NULL;
}

hp_status hp_fsdp_rt_create(hp_fsdp_rt **out, const hp_fsdp_plan *plan, const hp_mesh_comm *mc, int rank,
                            float *params, uint16_t *params16, float *slots) {
    if (plan->gather_bf16 && !params16) return hp_errorf("fsdp gather=bf16: the parameter store has no bf16 mirror");
    if (plan->transient && !slots) return hp_errorf("fsdp: the parameter store has no slots for the gathered units");
    *out = NULL;
    hp_fsdp_rt *rt = calloc(1, sizeof *rt);
    int n = 3 * (plan->nunits ? plan->nunits : 1);
    if (rt) {
        rt->req = calloc((size_t)n, sizeof *rt->req);
        rt->args = calloc((size_t)n, sizeof *rt->args);
        rt->tens = calloc((size_t)n, sizeof *rt->tens);
    }
    if (!rt || !rt->req || !rt->args || !rt->tens) {
        hp_fsdp_rt_destroy(rt);
        return hp_errorf("fsdp: out of memory");
    }
    rt->plan = plan;
    rt->params = params;
    rt->params16 = plan->gather_bf16 ? params16 : NULL;
    rt->slots = plan->transient ? slots : NULL;
    if (plan->style == HP_FSDP_STYLE_FSDP2) {
        size_t big = hp_fsdp_largest_unit(plan);
        rt->nstaging = plan->prefetch + 1;
        rt->staging = calloc((size_t)rt->nstaging + 1, sizeof *rt->staging);
        for (int i = 0; rt->staging && i <= rt->nstaging; i++) {
            rt->staging[i] = hp_alloc_zeroed(big * sizeof(float));
            if (!rt->staging[i]) break;
        }
        if (!rt->staging || !rt->staging[rt->nstaging]) {
            hp_fsdp_rt_destroy(rt);
            return hp_errorf("fsdp: cannot allocate the fsdp2 style's staging buffers");
        }
    }
    rt->red16_unit[0] = rt->red16_unit[1] = -1;
    if (plan->reduce_bf16) {
        size_t big = hp_fsdp_largest_unit(plan), shard = (big + (size_t)plan->members - 1) / (size_t)plan->members;
        for (int i = 0; i < 2; i++) {
            rt->red16[i] = hp_alloc_zeroed(big * sizeof(uint16_t));
            rt->shard16[i] = hp_alloc_zeroed(shard * sizeof(uint16_t));
            if (!rt->red16[i] || !rt->shard16[i]) {
                hp_fsdp_rt_destroy(rt);
                return hp_errorf("fsdp: cannot allocate the bf16 reduction buffers (2 x %zu bf16)", big);
            }
        }
    }
    rt->shard_group = hp_mesh_comm_group(mc, plan->shard_axis, rank);
    rt->replicate_group = plan->replicate_axis >= 0 ? hp_mesh_comm_group(mc, plan->replicate_axis, rank) : NULL;
    *out = rt;
    return HP_OK;
}

void hp_fsdp_rt_destroy(hp_fsdp_rt *rt) {
    if (!rt) return;
    /* calls a failed step started and never waited for read the rank's buffers until they return */
    for (int i = 0; rt->req && i < 3 * rt->plan->nunits; i++)
        if (rt->req[i]) hp_status_free(hp_comm_wait(rt->req[i])), rt->req[i] = NULL;
    for (int i = 0; rt->staging && i <= rt->nstaging; i++) free(rt->staging[i]);
    free(rt->staging);
    for (int i = 0; i < 2; i++) free(rt->red16[i]), free(rt->shard16[i]);
    free(rt->req), free(rt->args), free(rt->tens);
    free(rt);
}
