/* kernels/gemm_choose: fp32 linear-layer products through OpenBLAS (the
 * engine's hp_k_matmul kernels) or oneDNN, timed per shape, and the choice of
 * the faster. */
#include <stdlib.h>

#include "core/timing.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"

/* Uniform values in [-1, 1) from a fixed seed (the data only has to be finite). */
static void fill(float *x, long n, unsigned long long seed) {
    for (long i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((double)(seed >> 40) / (double)(1ULL << 23) - 1.0);
    }
}

hp_status hp_gemm_f32_measure(double *sec_blas, double *sec_dnnl, hp_gemm_ctx *ctx,
                              hp_linear_product p, long N, long IC, long OC, int reps) {
    *sec_blas = *sec_dnnl = 0;
    hp_pool *pool = hp_gemm_ctx_pool(ctx);
    if (reps < 1) reps = 1;
    float *inp = malloc((size_t)(N * IC) * sizeof(float)), *w = malloc((size_t)(OC * IC) * sizeof(float));
    float *dout = malloc((size_t)(N * OC) * sizeof(float)), *res = malloc((size_t)(N * IC > N * OC ? N * IC : N * OC) * sizeof(float));
    float *dw = malloc((size_t)(OC * IC) * sizeof(float));
    hp_gemm *g = NULL;
    hp_status st = HP_OK;
    if (!inp || !w || !dout || !res || !dw) {
        st = hp_errorf("gemm measure: out of memory for %ldx%ldx%ld", N, IC, OC);
        goto done;
    }
    fill(inp, N * IC, 1), fill(w, OC * IC, 2), fill(dout, N * OC, 3);
    hp_gemm_desc d = hp_gemm_linear_desc(p, N, IC, OC, HP_F32, HP_F32);
    st = hp_gemm_prepare(&g, ctx, &d);
    if (st) goto done;
    /* each backend back to back (its threads stay as a step leaves them),
     * twice in alternating order; one warm-up run before each block */
    double best_b = 1e30, best_d = 1e30;
    for (int pass = 0; pass < 4; pass++) {
        int dnnl = (pass == 1 || pass == 2);
        for (int r = 0; r <= reps; r++) {
            double t0 = hp_now();
            if (!dnnl) {
                if (p == HP_LINEAR_FWD)
                    hp_k_matmul_fwd(pool, res, inp, w, NULL, N, IC, OC);
                else if (p == HP_LINEAR_BWD_DATA)
                    hp_k_matmul_bwd(pool, res, NULL, NULL, dout, inp, w, N, IC, OC);
                else
                    hp_k_matmul_bwd(pool, NULL, dw, NULL, dout, inp, w, N, IC, OC);
            } else if (p == HP_LINEAR_FWD) {
                st = hp_gemm_run(g, res, inp, w, NULL);
            } else if (p == HP_LINEAR_BWD_DATA) {
                st = hp_gemm_run(g, res, dout, w, NULL);
            } else {
                st = hp_gemm_run(g, dw, dout, inp, NULL);
            }
            double dt = hp_now() - t0;
            if (st) goto done;
            if (r == 0) continue;
            if (dnnl && dt < best_d) best_d = dt;
            if (!dnnl && dt < best_b) best_b = dt;
        }
    }
    *sec_blas = best_b, *sec_dnnl = best_d;
done:
    hp_gemm_free(g);
    free(inp), free(w), free(dout), free(res), free(dw);
    return st;
}

hp_gemm_backend hp_gemm_f32_choose(double sec_blas, double sec_dnnl) {
    return sec_dnnl < sec_blas ? HP_GEMM_ONEDNN : HP_GEMM_OPENBLAS;
}

const char *hp_gemm_backend_name(hp_gemm_backend b) { return b == HP_GEMM_ONEDNN ? "oneDNN" : "OpenBLAS"; }

hp_status hp_gemm_f32_pick(hp_gemm_backend *out, hp_gemm_ctx *ctx, hp_linear_product p, long N, long IC, long OC) {
    int known = hp_gemm_ctx_pick_get(ctx, p, N, IC, OC);
    if (known >= 0) {
        *out = (hp_gemm_backend)known;
        return HP_OK;
    }
    double sb = 0, sd = 0;
    HP_TRY(hp_gemm_f32_measure(&sb, &sd, ctx, p, N, IC, OC, 3));
    *out = hp_gemm_f32_choose(sb, sd);
    hp_gemm_ctx_pick_put(ctx, p, N, IC, OC, *out);
    return HP_OK;
}
