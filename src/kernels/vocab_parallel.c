#include "kernels/vocab_parallel.h"

#include <math.h>
#include <string.h>

typedef struct {
    float *o;
    const float *a, *b; /* inputs (b: the running sum of the accumulating backward) */
    const int32_t *ids;
    long N, C, begin, rows, V;
} vp_ctx;

static void emb_fwd_task(void *c_, int tid, int nt) {
    vp_ctx *c = c_;
    long b, e;
    hp_pool_split(&b, &e, c->N, 1, tid, nt);
    for (long n = b; n < e; n++) {
        long r = (long)c->ids[n] - c->begin;
        float *dst = c->o + n * c->C;
        if (r >= 0 && r < c->rows)
            memcpy(dst, c->a + r * c->C, sizeof(float) * (size_t)c->C);
        else
            memset(dst, 0, sizeof(float) * (size_t)c->C);
    }
}

void hp_k_embedding_vp_fwd(hp_pool *pool, float *out, const int32_t *ids, const float *table, long N, long C,
                           long begin, long rows) {
    vp_ctx c = {.o = out, .a = table, .ids = ids, .N = N, .C = C, .begin = begin, .rows = rows};
    hp_pool_run(pool, emb_fwd_task, &c);
}

/* Each thread owns a block of columns, so every sum runs in n order; the
 * rows start from dsofar (c->b) or from zero. */
static void emb_bwd_task(void *c_, int tid, int nt) {
    vp_ctx *c = c_;
    long b, e;
    hp_pool_split(&b, &e, c->C, 16, tid, nt);
    for (long r = 0; r < c->rows; r++) {
        float *dst = c->o + r * c->C + b;
        if (!c->b)
            memset(dst, 0, sizeof(float) * (size_t)(e - b));
        else if (c->b != c->o)
            memcpy(dst, c->b + r * c->C + b, sizeof(float) * (size_t)(e - b));
    }
    for (long n = 0; n < c->N; n++) {
        long r = (long)c->ids[n] - c->begin;
        if (r < 0 || r >= c->rows) continue;
        float *dst = c->o + r * c->C;
        const float *src = c->a + n * c->C;
        for (long j = b; j < e; j++) dst[j] += src[j];
    }
}

void hp_k_embedding_vp_bwd(hp_pool *pool, float *dtable, const float *dout, const int32_t *ids, long N, long C,
                           long begin, long rows) {
    vp_ctx c = {.o = dtable, .a = dout, .ids = ids, .N = N, .C = C, .begin = begin, .rows = rows};
    hp_pool_run(pool, emb_bwd_task, &c);
}

void hp_k_embedding_vp_bwd_acc(hp_pool *pool, float *dtable, const float *dsofar, const float *dout,
                               const int32_t *ids, long N, long C, long begin, long rows) {
    vp_ctx c = {.o = dtable, .a = dout, .b = dsofar, .ids = ids, .N = N, .C = C, .begin = begin, .rows = rows};
    hp_pool_run(pool, emb_bwd_task, &c);
}

/* valid local columns: [0, valid) */
static long valid_cols(long cols, long begin, long V) {
    long v = V - begin;
    return v < 0 ? 0 : v > cols ? cols : v;
}

static void stats_task(void *c_, int tid, int nt) {
    vp_ctx *c = c_;
    long b, e, nv = valid_cols(c->C, c->begin, c->V);
    hp_pool_split(&b, &e, c->N, 1, tid, nt);
    for (long n = b; n < e; n++) {
        const float *l = c->a + n * c->C;
        float m = -INFINITY;
        for (long j = 0; j < nv; j++) m = l[j] > m ? l[j] : m;
        double s = 0;
        for (long j = 0; j < nv; j++) s += exp((double)(l[j] - m));
        long t = (long)c->ids[n] - c->begin;
        c->o[n] = m;
        c->o[c->N + n] = (float)s;
        c->o[2 * c->N + n] = (t >= 0 && t < nv) ? l[t] : 0.0f;
    }
}

void hp_k_xent_vp_stats(hp_pool *pool, float *stats, const float *logits, const int32_t *targets, long N,
                        long cols, long begin, long V) {
    vp_ctx c = {.o = stats, .a = logits, .ids = targets, .N = N, .C = cols, .begin = begin, .V = V};
    hp_pool_run(pool, stats_task, &c);
}

typedef struct {
    float *probs, *losses;
    const float *logits, *g;
    long k, N, C, begin, V;
} fin_ctx;

static void finish_task(void *c_, int tid, int nt) {
    fin_ctx *c = c_;
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
        const float *l = c->logits + n * c->C;
        float *p = c->probs + n * c->C;
        float inv = (float)(1.0 / S);
        for (long j = 0; j < nv; j++) p[j] = expf(l[j] - M) * inv;
        for (long j = nv; j < c->C; j++) p[j] = 0.0f;
        c->losses[n] = (float)(log(S) + (double)M - T);
    }
}

void hp_k_xent_vp_finish(hp_pool *pool, float *probs, float *losses, float *loss, const float *logits,
                         const float *gathered, long k, long N, long cols, long begin, long V, long divisor) {
    fin_ctx c = {probs, losses, logits, gathered, k, N, cols, begin, V};
    hp_pool_run(pool, finish_task, &c);
    double s = 0;
    for (long n = 0; n < N; n++) s += losses[n];
    *loss = (float)(s / (double)divisor);
}

typedef struct {
    float *d;
    const float *p;
    const int32_t *t;
    float scale;
    long N, C, begin, V;
} vpb_ctx;

static void bwd_task(void *c_, int tid, int nt) {
    vpb_ctx *c = c_;
    long b, e, nv = valid_cols(c->C, c->begin, c->V);
    hp_pool_split(&b, &e, c->N, 1, tid, nt);
    for (long n = b; n < e; n++) {
        const float *p = c->p + n * c->C;
        float *d = c->d + n * c->C;
        for (long j = 0; j < nv; j++) d[j] = c->scale * p[j];
        for (long j = nv; j < c->C; j++) d[j] = 0.0f;
        long t = (long)c->t[n] - c->begin;
        if (t >= 0 && t < nv) d[t] = c->scale * (p[t] - 1.0f);
    }
}

void hp_k_xent_vp_bwd(hp_pool *pool, float *dlogits, const float *probs, const int32_t *targets, float dloss,
                      long N, long cols, long begin, long V, long divisor) {
    vpb_ctx c = {dlogits, probs, targets, dloss / (float)divisor, N, cols, begin, V};
    hp_pool_run(pool, bwd_task, &c);
}
