#include "optim/adamw.h"

#include <math.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

typedef struct {
    const hp_adamw_tensor *tensors;
    int count;
    long total;
    float lr, beta1, beta2, eps, bc1, bc2, gscale;
} adamw_ctx;

#if defined(__AVX512F__)
/* AVX-512: 16 values at a time, the last block masked, so every value goes
 * through the same instructions wherever a thread's share starts (results do
 * not depend on the pool size). Written out because the compiler keeps the
 * plain loop scalar: sqrtf may set errno as far as it knows. */
static void update_span(const adamw_ctx *c, const hp_adamw_tensor *x, long b, long e) {
    float *p = x->param, *m = x->m, *v = x->v;
    const float *g = x->grad;
    const __m512 b1 = _mm512_set1_ps(c->beta1), omb1 = _mm512_set1_ps(1.0f - c->beta1);
    const __m512 b2 = _mm512_set1_ps(c->beta2), omb2 = _mm512_set1_ps(1.0f - c->beta2);
    const __m512 bc1 = _mm512_set1_ps(c->bc1), bc2 = _mm512_set1_ps(c->bc2);
    const __m512 eps = _mm512_set1_ps(c->eps), lr = _mm512_set1_ps(c->lr);
    const __m512 wd = _mm512_set1_ps(x->wd), gs = _mm512_set1_ps(c->gscale);
    for (long i = b; i < e; i += 16) {
        __mmask16 k = e - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (e - i)) - 1u);
        __m512 gi = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, g + i), gs);
        __m512 mi = _mm512_fmadd_ps(b1, _mm512_maskz_loadu_ps(k, m + i), _mm512_mul_ps(omb1, gi));
        __m512 vi = _mm512_fmadd_ps(b2, _mm512_maskz_loadu_ps(k, v + i),
                                    _mm512_mul_ps(_mm512_mul_ps(omb2, gi), gi));
        __m512 mh = _mm512_div_ps(mi, bc1), vh = _mm512_div_ps(vi, bc2);
        __m512 pi = _mm512_maskz_loadu_ps(k, p + i);
        __m512 u = _mm512_fmadd_ps(wd, pi, _mm512_div_ps(mh, _mm512_add_ps(_mm512_sqrt_ps(vh), eps)));
        _mm512_mask_storeu_ps(m + i, k, mi);
        _mm512_mask_storeu_ps(v + i, k, vi);
        _mm512_mask_storeu_ps(p + i, k, _mm512_fnmadd_ps(lr, u, pi));
    }
}
#else
static void update_span(const adamw_ctx *c, const hp_adamw_tensor *x, long b, long e) {
    float *p = x->param, *m = x->m, *v = x->v;
    const float *g = x->grad;
    const float lr = c->lr, wd = x->wd, b1 = c->beta1, b2 = c->beta2, eps = c->eps;
    const float bc1 = c->bc1, bc2 = c->bc2, gs = c->gscale;
    for (long i = b; i < e; i++) {
        float gi = g[i] * gs;
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        float mh = mi / bc1;
        float vh = vi / bc2;
        m[i] = mi;
        v[i] = vi;
        p[i] -= lr * (mh / (sqrtf(vh) + eps) + wd * p[i]);
    }
}
#endif

static void adamw_task(void *ctx, int tid, int nthreads) {
    const adamw_ctx *c = ctx;
    long b, e;
    hp_pool_split(&b, &e, c->total, 16, tid, nthreads);
    long off = 0; /* start of tensor k in the concatenation */
    for (int k = 0; k < c->count && off < e; k++) {
        long n = c->tensors[k].n;
        long lo = b > off ? b - off : 0;
        long hi = e < off + n ? e - off : n;
        if (lo < hi) update_span(c, &c->tensors[k], lo, hi);
        off += n;
    }
}

void hp_adamw_update_many_scaled(hp_pool *pool, const hp_adamw_tensor *tensors, int count,
                                 long total, float lr, const hp_adamw_hparams *hp, long t,
                                 float grad_scale) {
    adamw_ctx c = {tensors, count, total, lr, hp->beta1, hp->beta2, hp->eps,
                   1.0f - powf(hp->beta1, (float)t), 1.0f - powf(hp->beta2, (float)t), grad_scale};
    hp_pool_run(pool, adamw_task, &c);
}

void hp_adamw_update_many(hp_pool *pool, const hp_adamw_tensor *tensors, int count, long total,
                          float lr, const hp_adamw_hparams *hp, long t) {
    hp_adamw_update_many_scaled(pool, tensors, count, total, lr, hp, t, 1.0f);
}

void hp_adamw_update(hp_pool *pool, float *param, float *m, float *v, const float *grad, long n,
                     float lr, float wd, const hp_adamw_hparams *hp, long t) {
    hp_adamw_tensor x = {param, m, v, grad, n, wd};
    hp_adamw_update_many(pool, &x, 1, n, lr, hp, t);
}
