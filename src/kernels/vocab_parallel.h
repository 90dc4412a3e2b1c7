/* kernels/vocab_parallel: the local pieces of a vocabulary-parallel embedding
 * and cross-entropy, for a rank that holds rows [begin, begin + rows) of the
 * embedding table (or columns [begin, begin + cols) of the logits). Ids and
 * targets are global; entries outside the rank's range contribute nothing.
 * Conventions as in kernels.h (pool first, outputs, inputs, sizes). */
#ifndef HP_KERNELS_VOCAB_PARALLEL_H
#define HP_KERNELS_VOCAB_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/pool.h"

/* out[N,C] = table[ids[n] - begin] if begin <= ids[n] < begin + rows, else 0. */
void hp_k_embedding_vp_fwd(hp_pool *pool, float *out, const int32_t *ids, const float *table, long N, long C,
                           long begin, long rows);
/* dtable[rows,C] = sum of dout[n,:] over n whose id falls on the row. */
void hp_k_embedding_vp_bwd(hp_pool *pool, float *dtable, const float *dout, const int32_t *ids, long N, long C,
                           long begin, long rows);

/* dtable[rows,C] = dsofar[rows,C] + the rows of dout whose id falls on them
 * (dtable may alias dsofar). */
void hp_k_embedding_vp_bwd_acc(hp_pool *pool, float *dtable, const float *dsofar, const float *dout,
                               const int32_t *ids, long N, long C, long begin, long rows);

/* Local logits[N,cols] hold global columns [begin, begin+cols); only global
 * columns < V take part. stats[3,N]: the local max m (-inf when the rank has
 * no valid column), s = sum exp(l - m) over the valid local columns (0 when
 * none), and the target's logit t if the target is local, else 0. */
void hp_k_xent_vp_stats(hp_pool *pool, float *stats, const float *logits, const int32_t *targets, long N,
                        long cols, long begin, long V);
/* From the k ranks' stats gathered[k,3,N] (the same on every rank): the global
 * max M, S = sum_r s_r exp(m_r - M), T = sum_r t_r (in rank order);
 * probs[N,cols] = exp(l - M) / S (0 on invalid columns), losses[n] =
 * log(S) + M - T, *loss = sum(losses) / divisor (in double, fixed order). */
void hp_k_xent_vp_finish(hp_pool *pool, float *probs, float *losses, float *loss, const float *logits,
                         const float *gathered, long k, long N, long cols, long begin, long V, long divisor);
/* dlogits[N,cols] = dloss * (probs - onehot(target)) / divisor on valid columns, 0 elsewhere. */
void hp_k_xent_vp_bwd(hp_pool *pool, float *dlogits, const float *probs, const int32_t *targets, float dloss,
                      long N, long cols, long begin, long V, long divisor);

/* ---- bf16: the same with bf16 tables, outputs,
 * logits and logit gradients; table gradients, statistics, probabilities and
 * losses fp32 (the rule of kernels/bf16.h). ---- */
/* out[N,C] (bf16) from table[rows,C] (bf16): the rows are copied as they are. */
void hp_kb_embedding_vp_fwd(hp_pool *pool, uint16_t *out, const int32_t *ids, const uint16_t *table, long N, long C,
                            long begin, long rows);
/* dtable[rows,C] (fp32) = dsofar (fp32, NULL: zeros; may alias dtable) + the rows of dout[N,C] (bf16). */
void hp_kb_embedding_vp_bwd(hp_pool *pool, float *dtable, const float *dsofar, const uint16_t *dout,
                            const int32_t *ids, long N, long C, long begin, long rows);
/* stats[3,N] (fp32) from logits[N,cols] (bf16), as hp_k_xent_vp_stats. */
void hp_kb_xent_vp_stats(hp_pool *pool, float *stats, const uint16_t *logits, const int32_t *targets, long N,
                         long cols, long begin, long V);
/* probs[N,cols], losses[N], *loss (fp32) from logits[N,cols] (bf16), as hp_k_xent_vp_finish. */
void hp_kb_xent_vp_finish(hp_pool *pool, float *probs, float *losses, float *loss, const uint16_t *logits,
                          const float *gathered, long k, long N, long cols, long begin, long V, long divisor);
/* dlogits[N,cols] (bf16) from probs[N,cols] (fp32), as hp_k_xent_vp_bwd; scratch: cols floats per pool
 * thread (hp_kb_xent_vp_bwd_scratch). */
size_t hp_kb_xent_vp_bwd_scratch(long cols, int nthreads);
void hp_kb_xent_vp_bwd(hp_pool *pool, uint16_t *dlogits, const float *probs, const int32_t *targets, float dloss,
                       float *scratch, long N, long cols, long begin, long V, long divisor);

#endif
