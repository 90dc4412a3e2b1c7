#include "optim/adamw.h"

#include <math.h>

typedef struct {
    const hp_adamw_tensor *tensors;
    int count;
    long total;
    float lr, beta1, beta2, eps, bc1, bc2, gscale;
} adamw_ctx;

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
