#include "optim/clip.h"

#include <math.h>

#include "optim/sumsq.h"

static long blocks_of(long n) { return (n + HP_CLIP_BLOCK - 1) / HP_CLIP_BLOCK; }

size_t hp_clip_scratch(const long *sizes, int count) {
    size_t total = 0;
    for (int k = 0; k < count; k++) total += (size_t)blocks_of(sizes[k]);
    return total;
}

typedef struct {
    const float *const *grads;
    const long *sizes;
    int count;
    long nblocks;
    double *partials;
    int apply;   /* 0: compute block sums of squares; 1: scale the gradients */
    float scale;
} clip_ctx;

/* Visits the global blocks [b, e): block j of tensor k has global index
 * (blocks of tensors before k) + j. */
static void clip_task(void *ctx, int tid, int nthreads) {
    clip_ctx *c = ctx;
    long b, e;
    hp_pool_split(&b, &e, c->nblocks, 1, tid, nthreads);
    long first = 0;
    for (int k = 0; k < c->count && first < e; k++) {
        long nb = blocks_of(c->sizes[k]);
        for (long j = (b > first ? b - first : 0); j < nb && first + j < e; j++) {
            long lo = j * HP_CLIP_BLOCK;
            long hi = lo + HP_CLIP_BLOCK < c->sizes[k] ? lo + HP_CLIP_BLOCK : c->sizes[k];
            const float *g = c->grads[k];
            if (!c->apply) {
                c->partials[first + j] = hp_sumsq_span(g + lo, hi - lo);
            } else {
                const float s = c->scale;
                float *w = (float *)g; /* the clip_grad_norm caller passed writable buffers */
                for (long i = lo; i < hi; i++) w[i] *= s;
            }
        }
        first += nb;
    }
}

double hp_grad_global_norm(hp_pool *pool, float *const *grads, double *scratch, const long *sizes,
                           int count) {
    return sqrt(hp_grad_sumsq_weighted(pool, (const float *const *)grads, NULL, scratch, sizes, count));
}

double hp_grad_sumsq_weighted(hp_pool *pool, const float *const *grads, const float *weights, double *scratch,
                              const long *sizes, int count) {
    clip_ctx c = {grads, sizes, count, (long)hp_clip_scratch(sizes, count), scratch, 0, 0.0f};
    hp_pool_run(pool, clip_task, &c);
    double ss = 0.0;
    long j = 0;
    for (int k = 0; k < count; k++) {
        long nb = blocks_of(sizes[k]);
        if (!weights)
            for (long e = j + nb; j < e; j++) ss += scratch[j];
        else
            for (long e = j + nb; j < e; j++) ss += (double)weights[k] * scratch[j];
    }
    return ss;
}

float hp_clip_scale(double norm, float max_norm) {
    if (max_norm > 0.0f && norm > (double)max_norm) return (float)((double)max_norm / (norm + 1e-6));
    return 1.0f;
}

float hp_clip_grad_norm(hp_pool *pool, float *const *grads, double *scratch, const long *sizes,
                        int count, float max_norm) {
    double norm = hp_grad_global_norm(pool, grads, scratch, sizes, count);
    if (max_norm > 0.0f && norm > (double)max_norm) {
        clip_ctx c = {(const float *const *)grads, sizes, count, (long)hp_clip_scratch(sizes, count), scratch, 1,
                      hp_clip_scale(norm, max_norm)};
        hp_pool_run(pool, clip_task, &c);
    }
    return (float)norm;
}
