/* A 1-rank plan costs what the plain engine costs: compiling GPT-2 through the
 * GPT-2 DP x TP plan on a 1 x 1 mesh gives a local graph with exactly the
 * plain graph's nodes (same operators, attributes, shapes, order) and no
 * redistribution or communicating node; running it gives the plain program's
 * loss and gradients bit for bit. */
#include <string.h>

#include "fixture.h"
#include "models/gpt2_plan.h"
#include "parallel/compile.h"
#include "runtime/dist.h"
#include "runtime/program.h"

int main(void) {
    const int B = 2, T = 8;
    gpt2_fixture f;
    fixture_build(&f, (hp_gpt2_config){.L = 2, .NH = 4, .C = 32, .V = 200, .Vp = 256, .maxT = 16}, B, T, 4);
    hp_plan plan;
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 1, 1));
    hp_layout *layouts = calloc((size_t)f.g->nvals, sizeof *layouts);
    unsigned char *fixed = calloc((size_t)f.g->nvals, 1);
    CHECK_OK(hp_layouts_from_plan(layouts, fixed, &plan, f.g));
    hp_propagation prop;
    CHECK_OK(hp_propagate(&prop, f.g, &plan.mesh, layouts, fixed));
    hp_rank_graph rg;
    CHECK_OK(hp_lower_rank(&rg, f.g, &prop, &plan.mesh, 0, NULL));
    CHECK(rg.nredist[0] == 0 && rg.nredist[1] == 0);
    CHECK(rg.g->nnodes == f.g->nnodes);
    for (int i = 0; i < f.g->nnodes && i < rg.g->nnodes; i++) {
        const hp_node *a = &f.g->nodes[i], *b = &rg.g->nodes[i];
        CHECK(a->op == b->op);
        CHECK(!b->op->communicates);
        CHECK(a->nin == b->nin && a->nout == b->nout && a->phase == b->phase);
        CHECK(memcmp(&a->a, &b->a, sizeof a->a) == 0);
        for (int k = 0; k < a->nout; k++)
            if (a->out[k] >= 0) CHECK(hp_shape_eq(&f.g->vals[a->out[k]].shape, &rg.g->vals[b->out[k]].shape));
    }
    /* same numbers, bit for bit */
    hp_pool *pool;
    CHECK_OK(hp_pool_create(&pool, 2));
    hp_param_store lps;
    CHECK_OK(hp_param_store_create(&lps, rg.g));
    CHECK(lps.total == f.ps.total);
    memcpy(lps.data, f.ps.data, f.ps.total * sizeof(float));
    hp_program *plain, *local;
    CHECK_OK(hp_program_create(&plain, f.g, &f.ps, pool));
    CHECK_OK(hp_program_create(&local, rg.g, &lps, pool));
    int32_t *t0 = hp_program_data(plain, f.io.tokens), *g0 = hp_program_data(plain, f.io.targets);
    int32_t *t1 = hp_program_data(local, rg.map[f.io.tokens]), *g1 = hp_program_data(local, rg.map[f.io.targets]);
    for (int i = 0; i < B * T; i++) t0[i] = t1[i] = (i * 7) % 200, g0[i] = g1[i] = (i * 13 + 5) % 200;
    CHECK_OK(hp_program_run(plain, HP_PHASE_FWD));
    CHECK_OK(hp_program_run(plain, HP_PHASE_BWD));
    CHECK_OK(hp_program_run(local, HP_PHASE_FWD));
    CHECK_OK(hp_program_run(local, HP_PHASE_BWD));
    CHECK(((float *)hp_program_data(plain, f.io.loss))[0] == ((float *)hp_program_data(local, rg.loss))[0]);
    CHECK(memcmp(hp_program_grads(plain), hp_program_grads(local), f.ps.total * sizeof(float)) == 0);
    hp_program_destroy(plain);
    hp_program_destroy(local);
    hp_param_store_free(&lps);
    hp_pool_destroy(pool);
    hp_rank_graph_free(&rg);
    hp_propagation_free(&prop);
    free(layouts), free(fixed);
    hp_plan_free(&plan);
    fixture_free(&f);
    return hp_test_finish("test_plan_1rank");
}
