/* parallel/muon_dist: distributed Muon's part of the optimizer pass (issue 25)
 * — the Muon matrices that layout-driven planning (parallel/muon_plan) gives
 * one owner each are updated by these nodes instead of muon_update:
 *
 *   muon_pack        every piece's momentum; the pieces whose owner is in the
 *                    rank's replica slice packed by owner (then matrix order);
 *   all_to_all_v     along the FSDP shard axis (when it cuts them): each owner
 *                    receives every member's piece of its matrices;
 *   muon_orth        the owner's matrices whole, Newton–Schulz batched by shape;
 *   all_to_all_v     the updates back to the members holding the pieces;
 *   all_gather_v     along the replicate axis (when there is one): the updates
 *                    of matrices owned in other replica slices;
 *   muon_apply       every piece's update.
 *
 * Matrix order: by decreasing rows x cols, then rows, then graph order (as
 * muon_update's shape runs). A group here is the plan key's cutting axis (F,
 * Sr or Sc; or none) and up to two replica axes (R; FSDP x TP: the TP cut,
 * the FSDP axis and HSDP's replica axis); B axes only separate the plan's
 * groups. Each present gets its own nodes and request slots. Keys this does
 * not handle (two cuts, three replica axes) are refused
 * (hp_muon_dist_handles). Momentum lives with the
 * pieces (states "muon.m.<param>" of the piece's shape, as AdamW's under
 * FSDP): checkpoints and resumes are those of the pieces. */
#ifndef HP_PARALLEL_MUON_DIST_H
#define HP_PARALLEL_MUON_DIST_H

#include "optim/phase.h"
#include "parallel/fsdp.h"
#include "parallel/lower.h"
#include "parallel/muon_plan.h"

/* Emits the nodes for the pieces pp[0..n) of rank graph rg whose parameter
 * the plan gives an owner (plan->mat[].owner >= 0), and sets taken[i] = 1 for
 * each piece it updates (the caller gives the rest to hp_optim_phase_updates). */
hp_status hp_pass_muon_dist(hp_optim_phase_io *io, hp_rank_graph *rg, const hp_mesh *m, const hp_optim_config *cfg,
                            float max_norm, const hp_fsdp_plan *fsdp, const hp_muon_plan *plan,
                            const hp_optim_phase_param *pp, int n, unsigned char *taken);

/* 1 if the pass handles matrix i of the plan (a local matrix, or a key of at
 * most one F and one R axis and nothing else). */
int hp_muon_dist_handles(const hp_muon_plan *plan, int i, const hp_mesh *m);

#endif
