/* kernels/vocab_parallel: see the header. One body per kernel for fp32 and
 * bf16 tensors: bf16 reads are exact widenings (a shift), so the statistics
 * and probabilities are the fp32 computation on the widened logits, and the
 * one rounding is the bf16 logit gradient's (through hp_kb_narrow). */
#include "kernels/vocab_parallel.h"

#include <math.h>
#include <string.h>

#include "core/tensor.h"
#include "kernels/bf16.h"

/* element i of a row of dtype dt (fp32 or bf16) */
static inline float ld(const void *p, long i, hp_dtype dt) {
    return dt == HP_BF16 ? hp_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

typedef struct {
    void *o;
    const void *a;      /* the table / dout / logits, of dtype dt */
    const float *sofar; /* the accumulating backward's running sum (NULL: from zero) */
    const int32_t *ids;
    long N, C, begin, rows, V;
    hp_dtype dt;
} vp_ctx;

static void emb_fwd_task(void *c_, int tid, int nt) {
    vp_ctx *c = c_;
    long b, e;
    size_t esz = hp_dtype_size(c->dt), row = esz * (size_t)c->C;
    hp_pool_split(&b, &e, c->N, 1, tid, nt);
    for (long n = b; n < e; n++) {
        long r = (long)c->ids[n] - c->begin;
        char *dst = (char *)c->o + (size_t)n * row;
        if (r >= 0 && r < c->rows)
            memcpy(dst, (const char *)c->a + (size_t)r * row, row);
        else
            memset(dst, 0, row);
    }
}

static void embedding_fwd(hp_pool *pool, void *out, const int32_t *ids, const void *table, long N, long C,
                          long begin, long rows, hp_dtype dt) {
    vp_ctx c = {.o = out, .a = table, .ids = ids, .N = N, .C = C, .begin = begin, .rows = rows, .dt = dt};
    hp_pool_run(pool, emb_fwd_task, &c);
}

void hp_k_embedding_vp_fwd(hp_pool *pool, float *out, const int32_t *ids, const float *table, long N, long C,
                           long begin, long rows) {
    embedding_fwd(pool, out, ids, table, N, C, begin, rows, HP_F32);
}

void hp_kb_embedding_vp_fwd(hp_pool *pool, uint16_t *out, const int32_t *ids, const uint16_t *table, long N, long C,
                            long begin, long rows) {
    embedding_fwd(pool, out, ids, table, N, C, begin, rows, HP_BF16);
}

/* Each thread owns a block of columns, so every sum runs in n order; the
 * rows start from dsofar or from zero. */
static void emb_bwd_task(void *c_, int tid, int nt) {
    vp_ctx *c = c_;
    long b, e;
    hp_pool_split(&b, &e, c->C, 16, tid, nt);
    float *o = c->o;
    for (long r = 0; r < c->rows; r++) {
        float *dst = o + r * c->C + b;
        if (!c->sofar)
            memset(dst, 0, sizeof(float) * (size_t)(e - b));
        else if (c->sofar != o)
            memcpy(dst, c->sofar + r * c->C + b, sizeof(float) * (size_t)(e - b));
    }
    size_t row = hp_dtype_size(c->dt) * (size_t)c->C;
    for (long n = 0; n < c->N; n++) {
        long r = (long)c->ids[n] - c->begin;
        if (r < 0 || r >= c->rows) continue;
        float *dst = o + r * c->C;
        const void *src = (const char *)c->a + (size_t)n * row;
        for (long j = b; j < e; j++) dst[j] += ld(src, j, c->dt);
    }
}

static void embedding_bwd(hp_pool *pool, float *dtable, const float *dsofar, const void *dout, const int32_t *ids,
                          long N, long C, long begin, long rows, hp_dtype dt) {
    vp_ctx c = {.o = dtable, .a = dout, .sofar = dsofar, .ids = ids, .N = N, .C = C, .begin = begin, .rows = rows,
                .dt = dt};
    hp_pool_run(pool, emb_bwd_task, &c);
}

void hp_k_embedding_vp_bwd(hp_pool *pool, float *dtable, const float *dout, const int32_t *ids, long N, long C,
                           long begin, long rows) {
    embedding_bwd(pool, dtable, NULL, dout, ids, N, C, begin, rows, HP_F32);
}

void hp_k_embedding_vp_bwd_acc(hp_pool *pool, float *dtable, const float *dsofar, const float *dout,
                               const int32_t *ids, long N, long C, long begin, long rows) {
    embedding_bwd(pool, dtable, dsofar, dout, ids, N, C, begin, rows, HP_F32);
}

void hp_kb_embedding_vp_bwd(hp_pool *pool, float *dtable, const float *dsofar, const uint16_t *dout,
                            const int32_t *ids, long N, long C, long begin, long rows) {
    embedding_bwd(pool, dtable, dsofar, dout, ids, N, C, begin, rows, HP_BF16);
}

/* valid local columns: [0, valid) */
static long valid_cols(long cols, long begin, long V) {
    long v = V - begin;
    return v < 0 ? 0 : v > cols ? cols : v;
}

static void stats_task(void *c_, int tid, int nt) {
    vp_ctx *c = c_;
    long b, e, nv = valid_cols(c->C, c->begin, c->V);
    size_t row = hp_dtype_size(c->dt) * (size_t)c->C;
    float *o = c->o;
    hp_pool_split(&b, &e, c->N, 1, tid, nt);
    for (long n = b; n < e; n++) {
        const void *l = (const char *)c->a + (size_t)n * row;
        float m = -INFINITY;
        for (long j = 0; j < nv; j++) {
            float x = ld(l, j, c->dt);
            m = x > m ? x : m;
        }
        double s = 0;
        for (long j = 0; j < nv; j++) s += exp((double)(ld(l, j, c->dt) - m));
        long t = (long)c->ids[n] - c->begin;
        o[n] = m;
        o[c->N + n] = (float)s;
        o[2 * c->N + n] = (t >= 0 && t < nv) ? ld(l, t, c->dt) : 0.0f;
    }
}

static void xent_stats(hp_pool *pool, float *stats, const void *logits, const int32_t *targets, long N, long cols,
                       long begin, long V, hp_dtype dt) {
    vp_ctx c = {.o = stats, .a = logits, .ids = targets, .N = N, .C = cols, .begin = begin, .V = V, .dt = dt};
    hp_pool_run(pool, stats_task, &c);
}

void hp_k_xent_vp_stats(hp_pool *pool, float *stats, const float *logits, const int32_t *targets, long N,
                        long cols, long begin, long V) {
    xent_stats(pool, stats, logits, targets, N, cols, begin, V, HP_F32);
}

void hp_kb_xent_vp_stats(hp_pool *pool, float *stats, const uint16_t *logits, const int32_t *targets, long N,
                         long cols, long begin, long V) {
    xent_stats(pool, stats, logits, targets, N, cols, begin, V, HP_BF16);
}

typedef struct {
    float *probs, *losses;
    const void *logits;
    const float *g;
    long k, N, C, begin, V;
    hp_dtype dt;
} fin_ctx;

static void finish_task(void *c_, int tid, int nt) {
    fin_ctx *c = c_;
    long b, e, nv = valid_cols(c->C, c->begin, c->V), N = c->N;
    size_t row = hp_dtype_size(c->dt) * (size_t)c->C;
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
        const void *l = (const char *)c->logits + (size_t)n * row;
        float *p = c->probs + n * c->C;
        float inv = (float)(1.0 / S);
        for (long j = 0; j < nv; j++) p[j] = expf(ld(l, j, c->dt) - M) * inv;
        for (long j = nv; j < c->C; j++) p[j] = 0.0f;
        c->losses[n] = (float)(log(S) + (double)M - T);
    }
}

static void xent_finish(hp_pool *pool, float *probs, float *losses, float *loss, const void *logits,
                        const float *gathered, long k, long N, long cols, long begin, long V, long divisor,
                        hp_dtype dt) {
    fin_ctx c = {probs, losses, logits, gathered, k, N, cols, begin, V, dt};
    hp_pool_run(pool, finish_task, &c);
    double s = 0;
    for (long n = 0; n < N; n++) s += losses[n];
    *loss = (float)(s / (double)divisor);
}

void hp_k_xent_vp_finish(hp_pool *pool, float *probs, float *losses, float *loss, const float *logits,
                         const float *gathered, long k, long N, long cols, long begin, long V, long divisor) {
    xent_finish(pool, probs, losses, loss, logits, gathered, k, N, cols, begin, V, divisor, HP_F32);
}

void hp_kb_xent_vp_finish(hp_pool *pool, float *probs, float *losses, float *loss, const uint16_t *logits,
                          const float *gathered, long k, long N, long cols, long begin, long V, long divisor) {
    xent_finish(pool, probs, losses, loss, logits, gathered, k, N, cols, begin, V, divisor, HP_BF16);
}

typedef struct {
    void *d;
    const float *p;
    const int32_t *t;
    float *scratch; /* bf16: a row of C floats per thread */
    float scale;
    long N, C, begin, V;
    hp_dtype dt;
} vpb_ctx;

size_t hp_kb_xent_vp_bwd_scratch(long cols, int nthreads) {
    return (size_t)cols * (size_t)(nthreads > 0 ? nthreads : 1);
}

static void bwd_task(void *c_, int tid, int nt) {
    vpb_ctx *c = c_;
    long b, e, nv = valid_cols(c->C, c->begin, c->V);
    hp_pool_split(&b, &e, c->N, 1, tid, nt);
    float *row = c->dt == HP_BF16 ? c->scratch + (size_t)tid * (size_t)c->C : NULL;
    for (long n = b; n < e; n++) {
        const float *p = c->p + n * c->C;
        float *d = row ? row : (float *)c->d + n * c->C;
        for (long j = 0; j < nv; j++) d[j] = c->scale * p[j];
        for (long j = nv; j < c->C; j++) d[j] = 0.0f;
        long t = (long)c->t[n] - c->begin;
        if (t >= 0 && t < nv) d[t] = c->scale * (p[t] - 1.0f);
        if (row) hp_kb_narrow((uint16_t *)c->d + n * c->C, row, c->C);
    }
}

void hp_k_xent_vp_bwd(hp_pool *pool, float *dlogits, const float *probs, const int32_t *targets, float dloss,
                      long N, long cols, long begin, long V, long divisor) {
    vpb_ctx c = {dlogits, probs, targets, NULL, dloss / (float)divisor, N, cols, begin, V, HP_F32};
    hp_pool_run(pool, bwd_task, &c);
}

void hp_kb_xent_vp_bwd(hp_pool *pool, uint16_t *dlogits, const float *probs, const int32_t *targets, float dloss,
                       float *scratch, long N, long cols, long begin, long V, long divisor) {
    vpb_ctx c = {dlogits, probs, targets, scratch, dloss / (float)divisor, N, cols, begin, V, HP_BF16};
    hp_pool_run(pool, bwd_task, &c);
}
