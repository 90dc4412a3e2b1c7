/* parallel/reduce_dtype: the reduce-dtype pass of hp_compile (train
 * --dp-reduce bf16), after lowering, before accumulation and the schedule.
 * Every parameter gradient's reduction that is one all-reduce (the
 * redistributions lowering marks HP_REDIST_GRAD: the data-parallel gradient
 * all-reduce, also along the data axis of DP x TP) moves bf16:
 *
 *   g (fp32, Partial) --cast--> g.bf16 --all-reduce--> g.bf16.reduced --cast--> g (fp32, reduced)
 *
 * The narrowing cast is placed right before the reduction (its start, once
 * the schedule splits it), the widening one right after its wait
 * (HP_HINT_AFTER_WAIT), so the reduction still overlaps the backward; the
 * reduced fp32 gradient is the same value as before, so accumulation,
 * clipping, the optimizer and checkpoints are unchanged. The comm layer sums
 * the bf16 terms in fp32 and rounds the sum once. The two bf16 values are
 * ordinary program values (the memory plan places them). The reduction's
 * plan counts 2 bytes per element (the node's a.f[0], rg->bytes: `hyperpar
 * plan` shows half the bytes). Other redistributions (tensor-parallel
 * activations, the loss, plans of several steps) and FSDP's reductions (its
 * own reduce=bf16) are left as they are. HP_F32: nothing changes. */
#ifndef HP_PARALLEL_REDUCE_DTYPE_H
#define HP_PARALLEL_REDUCE_DTYPE_H

#include "parallel/lower.h"

typedef struct {
    int nreductions;     /* gradient all-reduces rewritten */
    double bytes_before; /* their bytes per step before (fp32) and after */
    double bytes_after;
} hp_reduce_dtype_result;

/* dt: HP_F32 (nothing) or HP_BF16. */
hp_status hp_pass_reduce_dtype(hp_reduce_dtype_result *out, hp_rank_graph *rg, hp_dtype dt);

#endif
