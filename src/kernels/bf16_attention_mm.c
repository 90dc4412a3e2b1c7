/* kernels/bf16_attention_mm: causal self-attention in bf16 with its products
 * on oneDNN's bf16 matmul (AMX tiles where the CPU has them), for the shapes
 * prepared once per (T, hs) by hp_kb_att_mm_prepare. Each (batch, head) pair
 * is one task of one pool thread, as in kernels/attention: the head's q, k, v
 * (and dout) are copied into dense [T, hs] bf16 blocks of the thread's
 * scratch, and the thread runs serial primitives (kernels/gemm.h) of two
 * shapes: "scores" [T,T] = X[T,hs] . Y[T,hs]^T (fp32 out) and "mix"
 * [T,hs] = P[T,T] . Z[T,hs] (bf16 out), and its transpose "mixt"
 * [hs,T] = Z^T[hs,T] . P[T,T] (the backward's dv and dk, so that no T x T
 * matrix is ever transposed).
 *
 * Forward: S = q k^T (all T x T: the upper half is computed and ignored,
 * cheaper on tiles than skipping it), att = softmax(S / sqrt(hs)) row by row
 * over the causal prefix in fp32 (att is fp32, kept for the backward), then
 * y = bf16(att) v. Backward: dv^T = dy^T bf16(att), dP = dy v^T
 * (fp32), dS = att (dP - rowsum(att dP)) in fp32, then dq = bf16(dS /
 * sqrt(hs)) k and dk^T = q^T bf16(dS / sqrt(hs)). So the probabilities and dS are rounded to
 * bf16 before the products that read them (as bf16 flash-attention kernels
 * do); scores, softmax and every accumulation stay fp32. A pair's result
 * does not depend on which thread computed it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bf16.h"
#include "kernels/gemm.h"
#include "kernels/kvec.h"

struct hp_kb_att_mm {
    hp_gemm *scores, *mix, *mixt;
    hp_pool *pool;
    long T, hs;
};

hp_status hp_kb_att_mm_prepare(hp_kb_att_mm **out, hp_gemm_ctx *ctx, long T, long hs) {
    *out = NULL;
    if (T < 1 || hs < 1) return hp_errorf("attention matmuls: T = %ld and head size %ld must be positive", T, hs);
    hp_gemm_desc ds = {.M = T, .N = T, .K = hs, .trans_b = 1, .a = HP_BF16, .b = HP_BF16, .c = HP_F32, .serial = 1};
    hp_gemm_desc dm = {.M = T, .N = hs, .K = T, .a = HP_BF16, .b = HP_BF16, .c = HP_BF16, .serial = 1};
    hp_gemm_desc dt = {.M = hs, .N = T, .K = T, .a = HP_BF16, .b = HP_BF16, .c = HP_BF16, .serial = 1};
    hp_gemm *s = NULL, *m = NULL, *mt = NULL;
    HP_TRY(hp_gemm_prepare(&s, ctx, &ds));
    hp_status st = s ? hp_gemm_prepare(&m, ctx, &dm) : HP_OK;
    if (!st && m) st = hp_gemm_prepare(&mt, ctx, &dt);
    hp_kb_att_mm *a = NULL;
    if (!st && s && m && mt && !(a = calloc(1, sizeof *a))) st = hp_errorf("attention matmuls: out of memory");
    if (!a) { /* an error, or no oneDNN bf16 matmul: the widened path */
        hp_gemm_free(s);
        hp_gemm_free(m);
        hp_gemm_free(mt);
        return st;
    }
    *a = (hp_kb_att_mm){.scores = s, .mix = m, .mixt = mt, .pool = hp_gemm_ctx_pool(ctx), .T = T, .hs = hs};
    *out = a;
    return HP_OK;
}

void hp_kb_att_mm_free(hp_kb_att_mm *a) {
    if (!a) return;
    hp_gemm_free(a->scores);
    hp_gemm_free(a->mix);
    hp_gemm_free(a->mixt);
    free(a);
}

const char *hp_kb_att_mm_impl(const hp_kb_att_mm *a) { return hp_gemm_impl(a->scores); }

/* A thread's scratch, in floats: fp32 [T,T] (scores, then dP), bf16 [T,T]
 * (the probabilities, then dS), seven bf16 [T,hs] (q, k, v, dy, a product's
 * output, q^T and dy^T), each rounded up to 16 floats (64 bytes). */
static long up16(long n) { return (n + 15) / 16 * 16; }
static long thread_floats(long T, long hs) { return up16(T * T) + up16((T * T + 1) / 2) + 7 * up16((T * hs + 1) / 2); }

size_t hp_kb_att_mm_scratch(long T, long hs, int nthreads) { return (size_t)nthreads * (size_t)thread_floats(T, hs) + 16; }

typedef struct {
    float *s;                              /* [T,T] fp32 */
    uint16_t *p;                           /* [T,T] bf16 */
    uint16_t *q, *k, *v, *dy, *o, *qt, *dyt; /* [T,hs] bf16 (qt, dyt: [hs,T]) */
} att_bufs;

static void bufs(att_bufs *b, float *scratch, int tid, long T, long hs) {
    float *base = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63) + (long)tid * thread_floats(T, hs);
    long th = up16((T * hs + 1) / 2);
    b->s = base;
    base += up16(T * T);
    b->p = (uint16_t *)base, base += up16((T * T + 1) / 2);
    uint16_t **hb[] = {&b->q, &b->k, &b->v, &b->dy, &b->o, &b->qt, &b->dyt};
    for (int i = 0; i < 7; i++) *hb[i] = (uint16_t *)base, base += th;
}

/* dst[T, hs] (dense) <- rows of src with row stride ld. */
static void gather_rows(uint16_t *dst, const uint16_t *src, long T, long hs, long ld) {
    for (long t = 0; t < T; t++) memcpy(dst + t * hs, src + t * ld, (size_t)hs * sizeof(uint16_t));
}
static void scatter_rows(uint16_t *dst, const uint16_t *src, long T, long hs, long ld) {
    for (long t = 0; t < T; t++) memcpy(dst + t * ld, src + t * hs, (size_t)hs * sizeof(uint16_t));
}
/* dst[hs, T] <- src[T, hs]^T (both dense), in blocks of 16 rows. */
static void transpose_th(uint16_t *dst, const uint16_t *src, long T, long hs) {
    for (long t0 = 0; t0 < T; t0 += 16) {
        long t1 = t0 + 16 < T ? t0 + 16 : T;
        for (long d = 0; d < hs; d++)
            for (long t = t0; t < t1; t++) dst[d * T + t] = src[t * hs + d];
    }
}
/* dst rows of stride ld <- src[hs, T]^T: dst[t * ld + d] = src[d * T + t]. */
static void scatter_transposed(uint16_t *dst, const uint16_t *src, long T, long hs, long ld) {
    for (long t0 = 0; t0 < T; t0 += 16) {
        long t1 = t0 + 16 < T ? t0 + 16 : T;
        for (long t = t0; t < t1; t++)
            for (long d = 0; d < hs; d++) dst[t * ld + d] = src[d * T + t];
    }
}

/* row[0..n) <- softmax(scale * row[0..n)), row[n..T) <- 0 (fp32). */
static void softmax_row(float *row, long n, long T, float scale) {
    float m = hp_kv_max(row, n);
    float acc[HP_KV_LANES] = {0};
    long i = 0;
    for (; i + HP_KV_LANES <= n; i += HP_KV_LANES)
        for (int j = 0; j < HP_KV_LANES; j++) {
            float e = hp_kv_expf((row[i + j] - m) * scale);
            row[i + j] = e;
            acc[j] += e;
        }
    for (int j = 0; i + j < n; j++) {
        float e = hp_kv_expf((row[i + j] - m) * scale);
        row[i + j] = e;
        acc[j] += e;
    }
    float inv = 1.0f / hp_kv_fold(acc);
    for (long k = 0; k < n; k++) row[k] *= inv;
    if (T > n) memset(row + n, 0, (size_t)(T - n) * sizeof(float));
}

typedef struct {
    const hp_kb_att_mm *mm;
    uint16_t *out;        /* fwd: y [B,T,C]; bwd: dqkv [B,T,3C] */
    float *att;           /* [B,NH,T,T] (fwd writes, bwd reads) */
    const uint16_t *qkv;  /* [B,T,3C] */
    const uint16_t *dout; /* [B,T,C] */
    float *scratch;
    long B, T, C, NH;
    int bwd;              /* the backward (else the forward) */
    hp_status err[256];   /* per thread: the first execute error */
} mm_ctx;

#define MM_RUN(c, tid, call)                                     \
    do {                                                         \
        hp_status s_ = (call);                                   \
        if (s_) {                                                \
            if (!(c)->err[tid]) (c)->err[tid] = s_;              \
            else hp_status_free(s_);                             \
            return;                                              \
        }                                                        \
    } while (0)

static void fwd_head(mm_ctx *c, int tid, att_bufs *b, long p) {
    long T = c->T, C = c->C, NH = c->NH, hs = C / NH, bb = p / NH, h = p % NH;
    const uint16_t *x = c->qkv + bb * T * 3 * C + h * hs;
    float *att = c->att + p * T * T, scale = 1.0f / sqrtf((float)hs);
    gather_rows(b->q, x, T, hs, 3 * C);
    gather_rows(b->k, x + C, T, hs, 3 * C);
    gather_rows(b->v, x + 2 * C, T, hs, 3 * C);
    MM_RUN(c, tid, hp_gemm_run_serial(c->mm->scores, tid, att, b->q, b->k));
    for (long i = 0; i < T; i++) softmax_row(att + i * T, i + 1, T, scale);
    hp_kb_narrow(b->p, att, T * T);
    MM_RUN(c, tid, hp_gemm_run_serial(c->mm->mix, tid, b->o, b->p, b->v));
    scatter_rows(c->out + bb * T * C + h * hs, b->o, T, hs, C);
}

static void bwd_head(mm_ctx *c, int tid, att_bufs *b, long p) {
    long T = c->T, C = c->C, NH = c->NH, hs = C / NH, bb = p / NH, h = p % NH;
    const uint16_t *x = c->qkv + bb * T * 3 * C + h * hs;
    const float *att = c->att + p * T * T;
    float scale = 1.0f / sqrtf((float)hs);
    uint16_t *dx = c->out + bb * T * 3 * C + h * hs;
    gather_rows(b->q, x, T, hs, 3 * C);
    gather_rows(b->k, x + C, T, hs, 3 * C);
    gather_rows(b->v, x + 2 * C, T, hs, 3 * C);
    gather_rows(b->dy, c->dout + bb * T * C + h * hs, T, hs, C);
    transpose_th(b->qt, b->q, T, hs);
    transpose_th(b->dyt, b->dy, T, hs);
    /* dv^T = dy^T P */
    hp_kb_narrow(b->p, att, T * T);
    MM_RUN(c, tid, hp_gemm_run_serial(c->mm->mixt, tid, b->o, b->dyt, b->p));
    scatter_transposed(dx + 2 * C, b->o, T, hs, 3 * C);
    /* dP = dy v^T, then dS = P (dP - sum_j P dP) / sqrt(hs) over the causal prefix */
    MM_RUN(c, tid, hp_gemm_run_serial(c->mm->scores, tid, b->s, b->dy, b->v));
    for (long i = 0; i < T; i++) {
        const float *pr = att + i * T;
        float *d = b->s + i * T;
        float s = hp_kv_dot(pr, d, i + 1);
        for (long j = 0; j <= i; j++) d[j] = pr[j] * (d[j] - s) * scale;
        for (long j = i + 1; j < T; j++) d[j] = 0.0f;
    }
    hp_kb_narrow(b->p, b->s, T * T);
    /* dq = dS k, dk^T = q^T dS */
    MM_RUN(c, tid, hp_gemm_run_serial(c->mm->mix, tid, b->o, b->p, b->k));
    scatter_rows(dx, b->o, T, hs, 3 * C);
    MM_RUN(c, tid, hp_gemm_run_serial(c->mm->mixt, tid, b->o, b->qt, b->p));
    scatter_transposed(dx + C, b->o, T, hs, 3 * C);
}

/* Pool thread tid's (batch, head) pairs, forward or backward as c->bwd says. */
static void heads_task(void *c_, int tid, int nt) {
    mm_ctx *c = c_;
    long p0, p1;
    att_bufs b;
    bufs(&b, c->scratch, tid, c->T, c->C / c->NH);
    hp_pool_split(&p0, &p1, c->B * c->NH, 1, tid, nt);
    for (long p = p0; p < p1 && !c->err[tid]; p++) (c->bwd ? bwd_head : fwd_head)(c, tid, &b, p);
}

static hp_status run(mm_ctx *c, hp_pool *pool) {
    HP_ASSERT(c->NH > 0 && c->C % c->NH == 0 && c->T == c->mm->T && c->C / c->NH == c->mm->hs);
    HP_ASSERT(pool == c->mm->pool && hp_pool_size(pool) <= 256);
    if (c->B == 0) return HP_OK;
    hp_pool_run(pool, heads_task, c);
    hp_status first = HP_OK;
    for (int t = 0; t < hp_pool_size(pool); t++) {
        if (!first) first = c->err[t];
        else if (c->err[t]) hp_status_free(c->err[t]);
    }
    return first;
}

hp_status hp_kb_attention_mm_fwd(const hp_kb_att_mm *mm, hp_pool *pool, uint16_t *out, float *att,
                                 const uint16_t *qkv, float *scratch, long B, long T, long C, long NH) {
    mm_ctx c = {.mm = mm, .out = out, .att = att, .qkv = qkv, .scratch = scratch, .B = B, .T = T, .C = C, .NH = NH};
    return run(&c, pool);
}

hp_status hp_kb_attention_mm_bwd(const hp_kb_att_mm *mm, hp_pool *pool, uint16_t *dqkv, const uint16_t *dout,
                                 const uint16_t *qkv, const float *att, float *scratch, long B, long T, long C,
                                 long NH) {
    mm_ctx c = {.mm = mm, .out = dqkv, .att = (float *)att, .qkv = qkv, .dout = dout, .scratch = scratch,
                .B = B, .T = T, .C = C, .NH = NH, .bwd = 1};
    return run(&c, pool);
}
