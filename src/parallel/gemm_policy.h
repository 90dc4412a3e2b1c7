/* parallel/gemm_policy: the pass of hp_compile that tells the rank's fp32
 * linear layers how to pick their GEMMs (train --fp32-gemm): OpenBLAS (the
 * default, nothing to do), oneDNN, or per product the faster of the two,
 * measured on the rank's threads when its program is created (ops/linear's
 * prepare, kernels/gemm hp_gemm_f32_pick). It writes the policy into the
 * node's attribute HP_LINEAR_GEMM; bf16 layers always run oneDNN. */
#ifndef HP_PARALLEL_GEMM_POLICY_H
#define HP_PARALLEL_GEMM_POLICY_H

#include "parallel/lower.h"

/* policy: kernels/gemm.h hp_gemm_fp32_policy; *nset: the nodes given it. */
hp_status hp_pass_gemm_policy(int *nset, hp_rank_graph *rg, int policy);

#endif
