/* bf16 conversions (bit-exact against core/tensor.h's hp_f32_to_bf16, round to
 * nearest even, NaN stays NaN), sum of squares against a double reference,
 * the causal property of attention, cross-entropy ignoring padded columns, and
 * the accuracy of the kernels' vectorised expf. */
#include "core/tensor.h"
#include "kernels/kernels.h"
#include "kernels/kvec.h"
#include "kref.h"

static float bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void test_bf16(hp_pool *pool) {
    hp_test_rng rng = {777};
    long n = 70000;
    float *x = kr_fnew(n), *y = kr_fnew(65536);
    uint16_t *h = malloc((size_t)n * sizeof(uint16_t)), *all = malloc(65536 * sizeof(uint16_t));
    uint32_t special[] = {0x00000000u,
                          0x80000000u,
                          0x3f808000u /* tie: stays even */,
                          0x3f818000u /* tie: rounds up to even */,
                          0x3f80c000u,
                          0x7f7fffffu /* max -> inf */,
                          0x7f800000u,
                          0xff800000u,
                          0x7f800001u /* NaN with low payload */,
                          0xffc00000u,
                          0x00000001u /* denormal */,
                          0x007fffffu,
                          0x3f7fffffu};
    long ns = (long)(sizeof special / sizeof special[0]);
    for (long i = 0; i < ns; i++) x[i] = bits_f(special[i]);
    for (long i = ns; i < n; i++) x[i] = bits_f((uint32_t)(hp_test_uniform(&rng) * 4294967296.0));
    hp_k_f32_to_bf16(pool, h, x, n);
    long bad = 0;
    for (long i = 0; i < n; i++) bad += h[i] != hp_f32_to_bf16(x[i]);
    CHECK(bad == 0);
    CHECK(h[2] == 0x3f80 && h[3] == 0x3f82 && h[4] == 0x3f81 && h[5] == 0x7f80);
    CHECK(h[8] == 0x7fc0); /* NaN stays NaN (quiet) */
    /* every bf16 value widens exactly and converts back to itself (NaNs stay NaN) */
    for (long i = 0; i < 65536; i++) all[i] = (uint16_t)i;
    hp_k_bf16_to_f32(pool, y, all, 65536);
    hp_k_f32_to_bf16(pool, h, y, 65536);
    long bad2 = 0;
    for (long i = 0; i < 65536; i++) {
        bad2 += y[i] != hp_bf16_to_f32(all[i]) && !isnan(y[i]);
        bad2 += isnan(y[i]) ? !isnan(hp_bf16_to_f32(h[i])) : h[i] != all[i];
    }
    CHECK(bad2 == 0);
    free(x), free(y), free(h), free(all);
}

static void test_sumsq(hp_pool *pool) {
    hp_test_rng rng = {99};
    long sizes[] = {0, 1, 7, 64, 1000, 100003};
    float *x = kr_fnew(100003);
    kr_randn(&rng, x, 100003, 2.0);
    for (int k = 0; k < 6; k++) {
        long n = sizes[k];
        long double ref = 0;
        for (long i = 0; i < n; i++) ref += (long double)x[i] * x[i];
        double s = hp_k_sumsq(pool, x, n);
        CHECK_NEAR(s, (double)ref, 1e-12 * (double)ref); /* double sums of exact squares */
        CHECK(hp_k_sumsq(pool, x, n) == s);
    }
    free(x);
}

/* Changing token t*'s q, k and v leaves the outputs (and probabilities) of
 * every earlier token exactly as they were, and changes the later ones. */
static void test_causal(hp_pool *pool) {
    hp_test_rng rng = {31337};
    long B = 2, T = 150, C = 32, NH = 4, ts = 70;
    long nq = B * T * 3 * C, no = B * T * C, na = B * NH * T * T;
    float *qkv = kr_fnew(nq), *o1 = kr_fnew(no), *o2 = kr_fnew(no), *a1 = kr_fnew(na),
          *a2 = kr_fnew(na);
    float *scr = kr_fnew((long)hp_k_attention_scratch(B, T, C, NH, hp_pool_size(pool)));
    kr_randn(&rng, qkv, nq, 1.0);
    hp_k_attention_fwd(pool, o1, a1, qkv, scr, B, T, C, NH);
    for (long b = 0; b < B; b++)
        for (long c = 0; c < 3 * C; c++) qkv[(b * T + ts) * 3 * C + c] += 5.0f;
    hp_k_attention_fwd(pool, o2, a2, qkv, scr, B, T, C, NH);
    long diff_before = 0, diff_after = 0;
    for (long b = 0; b < B; b++)
        for (long t = 0; t < T; t++)
            for (long c = 0; c < C; c++) {
                int d = o1[(b * T + t) * C + c] != o2[(b * T + t) * C + c];
                if (t < ts)
                    diff_before += d;
                else
                    diff_after += d;
            }
    CHECK(diff_before == 0);
    CHECK(diff_after == B * (T - ts) * C); /* the test can fail: later rows do change */
    long pdiff = 0;
    for (long p = 0; p < B * NH; p++)
        for (long i = 0; i < ts; i++)
            for (long j = 0; j < T; j++)
                pdiff += a1[(p * T + i) * T + j] != a2[(p * T + i) * T + j];
    CHECK(pdiff == 0);
    free(qkv), free(o1), free(o2), free(a1), free(a2), free(scr);
}

/* Huge, -inf-free garbage in the padded columns changes nothing. */
static void test_xent_padding(hp_pool *pool) {
    long N = 4, V = 50, Vp = 64;
    int32_t tg[4] = {0, 49, 3, 17};
    hp_test_rng rng = {5};
    float *lg = kr_fnew(N * Vp), *p1 = kr_fnew(N * Vp), *p2 = kr_fnew(N * Vp), *l = kr_fnew(N);
    float m1, m2;
    kr_randn(&rng, lg, N * Vp, 4.0);
    hp_k_xent_fwd(pool, p1, l, &m1, lg, tg, N, V, Vp);
    for (long n = 0; n < N; n++)
        for (long v = V; v < Vp; v++) lg[n * Vp + v] = 1e30f;
    hp_k_xent_fwd(pool, p2, l, &m2, lg, tg, N, V, Vp);
    CHECK(m1 == m2);
    CHECK(memcmp(p1, p2, (size_t)(N * Vp) * sizeof(float)) == 0);
    double s = 0;
    for (long v = 0; v < Vp; v++) s += p2[v];
    CHECK_NEAR(s, 1.0, 1e-6);
    free(lg), free(p1), free(p2), free(l);
}

static void test_expf(void) {
    double worst = 0;
    for (double x = -87.0; x <= 88.7; x += 0.000731) {
        float xf = (float)x;
        double e = fabs((double)hp_kv_expf(xf) - exp((double)xf)) / exp((double)xf);
        if (e > worst) worst = e;
    }
    CHECK(worst < 2.5e-7); /* about 2 ulp */
    CHECK(hp_kv_expf(0.0f) == 1.0f);
    CHECK(hp_kv_expf(-100.0f) == 0.0f);
    CHECK(isinf(hp_kv_expf(89.0f)) && isinf(hp_kv_expf(1000.0f)));
    CHECK(isnan(hp_kv_expf(NAN)));
}

int main(void) {
    hp_kernels_init();
    hp_pool *p2;
    CHECK_OK(hp_pool_create(&p2, 2));
    hp_pool *pools[2] = {NULL, p2};
    for (int k = 0; k < 2; k++) {
        test_bf16(pools[k]);
        test_sumsq(pools[k]);
        test_causal(pools[k]);
        test_xent_padding(pools[k]);
    }
    test_expf();
    hp_pool_destroy(p2);
    return hp_test_finish("test_kernels_misc");
}
