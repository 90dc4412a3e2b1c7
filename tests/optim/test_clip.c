/* Gradient clipping by global norm, on hand-checkable numbers: the norm over
 * several tensors (one empty, one spanning several blocks), no change at or
 * below max_norm or when off, and exact scaling above it; the norm and the
 * factor on their own (for callers that fuse the scaling). */
#include <stdlib.h>

#include "optim/clip.h"
#include "testutil.h"

int main(void) {
    hp_pool *pool;
    CHECK_OK(hp_pool_create(&pool, 2));
    /* 3-4-5 */
    float a[1] = {3.0f}, b[1] = {-4.0f}, e[1] = {0};
    float *g[3] = {a, e, b};
    long sizes[3] = {1, 0, 1};
    CHECK(hp_clip_scratch(sizes, 3) == 2);
    double scratch[2];
    CHECK(hp_clip_grad_norm(pool, g, scratch, sizes, 3, 0.0f) == 5.0f); /* off */
    CHECK(a[0] == 3.0f && b[0] == -4.0f);
    CHECK(hp_clip_grad_norm(pool, g, scratch, sizes, 3, 5.0f) == 5.0f); /* not above max */
    CHECK(a[0] == 3.0f && b[0] == -4.0f);
    CHECK(hp_clip_grad_norm(NULL, g, scratch, sizes, 3, 1.0f) == 5.0f);
    CHECK_NEAR(a[0], 0.6, 1e-6);
    CHECK_NEAR(b[0], -0.8, 1e-6);
    CHECK(a[0] == 3.0f * (float)(1.0 / (5.0 + 1e-6)));
    /* the halves: the norm in double and the factor (1 when off or not above) */
    a[0] = 3.0f, b[0] = -4.0f;
    CHECK(hp_grad_global_norm(pool, g, scratch, sizes, 3) == 5.0);
    CHECK(a[0] == 3.0f && b[0] == -4.0f);
    CHECK(hp_clip_scale(5.0, 0.0f) == 1.0f && hp_clip_scale(5.0, 5.0f) == 1.0f);
    CHECK(hp_clip_scale(5.0, 1.0f) == (float)(1.0 / (5.0 + 1e-6)));

    /* many blocks: n values of 0.5 and one of 2 -> norm^2 = n/4 + 4 */
    long n = 3 * HP_CLIP_BLOCK + 5;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * 1);
    for (long i = 0; i < n; i++) x[i] = 0.5f;
    y[0] = 2.0f;
    float *gg[2] = {x, y};
    long ss[2] = {n, 1};
    CHECK(hp_clip_scratch(ss, 2) == 5);
    double sc[5];
    double want = sqrt(n / 4.0 + 4.0);
    float n1 = hp_clip_grad_norm(NULL, gg, sc, ss, 2, 0.0f);
    float n2 = hp_clip_grad_norm(pool, gg, sc, ss, 2, 0.0f);
    CHECK_NEAR(n1, want, 1e-4);
    CHECK(n1 == n2);
    hp_clip_grad_norm(pool, gg, sc, ss, 2, 2.0f);
    CHECK_NEAR(hp_clip_grad_norm(pool, gg, sc, ss, 2, 0.0f), 2.0, 1e-5);
    CHECK_NEAR(x[n - 1], 0.5 * 2.0 / want, 1e-6);
    CHECK_NEAR(y[0], 2.0 * 2.0 / want, 1e-6);
    free(x);
    free(y);
    hp_pool_destroy(pool);
    return hp_test_finish("test_clip");
}
