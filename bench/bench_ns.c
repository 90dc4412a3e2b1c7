/* bench_ns: Newton-Schulz (optim/newton_schulz, Muon's quintic preset) in
 * GFLOP/s on GPT-2's matrix shapes against the GEMMs it is made of: one
 * whole cblas_sgemm of the iteration's largest product (r x c times c x r)
 * and the same product cut into the kernel's 128-row blocks. The ratio of
 * Newton-Schulz's rate to the whole GEMM's says what the blocking and the
 * iteration's elementwise passes cost. Not a test: prints medians.
 * Usage: bench_ns [reps] [threads] */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/pool.h"
#include "bench_buf.h"
#include "core/timing.h"
#include "kernels/kernels.h"
#include "optim/newton_schulz.h"

static float *fbuf(long n, unsigned seed) { return bench_fbuf(n, seed, "bench_ns"); }

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5, threads = argc > 2 ? atoi(argv[2]) : 1;
    if (reps < 1 || reps > 100 || threads < 1 || threads > 64) {
        fprintf(stderr, "usage: bench_ns [reps 1..100] [threads 1..64]\n");
        return 2;
    }
    hp_kernels_init();
    hp_pool *pool = NULL;
    hp_status st = hp_pool_create(&pool, threads);
    if (st) {
        fprintf(stderr, "bench_ns: %s\n", hp_status_msg(st));
        return 1;
    }
    hp_ns_config cfg;
    st = hp_ns_config_named(&cfg, "quintic");
    if (st) return 1;
    const long shapes[][3] = {{1, 256, 256}, {3, 256, 256}, {1, 1024, 256}, {1, 256, 1024},
                              {1, 768, 768}, {3, 768, 768}, {1, 3072, 768}, {1, 768, 3072}};
    printf("%-16s %10s %10s %12s %12s %8s\n", "count x shape", "NS ms", "NS GF/s", "GEMM GF/s", "blocks GF/s",
           "NS/GEMM");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        long cnt = shapes[s][0], rows = shapes[s][1], cols = shapes[s][2];
        long r = rows < cols ? rows : cols, c = rows < cols ? cols : rows;
        float *in = fbuf(cnt * rows * cols, 1), *out = fbuf(cnt * rows * cols, 2);
        float *scr = fbuf((long)hp_newton_schulz_batched_scratch(cnt, rows, cols), 3);
        float *X = fbuf(r * c, 4), *A = fbuf(r * r, 5);
        double t[100], tg[100], tb[100];
        for (int i = -1; i < reps; i++) {
            double t0 = hp_now();
            hp_newton_schulz_batched(pool, out, in, scr, cnt, rows, cols, &cfg);
            double t1 = hp_now();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)r, (int)r, (int)c, 1.0f, X, (int)c, X, (int)c,
                        0.0f, A, (int)r);
            double t2 = hp_now();
            for (long i0 = 0; i0 < r; i0 += HP_NS_ROW_BLOCK) {
                long mb = i0 + HP_NS_ROW_BLOCK < r ? HP_NS_ROW_BLOCK : r - i0;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)mb, (int)r, (int)c, 1.0f, X + i0 * c,
                            (int)c, X, (int)c, 0.0f, A + i0 * r, (int)r);
            }
            double t3 = hp_now();
            if (i >= 0) t[i] = t1 - t0, tg[i] = t2 - t1, tb[i] = t3 - t2;
        }
        double ns = hp_median(t, reps), g = hp_median(tg, reps), b = hp_median(tb, reps);
        double flops = (double)cnt * cfg.steps * (4.0 * r * r * c + 2.0 * r * r * r), gf = 2.0 * r * r * c;
        char name[32];
        snprintf(name, sizeof name, "%ld x %ldx%ld", cnt, rows, cols);
        printf("%-16s %10.2f %10.1f %12.1f %12.1f %8.2f\n", name, ns * 1e3, flops / ns * 1e-9, gf / g * 1e-9,
               gf / b * 1e-9, (flops / ns) / (gf / g));
        free(in), free(out), free(scr), free(X), free(A);
    }
    hp_pool_destroy(pool);
    return 0;
}
