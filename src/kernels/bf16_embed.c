/* kernels/bf16_embed: the bf16 position add (summed in fp32, rounded once)
 * and the bias gradient of bf16 products. The bf16 lookup and the embedding
 * and position backward sums share kernels/embedding's bodies (exact widening,
 * the fp32 kernels' order), so they equal the fp32 kernels on the widened
 * values. */
#include "kernels/bf16.h"
#include "kernels/bf16_row.h"

typedef struct {
    uint16_t *out;         /* add_pos: [B,T,C] (bf16) */
    float *dout32;         /* colsum: dbias [OC] */
    const uint16_t *inp;   /* add_pos: inp [B,T,C]; colsum: dout [N,OC] (bf16) */
    const uint16_t *table; /* add_pos: pos [>=T,C] (bf16) */
    long N, C, B, T;
} embb_ctx;

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
