/* kernels/swiglu: SwiGLU forward and backward, out = silu(gate) * up with gate
 * and up the two halves of each input row. Element-wise, so results are
 * bit-identical for any pool size. */
#include "kernels/kernels.h"
#include "kernels/kvec.h"

typedef struct {
    float *out;        /* out [N,H] or dinp [N,2H] */
    const float *inp;  /* [N,2H] */
    const float *dout; /* [N,H] */
    long N, H;
} sw_ctx;

static void sw_fwd_task(void *c_, int tid, int nt) {
    sw_ctx *c = c_;
    long n0, n1, H = c->H;
    hp_pool_split(&n0, &n1, c->N, 1, tid, nt);
    for (long n = n0; n < n1; n++) {
        const float *g = c->inp + n * 2 * H, *u = g + H;
        float *o = c->out + n * H;
        for (long j = 0; j < H; j++) {
            float sg = 1.0f / (1.0f + hp_kv_expf(-g[j]));
            o[j] = g[j] * sg * u[j];
        }
    }
}

void hp_k_swiglu_fwd(hp_pool *pool, float *out, const float *inp, long N, long H) {
    sw_ctx c = {.out = out, .inp = inp, .N = N, .H = H};
    hp_pool_run(N * H < 8192 ? NULL : pool, sw_fwd_task, &c);
}

/* dgate = dout * up * s (1 + g (1 - s)), dup = dout * g * s, s = sigmoid(g). */
static void sw_bwd_task(void *c_, int tid, int nt) {
    sw_ctx *c = c_;
    long n0, n1, H = c->H;
    hp_pool_split(&n0, &n1, c->N, 1, tid, nt);
    for (long n = n0; n < n1; n++) {
        const float *g = c->inp + n * 2 * H, *u = g + H, *d = c->dout + n * H;
        float *dg = c->out + n * 2 * H, *du = dg + H;
        for (long j = 0; j < H; j++) {
            float sg = 1.0f / (1.0f + hp_kv_expf(-g[j]));
            dg[j] = d[j] * u[j] * sg * (1.0f + g[j] * (1.0f - sg));
            du[j] = d[j] * g[j] * sg;
        }
    }
}

void hp_k_swiglu_bwd(hp_pool *pool, float *dinp, const float *dout, const float *inp, long N,
                     long H) {
    sw_ctx c = {.out = dinp, .inp = inp, .dout = dout, .N = N, .H = H};
    hp_pool_run(N * H < 8192 ? NULL : pool, sw_bwd_task, &c);
}
