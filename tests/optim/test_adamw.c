/* AdamW: one step against hand-computed numbers, several steps against a
 * double-precision reference, and identical bytes for every pool size and for
 * the many-tensor form. */
#include <stdlib.h>

#include "optim/adamw.h"
#include "testutil.h"

static void test_one_step_by_hand(void) {
    /* p = 1, g = 0.5, lr 0.1, betas 0.9/0.999, eps 1e-8, wd 0.01, t = 1:
     * m = 0.05, v = 0.00025, mh = 0.5, vh = 0.25,
     * p = 1 - 0.1 (0.5 / (0.5 + 1e-8) + 0.01) = 0.899 (+2e-9) */
    float p = 1.0f, g = 0.5f, m = 0.0f, v = 0.0f;
    hp_adamw_hparams hp = {0.9f, 0.999f, 1e-8f};
    hp_adamw_update(NULL, &p, &m, &v, &g, 1, 0.1f, 0.01f, &hp, 1);
    CHECK_NEAR(m, 0.05, 1e-7);
    /* (1 - 0.999f) is 0.00099998713 in fp32, as in llm.c */
    const double omb2 = (double)(1.0f - 0.999f);
    CHECK_NEAR(v, 0.25 * omb2, 1e-11);
    CHECK_NEAR(v, 0.00025, 5e-9);
    CHECK_NEAR(p, 0.899, 1e-6);
    /* second step, g = -0.5: m = 0.045 - 0.05 = -0.005, v = 0.00024975 + 0.00025,
     * mh = -0.005 / 0.19, vh = 0.00049975 / 0.001999 */
    g = -0.5f;
    float p1 = p;
    hp_adamw_update(NULL, &p, &m, &v, &g, 1, 0.1f, 0.01f, &hp, 2);
    double mh = -0.005 / (1 - 0.81), vh = 0.00049975 / (1 - 0.998001);
    double want = p1 - 0.1 * (mh / (sqrt(vh) + 1e-8) + 0.01 * p1);
    CHECK_NEAR(m, -0.005, 1e-7);
    CHECK_NEAR(v, (double)0.999f * 0.25 * omb2 + 0.25 * omb2, 1e-11);
    CHECK_NEAR(p, want, 2e-6);
    /* zero gradient, zero state: pure decoupled weight decay */
    float q = 2.0f, z = 0.0f, mq = 0.0f, vq = 0.0f;
    hp_adamw_update(NULL, &q, &mq, &vq, &z, 1, 0.5f, 0.1f, &hp, 1);
    CHECK_NEAR(q, 2.0 * (1 - 0.05), 1e-6);
}

static void test_reference_several_steps(hp_pool *pool) {
    const long n = 1000;
    const int steps = 12;
    float *p = malloc(sizeof(float) * n), *g = malloc(sizeof(float) * n);
    float *m = calloc((size_t)n, sizeof(float)), *v = calloc((size_t)n, sizeof(float));
    double *rp = malloc(sizeof(double) * n), *rm = calloc((size_t)n, sizeof(double));
    double *rv = calloc((size_t)n, sizeof(double));
    hp_test_rng r = {42};
    for (long i = 0; i < n; i++) rp[i] = p[i] = (float)hp_test_normal(&r);
    const float b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f;
    hp_adamw_hparams hp = {b1, b2, eps};
    double maxrel = 0;
    for (int t = 1; t <= steps; t++) {
        float lr = 1e-2f * (float)t / steps;
        for (long i = 0; i < n; i++) g[i] = (float)(hp_test_normal(&r) * (i % 7 == 0 ? 1e-3 : 1.0));
        hp_adamw_update(pool, p, m, v, g, n, lr, wd, &hp, t);
        for (long i = 0; i < n; i++) {
            rm[i] = b1 * rm[i] + (1.0 - b1) * g[i];
            rv[i] = b2 * rv[i] + (1.0 - b2) * (double)g[i] * g[i];
            double mh = rm[i] / (1.0 - pow(b1, t)), vh = rv[i] / (1.0 - pow(b2, t));
            rp[i] -= lr * (mh / (sqrt(vh) + eps) + wd * rp[i]);
        }
    }
    for (long i = 0; i < n; i++) {
        double rel = fabs(p[i] - rp[i]) / (fabs(rp[i]) + 1e-3);
        if (!(rel <= maxrel)) maxrel = rel;
        /* fp32 state: a few ulps of the gradient's scale (about 1) per step */
        double gs = i % 7 == 0 ? 1e-3 : 1.0;
        CHECK_NEAR(m[i], rm[i], 1e-6 * gs);
        CHECK_NEAR(v[i], rv[i], 1e-6 * gs * gs);
    }
    CHECK(maxrel < 1e-5);
    /* the parameters did move (by about lr per step) */
    double moved = 0;
    hp_test_rng r0 = {42};
    for (long i = 0; i < n; i++) moved += fabs(p[i] - (float)hp_test_normal(&r0));
    CHECK(moved / n > 1e-2);
    free(p);
    free(g);
    free(m);
    free(v);
    free(rp);
    free(rm);
    free(rv);
}

/* Odd sizes, several tensors, different weight decays: the many-tensor form on
 * pools of 1..4 threads and tensor-by-tensor calls give the same bytes. */
static void test_pool_invariance(hp_pool **pools, int npools) {
    const long sizes[4] = {1, 17, 1003, 33};
    const float wds[4] = {0.0f, 0.1f, 0.01f, 0.0f};
    long total = 0;
    for (int k = 0; k < 4; k++) total += sizes[k];
    float *init = malloc(sizeof(float) * total), *grad = malloc(sizeof(float) * total * 3);
    hp_test_rng r = {5};
    for (long i = 0; i < total; i++) init[i] = (float)hp_test_normal(&r);
    for (long i = 0; i < total * 3; i++) grad[i] = (float)hp_test_normal(&r);
    hp_adamw_hparams hp = {0.9f, 0.999f, 1e-8f};
    float *res[5];
    for (int run = 0; run <= npools; run++) {
        float *st = malloc(sizeof(float) * total * 3); /* param | m | v */
        memcpy(st, init, sizeof(float) * total);
        memset(st + total, 0, sizeof(float) * total * 2);
        for (int t = 1; t <= 3; t++) {
            const float *g = grad + (t - 1) * total;
            if (run < npools) {
                hp_adamw_tensor ts[4];
                long off = 0;
                for (int k = 0; k < 4; k++) {
                    ts[k] = (hp_adamw_tensor){st + off, st + total + off, st + 2 * total + off,
                                              g + off, sizes[k], wds[k]};
                    off += sizes[k];
                }
                hp_adamw_update_many(pools[run], ts, 4, total, 3e-3f, &hp, t);
            } else {
                long off = 0;
                for (int k = 0; k < 4; k++) {
                    hp_adamw_update(NULL, st + off, st + total + off, st + 2 * total + off,
                                    g + off, sizes[k], 3e-3f, wds[k], &hp, t);
                    off += sizes[k];
                }
            }
        }
        res[run] = st;
    }
    for (int run = 1; run <= npools; run++)
        CHECK(memcmp(res[0], res[run], sizeof(float) * total * 3) == 0);
    CHECK(memcmp(res[0], init, sizeof(float) * total) != 0);
    for (int run = 0; run <= npools; run++) free(res[run]);
    free(init);
    free(grad);
}

int main(void) {
    hp_pool *pools[4];
    for (int i = 0; i < 4; i++) CHECK_OK(hp_pool_create(&pools[i], i + 1));
    test_one_step_by_hand();
    test_reference_several_steps(pools[1]);
    test_pool_invariance(pools, 4);
    for (int i = 0; i < 4; i++) hp_pool_destroy(pools[i]);
    return hp_test_finish("test_adamw");
}
