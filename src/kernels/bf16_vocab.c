/* kernels/bf16_vocab: the vocabulary-parallel embedding and cross-entropy
 * pieces in bf16 (kernels/vocab_parallel.h). Reading bf16 is exact (a
 * shift), so the statistics and probabilities are the fp32 kernels' on the
 * widened logits; the one rounding is the logit gradient's, through
 * hp_kb_narrow like every bf16 kernel. */
#include <math.h>
#include <string.h>

#include "core/tensor.h"
#include "kernels/bf16.h"
#include "kernels/vocab_parallel.h"

typedef struct {
    void *o;
    const void *a;
    const float *sofar;
    const int32_t *ids;
    long N, C, begin, rows, V;
} vpb16_ctx;

static void emb_fwd_task(void *c_, int tid, int nt) {
    vpb16_ctx *c = c_;
    long b, e;
    hp_pool_split(&b, &e, c->N, 1, tid, nt);
    uint16_t *o = c->o;
    const uint16_t *t = c->a;
    for (long n = b; n < e; n++) {
        long r = (long)c->ids[n] - c->begin;
        if (r >= 0 && r < c->rows)
            memcpy(o + n * c->C, t + r * c->C, sizeof(uint16_t) * (size_t)c->C);
        else
            memset(o + n * c->C, 0, sizeof(uint16_t) * (size_t)c->C);
    }
}

void hp_kb_embedding_vp_fwd(hp_pool *pool, uint16_t *out, const int32_t *ids, const uint16_t *table, long N, long C,
                            long begin, long rows) {
    vpb16_ctx c = {.o = out, .a = table, .ids = ids, .N = N, .C = C, .begin = begin, .rows = rows};
    hp_pool_run(pool, emb_fwd_task, &c);
}

/* Each thread owns a block of columns, so every sum runs in n order. */
static void emb_bwd_task(void *c_, int tid, int nt) {
    vpb16_ctx *c = c_;
    long b, e;
    hp_pool_split(&b, &e, c->C, 16, tid, nt);
    float *o = c->o;
    const uint16_t *d = c->a;
    for (long r = 0; r < c->rows; r++) {
        float *dst = o + r * c->C + b;
        if (!c->sofar)
            memset(dst, 0, sizeof(float) * (size_t)(e - b));
        else if (c->sofar != o)
            memcpy(dst, c->sofar + r * c->C + b, sizeof(float) * (size_t)(e - b));
    }
    for (long n = 0; n < c->N; n++) {
        long r = (long)c->ids[n] - c->begin;
        if (r < 0 || r >= c->rows) continue;
        float *dst = o + r * c->C;
        const uint16_t *src = d + n * c->C;
        for (long j = b; j < e; j++) dst[j] += hp_bf16_to_f32(src[j]);
    }
}

void hp_kb_embedding_vp_bwd(hp_pool *pool, float *dtable, const float *dsofar, const uint16_t *dout,
                            const int32_t *ids, long N, long C, long begin, long rows) {
    vpb16_ctx c = {.o = dtable, .a = dout, .sofar = dsofar, .ids = ids, .N = N, .C = C, .begin = begin, .rows = rows};
    hp_pool_run(pool, emb_bwd_task, &c);
}

static long valid_cols(long cols, long begin, long V) {
    long v = V - begin;
    return v < 0 ? 0 : v > cols ? cols : v;
}

static void stats_task(void *c_, int tid, int nt) {
    vpb16_ctx *c = c_;
    long b, e, nv = valid_cols(c->C, c->begin, c->V);
    hp_pool_split(&b, &e, c->N, 1, tid, nt);
    float *o = c->o;
    for (long n = b; n < e; n++) {
        const uint16_t *l = (const uint16_t *)c->a + n * c->C;
        float m = -INFINITY;
        for (long j = 0; j < nv; j++) {
            float x = hp_bf16_to_f32(l[j]);
            m = x > m ? x : m;
        }
        double s = 0;
        for (long j = 0; j < nv; j++) s += exp((double)(hp_bf16_to_f32(l[j]) - m));
        long t = (long)c->ids[n] - c->begin;
        o[n] = m;
        o[c->N + n] = (float)s;
        o[2 * c->N + n] = (t >= 0 && t < nv) ? hp_bf16_to_f32(l[t]) : 0.0f;
    }
}

void hp_kb_xent_vp_stats(hp_pool *pool, float *stats, const uint16_t *logits, const int32_t *targets, long N,
                         long cols, long begin, long V) {
    vpb16_ctx c = {.o = stats, .a = logits, .ids = targets, .N = N, .C = cols, .begin = begin, .V = V};
    hp_pool_run(pool, stats_task, &c);
}

typedef struct {
    float *probs, *losses;
    const uint16_t *logits;
    const float *g;
    long k, N, C, begin, V;
} fin16_ctx;

static void finish_task(void *c_, int tid, int nt) {
    fin16_ctx *c = c_;
    long b, e, nv = valid_cols(c->C, c->begin, c->V), N = c->N;
    hp_pool_split(&b, &e, N, 1, tid, nt);
    for (long n = b; n < e; n++) {
        float M = -INFINITY;
        for (long r = 0; r < c->k; r++) {
            float m = c->g[r * 3 * N + n];
            M = m > M ? m : M;
        }
        double S = 0, T = 0;
        for (long r = 0; r < c->k; r++) {
            const float *st = c->g + r * 3 * N;
            if (st[N + n] > 0) S += (double)st[N + n] * exp((double)(st[n] - M));
            T += st[2 * N + n];
        }
        const uint16_t *l = c->logits + n * c->C;
        float *p = c->probs + n * c->C;
        float inv = (float)(1.0 / S);
        for (long j = 0; j < nv; j++) p[j] = expf(hp_bf16_to_f32(l[j]) - M) * inv;
        for (long j = nv; j < c->C; j++) p[j] = 0.0f;
        c->losses[n] = (float)(log(S) + (double)M - T);
    }
}

void hp_kb_xent_vp_finish(hp_pool *pool, float *probs, float *losses, float *loss, const uint16_t *logits,
                          const float *gathered, long k, long N, long cols, long begin, long V, long divisor) {
    fin16_ctx c = {probs, losses, logits, gathered, k, N, cols, begin, V};
    hp_pool_run(pool, finish_task, &c);
    double s = 0;
    for (long n = 0; n < N; n++) s += losses[n];
    *loss = (float)(s / (double)divisor);
}

typedef struct {
    uint16_t *d;
    const float *p;
    const int32_t *t;
    float *scratch;
    float scale;
    long N, C, begin, V;
} bwd16_ctx;

size_t hp_kb_xent_vp_bwd_scratch(long cols, int nthreads) {
    return (size_t)cols * (size_t)(nthreads > 0 ? nthreads : 1);
}

static void bwd_task(void *c_, int tid, int nt) {
    bwd16_ctx *c = c_;
    long b, e, nv = valid_cols(c->C, c->begin, c->V);
    hp_pool_split(&b, &e, c->N, 1, tid, nt);
    float *row = c->scratch + (size_t)tid * (size_t)c->C;
    for (long n = b; n < e; n++) {
        const float *p = c->p + n * c->C;
        for (long j = 0; j < nv; j++) row[j] = c->scale * p[j];
        for (long j = nv; j < c->C; j++) row[j] = 0.0f;
        long t = (long)c->t[n] - c->begin;
        if (t >= 0 && t < nv) row[t] = c->scale * (p[t] - 1.0f);
        hp_kb_narrow(c->d + n * c->C, row, c->C);
    }
}

void hp_kb_xent_vp_bwd(hp_pool *pool, uint16_t *dlogits, const float *probs, const int32_t *targets, float dloss,
                       float *scratch, long N, long cols, long begin, long V, long divisor) {
    bwd16_ctx c = {dlogits, probs, targets, scratch, dloss / (float)divisor, N, cols, begin, V};
    hp_pool_run(pool, bwd_task, &c);
}
