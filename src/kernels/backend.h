/* kernels/backend: the kernel backend table. Operators (src/ops) launch every
 * kernel through one of these tables, reached from their kernel context
 * (core/opdef.h hp_kctx.kern), never by calling the kernel functions by name:
 * a backend for another device is a table of its own, and the operators,
 * passes and runtime stay as they are.
 *
 * Each entry has the name of the function of kernels.h, vocab_parallel.h,
 * bf16.h or gemm.h it stands for, without the hp_ prefix, and that
 * function's arguments, shapes and meaning (see its comment there). A
 * prepared product (gemm_prepare, kb_att_mm_prepare) is freed through the
 * table that made it (gemm_linear_free, kb_att_mm_free). Scratch sizes
 * (*_scratch) stay plain functions: they launch nothing, are needed before
 * any program (and its table) exists (the memory plan, the plan report) and
 * are the same for both tables; a backend whose kernels need other scratch
 * would add a size entry of its own.
 *
 * Two tables today, both on this CPU and giving the same bits:
 *  - cpu: OpenBLAS, oneDNN and the hand-written kernels, each at the widest
 *    ISA this CPU has (the default);
 *  - portable: the same table except where a portable variant exists: the
 *    fp32 -> bf16 conversion narrows in plain C, bf16 products take the
 *    portable GEMM (widened fp32 + OpenBLAS) instead of oneDNN, and bf16
 *    attention runs the hand-written kernels instead of oneDNN's products.
 *    The other bf16 kernels narrow through hp_kb_narrow, which follows the
 *    process-wide switch of kernels/isa.h (same bits either way).
 * HP_KERNELS_PORTABLE=1 (kernels/isa.h) picks the portable table
 * (hp_kbackend_from_env). */
#ifndef HP_KERNELS_BACKEND_H
#define HP_KERNELS_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "core/pool.h"
#include "core/status.h"
#include "kernels/bf16.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "kernels/vocab_parallel.h"

typedef struct hp_kbackend {
    const char *name; /* "cpu", "portable" */
    /* ---- fp32 kernels (kernels.h, vocab_parallel.h) ---- */
    void (*k_add)(hp_pool *pool, float *out, const float *a, const float *b, long n);
    void (*k_add_pos_bwd)(hp_pool *pool, float *dpos, const float *dout, long B, long T, long C, long rows);
    void (*k_add_pos_fwd)(hp_pool *pool, float *out, const float *inp, const float *pos, long B, long T, long C);
    void (*k_attention_bwd)(hp_pool *pool, float *dqkv, const float *dout, const float *qkv, const float *att, float *scratch, long B, long T, long C, long NH);
    void (*k_attention_fwd)(hp_pool *pool, float *out, float *att, const float *qkv, float *scratch, long B, long T, long C, long NH);
    void (*k_copy)(hp_pool *pool, float *out, const float *inp, long n);
    void (*k_copy_rows)(hp_pool *pool, void *out, long out_stride, const void *inp, long in_stride, long rows, long row_bytes);
    void (*k_embedding_bwd)(hp_pool *pool, float *dtable, const float *dout, const int32_t *ids, long N, long C, long rows);
    void (*k_embedding_bwd_acc)(hp_pool *pool, float *dtable, const float *dout, const int32_t *ids, long N, long C);
    void (*k_embedding_fwd)(hp_pool *pool, float *out, const int32_t *ids, const float *table, long N, long C);
    void (*k_embedding_vp_bwd)(hp_pool *pool, float *dtable, const float *dout, const int32_t *ids, long N, long C, long begin, long rows);
    void (*k_embedding_vp_bwd_acc)(hp_pool *pool, float *dtable, const float *dsofar, const float *dout, const int32_t *ids, long N, long C, long begin, long rows);
    void (*k_embedding_vp_fwd)(hp_pool *pool, float *out, const int32_t *ids, const float *table, long N, long C, long begin, long rows);
    void (*k_gelu_bwd)(hp_pool *pool, float *dinp, const float *dout, const float *inp, long n);
    void (*k_gelu_fwd)(hp_pool *pool, float *out, const float *inp, long n);
    void (*k_layernorm_bwd)(hp_pool *pool, float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w, const float *mean, const float *rstd, float *scratch, long N, long C);
    void (*k_layernorm_fwd)(hp_pool *pool, float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b, long N, long C, float eps);
    void (*k_matmul_bwd)(hp_pool *pool, float *dinp, float *dweight, float *dbias, const float *dout, const float *inp, const float *weight, long N, long IC, long OC);
    void (*k_matmul_fwd)(hp_pool *pool, float *out, const float *inp, const float *weight, const float *bias, long N, long IC, long OC);
    void (*k_moe_combine)(float *y, const float *yp, const float *weights, const int32_t *rowof, long N, long C, long k);
    void (*k_moe_combine_bwd)(float *dyp, float *dweights, const float *dy, const float *yp, const float *weights, const int32_t *rowof, long N, long C, long k, long R);
    void (*k_moe_dispatch)(float *xp, int32_t *eid, int32_t *rowof, const float *x, const int32_t *index, long N, long C, long E, long k);
    void (*k_moe_dispatch_bwd)(float *dx, const float *dxp, const int32_t *rowof, long N, long C, long k);
    void (*k_moe_route)(hp_pool *pool, float *weights, int32_t *index, float *scores, float *psum, float *count, float *zsum, float *scratch, const float *logits, long N, long E, long k, int sigmoid, int renorm, long capacity, float zscale);
    void (*k_moe_route_bwd)(hp_pool *pool, float *dlogits, const float *dweights, const float *dpsum, float dz, const float *logits, const int32_t *index, long N, long E, long k, int sigmoid, int renorm);
    void (*k_rmsnorm_bwd)(hp_pool *pool, float *dinp, float *dw, const float *dout, const float *inp, const float *w, const float *rstd, float *scratch, long N, long C);
    void (*k_rmsnorm_fwd)(hp_pool *pool, float *out, float *rstd, const float *inp, const float *w, long N, long C, float eps);
    void (*k_rope_bwd)(hp_pool *pool, float *dinp, const float *dout, long B, long T, long C, long NH, float theta);
    void (*k_rope_fwd)(hp_pool *pool, float *out, const float *inp, long B, long T, long C, long NH, float theta);
    void (*k_sum_heads)(hp_pool *pool, float *dx, const float *dy, long rows, long hkv, long hs, long rep);
    void (*k_swiglu_bwd)(hp_pool *pool, float *dinp, const float *dout, const float *inp, long N, long H);
    void (*k_swiglu_fwd)(hp_pool *pool, float *out, const float *inp, long N, long H);
    void (*k_xent_bwd)(hp_pool *pool, float *dlogits, const float *probs, const int32_t *targets, float dloss, long N, long V, long Vp);
    void (*k_xent_chunk_finish)(float *lse, float *losses, float *mean_loss, const float *stats, long N);
    void (*k_xent_chunk_grad)(hp_pool *pool, float *dchunk, const float *chunk, const float *lse, const int32_t *targets, float scale, long N, long w, long v0);
    void (*k_xent_chunk_stats)(hp_pool *pool, float *stats, const float *chunk, const int32_t *targets, long N, long w, long v0, int first);
    void (*k_xent_fwd)(hp_pool *pool, float *probs, float *losses, float *mean_loss, const float *logits, const int32_t *targets, long N, long V, long Vp);
    void (*k_xent_vp_bwd)(hp_pool *pool, float *dlogits, const float *probs, const int32_t *targets, float dloss, long N, long cols, long begin, long V, long divisor);
    void (*k_xent_vp_finish)(hp_pool *pool, float *probs, float *losses, float *loss, const float *logits, const float *gathered, long k, long N, long cols, long begin, long V, long divisor);
    void (*k_xent_vp_stats)(hp_pool *pool, float *stats, const float *logits, const int32_t *targets, long N, long cols, long begin, long V);
    /* ---- bf16 kernels (bf16.h, vocab_parallel.h) ---- */
    void (*kb_add)(hp_pool *pool, uint16_t *out, const uint16_t *a, const uint16_t *b, long n);
    void (*kb_add_pos_bwd)(hp_pool *pool, float *dpos, const uint16_t *dout, long B, long T, long C, long rows);
    void (*kb_add_pos_fwd)(hp_pool *pool, uint16_t *out, const uint16_t *inp, const uint16_t *pos, long B, long T, long C);
    hp_status (*kb_att_mm_prepare)(hp_kb_att_mm **out, hp_gemm_ctx *ctx, long T, long hs);
    void (*kb_att_mm_free)(hp_kb_att_mm *mm);
    void (*kb_attention_bwd)(hp_pool *pool, uint16_t *dqkv, const uint16_t *dout, const uint16_t *qkv, const float *att, float *scratch, long B, long T, long C, long NH);
    void (*kb_attention_fwd)(hp_pool *pool, uint16_t *out, float *att, const uint16_t *qkv, float *scratch, long B, long T, long C, long NH);
    hp_status (*kb_attention_mm_bwd)(const hp_kb_att_mm *mm, hp_pool *pool, uint16_t *dqkv, const uint16_t *dout, const uint16_t *qkv, const float *att, float *scratch, long B, long T, long C, long NH);
    hp_status (*kb_attention_mm_fwd)(const hp_kb_att_mm *mm, hp_pool *pool, uint16_t *out, float *att, const uint16_t *qkv, float *scratch, long B, long T, long C, long NH);
    void (*kb_bf16_to_f32)(hp_pool *pool, float *out, const uint16_t *inp, long n);
    void (*kb_colsum)(hp_pool *pool, float *dbias, const uint16_t *dout, long N, long OC);
    void (*kb_embedding_bwd)(hp_pool *pool, float *dtable, const uint16_t *dout, const int32_t *ids, long N, long C, long rows);
    void (*kb_embedding_bwd_acc)(hp_pool *pool, float *dtable, const uint16_t *dout, const int32_t *ids, long N, long C);
    void (*kb_embedding_fwd)(hp_pool *pool, uint16_t *out, const int32_t *ids, const uint16_t *table, long N, long C);
    void (*kb_embedding_vp_bwd)(hp_pool *pool, float *dtable, const float *dsofar, const uint16_t *dout, const int32_t *ids, long N, long C, long begin, long rows);
    void (*kb_embedding_vp_fwd)(hp_pool *pool, uint16_t *out, const int32_t *ids, const uint16_t *table, long N, long C, long begin, long rows);
    void (*kb_f32_to_bf16)(hp_pool *pool, uint16_t *out, const float *inp, long n);
    void (*kb_gelu_bwd)(hp_pool *pool, uint16_t *dinp, const uint16_t *dout, const uint16_t *inp, long n);
    void (*kb_gelu_fwd)(hp_pool *pool, uint16_t *out, const uint16_t *inp, long n);
    void (*kb_layernorm_bwd)(hp_pool *pool, uint16_t *dinp, float *dw, float *db, const uint16_t *dout, const uint16_t *inp, const float *w, const float *mean, const float *rstd, float *scratch, long N, long C);
    void (*kb_layernorm_fwd)(hp_pool *pool, uint16_t *out, float *mean, float *rstd, const uint16_t *inp, const float *w, const float *b, float *scratch, long N, long C, float eps);
    void (*kb_rmsnorm_bwd)(hp_pool *pool, uint16_t *dinp, float *dw, const uint16_t *dout, const uint16_t *inp, const float *w, const float *rstd, float *scratch, long N, long C);
    void (*kb_rmsnorm_fwd)(hp_pool *pool, uint16_t *out, float *rstd, const uint16_t *inp, const float *w, float *scratch, long N, long C, float eps);
    void (*kb_sum_heads)(hp_pool *pool, uint16_t *dx, const uint16_t *dy, long rows, long hkv, long hs, long rep);
    void (*kb_swiglu_bwd)(hp_pool *pool, uint16_t *dinp, const uint16_t *dout, const uint16_t *inp, float *scratch, long N, long H);
    void (*kb_swiglu_fwd)(hp_pool *pool, uint16_t *out, const uint16_t *inp, float *scratch, long N, long H);
    void (*kb_xent_bwd)(hp_pool *pool, uint16_t *dlogits, const float *probs, const int32_t *targets, float dloss, float *scratch, long N, long V, long Vp);
    void (*kb_xent_fwd)(hp_pool *pool, float *probs, float *losses, float *mean_loss, const uint16_t *logits, const int32_t *targets, float *scratch, long N, long V, long Vp);
    void (*kb_xent_vp_bwd)(hp_pool *pool, uint16_t *dlogits, const float *probs, const int32_t *targets, float dloss, float *scratch, long N, long cols, long begin, long V, long divisor);
    void (*kb_xent_vp_finish)(hp_pool *pool, float *probs, float *losses, float *loss, const uint16_t *logits, const float *gathered, long k, long N, long cols, long begin, long V, long divisor);
    void (*kb_xent_vp_stats)(hp_pool *pool, float *stats, const uint16_t *logits, const int32_t *targets, long N, long cols, long begin, long V);
    /* ---- matrix products (gemm.h) ---- */
    hp_status (*gemm_f32_pick)(hp_gemm_backend *out, hp_gemm_ctx *ctx, hp_linear_product p, long N, long IC, long OC);
    hp_status (*gemm_linear_bwd)(const hp_gemm_linear *l, void *dinp, float *dweight, const void *dout, const void *inp, const void *weight);
    void (*gemm_linear_free)(hp_gemm_linear *l);
    hp_status (*gemm_linear_fwd)(const hp_gemm_linear *l, void *out, const void *inp, const void *weight, const float *bias);
    hp_status (*gemm_prepare)(hp_gemm **out, hp_gemm_ctx *ctx, const hp_gemm_desc *d);
} hp_kbackend;

/* The tables (static, read-only). */
const hp_kbackend *hp_kbackend_cpu(void);
const hp_kbackend *hp_kbackend_portable(void);
/* The portable table where the portable path is on (HP_KERNELS_PORTABLE=1 or
 * hp_kernels_set_portable), else the cpu table. */
const hp_kbackend *hp_kbackend_from_env(void);

#endif
