/* layout/rules: the sharding rule of every operator. For one node of the
 * (already differentiated) graph and the layouts its inputs arrive in, the
 * rule decides the layouts the node consumes its inputs in and the layouts
 * its outputs get, one mesh axis at a time (axes are independent; only
 * divisibility checks look at all of them).
 *
 * A strategy is valid only if the operator's plain kernel, run on each rank's
 * local pieces, gives exactly the rank's piece (or Partial term) of the global
 * result. Per axis the rule lists those strategies and takes the cheapest,
 * where an input may only be changed by: gathering / reducing it to
 * Replicate (all-gather, all-reduce), or locally slicing / partializing a
 * Replicate input (free). The score of a strategy is
 *   the bytes of those redistributions (per rank, ring collectives: all-gather
 *   N(k-1)/k, all-reduce 2N(k-1)/k)
 * + for each Partial output, one all-reduce of it per consumer that cannot
 *   take a Partial value (so a Partial result is reduced once, where it is
 *   produced, instead of once per non-linear consumer);
 * ties go to the strategy that changes fewer inputs, then has fewer Partial
 * outputs.
 *
 * Parameters never move between ranks: a parameter input may only keep its
 * placement, or be sliced / made Partial locally from Replicate; a strategy
 * that would gather, reduce or re-split a parameter is not taken, and an
 * operator left without a strategy is an error naming the parameters and the
 * layouts it would need (moving parameters is FSDP's explicit job).
 *
 * Operators without a rule get every input Replicate and Replicate outputs
 * (correct but slow; hp_strategy.no_rule tells the caller to report it); one
 * that would receive a split parameter is an error. */
#ifndef HP_LAYOUT_RULES_H
#define HP_LAYOUT_RULES_H

#include "core/graph.h"
#include "core/opdef.h"
#include "layout/layout.h"

typedef struct {
    hp_layout in[HP_MAX_IN];   /* the layout each input is consumed in */
    hp_layout out[HP_MAX_OUT]; /* the layout of each output (outputs of id -1: Replicate) */
    double cost;               /* bytes per rank of the input redistributions */
    int parallel_xent_axis;    /* -1, or the mesh axis of a vocabulary-parallel
                                * cross-entropy (collectives inside the op) */
    int no_rule;               /* the operator has no rule: run replicated */
    unsigned own_order;        /* outputs whose rows each rank holds in an order of its own (hp_rule_option) */
    unsigned tensor_order;     /* outputs in the tensor's order whatever their inputs' (hp_rule_option) */
    const char *per_piece;     /* non-NULL: the result depends on how axis per_piece_axis splits it (why) */
    int per_piece_axis;
    int discrete;              /* integer outputs chosen from float inputs (hp_rule_option) */
} hp_strategy;

/* What a rule may know about the rest of the graph (either field may be NULL). */
typedef struct {
    const hp_layout *val;        /* [g->nvals] layouts decided so far (embedding_bwd
                                  * gives its table gradient the table's layout) */
    const int *partial_blockers; /* [g->nvals] from hp_rule_partial_blockers;
                                  * NULL: counted here by scanning the graph */
} hp_rule_ctx;

/* The strategy of node `node` for inputs arriving in arriving[0..nin).
 * ctx may be NULL. Errors name the node, the input, and the expected and
 * found layouts (e.g. "h.0.attn.attention: input 'h.0.attn.linear:0' is
 * S(3)@tp but 3 heads of size 16 cannot be split 2 ways"). */
hp_status hp_sharding_rule(hp_strategy *out, const hp_graph *g, int node, const hp_layout *arriving,
                           const hp_mesh *m, const hp_rule_ctx *ctx);

/* count[v] (v < g->nvals) = the input slots of nodes reading value v whose
 * operator never takes that input as Partial. */
void hp_rule_partial_blockers(int *count, const hp_graph *g, const hp_mesh *m);

/* 1 if the operator has a sharding rule. */
int hp_rule_known(const hp_opdef *op);

#endif
