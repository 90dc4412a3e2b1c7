/* kernels/xent_chunk: softmax cross-entropy over logits that arrive a
 * vocabulary chunk at a time and are never stored whole (the fused LM head
 * and loss, ops/loss_fused). Forward: per row a running maximum, the sum of
 * exponentials below it and the target's logit, updated chunk by chunk.
 * Backward: each chunk's gradient from the row's log-sum-exp. Only real
 * vocabulary columns are passed in (a chunk's w columns start at column v0).
 * Rows are split over the pool; each row's sums run in column order, so the
 * results do not depend on the pool's size. */
#include <math.h>

#include "kernels/kernels.h"
#include "kernels/kvec.h"

typedef struct {
    float *stats;           /* [N, 3]: max, sum of exp(x - max), the target's logit */
    float *d;               /* grad: [N, w] (may alias x) */
    const float *x;         /* [N, w] */
    const float *lse;       /* grad: [N] */
    const int32_t *targets; /* [N] */
    long N, w, v0;
    int first;
    float scale;
} xc_ctx;

static void stats_task(void *c_, int tid, int nt) {
    xc_ctx *c = c_;
    long n0, n1, w = c->w;
    hp_pool_split(&n0, &n1, c->N, 1, tid, nt);
    for (long n = n0; n < n1; n++) {
        const float *x = c->x + n * w;
        float *s = c->stats + 3 * n;
        if (c->first) s[0] = -INFINITY, s[1] = 0.0f, s[2] = 0.0f;
        float m = hp_kv_max(x, w), mx = m > s[0] ? m : s[0];
        float acc[HP_KV_LANES] = {0};
        long i = 0;
        for (; i + HP_KV_LANES <= w; i += HP_KV_LANES)
            for (int j = 0; j < HP_KV_LANES; j++) acc[j] += hp_kv_expf(x[i + j] - mx);
        for (int j = 0; i + j < w; j++) acc[j] += hp_kv_expf(x[i + j] - mx);
        float sum = hp_kv_fold(acc);
        s[1] = (s[0] == -INFINITY ? 0.0f : s[1] * hp_kv_expf(s[0] - mx)) + sum;
        s[0] = mx;
        long t = (long)c->targets[n] - c->v0;
        if (t >= 0 && t < w) s[2] = x[t];
    }
}

void hp_k_xent_chunk_stats(hp_pool *pool, float *stats, const float *chunk, const int32_t *targets, long N, long w,
                           long v0, int first) {
    if (N == 0 || w == 0) return;
    xc_ctx c = {.stats = stats, .x = chunk, .targets = targets, .N = N, .w = w, .v0 = v0, .first = first};
    hp_pool_run(N * w < 8192 ? NULL : pool, stats_task, &c);
}

void hp_k_xent_chunk_finish(float *lse, float *losses, float *mean_loss, const float *stats, long N) {
    double total = 0.0;
    for (long n = 0; n < N; n++) {
        const float *s = stats + 3 * n;
        double l = (double)s[0] + log((double)s[1]);
        lse[n] = (float)l;
        losses[n] = (float)(l - (double)s[2]);
        total += losses[n];
    }
    *mean_loss = N > 0 ? (float)(total / (double)N) : 0.0f;
}

static void grad_task(void *c_, int tid, int nt) {
    xc_ctx *c = c_;
    long n0, n1, w = c->w;
    float s = c->scale;
    hp_pool_split(&n0, &n1, c->N, 1, tid, nt);
    for (long n = n0; n < n1; n++) {
        const float *x = c->x + n * w;
        float *d = c->d + n * w, l = c->lse[n];
        for (long k = 0; k < w; k++) d[k] = s * hp_kv_expf(x[k] - l);
        long t = (long)c->targets[n] - c->v0;
        if (t >= 0 && t < w) d[t] -= s;
    }
}

void hp_k_xent_chunk_grad(hp_pool *pool, float *dchunk, const float *chunk, const float *lse, const int32_t *targets,
                          float scale, long N, long w, long v0) {
    if (N == 0 || w == 0) return;
    xc_ctx c = {.d = dchunk, .x = chunk, .lse = lse, .targets = targets, .N = N, .w = w, .v0 = v0, .scale = scale};
    hp_pool_run(N * w < 8192 ? NULL : pool, grad_task, &c);
}
