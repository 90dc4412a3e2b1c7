/* kernels/embedding: token embedding lookup and positional-embedding add,
 * forward and backward. Backward sums run in token order for every output
 * element, whatever the pool size (each thread owns a block of columns or
 * rows), so results are bit-identical across pool sizes. The lookup and the
 * backward sums take fp32 or bf16 tables and gradients with one body (bf16
 * is widened exactly, so its sums are the fp32 kernel's on the widened
 * values); the bf16 position add, which rounds, is kernels/bf16_embed. */
#include <string.h>

#include "core/tensor.h"
#include "kernels/bf16.h"
#include "kernels/kernels.h"

typedef struct {
    float *out;         /* fp32: [N,C]; dtable [rows,C] / dpos [rows,C] (fp32 for both dtypes) */
    void *out16;        /* bf16 lookup: [N,C] */
    const void *inp;    /* dout [N,C] / inp [B,T,C], of dtype dt */
    const void *table;  /* table [rows,C] / pos [>=T,C], of dtype dt */
    const int32_t *ids; /* [N] */
    long N, C, rows, B, T;
    hp_dtype dt;
} emb_ctx;

/* d[0..w) += g[0..w) (g of dtype dt: bf16 widened exactly) */
static inline void add_row(float *d, const void *g, long w, hp_dtype dt) {
    if (dt == HP_BF16) {
        const uint16_t *h = g;
        for (long j = 0; j < w; j++) d[j] += hp_bf16_to_f32(h[j]);
    } else {
        const float *f = g;
        for (long j = 0; j < w; j++) d[j] += f[j];
    }
}

static void emb_fwd_task(void *c_, int tid, int nt) {
    emb_ctx *c = c_;
    long n0, n1;
    size_t row = (size_t)c->C * hp_dtype_size(c->dt);
    char *out = c->dt == HP_BF16 ? c->out16 : (void *)c->out;
    hp_pool_split(&n0, &n1, c->N, 1, tid, nt);
    for (long n = n0; n < n1; n++) memcpy(out + (size_t)n * row, (const char *)c->table + (size_t)c->ids[n] * row, row);
}

static void embedding_fwd(hp_pool *pool, emb_ctx *c) { hp_pool_run(c->N * c->C < 16384 ? NULL : pool, emb_fwd_task, c); }

void hp_k_embedding_fwd(hp_pool *pool, float *out, const int32_t *ids, const float *table, long N,
                        long C) {
    emb_ctx c = {.out = out, .ids = ids, .table = table, .N = N, .C = C, .dt = HP_F32};
    embedding_fwd(pool, &c);
}

void hp_kb_embedding_fwd(hp_pool *pool, uint16_t *out, const int32_t *ids, const uint16_t *table,
                         long N, long C) {
    emb_ctx c = {.out16 = out, .ids = ids, .table = table, .N = N, .C = C, .dt = HP_BF16};
    embedding_fwd(pool, &c);
}

/* Each thread owns columns [c0, c1) of dtable for every row; rows == 0 means
 * accumulate into dtable as it is (the _acc variant). */
static void emb_bwd_task(void *c_, int tid, int nt) {
    emb_ctx *c = c_;
    long c0, c1;
    hp_pool_split(&c0, &c1, c->C, 16, tid, nt);
    if (c0 >= c1) return;
    long C = c->C, w = c1 - c0;
    size_t esz = hp_dtype_size(c->dt);
    for (long r = 0; r < c->rows; r++) memset(c->out + r * C + c0, 0, (size_t)w * sizeof(float));
    for (long n = 0; n < c->N; n++)
        add_row(c->out + (long)c->ids[n] * C + c0, (const char *)c->inp + (size_t)(n * C + c0) * esz, w, c->dt);
}

void hp_k_embedding_bwd(hp_pool *pool, float *dtable, const float *dout, const int32_t *ids, long N,
                        long C, long rows) {
    emb_ctx c = {.out = dtable, .inp = dout, .ids = ids, .N = N, .C = C, .rows = rows, .dt = HP_F32};
    hp_pool_run(pool, emb_bwd_task, &c);
}

void hp_k_embedding_bwd_acc(hp_pool *pool, float *dtable, const float *dout, const int32_t *ids,
                            long N, long C) {
    emb_ctx c = {.out = dtable, .inp = dout, .ids = ids, .N = N, .C = C, .rows = 0, .dt = HP_F32};
    hp_pool_run(N * C < 16384 ? NULL : pool, emb_bwd_task, &c);
}

void hp_kb_embedding_bwd(hp_pool *pool, float *dtable, const uint16_t *dout, const int32_t *ids,
                         long N, long C, long rows) {
    emb_ctx c = {.out = dtable, .inp = dout, .ids = ids, .N = N, .C = C, .rows = rows, .dt = HP_BF16};
    hp_pool_run(pool, emb_bwd_task, &c);
}

void hp_kb_embedding_bwd_acc(hp_pool *pool, float *dtable, const uint16_t *dout,
                             const int32_t *ids, long N, long C) {
    emb_ctx c = {.out = dtable, .inp = dout, .ids = ids, .N = N, .C = C, .rows = 0, .dt = HP_BF16};
    hp_pool_run(N * C < 16384 ? NULL : pool, emb_bwd_task, &c);
}

static void pos_fwd_task(void *c_, int tid, int nt) {
    emb_ctx *c = c_;
    long r0, r1, C = c->C;
    hp_pool_split(&r0, &r1, c->B * c->T, 1, tid, nt);
    for (long r = r0; r < r1; r++) {
        const float *x = (const float *)c->inp + r * C, *p = (const float *)c->table + (r % c->T) * C;
        float *o = c->out + r * C;
        for (long j = 0; j < C; j++) o[j] = x[j] + p[j];
    }
}

void hp_k_add_pos_fwd(hp_pool *pool, float *out, const float *inp, const float *pos, long B, long T,
                      long C) {
    emb_ctx c = {.out = out, .inp = inp, .table = pos, .B = B, .T = T, .C = C, .dt = HP_F32};
    hp_pool_run(B * T * C < 16384 ? NULL : pool, pos_fwd_task, &c);
}

/* Each thread owns a block of dpos rows; the sum over b runs in b order. */
static void pos_bwd_task(void *c_, int tid, int nt) {
    emb_ctx *c = c_;
    long t0, t1, C = c->C;
    size_t esz = hp_dtype_size(c->dt);
    hp_pool_split(&t0, &t1, c->rows, 1, tid, nt);
    for (long t = t0; t < t1; t++) {
        float *d = c->out + t * C;
        memset(d, 0, (size_t)C * sizeof(float));
        if (t >= c->T) continue;
        for (long b = 0; b < c->B; b++) add_row(d, (const char *)c->inp + (size_t)((b * c->T + t) * C) * esz, C, c->dt);
    }
}

void hp_k_add_pos_bwd(hp_pool *pool, float *dpos, const float *dout, long B, long T, long C,
                      long rows) {
    emb_ctx c = {.out = dpos, .inp = dout, .B = B, .T = T, .C = C, .rows = rows, .dt = HP_F32};
    hp_pool_run(rows * C < 16384 ? NULL : pool, pos_bwd_task, &c);
}

void hp_kb_add_pos_bwd(hp_pool *pool, float *dpos, const uint16_t *dout, long B, long T, long C,
                       long rows) {
    emb_ctx c = {.out = dpos, .inp = dout, .B = B, .T = T, .C = C, .rows = rows, .dt = HP_BF16};
    hp_pool_run(rows * C < 16384 ? NULL : pool, pos_bwd_task, &c);
}
