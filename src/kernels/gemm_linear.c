/* kernels/gemm_linear: the forward and both backward products of a linear
 * layer (weights [OC,IC], row-major, as kernels.h) as prepared hp_gemms. */
#include "kernels/gemm.h"

hp_gemm_desc hp_gemm_linear_desc(hp_linear_product p, long N, long IC, long OC, hp_dtype in,
                                 hp_dtype out) {
    hp_gemm_desc d = {.a = in, .b = in, .c = out};
    switch (p) {
    case HP_LINEAR_FWD: /* [N,IC] . [OC,IC]^T */
        d.M = N, d.N = OC, d.K = IC, d.trans_b = 1;
        break;
    case HP_LINEAR_BWD_DATA: /* [N,OC] . [OC,IC] */
        d.M = N, d.N = IC, d.K = OC;
        break;
    case HP_LINEAR_BWD_WEIGHT: /* [N,OC]^T . [N,IC] */
        d.M = OC, d.N = IC, d.K = N, d.trans_a = 1, d.c = HP_F32;
        break;
    }
    return d;
}

hp_status hp_gemm_linear_prepare(hp_gemm_linear *l, hp_gemm_ctx *ctx, long N, long IC, long OC,
                                 hp_dtype in, hp_dtype out, int bias, int acc_dweight) {
    *l = (hp_gemm_linear){0};
    hp_gemm_desc f = hp_gemm_linear_desc(HP_LINEAR_FWD, N, IC, OC, in, out);
    hp_gemm_desc bd = hp_gemm_linear_desc(HP_LINEAR_BWD_DATA, N, IC, OC, in, out);
    hp_gemm_desc bw = hp_gemm_linear_desc(HP_LINEAR_BWD_WEIGHT, N, IC, OC, in, out);
    f.bias = bias;
    bw.accumulate = acc_dweight;
    hp_status st = hp_gemm_prepare(&l->fwd, ctx, &f);
    if (!st) st = hp_gemm_prepare(&l->bwd_data, ctx, &bd);
    if (!st) st = hp_gemm_prepare(&l->bwd_weight, ctx, &bw);
    if (st) {
        hp_gemm_linear_free(l);
        return hp_error_wrap(st, "linear layer N=%ld IC=%ld OC=%ld", N, IC, OC);
    }
    return HP_OK;
}

void hp_gemm_linear_free(hp_gemm_linear *l) {
    hp_gemm_free(l->fwd);
    hp_gemm_free(l->bwd_data);
    hp_gemm_free(l->bwd_weight);
    *l = (hp_gemm_linear){0};
}

hp_status hp_gemm_linear_fwd(const hp_gemm_linear *l, void *out, const void *inp,
                             const void *weight, const float *bias) {
    return hp_gemm_run(l->fwd, out, inp, weight, bias);
}

hp_status hp_gemm_linear_bwd(const hp_gemm_linear *l, void *dinp, float *dweight, const void *dout,
                             const void *inp, const void *weight) {
    if (dinp) HP_TRY(hp_gemm_run(l->bwd_data, dinp, dout, weight, NULL));
    if (dweight) HP_TRY(hp_gemm_run(l->bwd_weight, dweight, dout, inp, NULL));
    return HP_OK;
}
