/* kernels/bf16_embed: token and position embeddings and the bias gradient in
 * bf16. The backward sums widen each bf16 value and add in the fp32 kernels'
 * order (token order per element; columns or rows owned by one thread), so
 * they equal hp_k_embedding_bwd / hp_k_add_pos_bwd on the widened gradient. */
#include <string.h>

#include "kernels/bf16.h"
#include "kernels/bf16_row.h"

typedef struct {
    uint16_t *out;         /* fwd: [N,C] / [B,T,C] (bf16) */
    float *dout32;         /* bwd: dtable [rows,C] / dpos [rows,C] / dbias [OC] */
    const uint16_t *inp;   /* dout [N,C] / inp [B,T,C] (bf16) */
    const uint16_t *table; /* table [rows,C] / pos [>=T,C] (bf16) */
    const int32_t *ids;    /* [N] */
    long N, C, rows, B, T;
} embb_ctx;

static void emb_fwd_task(void *c_, int tid, int nt) {
    embb_ctx *c = c_;
    long n0, n1;
    hp_pool_split(&n0, &n1, c->N, 1, tid, nt);
    for (long n = n0; n < n1; n++)
        memcpy(c->out + n * c->C, c->table + (long)c->ids[n] * c->C, (size_t)c->C * sizeof(uint16_t));
}

void hp_kb_embedding_fwd(hp_pool *pool, uint16_t *out, const int32_t *ids, const uint16_t *table,
                         long N, long C) {
    embb_ctx c = {.out = out, .ids = ids, .table = table, .N = N, .C = C};
    hp_pool_run(N * C < 16384 ? NULL : pool, emb_fwd_task, &c);
}

/* rows == 0: accumulate into dtable as it is. */
static void emb_bwd_task(void *c_, int tid, int nt) {
    embb_ctx *c = c_;
    long c0, c1;
    hp_pool_split(&c0, &c1, c->C, 16, tid, nt);
    if (c0 >= c1) return;
    long C = c->C, w = c1 - c0;
    for (long r = 0; r < c->rows; r++) memset(c->dout32 + r * C + c0, 0, (size_t)w * sizeof(float));
    for (long n = 0; n < c->N; n++) {
        float *d = c->dout32 + (long)c->ids[n] * C + c0;
        const uint16_t *g = c->inp + n * C + c0;
        for (long j = 0; j < w; j++) d[j] += hp_kb_f(g[j]);
    }
}

void hp_kb_embedding_bwd(hp_pool *pool, float *dtable, const uint16_t *dout, const int32_t *ids,
                         long N, long C, long rows) {
    embb_ctx c = {.dout32 = dtable, .inp = dout, .ids = ids, .N = N, .C = C, .rows = rows};
    hp_pool_run(pool, emb_bwd_task, &c);
}

void hp_kb_embedding_bwd_acc(hp_pool *pool, float *dtable, const uint16_t *dout,
                             const int32_t *ids, long N, long C) {
    embb_ctx c = {.dout32 = dtable, .inp = dout, .ids = ids, .N = N, .C = C, .rows = 0};
    hp_pool_run(N * C < 16384 ? NULL : pool, emb_bwd_task, &c);
}

static void pos_fwd_task(void *c_, int tid, int nt) {
    embb_ctx *c = c_;
    long r0, r1, C = c->C;
    hp_pool_split(&r0, &r1, c->B * c->T, 1, tid, nt);
    float tmp[HP_KB_CHUNK];
    for (long r = r0; r < r1; r++) {
        const uint16_t *x = c->inp + r * C, *p = c->table + (r % c->T) * C;
        for (long j0 = 0; j0 < C; j0 += HP_KB_CHUNK) {
            long w = C - j0 < HP_KB_CHUNK ? C - j0 : HP_KB_CHUNK;
            for (long j = 0; j < w; j++) tmp[j] = hp_kb_f(x[j0 + j]) + hp_kb_f(p[j0 + j]);
            hp_kb_narrow(c->out + r * C + j0, tmp, w);
        }
    }
}

void hp_kb_add_pos_fwd(hp_pool *pool, uint16_t *out, const uint16_t *inp, const uint16_t *pos,
                       long B, long T, long C) {
    embb_ctx c = {.out = out, .inp = inp, .table = pos, .B = B, .T = T, .C = C};
    hp_pool_run(B * T * C < 16384 ? NULL : pool, pos_fwd_task, &c);
}

static void pos_bwd_task(void *c_, int tid, int nt) {
    embb_ctx *c = c_;
    long t0, t1, C = c->C;
    hp_pool_split(&t0, &t1, c->rows, 1, tid, nt);
    for (long t = t0; t < t1; t++) {
        float *d = c->dout32 + t * C;
        memset(d, 0, (size_t)C * sizeof(float));
        if (t >= c->T) continue;
        for (long b = 0; b < c->B; b++) {
            const uint16_t *g = c->inp + (b * c->T + t) * C;
            for (long j = 0; j < C; j++) d[j] += hp_kb_f(g[j]);
        }
    }
}

void hp_kb_add_pos_bwd(hp_pool *pool, float *dpos, const uint16_t *dout, long B, long T, long C,
                       long rows) {
    embb_ctx c = {.dout32 = dpos, .inp = dout, .B = B, .T = T, .C = C, .rows = rows};
    hp_pool_run(rows * C < 16384 ? NULL : pool, pos_bwd_task, &c);
}

/* Column sums in row order, in double, a chunk of columns at a time (as
 * hp_k_matmul_bwd's dbias). */
static void colsum_task(void *c_, int tid, int nt) {
    embb_ctx *c = c_;
    long o0, o1, N = c->N, OC = c->C;
    hp_pool_split(&o0, &o1, OC, 16, tid, nt);
    for (long j0 = o0; j0 < o1; j0 += 256) {
        long w = o1 - j0 < 256 ? o1 - j0 : 256;
        double acc[256] = {0};
        for (long n = 0; n < N; n++) {
            const uint16_t *g = c->inp + n * OC + j0;
            for (long j = 0; j < w; j++) acc[j] += hp_kb_f(g[j]);
        }
        for (long j = 0; j < w; j++) c->dout32[j0 + j] = (float)acc[j];
    }
}

void hp_kb_colsum(hp_pool *pool, float *dbias, const uint16_t *dout, long N, long OC) {
    embb_ctx c = {.dout32 = dbias, .inp = dout, .N = N, .C = OC};
    hp_pool_run(pool, colsum_task, &c);
}
