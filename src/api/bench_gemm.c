/* api/bench_gemm: the kernels' ISA report (hp_kernels_isa), the bf16 matmul
 * peak (hp_bench_bf16_peak) and one GEMM shape through OpenBLAS, oneDNN fp32
 * and oneDNN bf16 (hp_bench_gemm), over kernels/gemm.h and kernels/isa.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "core/pool.h"
#include "core/timing.h"
#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/kernels.h"

_Static_assert(sizeof(((hp_kernel_isa *)0)->family) == sizeof(((hp_kernels_isa_row *)0)->family) &&
                   sizeof(((hp_kernel_isa *)0)->isa) == sizeof(((hp_kernels_isa_row *)0)->isa) &&
                   sizeof(((hp_kernel_isa *)0)->detail) == sizeof(((hp_kernels_isa_row *)0)->detail),
               "hp_kernel_isa and hp_kernels_isa_row have the same fields");

int hp_kernels_isa(hp_kernel_isa *rows) {
    hp_kernels_isa_row r[HP_KERNELS_ISA_ROWS];
    int n = hp_kernels_isa_report(r);
    if (n > HP_KERNEL_ISA_MAX) n = HP_KERNEL_ISA_MAX;
    for (int i = 0; i < n; i++) {
        memcpy(rows[i].family, r[i].family, sizeof rows[i].family);
        memcpy(rows[i].isa, r[i].isa, sizeof rows[i].isa);
        memcpy(rows[i].detail, r[i].detail, sizeof rows[i].detail);
    }
    return n;
}

/* Random bf16 values in [-1, 1) (the data only has to be finite). */
static void fill_bf16(uint16_t *x, long n, unsigned long long seed) {
    for (long i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = hp_f32_to_bf16((float)((double)(seed >> 40) / (double)(1ULL << 23) - 1.0));
    }
}

/* Best seconds of reps runs of g (after one warm-up). */
static hp_status best_time(double *best, hp_gemm *g, void *c, const void *a, const void *b, int reps) {
    *best = 1e30;
    for (int r = 0; r <= reps; r++) {
        double t0 = hp_now();
        HP_TRY(hp_gemm_run(g, c, a, b, NULL));
        double dt = hp_now() - t0;
        if (r > 0 && dt < *best) *best = dt;
    }
    return HP_OK;
}

hp_status hp_bench_bf16_peak(double *gflops, const char **isa, char impl[64], int threads) {
    *gflops = 0, *isa = "portable", impl[0] = 0;
    if (threads < 1 || threads > 256) return hp_errorf("hp_bench_bf16_peak: threads must be in 1..256, got %d", threads);
    hp_pool *pool = NULL;
    hp_gemm_ctx *ctx = NULL;
    uint16_t *a = NULL, *b = NULL;
    float *c = NULL;
    hp_status st = hp_pool_create(&pool, threads);
    if (!st) st = hp_gemm_ctx_create(&ctx, pool);
    long sizes[] = {512, 1024};
    long big = 1024 * 1024;
    a = malloc((size_t)big * 2), b = malloc((size_t)big * 2), c = malloc((size_t)big * 4);
    if (!st && (!a || !b || !c)) st = hp_errorf("hp_bench_bf16_peak: out of memory");
    if (!st) fill_bf16(a, big, 1), fill_bf16(b, big, 2);
    for (int s = 0; !st && s < 2; s++) {
        long n = sizes[s];
        hp_gemm_desc d = {.M = n, .N = n, .K = n, .trans_b = 1, .a = HP_BF16, .b = HP_BF16, .c = HP_F32};
        hp_gemm *g = NULL;
        st = hp_gemm_prepare(&g, ctx, &d);
        if (st) break;
        *isa = hp_isa_name(hp_gemm_isa(g));
        snprintf(impl, 64, "%s", hp_gemm_impl(g));
        /* as the FMA peak: the best of several short runs spread out a little */
        for (int rep = 0; !st && rep < 4; rep++) {
            double t;
            st = best_time(&t, g, c, a, b, n == 512 ? 8 : 3);
            if (!st && 2.0 * n * n * n / t / 1e9 > *gflops) *gflops = 2.0 * n * n * n / t / 1e9;
            struct timespec pause = {0, 50 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
        hp_gemm_free(g);
    }
    free(a), free(b), free(c);
    hp_gemm_ctx_destroy(ctx);
    hp_pool_destroy(pool);
    return st;
}

/* Random fp32 values in [-1, 1). */
static void fill_f32(float *x, long n, unsigned long long seed) {
    for (long i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((double)(seed >> 40) / (double)(1ULL << 23) - 1.0);
    }
}

typedef struct {
    hp_gemm *g32, *g16;
    float *inp, *w, *dout, *res; /* fp32 [N,IC], [OC,IC], [N,OC], the largest output */
    uint16_t *a16, *b16;         /* the bf16 product's A and B as stored */
    void *c16;
} gemm_bufs;

/* One run of backend k (0 OpenBLAS, 1 oneDNN fp32, 2 oneDNN bf16); seconds. */
static hp_status run_backend(double *sec, gemm_bufs *b, int k, hp_pool *pool, hp_linear_product p, long N,
                             long IC, long OC) {
    double t0 = hp_now();
    hp_status st = HP_OK;
    if (k == 0) {
        if (p == HP_LINEAR_FWD)
            hp_k_matmul_fwd(pool, b->res, b->inp, b->w, NULL, N, IC, OC);
        else if (p == HP_LINEAR_BWD_DATA)
            hp_k_matmul_bwd(pool, b->res, NULL, NULL, b->dout, b->inp, b->w, N, IC, OC);
        else
            hp_k_matmul_bwd(pool, NULL, b->res, NULL, b->dout, b->inp, b->w, N, IC, OC);
    } else if (k == 1) {
        const float *a = p == HP_LINEAR_FWD ? b->inp : b->dout;
        const float *bb = p == HP_LINEAR_BWD_WEIGHT ? b->inp : b->w;
        st = hp_gemm_run(b->g32, b->res, a, bb, NULL);
    } else {
        st = hp_gemm_run(b->g16, b->c16, b->a16, b->b16, NULL);
    }
    *sec = hp_now() - t0;
    return st;
}

/* Each backend runs back to back (a warm-up, then at least reps runs and at
 * least MIN_SEC, at most MAX_RUNS): interleaving them would let one's idle
 * threads go to sleep (the pool's) or keep spinning (OpenMP's) across the
 * other's runs, which is not how a training step calls them. Two passes, the
 * second in reverse order, so a change of the machine's load over time hits
 * all three alike; best time of each over both. */
#define MIN_SEC 0.2
#define MAX_RUNS 200

hp_status hp_bench_gemm(hp_bench_gemm_result *res, const hp_bench_gemm_config *cfg) {
    memset(res, 0, sizeof *res);
    long N = cfg->N, IC = cfg->IC, OC = cfg->OC;
    if (N < 1 || IC < 1 || OC < 1) return hp_errorf("hp_bench_gemm: N, IC, OC must be >= 1, got %ld, %ld, %ld", N, IC, OC);
    if (cfg->threads < 1 || cfg->threads > 256) return hp_errorf("hp_bench_gemm: threads must be in 1..256, got %d", cfg->threads);
    if (cfg->product < HP_GEMM_PRODUCT_FWD || cfg->product > HP_GEMM_PRODUCT_BWD_WEIGHT)
        return hp_errorf("hp_bench_gemm: product must be fwd, bwd-data or bwd-weight");
    int reps = cfg->reps < 1 ? 1 : cfg->reps;
    hp_kernels_init(); /* BLAS one thread per pool thread, as the programs run it */
    hp_linear_product p = (hp_linear_product)cfg->product;
    double flops = 2.0 * (double)N * (double)IC * (double)OC;
    hp_pool *pool = NULL;
    hp_gemm_ctx *ctx = NULL;
    gemm_bufs b = {0};
    hp_gemm_desc d32 = hp_gemm_linear_desc(p, N, IC, OC, HP_F32, HP_F32);
    hp_gemm_desc d16 = hp_gemm_linear_desc(p, N, IC, OC, HP_BF16, HP_BF16);
    long big = N * IC > N * OC ? N * IC : N * OC;
    big = big > OC * IC ? big : OC * IC;
    hp_status st = hp_pool_create(&pool, cfg->threads);
    if (!st) st = hp_gemm_ctx_create(&ctx, pool);
    if (!st) {
        b.inp = malloc((size_t)(N * IC) * 4), b.w = malloc((size_t)(OC * IC) * 4), b.dout = malloc((size_t)(N * OC) * 4);
        b.res = malloc((size_t)big * 4), b.a16 = malloc((size_t)(d16.M * d16.K) * 2);
        b.b16 = malloc((size_t)(d16.K * d16.N) * 2), b.c16 = malloc((size_t)(d16.M * d16.N) * 4);
        if (!b.inp || !b.w || !b.dout || !b.res || !b.a16 || !b.b16 || !b.c16)
            st = hp_errorf("hp_bench_gemm: out of memory for %ldx%ldx%ld", N, IC, OC);
    }
    if (!st) {
        fill_f32(b.inp, N * IC, 1), fill_f32(b.w, OC * IC, 2), fill_f32(b.dout, N * OC, 3);
        fill_bf16(b.a16, d16.M * d16.K, 4), fill_bf16(b.b16, d16.K * d16.N, 5);
        st = hp_gemm_prepare(&b.g32, ctx, &d32);
    }
    if (!st) st = hp_gemm_prepare(&b.g16, ctx, &d16);
    double best[3] = {1e30, 1e30, 1e30};
    for (int pass = 0; !st && pass < 2; pass++)
        for (int j = 0; !st && j < 3; j++) {
            int k = pass ? 2 - j : j;
            double total = 0, t;
            st = run_backend(&t, &b, k, pool, p, N, IC, OC); /* warm-up */
            for (int r = 0; !st && r < MAX_RUNS && (r < reps || total < MIN_SEC); r++) {
                st = run_backend(&t, &b, k, pool, p, N, IC, OC);
                total += t;
                if (t < best[k]) best[k] = t;
            }
        }
    if (!st) {
        snprintf(res->impl_f32, sizeof res->impl_f32, "%s", hp_gemm_impl(b.g32));
        snprintf(res->impl_bf16, sizeof res->impl_bf16, "%s", hp_gemm_impl(b.g16));
        snprintf(res->isa_bf16, sizeof res->isa_bf16, "%s", hp_isa_name(hp_gemm_isa(b.g16)));
        res->gflops_openblas = flops / best[0] / 1e9;
        res->gflops_onednn_f32 = flops / best[1] / 1e9;
        res->gflops_onednn_bf16 = flops / best[2] / 1e9;
        res->faster_f32 = hp_gemm_backend_name(hp_gemm_f32_choose(best[0], best[1]));
    }
    hp_gemm_free(b.g32), hp_gemm_free(b.g16);
    free(b.inp), free(b.w), free(b.dout), free(b.res), free(b.a16), free(b.b16), free(b.c16);
    hp_gemm_ctx_destroy(ctx);
    hp_pool_destroy(pool);
    return st;
}
