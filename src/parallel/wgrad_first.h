/* parallel/wgrad_first: the "wgrad first" pass of hp_compile — a linear's
 * backward whose weight gradient completes a gradient that is reduced right
 * after it (an FSDP unit's reduce-scatter placed after this node, or a
 * data-parallel gradient all-reduce lowered right after it) is split in two:
 * the node keeps the weight (and bias) gradient, and a new node computes the
 * input gradient after the reduction has started, so the reduction overlaps
 * that GEMM too. On GPT-2 with a tied embedding this starts the table's
 * reduction (the LM head's dense part, parallel/grad_rows) one GEMM earlier:
 * the head's input gradient ([B T, V] x [V, C]) runs under it.
 *
 * Runs on the rank's graph after the passes that place reductions (fsdp
 * nodes, accumulate, rows), before the schedule. The two halves run the same
 * GEMMs as the whole node (bit-identical values); the new node stands for the
 * same global node (validation checks its output as the whole node's). The
 * split is only made where nothing placed between the node and the
 * reduction reads the input gradient. */
#ifndef HP_PARALLEL_WGRAD_FIRST_H
#define HP_PARALLEL_WGRAD_FIRST_H
#include "parallel/lower.h"

/* Splits every such linear backward in rg; *nsplit: how many. dp_async: the
 * schedule overlaps data-parallel gradient all-reduces (without it they
 * block, and the split would gain nothing: only FSDP's are considered). */
hp_status hp_pass_wgrad_first(int *nsplit, hp_rank_graph *rg, int dp_async);
#endif
