/* kernels/matmul: linear layers through OpenBLAS sgemm. Each pool thread runs
 * one single-threaded sgemm on its block of output rows (forward, dinp), of
 * the longer side of dweight, or of output channels (dbias), so the threads
 * together use all cores and no element's sum is split between threads.
 * With a pool grain g (hp_pool_set_grain, the deterministic mode) the rows
 * (the longer side of dweight) are cut into fixed blocks instead — g rows, or
 * more so that a product has at most MM_MAX_BLOCKS — one sgemm each, dealt to
 * the threads: the calls' shapes, and so the rounding of a BLAS whose
 * kernels follow the shape (OpenBLAS does), do not depend on the thread
 * count. */
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
    long grain; /* the pool's (0: one block per thread) */
} mm_ctx;

/* With a grain: at most this many blocks per product (fewer, larger calls:
 * each call packs its other operand once). */
#define MM_MAX_BLOCKS 16

/* The block size of a product over n items: 0 without a grain, else at
 * least the grain and n / MM_MAX_BLOCKS (rounded up to MM_ALIGN) — a
 * function of the shape alone. */
static long grain_for(long grain, long n) {
    if (grain <= 0) return 0;
    long per = (n + MM_MAX_BLOCKS - 1) / MM_MAX_BLOCKS;
    per = (per + MM_ALIGN - 1) / MM_ALIGN * MM_ALIGN;
    return per > grain ? per : grain;
}

/* Thread tid's work on n items. Grain g > 0: the blocks [*b0, *b1) of g
 * items each (block k = items [k g, k g + g) clipped to n); g = 0: its one
 * share of the items themselves, [*b0, *b1) in blocks of MM_ALIGN. Callers
 * loop over k in [b0, b1) (g > 0) or once (g = 0) with block_at. */
static void blocks(long *b0, long *b1, long g, long n, int tid, int nt) {
    if (g > 0) hp_pool_split(b0, b1, (n + g - 1) / g, 1, tid, nt);
    else hp_pool_split(b0, b1, n, MM_ALIGN, tid, nt);
}

/* Items [*lo, *hi) of block k of n (grain g > 0), or the share itself (g = 0: k is ignored). */
static int block_at(long *lo, long *hi, long k, long g, long b0, long b1, long n) {
    if (g == 0) {
        *lo = b0, *hi = b1;
        return b0 < b1;
    }
    *lo = k * g;
    *hi = *lo + g < n ? *lo + g : n;
    return *lo < *hi;
}

/* Output rows [r0, r1): bias, then one sgemm. */
static void mm_fwd_rows(mm_ctx *c, long r0, long r1) {
    long IC = c->IC, OC = c->OC;
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

static void mm_fwd_task(void *c_, int tid, int nt) {
    mm_ctx *c = c_;
    long b0, b1, g = grain_for(c->grain, c->N);
    blocks(&b0, &b1, g, c->N, tid, nt);
    for (long k = g ? b0 : 0; g ? k < b1 : k < 1; k++) {
        long r0, r1;
        if (block_at(&r0, &r1, k, g, b0, b1, c->N)) mm_fwd_rows(c, r0, r1);
    }
}

void hp_k_matmul_fwd(hp_pool *pool, float *out, const float *inp, const float *weight,
                     const float *bias, long N, long IC, long OC) {
    if (N == 0 || OC == 0) return;
    mm_ctx c = {.out = out, .inp = inp, .weight = weight, .bias = bias, .N = N, .IC = IC, .OC = OC,
                .grain = hp_pool_grain(pool)};
    hp_pool_run(pool, mm_fwd_task, &c);
}

/* Each thread: its rows of dinp, then its output channels of dweight and dbias. */
static void mm_bwd_task(void *c_, int tid, int nt) {
    mm_ctx *c = c_;
    long N = c->N, IC = c->IC, OC = c->OC;
    if (c->dinp && IC > 0) {
        long b0, b1, g = grain_for(c->grain, N), r0, r1;
        blocks(&b0, &b1, g, N, tid, nt);
        for (long k = g ? b0 : 0; g ? k < b1 : k < 1; k++) {
            if (!block_at(&r0, &r1, k, g, b0, b1, N)) continue;
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
        long side = IC > OC ? IC : OC, b0, b1, g = grain_for(c->grain, side);
        blocks(&b0, &b1, g, side, tid, nt);
        for (long k = g ? b0 : 0; g ? k < b1 : k < 1; k++) {
            long s0, s1, w0 = 0, w1 = OC, i0 = 0, i1 = IC;
            if (!block_at(&s0, &s1, k, g, b0, b1, side)) continue;
            if (IC > OC) i0 = s0, i1 = s1;
            else w0 = s0, w1 = s1;
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
                .OC = OC,
                .grain = hp_pool_grain(pool)};
    hp_pool_run(pool, mm_bwd_task, &c);
}
