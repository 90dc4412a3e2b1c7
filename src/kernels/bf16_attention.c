/* kernels/bf16_attention: causal self-attention in bf16. Each (batch, head)
 * pair's q, k, v (and, backward, dout) are widened into the thread's scratch
 * and run through the fp32 kernel as a one-head problem, so scores, softmax,
 * probabilities and every product accumulate in fp32; the head's output (or
 * dq, dk, dv) is rounded to bf16 once. */
#include "kernels/bf16.h"
#include "kernels/kernels.h"

typedef struct {
    uint16_t *out;        /* fwd: [B,T,C]; bwd: dqkv [B,T,3C] (bf16) */
    float *att;           /* fwd: [B,NH,T,T] */
    const float *catt;    /* bwd: [B,NH,T,T] */
    const uint16_t *qkv;  /* [B,T,3C] (bf16) */
    const uint16_t *dout; /* [B,T,C] (bf16) */
    float *scratch;       /* nthreads x (T*T + 8*T*hs) */
    long B, T, C, NH;
} attb_ctx;

size_t hp_kb_attention_scratch(long B, long T, long C, long NH, int nthreads) {
    (void)B;
    long hs = C / NH;
    return (size_t)nthreads * (size_t)(T * T + 8 * T * hs);
}

/* qs[T, 3hs] <- the head's q | k | v rows of qkv (b's [T,3C]). */
static void widen_head(float *qs, const uint16_t *qkv, long T, long C, long hs, long h) {
    for (long t = 0; t < T; t++)
        for (int part = 0; part < 3; part++)
            hp_kb_widen(qs + t * 3 * hs + part * hs, qkv + t * 3 * C + part * C + h * hs, hs);
}

static void att_fwd_task(void *c_, int tid, int nt) {
    attb_ctx *c = c_;
    long p0, p1, T = c->T, C = c->C, NH = c->NH, hs = C / NH;
    float *qs = c->scratch + (long)tid * (T * T + 8 * T * hs), *os = qs + 3 * T * hs;
    hp_pool_split(&p0, &p1, c->B * NH, 1, tid, nt);
    for (long p = p0; p < p1; p++) {
        long b = p / NH, h = p % NH;
        widen_head(qs, c->qkv + b * T * 3 * C, T, C, hs, h);
        hp_k_attention_fwd(NULL, os, c->att + p * T * T, qs, NULL, 1, T, hs, 1);
        for (long t = 0; t < T; t++) hp_kb_narrow(c->out + (b * T + t) * C + h * hs, os + t * hs, hs);
    }
}

void hp_kb_attention_fwd(hp_pool *pool, uint16_t *out, float *att, const uint16_t *qkv,
                         float *scratch, long B, long T, long C, long NH) {
    HP_ASSERT(NH > 0 && C % NH == 0);
    if (B == 0 || T == 0) return;
    attb_ctx c = {.out = out, .att = att, .qkv = qkv, .scratch = scratch, .B = B, .T = T, .C = C, .NH = NH};
    hp_pool_run(pool, att_fwd_task, &c);
}

static void att_bwd_task(void *c_, int tid, int nt) {
    attb_ctx *c = c_;
    long p0, p1, T = c->T, C = c->C, NH = c->NH, hs = C / NH;
    float *ds = c->scratch + (long)tid * (T * T + 8 * T * hs);
    float *qs = ds + T * T, *gs = qs + 3 * T * hs, *dq = gs + T * hs;
    hp_pool_split(&p0, &p1, c->B * NH, 1, tid, nt);
    for (long p = p0; p < p1; p++) {
        long b = p / NH, h = p % NH;
        widen_head(qs, c->qkv + b * T * 3 * C, T, C, hs, h);
        for (long t = 0; t < T; t++) hp_kb_widen(gs + t * hs, c->dout + (b * T + t) * C + h * hs, hs);
        hp_k_attention_bwd(NULL, dq, gs, qs, c->catt + p * T * T, ds, 1, T, hs, 1);
        for (long t = 0; t < T; t++)
            for (int part = 0; part < 3; part++)
                hp_kb_narrow(c->out + (b * T + t) * 3 * C + part * C + h * hs, dq + t * 3 * hs + part * hs, hs);
    }
}

void hp_kb_attention_bwd(hp_pool *pool, uint16_t *dqkv, const uint16_t *dout, const uint16_t *qkv,
                         const float *att, float *scratch, long B, long T, long C, long NH) {
    HP_ASSERT(NH > 0 && C % NH == 0);
    if (B == 0 || T == 0) return;
    attb_ctx c = {.out = dqkv, .catt = att, .qkv = qkv, .dout = dout, .scratch = scratch,
                  .B = B, .T = T, .C = C, .NH = NH};
    hp_pool_run(pool, att_bwd_task, &c);
}
