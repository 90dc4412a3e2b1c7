/* optim/adamw: the AdamW update with PyTorch / llm.c semantics, fp32 state:
 *   m <- b1 m + (1-b1) g;  v <- b2 v + (1-b2) g^2;
 *   mh = m / (1 - b1^t);   vh = v / (1 - b2^t);
 *   p <- p - lr (mh / (sqrt(vh) + eps) + wd p)
 * (weight decay decoupled, inside the same update; t counts from 1). The
 * bias corrections are computed once per step as llm.c does (1 - powf(b, t)).
 * Work is split over the pool in fixed blocks of 16 values; the update is
 * elementwise, so results are identical for any pool size. A gradient scale
 * (global-norm clipping) can be fused into the update: the gradient read is
 * grad[i] * grad_scale, the same float a separate scaling pass would have
 * stored, so the result is bit-identical to clipping first (1 changes nothing). */
#ifndef HP_OPTIM_ADAMW_H
#define HP_OPTIM_ADAMW_H

#include "core/pool.h"

typedef struct {
    float beta1, beta2, eps;
} hp_adamw_hparams;

/* One tensor (or shard) that AdamW updates; wd is its own weight decay. */
typedef struct {
    float *param; /* [n] */
    float *m;     /* [n] first moment */
    float *v;     /* [n] second moment */
    const float *grad; /* [n] */
    long n;
    float wd;
} hp_adamw_tensor;

/* One AdamW step (number t >= 1) over one tensor: param[n], m[n], v[n]
 * updated in place from grad[n]. */
void hp_adamw_update(hp_pool *pool, float *param, float *m, float *v, const float *grad, long n,
                     float lr, float wd, const hp_adamw_hparams *hp, long t);
/* One AdamW step over `count` tensors as one job: the pool splits the
 * concatenation of all `total` (= sum of n) values, so many small tensors cost
 * one pool run. */
void hp_adamw_update_many(hp_pool *pool, const hp_adamw_tensor *tensors, int count, long total,
                          float lr, const hp_adamw_hparams *hp, long t);
/* The same with every gradient multiplied by grad_scale as it is read. */
void hp_adamw_update_many_scaled(hp_pool *pool, const hp_adamw_tensor *tensors, int count,
                                 long total, float lr, const hp_adamw_hparams *hp, long t,
                                 float grad_scale);

#endif
