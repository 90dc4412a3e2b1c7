/* kernels/misc: sum of squares (for gradient clipping) and bf16 <-> fp32
 * conversion. The conversions are element-wise (bit-identical for any pool
 * size); sumsq adds per-thread double partials in thread order (bit-identical
 * run to run for a given pool size, equal across pool sizes to ~1e-13
 * relative). */
#include <string.h>

#include "kernels/bf16.h"
#include "kernels/kernels.h"

#define MISC_ALIGN 64
#define MISC_SERIAL 32768
#define SUMSQ_MAX_THREADS 256
#define SUMSQ_LANES 8

typedef struct {
    const float *x; /* [n] */
    double part[SUMSQ_MAX_THREADS];
    long n;
} sumsq_ctx;

static void sumsq_task(void *c_, int tid, int nt) {
    sumsq_ctx *c = c_;
    long i0, i1;
    hp_pool_split(&i0, &i1, c->n, MISC_ALIGN, tid, nt);
    double acc[SUMSQ_LANES] = {0};
    const float *x = c->x;
    long i = i0;
    for (; i + SUMSQ_LANES <= i1; i += SUMSQ_LANES)
        for (int j = 0; j < SUMSQ_LANES; j++) acc[j] += (double)x[i + j] * (double)x[i + j];
    for (int j = 0; i + j < i1; j++) acc[j] += (double)x[i + j] * (double)x[i + j];
    for (int w = SUMSQ_LANES / 2; w >= 1; w /= 2)
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];
    c->part[tid] = acc[0];
}

double hp_k_sumsq(hp_pool *pool, const float *x, long n) {
    HP_ASSERT(hp_pool_size(pool) <= SUMSQ_MAX_THREADS);
    sumsq_ctx c;
    c.x = x;
    c.n = n;
    hp_pool *p = n < MISC_SERIAL ? NULL : pool;
    hp_pool_run(p, sumsq_task, &c);
    double s = 0.0;
    for (int t = 0; t < hp_pool_size(p); t++) s += c.part[t];
    return s;
}

/* The conversions are the bf16 kernels' (kernels/bf16_cvt: AVX512-BF16 where
 * present, the same bits either way). */
void hp_k_f32_to_bf16(hp_pool *pool, uint16_t *out, const float *inp, long n) { hp_kb_f32_to_bf16(pool, out, inp, n); }

void hp_k_bf16_to_f32(hp_pool *pool, float *out, const uint16_t *inp, long n) { hp_kb_bf16_to_f32(pool, out, inp, n); }
