/* kernels/bf16: the hand-written kernels in bf16 (bf16 tensors are uint16_t
 * arrays holding the upper half of an fp32). The rule per kernel: bf16
 * activations in and out; every statistic, sum and probability in fp32
 * (norm mean/rstd, softmax, attention scores, the loss); norm weights and
 * every weight gradient fp32 (master weights and gradients stay fp32).
 *
 * How: each kernel widens its bf16 rows (exactly) into fp32 scratch, runs the
 * fp32 kernel of kernels.h on them, and rounds the result to nearest even.
 * So a bf16 output is the fp32 kernel's result on the same (bf16-valued)
 * inputs, rounded once: within half a bf16 ulp (2^-8 relative; bf16 keeps 8
 * significant bits) of it, and fp32 outputs match it to fp32 rounding. The
 * conversions use AVX512-BF16 where present (kernels/isa.h), with the same
 * bits either way.
 *
 * Scratch: where a kernel needs it, the *_scratch function gives the floats
 * for `nthreads` pool threads (the caller's pool size); kernels never allocate.
 * Conventions otherwise as kernels.h (pool first, outputs, inputs, sizes). */
#ifndef HP_KERNELS_BF16_H
#define HP_KERNELS_BF16_H

#include <stddef.h>
#include <stdint.h>

#include "core/pool.h"
#include "core/status.h"
#include "kernels/gemm.h"

/* ---- conversions ---- */
/* out[n] = bf16(inp[n]) on the calling thread (AVX512-BF16 or portable). */
void hp_kb_narrow(uint16_t *out, const float *inp, long n);
/* The portable narrowing whatever the switch says (tests compare the two). */
void hp_kb_narrow_portable(uint16_t *out, const float *inp, long n);
/* out[n] = fp32(inp[n]), exact, on the calling thread. */
void hp_kb_widen(float *out, const uint16_t *inp, long n);
/* The same over the pool. */
void hp_kb_f32_to_bf16(hp_pool *pool, uint16_t *out, const float *inp, long n);
void hp_kb_bf16_to_f32(hp_pool *pool, float *out, const uint16_t *inp, long n);
/* hp_kb_f32_to_bf16 with the portable narrowing whatever the switch says
 * (kernels/backend.h's portable table). out[n], inp[n]. */
void hp_kb_f32_to_bf16_portable(hp_pool *pool, uint16_t *out, const float *inp, long n);

/* ---- embeddings ---- */
/* out[N,C] (bf16) = table[ids[n], :] (bf16 [rows,C]). */
void hp_kb_embedding_fwd(hp_pool *pool, uint16_t *out, const int32_t *ids, const uint16_t *table,
                         long N, long C);
/* dtable[rows,C] (fp32) = sum over n with ids[n] == r of dout[n,:] (bf16 [N,C]). */
void hp_kb_embedding_bwd(hp_pool *pool, float *dtable, const uint16_t *dout, const int32_t *ids,
                         long N, long C, long rows);
/* dtable[rows,C] (fp32) += the same sums (rows hit only). */
void hp_kb_embedding_bwd_acc(hp_pool *pool, float *dtable, const uint16_t *dout,
                             const int32_t *ids, long N, long C);
/* out[B,T,C] (bf16) = inp[B,T,C] (bf16) + pos[t,:] (bf16, >= T rows), summed in fp32. */
void hp_kb_add_pos_fwd(hp_pool *pool, uint16_t *out, const uint16_t *inp, const uint16_t *pos,
                       long B, long T, long C);
/* dpos[rows,C] (fp32): rows t < T get sum_b dout[b,t,:] (bf16 [B,T,C]); others 0. */
void hp_kb_add_pos_bwd(hp_pool *pool, float *dpos, const uint16_t *dout, long B, long T, long C,
                       long rows);

/* ---- linear layers: the GEMMs are kernels/gemm.h; the bias gradient: ---- */
/* dbias[OC] (fp32) = sum_n dout[n,:] (bf16 [N,OC]), in double, row order. */
void hp_kb_colsum(hp_pool *pool, float *dbias, const uint16_t *dout, long N, long OC);
/* hp_k_sum_heads in bf16: the copies summed in fp32, rounded once (kernels/heads). */
void hp_kb_sum_heads(hp_pool *pool, uint16_t *dx, const uint16_t *dy, long rows, long hkv, long hs, long rep);

/* ---- normalisation (weights w[C], b[C] fp32; mean[N], rstd[N] fp32) ---- */
size_t hp_kb_norm_scratch(long C, int nthreads); /* floats, for all four below */
/* out[N,C] (bf16) = LayerNorm(inp[N,C] (bf16)). */
void hp_kb_layernorm_fwd(hp_pool *pool, uint16_t *out, float *mean, float *rstd,
                         const uint16_t *inp, const float *w, const float *b, float *scratch,
                         long N, long C, float eps);
/* dinp[N,C] (bf16), dw[C], db[C] (fp32) from dout[N,C], inp[N,C] (bf16), w, mean, rstd. */
void hp_kb_layernorm_bwd(hp_pool *pool, uint16_t *dinp, float *dw, float *db,
                         const uint16_t *dout, const uint16_t *inp, const float *w,
                         const float *mean, const float *rstd, float *scratch, long N, long C);
/* out[N,C] (bf16) = RMSNorm(inp[N,C] (bf16)); rstd[N] fp32. */
void hp_kb_rmsnorm_fwd(hp_pool *pool, uint16_t *out, float *rstd, const uint16_t *inp,
                       const float *w, float *scratch, long N, long C, float eps);
/* dinp[N,C] (bf16), dw[C] (fp32) from dout[N,C], inp[N,C] (bf16), w, rstd. */
void hp_kb_rmsnorm_bwd(hp_pool *pool, uint16_t *dinp, float *dw, const uint16_t *dout,
                       const uint16_t *inp, const float *w, const float *rstd, float *scratch,
                       long N, long C);

/* ---- elementwise (all bf16 [n]) ---- */
void hp_kb_gelu_fwd(hp_pool *pool, uint16_t *out, const uint16_t *inp, long n);
void hp_kb_gelu_bwd(hp_pool *pool, uint16_t *dinp, const uint16_t *dout, const uint16_t *inp,
                    long n);
/* out[n] = a[n] + b[n], summed in fp32 (out may alias a or b). */
void hp_kb_add(hp_pool *pool, uint16_t *out, const uint16_t *a, const uint16_t *b, long n);
/* SwiGLU: inp[N,2H] (bf16, gate | up) -> out[N,H] (bf16); backward dinp[N,2H]. */
size_t hp_kb_swiglu_scratch(long H, int nthreads); /* floats */
void hp_kb_swiglu_fwd(hp_pool *pool, uint16_t *out, const uint16_t *inp, float *scratch, long N,
                      long H);
void hp_kb_swiglu_bwd(hp_pool *pool, uint16_t *dinp, const uint16_t *dout, const uint16_t *inp,
                      float *scratch, long N, long H);

/* ---- attention (as hp_k_attention_*; scores, softmax and att in fp32) ---- */
size_t hp_kb_attention_scratch(long B, long T, long C, long NH, int nthreads); /* floats */
/* out[B,T,C] (bf16), att[B,NH,T,T] (fp32) from qkv[B,T,3C] (bf16). */
void hp_kb_attention_fwd(hp_pool *pool, uint16_t *out, float *att, const uint16_t *qkv,
                         float *scratch, long B, long T, long C, long NH);
/* dqkv[B,T,3C] (bf16) from dout[B,T,C] (bf16), qkv (bf16), att (fp32). */
void hp_kb_attention_bwd(hp_pool *pool, uint16_t *dqkv, const uint16_t *dout, const uint16_t *qkv,
                         const float *att, float *scratch, long B, long T, long C, long NH);

/* ---- attention with its products on oneDNN's bf16 matmul (AMX tiles where
 * present; kernels/bf16_attention_mm has the numerics: the probabilities and
 * dS are rounded to bf16 before the products that read them) ---- */
typedef struct hp_kb_att_mm hp_kb_att_mm;
/* The serial primitives for heads of T rows and size hs on ctx (created
 * here, once per pool thread). *out stays NULL where oneDNN has no bf16
 * matmul or the portable path is forced: then hp_kb_attention_* runs. */
hp_status hp_kb_att_mm_prepare(hp_kb_att_mm **out, hp_gemm_ctx *ctx, long T, long hs);
void hp_kb_att_mm_free(hp_kb_att_mm *mm);
const char *hp_kb_att_mm_impl(const hp_kb_att_mm *mm); /* oneDNN's implementation name */
size_t hp_kb_att_mm_scratch(long T, long hs, int nthreads); /* floats */
/* As hp_kb_attention_fwd/bwd; pool must be the one of mm's context. Errors
 * only from oneDNN's execute. */
hp_status hp_kb_attention_mm_fwd(const hp_kb_att_mm *mm, hp_pool *pool, uint16_t *out, float *att,
                                 const uint16_t *qkv, float *scratch, long B, long T, long C, long NH);
hp_status hp_kb_attention_mm_bwd(const hp_kb_att_mm *mm, hp_pool *pool, uint16_t *dqkv, const uint16_t *dout,
                                 const uint16_t *qkv, const float *att, float *scratch, long B, long T, long C,
                                 long NH);

/* ---- loss (fp32 throughout, as hp_k_xent_*) ---- */
size_t hp_kb_xent_scratch(long Vp, int nthreads); /* floats */
/* probs[N,Vp], losses[N], *mean_loss (fp32) from logits[N,Vp] (bf16). */
void hp_kb_xent_fwd(hp_pool *pool, float *probs, float *losses, float *mean_loss,
                    const uint16_t *logits, const int32_t *targets, float *scratch, long N, long V,
                    long Vp);
/* dlogits[N,Vp] (bf16) from probs[N,Vp] (fp32). */
void hp_kb_xent_bwd(hp_pool *pool, uint16_t *dlogits, const float *probs, const int32_t *targets,
                    float dloss, float *scratch, long N, long V, long Vp);

#endif
