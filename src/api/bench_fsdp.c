/* api/bench_fsdp: hp_bench_fsdp_row — GPT-2's training step under plain data
 * parallel (replicated, all-reduce), FSDP or HSDP in either style, on rank
 * threads spread over emulated supernodes whose link the comm layer
 * throttles (hp_comm_opts inter_bw_gbps, inter_latency_us); hp_api_bench_fsdp,
 * the same run with any optimizer (api/bench_muon's rows). */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "models/gpt2_plan.h"

hp_status hp_api_bench_fsdp(hp_api_bench_out *o, const hp_bench_fsdp_config *cfg, const hp_optim_config *oc) {
    memset(o, 0, sizeof *o);
    int n = cfg->ranks, reps = cfg->replicas > 1 ? cfg->replicas : 1, S = cfg->supernodes > 0 ? cfg->supernodes : 1;
    if (cfg->steps < 1 || cfg->threads < 1 || cfg->B < 1 || cfg->T < 1 || n < 1)
        return hp_errorf("hp_bench_fsdp_row: steps, threads, B, T and ranks must be >= 1");
    if (n % reps || n % S)
        return hp_errorf("hp_bench_fsdp_row: %d ranks do not split into %d replicas and %d supernodes", n, reps, S);
    if (reps > 1 && !cfg->fsdp) return hp_errorf("hp_bench_fsdp_row: replicas need FSDP settings (HSDP)");
    hp_plan plan;
    HP_TRY(hp_plan_gpt2(&plan, reps, n / reps, 1));
    hp_status st = HP_OK;
    if (cfg->fsdp) {
        char set[256];
        snprintf(set, sizeof set, "shard=dp%s %s", reps > 1 ? " replicate=rep" : "", cfg->fsdp);
        st = hp_plan_set_fsdp(&plan, set, "hp_bench_fsdp_row");
    }
    hp_comm_opts co;
    hp_comm_opts_default(&co);
    co.mpi = 0;
    co.supernodes = S;
    co.ranks_per_supernode = n / S;
    co.inter_bw_gbps = cfg->inter_bw_gbps;
    co.inter_latency_us = cfg->inter_latency_us;
    hp_comm_world *w = NULL, *given = cfg->world && n > 1 ? cfg->world->w : NULL;
    if (!st && given && (hp_comm_world_size(given) != n || hp_comm_supernodes(given) != S))
        st = hp_errorf("hp_bench_fsdp_row: the world has %d ranks in %d supernodes, the row %d in %d",
                       hp_comm_world_size(given), hp_comm_supernodes(given), n, S);
    if (!st) st = given ? HP_OK : hp_comm_world_create(&w, &co);
    hp_gpt2_config mc = {cfg->model.layers, cfg->model.heads, cfg->model.channels, cfg->model.vocab, 0,
                         cfg->model.max_seq};
    if (!st) st = hp_api_bench_plan(o, &mc, cfg->B, cfg->T, &plan, given ? given : w, cfg->threads, cfg->steps, 1,
                                      cfg->bf16 ? HP_BF16 : HP_F32, oc);
    hp_comm_world_destroy(w);
    hp_plan_free(&plan);
    return st;
}

hp_status hp_bench_fsdp_row(hp_bench_fsdp_result *res, const hp_bench_fsdp_config *cfg) {
    memset(res, 0, sizeof *res);
    hp_api_bench_out o;
    HP_TRY(hp_api_bench_fsdp(&o, cfg, NULL));
    double hidden = o.busy_s > 0 ? 1.0 - o.wait_s / o.busy_s : 0;
    *res = (hp_bench_fsdp_result){cfg->B * cfg->T / o.step_s, o.step_s * 1e3, o.compute_s * 1e3, o.wait_s * 1e3,
                                  o.comm_s * 1e3, o.optimizer_s * 1e3, o.busy_s * 1e3,
                                  100 * (hidden > 0 ? hidden : 0), o.memory_bytes / 1e6};
    return HP_OK;
}
