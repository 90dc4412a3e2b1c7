/* parallel/muon_group: one group of distributed Muon's matrices on this rank
 * — the pass's working state (parallel/muon_dist builds it from the plan) —
 * and the node builders its parts share: the pieces' order, the pack, the
 * owners' Newton–Schulz (muon_orth), the update (muon_apply), the spreads
 * and the replicas' gather. parallel/muon_teams (teams of ranks iterating
 * row blocks) and parallel/muon_ft (FSDP x TP) build on them; nothing here
 * calls back into those. Internal to distributed Muon. */
#ifndef HP_PARALLEL_MUON_GROUP_H
#define HP_PARALLEL_MUON_GROUP_H

#include <stdint.h>

#include "optim/optimizer.h"
#include "parallel/lower.h"
#include "parallel/muon_plan.h"
#include "parallel/optim_phase.h"

/* One distributed matrix (a parameter: one matrix or a stack of matrices of one shape) on this rank. */
typedef struct {
    int p, k;              /* local parameter, its index in graph order */
    int64_t rows, cols, nmats, numel;
    int fa, ra;            /* its key's axes (fa: FSDP's, or a tensor-parallel cut's) */
    int cut;               /* HP_MUON_AX_F, _SR (rows cut) or _SC (columns cut: the owner's matrix is transposed) */
    int of, orr;           /* the owner's coordinates on fa and ra (0 when absent) */
    int piece;             /* pp index of this rank's piece, -1: none */
    int64_t *a;            /* [members]: each member's piece, elements [a[i], a[i] + len[i]) */
    int64_t *len;
    int ft;                /* 1: FSDP x TP: fa is the TP axis, ra the FSDP axis, and each rank holds the flat
                            * range [fa_a[i], fa_a[i] + fa_len[i]) of its TP block (i: its FSDP coordinate);
                            * rb: HSDP's replica axis (-1: none), orr then the owner's (rb, ra) coordinates as
                            * one slice index, rb's major */
    int rb;
    int64_t *fa_a, *fa_len;
    int wave;              /* its exchange wave (hp_muon_grp.W) */
    int nblk;              /* a team's matrix (parallel/muon_plan.h's Teams): its blocks, block j iterated by */
    int *bo;               /* the member bo[j] on fa; 0: no team */
} hp_muon_mat;

/* One group (the plan key's cutting axis and replica axes) on this rank, its matrices, and this rank's place. */
typedef struct {
    hp_optim_phase_io *io;
    hp_rank_graph *rg;
    const hp_optim_config *cfg;
    float max_norm;
    const hp_optim_phase_param *pp;
    hp_muon_mat *ms; /* this group's matrices in matrix order */
    int nm;
    int fa, ra, K, Rn, cf, cr;
    int ft; /* FSDP x TP (see hp_muon_mat) */
    int teams; /* the group iterates its matrices in teams */
    int rb, Rd, cd; /* FSDP x TP: HSDP's replica axis (-1: none); the FSDP axis's size and this rank's coordinate on
                     * it (ra's: Rn and cr are then the slices over both, as hp_muon_mat's orr) */
    int W;          /* exchange waves: wave w + 1's gather and wave w - 1's return overlap wave w's Newton–Schulz */
} hp_muon_grp;

/* this rank's piece of x: its elements */
static inline int64_t hp_mg_my_len(const hp_muon_grp *s, const hp_muon_mat *x) { return x->len[s->cf]; }

/* order of the pieces: by (owner's replica slice, owner's member, matrix order) */
static inline int64_t hp_mg_piece_key(const hp_muon_grp *s, const hp_muon_mat *x) {
    return (int64_t)x->orr * s->K + x->of;
}

/* a tensor-parallel block of x (FSDP x TP): its elements */
static inline int64_t hp_mg_blk_of(const hp_muon_grp *s, const hp_muon_mat *x) { return x->numel / s->K; }

/* The owner's item of x: (rows, cols, matrices, blocks) — transposed for a column cut, one block per
 * matrix of a tensor-parallel cut (a row block of each), one for FSDP's flat ranges. */
void hp_mg_item_of(int64_t *it, const hp_muon_mat *x);

/* A piece's transposition (muon_pack's and muon_apply's tr): a column cut's local matrices. */
void hp_mg_tr_of(int64_t *tr, const hp_muon_grp *s, const hp_muon_mat *x);

/* Lists the matrices with a piece here by piece_key (stable: matrix order inside), the slice filter
 * slice (-1: all) and the wave filter wave (-1: all); returns how many. */
int hp_mg_pieces_in_w(const hp_muon_grp *s, int *out, int slice, int wave);

/* A new fp32 value of n elements (at least one) of the optimizer phase. */
int hp_mg_act(hp_graph *g, int64_t n, const char *name);

/* A spread node: copies[1 + 5 n] (see optim/muon_dist.h) from x into a new value of `total` elements. */
int hp_mg_spread_node(hp_graph *g, int x, const int64_t *copies, int64_t total, const char *name);

/* muon_pack over the (grad, state) pairs xin[2 npieces], the first nsend of them packed (tr: their
 * transposition, NULL: none) into a new value of `size` elements, returned. */
int hp_mg_pack_node(hp_muon_grp *s, const int *xin, int npieces, int nsend, const int64_t *tr, int64_t size, const char *key);

/* muon_orth's tables for the matrices sel[0..ni): their items and each member's piece of them; rc[i] +=
 * member i's elements. Returns the elements of all members. */
int64_t hp_mg_orth_tables(const hp_muon_grp *s, const int *sel, int ni, int64_t *items, int64_t *len, int64_t *start,
                           int64_t *rc);

/* muon_orth of R (rsum elements, in the tables' layout) into a new value of `out` elements, returned; `what`
 * names the node ("owned", "matrices", "front", "teams"). With team items (items[.][4] >= 0): front 1: out is
 * their first iterates; else Z holds their last iterates. */
int hp_mg_orth_node_team(hp_muon_grp *s, int R, int Z, int front, int64_t out, int ni, const int64_t *items,
                          const int64_t *len, const int64_t *start, const char *key, const char *what);

int hp_mg_orth_node(hp_muon_grp *s, int R, int64_t rsum, int ni, const int64_t *items, const int64_t *len,
                     const int64_t *start, const char *key, const char *what);

/* muon_apply of the packed updates U to the pieces of the matrices sel[0..n), in U's order; tr 1: a column
 * cut's piece came transposed (muon_pack's tr), 0: every piece as it lies. */
void hp_mg_apply_node(hp_muon_grp *s, int U, const int *sel, int n, int tr);

/* The updates S2 (this slice's pieces of a wave's matrices, in send order) to every replica: U in slice order
 * (total elements; agc: per slice). */
int hp_mg_replicas_gather(hp_muon_grp *s, int S2, const int64_t *agc, int64_t total, int slot, const char *key);

/* FSDP x TP, before the exchange along the TP axis (fa): the momentum where the flat pieces live, the pieces
 * gathered along the FSDP axis (ra) into whole TP blocks (matrix order), and the blocks of this FSDP slice's
 * owners in send order, a column cut's transposed. Returns the send buffer (-1: the graph's error). */
int hp_mg_ft_front(hp_muon_grp *s, const int *send, int nsend, const char *key, int slot);

/* FSDP x TP, after the updates came back and were gathered along the FSDP axis (at[j]: where matrix j's block
 * is in U, -1: absent, and then not updated here): the blocks in matrix order (a column cut's turned back),
 * this rank's flat pieces of them, and the update. */
void hp_mg_ft_back(hp_muon_grp *s, int U, const int64_t *at, const char *key);

/* FSDP x TP under the strategies that orthogonalise on several ranks: the TP blocks rebuilt from the FSDP pieces
 * (ft_front) of every matrix (all) or of those this rank's piece touches (the same along the TP axis: FSDP cuts
 * every TP block alike), gathered whole along the TP axis, orthogonalised here, and this rank's block of each
 * cut back into its flat pieces (ft_back). */
hp_status hp_mg_emit_multi_ft(hp_muon_grp *s, int slot, int all);

/* The team regime's Newton–Schulz of this rank's owned matrices (owned[0..ni), the items and tables of
 * orth_tables, rsum elements received in R): their first iterates, the steps in teams, the updates packed as
 * muon_orth packs them. Returns that value. */
int hp_mg_team_orth(hp_muon_grp *s, int R, int64_t rsum, const int *owned, int ni, int64_t *items, const int64_t *len,
                     const int64_t *start, const char *key, int slot);

#endif
