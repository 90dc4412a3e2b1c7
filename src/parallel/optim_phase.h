/* parallel/optim_phase: the optimizer-phase pass of hp_compile. It appends to
 * a rank's lowered graph the optimizer's nodes (optim/phase.h): the local
 * sum of squares of the gradients — each piece weighted by 1 / (ranks holding
 * a replica of it, from its parameter's layout) — then, on more than one
 * rank, the sum over ranks (sumsq_combine), then the AdamW and Muon updates of
 * the rank's parameter pieces, whose state tensors become values of the graph
 * with their parameter's layout. Under FSDP (fsdp non-NULL) a managed
 * parameter's pieces are the parts of it in the rank's shards (hp_fsdp_optim_
 * pieces), weighted by the ranks holding them outside the shard axis. */
#ifndef HP_PARALLEL_OPTIM_PHASE_H
#define HP_PARALLEL_OPTIM_PHASE_H

#include "layout/propagate.h"
#include "optim/phase.h"
#include "parallel/fsdp.h"
#include "parallel/lower.h"
#include "parallel/pp_pass.h"

/* pipe (NULL: none): a pipeline's stages — a parameter's replicas along the pp axis are the stages that hold
 * it, not the axis's size. */
hp_status hp_pass_optimizer(hp_optim_phase_io *io, hp_rank_graph *rg, const hp_graph *global,
                            const hp_propagation *prop, const hp_mesh *m, const hp_optim_config *cfg,
                            float max_norm, const hp_fsdp_plan *fsdp, const hp_pp_plan *pipe);

#endif
