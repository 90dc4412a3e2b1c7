/* optim/phase: the optimizer phase of a compiled training step, as graph
 * nodes (phase HP_PHASE_OPT) over a rank's local graph:
 *
 *   grad_sumsq   this rank's sum of squares of every gradient, in double,
 *                over fixed blocks in tensor-then-block order (independent of
 *                the pool size), each tensor weighted by 1 / (ranks holding the
 *                same piece), so the global sum counts every element once;
 *   [combine]    the sum over ranks (a communicating node the caller adds:
 *                parallel/optim_phase); on one rank the local sum is global;
 *                the deterministic mode's grad_sumsq_exact (optim/phase_exact)
 *                sums exactly instead (optim/sumsq_exact), so the norm does
 *                not depend on where shards, blocks or threads cut;
 *   adamw_update every AdamW parameter in one node: clipping (max_norm over
 *                the global norm) fused into the update, moments m and v;
 *   muon_update  one node per matrix shape (rows, cols): momentum, batched
 *                Newton-Schulz in chunks, the scaled update (the one Muon
 *                implementation; optim/optimizer.h holds only the settings);
 *                a stack [d0, ..., rows, cols] is its d0 x ... matrices, each
 *                orthogonalised on its own (optim/route.h).
 *
 * The optimizer state tensors are values of the graph (kind HP_V_STATE,
 * persistent, state_of = their parameter, named "adamw.m.<param>",
 * "adamw.v.<param>", "muon.m.<param>": the checkpoint names), so they are
 * planned, laid out and checkpointed like parameters. Per step the caller sets
 * two inputs: `lr` (f32 [2]: AdamW's and Muon's learning rate, see
 * hp_optim_phase_lrs) and `step` (i32 [1]: the step number t >= 1 AdamW's bias
 * correction uses). Update nodes update their parameters and states in place
 * (they are listed as inputs; the nodes have no outputs). When the global sum
 * of squares is not finite (a NaN or Inf gradient) the update nodes leave
 * every parameter and state as it was: the step is skipped, never applied. */
#ifndef HP_OPTIM_PHASE_H
#define HP_OPTIM_PHASE_H

#include "core/graph.h"
#include "core/opdef.h"
#include "optim/optimizer.h"

typedef struct {
    int param, grad; /* value ids in the graph (views of a piece, under FSDP) */
    int replicas;    /* ranks holding the same piece (>= 1) */
    int sharded;     /* the piece is a shard of a larger tensor */
    int owner;       /* the parameter value the piece belongs to: its name and
                      * shape route it (AdamW or Muon) and decide its weight
                      * decay; its states are named after it (state_of = owner)
                      * with the piece's shape. -1: param itself. */
    int whole_mats;  /* sharded only along a stack's leading dimensions (not its last two): every local matrix
                      * is whole (Muon updates them where they live) */
} hp_optim_phase_param;

typedef struct {
    int lr, step;    /* per-step inputs (see above) */
    int sumsq_local; /* f64 [1]: this rank's weighted sum of squares */
    int sumsq;       /* f64 [1]: the global sum the updates read (the caller may
                      * replace it by a combined value before the updates) */
    int nadamw, nmuon_groups, nstates;
} hp_optim_phase_io;

/* Emits the per-step inputs and the grad_sumsq node over params[n]. exact
 * (the deterministic mode): grad_sumsq_exact instead, whose sumsq_local is
 * the exact accumulator's words (f64 [HP_SUMSQ_EXACT_WORDS], optim/
 * sumsq_exact.h) and must be combined into io->sumsq by the caller even on
 * one rank; every replica count must be a power of two. */
hp_status hp_optim_phase_norm(hp_optim_phase_io *io, hp_graph *g, const hp_optim_phase_param *params, int n,
                              int exact);
/* Muon on a matrix distributed Muon does not handle (cut along two mesh axes
 * without FSDP's: parallel/muon_dist): routes the whole parameters params[0..n) (value ids of
 * g; all of the model's, so the patterns are checked as well) and refuses, in
 * one error naming every one and an --adamw-params value that keeps them all
 * on AdamW, those routed to Muon whose sharded[k] is set. */
hp_status hp_optim_check_sharded_muon(const hp_graph *g, const hp_optim_config *cfg, const int *params,
                                      const int *sharded, int n);
/* Routes every parameter (optim/route.h, by name and shape), emits the state
 * values and the update nodes reading io->sumsq. Errors: the configuration's,
 * the routing's, and Muon on a piece marked sharded (the caller's distributed
 * Muon takes those it handles out of params first). */
hp_status hp_optim_phase_updates(hp_optim_phase_io *io, hp_graph *g, const hp_optim_config *cfg, float max_norm,
                                 const hp_optim_phase_param *params, int n);

/* The state value of piece p (its shape) named prefix + its owner's name
 * ("muon.m.", "adamw.m.", ...), belonging to the owner; -1: the graph's error. */
int hp_optim_state_value(hp_graph *g, const hp_optim_phase_param *p, const char *prefix);

/* This step's learning rates from AdamW's scheduled lr: out[0] = lr, out[1] =
 * lr * muon_lr / cfg.lr (Muon's schedule: AdamW's shape at Muon's peak). */
void hp_optim_phase_lrs(float *out, const hp_optim_config *cfg, float lr);

extern const hp_opdef hp_op_grad_sumsq, hp_op_grad_sumsq_exact, hp_op_adamw_update, hp_op_muon_update;

#endif
