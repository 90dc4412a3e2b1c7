/* tests/api/fd_params: the finite-difference check the model tests share
 * (test_pangu, test_llama). A model's forward graph — batches of B x T with
 * inputs "tokens" and "targets" over `vocab` tokens — compiled for one rank;
 * its parameters drawn (a name holding norm_key near 1, the rest near 0,
 * standard deviation `scale`, from `seed`); then for each named parameter
 * the loss's central difference along a random direction (step eps) against
 * the gradient's projection on it, within 2% (+1e-4). */
#ifndef HP_TESTS_API_FD_PARAMS_H
#define HP_TESTS_API_FD_PARAMS_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/rng.h"
#include "parallel/compile.h"
#include "runtime/params.h"
#include "runtime/program.h"
#include "testutil.h"

static float fd_loss(hp_program *p, int loss) {
    CHECK_OK(hp_program_run(p, HP_PHASE_FWD));
    return ((float *)hp_program_data(p, loss))[0];
}

static void fd_one(hp_program *p, const hp_compiled *c, hp_param_store *ps, const char *name, hp_rng *rng, float eps) {
    const hp_graph *g = c->rg.g;
    int v = hp_graph_find(g, name), k = hp_param_store_find(ps, name);
    CHECK(v >= 0 && k >= 0 && g->vals[v].grad >= 0);
    if (v < 0 || k < 0) return;
    size_t n = hp_param_numel(ps, k);
    float *w = hp_param_ptr(ps, k), dir[8192];
    CHECK(n <= 8192);
    if (n > 8192) return;
    CHECK_OK(hp_program_run(p, HP_PHASE_FWD));
    CHECK_OK(hp_program_run(p, HP_PHASE_BWD));
    const float *grad = hp_program_data(p, g->vals[v].grad);
    double analytic = 0;
    for (size_t i = 0; i < n; i++) dir[i] = (float)hp_rng_normal(rng), analytic += (double)dir[i] * grad[i];
    for (size_t i = 0; i < n; i++) w[i] += eps * dir[i];
    double lp = fd_loss(p, c->rg.loss);
    for (size_t i = 0; i < n; i++) w[i] -= 2 * eps * dir[i];
    double lm = fd_loss(p, c->rg.loss);
    for (size_t i = 0; i < n; i++) w[i] += eps * dir[i];
    double numeric = (lp - lm) / (2 * eps);
    printf("%-24s analytic %10.6f numeric %10.6f\n", name, analytic, numeric);
    CHECK(fabs(analytic - numeric) <= 0.02 * fabs(numeric) + 1e-4);
}

static void fd_params(const hp_graph *g, int B, int T, int vocab, const char *norm_key, double scale, float eps,
                      uint64_t seed, const char *const *names, int nnames) {
    hp_compile_opts o = {.train = 1};
    hp_compiled c;
    CHECK_OK(hp_compile(&c, g, NULL, 0, &o));
    hp_param_store ps;
    CHECK_OK(hp_param_store_create(&ps, c.rg.g));
    hp_rng rng;
    hp_rng_seed(&rng, seed);
    for (int i = 0; i < ps.n; i++) {
        int norm = strstr(ps.name[i], norm_key) != NULL;
        float *w = hp_param_ptr(&ps, i);
        for (size_t k = 0; k < hp_param_numel(&ps, i); k++) w[k] = (float)((norm ? 1.0 : 0.0) + scale * hp_rng_normal(&rng));
    }
    hp_pool *pool;
    CHECK_OK(hp_pool_create(&pool, 1));
    hp_program *p;
    CHECK_OK(hp_program_create_ordered(&p, c.rg.g, c.sched.order, c.sched.n, &c.mem, &ps, pool, NULL));
    int32_t *tok = hp_program_data(p, hp_graph_find(c.rg.g, "tokens"));
    int32_t *tgt = hp_program_data(p, hp_graph_find(c.rg.g, "targets"));
    for (int i = 0; i < B * T; i++) tok[i] = (i * 7 + 3) % vocab, tgt[i] = (i * 13 + 5) % vocab;
    for (int i = 0; i < nnames; i++) fd_one(p, &c, &ps, names[i], &rng, eps);
    hp_program_destroy(p);
    hp_pool_destroy(pool);
    hp_param_store_free(&ps);
    hp_compiled_free(&c);
}

#endif
