/* kernels/matmul: linear layers through OpenBLAS sgemm. Each pool thread runs
 * one single-threaded sgemm on its block of output rows (forward, dinp), of
 * the longer side of dweight, or of output channels (dbias), so the threads
 * together use all cores and no element's sum is split between threads. */
#include <cblas.h>
#include <string.h>

#include "kernels/kernels.h"

/* Row blocks are multiples of this many rows (the sgemm micro-kernel height). */
#define MM_ALIGN 16

typedef struct {
    float *out, *dinp, *dweight, *dbias; /* [N,OC], [N,IC], [OC,IC], [OC] */
    const float *inp;                    /* [N,IC] */
    const float *weight;                 /* [OC,IC] */
    const float *bias;                   /* [OC] or NULL */
    const float *dout;                   /* [N,OC] */
    long N, IC, OC;
} mm_ctx;

static void mm_fwd_task(void *c_, int tid, int nt) {
    mm_ctx *c = c_;
    long r0, r1, IC = c->IC, OC = c->OC;
    hp_pool_split(&r0, &r1, c->N, MM_ALIGN, tid, nt);
    if (r0 >= r1) return;
    float *o = c->out + r0 * OC;
    float beta = 0.0f;
    if (c->bias) {
        for (long r = r0; r < r1; r++) memcpy(c->out + r * OC, c->bias, (size_t)OC * sizeof(float));
        beta = 1.0f;
    }
    if (IC == 0) {
        if (!c->bias) memset(o, 0, (size_t)((r1 - r0) * OC) * sizeof(float));
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(r1 - r0), (int)OC, (int)IC, 1.0f,
                c->inp + r0 * IC, (int)IC, c->weight, (int)IC, beta, o, (int)OC);
}

void hp_k_matmul_fwd(hp_pool *pool, float *out, const float *inp, const float *weight,
                     const float *bias, long N, long IC, long OC) {
    if (N == 0 || OC == 0) return;
    mm_ctx c = {.out = out, .inp = inp, .weight = weight, .bias = bias, .N = N, .IC = IC, .OC = OC};
    hp_pool_run(pool, mm_fwd_task, &c);
}

/* Each thread: its rows of dinp, then its output channels of dweight and dbias. */
static void mm_bwd_task(void *c_, int tid, int nt) {
    mm_ctx *c = c_;
    long N = c->N, IC = c->IC, OC = c->OC;
    if (c->dinp && IC > 0) {
        long r0, r1;
        hp_pool_split(&r0, &r1, N, MM_ALIGN, tid, nt);
        if (r0 < r1) {
            if (OC == 0)
                memset(c->dinp + r0 * IC, 0, (size_t)((r1 - r0) * IC) * sizeof(float));
            else
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(r1 - r0), (int)IC,
                            (int)OC, 1.0f, c->dout + r0 * OC, (int)OC, c->weight, (int)IC, 0.0f,
                            c->dinp + r0 * IC, (int)IC);
        }
    }
    if (c->dweight && IC > 0 && OC > 0) {
        /* blocks of the longer side of dweight: a thread's block stays close
         * to square (e.g. [C, 4C / 2] rather than [C / 2, 4C]), which sgemm
         * runs faster */
        long w0 = 0, w1 = OC, i0 = 0, i1 = IC;
        if (IC > OC)
            hp_pool_split(&i0, &i1, IC, MM_ALIGN, tid, nt);
        else
            hp_pool_split(&w0, &w1, OC, MM_ALIGN, tid, nt);
        if (w0 < w1 && i0 < i1) {
            float *dw = c->dweight + w0 * IC + i0;
            if (N == 0)
                for (long r = w0; r < w1; r++, dw += IC) memset(dw, 0, (size_t)(i1 - i0) * sizeof(float));
            else
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)(w1 - w0), (int)(i1 - i0),
                            (int)N, 1.0f, c->dout + w0, (int)OC, c->inp + i0, (int)IC, 0.0f, dw,
                            (int)IC);
        }
    }
    long o0, o1;
    hp_pool_split(&o0, &o1, OC, MM_ALIGN, tid, nt);
    if (o0 >= o1) return;
    if (c->dbias) {
        /* column sums in row order, in double, a chunk of columns at a time */
        for (long j0 = o0; j0 < o1; j0 += 256) {
            long w = o1 - j0 < 256 ? o1 - j0 : 256;
            double acc[256] = {0};
            for (long n = 0; n < N; n++) {
                const float *g = c->dout + n * OC + j0;
                for (long j = 0; j < w; j++) acc[j] += g[j];
            }
            for (long j = 0; j < w; j++) c->dbias[j0 + j] = (float)acc[j];
        }
    }
}

void hp_k_matmul_bwd(hp_pool *pool, float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, long N, long IC, long OC) {
    mm_ctx c = {.dinp = dinp,
                .dweight = dweight,
                .dbias = dbias,
                .dout = dout,
                .inp = inp,
                .weight = weight,
                .N = N,
                .IC = IC,
                .OC = OC};
    hp_pool_run(pool, mm_bwd_task, &c);
}
