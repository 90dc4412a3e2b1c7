/* autopar/memory: the memory model — the bytes one rank's program holds,
 * read off the program hp_compile built (parallel/compile.h), part by part
 * as the runtime allocates them (runtime/dist, runtime/program,
 * runtime/params, parallel/fsdp_state, parallel/comm_ops):
 *
 *   params       the parameter store: fp32 (whole, or per FSDP level; at
 *                level 3 the shard group's ranks in one supernode share one
 *                store, this rank's share counted), its bf16 mirror
 *                (gather=bf16), the transient gathered-unit slots
 *   grads        the flat gradient buffer, FSDP's unit gradients and reduced
 *                shards, gradient accumulators
 *   optimizer    AdamW's m and v, Muon's momentum (the optimizer states)
 *   activations  the memory pass's arena: every activation of the step,
 *                remat's recomputed values counted where they live, and a
 *                pipeline stage's in-flight micro-batches one slot each
 *   scratch      the operators' scratch (the largest any node needs)
 *   comm         communication buffers: the redistributions' scratch, the
 *                fsdp2 style's staging buffers, the bf16 reductions'
 *                buffers, and the collectives' scratch across supernodes
 *                (per executor — the rank's thread, a lane per mesh axis —
 *                the capacity its largest call leaves: comm/coll_scratch;
 *                grown in the first step)
 *   inputs       every other persistent value (inputs, constants, the
 *                norm's partials); distributed Muon's owner buffers are
 *                values of the step, in the arena or here as they live
 *
 * No allocation, nothing run: `hyperpar plan`, the fit check and the
 * strategy search price a plan from its compile alone, for any world size
 * (the supernodes from hp_compiled.supernode_ranks). Not counted: EP's
 * all-to-alls' packing scratch (it depends on the routing at run time),
 * oneDNN's per-primitive scratchpads (bf16), and small set-up bookkeeping
 * (malloc'd tables, kilobytes). */
#ifndef HP_AUTOPAR_MEMORY_H
#define HP_AUTOPAR_MEMORY_H

#include "parallel/compile.h"

typedef struct { /* bytes of one rank's program */
    double params, grads, optimizer, activations, scratch, comm, inputs;
    double total; /* the sum of the above */
} hp_rank_memory;

/* The memory of cc's program, its operators' scratch sized for `threads`
 * threads (the rank's pool). */
void hp_rank_memory_of(hp_rank_memory *out, const hp_compiled *cc, int threads);

#endif
