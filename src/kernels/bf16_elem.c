/* kernels/bf16_elem: GELU, add and SwiGLU in bf16. GELU and add work on stack
 * chunks (widen, the fp32 kernel or an fp32 sum, narrow); SwiGLU widens whole
 * rows into the thread's scratch and runs the fp32 kernel on them. */
#include "kernels/bf16.h"
#include "kernels/bf16_row.h"
#include "kernels/kernels.h"

#define EWB_ALIGN 256
#define EWB_SERIAL 8192

typedef struct {
    uint16_t *out;           /* [n] or [N,H] / dinp [N,2H] */
    const uint16_t *a, *b;   /* [n]; swiglu: inp [N,2H], dout [N,H] */
    float *scratch;          /* swiglu: nthreads x 5 x [H] */
    long n, H;
    int op; /* 0 gelu fwd, 1 gelu bwd, 2 add */
} ewb_ctx;

static void ew_task(void *c_, int tid, int nt) {
    ewb_ctx *c = c_;
    long i0, i1;
    hp_pool_split(&i0, &i1, c->n, EWB_ALIGN, tid, nt);
    float x[HP_KB_CHUNK], y[HP_KB_CHUNK], o[HP_KB_CHUNK];
    for (long k = i0; k < i1; k += HP_KB_CHUNK) {
        long w = i1 - k < HP_KB_CHUNK ? i1 - k : HP_KB_CHUNK;
        hp_kb_widen(x, c->a + k, w);
        if (c->op != 0) hp_kb_widen(y, c->b + k, w);
        if (c->op == 0)
            hp_k_gelu_fwd(NULL, o, x, w);
        else if (c->op == 1)
            hp_k_gelu_bwd(NULL, o, x, y, w); /* a = dout, b = inp */
        else
            for (long j = 0; j < w; j++) o[j] = x[j] + y[j];
        hp_kb_narrow(c->out + k, o, w);
    }
}

void hp_kb_gelu_fwd(hp_pool *pool, uint16_t *out, const uint16_t *inp, long n) {
    ewb_ctx c = {.out = out, .a = inp, .n = n, .op = 0};
    hp_pool_run(n < EWB_SERIAL ? NULL : pool, ew_task, &c);
}

void hp_kb_gelu_bwd(hp_pool *pool, uint16_t *dinp, const uint16_t *dout, const uint16_t *inp,
                    long n) {
    ewb_ctx c = {.out = dinp, .a = dout, .b = inp, .n = n, .op = 1};
    hp_pool_run(n < EWB_SERIAL ? NULL : pool, ew_task, &c);
}

void hp_kb_add(hp_pool *pool, uint16_t *out, const uint16_t *a, const uint16_t *b, long n) {
    ewb_ctx c = {.out = out, .a = a, .b = b, .n = n, .op = 2};
    hp_pool_run(n < 4 * EWB_SERIAL ? NULL : pool, ew_task, &c);
}

size_t hp_kb_swiglu_scratch(long H, int nthreads) { return (size_t)nthreads * 5 * (size_t)H; }

static void sw_fwd_task(void *c_, int tid, int nt) {
    ewb_ctx *c = c_;
    long n0, n1, H = c->H;
    float *x = c->scratch + (long)tid * 5 * H, *o = x + 2 * H;
    hp_pool_split(&n0, &n1, c->n, 1, tid, nt);
    for (long r = n0; r < n1; r++) {
        hp_kb_widen(x, c->a + r * 2 * H, 2 * H);
        hp_k_swiglu_fwd(NULL, o, x, 1, H);
        hp_kb_narrow(c->out + r * H, o, H);
    }
}

static void sw_bwd_task(void *c_, int tid, int nt) {
    ewb_ctx *c = c_;
    long n0, n1, H = c->H;
    float *x = c->scratch + (long)tid * 5 * H, *g = x + 2 * H, *d = g + H;
    hp_pool_split(&n0, &n1, c->n, 1, tid, nt);
    for (long r = n0; r < n1; r++) {
        hp_kb_widen(x, c->a + r * 2 * H, 2 * H);
        hp_kb_widen(g, c->b + r * H, H);
        hp_k_swiglu_bwd(NULL, d, g, x, 1, H);
        hp_kb_narrow(c->out + r * 2 * H, d, 2 * H);
    }
}

void hp_kb_swiglu_fwd(hp_pool *pool, uint16_t *out, const uint16_t *inp, float *scratch, long N,
                      long H) {
    ewb_ctx c = {.out = out, .a = inp, .scratch = scratch, .n = N, .H = H};
    hp_pool_run(N * H < 8192 ? NULL : pool, sw_fwd_task, &c);
}

void hp_kb_swiglu_bwd(hp_pool *pool, uint16_t *dinp, const uint16_t *dout, const uint16_t *inp,
                      float *scratch, long N, long H) {
    ewb_ctx c = {.out = dinp, .a = inp, .b = dout, .scratch = scratch, .n = N, .H = H};
    hp_pool_run(N * H < 8192 ? NULL : pool, sw_bwd_task, &c);
}
