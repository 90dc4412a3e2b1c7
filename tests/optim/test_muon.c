/* Muon's elementwise parts: both momentum conventions with and without
 * Nesterov (by numbers and against each other), the update scales, and the
 * weight-decayed update. */
#include <cblas.h>
#include <stdlib.h>

#include "optim/muon.h"
#include "optim/newton_schulz.h"
#include "testutil.h"

static void test_momentum_numbers(hp_pool *pool) {
    const float b = 0.95f;
    float g1[3] = {1.0f, -2.0f, 0.5f}, g2[3] = {0.5f, 1.0f, -1.0f};
    float m[3], u[3];
    /* EMA + Nesterov: M1 = (1-b) G1, U1 = (1-b) G1 + b M1 = (1-b)(1+b) G1 */
    memset(m, 0, sizeof m);
    hp_muon_momentum_update(pool, u, m, g1, 3, b, HP_MUON_EMA, 1);
    for (int i = 0; i < 3; i++) {
        CHECK_NEAR(m[i], 0.05 * g1[i], 1e-7);
        CHECK_NEAR(u[i], 0.05 * 1.95 * g1[i], 1e-7);
    }
    /* step 2: M2 = b M1 + (1-b) G2, U2 = (1-b) G2 + b M2 */
    hp_muon_momentum_update(pool, u, m, g2, 3, b, HP_MUON_EMA, 1);
    for (int i = 0; i < 3; i++) {
        double m2 = 0.95 * 0.05 * g1[i] + 0.05 * g2[i];
        CHECK_NEAR(m[i], m2, 1e-7);
        CHECK_NEAR(u[i], 0.05 * g2[i] + 0.95 * m2, 1e-7);
    }
    /* EMA without Nesterov: U = M */
    memset(m, 0, sizeof m);
    hp_muon_momentum_update(pool, u, m, g1, 3, b, HP_MUON_EMA, 0);
    hp_muon_momentum_update(pool, u, m, g2, 3, b, HP_MUON_EMA, 0);
    for (int i = 0; i < 3; i++) {
        CHECK_NEAR(m[i], 0.95 * 0.05 * g1[i] + 0.05 * g2[i], 1e-7);
        CHECK(u[i] == m[i]);
    }
    /* sum + Nesterov: M1 = G1, U1 = G1 + b G1; M2 = b G1 + G2, U2 = G2 + b M2 */
    memset(m, 0, sizeof m);
    hp_muon_momentum_update(pool, u, m, g1, 3, b, HP_MUON_SUM, 1);
    for (int i = 0; i < 3; i++) {
        CHECK(m[i] == g1[i]);
        CHECK_NEAR(u[i], 1.95 * g1[i], 1e-6);
    }
    hp_muon_momentum_update(pool, u, m, g2, 3, b, HP_MUON_SUM, 1);
    for (int i = 0; i < 3; i++) {
        double m2 = 0.95 * g1[i] + g2[i];
        CHECK_NEAR(m[i], m2, 1e-6);
        CHECK_NEAR(u[i], g2[i] + 0.95 * m2, 1e-6);
    }
    /* sum without Nesterov */
    memset(m, 0, sizeof m);
    hp_muon_momentum_update(pool, u, m, g1, 3, b, HP_MUON_SUM, 0);
    hp_muon_momentum_update(pool, u, m, g2, 3, b, HP_MUON_SUM, 0);
    for (int i = 0; i < 3; i++) {
        CHECK_NEAR(u[i], 0.95 * g1[i] + g2[i], 1e-6);
        CHECK(u[i] == m[i]);
    }
    /* u may alias the gradient */
    float g[3] = {1.0f, 2.0f, 3.0f};
    memset(m, 0, sizeof m);
    hp_muon_momentum_update(pool, g, m, g, 3, b, HP_MUON_SUM, 1);
    CHECK_NEAR(g[2], 3.0 * 1.95, 1e-6);
    CHECK(m[2] == 3.0f);
}

/* The two conventions point the same way: U_ema = (1-b) U_sum at every step,
 * so after Newton-Schulz (which normalises) the updates agree. */
static void test_conventions_agree(hp_pool *pool) {
    const long R = 24, C = 40, n = R * C;
    const float b = 0.9f;
    float *g = malloc(sizeof(float) * n), *me = calloc((size_t)n, sizeof(float));
    float *ms = calloc((size_t)n, sizeof(float)), *ue = malloc(sizeof(float) * n);
    float *us = malloc(sizeof(float) * n), *oe = malloc(sizeof(float) * n);
    float *os = malloc(sizeof(float) * n);
    float *scratch = malloc(sizeof(float) * hp_newton_schulz_scratch(R, C));
    hp_ns_config cfg;
    CHECK_OK(hp_ns_config_named(&cfg, "quintic"));
    hp_test_rng r = {3};
    for (int step = 0; step < 4; step++) {
        for (long i = 0; i < n; i++) g[i] = (float)hp_test_normal(&r);
        hp_muon_momentum_update(pool, ue, me, g, n, b, HP_MUON_EMA, 1);
        hp_muon_momentum_update(pool, us, ms, g, n, b, HP_MUON_SUM, 1);
        double worst = 0;
        for (long i = 0; i < n; i++) {
            /* fp32 rounding relative to the values' scale (gradients ~ 1) */
            double d = fabs(ue[i] - (1.0 - b) * us[i]) / ((1.0 - b) * (fabs(us[i]) + 1.0));
            if (!(d <= worst)) worst = d;
        }
        CHECK(worst < 1e-6);
        hp_newton_schulz(pool, oe, ue, scratch, R, C, &cfg);
        hp_newton_schulz(pool, os, us, scratch, R, C, &cfg);
        double od = 0;
        for (long i = 0; i < n; i++) od = fmax(od, fabs(oe[i] - os[i]));
        CHECK(od < 1e-4);
    }
    free(g);
    free(me);
    free(ms);
    free(ue);
    free(us);
    free(oe);
    free(os);
    free(scratch);
}

static void test_scales_and_apply(hp_pool *pool) {
    CHECK_NEAR(hp_muon_scale(HP_MUON_SCALE_KELLER, 768, 3072), 1.0, 1e-7);
    CHECK_NEAR(hp_muon_scale(HP_MUON_SCALE_KELLER, 3072, 768), 2.0, 1e-7);
    CHECK_NEAR(hp_muon_scale(HP_MUON_SCALE_KELLER, 768, 768), 1.0, 1e-7);
    CHECK_NEAR(hp_muon_scale(HP_MUON_SCALE_KELLER, 2304, 768), sqrt(3.0), 1e-6);
    CHECK_NEAR(hp_muon_scale(HP_MUON_SCALE_MOONLIGHT, 768, 3072), 0.2 * sqrt(3072.0), 1e-5);
    CHECK_NEAR(hp_muon_scale(HP_MUON_SCALE_MOONLIGHT, 3072, 768), 0.2 * sqrt(3072.0), 1e-5);
    CHECK_NEAR(hp_muon_scale(HP_MUON_SCALE_MOONLIGHT, 100, 100), 2.0, 1e-6);

    /* W <- W (1 - lr wd) - lr s O */
    float w[37], o[37];
    for (int i = 0; i < 37; i++) {
        w[i] = 0.1f * (float)(i - 18);
        o[i] = (float)((i % 5) - 2);
    }
    float w0[37];
    memcpy(w0, w, sizeof w);
    hp_muon_apply(pool, w, o, 37, 0.02f, 0.1f, 2.0f);
    for (int i = 0; i < 37; i++) CHECK_NEAR(w[i], w0[i] * (1 - 0.002) - 0.04 * o[i], 1e-6);
    /* no decay, zero update: unchanged */
    float zeros[37] = {0};
    memcpy(w, w0, sizeof w);
    hp_muon_apply(pool, w, zeros, 37, 0.02f, 0.0f, 1.0f);
    CHECK(memcmp(w, w0, sizeof w) == 0);
}

static void test_parse(void) {
    hp_muon_momentum m;
    hp_muon_scale_mode s;
    CHECK_OK(hp_muon_momentum_parse(&m, "sum"));
    CHECK(m == HP_MUON_SUM);
    CHECK_OK(hp_muon_momentum_parse(&m, "average"));
    CHECK(m == HP_MUON_EMA);
    CHECK_ERR(hp_muon_momentum_parse(&m, "heavy"), "muon_momentum: unknown momentum form 'heavy'");
    CHECK_OK(hp_muon_scale_parse(&s, "moonlight"));
    CHECK(s == HP_MUON_SCALE_MOONLIGHT);
    CHECK_ERR(hp_muon_scale_parse(&s, "jordan"), "muon_scale: unknown update scale 'jordan'");
    CHECK(!strcmp(hp_muon_scale_name(HP_MUON_SCALE_KELLER), "keller"));
    CHECK(!strcmp(hp_muon_momentum_name(HP_MUON_SUM), "sum"));
}

int main(void) {
    openblas_set_num_threads(1);
    hp_pool *pool;
    CHECK_OK(hp_pool_create(&pool, 2));
    test_momentum_numbers(pool);
    test_momentum_numbers(NULL);
    test_conventions_agree(pool);
    test_scales_and_apply(pool);
    test_parse();
    hp_pool_destroy(pool);
    return hp_test_finish("test_muon");
}
