/* parallel/precision: the mixed-precision pass of hp_compile (--dtype bf16),
 * run on the forward graph before autodiff. Every operator computes in the
 * dtypes its table entry names (hp_opdef.bf16; none: fp32 only): where an
 * input arrives in another dtype a cast node is put before the operator
 * (one per value and dtype, shared by all its readers), and the outputs get
 * the rule's dtypes. So the compute reads a bf16 copy of every parameter it
 * takes in bf16, made from the fp32 master at its first use in each step;
 * the copy's gradient is fp32 (hp_value.grad_fp32) and is the master's, so
 * gradients, the optimizer state and the checkpoints stay fp32. Activation
 * gradients follow their activations' dtypes (bf16), as autodiff gives them.
 * HP_F32: nothing changes.
 *
 * all_params (--bf16-params all; FSDP's gather=bf16 sets it): every
 * parameter reaches compute rounded to bf16, as under Megatron's --bf16 and
 * PyTorch FSDP2's param_dtype=bf16: an operator that reads a parameter in
 * fp32 (a norm's weight, a bias) reads the widened copy of its bf16 copy. So
 * the bf16 copy is all compute needs of a parameter, which is what lets FSDP
 * gather it in bf16. */
#ifndef HP_PARALLEL_PRECISION_H
#define HP_PARALLEL_PRECISION_H

#include "core/graph.h"

/* Rewrites the forward graph g (not yet differentiated) for `dtype`;
 * *ncasts (may be NULL) gets the number of cast nodes put in, *nparams
 * (may be NULL) how many of them copy a parameter. */
hp_status hp_pass_precision(hp_graph *g, hp_dtype dtype, int all_params, int *ncasts, int *nparams);

#endif
