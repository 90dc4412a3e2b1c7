/* layout/propagate: the layout propagation pass. Given a graph that is
 * already differentiated (forward and backward nodes) and the fixed layouts
 * of its parameters and inputs (from the plan), it walks the nodes in graph
 * order and asks each node's sharding rule (layout/rules.h) for the layouts
 * it consumes its inputs in and the layouts of its outputs. The result says,
 * for every value, the layout it is produced in, and for every node input,
 * the layout it is consumed in; where the two differ the compile pass inserts
 * a redistribution. Constants not fixed by the caller (the loss seed) are
 * Replicate; the zero gradient of an unused parameter takes the parameter's
 * layout.
 *
 * Parameters never move between ranks (see layout/rules.h).
 *
 * A parameter's gradient comes out in whatever layout its producers give it
 * (Partial under data parallelism, sharded under tensor parallelism); its
 * target is the parameter's own layout (hp_param_grad_target), and the
 * compile pass redistributes it there.
 *
 * Row orders: a value whose rows each rank holds in an order of its own
 * (a MoE dispatch's rows grouped by the rank's tokens' experts, the rows an
 * expert-parallel exchange brought, and every value computed row by row from
 * them until an operator puts the rows back per token) is marked own_order:
 * its layout gives each rank's shape and the placement's meaning along the
 * other axes, but a rank's rows are not a piece of the global tensor. The
 * rules declare where such orders begin and end (hp_rule_option).
 *
 * Results one rank does not compute (differs_node): a rule's per_piece (a
 * capacity decided over each piece's tokens), or a discrete choice (top-k)
 * made from values whose Partial terms the ranks rounded to bf16 before
 * summing them (the choice may turn at a near tie). Production runs them as
 * planned; validation mode refuses such plans. */
#ifndef HP_LAYOUT_PROPAGATE_H
#define HP_LAYOUT_PROPAGATE_H

#include "core/graph.h"
#include "layout/layout.h"
#include "layout/rules.h"

#define HP_NOTE_LEN 224

typedef struct {
    hp_layout *val;                /* [g->nvals] layout each value is produced in */
    hp_layout (*need)[HP_MAX_IN];  /* [g->nnodes][HP_MAX_IN] layout each node consumes */
    double comm_bytes;             /* bytes per rank of all redistributions (estimate) */
    int nnotes;                    /* notes for `hyperpar plan` (operators without a rule) */
    char (*notes)[HP_NOTE_LEN];
    unsigned char *own_order;      /* [g->nvals] 1: the ranks hold its rows in orders of their own (above) */
    int differs_node;              /* the first node whose result is not one rank's computation (above), -1 */
    int differs_axis;              /* the mesh axis that makes it so */
    const char *differs_why;       /* why, one clause */
} hp_propagation;

/* Propagates layouts over g on mesh m. fixed[v] is used where is_fixed[v]
 * (parameters, inputs, and optionally constants); every parameter and input
 * must be fixed. Errors name the node or value, the layouts and the problem.
 * On error *out holds nothing to free. */
hp_status hp_propagate(hp_propagation *out, const hp_graph *g, const hp_mesh *m, const hp_layout *fixed,
                       const unsigned char *is_fixed);
void hp_propagation_free(hp_propagation *p);

/* The layout the gradient value `grad` of a parameter must end up in: the
 * parameter's own layout. Errors if `grad` is not a parameter's gradient. */
hp_status hp_param_grad_target(hp_layout *out, const hp_propagation *p, const hp_graph *g, int grad);

/* 1 if node `node` consumes input k in a layout other than the value's. */
static inline int hp_propagation_redistributes(const hp_propagation *p, const hp_graph *g, int node, int k) {
    return !hp_layout_eq(&p->need[node][k], &p->val[g->nodes[node].in[k]]);
}

#endif
