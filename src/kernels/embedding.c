/* kernels/embedding: token embedding lookup and positional-embedding add,
 * forward and backward. Backward sums run in token order for every output
 * element, whatever the pool size (each thread owns a block of columns or
 * rows), so results are bit-identical across pool sizes. */
#include <string.h>

#include "kernels/kernels.h"

typedef struct {
    float *out;         /* [N,C] or dtable [rows,C] or dpos [rows,C] */
    const float *inp;   /* dout [N,C] / inp [B,T,C] */
    const float *table; /* table [rows,C] / pos [>=T,C] */
    const int32_t *ids; /* [N] */
    long N, C, rows, B, T;
} emb_ctx;

static void emb_fwd_task(void *c_, int tid, int nt) {
    emb_ctx *c = c_;
    long n0, n1;
    hp_pool_split(&n0, &n1, c->N, 1, tid, nt);
    for (long n = n0; n < n1; n++)
        memcpy(c->out + n * c->C, c->table + (long)c->ids[n] * c->C, (size_t)c->C * sizeof(float));
}

void hp_k_embedding_fwd(hp_pool *pool, float *out, const int32_t *ids, const float *table, long N,
                        long C) {
    emb_ctx c = {.out = out, .ids = ids, .table = table, .N = N, .C = C};
    hp_pool_run(N * C < 16384 ? NULL : pool, emb_fwd_task, &c);
}

/* Each thread owns columns [c0, c1) of dtable for every row; rows == 0 means
 * accumulate into dtable as it is (the _acc variant). */
static void emb_bwd_task(void *c_, int tid, int nt) {
    emb_ctx *c = c_;
    long c0, c1;
    hp_pool_split(&c0, &c1, c->C, 16, tid, nt);
    if (c0 >= c1) return;
    long C = c->C, w = c1 - c0;
    for (long r = 0; r < c->rows; r++) memset(c->out + r * C + c0, 0, (size_t)w * sizeof(float));
    for (long n = 0; n < c->N; n++) {
        float *d = c->out + (long)c->ids[n] * C + c0;
        const float *g = c->inp + n * C + c0;
        for (long j = 0; j < w; j++) d[j] += g[j];
    }
}

void hp_k_embedding_bwd(hp_pool *pool, float *dtable, const float *dout, const int32_t *ids, long N,
                        long C, long rows) {
    emb_ctx c = {.out = dtable, .inp = dout, .ids = ids, .N = N, .C = C, .rows = rows};
    hp_pool_run(pool, emb_bwd_task, &c);
}

void hp_k_embedding_bwd_acc(hp_pool *pool, float *dtable, const float *dout, const int32_t *ids,
                            long N, long C) {
    emb_ctx c = {.out = dtable, .inp = dout, .ids = ids, .N = N, .C = C, .rows = 0};
    hp_pool_run(N * C < 16384 ? NULL : pool, emb_bwd_task, &c);
}

static void pos_fwd_task(void *c_, int tid, int nt) {
    emb_ctx *c = c_;
    long r0, r1, C = c->C;
    hp_pool_split(&r0, &r1, c->B * c->T, 1, tid, nt);
    for (long r = r0; r < r1; r++) {
        const float *x = c->inp + r * C, *p = c->table + (r % c->T) * C;
        float *o = c->out + r * C;
        for (long j = 0; j < C; j++) o[j] = x[j] + p[j];
    }
}

void hp_k_add_pos_fwd(hp_pool *pool, float *out, const float *inp, const float *pos, long B, long T,
                      long C) {
    emb_ctx c = {.out = out, .inp = inp, .table = pos, .B = B, .T = T, .C = C};
    hp_pool_run(B * T * C < 16384 ? NULL : pool, pos_fwd_task, &c);
}

/* Each thread owns a block of dpos rows; the sum over b runs in b order. */
static void pos_bwd_task(void *c_, int tid, int nt) {
    emb_ctx *c = c_;
    long t0, t1, C = c->C;
    hp_pool_split(&t0, &t1, c->rows, 1, tid, nt);
    for (long t = t0; t < t1; t++) {
        float *d = c->out + t * C;
        if (t >= c->T) {
            memset(d, 0, (size_t)C * sizeof(float));
            continue;
        }
        memset(d, 0, (size_t)C * sizeof(float));
        for (long b = 0; b < c->B; b++) {
            const float *g = c->inp + (b * c->T + t) * C;
            for (long j = 0; j < C; j++) d[j] += g[j];
        }
    }
}

void hp_k_add_pos_bwd(hp_pool *pool, float *dpos, const float *dout, long B, long T, long C,
                      long rows) {
    emb_ctx c = {.out = dpos, .inp = dout, .B = B, .T = T, .C = C, .rows = rows};
    hp_pool_run(rows * C < 16384 ? NULL : pool, pos_bwd_task, &c);
}
