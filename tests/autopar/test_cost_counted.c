/* The cost model's communication volumes (autopar/cost: the calls of every
 * collective node of a rank's compiled program, priced by autopar/volume)
 * equal the bytes and messages the comm layer counts (hp_comm_rank_tier_stats)
 * in one real training step, for every rank and both tiers, over a grid of
 * plans on a tiny GPT-2 and 4 rank-threads: DP, TP, DP x TP, ZeRO-1 and 2,
 * FSDP (its gathers into the supernode's shared store or transient slots),
 * the fsdp2 style, HSDP, a pipeline of 2 stages (its sends; each rank
 * predicted with its stage's partners), each in one supernode and over 2
 * emulated supernodes. (Expert parallelism's all-to-all is left out: its
 * counts follow the routing, and the model prices a balanced one.) */
#include <string.h>

#include "autopar/cost.h"
#include "engine/fixture.h"
#include "models/gpt2_plan.h"
#include "runtime/dist.h"

typedef struct {
    const char *name;
    int pp, rep, dp, tp;
    const char *fsdp; /* the plan's fsdp settings, NULL: none */
    int micro;
} grid_case;

static hp_status rank_step(hp_dist_rank *r, void *c) {
    (void)c;
    float loss = 0;
    return hp_program_run_actions(r->prog, &loss, &r->c.sched.step, &(hp_step_io){0});
}

static hp_status reset_stats(hp_dist_rank *r, void *w) {
    hp_comm_rank_reset_stats(hp_comm_world_rank(w, r->rank));
    return HP_OK;
}

static int run_case(const gpt2_fixture *f, const grid_case *k, int sn) {
    hp_plan plan;
    CHECK_OK(k->pp > 1 ? hp_plan_gpt2_pp(&plan, k->pp, k->rep, k->dp, k->tp) : hp_plan_gpt2(&plan, k->rep, k->dp, k->tp));
    if (k->fsdp) CHECK_OK(hp_plan_set_fsdp(&plan, k->fsdp, "test"));
    int n = k->pp * k->rep * k->dp * k->tp;
    hp_comm_opts co;
    hp_comm_opts_default(&co);
    co.supernodes = sn, co.ranks_per_supernode = n / sn, co.mpi = 0;
    co.inter_bw_gbps = 20, co.inter_latency_us = 0;
    hp_comm_world *w = NULL;
    CHECK_OK(hp_comm_world_create(&w, &co));
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_dist_config cfg = {.model = f->g, .plan = &plan, .world = w, .threads_per_rank = 1};
    cfg.compile = (hp_compile_opts){.train = 1, .optim = &oc, .max_norm = 1.0f, .schedule = {.overlap = 1},
                                    .grad_accum = k->micro, .pp = {.kind = HP_PP_1F1B, .chunks = 1},
                                    .supernode_ranks = sn > 1 ? n / sn : 0};
    hp_dist *d = NULL;
    CHECK_OK(hp_dist_create(&d, &cfg));
    int bad = 0;
    if (d) {
        CHECK_OK(hp_dist_run(d, rank_step, NULL)); /* a first step: what grows, grows */
        CHECK_OK(hp_dist_run(d, reset_stats, w));
        CHECK_OK(hp_dist_run(d, rank_step, NULL));
    }
    hp_profile p;
    memset(&p, 0, sizeof p);
    hp_cluster cl = {.supernodes = sn, .ranks_per_supernode = n / sn, .world = n, .intra_bandwidth_GBps = 1,
                     .inter_bandwidth_GBps = 1, .peak_fp32_flops = 1e9, .peak_bf16_flops = 1e9, .memory_GB = 1};
    hp_cost_env env = {.profile = &p, .cluster = &cl, .compute_scale = 1, .links_from_cluster = 3,
                       .a2a_fuse_bytes = co.a2a_fuse_bytes};
    for (int i = 0; d && i < hp_dist_nranks(d); i++) {
        const hp_compiled *me = &hp_dist_rank_at(d, i)->c, *st[8];
        int ns = me->pp.axis >= 0 ? me->pp.stages : 1, stage = me->pp.axis >= 0 ? me->pp.stage : 0;
        /* the rank's stage partners: the ranks with its coordinates but on "pp" */
        int coord[HP_MESH_MAX_DIMS];
        for (int s = 0; s < ns; s++) {
            hp_mesh_coords(coord, &me->mesh, me->rank);
            if (me->pp.axis >= 0) coord[me->pp.axis] = s;
            st[s] = &hp_dist_rank_at(d, hp_mesh_rank(&me->mesh, coord))->c;
        }
        hp_cost c;
        CHECK_OK(hp_cost_predict(&c, st, ns, &env, 0));
        int64_t bytes[2], msgs[2];
        hp_comm_rank_tier_stats(hp_comm_world_rank(w, me->rank), bytes, msgs);
        for (int t = 0; t < 2; t++) {
            int ok = (double)bytes[t] == c.stage_bytes[stage][t] && (double)msgs[t] == c.stage_msgs[stage][t];
            if (!ok || i == 0)
                printf("%-16s sn %d rank %d %s: counted %lld B %lld msgs, predicted %.0f B %.0f msgs%s\n", k->name, sn,
                       me->rank, t ? "inter" : "intra", (long long)bytes[t], (long long)msgs[t],
                       c.stage_bytes[stage][t], c.stage_msgs[stage][t], ok ? "" : "  <-- differs");
            bad += !ok;
        }
        hp_cost_free(&c);
    }
    CHECK(bad == 0);
    hp_dist_destroy(d);
    hp_comm_world_destroy(w);
    hp_plan_free(&plan);
    return bad;
}

int main(void) {
    hp_kernels_init();
    gpt2_fixture m = {.c = {.L = 4, .NH = 4, .C = 64, .V = 256, .maxT = 32}};
    CHECK_OK(hp_gpt2_config_check(&m.c));
    CHECK_OK(hp_graph_create(&m.g)); /* the forward graph: hp_compile differentiates it */
    CHECK_OK(hp_gpt2_build(m.g, &m.io, &m.c, 8, 32));
    static const grid_case grid[] = {
        {"dp=4", 1, 1, 4, 1, NULL, 1},
        {"tp=4", 1, 1, 1, 4, NULL, 1},
        {"dp=2,tp=2", 1, 1, 2, 2, NULL, 1},
        {"zero-1", 1, 1, 4, 1, "shard=dp level=1", 1},
        {"zero-2", 1, 1, 4, 1, "shard=dp level=2", 1},
        {"fsdp", 1, 1, 4, 1, "shard=dp level=3", 1},
        {"fsdp style=fsdp2", 1, 1, 4, 1, "shard=dp level=3 style=fsdp2", 1},
        {"hsdp", 1, 2, 2, 1, "shard=dp replicate=rep level=3", 1},
        {"pp=2,dp=2", 2, 1, 2, 1, NULL, 2},
        {"pp=2,tp=2", 2, 1, 1, 2, NULL, 4},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof grid / sizeof grid[0]; i++)
        for (int sn = 1; sn <= 2; sn++) bad += run_case(&m, &grid[i], sn);
    printf("%d rank-tier counts differ\n", bad);
    hp_graph_destroy(m.g);
    return hp_test_finish("test_cost_counted");
}
