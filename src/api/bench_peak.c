/* api/bench_peak: hp_bench_fma_peak — this machine's FP32 FMA peak (GFLOP/s)
 * on a pool (core/pool), with the widest FMA vectors the build targets
 * (AVX-512, else AVX2+FMA) — and hp_api_pool_peak, the best-of-runs loop the
 * bf16 peak (bench_peak16) is measured with too. */
#include <immintrin.h>
#include <time.h>

#include "api/api.h"
#include "core/pool.h"
#include "core/timing.h"

#define ITERS 2000000L

typedef struct {
    double flops[256];
} peak_ctx;

/* 12 independent FMA chains per thread hide the FMA latency on two ports. */
static void fma_task(void *c_, int tid, int nt) {
    peak_ctx *c = c_;
    (void)nt;
#if defined(__AVX512F__)
    __m512 a[12], m = _mm512_set1_ps(0.9999999f), b = _mm512_set1_ps(1e-7f);
    for (int k = 0; k < 12; k++) a[k] = _mm512_set1_ps((float)k);
    for (long i = 0; i < ITERS; i++)
        for (int k = 0; k < 12; k++) a[k] = _mm512_fmadd_ps(a[k], m, b);
    __m512 s = a[0];
    for (int k = 1; k < 12; k++) s = _mm512_add_ps(s, a[k]);
    float out[16];
    _mm512_storeu_ps(out, s);
    c->flops[tid] = (double)ITERS * 12 * 16 * 2 + (out[0] == 12345.0f);
#elif defined(__FMA__)
    __m256 a[12], m = _mm256_set1_ps(0.9999999f), b = _mm256_set1_ps(1e-7f);
    for (int k = 0; k < 12; k++) a[k] = _mm256_set1_ps((float)k);
    for (long i = 0; i < ITERS; i++)
        for (int k = 0; k < 12; k++) a[k] = _mm256_fmadd_ps(a[k], m, b);
    __m256 s = a[0];
    for (int k = 1; k < 12; k++) s = _mm256_add_ps(s, a[k]);
    float out[8];
    _mm256_storeu_ps(out, s);
    c->flops[tid] = (double)ITERS * 12 * 8 * 2 + (out[0] == 12345.0f);
#else
    float a[12] = {0};
    for (long i = 0; i < ITERS; i++)
        for (int k = 0; k < 12; k++) a[k] = a[k] * 0.9999999f + 1e-7f;
    c->flops[tid] = (double)ITERS * 12 * 2 + (a[0] == 12345.0f);
#endif
}

hp_status hp_api_pool_peak(double *gflops, int threads, hp_pool_fn task, void *ctx, const double *flops, int rounds,
                           int bursts, long pause_ms) {
    *gflops = 0;
    if (threads < 1 || threads > 256) return hp_errorf("peak: threads must be in 1..256, got %d", threads);
    hp_pool *pool;
    HP_TRY(hp_pool_create(&pool, threads));
    for (int rep = 0; rep < rounds; rep++) {
        for (int b = 0; b < bursts; b++) {
            double t0 = hp_now();
            hp_pool_run(pool, task, ctx);
            double dt = hp_now() - t0, f = 0;
            for (int t = 0; t < threads; t++) f += flops[t];
            if (f / dt / 1e9 > *gflops) *gflops = f / dt / 1e9;
        }
        struct timespec pause = {pause_ms / 1000, (pause_ms % 1000) * 1000 * 1000};
        if (rep + 1 < rounds) nanosleep(&pause, NULL);
    }
    hp_pool_destroy(pool);
    return HP_OK;
}

hp_status hp_api_fma_peak(double *gflops, int threads, int rounds, long pause_ms) {
    *gflops = 0;
    if (threads < 1 || threads > 256) return hp_errorf("hp_bench_fma_peak: threads must be in 1..256, got %d", threads);
    peak_ctx c = {{0}};
    /* each round: the best of 3 short runs */
    return hp_api_pool_peak(gflops, threads, fma_task, &c, c.flops, rounds, 3, pause_ms);
}

void hp_bench_fma_isa(const char **isa) {
#if defined(__AVX512F__)
    *isa = "avx512";
#elif defined(__FMA__)
    *isa = "avx2+fma";
#else
    *isa = "scalar";
#endif
}

hp_status hp_bench_fma_peak(double *gflops, const char **isa, int threads) {
    hp_bench_fma_isa(isa);
    /* One measurement lasts milliseconds, so another process on the cores can
     * halve it: the best of several, spread over about a second. */
    return hp_api_fma_peak(gflops, threads, 8, 100);
}
