/* Gradient equivalence: GPT-2 under data, tensor and data x tensor parallel
 * plans (ranks as threads) against the same model on one rank, on the same
 * batch: the loss agrees and every gathered parameter gradient has a maximum
 * relative error <= 1e-5; replicated gradients agree across ranks bit for bit. */
#include "fixture.h"
#include "core/rng.h"
#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "models/gpt2_plan.h"
#include "ops/ops.h"
#include "runtime/dist.h"
#include "runtime/program.h"
#include "testutil.h"

typedef struct {
    hp_dist *d;
    const int32_t *tokens, *targets;
    int tok_v, tgt_v;
} step_ctx;

static hp_status rank_step(hp_dist_rank *r, void *c_) {
    step_ctx *c = c_;
    const hp_rank_graph *rg = &r->c.rg;
    hp_dist_scatter_value(c->d, r, c->tok_v, hp_program_data(r->prog, rg->map[c->tok_v]), c->tokens);
    hp_dist_scatter_value(c->d, r, c->tgt_v, hp_program_data(r->prog, rg->map[c->tgt_v]), c->targets);
    HP_TRY(hp_program_run(r->prog, HP_PHASE_FWD));
    return hp_program_run(r->prog, HP_PHASE_BWD);
}

int main(void) {
    const int B = 4, T = 8;
    gpt2_fixture f;
    fixture_build(&f, (hp_gpt2_config){.L = 2, .NH = 4, .C = 32, .V = 200, .Vp = 256, .maxT = 16}, B, T, 11);
    hp_gpt2_config c = f.c;
    hp_graph *g = f.g;
    hp_gpt2_io io = f.io;
    hp_param_store ps = f.ps; /* reference: one rank */
    hp_rng rng;
    hp_rng_seed(&rng, 5);
    int32_t tokens[B * T], targets[B * T];
    for (int i = 0; i < B * T; i++) {
        tokens[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)c.V);
        targets[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)c.V);
    }
    hp_pool *pool;
    CHECK_OK(hp_pool_create(&pool, 1));
    hp_program *ref;
    CHECK_OK(hp_program_create(&ref, g, &ps, pool));
    memcpy(hp_program_data(ref, io.tokens), tokens, sizeof tokens);
    memcpy(hp_program_data(ref, io.targets), targets, sizeof targets);
    CHECK_OK(hp_program_run(ref, HP_PHASE_FWD));
    CHECK_OK(hp_program_run(ref, HP_PHASE_BWD));
    float ref_loss = ((float *)hp_program_data(ref, io.loss))[0];
    const float *ref_grad = hp_program_grads(ref);

    const int cfgs[][2] = {{2, 1}, {1, 2}, {2, 2}};
    for (int ci = 0; ci < 3; ci++) {
        int dp = cfgs[ci][0], tp = cfgs[ci][1], n = dp * tp;
        hp_plan plan;
        CHECK_OK(hp_plan_gpt2_dp_tp(&plan, dp, tp));
        hp_comm_opts co;
        hp_comm_opts_default(&co);
        co.ranks_per_supernode = n;
        co.mpi = 0;
        co.timeout_s = 60;
        hp_comm_world *world;
        CHECK_OK(hp_comm_world_create(&world, &co));
        hp_dist_config dc = {.model = g, .plan = &plan, .world = world, .threads_per_rank = 1,
                             .compile = {.train = 1}};
        hp_dist *d = NULL;
        CHECK_OK(hp_dist_create(&d, &dc));
        if (!d) return hp_test_finish("test_dist_grad");
        CHECK_OK(hp_dist_scatter_params(d, &ps));
        step_ctx sc = {d, tokens, targets, io.tokens, io.targets};
        CHECK_OK(hp_dist_run(d, rank_step, &sc));

        /* gather every rank's gradient pieces into whole tensors */
        float *got = calloc(ps.total, sizeof(float));
        float *seen = calloc(ps.total, sizeof(float));
        int mismatch_replicas = 0;
        for (int ri = 0; ri < hp_dist_nranks(d); ri++) {
            hp_dist_rank *r = hp_dist_rank_at(d, ri);
            float loss = ((float *)hp_program_data(r->prog, r->c.rg.loss))[0];
            CHECK_NEAR(loss, ref_loss, 1e-6 * fabs(ref_loss));
            for (int k = 0; k < r->ps.n; k++) {
                int gi = hp_param_store_find(&ps, r->ps.name[k]);
                int v = hp_graph_find(g, r->ps.name[k]);
                size_t numel = (size_t)hp_shape_numel(&ps.shape[gi]);
                float *tmp = calloc(numel, sizeof(float));
                hp_dist_insert_value(d, r, v, tmp, hp_program_grads(r->prog) + r->ps.offset[k]);
                float *mark = calloc(numel, sizeof(float));
                /* mark the entries this rank holds */
                float *ones = malloc(hp_param_numel(&r->ps, k) * sizeof(float));
                for (size_t e = 0; e < hp_param_numel(&r->ps, k); e++) ones[e] = 1.0f;
                hp_dist_insert_value(d, r, v, mark, ones);
                for (size_t e = 0; e < numel; e++) {
                    if (mark[e] == 0) continue;
                    float *dst = got + ps.offset[gi] + e;
                    if (seen[ps.offset[gi] + e] && *dst != tmp[e]) mismatch_replicas++;
                    *dst = tmp[e];
                    seen[ps.offset[gi] + e] = 1;
                }
                free(ones), free(mark), free(tmp);
            }
        }
        CHECK(mismatch_replicas == 0);
        double worst = 0;
        for (int i = 0; i < ps.n; i++) {
            size_t numel = hp_param_numel(&ps, i), off = ps.offset[i];
            double maxref = 0, maxdiff = 0;
            for (size_t e = 0; e < numel; e++) {
                CHECK(seen[off + e] == 1.0f);
                double a = got[off + e], b = ref_grad[off + e];
                maxref = fmax(maxref, fabs(b));
                maxdiff = fmax(maxdiff, fabs(a - b));
            }
            double rel = maxref > 0 ? maxdiff / maxref : maxdiff;
            if (rel > 1e-5) fprintf(stderr, "dp=%d tp=%d: %s: max relative error %.3g\n", dp, tp, ps.name[i], rel);
            CHECK(rel <= 1e-5);
            worst = fmax(worst, rel);
        }
        printf("dp=%d tp=%d: loss %.7f (1 rank %.7f), worst gradient relative error %.3g\n", dp, tp,
               ((float *)hp_program_data(hp_dist_rank_at(d, 0)->prog, hp_dist_rank_at(d, 0)->c.rg.loss))[0], ref_loss,
               worst);
        free(got), free(seen);
        hp_dist_destroy(d);
        hp_comm_world_destroy(world);
        hp_plan_free(&plan);
    }
    hp_program_destroy(ref);
    hp_pool_destroy(pool);
    fixture_free(&f);
    return hp_test_finish("test_dist_grad");
}
