/* parallel/muon_plan: layout-driven distributed Muon's plan (issue 25) — for
 * every parameter the optimizer routes to Muon, the communication group its
 * layout (and FSDP's units) put it in, and the one rank that orthogonalises
 * it, chosen greedily by Newton–Schulz cost. Every rank computes the same
 * plan from the same compile inputs; nothing here runs.
 *
 * The key. Per mesh axis of size > 1, what the axis does to the matrices:
 *   R   the ranks along it hold the same piece (data parallel, HSDP's
 *       replicas, a tensor-parallel axis the parameter is not split on);
 *   F   FSDP's flat shards cut it (the unit's equal ranges, at any offset:
 *       uneven and empty pieces);
 *   Sr, Sc  a Shard of the matrices' rows / columns (tensor parallel);
 *   B   a Shard of a stack's leading dimension (any but the last two of
 *       [d0, ..., rows, cols]): each rank along it holds whole matrices of
 *       its own (experts), so the axis separates groups.
 * A group is a key and a coordinate on the B axes; its ranks are the ranks
 * with that coordinate. A matrix no R, F or S axis touches is orthogonalised
 * where it lives, by every rank holding it (no communication). Shape is not
 * in the key: one group holds every shape its layout gives.
 *
 * Owners: over every group's matrices together, by decreasing cost (ties by
 * name, then group), each to the least-loaded rank of its group (ties: the
 * rank holding most of the matrix, then the lowest rank), the load being the rank's Newton–Schulz FLOPs so far, local
 * matrices counted first — the longest-processing-time rule, deterministic.
 * A stack is its matrices of one shape (d0 x ... x d(N-3) of them,
 * optim/route.h), one owner (their Newton–Schulz runs batched). Cost of one matrix: steps x (4 m^2 n + 2 m^3) FLOPs, m the
 * smaller of its dims and n the larger (the iteration on the smaller Gram
 * matrix).
 *
 * Teams (the layout rule only). When those owners leave the busiest rank
 * above cfg->muon_balance x the mean (0: never), the matrices of a group cut
 * along one axis (F, Sr or Sc; no R or B axis) are dealt again in
 * Newton–Schulz row blocks (hp_ns_blocks: 128 rows of the iterate; a stack's
 * matrices one after another): items
 * start as whole matrices, go to owners by the same rule (ties: a rank
 * already holding a block of the matrix first), and while the bound is
 * missed the costliest item of more than one block is cut in two (at a
 * block boundary; a block costs its share of rows) and all are dealt again.
 * The group then runs every matrix it owns step by step: the ranks holding
 * blocks of one matrix (its team; the owner of block 0 leads: it receives
 * the pieces and returns the update) exchange their rows of X X^T and of
 * the next iterate each step, so each step's work per rank is its share of
 * the balanced load. Kept only when it lowers the busiest rank's load.
 *
 * Bytes per rank per step (fp32): a holder sends its piece of the momentum-
 * updated gradient to the owner — only the holders in the owner's replica
 * slice (the ranks sharing its coordinates on the R axes: the pieces are the
 * same on every replica) — and every holder but the owner receives its piece
 * of the update back. */
#ifndef HP_PARALLEL_MUON_PLAN_H
#define HP_PARALLEL_MUON_PLAN_H

#include "core/graph.h"
#include "layout/propagate.h"
#include "optim/optimizer.h"
#include "parallel/fsdp.h"

/* Who orthogonalises what (issue 25's competing strategies, as plans: the
 * Newton–Schulz work and bytes each would give on the same layouts):
 *   LAYOUT       one owner per matrix by the longest-processing-time rule (above);
 *   ROUND_ROBIN  Keller Jordan's: the Muon matrices in the model's order, matrix i
 *                to rank i mod (the group's ranks), then the updates returned;
 *   ZERO1_GATHER Moonlight's ZeRO-1 form: every rank whose piece touches a matrix
 *                gathers it whole and orthogonalises it itself (no return);
 *   ALL_TO_ALL   Dion-style: matrices grouped by shape, each shape's dealt round
 *                robin over the group's ranks, pieces in and updates out by two
 *                all-to-alls (the same bytes as an owner's);
 *   GATHER_ALL   every rank gathers every matrix and orthogonalises all of them.
 * Bytes for the owner strategies follow the rule in the header above; for
 * ZERO1_GATHER each toucher receives what it lacks of the matrix and sends its
 * piece to the other touchers; for GATHER_ALL every rank receives what it
 * lacks and sends its piece to every other rank of its replica slice's group. */
typedef enum {
    HP_MUON_DIST_LAYOUT = 0,
    HP_MUON_DIST_ROUND_ROBIN,
    HP_MUON_DIST_ZERO1_GATHER,
    HP_MUON_DIST_ALL_TO_ALL,
    HP_MUON_DIST_GATHER_ALL,
    HP_MUON_DIST_COUNT
} hp_muon_dist;
/* "layout", "round-robin", "zero1-gather", "all-to-all", "gather-all". */
const char *hp_muon_dist_name(hp_muon_dist d);
/* The strategy of a name (an error naming the field muon_dist and the names). */
hp_status hp_muon_dist_parse(hp_muon_dist *out, const char *name);

typedef enum { HP_MUON_AX_NONE = 0, HP_MUON_AX_R, HP_MUON_AX_F, HP_MUON_AX_SR, HP_MUON_AX_SC, HP_MUON_AX_B } hp_muon_axis;

typedef struct {
    int v;                   /* the global parameter value */
    int count;               /* matrices: the product of the rank's part of a stack's leading dims, else 1 */
    int64_t rows, cols;      /* each matrix */
    double flops;            /* Newton–Schulz FLOPs of the count matrices */
    int group;               /* groups[group] */
    int owner;               /* the global rank that orthogonalises it; -1: local (every holder); -2: several
                              * ranks (ZERO1_GATHER: every toucher; GATHER_ALL: every rank of the group) */
    int nblk;                /* a team's matrix: its Newton–Schulz row blocks (count x hp_ns_blocks: matrix
                              * after matrix of a stack), block b iterated by global rank
                              * blk[blk_at + b] of the plan (owner: the rank of block 0); 0: no team */
    int blk_at;
} hp_muon_matrix;

typedef struct {
    char key[96];            /* per mesh axis of size > 1, "axis=R|F|Sr|Sc|B": "dp=F tp=Sc"; "local" */
    hp_muon_axis ax[HP_MESH_MAX_DIMS];
    int bcoord[HP_MESH_MAX_DIMS]; /* the coordinate on each B axis (else -1) */
    int nmatrices;
    int nranks;              /* ranks of the group */
    double flops;            /* its matrices' */
    int teams;               /* 1: its matrices are iterated in teams (the header's Teams), 0: whole by owners */
} hp_muon_group;

typedef struct {
    hp_muon_matrix *mat;     /* [nmat]: in the model's parameter order */
    int nmat;
    hp_muon_group *grp;      /* [ngrp] */
    int ngrp;
    int nranks;              /* the mesh's */
    hp_muon_dist dist;       /* the strategy it was built for */
    double *load;            /* [nranks]: Newton–Schulz FLOPs per rank */
    double *sent, *recv;     /* [nranks]: bytes per step */
    int *blk;                /* the teams' block owners (hp_muon_matrix.blk_at) */
    int nblk;
} hp_muon_plan;

/* The plan for the Muon parameters of global graph g (routed by cfg over the
 * whole model: optim/route) laid out by prop on mesh m; fsdp: FSDP's plan
 * (any rank's: units and offsets are the same on every rank; NULL or level
 * 0: none). A non-Muon configuration gives an empty plan. */
hp_status hp_muon_plan_build(hp_muon_plan *out, const hp_graph *g, const hp_propagation *prop, const hp_mesh *m,
                             const hp_fsdp_plan *fsdp, const hp_optim_config *cfg);
/* The same under strategy d. */
hp_status hp_muon_plan_build_as(hp_muon_plan *out, const hp_graph *g, const hp_propagation *prop, const hp_mesh *m,
                                const hp_fsdp_plan *fsdp, const hp_optim_config *cfg, hp_muon_dist d);
void hp_muon_plan_free(hp_muon_plan *p);

/* The elements of global parameter v (its FSDP index k, -1 if FSDP does not
 * manage it) rank r holds: its layout box, or FSDP's part of it. */
int64_t hp_muon_held(const hp_graph *g, const hp_propagation *prop, const hp_mesh *m, const hp_fsdp_plan *fsdp,
                     int v, int k, int r);

/* max / mean of the ranks' loads (1 when there is no load). */
double hp_muon_plan_imbalance(const hp_muon_plan *p);

#endif
