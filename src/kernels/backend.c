/* kernels/backend: the two kernel backend tables (kernels/backend.h). */
#include "kernels/backend.h"

#include "kernels/isa.h"

/* bf16 products on the portable GEMM (fp32 ones are OpenBLAS or oneDNN as
 * on the cpu table: the portable path has no fp32 variant of its own). */
static hp_status gemm_prepare_portable(hp_gemm **out, hp_gemm_ctx *ctx, const hp_gemm_desc *d) {
    hp_gemm_desc p = *d;
    p.portable = 1;
    return hp_gemm_prepare(out, ctx, &p);
}

/* No oneDNN products for attention: the hand-written bf16 kernels run. */
static hp_status att_mm_prepare_portable(hp_kb_att_mm **out, hp_gemm_ctx *ctx, long T, long hs) {
    (void)ctx, (void)T, (void)hs;
    *out = NULL;
    return HP_OK;
}

/* The entries both tables share: every kernel without a portable variant of its own. */
#define SHARED_ENTRIES \
    .k_add = hp_k_add, \
    .k_add_pos_bwd = hp_k_add_pos_bwd, \
    .k_add_pos_fwd = hp_k_add_pos_fwd, \
    .k_attention_bwd = hp_k_attention_bwd, \
    .k_attention_fwd = hp_k_attention_fwd, \
    .k_copy = hp_k_copy, \
    .k_copy_rows = hp_k_copy_rows, \
    .k_embedding_bwd = hp_k_embedding_bwd, \
    .k_embedding_bwd_acc = hp_k_embedding_bwd_acc, \
    .k_embedding_fwd = hp_k_embedding_fwd, \
    .k_embedding_vp_bwd = hp_k_embedding_vp_bwd, \
    .k_embedding_vp_bwd_acc = hp_k_embedding_vp_bwd_acc, \
    .k_embedding_vp_fwd = hp_k_embedding_vp_fwd, \
    .k_gelu_bwd = hp_k_gelu_bwd, \
    .k_gelu_fwd = hp_k_gelu_fwd, \
    .k_layernorm_bwd = hp_k_layernorm_bwd, \
    .k_layernorm_fwd = hp_k_layernorm_fwd, \
    .k_matmul_bwd = hp_k_matmul_bwd, \
    .k_matmul_fwd = hp_k_matmul_fwd, \
    .k_moe_combine = hp_k_moe_combine, \
    .k_moe_combine_bwd = hp_k_moe_combine_bwd, \
    .k_moe_dispatch = hp_k_moe_dispatch, \
    .k_moe_dispatch_bwd = hp_k_moe_dispatch_bwd, \
    .k_moe_route = hp_k_moe_route, \
    .k_moe_route_bwd = hp_k_moe_route_bwd, \
    .k_rmsnorm_bwd = hp_k_rmsnorm_bwd, \
    .k_rmsnorm_fwd = hp_k_rmsnorm_fwd, \
    .k_rope_bwd = hp_k_rope_bwd, \
    .k_rope_fwd = hp_k_rope_fwd, \
    .k_sum_heads = hp_k_sum_heads, \
    .k_swiglu_bwd = hp_k_swiglu_bwd, \
    .k_swiglu_fwd = hp_k_swiglu_fwd, \
    .k_xent_bwd = hp_k_xent_bwd, \
    .k_xent_chunk_finish = hp_k_xent_chunk_finish, \
    .k_xent_chunk_grad = hp_k_xent_chunk_grad, \
    .k_xent_chunk_stats = hp_k_xent_chunk_stats, \
    .k_xent_fwd = hp_k_xent_fwd, \
    .k_xent_vp_bwd = hp_k_xent_vp_bwd, \
    .k_xent_vp_finish = hp_k_xent_vp_finish, \
    .k_xent_vp_stats = hp_k_xent_vp_stats, \
    .kb_add = hp_kb_add, \
    .kb_add_pos_bwd = hp_kb_add_pos_bwd, \
    .kb_add_pos_fwd = hp_kb_add_pos_fwd, \
    .kb_attention_bwd = hp_kb_attention_bwd, \
    .kb_attention_fwd = hp_kb_attention_fwd, \
    .kb_att_mm_free = hp_kb_att_mm_free, \
    .kb_attention_mm_bwd = hp_kb_attention_mm_bwd, \
    .kb_attention_mm_fwd = hp_kb_attention_mm_fwd, \
    .kb_bf16_to_f32 = hp_kb_bf16_to_f32, \
    .kb_colsum = hp_kb_colsum, \
    .kb_embedding_bwd = hp_kb_embedding_bwd, \
    .kb_embedding_bwd_acc = hp_kb_embedding_bwd_acc, \
    .kb_embedding_fwd = hp_kb_embedding_fwd, \
    .kb_embedding_vp_bwd = hp_kb_embedding_vp_bwd, \
    .kb_embedding_vp_fwd = hp_kb_embedding_vp_fwd, \
    .kb_gelu_bwd = hp_kb_gelu_bwd, \
    .kb_gelu_fwd = hp_kb_gelu_fwd, \
    .kb_layernorm_bwd = hp_kb_layernorm_bwd, \
    .kb_layernorm_fwd = hp_kb_layernorm_fwd, \
    .kb_rmsnorm_bwd = hp_kb_rmsnorm_bwd, \
    .kb_rmsnorm_fwd = hp_kb_rmsnorm_fwd, \
    .kb_sum_heads = hp_kb_sum_heads, \
    .kb_swiglu_bwd = hp_kb_swiglu_bwd, \
    .kb_swiglu_fwd = hp_kb_swiglu_fwd, \
    .kb_xent_bwd = hp_kb_xent_bwd, \
    .kb_xent_fwd = hp_kb_xent_fwd, \
    .kb_xent_vp_bwd = hp_kb_xent_vp_bwd, \
    .kb_xent_vp_finish = hp_kb_xent_vp_finish, \
    .kb_xent_vp_stats = hp_kb_xent_vp_stats, \
    .gemm_f32_pick = hp_gemm_f32_pick, \
    .gemm_linear_bwd = hp_gemm_linear_bwd, \
    .gemm_linear_free = hp_gemm_linear_free, \
    .gemm_linear_fwd = hp_gemm_linear_fwd,

static const hp_kbackend cpu = {
    .name = "cpu",
    SHARED_ENTRIES
    .kb_att_mm_prepare = hp_kb_att_mm_prepare,
    .kb_f32_to_bf16 = hp_kb_f32_to_bf16,
    .gemm_prepare = hp_gemm_prepare,
};

/* The portable table differs in these three entries alone. */
static const hp_kbackend portable = {
    .name = "portable",
    SHARED_ENTRIES
    .kb_att_mm_prepare = att_mm_prepare_portable,
    .kb_f32_to_bf16 = hp_kb_f32_to_bf16_portable,
    .gemm_prepare = gemm_prepare_portable,
};
#undef SHARED_ENTRIES

const hp_kbackend *hp_kbackend_cpu(void) { return &cpu; }
const hp_kbackend *hp_kbackend_portable(void) { return &portable; }
const hp_kbackend *hp_kbackend_from_env(void) { return hp_kernels_portable() ? &portable : &cpu; }
