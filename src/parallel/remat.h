/* parallel/remat: the rematerialisation pass of hp_compile (issue 26,
 * `--remat none|selective|full`). A block's forward values that its backward
 * reads (LayerNorm outputs, attention probabilities' statistics, GELU
 * inputs, ...) are normally kept from the forward to the backward: the
 * activation memory of every micro-batch in flight. This pass recomputes
 * some of them in the backward instead:
 *   full       every forward node of a block (the model's units named
 *              "<prefix>.<l>.", parallel/pp_stages) is recomputed from the
 *              block's input, which is kept (Megatron's full recompute);
 *   selective  the nodes whose operator is not on the save list are
 *              recomputed — by default the list is {linear}: GEMM outputs
 *              are kept, the attention core and the cheap pointwise and
 *              normalisation operators recomputed (Korthikanti et al.'s
 *              selective recompute, widened to the pointwise operators);
 *   save list  `--remat-save op,op` names the kept operators (selective's
 *              list replaced).
 * Never recomputed: communicating operators (their outputs are kept: a
 * collective is not run twice), a node whose output another unit reads (the
 * block's output: the next block's input), and the embeddings and the head.
 * Only what the backward needs is recomputed: the forward nodes whose
 * outputs a backward node of the block reads, and the recomputed nodes'
 * own inputs made in the block, transitively. The copies run the same
 * kernels on the same inputs, so their values are the forward's bits;
 * they are placed (backward phase) right before the block's first backward
 * node that reads one of them, and that block's backward nodes read the
 * copies; the forward values then die at their last forward reader, which
 * the memory plan sees.
 *
 * It runs on the rank's graph after lowering (and the pipeline's stage
 * pass): it copies local nodes, which exist only then. **Departure** from
 * the target picture, which puts remat before lowering. */
#ifndef HP_PARALLEL_REMAT_H
#define HP_PARALLEL_REMAT_H

#include "core/graph.h"
#include "parallel/lower.h"

typedef enum { HP_REMAT_NONE = 0, HP_REMAT_SELECTIVE = 1, HP_REMAT_FULL = 2 } hp_remat_policy;

#define HP_REMAT_MAX_SAVE 16

typedef struct {
    hp_remat_policy policy;
    int nsave;                          /* selective: the kept operators (0: {linear}) */
    char save[HP_REMAT_MAX_SAVE][24];   /* operator names (hp_opdef.name) */
} hp_remat_opts;

typedef struct {
    int nblocks;    /* blocks with recomputed nodes */
    int nnodes;     /* forward nodes copied into the backward */
    double bytes;   /* bytes of the recomputed values per micro-batch (no longer kept from the forward) */
    double flops;   /* forward FLOPs run again per micro-batch */
} hp_remat_result;

/* "none", "selective", "full" (an error naming --remat otherwise). */
hp_status hp_remat_parse(hp_remat_policy *out, const char *name);
const char *hp_remat_name(hp_remat_policy p);

hp_status hp_pass_remat(hp_remat_result *out, hp_rank_graph *rg, const hp_graph *global, const hp_remat_opts *o);

#endif
