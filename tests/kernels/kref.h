/* tests/kernels/kref: straightforward double-precision reference versions of
 * the kernels (the definitions the tests hold the kernels to), plus helpers
 * to fill and compare buffers. Included by the kernel tests only. */
#ifndef HP_TESTS_KREF_H
#define HP_TESTS_KREF_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* ---- buffers ---- */
static inline float *kr_fnew(long n) {
    float *p = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
    if (!p) abort();
    return p;
}
static inline double *kr_dnew(long n) {
    double *p = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    if (!p) abort();
    return p;
}
/* x[n] ~ N(0, sd^2), rounded to float */
static inline void kr_randn(hp_test_rng *r, float *x, long n, double sd) {
    for (long i = 0; i < n; i++) x[i] = (float)(sd * hp_test_normal(r));
}
static inline void kr_f2d(double *d, const float *f, long n) {
    for (long i = 0; i < n; i++) d[i] = f[i];
}
/* max over i of |a - b| / (atol + rtol |b|); <= 1 means within tolerance.
 * *worst gets the index of the maximum. */
static inline double kr_err(const float *a, const double *b, long n, double atol, double rtol,
                            long *worst) {
    double m = 0.0;
    long w = 0;
    for (long i = 0; i < n; i++) {
        double e =
            (double)a[i] == b[i] ? 0.0 : fabs((double)a[i] - b[i]) / (atol + rtol * fabs(b[i]));
        if (!(e <= m)) {
            m = e;
            w = i;
        }
    }
    if (worst) *worst = w;
    return m;
}
/* One CHECK that a[n] matches b[n] within atol + rtol |b|, naming what. */
#define KR_CHECK_CLOSE(what, a, b, n, atol, rtol)                                                  \
    do {                                                                                           \
        long w_;                                                                                   \
        double e_ = kr_err((a), (b), (n), (atol), (rtol), &w_);                                    \
        if (!(e_ <= 1.0)) {                                                                        \
            fprintf(stderr, "%s:%d: %s: element %ld is %.9g, expected %.9g (err %.3g x tol)\n",    \
                    __FILE__, __LINE__, (what), w_, (double)(a)[w_], (b)[w_], e_);                 \
            hp_test_failures++;                                                                    \
        }                                                                                          \
    } while (0)

/* ---- reference kernels (double) ---- */
static inline void ref_embedding(double *out, const int32_t *ids, const double *table, long N,
                                 long C) {
    for (long n = 0; n < N; n++)
        for (long c = 0; c < C; c++) out[n * C + c] = table[ids[n] * C + c];
}
static inline void ref_add_pos(double *out, const double *inp, const double *pos, long B, long T,
                               long C) {
    for (long b = 0; b < B; b++)
        for (long t = 0; t < T; t++)
            for (long c = 0; c < C; c++)
                out[(b * T + t) * C + c] = inp[(b * T + t) * C + c] + pos[t * C + c];
}
static inline void ref_matmul(double *out, const double *inp, const double *w, const double *bias,
                              long N, long IC, long OC) {
    for (long n = 0; n < N; n++)
        for (long o = 0; o < OC; o++) {
            double s = bias ? bias[o] : 0.0;
            for (long i = 0; i < IC; i++) s += inp[n * IC + i] * w[o * IC + i];
            out[n * OC + o] = s;
        }
}
static inline void ref_layernorm(double *out, double *mean, double *rstd, const double *inp,
                                 const double *w, const double *b, long N, long C, double eps) {
    for (long n = 0; n < N; n++) {
        const double *x = inp + n * C;
        double m = 0, v = 0;
        for (long c = 0; c < C; c++) m += x[c];
        m /= C;
        for (long c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
        v /= C;
        double s = 1.0 / sqrt(v + eps);
        for (long c = 0; c < C; c++) out[n * C + c] = (x[c] - m) * s * w[c] + b[c];
        if (mean) mean[n] = m;
        if (rstd) rstd[n] = s;
    }
}
static inline void ref_rmsnorm(double *out, double *rstd, const double *inp, const double *w,
                               long N, long C, double eps) {
    for (long n = 0; n < N; n++) {
        const double *x = inp + n * C;
        double ss = 0;
        for (long c = 0; c < C; c++) ss += x[c] * x[c];
        double s = 1.0 / sqrt(ss / C + eps);
        for (long c = 0; c < C; c++) out[n * C + c] = x[c] * s * w[c];
        if (rstd) rstd[n] = s;
    }
}
static inline double ref_gelu1(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
static inline void ref_gelu(double *out, const double *inp, long n) {
    for (long i = 0; i < n; i++) out[i] = ref_gelu1(inp[i]);
}
static inline void ref_swiglu(double *out, const double *inp, long N, long H) {
    for (long n = 0; n < N; n++)
        for (long j = 0; j < H; j++) {
            double g = inp[n * 2 * H + j], u = inp[n * 2 * H + H + j];
            out[n * H + j] = g / (1.0 + exp(-g)) * u;
        }
}
/* att may be NULL */
static inline void ref_attention(double *out, double *att, const double *qkv, long B, long T,
                                 long C, long NH) {
    long hs = C / NH;
    double *p = malloc((size_t)T * sizeof(double));
    if (!p) abort();
    for (long b = 0; b < B; b++)
        for (long h = 0; h < NH; h++)
            for (long i = 0; i < T; i++) {
                const double *q = qkv + (b * T + i) * 3 * C + h * hs;
                double m = -INFINITY, s = 0;
                for (long j = 0; j <= i; j++) {
                    const double *k = qkv + (b * T + j) * 3 * C + C + h * hs;
                    double d = 0;
                    for (long e = 0; e < hs; e++) d += q[e] * k[e];
                    p[j] = d / sqrt((double)hs);
                    if (p[j] > m) m = p[j];
                }
                for (long j = 0; j <= i; j++) s += (p[j] = exp(p[j] - m));
                for (long j = 0; j <= i; j++) p[j] /= s;
                for (long e = 0; e < hs; e++) {
                    double o = 0;
                    for (long j = 0; j <= i; j++)
                        o += p[j] * qkv[(b * T + j) * 3 * C + 2 * C + h * hs + e];
                    out[(b * T + i) * C + h * hs + e] = o;
                }
                if (att)
                    for (long j = 0; j < T; j++)
                        att[((b * NH + h) * T + i) * T + j] = j <= i ? p[j] : 0.0;
            }
    free(p);
}
static inline void ref_rope(double *out, const double *inp, long B, long T, long C, long NH,
                            double theta) {
    long hs = C / NH;
    for (long b = 0; b < B; b++)
        for (long t = 0; t < T; t++) {
            const double *x = inp + (b * T + t) * 3 * C;
            double *o = out + (b * T + t) * 3 * C;
            for (long c = 2 * C; c < 3 * C; c++) o[c] = x[c];
            for (long h = 0; h < 2 * NH; h++)
                for (long i = 0; i < hs / 2; i++) {
                    double a = t * pow(theta, -2.0 * i / hs);
                    double x0 = x[h * hs + 2 * i], x1 = x[h * hs + 2 * i + 1];
                    o[h * hs + 2 * i] = x0 * cos(a) - x1 * sin(a);
                    o[h * hs + 2 * i + 1] = x0 * sin(a) + x1 * cos(a);
                }
        }
}
/* returns the mean loss; probs and losses may be NULL */
static inline double ref_xent(double *probs, double *losses, const double *logits,
                              const int32_t *targets, long N, long V, long Vp) {
    double tot = 0;
    for (long n = 0; n < N; n++) {
        const double *x = logits + n * Vp;
        double m = -INFINITY, s = 0;
        for (long v = 0; v < V; v++)
            if (x[v] > m) m = x[v];
        for (long v = 0; v < V; v++) s += exp(x[v] - m);
        double l = log(s) - (x[targets[n]] - m);
        if (losses) losses[n] = l;
        if (probs)
            for (long v = 0; v < Vp; v++) probs[n * Vp + v] = v < V ? exp(x[v] - m) / s : 0.0;
        tot += l;
    }
    return tot / N;
}

#endif
