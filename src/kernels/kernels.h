/* kernels: the CPU compute kernels of the engine (fp32).
 *
 * Conventions, shared by every kernel here:
 *  - The pool comes first: it is the context the kernel runs in (NULL = run on
 *    the caller alone). Then outputs, then inputs, then sizes.
 *  - Every output is overwritten (never accumulated into) unless the name says
 *    `_acc`. Outputs never alias inputs unless a comment says so.
 *  - Linear weights are stored (out, in), row-major, as llm.c and PyTorch do.
 *  - Results are bit-identical from run to run for a given pool size and do not
 *    depend on thread scheduling (reductions use a fixed order).
 *  - Kernels never allocate: where one needs scratch memory, a *_scratch()
 *    function says how many floats, and the caller passes that buffer.
 *  - BLAS runs single-threaded inside each pool thread (hp_kernels_init), so the
 *    pool alone decides how many cores a rank uses.
 * Beside these: bf16 variants (kernels/bf16.h), GEMMs through oneDNN in fp32
 * and bf16 (kernels/gemm.h), and the CPU's ISA and the report of what each
 * family runs on (kernels/isa.h).
 */
#ifndef HP_KERNELS_H
#define HP_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "core/pool.h"

/* Once per process, before any kernel: pins BLAS to one thread per caller,
 * and where OPENBLAS_CORETYPE is unset and OpenBLAS took kernels below this
 * CPU's ISA (a CPU model newer than the library), gives it the kernels of
 * that ISA (kernels/blas_init.c). */
void hp_kernels_init(void);
/* What hp_kernels_init changed in OpenBLAS, for the start-up report ("" when nothing). */
const char *hp_kernels_openblas_note(void);

/* ---- embeddings ---- */
/* out[N,C] = table[ids[n], :]; ids[N] in [0, rows). */
void hp_k_embedding_fwd(hp_pool *pool, float *out, const int32_t *ids, const float *table,
                        long N, long C);
/* dtable[rows,C] = sum over n with ids[n] == r of dout[n,:] (rows never hit are 0). */
void hp_k_embedding_bwd(hp_pool *pool, float *dtable, const float *dout, const int32_t *ids,
                        long N, long C, long rows);
/* dtable[rows,C] += the same sums (only the rows hit are touched): for a table
 * whose gradient another kernel has already written, e.g. a tied LM head. */
void hp_k_embedding_bwd_acc(hp_pool *pool, float *dtable, const float *dout, const int32_t *ids,
                            long N, long C);
/* out[B,T,C] = inp[B,T,C] + pos[t,:] (pos has >= T rows). */
void hp_k_add_pos_fwd(hp_pool *pool, float *out, const float *inp, const float *pos, long B,
                      long T, long C);
/* dpos[rows,C]: rows t < T get sum_b dout[b,t,:]; rows t >= T get 0. */
void hp_k_add_pos_bwd(hp_pool *pool, float *dpos, const float *dout, long B, long T, long C,
                      long rows);

/* ---- linear layers (GEMM through OpenBLAS) ---- */
/* out[N,OC] = inp[N,IC] . weight[OC,IC]^T + bias[OC] (bias may be NULL). */
void hp_k_matmul_fwd(hp_pool *pool, float *out, const float *inp, const float *weight,
                     const float *bias, long N, long IC, long OC);
/* dinp[N,IC] = dout[N,OC] . weight[OC,IC];  dweight[OC,IC] = dout^T . inp[N,IC];
 * dbias[OC] = sum_n dout[n,:]. Any of dinp, dweight, dbias may be NULL. */
void hp_k_matmul_bwd(hp_pool *pool, float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, long N, long IC, long OC);

/* ---- normalisation ---- */
/* out[N,C] = (inp - mean) * rstd * w[C] + b[C]; mean[N], rstd[N] saved for backward. */
void hp_k_layernorm_fwd(hp_pool *pool, float *out, float *mean, float *rstd, const float *inp,
                        const float *w, const float *b, long N, long C, float eps);
/* dinp[N,C], dw[C], db[C] from dout[N,C], inp[N,C], w[C], mean[N], rstd[N];
 * scratch: hp_k_layernorm_bwd_scratch floats (0 today: each thread owns a block of
 * columns of dw/db and sums it in row order, in double; any pointer, NULL too). */
void hp_k_layernorm_bwd(hp_pool *pool, float *dinp, float *dw, float *db, const float *dout,
                        const float *inp, const float *w, const float *mean, const float *rstd,
                        float *scratch, long N, long C);
size_t hp_k_layernorm_bwd_scratch(long N, long C, int nthreads); /* floats */
/* RMSNorm: out[N,C] = inp * rstd * w[C]; rstd[N] = 1/sqrt(mean(inp^2) + eps). */
void hp_k_rmsnorm_fwd(hp_pool *pool, float *out, float *rstd, const float *inp, const float *w,
                      long N, long C, float eps);
/* dinp[N,C], dw[C] from dout[N,C], inp[N,C], w[C], rstd[N]; scratch as layernorm's. */
void hp_k_rmsnorm_bwd(hp_pool *pool, float *dinp, float *dw, const float *dout, const float *inp,
                      const float *w, const float *rstd, float *scratch, long N, long C);
size_t hp_k_rmsnorm_bwd_scratch(long N, long C, int nthreads); /* floats */

/* ---- elementwise ---- */
/* GELU, tanh approximation: out[n] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
void hp_k_gelu_fwd(hp_pool *pool, float *out, const float *inp, long n);
void hp_k_gelu_bwd(hp_pool *pool, float *dinp, const float *dout, const float *inp, long n);
/* out[n] = a[n] + b[n] (out may alias a or b). */
void hp_k_add(hp_pool *pool, float *out, const float *a, const float *b, long n);
/* out[n] = inp[n] (no overlap). */
void hp_k_copy(hp_pool *pool, float *out, const float *inp, long n);
/* rows of row_bytes bytes: out + r out_stride <- inp + r in_stride (strides in bytes; any dtype) */
void hp_k_copy_rows(hp_pool *pool, void *out, long out_stride, const void *inp, long in_stride, long rows,
                    long row_bytes);
/* SwiGLU: inp[N,2H] holds gate (first H columns) and up (last H); out[N,H] = silu(gate) * up. */
void hp_k_swiglu_fwd(hp_pool *pool, float *out, const float *inp, long N, long H);
void hp_k_swiglu_bwd(hp_pool *pool, float *dinp, const float *dout, const float *inp, long N,
                     long H);

/* ---- attention ---- */
/* Causal multi-head self-attention on a fused qkv[B,T,3C] (q | k | v, heads of hs = C/NH
 * contiguous inside each). out[B,T,C] = softmax(q k^T / sqrt(hs), causal) v, heads
 * concatenated. att[B,NH,T,T] keeps the probabilities for backward (entries above the
 * diagonal are 0). scratch: hp_k_attention_scratch floats (only the backward uses
 * it today: one [T,T] block per pool thread). */
void hp_k_attention_fwd(hp_pool *pool, float *out, float *att, const float *qkv, float *scratch,
                        long B, long T, long C, long NH);
/* dqkv[B,T,3C] from dout[B,T,C], qkv[B,T,3C] and att[B,NH,T,T]. */
void hp_k_attention_bwd(hp_pool *pool, float *dqkv, const float *dout, const float *qkv,
                        const float *att, float *scratch, long B, long T, long C, long NH);
size_t hp_k_attention_scratch(long B, long T, long C, long NH, int nthreads); /* floats */
/* Rotary position embedding on the q and k parts of qkv[B,T,3C] (v copied as is);
 * pairs (2i, 2i+1) inside each head rotate by t * theta^(-2i/hs). out may alias inp. */
void hp_k_rope_fwd(hp_pool *pool, float *out, const float *inp, long B, long T, long C, long NH,
                   float theta);
/* The inverse rotation applied to dout (dinp may alias dout). */
void hp_k_rope_bwd(hp_pool *pool, float *dinp, const float *dout, long B, long T, long C, long NH,
                   float theta);

/* ---- loss ---- */
/* Softmax cross-entropy over a padded vocabulary: logits[N,Vp], only the first V
 * columns take part (padded columns get probability 0 and are never predicted).
 * probs[N,Vp] saved for backward; losses[N] per position; *mean_loss = mean(losses),
 * summed in double in a fixed order. targets[N] in [0, V). */
void hp_k_xent_fwd(hp_pool *pool, float *probs, float *losses, float *mean_loss,
                   const float *logits, const int32_t *targets, long N, long V, long Vp);
/* dlogits[N,Vp] = dloss * (probs - onehot(target)) / N for columns < V, 0 for padded
 * columns. dlogits may alias probs. */
void hp_k_xent_bwd(hp_pool *pool, float *dlogits, const float *probs, const int32_t *targets,
                   float dloss, long N, long V, long Vp);
/* Repeated heads' gradient (kernels/heads; grouped-query attention): dy[rows, hkv * rep * hs], head j * rep + k
 * a copy of kv head j; dx[rows, hkv * hs] = the sum over k of the copies' gradients, in k order. */
void hp_k_sum_heads(hp_pool *pool, float *dx, const float *dy, long rows, long hkv, long hs, long rep);
/* Mixture-of-Experts (kernels/moe, ops/moe), fp32. Routing logits[N, E] -> probs[N, E] (softmax, or sigmoid),
 * each token's top k experts index[N, k] (the higher score first, ties to the lower id) and weights[N, k] (their
 * scores, renormalised over the k when renorm), psum[E] (the scores summed over tokens), count[E] (routed slots
 * per expert, before drops), zsum[1] = zscale * sum of logsumexp(logits)^2; capacity > 0: each expert keeps at
 * most that many slots, the highest scores (ties: the earlier token), the rest index -1 and weight 0. The
 * backward: dlogits from the weights' and psum's gradients through the scores, plus dz * d(lse^2). */
#define HP_MOE_MAX_EXPERTS 1024
#define HP_MOE_MAX_TOPK 64
/* scratch: hp_k_moe_route_scratch floats (the scores, the rows' logsumexp, the capacity's sort). */
size_t hp_k_moe_route_scratch(long N, long E, long k);
/* scores[N, k] (may be NULL): each routed slot's score, the one a capacity ranks it by. */
void hp_k_moe_route(hp_pool *pool, float *weights, int32_t *index, float *scores, float *psum, float *count,
                    float *zsum, float *scratch, const float *logits, long N, long E, long k, int sigmoid, int renorm,
                    long capacity, float zscale);
void hp_k_moe_route_bwd(hp_pool *pool, float *dlogits, const float *dweights, const float *dpsum, float dz,
                        const float *logits, const int32_t *index, long N, long E, long k, int sigmoid, int renorm);
/* Dispatch: xp[N k, C] the routed slots' rows grouped by expert (ascending; within one, slot order), zero rows
 * after the kept ones; eid[N k] each row's expert (-1 past the kept); rowof[N k] each slot's row (-1: dropped).
 * Its backward sums each token's rows, in slot order. Combine: y[N, C] = sum over a token's kept slots of
 * weight * yp[row]; its backward: dyp[R, C] (rows no slot reads: 0) and dweights[N, k] (dropped: 0). */
void hp_k_moe_dispatch(float *xp, int32_t *eid, int32_t *rowof, const float *x, const int32_t *index, long N,
                       long C, long E, long k);
void hp_k_moe_dispatch_bwd(float *dx, const float *dxp, const int32_t *rowof, long N, long C, long k);
void hp_k_moe_combine(float *y, const float *yp, const float *weights, const int32_t *rowof, long N, long C, long k);
void hp_k_moe_combine_bwd(float *dyp, float *dweights, const float *dy, const float *yp, const float *weights,
                          const int32_t *rowof, long N, long C, long k, long R);
/* The same over vocabulary chunks (kernels/xent_chunk; the fused LM head and loss): chunk[N,w] holds the logits
 * of columns [v0, v0 + w), real columns only. stats[N,3] (running max, sum of exp(x - max), the target's
 * logit) start at the first chunk (first = 1) and are updated by each; finish turns them into lse[N] (the
 * rows' log-sum-exp), losses[N] and *mean_loss (summed in double in row order). grad: dchunk[N,w] =
 * scale * (exp(chunk - lse) - onehot(target)); dchunk may alias chunk. */
void hp_k_xent_chunk_stats(hp_pool *pool, float *stats, const float *chunk, const int32_t *targets, long N, long w,
                           long v0, int first);
void hp_k_xent_chunk_finish(float *lse, float *losses, float *mean_loss, const float *stats, long N);
void hp_k_xent_chunk_grad(hp_pool *pool, float *dchunk, const float *chunk, const float *lse, const int32_t *targets,
                          float scale, long N, long w, long v0);

/* ---- reductions and misc ---- */
/* sum of squares of x[n], in double, fixed order (for gradient clipping). */
double hp_k_sumsq(hp_pool *pool, const float *x, long n);
/* x[n] *= s */
void hp_k_scale(hp_pool *pool, float *x, float s, long n);
/* bf16 <-> fp32 conversion of n values. */
void hp_k_f32_to_bf16(hp_pool *pool, uint16_t *out, const float *inp, long n);
void hp_k_bf16_to_f32(hp_pool *pool, float *out, const uint16_t *inp, long n);

#endif
