/* layout/rules_family: the per-axis strategy lists behind the sharding rules
 * (used by rules.c; the lists live in rules_dense.c and rules_seq.c). For one
 * node and one mesh axis, an operator family lists every combination of
 * placements its plain kernel computes exactly on local pieces: the placement
 * each input must have on that axis and the placement each output then gets.
 * Not for other rooms. */
#ifndef HP_LAYOUT_RULES_FAMILY_H
#define HP_LAYOUT_RULES_FAMILY_H

#include "core/graph.h"
#include "core/opdef.h"
#include "layout/layout.h"

#define HP_RULE_MAX_OPTIONS 24

typedef struct {
    hp_placement in[HP_MAX_IN];
    hp_placement out[HP_MAX_OUT];
    int parallel_xent; /* the vocabulary-parallel cross-entropy (collectives inside) */
    unsigned own_order;    /* bit j: where this option splits output j's rows (axis of more than one member), each
                            * rank holds its rows in an order of its own (its tokens grouped by expert, or the
                            * rows an exchange brought it), not a piece of the global tensor */
    unsigned tensor_order; /* bit j: output j is in the tensor's own order even where inputs are in a rank's own
                            * order (the rows put back per token, a sum over rows); other outputs of a node that
                            * reads such an input are in the rank's order too */
    const char *per_piece; /* non-NULL: on an axis of more than one member this option's result depends on how the
                            * axis splits the rows (e.g. a capacity applied to each piece's tokens), so it is not
                            * one rank's computation; says why */
    int discrete;          /* its integer outputs are a choice (top-k) made from its float inputs: inputs that differ
                            * from one rank's in their rounding can turn it */
} hp_rule_option;

typedef struct {
    const hp_graph *g;
    int node;
    const hp_node *n;
    const hp_mesh *m;
    int axis;
    const hp_placement *arriving; /* [nin] on this axis; NULL when only probing */
    const hp_layout *val;         /* layouts decided so far, or NULL */
    hp_rule_option opt[HP_RULE_MAX_OPTIONS];
    int nopt;
} hp_rule_axis;

typedef struct {
    const hp_opdef *op;
    /* Appends the strategies of ra->n on ra->axis to ra->opt. An error is a
     * plan mistake the arriving placements reveal (misaligned heads). */
    hp_status (*options)(hp_rule_axis *ra);
    /* Checks the chosen input layouts across all axes (NULL: nothing to check). */
    hp_status (*check)(const hp_graph *g, int node, const hp_layout *need, const hp_mesh *m);
} hp_rule_family;

/* The family tables (count entries each). */
const hp_rule_family *hp_rules_dense(int *count); /* linear, norms, pointwise, add */
const hp_rule_family *hp_rules_seq(int *count);   /* attention, rope, embeddings, cross-entropy */
const hp_rule_family *hp_rules_moe(int *count);   /* Mixture-of-Experts: routing, dispatch, experts, combine */

/* A new option of ra, every placement Replicate. */
static inline hp_rule_option *hp_rule_opt(hp_rule_axis *ra) {
    HP_ASSERT(ra->nopt < HP_RULE_MAX_OPTIONS);
    hp_rule_option *o = &ra->opt[ra->nopt++];
    for (int k = 0; k < HP_MAX_IN; k++) o->in[k] = hp_replicate();
    for (int k = 0; k < HP_MAX_OUT; k++) o->out[k] = hp_replicate();
    o->parallel_xent = 0;
    o->own_order = o->tensor_order = 0;
    o->per_piece = NULL;
    o->discrete = 0;
    return o;
}

/* Rank of input k of the node. */
static inline int hp_rule_in_ndim(const hp_rule_axis *ra, int k) {
    return ra->g->vals[ra->n->in[k]].shape.ndim;
}

#endif
