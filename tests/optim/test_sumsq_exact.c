/* optim/sumsq_exact: the exact sum of squares. Small integers (whose squares
 * add exactly in double) give their exact sum; a random vector of wide
 * exponents gives the same bits however it is cut into pieces, merged in any
 * order, or counted as 2^s replicas weighted 2^-s (the DP and FSDP norms of
 * the deterministic mode), and lies within 1e-15 of a long double reference;
 * subnormals, FLT_MAX, NaN and Inf; the weight shifts. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "optim/sumsq_exact.h"
#include "testutil.h"

#define N 5000

static hp_sumsq_exact acc[8], one, tmp;

static double value_of_pieces(const float *x, const long *cuts, int ncuts, int reverse) {
    hp_sumsq_exact total;
    hp_sumsq_exact_clear(&total);
    for (int p = 0; p < ncuts - 1; p++) {
        hp_sumsq_exact_clear(&acc[p]);
        hp_sumsq_exact_add(&acc[p], x + cuts[p], cuts[p + 1] - cuts[p], 0);
    }
    for (int p = 0; p < ncuts - 1; p++) hp_sumsq_exact_merge(&total, &acc[reverse ? ncuts - 2 - p : p]);
    return hp_sumsq_exact_value(&total);
}

int main(void) {
    /* exact small sums */
    float ints[5] = {1, -2, 3, 4096, -0.5f};
    hp_sumsq_exact_clear(&one);
    hp_sumsq_exact_add(&one, ints, 5, 0);
    CHECK(hp_sumsq_exact_value(&one) == 1 + 4 + 9 + 4096.0 * 4096 + 0.25);
    hp_sumsq_exact_clear(&one);
    CHECK(hp_sumsq_exact_value(&one) == 0);

    /* a wide-range random vector */
    static float x[N];
    hp_test_rng r = {12345};
    long double ref = 0;
    for (int i = 0; i < N; i++) {
        x[i] = (float)ldexp(hp_test_uniform(&r) - 0.5, (int)floor(hp_test_uniform(&r) * 60) - 30);
        ref += (long double)x[i] * (long double)x[i];
    }
    long whole[2] = {0, N}, cuts1[5] = {0, 1000, 1001, 3333, N}, cuts2[8] = {0, 7, 625, 1250, 2500, 2501, 4999, N};
    double v0 = value_of_pieces(x, whole, 2, 0), v1 = value_of_pieces(x, cuts1, 5, 0),
           v2 = value_of_pieces(x, cuts2, 8, 1);
    CHECK(memcmp(&v0, &v1, 8) == 0 && memcmp(&v0, &v2, 8) == 0);
    CHECKF(fabsl((long double)v0 - ref) <= 1e-15L * ref, "value %.17g, reference %.17Lg", v0, ref);
    /* 4 replicas weighted 1/4 each, and a replica of 2 weighted 1/2 mixed with an unweighted piece */
    hp_sumsq_exact_clear(&one);
    for (int k = 0; k < 4; k++) hp_sumsq_exact_add(&one, x, N, 2);
    double v4 = hp_sumsq_exact_value(&one);
    CHECK(memcmp(&v0, &v4, 8) == 0);
    hp_sumsq_exact_clear(&one);
    hp_sumsq_exact_add(&one, x, 2000, 0);
    hp_sumsq_exact_clear(&tmp);
    hp_sumsq_exact_add(&tmp, x + 2000, N - 2000, 1);
    hp_sumsq_exact_add(&tmp, x + 2000, N - 2000, 1);
    hp_sumsq_exact_merge(&one, &tmp);
    double vm = hp_sumsq_exact_value(&one);
    CHECK(memcmp(&v0, &vm, 8) == 0);

    /* the extremes: subnormals and FLT_MAX (its square fits a double) */
    float ext[3] = {FLT_TRUE_MIN, FLT_MIN, FLT_MAX};
    hp_sumsq_exact_clear(&one);
    hp_sumsq_exact_add(&one, ext, 3, 0);
    double want = (double)FLT_MAX * FLT_MAX + (double)FLT_MIN * FLT_MIN + (double)FLT_TRUE_MIN * FLT_TRUE_MIN;
    CHECKF(hp_sumsq_exact_value(&one) == want, "extremes: %.17g, want %.17g", hp_sumsq_exact_value(&one), want);
    hp_sumsq_exact_clear(&one);
    hp_sumsq_exact_add(&one, ext, 1, 31); /* the smallest square at the largest shift */
    CHECK(hp_sumsq_exact_value(&one) == ldexp(1.0, -298 - 31));
    /* 2^20 equal squares carry across a bin's 64 low bits */
    static float same[1 << 20];
    for (int i = 0; i < (1 << 20); i++) same[i] = 16777215.0f; /* m = 2^24 - 1: m^2 near 2^48 */
    hp_sumsq_exact_clear(&one);
    hp_sumsq_exact_add(&one, same, 1 << 20, 0);
    CHECK(hp_sumsq_exact_value(&one) == 16777215.0 * 16777215.0 * (double)(1 << 20));

    /* NaN wins over Inf, Inf over finite */
    float bad[3] = {1, INFINITY, 2};
    hp_sumsq_exact_clear(&one);
    hp_sumsq_exact_add(&one, bad, 3, 0);
    CHECK(isinf(hp_sumsq_exact_value(&one)));
    bad[2] = NAN;
    hp_sumsq_exact_add(&one, bad + 2, 1, 0);
    CHECK(isnan(hp_sumsq_exact_value(&one)));

    CHECK(hp_sumsq_exact_shift(1.0f) == 0 && hp_sumsq_exact_shift(0.25f) == 2 && hp_sumsq_exact_shift(0.125f) == 3);
    CHECK(hp_sumsq_exact_shift(1.0f / 3) == -1 && hp_sumsq_exact_shift(2.0f) == -1 && hp_sumsq_exact_shift(0) == -1);
    return hp_test_finish("test_sumsq_exact");
}
