/* bench_kernels: GFLOP/s of the GEMM and attention kernels on the GPT-2 124M
 * shapes (N = B*T = 1024, C = 768; B=4, T=256, NH=12) with pools of 1 and 2
 * threads, plus timings of the other per-layer kernels. Not a test: prints
 * medians of a few repetitions. Usage: bench_kernels [reps] */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_buf.h"
#include "core/timing.h"
#include "kernels/kernels.h"

static float *fbuf(long n, unsigned seed) { return bench_fbuf(n, seed, "bench_kernels"); }

typedef struct {
    hp_pool *pool;
    float *out, *inp, *w, *b, *dout, *dinp, *dw, *db, *att, *scr, *mean, *rstd;
    int32_t *tg;
    long N, IC, OC, B, T, C, NH, V, Vp;
} bctx;

typedef void (*bfn)(bctx *c);

/* median seconds of reps calls after one warm-up */
static double time_it(bfn f, bctx *c, int reps) {
    double t[64];
    if (reps > 64) reps = 64;
    f(c);
    for (int r = 0; r < reps; r++) {
        double t0 = hp_now();
        f(c);
        t[r] = hp_now() - t0;
    }
    return hp_median(t, reps);
}

static void mm_fwd(bctx *c) {
    hp_k_matmul_fwd(c->pool, c->out, c->inp, c->w, c->b, c->N, c->IC, c->OC);
}
static void mm_bwd(bctx *c) {
    hp_k_matmul_bwd(c->pool, c->dinp, c->dw, c->db, c->dout, c->inp, c->w, c->N, c->IC, c->OC);
}
static void at_fwd(bctx *c) {
    hp_k_attention_fwd(c->pool, c->out, c->att, c->inp, c->scr, c->B, c->T, c->C, c->NH);
}
static void at_bwd(bctx *c) {
    hp_k_attention_bwd(c->pool, c->dinp, c->dout, c->inp, c->att, c->scr, c->B, c->T, c->C, c->NH);
}
static void ln_fwd(bctx *c) {
    hp_k_layernorm_fwd(c->pool, c->out, c->mean, c->rstd, c->inp, c->w, c->b, c->N, c->C, 1e-5f);
}
static void ln_bwd(bctx *c) {
    hp_k_layernorm_bwd(c->pool, c->dinp, c->dw, c->db, c->dout, c->inp, c->w, c->mean, c->rstd,
                       c->scr, c->N, c->C);
}
static void ge_fwd(bctx *c) { hp_k_gelu_fwd(c->pool, c->out, c->inp, c->N * 4 * c->C); }
static void ge_bwd(bctx *c) { hp_k_gelu_bwd(c->pool, c->dinp, c->dout, c->inp, c->N * 4 * c->C); }
static void xe_fb(bctx *c) {
    float m;
    hp_k_xent_fwd(c->pool, c->out, c->mean, &m, c->inp, c->tg, c->N, c->V, c->Vp);
    hp_k_xent_bwd(c->pool, c->out, c->out, c->tg, 1.0f, c->N, c->V, c->Vp);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1) reps = 1;
    const long B = 4, T = 256, C = 768, NH = 12, N = B * T, V = 50257, Vp = 50304;
    /* one set of buffers, large enough for every shape (LM head excluded) */
    long big = N * 4 * C;
    bctx c = {.N = N, .B = B, .T = T, .C = C, .NH = NH, .V = V, .Vp = Vp};
    c.inp = fbuf(N * Vp, 1), c.w = fbuf(4 * C * C, 2), c.b = fbuf(4 * C, 3);
    c.dout = fbuf(big, 4), c.out = fbuf(N * Vp, 5), c.dinp = fbuf(big, 6);
    c.dw = fbuf(4 * C * C, 7), c.db = fbuf(4 * C, 8), c.att = fbuf(B * NH * T * T, 9);
    c.scr = fbuf((long)hp_k_attention_scratch(B, T, C, NH, 2), 10);
    c.mean = fbuf(N, 11), c.rstd = fbuf(N, 12);
    c.tg = malloc((size_t)N * sizeof(int32_t));
    for (long i = 0; i < N; i++) c.tg[i] = (int32_t)((i * 7919) % V);

    const char *ct = getenv("OPENBLAS_CORETYPE");
    printf("OpenBLAS core: %s (OPENBLAS_CORETYPE=%s)\n", openblas_get_corename(),
           ct ? ct : "unset");
    /* reference point: OpenBLAS's own threading on the 3C shape, 2 threads */
    openblas_set_num_threads(2);
    {
        double t[16];
        for (int r = 0; r < 6; r++) {
            double t0 = hp_now();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)(3 * C), (int)C, 1.0f,
                        c.inp, (int)C, c.w, (int)C, 0.0f, c.out, (int)(3 * C));
            t[r] = hp_now() - t0;
        }
        printf("reference: cblas_sgemm 1024x2304x768, OpenBLAS 2 threads: %.1f GFLOP/s\n",
               2.0 * N * 3 * C * C / hp_median(t + 1, 5) * 1e-9);
    }
    hp_kernels_init();

    long shapes[4][2] = {{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}};
    const char *names[4] = {"qkv  768->2304", "proj 768->768 ", "fc   768->3072", "fcp 3072->768 "};
    for (int nt = 1; nt <= 2; nt++) {
        hp_pool *pool;
        hp_status st = hp_pool_create(&pool, nt);
        if (st) {
            fprintf(stderr, "bench_kernels: %s\n", hp_status_msg(st));
            return 1;
        }
        c.pool = pool;
        printf("== %d thread(s)\n", nt);
        for (int s = 0; s < 4; s++) {
            c.IC = shapes[s][0], c.OC = shapes[s][1];
            double fl = 2.0 * N * c.IC * c.OC;
            double tf = time_it(mm_fwd, &c, reps), tb = time_it(mm_bwd, &c, reps);
            printf("matmul %s N=%ld: fwd %7.3f ms %6.1f GFLOP/s | bwd %7.3f ms %6.1f GFLOP/s\n",
                   names[s], N, tf * 1e3, fl / tf * 1e-9, tb * 1e3, 2 * fl / tb * 1e-9);
        }
        /* attention: dense-equivalent FLOPs (4 B T^2 C forward, 8 backward); the
         * kernel skips most of the masked half, so the causal work is ~60% of it */
        double afl = 4.0 * B * T * T * C;
        double ta = time_it(at_fwd, &c, reps), tab = time_it(at_bwd, &c, reps);
        printf("attention B=%ld T=%ld C=%ld NH=%ld: fwd %7.3f ms %6.1f GFLOP/s | bwd %7.3f ms "
               "%6.1f GFLOP/s (dense-equivalent)\n",
               B, T, C, NH, ta * 1e3, afl / ta * 1e-9, tab * 1e3, 2 * afl / tab * 1e-9);
        c.IC = C, c.OC = C;
        double tl = time_it(ln_fwd, &c, reps), tlb = time_it(ln_bwd, &c, reps);
        double tg = time_it(ge_fwd, &c, reps), tgb = time_it(ge_bwd, &c, reps);
        double tx = time_it(xe_fb, &c, reps);
        printf("layernorm [1024,768]: fwd %.3f ms bwd %.3f ms | gelu [1024,3072]: fwd %.3f ms "
               "bwd %.3f ms | xent [1024,50304] fwd+bwd %.3f ms\n",
               tl * 1e3, tlb * 1e3, tg * 1e3, tgb * 1e3, tx * 1e3);
        hp_pool_destroy(pool);
    }
    free(c.inp), free(c.w), free(c.b), free(c.dout), free(c.out), free(c.dinp), free(c.dw);
    free(c.db), free(c.att), free(c.scr), free(c.mean), free(c.rstd), free(c.tg);
    return 0;
}
