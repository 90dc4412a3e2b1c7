/* parallel/accum: the gradient-accumulation pass of hp_compile (--grad-accum
 * K). The step's actions (parallel/schedule) run the forward and backward
 * phases once per micro-batch and the optimizer phase once per step; this pass gives every gradient the
 * optimizer reads an accumulator (a persistent value of its shape) and adds
 * one `grad_accumulate` node at the end of the backward phase, after every
 * reduction's wait: at micro-batch 0 it copies the gradient, later ones add
 * it, and the last divides by K (each micro-batch's loss is a mean over its
 * own samples, so the step's gradient is their mean). The optimizer phase
 * (parallel/optim_phase) then reads the accumulators: a parameter's `grad`
 * names its accumulator; under FSDP each unit's reduced shard has one
 * (hp_fsdp_unit.grad_acc), so the accumulators are sharded like the shards
 * and every micro-batch's gradients are reduced as they are complete. Per
 * micro-batch the caller's inputs hook (hp_step_io) sets the input `micro`
 * (i32 [2]: the index and K).
 * K = 1: the pass does nothing.
 *
 * FSDP's other choice (comm_last, levels 2 and 3): no communication before
 * the last micro-batch — each unit's whole gradient is accumulated on its
 * rank (a persistent accumulator of the unit's size: 4 bytes per managed
 * parameter more per rank), right after the unit's last backward node, and
 * the unit's reduction nodes, given the micro-batch input, reduce that
 * accumulator at the last micro-batch only. */
#ifndef HP_PARALLEL_ACCUM_H
#define HP_PARALLEL_ACCUM_H

#include "core/opdef.h"
#include "parallel/fsdp.h"
#include "parallel/lower.h"

/* *micro: the input's local value (-1 when K = 1). tree (the deterministic
 * mode; K a power of two, not with comm_last): the micro-batches' gradients
 * are added as a binary tree ((g0+g1)+(g2+g3))... instead of left to right,
 * through log2(K) - 1 more persistent buffers per accumulator. */
hp_status hp_pass_accumulate(int *micro, hp_rank_graph *rg, hp_fsdp_plan *fsdp, int K, int comm_last, int tree);

extern const hp_opdef hp_op_grad_accumulate;

#endif
