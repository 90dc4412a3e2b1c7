/* kernels/bf16_xent: softmax cross-entropy on bf16 logits. Each row is
 * widened into the thread's scratch and run through the fp32 kernel (one
 * row), so probabilities, losses and the mean (double, row order) are fp32
 * exactly as hp_k_xent_fwd on the widened logits; the backward rounds the
 * fp32 gradient row to bf16. */
#include "kernels/bf16.h"
#include "kernels/kernels.h"

typedef struct {
    float *probs;           /* fwd: [N,Vp] */
    float *losses;          /* fwd: [N] */
    uint16_t *dlogits;      /* bwd: [N,Vp] (bf16) */
    const uint16_t *logits; /* fwd: [N,Vp] (bf16) */
    const float *cprobs;    /* bwd: [N,Vp] */
    const int32_t *targets; /* [N] */
    float *scratch;         /* nthreads x [Vp] */
    long N, V, Vp;
    float scale; /* bwd: dloss / N */
} xb_ctx;

size_t hp_kb_xent_scratch(long Vp, int nthreads) { return (size_t)nthreads * (size_t)Vp; }

static void xent_fwd_task(void *c_, int tid, int nt) {
    xb_ctx *c = c_;
    long n0, n1, Vp = c->Vp;
    float *x = c->scratch + (long)tid * Vp, mean;
    hp_pool_split(&n0, &n1, c->N, 1, tid, nt);
    for (long n = n0; n < n1; n++) {
        hp_kb_widen(x, c->logits + n * Vp, Vp);
        hp_k_xent_fwd(NULL, c->probs + n * Vp, &c->losses[n], &mean, x, &c->targets[n], 1, c->V, Vp);
    }
}

void hp_kb_xent_fwd(hp_pool *pool, float *probs, float *losses, float *mean_loss,
                    const uint16_t *logits, const int32_t *targets, float *scratch, long N, long V,
                    long Vp) {
    HP_ASSERT(V > 0 && V <= Vp);
    xb_ctx c = {.probs = probs, .losses = losses, .logits = logits, .targets = targets,
                .scratch = scratch, .N = N, .V = V, .Vp = Vp};
    hp_pool_run(N * Vp < 8192 ? NULL : pool, xent_fwd_task, &c);
    double s = 0.0;
    for (long n = 0; n < N; n++) s += losses[n];
    *mean_loss = N > 0 ? (float)(s / (double)N) : 0.0f;
}

static void xent_bwd_task(void *c_, int tid, int nt) {
    xb_ctx *c = c_;
    long n0, n1, Vp = c->Vp;
    float *d = c->scratch + (long)tid * Vp;
    hp_pool_split(&n0, &n1, c->N, 1, tid, nt);
    for (long n = n0; n < n1; n++) {
        /* one row with N = 1: the kernel's scale is dloss / 1, so pass dloss / N */
        hp_k_xent_bwd(NULL, d, c->cprobs + n * Vp, &c->targets[n], c->scale, 1, c->V, Vp);
        hp_kb_narrow(c->dlogits + n * Vp, d, Vp);
    }
}

void hp_kb_xent_bwd(hp_pool *pool, uint16_t *dlogits, const float *probs, const int32_t *targets,
                    float dloss, float *scratch, long N, long V, long Vp) {
    HP_ASSERT(V > 0 && V <= Vp);
    if (N == 0) return;
    xb_ctx c = {.dlogits = dlogits, .cprobs = probs, .targets = targets, .scratch = scratch,
                .N = N, .V = V, .Vp = Vp, .scale = dloss / (float)N};
    hp_pool_run(N * Vp < 8192 ? NULL : pool, xent_bwd_task, &c);
}
