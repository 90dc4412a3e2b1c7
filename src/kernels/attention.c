/* kernels/attention: causal multi-head self-attention on a fused qkv, forward
 * and backward. Each (batch, head) pair is one task for one pool thread; the
 * products QK^T, PV and the backward ones go through single-threaded sgemm on
 * blocks of ATT_BLOCK query rows, computing only the columns at or left of the
 * block's diagonal (about half the work of a full T x T product). A pair's
 * result does not depend on which thread computed it, so results are
 * bit-identical across pool sizes. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/kvec.h"

#ifndef ATT_BLOCK
#define ATT_BLOCK 64
#endif

typedef struct {
    float *out;        /* fwd: [B,T,C]; bwd: dqkv [B,T,3C] */
    float *att;        /* [B,NH,T,T] (fwd writes it) */
    const float *catt; /* [B,NH,T,T] (bwd reads it) */
    const float *qkv;  /* [B,T,3C] */
    const float *dout; /* [B,T,C] */
    float *scratch;    /* nthreads x [T,T] */
    long B, T, C, NH;
} att_ctx;

/* row[0..n) <- softmax(row[0..n)), row[n..T) <- 0. */
static void softmax_causal_row(float *row, long n, long T) {
    float m = hp_kv_max(row, n);
    float acc[HP_KV_LANES] = {0};
    long i = 0;
    for (; i + HP_KV_LANES <= n; i += HP_KV_LANES)
        for (int j = 0; j < HP_KV_LANES; j++) {
            float e = hp_kv_expf(row[i + j] - m);
            row[i + j] = e;
            acc[j] += e;
        }
    for (int j = 0; i + j < n; j++) {
        float e = hp_kv_expf(row[i + j] - m);
        row[i + j] = e;
        acc[j] += e;
    }
    float inv = 1.0f / hp_kv_fold(acc);
    for (long k = 0; k < n; k++) row[k] *= inv;
    if (T > n) memset(row + n, 0, (size_t)(T - n) * sizeof(float));
}

/* One head. out: [T, hs] with row stride C; att: [T,T]; q: [T, hs] with row
 * stride 3C, k at q + C, v at q + 2C. */
static void att_fwd_head(float *out, float *att, const float *q, long T, long C, long hs) {
    const float *k = q + C, *v = q + 2 * C;
    int ld = (int)(3 * C);
    float scale = 1.0f / sqrtf((float)hs);
    for (long i0 = 0; i0 < T; i0 += ATT_BLOCK) {
        long i1 = i0 + ATT_BLOCK < T ? i0 + ATT_BLOCK : T;
        int m = (int)(i1 - i0);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, (int)i1, (int)hs, scale,
                    q + i0 * ld, ld, k, ld, 0.0f, att + i0 * T, (int)T);
        for (long i = i0; i < i1; i++) softmax_causal_row(att + i * T, i + 1, T);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, (int)hs, (int)i1, 1.0f,
                    att + i0 * T, (int)T, v, ld, 0.0f, out + i0 * C, (int)C);
    }
}

static void att_fwd_task(void *c_, int tid, int nt) {
    att_ctx *c = c_;
    long p0, p1, T = c->T, C = c->C, NH = c->NH, hs = C / NH;
    hp_pool_split(&p0, &p1, c->B * NH, 1, tid, nt);
    for (long p = p0; p < p1; p++) {
        long b = p / NH, h = p % NH;
        att_fwd_head(c->out + b * T * C + h * hs, c->att + p * T * T,
                     c->qkv + b * T * 3 * C + h * hs, T, C, hs);
    }
}

void hp_k_attention_fwd(hp_pool *pool, float *out, float *att, const float *qkv, float *scratch,
                        long B, long T, long C, long NH) {
    HP_ASSERT(NH > 0 && C % NH == 0);
    if (B == 0 || T == 0) return;
    att_ctx c = {
        .out = out, .att = att, .qkv = qkv, .scratch = scratch, .B = B, .T = T, .C = C, .NH = NH};
    hp_pool_run(pool, att_fwd_task, &c);
}

/* One head. dq: [T, hs] with row stride 3C (dk at dq + C, dv at dq + 2C);
 * dout: [T, hs] with row stride C; q as in att_fwd_head; att: [T,T];
 * ds: [T,T] scratch for dP and then dS. */
static void att_bwd_head(float *dq, const float *dout, const float *q, const float *att, float *ds,
                         long T, long C, long hs) {
    const float *k = q + C, *v = q + 2 * C;
    float *dk = dq + C, *dv = dq + 2 * C;
    int ld = (int)(3 * C), iT = (int)T, iC = (int)C, ihs = (int)hs;
    float scale = 1.0f / sqrtf((float)hs);
    /* dV[j-block] = P[j0:T, j-block]^T dO[j0:T]  (P is 0 above the diagonal) */
    for (long j0 = 0; j0 < T; j0 += ATT_BLOCK) {
        long j1 = j0 + ATT_BLOCK < T ? j0 + ATT_BLOCK : T;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)(j1 - j0), ihs, (int)(T - j0),
                    1.0f, att + j0 * T + j0, iT, dout + j0 * C, iC, 0.0f, dv + j0 * ld, ld);
    }
    for (long i0 = 0; i0 < T; i0 += ATT_BLOCK) {
        long i1 = i0 + ATT_BLOCK < T ? i0 + ATT_BLOCK : T;
        int m = (int)(i1 - i0);
        /* dP[i-block, 0:i1] = dO[i-block] V[0:i1]^T */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, (int)i1, ihs, 1.0f, dout + i0 * C,
                    iC, v, ld, 0.0f, ds + i0 * T, iT);
        /* dS = P (dP - sum_j P dP), zero right of the diagonal up to the block end */
        for (long i = i0; i < i1; i++) {
            const float *p = att + i * T;
            float *d = ds + i * T;
            float s = hp_kv_dot(p, d, i + 1);
            for (long j = 0; j <= i; j++) d[j] = p[j] * (d[j] - s);
            for (long j = i + 1; j < i1; j++) d[j] = 0.0f;
        }
        /* dQ[i-block] = scale dS[i-block, 0:i1] K[0:i1] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, ihs, (int)i1, scale, ds + i0 * T,
                    iT, k, ld, 0.0f, dq + i0 * ld, ld);
    }
    /* dK[j-block] = scale dS[j0:T, j-block]^T Q[j0:T] */
    for (long j0 = 0; j0 < T; j0 += ATT_BLOCK) {
        long j1 = j0 + ATT_BLOCK < T ? j0 + ATT_BLOCK : T;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)(j1 - j0), ihs, (int)(T - j0),
                    scale, ds + j0 * T + j0, iT, q + j0 * ld, ld, 0.0f, dk + j0 * ld, ld);
    }
}

static void att_bwd_task(void *c_, int tid, int nt) {
    att_ctx *c = c_;
    long p0, p1, T = c->T, C = c->C, NH = c->NH, hs = C / NH;
    hp_pool_split(&p0, &p1, c->B * NH, 1, tid, nt);
    float *ds = c->scratch + (long)tid * T * T;
    for (long p = p0; p < p1; p++) {
        long b = p / NH, h = p % NH;
        att_bwd_head(c->out + b * T * 3 * C + h * hs, c->dout + b * T * C + h * hs,
                     c->qkv + b * T * 3 * C + h * hs, c->catt + p * T * T, ds, T, C, hs);
    }
}

void hp_k_attention_bwd(hp_pool *pool, float *dqkv, const float *dout, const float *qkv,
                        const float *att, float *scratch, long B, long T, long C, long NH) {
    HP_ASSERT(NH > 0 && C % NH == 0);
    if (B == 0 || T == 0) return;
    att_ctx c = {.out = dqkv,
                 .catt = att,
                 .qkv = qkv,
                 .dout = dout,
                 .scratch = scratch,
                 .B = B,
                 .T = T,
                 .C = C,
                 .NH = NH};
    hp_pool_run(pool, att_bwd_task, &c);
}

size_t hp_k_attention_scratch(long B, long T, long C, long NH, int nthreads) {
    (void)B, (void)C, (void)NH;
    return (size_t)nthreads * (size_t)T * (size_t)T;
}
