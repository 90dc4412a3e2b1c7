/* bench_gemm_cpu: per-core GFLOP/s of every linear-layer product (forward,
 * backward-data, backward-weight) of GPT-2 124M (B4 T256) and the small
 * config (L4 C256 V256 T128 B8) through OpenBLAS (the engine's hp_k_matmul
 * kernels), oneDNN fp32 and oneDNN bf16 (bf16 in, fp32 accumulation; bf16
 * out, fp32 for backward-weight), on ONE thread, timed with the thread's own
 * CPU clock (CLOCK_THREAD_CPUTIME_ID): time the thread was descheduled by
 * other processes does not count, so the figures hold on a loaded machine
 * where `hyperpar bench --gemm`'s wall-clock ones do not. Best of reps runs
 * after a warm-up. Not a test. Usage: bench_gemm_cpu [reps] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/bf16.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* n floats in [-1, 1) followed by the same n values in bf16. */
static float *buf(long n) {
    float *p = malloc((size_t)n * 6);
    if (!p) {
        fprintf(stderr, "bench_gemm_cpu: out of memory\n");
        exit(1);
    }
    unsigned long long s = (unsigned long long)n;
    for (long i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        p[i] = (float)((double)(s >> 40) / (double)(1ULL << 23) - 1.0);
    }
    hp_kb_narrow((uint16_t *)(p + n), p, n);
    return p;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    hp_kernels_init();
    hp_gemm_ctx *ctx;
    hp_status st = hp_gemm_ctx_create(&ctx, NULL);
    if (st) {
        fprintf(stderr, "bench_gemm_cpu: %s\n", hp_status_msg(st));
        return 1;
    }
    /* N, IC, OC of qkv, attention projection, MLP up, MLP down, LM head */
    long shapes[10][3] = {{1024, 768, 2304}, {1024, 768, 768},  {1024, 768, 3072}, {1024, 3072, 768},
                          {1024, 768, 50304}, {1024, 256, 768}, {1024, 256, 256},  {1024, 256, 1024},
                          {1024, 1024, 256}, {1024, 256, 256}};
    const char *names[10] = {"124M qkv", "124M attproj", "124M fc", "124M fcproj", "124M lm head",
                             "small qkv", "small attproj", "small fc", "small fcproj", "small lm head"};
    const char *pn[3] = {"fwd", "bwd-data", "bwd-weight"};
    printf("%-14s %-16s %-10s %9s %9s %9s  %s\n", "layer", "MxNxK(fwd)", "product", "OpenBLAS", "oneDNN", "bf16",
           "bf16 impl");
    for (int s = 0; s < 10; s++) {
        long N = shapes[s][0], IC = shapes[s][1], OC = shapes[s][2], big = N * IC + N * OC + OC * IC;
        float *x = buf(big), *w = buf(big), *o = buf(big);
        const uint16_t *x16 = (const uint16_t *)(x + big), *w16 = (const uint16_t *)(w + big);
        for (int p = 0; p < 3; p++) {
            double best[3] = {1e30, 1e30, 1e30};
            char impl[64] = "";
            for (int k = 0; k < 3; k++) {
                hp_gemm *g = NULL;
                if (k > 0) {
                    hp_gemm_desc d = hp_gemm_linear_desc((hp_linear_product)p, N, IC, OC, k == 2 ? HP_BF16 : HP_F32,
                                                         k == 2 ? HP_BF16 : HP_F32);
                    st = hp_gemm_prepare(&g, ctx, &d);
                    if (st) {
                        fprintf(stderr, "bench_gemm_cpu: %s\n", hp_status_msg(st));
                        return 1;
                    }
                    if (k == 2) snprintf(impl, sizeof impl, "%s", hp_gemm_impl(g));
                }
                for (int r = 0; r <= reps; r++) {
                    double t0 = cpu_now();
                    if (k > 0)
                        st = hp_gemm_run(g, o, k == 2 ? (const void *)x16 : x, k == 2 ? (const void *)w16 : w, NULL);
                    else if (p == 0)
                        hp_k_matmul_fwd(NULL, o, x, w, NULL, N, IC, OC);
                    else if (p == 1)
                        hp_k_matmul_bwd(NULL, o, NULL, NULL, x, x, w, N, IC, OC);
                    else
                        hp_k_matmul_bwd(NULL, NULL, o, NULL, x, x, w, N, IC, OC);
                    double dt = cpu_now() - t0;
                    if (st) {
                        fprintf(stderr, "bench_gemm_cpu: %s\n", hp_status_msg(st));
                        return 1;
                    }
                    if (r > 0 && dt < best[k]) best[k] = dt;
                }
                hp_gemm_free(g);
            }
            double f = 2.0 * N * IC * OC / 1e9;
            char shape[40];
            snprintf(shape, sizeof shape, "%ldx%ldx%ld", N, OC, IC);
            printf("%-14s %-16s %-10s %9.1f %9.1f %9.1f  %s\n", names[s], shape, pn[p], f / best[0], f / best[1],
                   f / best[2], impl);
            fflush(stdout);
        }
        free(x), free(w), free(o);
    }
    hp_gemm_ctx_destroy(ctx);
    return 0;
}
