/* kernels/elementwise: GELU (tanh approximation) forward and backward, add,
 * scale and copy. Each element is computed on its own, so results are bit-identical for
 * any pool size. */
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/kvec.h"

#define EW_ALIGN 64                /* elements per block of a thread's share */
#define EW_SERIAL 32768            /* below this many elements the caller works alone */
#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_A 0.044715f

typedef struct {
    float *out;         /* [n] */
    const float *a, *b; /* [n] (b may be NULL) */
    float s;
    long n;
} ew_ctx;

/* 0.5 x (1 + tanh(u)) = x sigmoid(2u): no cancellation where tanh(u) ~ -1. */
static void gelu_fwd_task(void *c_, int tid, int nt) {
    ew_ctx *c = c_;
    long i0, i1;
    hp_pool_split(&i0, &i1, c->n, EW_ALIGN, tid, nt);
    float *o = c->out;
    const float *x = c->a;
    for (long i = i0; i < i1; i++) {
        float v = x[i];
        float e = hp_kv_expf(-2.0f * GELU_K * (v + GELU_A * v * v * v));
        o[i] = v / (1.0f + e);
    }
}

void hp_k_gelu_fwd(hp_pool *pool, float *out, const float *inp, long n) {
    ew_ctx c = {.out = out, .a = inp, .n = n};
    hp_pool_run(n < EW_SERIAL / 4 ? NULL : pool, gelu_fwd_task, &c);
}

/* With s = sigmoid(2u) = 0.5 (1 + tanh u) and 1 - tanh^2 u = 4 s (1 - s):
 * d/dx = s + 2 x s (1 - s) K (1 + 3 A x^2), and 1 - s = e s with e = exp(-2u)
 * (clamped so e s stays finite). */
static void gelu_bwd_task(void *c_, int tid, int nt) {
    ew_ctx *c = c_;
    long i0, i1;
    hp_pool_split(&i0, &i1, c->n, EW_ALIGN, tid, nt);
    float *d = c->out;
    const float *g = c->a, *x = c->b;
    for (long i = i0; i < i1; i++) {
        float v = x[i];
        float z = -2.0f * GELU_K * (v + GELU_A * v * v * v);
        z = z < 80.0f ? z : 80.0f;
        float e = hp_kv_expf(z);
        float s = 1.0f / (1.0f + e);
        float du = GELU_K * (1.0f + 3.0f * GELU_A * v * v);
        d[i] = g[i] * (s + 2.0f * v * s * (e * s) * du);
    }
}

void hp_k_gelu_bwd(hp_pool *pool, float *dinp, const float *dout, const float *inp, long n) {
    ew_ctx c = {.out = dinp, .a = dout, .b = inp, .n = n};
    hp_pool_run(n < EW_SERIAL / 4 ? NULL : pool, gelu_bwd_task, &c);
}

static void add_task(void *c_, int tid, int nt) {
    ew_ctx *c = c_;
    long i0, i1;
    hp_pool_split(&i0, &i1, c->n, EW_ALIGN, tid, nt);
    float *o = c->out;
    const float *a = c->a, *b = c->b;
    for (long i = i0; i < i1; i++) o[i] = a[i] + b[i];
}

void hp_k_add(hp_pool *pool, float *out, const float *a, const float *b, long n) {
    ew_ctx c = {.out = out, .a = a, .b = b, .n = n};
    hp_pool_run(n < EW_SERIAL ? NULL : pool, add_task, &c);
}

static void scale_task(void *c_, int tid, int nt) {
    ew_ctx *c = c_;
    long i0, i1;
    hp_pool_split(&i0, &i1, c->n, EW_ALIGN, tid, nt);
    float *x = c->out, s = c->s;
    for (long i = i0; i < i1; i++) x[i] *= s;
}

void hp_k_scale(hp_pool *pool, float *x, float s, long n) {
    ew_ctx c = {.out = x, .s = s, .n = n};
    hp_pool_run(n < EW_SERIAL ? NULL : pool, scale_task, &c);
}

static void copy_task(void *c_, int tid, int nt) {
    ew_ctx *c = c_;
    long i0, i1;
    hp_pool_split(&i0, &i1, c->n, EW_ALIGN, tid, nt);
    if (i0 < i1) memcpy(c->out + i0, c->a + i0, (size_t)(i1 - i0) * sizeof(float));
}

void hp_k_copy(hp_pool *pool, float *out, const float *inp, long n) {
    ew_ctx c = {.out = out, .a = inp, .n = n};
    hp_pool_run(n < EW_SERIAL ? NULL : pool, copy_task, &c);
}

typedef struct {
    char *out;
    const char *inp;
    long out_stride, in_stride, rows, row_bytes;
} rows_ctx;

static void copy_rows_task(void *c_, int tid, int nt) {
    rows_ctx *c = c_;
    long r0, r1;
    hp_pool_split(&r0, &r1, c->rows, 1, tid, nt);
    for (long r = r0; r < r1; r++) memcpy(c->out + r * c->out_stride, c->inp + r * c->in_stride, (size_t)c->row_bytes);
}

void hp_k_copy_rows(hp_pool *pool, void *out, long out_stride, const void *inp, long in_stride, long rows,
                    long row_bytes) {
    rows_ctx c = {out, inp, out_stride, in_stride, rows, row_bytes};
    hp_pool_run(rows * row_bytes < EW_SERIAL * 4 ? NULL : pool, copy_rows_task, &c);
}
