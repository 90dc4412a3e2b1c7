/* parallel/gemm_policy: see the header. */
#include "parallel/gemm_policy.h"

#include "kernels/gemm.h"
#include "ops/ops.h"

hp_status hp_pass_gemm_policy(int *nset, hp_rank_graph *rg, int policy) {
    *nset = 0;
    if (policy < HP_GEMM_FP32_OPENBLAS || policy > HP_GEMM_FP32_AUTO)
        return hp_errorf("compile: fp32 GEMM policy %d is not openblas (0), onednn (1) or auto (2)", policy);
    if (policy == HP_GEMM_FP32_OPENBLAS) return HP_OK;
    hp_graph *g = rg->g;
    for (int i = 0; i < g->nnodes; i++) {
        hp_node *n = &g->nodes[i];
        int x = hp_op_linear_gemm_input(n->op);
        if (x < 0 || g->vals[n->in[x]].dtype != HP_F32) continue;
        n->a.i[HP_LINEAR_GEMM] = policy;
        ++*nset;
    }
    return HP_OK;
}
