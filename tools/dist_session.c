#include "dist_session.h"

#include <stdlib.h>
#include <string.h>

#include "core/autodiff.h"
#include "kernels/kernels.h"
#include "ops/ops.h"
#include "session.h"

hp_status hp_dist_session_create(hp_dist_session *s, const hp_gpt2_config *m, hp_plan *plan, int B, int T,
                                 int threads, double comm_timeout) {
    memset(s, 0, sizeof *s);
    s->plan = *plan;
    s->have_plan = 1;
    s->m = *m;
    HP_TRY(hp_gpt2_config_check(&s->m));
    hp_kernels_init();
    HP_TRY(hp_graph_create(&s->g));
    HP_TRY(hp_gpt2_build(s->g, &s->io, &s->m, B, T));
    HP_TRY(hp_autodiff(s->g, s->io.loss, &hp_op_add));
    s->layouts = calloc((size_t)s->g->nvals, sizeof *s->layouts);
    s->fixed = calloc((size_t)s->g->nvals, 1);
    if (!s->layouts || !s->fixed) return hp_errorf("out of memory");
    HP_TRY(hp_dist_layouts_from_plan(s->layouts, s->fixed, &s->plan, s->g));

    int nprocs = 1;
    const char *env = getenv("OMPI_COMM_WORLD_SIZE");
    if (env) nprocs = atoi(env) > 0 ? atoi(env) : 1;
    int n = hp_mesh_size(&s->plan.mesh);
    if (n % nprocs) return hp_errorf("the plan's %d ranks cannot be spread over %d processes", n, nprocs);
    hp_comm_opts co;
    hp_comm_opts_default(&co);
    co.ranks_per_supernode = n / nprocs;
    co.timeout_s = comm_timeout;
    HP_TRY(hp_comm_world_create(&s->world, &co));
    int per = threads / (n / nprocs);
    hp_dist_config dc = {.g = s->g, .mesh = s->plan.mesh, .layouts = s->layouts, .fixed = s->fixed,
                         .world = s->world, .threads_per_rank = per > 0 ? per : 1};
    return hp_dist_create(&s->d, &dc);
}

hp_status hp_dist_session_init_params(hp_dist_session *s, uint64_t seed, const char *init_path) {
    hp_session init;
    HP_TRY(hp_session_create(&init, &s->m, 1, 1, 1, 0));
    hp_status st = init_path && init_path[0] ? hp_session_import_llmc(&init, init_path) : hp_session_init_params(&init, seed);
    if (!st) st = hp_dist_scatter_params(s->d, &init.ps);
    hp_session_destroy(&init);
    return st;
}

int hp_dist_session_lead(const hp_dist_session *s) {
    int first, count;
    hp_comm_hosted_ranks(s->world, &first, &count);
    return first == 0;
}

void hp_dist_session_destroy(hp_dist_session *s) {
    hp_dist_destroy(s->d);
    hp_comm_world_destroy(s->world);
    free(s->layouts);
    free(s->fixed);
    hp_graph_destroy(s->g);
    if (s->have_plan) hp_plan_free(&s->plan);
    memset(s, 0, sizeof *s);
}
