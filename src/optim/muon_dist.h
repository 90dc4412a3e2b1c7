/* optim/muon_dist: the three operators of distributed Muon (issue 25), the
 * local halves of an update whose Newton–Schulz runs on one owner per
 * matrix (parallel/muon_dist places them and the collectives between them):
 *
 *   muon_pack   every piece's momentum (clipping fused in, as muon_update),
 *               the momentum-updated gradient u of the first `nsend` pieces
 *               written one after another into the packed output (the pieces
 *               this rank sends to owners, in send order); the rest keep only
 *               their momentum (their owner is on another replica, which
 *               computes the same u);
 *   muon_orth   an owner's matrices from the pieces it received (member by
 *               member, each member's pieces of the owned items in item
 *               order), Newton–Schulz batched over runs of one shape (the
 *               same batched kernel as muon_update: bit for bit the
 *               single-device result), the result packed back in the layout
 *               it came in (so the return is the inverse exchange);
 *   muon_spread the packed u copied out per destination (a piece that goes to
 *               several members once for each: Moonlight's ZeRO-1 gather);
 *   muon_apply  every piece's update from the packed updates (in piece order):
 *               param <- param (1 - lr wd) - lr scale o, scale per the piece's
 *               matrix shape.
 *
 * All three do nothing when the global sum of squares is not finite (the
 * step is skipped, as muon_update). A piece is a flat element range of a
 * parameter; pieces of one matrix on the members of a group tile it in
 * member order. */
#ifndef HP_OPTIM_MUON_DIST_H
#define HP_OPTIM_MUON_DIST_H

#include <stdint.h>

#include "core/graph.h"
#include "core/opdef.h"
#include "optim/newton_schulz.h"

typedef struct {
    float max_norm, beta;
    int momentum, nesterov;
    int nsend; /* the first nsend (grad, m) pairs are packed */
} hp_muon_pack_cfg;

/* muon_pack's blob: this header, then int64 tr[nsend][3]: a sent piece with
 * tr[q][0] = count > 0 is count matrices of [tr[q][1], tr[q][2]] (a
 * tensor-parallel column cut), packed transposed ([tr[q][2], tr[q][1]]
 * each: its owner orthogonalises the transposed matrix, NS(G^T) = NS(G)^T
 * bit for bit); 0: packed as it lies. */

/* muon_orth's blob: this header, then int64 items[nitems][HP_MUON_ITEM] (rows,
 * cols, matrices, blocks, team), then int64 len[members][nitems] and
 * start[members][nitems] (member i's piece of item j: len elements in
 * `blocks` equal runs, run b at element start + b * rows * cols of the item:
 * 1 for FSDP's flat ranges, the stack's matrices for a tensor-parallel cut of
 * a stack). team >= 0: a team iterates the item (parallel/muon_plan.h's
 * Teams): its iterates [matrices, r, c] are at element `team` of the front's
 * output / of the last input, and the node does not iterate it.
 *
 * front = 1: in sumsq, the received pieces; out: the team items' first
 * iterates (hp_ns_prepare of each matrix), nothing else. front = 0: in
 * sumsq, the received pieces, and with team items their last iterates; out:
 * the packed updates (a team item's from its last iterate, hp_ns_store). */
#define HP_MUON_ITEM 5
typedef struct {
    int members, nitems;
    long chunk_floats; /* Newton–Schulz batch cap in floats (cfg.muon_batch_floats) */
    hp_ns_config ns;
    int front;
} hp_muon_orth_cfg;

/* muon_apply's blob: this header, then float scale[npieces], then (16-byte
 * aligned) int64 tr[npieces][3] as muon_pack's: a transposed piece's update
 * comes transposed and is turned back before it is applied */
typedef struct {
    float wd;
    int npieces;
} hp_muon_apply_cfg;

/* in: sumsq f64 [1], lr f32 [2], step i32 [1], then (grad, m) per piece;
 * out: the packed u, f32 [>= the sent pieces' elements]; i[0]: the cfg blob */
extern const hp_opdef hp_op_muon_pack;
/* in: sumsq, the received pieces f32 [>= sum len]; out: the packed updates
 * f32 [the same]; i[0]: the blob above */
extern const hp_opdef hp_op_muon_orth;
/* in: sumsq, lr, step, the packed updates f32 [>= the pieces' elements],
 * then each piece's parameter; i[0]: the blob above */
extern const hp_opdef hp_op_muon_apply;

/* in: the packed u f32; out: f32 [>= the copies' elements]; i[0]: a blob of
 * int64 [1 + 5 n]: n, then per copy (source offset, elements, count, r, c),
 * written one after another; count > 0: the source is count matrices
 * [r, c], written transposed ([c, r] each); count -1: a hole (`elements`
 * left as they are, nothing read) */
extern const hp_opdef hp_op_muon_spread;

/* muon_team (optim/muon_team.c): this rank's row blocks of one Newton–Schulz
 * step of the matrices its teams iterate (parallel/muon_plan.h's Teams),
 * each block by the very calls hp_newton_schulz_batched makes for it, so the
 * team's blocks put together are its bytes.
 *   GRAM: in sumsq, the iterates X; out: this rank's rows of X X^T;
 *   STEP: in sumsq, X, the whole X X^T (A); out: this rank's rows of the next
 *         iterate, a X + (b A + c A A) X with coef (a, b, c).
 * Blob: this header, then int64 tasks[ntask][HP_MUON_TASK]: (X's element,
 * A's element, r, c, first block, end block, output element, scratch
 * element) for one matrix's run of blocks: its iterate [r, c] at element X
 * of in[1], its [r, r] Gram matrix at element A of in[2], the run's rows
 * written from the output element on ([rows, r] for GRAM, [rows, c] for
 * STEP; the tasks' rows one after another), STEP's b A + c A A rows
 * ([rows, r]) in the scratch from its element on. */
enum { HP_MUON_TEAM_GRAM = 0, HP_MUON_TEAM_STEP = 1 };
#define HP_MUON_TASK 8
typedef struct {
    int mode, ntask;
    float coef[3];
} hp_muon_team_cfg;
extern const hp_opdef hp_op_muon_team;
long hp_muon_team_blob(hp_graph *g, const hp_muon_team_cfg *c, const int64_t *tasks);

/* Blobs of the orth operator: header + tables as above; returns the blob's offset (-1: the graph's error). */
long hp_muon_orth_blob(hp_graph *g, const hp_muon_orth_cfg *c, const int64_t *items, const int64_t *len,
                       const int64_t *start);
long hp_muon_apply_blob(hp_graph *g, float wd, const float *scale, const int64_t *tr, int npieces);
long hp_muon_pack_blob(hp_graph *g, const hp_muon_pack_cfg *c, const int64_t *tr);

#endif
