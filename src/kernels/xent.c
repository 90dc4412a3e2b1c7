/* kernels/xent: softmax cross-entropy over a padded vocabulary, forward and
 * backward. Only the first V of Vp columns take part; padded columns get
 * probability 0 and gradient 0. Rows are split over the pool and the mean
 * loss is summed in double in row order, so results are bit-identical for any
 * pool size. */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/kvec.h"

typedef struct {
    float *probs;           /* fwd: probs [N,Vp]; bwd: dlogits [N,Vp] */
    float *losses;          /* [N] */
    const float *logits;    /* fwd: logits [N,Vp]; bwd: probs [N,Vp] */
    const int32_t *targets; /* [N] */
    long N, V, Vp;
    float scale; /* bwd: dloss / N */
} xent_ctx;

static void xent_fwd_task(void *c_, int tid, int nt) {
    xent_ctx *c = c_;
    long n0, n1, V = c->V, Vp = c->Vp;
    hp_pool_split(&n0, &n1, c->N, 1, tid, nt);
    for (long n = n0; n < n1; n++) {
        const float *x = c->logits + n * Vp;
        float *p = c->probs + n * Vp;
        int32_t tgt = c->targets[n];
        HP_ASSERT(tgt >= 0 && tgt < V);
        float m = hp_kv_max(x, V);
        float acc[HP_KV_LANES] = {0};
        long i = 0;
        for (; i + HP_KV_LANES <= V; i += HP_KV_LANES)
            for (int j = 0; j < HP_KV_LANES; j++) {
                float e = hp_kv_expf(x[i + j] - m);
                p[i + j] = e;
                acc[j] += e;
            }
        for (int j = 0; i + j < V; j++) {
            float e = hp_kv_expf(x[i + j] - m);
            p[i + j] = e;
            acc[j] += e;
        }
        float sum = hp_kv_fold(acc), inv = 1.0f / sum;
        for (long k = 0; k < V; k++) p[k] *= inv;
        if (Vp > V) memset(p + V, 0, (size_t)(Vp - V) * sizeof(float));
        c->losses[n] = (float)(log((double)sum) - (double)(x[tgt] - m));
    }
}

void hp_k_xent_fwd(hp_pool *pool, float *probs, float *losses, float *mean_loss,
                   const float *logits, const int32_t *targets, long N, long V, long Vp) {
    HP_ASSERT(V > 0 && V <= Vp);
    xent_ctx c = {.probs = probs,
                  .losses = losses,
                  .logits = logits,
                  .targets = targets,
                  .N = N,
                  .V = V,
                  .Vp = Vp};
    hp_pool_run(N * Vp < 8192 ? NULL : pool, xent_fwd_task, &c);
    double s = 0.0;
    for (long n = 0; n < N; n++) s += losses[n];
    *mean_loss = N > 0 ? (float)(s / (double)N) : 0.0f;
}

static void xent_bwd_task(void *c_, int tid, int nt) {
    xent_ctx *c = c_;
    long n0, n1, V = c->V, Vp = c->Vp;
    float s = c->scale;
    hp_pool_split(&n0, &n1, c->N, 1, tid, nt);
    for (long n = n0; n < n1; n++) {
        const float *p = c->logits + n * Vp;
        float *d = c->probs + n * Vp; /* may alias p */
        int32_t tgt = c->targets[n];
        HP_ASSERT(tgt >= 0 && tgt < V);
        float pt = p[tgt];
        for (long k = 0; k < V; k++) d[k] = s * p[k];
        d[tgt] = s * (pt - 1.0f);
        if (Vp > V) memset(d + V, 0, (size_t)(Vp - V) * sizeof(float));
    }
}

void hp_k_xent_bwd(hp_pool *pool, float *dlogits, const float *probs, const int32_t *targets,
                   float dloss, long N, long V, long Vp) {
    HP_ASSERT(V > 0 && V <= Vp);
    if (N == 0) return;
    xent_ctx c = {.probs = dlogits,
                  .logits = probs,
                  .targets = targets,
                  .N = N,
                  .V = V,
                  .Vp = Vp,
                  .scale = dloss / (float)N};
    hp_pool_run(N * Vp < 8192 ? NULL : pool, xent_bwd_task, &c);
}
