/* kernels/gemm_portable: the bf16 GEMM fallback (see gemm_portable.h). Each
 * pool thread runs one single-threaded sgemm on its block of output rows, as
 * kernels/matmul does. */
#include <cblas.h>

#include "kernels/bf16.h"
#include "kernels/gemm_portable.h"

#define GP_ALIGN 16

size_t hp_gemm_portable_floats(const hp_gemm_desc *d) {
    size_t n = 0;
    if (d->a == HP_BF16) n += (size_t)(d->M * d->K) + (size_t)(d->K * d->N);
    if (d->c == HP_BF16) n += (size_t)(d->M * d->N);
    return n;
}

typedef struct {
    const hp_gemm_desc *d;
    void *c;
    const float *a, *b; /* fp32 A and B as stored */
    float *cf;          /* fp32 C when c is bf16 */
    const float *bias;  /* [N] or NULL */
} gp_ctx;

static void gp_task(void *c_, int tid, int nt) {
    gp_ctx *g = c_;
    const hp_gemm_desc *d = g->d;
    long r0, r1, M = d->M, N = d->N, K = d->K;
    hp_pool_split(&r0, &r1, M, GP_ALIGN, tid, nt);
    if (r0 >= r1) return;
    float *cf = (d->c == HP_BF16 ? g->cf : (float *)g->c) + r0 * N;
    if (d->accumulate && d->c == HP_BF16) hp_kb_widen(cf, (const uint16_t *)g->c + r0 * N, (r1 - r0) * N);
    cblas_sgemm(CblasRowMajor, d->trans_a ? CblasTrans : CblasNoTrans, d->trans_b ? CblasTrans : CblasNoTrans,
                (int)(r1 - r0), (int)N, (int)K, 1.0f, g->a + (d->trans_a ? r0 : r0 * K), (int)(d->trans_a ? M : K),
                g->b, (int)(d->trans_b ? K : N), d->accumulate ? 1.0f : 0.0f, cf, (int)N);
    if (g->bias)
        for (long r = 0; r < r1 - r0; r++)
            for (long j = 0; j < N; j++) cf[r * N + j] += g->bias[j];
    if (d->c == HP_BF16) hp_kb_narrow((uint16_t *)g->c + r0 * N, cf, (r1 - r0) * N);
}

void hp_gemm_portable_run(hp_pool *pool, float *buf, const hp_gemm_desc *d, void *c, const void *a,
                          const void *b, const float *bias) {
    gp_ctx g = {.d = d, .c = c, .a = a, .b = b, .bias = d->bias ? bias : NULL};
    float *p = buf;
    if (d->a == HP_BF16) {
        hp_kb_bf16_to_f32(pool, p, a, d->M * d->K);
        g.a = p, p += d->M * d->K;
        hp_kb_bf16_to_f32(pool, p, b, d->K * d->N);
        g.b = p, p += d->K * d->N;
    }
    if (d->c == HP_BF16) g.cf = p;
    hp_pool_run(pool, gp_task, &g);
}
