/* optim/clip: gradient clipping by the global L2 norm over all gradients.
 * The sum of squares is taken in double over fixed blocks of every tensor
 * (HP_CLIP_BLOCK values) and the block sums are added in tensor-then-block
 * order, so the norm does not depend on the pool size. When norm > max_norm
 * every gradient is multiplied by max_norm / (norm + 1e-6). */
#ifndef HP_OPTIM_CLIP_H
#define HP_OPTIM_CLIP_H

#include <stddef.h>

#include "core/pool.h"

#define HP_CLIP_BLOCK 16384

/* doubles of scratch for tensors of the given sizes. */
size_t hp_clip_scratch(const long *sizes, int count);

/* Clips grads[count] (tensor k is grads[k][sizes[k]]) in place and returns
 * the global norm before clipping; max_norm <= 0: off, nothing changes.
 * scratch: hp_clip_scratch(sizes, count) doubles. */
float hp_clip_grad_norm(hp_pool *pool, float *const *grads, double *scratch, const long *sizes,
                        int count, float max_norm);

/* The two halves of it, for callers that fuse the scaling into their next pass
 * over the gradients (the optimizer does, into its update): the global norm,
 * in double, as above; and the factor clipping multiplies by (1 when
 * max_norm <= 0 or norm <= max_norm). */
double hp_grad_global_norm(hp_pool *pool, float *const *grads, double *scratch, const long *sizes,
                           int count);
float hp_clip_scale(double norm, float max_norm);
/* The sum of squares (no square root) with tensor k's block sums multiplied by
 * weights[k] (NULL: 1) as they are added, in tensor-then-block order; for
 * distributed ranks that count a replicated piece by 1 / its replica count. */
double hp_grad_sumsq_weighted(hp_pool *pool, const float *const *grads, const float *weights, double *scratch,
                              const long *sizes, int count);

#endif
