/* kernels/kvec: private helpers shared by the kernel files (not public API):
 * fixed-order reductions written so the compiler vectorises them without
 * -ffast-math (HP_KV_LANES independent accumulators folded in a fixed tree),
 * and a vectorisable expf. The result of every helper depends only on its
 * inputs and n, never on threads. */
#ifndef HP_KERNELS_KVEC_H
#define HP_KERNELS_KVEC_H

#include <stdint.h>
#include <string.h>

#define HP_KV_LANES 16

/* Folds acc[HP_KV_LANES] pairwise (8, 4, 2, 1) into acc[0]. */
static inline float hp_kv_fold(float *acc) {
    for (int w = HP_KV_LANES / 2; w >= 1; w /= 2)
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];
    return acc[0];
}

/* sum of x[n] */
static inline float hp_kv_sum(const float *x, long n) {
    float acc[HP_KV_LANES] = {0};
    long i = 0;
    for (; i + HP_KV_LANES <= n; i += HP_KV_LANES)
        for (int j = 0; j < HP_KV_LANES; j++) acc[j] += x[i + j];
    for (int j = 0; i + j < n; j++) acc[j] += x[i + j];
    return hp_kv_fold(acc);
}

/* sum of a[n] * b[n] */
static inline float hp_kv_dot(const float *a, const float *b, long n) {
    float acc[HP_KV_LANES] = {0};
    long i = 0;
    for (; i + HP_KV_LANES <= n; i += HP_KV_LANES)
        for (int j = 0; j < HP_KV_LANES; j++) acc[j] += a[i + j] * b[i + j];
    for (int j = 0; i + j < n; j++) acc[j] += a[i + j] * b[i + j];
    return hp_kv_fold(acc);
}

/* max of x[n], n >= 1 */
static inline float hp_kv_max(const float *x, long n) {
    float acc[HP_KV_LANES];
    for (int j = 0; j < HP_KV_LANES; j++) acc[j] = x[0];
    long i = 0;
    for (; i + HP_KV_LANES <= n; i += HP_KV_LANES)
        for (int j = 0; j < HP_KV_LANES; j++) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
    for (int j = 0; i + j < n; j++) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
    for (int w = HP_KV_LANES / 2; w >= 1; w /= 2)
        for (int j = 0; j < w; j++) acc[j] = acc[j + w] > acc[j] ? acc[j + w] : acc[j];
    return acc[0];
}

/* e^x to about 1 ulp, branch-free so loops calling it vectorise. Inputs below
 * -87 give 0, above ~88.72 give +inf, NaN gives NaN. Range reduction
 * x = k ln2 + r with |r| <= ln2/2, then a degree-7 polynomial for e^r
 * (Cephes-style minimax coefficients) and 2^k assembled in the exponent bits. */
static inline float hp_kv_expf(float x) {
    float xc = x < 88.0f ? x : 88.0f; /* NaN -> 88: keeps the int conversion defined */
    xc = xc > -87.0f ? xc : -87.0f;
    float k = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = x - k * 0.693359375f;
    r = r + k * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t ki = (int32_t)k;
    uint32_t bits = (uint32_t)(ki + 127) << 23;
    float s;
    memcpy(&s, &bits, sizeof s);
    return x < -87.0f ? 0.0f : s * p;
}

#endif
