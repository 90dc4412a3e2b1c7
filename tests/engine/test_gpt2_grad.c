/* Whole-model gradient check on a tiny GPT-2: the backward graph built by
 * autodiff against central finite differences of the loss, in random
 * directions over all parameters and entry by entry on a sample of entries. */
#include "fixture.h"
#include "core/rng.h"
#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "ops/ops.h"
#include "runtime/program.h"
#include "testutil.h"

static double run_loss(hp_program *p, int loss) {
    CHECK_OK(hp_program_run(p, HP_PHASE_FWD));
    return ((float *)hp_program_data(p, loss))[0];
}

int main(void) {
    const int B = 2, T = 5;
    gpt2_fixture f;
    fixture_build(&f, (hp_gpt2_config){.L = 2, .NH = 2, .C = 8, .V = 11, .Vp = 16, .maxT = 6}, B, T, -1);
    hp_gpt2_config c = f.c;
    hp_graph *g = f.g;
    hp_gpt2_io io = f.io;
    hp_param_store ps = f.ps;
    CHECK(ps.n == 4 + 12 * c.L);
    size_t count = 0;
    for (int i = 0; i < ps.n; i++) count += hp_param_numel(&ps, i);
    CHECK(count == hp_gpt2_num_params(&c));

    /* Larger-than-GPT-2 random weights so every path carries signal. */
    hp_rng rng;
    hp_rng_seed(&rng, 7);
    for (int i = 0; i < ps.n; i++) {
        float *p = hp_param_ptr(&ps, i);
        for (size_t k = 0; k < hp_param_numel(&ps, i); k++) p[k] = (float)(0.3 * hp_rng_normal(&rng));
        if (strcmp(ps.name[i], "wte") == 0) /* padded rows stay 0 */
            memset(p + (size_t)c.V * c.C, 0, (size_t)(c.Vp - c.V) * c.C * sizeof(float));
    }
    hp_pool *pool;
    CHECK_OK(hp_pool_create(&pool, 2));
    hp_program *prog;
    CHECK_OK(hp_program_create(&prog, g, &ps, pool));
    int32_t *tok = hp_program_data(prog, io.tokens), *tgt = hp_program_data(prog, io.targets);
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)c.V);
        tgt[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)c.V);
    }
    double L0 = run_loss(prog, io.loss);
    CHECK_OK(hp_program_run(prog, HP_PHASE_BWD));
    size_t total = ps.total;
    float *grad = malloc(total * sizeof(float));
    memcpy(grad, hp_program_grads(prog), total * sizeof(float));
    CHECK(L0 > 0.5 && L0 < 20);

    /* padded vocabulary rows of wte get exactly zero gradient */
    int iw = hp_param_store_find(&ps, "wte");
    for (size_t k = (size_t)c.V * c.C; k < (size_t)c.Vp * c.C; k++) CHECK(grad[ps.offset[iw] + k] == 0.0f);

    /* Directional derivatives: tolerance 2% relative (fp32 forward, h = 1e-2). */
    const double h = 1e-2;
    float *dir = malloc(total * sizeof(float));
    float *base = malloc(total * sizeof(float));
    memcpy(base, ps.data, total * sizeof(float));
    for (int rep = 0; rep < 4; rep++) {
        double gd = 0;
        for (size_t k = 0; k < total; k++) {
            dir[k] = (float)hp_rng_normal(&rng);
            gd += (double)dir[k] * grad[k];
        }
        for (size_t k = 0; k < total; k++) ps.data[k] = base[k] + (float)(h * dir[k]);
        double lp = run_loss(prog, io.loss);
        for (size_t k = 0; k < total; k++) ps.data[k] = base[k] - (float)(h * dir[k]);
        double lm = run_loss(prog, io.loss);
        double fd = (lp - lm) / (2 * h);
        CHECK_NEAR(fd, gd, 0.02 * fabs(gd) + 1e-3);
    }
    memcpy(ps.data, base, total * sizeof(float));

    /* Entry by entry: the 3 largest-gradient entries of every tensor. */
    for (int i = 0; i < ps.n; i++) {
        size_t n = hp_param_numel(&ps, i), off = ps.offset[i];
        for (int pick = 0; pick < 3 && pick < (int)n; pick++) {
            size_t best = 0;
            float bv = -1;
            for (size_t k = 0; k < n; k++) {
                float a = fabsf(grad[off + k]);
                if (a > bv && dir[off + k] != 12345.0f) bv = a, best = k;
            }
            dir[off + best] = 12345.0f; /* mark as used */
            float keep = ps.data[off + best];
            ps.data[off + best] = keep + (float)h;
            double lp = run_loss(prog, io.loss);
            ps.data[off + best] = keep - (float)h;
            double lm = run_loss(prog, io.loss);
            ps.data[off + best] = keep;
            double fd = (lp - lm) / (2 * h), an = grad[off + best];
            if (!(fabs(fd - an) <= 0.03 * fabs(an) + 2e-4))
                fprintf(stderr, "param %s[%zu]: analytic %.6g, finite difference %.6g\n", ps.name[i], best, an, fd);
            CHECK(fabs(fd - an) <= 0.03 * fabs(an) + 2e-4);
        }
    }
    /* Running the step again reproduces loss and gradients bit for bit. */
    double L1 = run_loss(prog, io.loss);
    CHECK_OK(hp_program_run(prog, HP_PHASE_BWD));
    CHECK(L1 == L0);
    CHECK(memcmp(grad, hp_program_grads(prog), total * sizeof(float)) == 0);

    free(grad), free(dir), free(base);
    hp_program_destroy(prog);
    hp_pool_destroy(pool);
    fixture_free(&f);
    return hp_test_finish("test_gpt2_grad");
}
