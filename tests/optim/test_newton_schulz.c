/* Newton-Schulz: agrees with a double-precision re-implementation, lands the
 * singular values where each coefficient set should, handles rows > cols by
 * transposing (exactly), and the batched form and every pool size give the
 * bytes of the single form. */
#include <cblas.h>
#include <stdlib.h>

#include "optim/newton_schulz.h"
#include "testutil.h"

static void fill_normal(float *x, long n, unsigned long long seed) {
    hp_test_rng r = {seed};
    for (long i = 0; i < n; i++) x[i] = (float)hp_test_normal(&r);
}

/* The algorithm of REFERENCES.md in double, written plainly. out[rows,cols]. */
static void ns_ref(double *out, const float *in, long rows, long cols, const hp_ns_config *cfg) {
    int tr = rows > cols;
    long r = tr ? cols : rows, c = tr ? rows : cols;
    double *X = malloc(sizeof(double) * r * c), *Y = malloc(sizeof(double) * r * c);
    double *A = malloc(sizeof(double) * r * r), *B = malloc(sizeof(double) * r * r);
    double ss = 0;
    for (long i = 0; i < r; i++)
        for (long j = 0; j < c; j++) {
            X[i * c + j] = tr ? in[j * cols + i] : in[i * cols + j];
            ss += X[i * c + j] * X[i * c + j];
        }
    double s = 1.0 / (cfg->norm_scale * sqrt(ss) + cfg->eps);
    for (long i = 0; i < r * c; i++) X[i] *= s;
    for (int st = 0; st < cfg->steps; st++) {
        double a = cfg->coeffs[st][0], b = cfg->coeffs[st][1], cc = cfg->coeffs[st][2];
        for (long i = 0; i < r; i++)
            for (long j = 0; j < r; j++) {
                double acc = 0;
                for (long k = 0; k < c; k++) acc += X[i * c + k] * X[j * c + k];
                A[i * r + j] = acc;
            }
        for (long i = 0; i < r; i++)
            for (long j = 0; j < r; j++) {
                double acc = 0;
                for (long k = 0; k < r; k++) acc += A[i * r + k] * A[k * r + j];
                B[i * r + j] = b * A[i * r + j] + cc * acc;
            }
        for (long i = 0; i < r; i++)
            for (long j = 0; j < c; j++) {
                double acc = 0;
                for (long k = 0; k < r; k++) acc += B[i * r + k] * X[k * c + j];
                Y[i * c + j] = a * X[i * c + j] + acc;
            }
        double *t = X;
        X = Y;
        Y = t;
    }
    for (long i = 0; i < r; i++)
        for (long j = 0; j < c; j++) {
            if (tr)
                out[j * cols + i] = X[i * c + j];
            else
                out[i * cols + j] = X[i * c + j];
        }
    free(X);
    free(Y);
    free(A);
    free(B);
}

/* Eigenvalues of a symmetric n x n matrix (cyclic Jacobi; a is destroyed). */
static void sym_eig(double *ev, double *a, int n) {
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) off += a[p * n + q] * a[p * n + q];
        if (off < 1e-26) break;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                double apq = a[p * n + q];
                if (fabs(apq) < 1e-300) continue;
                double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < n; k++) { /* columns p, q */
                    double akp = a[k * n + p], akq = a[k * n + q];
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for (int k = 0; k < n; k++) { /* rows p, q */
                    double apk = a[p * n + k], aqk = a[q * n + k];
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
            }
    }
    for (int i = 0; i < n; i++) ev[i] = a[i * n + i];
}

/* Singular values of o[rows,cols] (rows <= cols): sqrt of eig(O O^T), in double. */
static void singular_values(double *sv, const float *o, long rows, long cols) {
    double *g = malloc(sizeof(double) * rows * rows);
    for (long i = 0; i < rows; i++)
        for (long j = 0; j < rows; j++) {
            double acc = 0;
            for (long k = 0; k < cols; k++) acc += (double)o[i * cols + k] * o[j * cols + k];
            g[i * rows + j] = acc;
        }
    sym_eig(sv, g, (int)rows);
    for (long i = 0; i < rows; i++) sv[i] = sqrt(sv[i] > 0 ? sv[i] : 0);
    free(g);
}

static void sv_range(double *lo, double *hi, const float *o, long rows, long cols) {
    double sv[64];
    singular_values(sv, o, rows, cols);
    *lo = 1e30;
    *hi = -1e30;
    for (long i = 0; i < rows; i++) {
        if (sv[i] < *lo) *lo = sv[i];
        if (sv[i] > *hi) *hi = sv[i];
    }
}

static double max_diff_ref(const float *o, const double *ref, long n) {
    double m = 0;
    for (long i = 0; i < n; i++) {
        double d = fabs(o[i] - ref[i]);
        if (!(d <= m)) m = d; /* NaN propagates */
    }
    return m;
}

static void test_against_reference_and_spectrum(hp_pool *pool) {
    const long R = 40, C = 96;
    float *g = malloc(sizeof(float) * R * C), *gt = malloc(sizeof(float) * R * C);
    float *o = malloc(sizeof(float) * R * C), *ot = malloc(sizeof(float) * R * C);
    double *ref = malloc(sizeof(double) * R * C);
    float *scratch = malloc(sizeof(float) * hp_newton_schulz_scratch(R, C));
    fill_normal(g, R * C, 7);
    for (long i = 0; i < R; i++)
        for (long j = 0; j < C; j++) gt[j * R + i] = g[i * C + j];
    const char *names[3] = {"quintic", "perstep", "polar"};
    for (int k = 0; k < 3; k++) {
        hp_ns_config cfg;
        CHECK_OK(hp_ns_config_named(&cfg, names[k]));
        CHECK_OK(hp_ns_config_check(&cfg));
        hp_newton_schulz(pool, o, g, scratch, R, C, &cfg);
        ns_ref(ref, g, R, C, &cfg);
        CHECK(max_diff_ref(o, ref, R * C) < 2e-4);
        /* rows > cols: the transposed problem, against the reference too */
        hp_newton_schulz(pool, ot, gt, scratch, C, R, &cfg);
        ns_ref(ref, gt, C, R, &cfg);
        CHECK(max_diff_ref(ot, ref, R * C) < 2e-4);
        /* and exactly the transpose of the wide result */
        int same = 1;
        for (long i = 0; i < R; i++)
            for (long j = 0; j < C; j++) same &= ot[j * R + i] == o[i * C + j];
        CHECK(same);

        double lo, hi;
        sv_range(&lo, &hi, o, R, C);
        if (k == 0) { /* the fixed quintic: about [0.68, 1.13] */
            CHECK(lo >= 0.675 && hi <= 1.14);
            CHECK(hi > 0.9); /* not collapsed */
        } else if (k == 1) { /* per-step coefficients: tighter than the fixed quintic */
            CHECK(lo >= 0.95 && hi <= 1.05);
        } else { /* Polar Express after 5 steps: within about 15% of 1 */
            CHECK(lo >= 0.84 && hi <= 1.16);
        }
        printf("ns %-8s singular values in [%.4f, %.4f]\n", names[k], lo, hi);
    }
    /* the input's singular values before NS span a wide range (it is a real test) */
    double lo, hi;
    sv_range(&lo, &hi, g, R, C);
    CHECK(hi / lo > 2.5);
    free(g);
    free(gt);
    free(o);
    free(ot);
    free(ref);
    free(scratch);
}

/* Polar Express: ||O O^T - I|| in double, for a square-ish wide matrix */
static double orth_error(const float *o, long R, long C) {
    double fro = 0;
    for (long i = 0; i < R; i++)
        for (long j = 0; j < R; j++) {
            double acc = 0;
            for (long k = 0; k < C; k++) acc += (double)o[i * C + k] * o[j * C + k];
            double d = acc - (i == j);
            fro += d * d;
        }
    return sqrt(fro);
}

/* Polar Express: ||O O^T - I|| in double; closer to orthogonal than the quintic,
 * which only aims at [0.68, 1.13]. */
static void test_polar_orthogonal(hp_pool *pool) {
    const long R = 32, C = 64;
    float *g = malloc(sizeof(float) * R * C), *o = malloc(sizeof(float) * R * C);
    float *scratch = malloc(sizeof(float) * hp_newton_schulz_scratch(R, C));
    fill_normal(g, R * C, 99);
    hp_ns_config cfg;
    CHECK_OK(hp_ns_config_named(&cfg, "polar_express"));
    CHECK(cfg.norm_scale == 1.02f && cfg.eps == 1e-6f);
    hp_newton_schulz(pool, o, g, scratch, R, C, &cfg);
    double polar = orth_error(o, R, C);
    CHECK_OK(hp_ns_config_named(&cfg, "quintic"));
    hp_newton_schulz(pool, o, g, scratch, R, C, &cfg);
    double quintic = orth_error(o, R, C);
    printf("||O O^T - I||_F: polar %.4g, quintic %.4g (of ||I||_F = %.4g)\n", polar, quintic,
           sqrt((double)R));
    CHECK(polar < 0.25 * sqrt((double)R));
    CHECK(polar < 0.75 * quintic);
    free(g);
    free(o);
    free(scratch);
}

static int same_bytes(const float *a, const float *b, long n) {
    return memcmp(a, b, sizeof(float) * (size_t)n) == 0;
}

/* batched == per matrix, any pool size == pool 1, out aliasing in; shapes with
 * several row blocks and a ragged last block, wide and tall. */
static void test_batched_bit_exact(hp_pool **pools, int npools) {
    const long shapes[3][2] = {{300, 200}, {136, 260}, {5, 3}};
    const long count = 3;
    for (int s = 0; s < 3; s++) {
        long R = shapes[s][0], C = shapes[s][1], n = R * C;
        hp_ns_config cfg;
        CHECK_OK(hp_ns_config_named(&cfg, s == 1 ? "polar" : "quintic"));
        float *in = malloc(sizeof(float) * count * n);
        float *one = malloc(sizeof(float) * count * n), *bat = malloc(sizeof(float) * count * n);
        float *scratch = malloc(sizeof(float) * hp_newton_schulz_batched_scratch(count, R, C));
        CHECK(hp_newton_schulz_batched_scratch(count, R, C) ==
              (size_t)count * hp_newton_schulz_scratch(R, C));
        fill_normal(in, count * n, 1234 + (unsigned long long)s);
        for (long k = 0; k < count; k++)
            hp_newton_schulz(NULL, one + k * n, in + k * n, scratch, R, C, &cfg);
        for (int p = 0; p < npools; p++) {
            memset(bat, 0, sizeof(float) * count * n);
            hp_newton_schulz_batched(pools[p], bat, in, scratch, count, R, C, &cfg);
            CHECK(same_bytes(bat, one, count * n));
            memset(bat, 0, sizeof(float) * count * n);
            hp_newton_schulz(pools[p], bat + n, in + n, scratch, R, C, &cfg);
            CHECK(same_bytes(bat + n, one + n, n));
        }
        /* in place */
        memcpy(bat, in, sizeof(float) * count * n);
        hp_newton_schulz_batched(pools[npools - 1], bat, bat, scratch, count, R, C, &cfg);
        CHECK(same_bytes(bat, one, count * n));
        /* the matrices differ, so the test compares different outputs */
        CHECK(!same_bytes(one, one + n, n));
        int finite = 1;
        for (long i = 0; i < count * n; i++) finite &= isfinite(one[i]) && fabsf(one[i]) < 2;
        CHECK(finite);
        free(in);
        free(one);
        free(bat);
        free(scratch);
    }
}

static void test_config_errors(void) {
    hp_ns_config cfg;
    CHECK_ERR(hp_ns_config_named(&cfg, "cubic"), "ns: unknown Newton-Schulz coefficients 'cubic'");
    CHECK_OK(hp_ns_config_named(&cfg, "fixed"));
    CHECK(cfg.steps == 5 && cfg.coeffs[4][0] == 3.4445f && cfg.coeffs[4][2] == 2.0315f);
    CHECK_OK(hp_ns_config_named(&cfg, "hyper"));
    CHECK(cfg.coeffs[0][0] == 4.0848f && cfg.coeffs[4][1] == -3.0525f);
    cfg.steps = 0;
    CHECK_ERR(hp_ns_config_check(&cfg), "ns.steps");
    cfg.steps = 5;
    cfg.eps = 0;
    CHECK_ERR(hp_ns_config_check(&cfg), "ns.eps");
    /* a zero input stays zero (eps keeps the division finite) */
    float z[6] = {0}, o[6] = {1, 1, 1, 1, 1, 1}, scratch[64];
    CHECK(hp_newton_schulz_scratch(2, 3) <= 64);
    CHECK_OK(hp_ns_config_named(&cfg, "quintic"));
    hp_newton_schulz(NULL, o, z, scratch, 2, 3, &cfg);
    for (int i = 0; i < 6; i++) CHECK(o[i] == 0.0f);
}

int main(void) {
    openblas_set_num_threads(1);
    hp_pool *pools[3];
    for (int i = 0; i < 3; i++) CHECK_OK(hp_pool_create(&pools[i], i + 1));
    test_against_reference_and_spectrum(pools[1]);
    test_polar_orthogonal(pools[2]);
    test_batched_bit_exact(pools, 3);
    test_config_errors();
    for (int i = 0; i < 3; i++) hp_pool_destroy(pools[i]);
    return hp_test_finish("test_newton_schulz");
}
