/* core/action: a rank's step as a list of actions. An action is one piece of
 * work of one micro-batch on one model chunk: its forward, its backward
 * (whole, or split into the input-gradient and the weight-gradient parts),
 * or the optimizer (once per step, no micro-batch). The schedule pass
 * (parallel/schedule) writes the list from the plan's micro-batch count; the
 * program (runtime/program) runs it in one call. The collectives' starts and
 * waits are steps inside the actions, where the schedule placed them.
 * Gradient accumulation is F0 B0 F1 B1 ... Opt; evaluation is forwards only. */
#ifndef HP_CORE_ACTION_H
#define HP_CORE_ACTION_H

#include "core/graph.h"

typedef enum {
    HP_ACT_FWD,        /* the forward phase's steps */
    HP_ACT_BWD,        /* the backward phase's steps */
    HP_ACT_BWD_INPUT,  /* backward without the parameter gradients' own work */
    HP_ACT_BWD_WEIGHT, /* the parameter gradients' work (linear_bwd's weight GEMM, ...) */
    HP_ACT_OPT,        /* the optimizer phase's steps */
} hp_action_kind;

typedef struct {
    hp_action_kind kind;
    int micro; /* micro-batch (0-based); -1 for the optimizer */
    int chunk; /* model chunk (0: the whole model, the only chunk today) */
} hp_action;

typedef struct {
    hp_action *act; /* the actions in run order */
    int n;
    int nmicro; /* micro-batches in the list */
    int loss;   /* value read after every forward as its micro-batch's loss, -1: none */
    int tree;   /* 1: the losses summed as a binary tree over the micro-batch index ((l0+l1)+(l2+l3)),
                 * 0: in run order; either way divided by nmicro when it is > 1 */
    const int *chunk_of; /* model chunks (an interleaved pipeline stage's): [graph nodes] the chunk each
                          * forward and backward node belongs to; an action of chunk c runs only chunk c's.
                          * NULL: one chunk (0) */
    int nchunks;         /* >= 1 */
} hp_action_list;


/* Which action runs each node of order[0..n) (a step order, phases in order):
 * part[node] for every node of the order. Forward and optimizer nodes are
 * HP_ACT_FWD and HP_ACT_OPT; a backward node is HP_ACT_BWD_INPUT when it
 * writes a gradient that is no parameter's (hp_value.grad_of: a lowered
 * graph's activation gradients name none) or a value such a node reads (through any
 * chain of backward nodes), else HP_ACT_BWD_WEIGHT (a parameter gradient's
 * own work and what only it feeds: reductions, accumulation); a backward
 * node whose outputs nothing reads (a collective's wait, a send) goes with
 * the node that made its first input (the wait with its start, a send with
 * the value it sends). part has g->nnodes entries; nodes outside the order
 * are left alone. */
hp_status hp_action_parts(hp_action_kind *part, const hp_graph *g, const int *order, int n);
/* Whether an action of kind runs a node of part (a backward runs both parts). */
static inline int hp_action_runs(hp_action_kind kind, hp_action_kind part) {
    return kind == part || (kind == HP_ACT_BWD && (part == HP_ACT_BWD_INPUT || part == HP_ACT_BWD_WEIGHT));
}
/* Whether an action of list l runs node `node` of part `part` (its kind and its chunk). */
static inline int hp_action_list_runs(const hp_action_list *l, const hp_action *a, int node, hp_action_kind part) {
    return hp_action_runs(a->kind, part) && (!l->chunk_of || a->kind == HP_ACT_OPT || l->chunk_of[node] == a->chunk);
}
/* The activation slot of every action of l (slot[l->n]): a micro-batch holds
 * the lowest free slot from its first action to its last; the optimizer's is 0.
 * *nslots: the most micro-batches in flight at once (>= 1). Allocates a
 * scratch of l->nmicro ints. */
hp_status hp_action_slots(int *slot, int *nslots, const hp_action_list *l);

/* An action list's expansion over a step order: position i runs node
 * nodes[i] for tenure[i] (its action's micro-batch; the optimizer's:
 * nmicro), which holds activation slot slot_of[tenure]; part and act_slot as
 * hp_action_parts and hp_action_slots give them. What a program planned for
 * the list runs, and what its memory plan (core/memplan's slots) covers. */
typedef struct {
    const hp_action_list *l;
    hp_action_kind *part; /* [g->nnodes] */
    int *act_slot, nslots;
    int *nodes, *tenure, n;
    int *slot_of, ntenures;
} hp_action_expansion;

hp_status hp_action_expand(hp_action_expansion *ex, const hp_graph *g, const int *order, int norder,
                           const hp_action_list *l);
void hp_action_expansion_free(hp_action_expansion *ex);
/* Whether running l needs a program planned for it: micro-batches in flight at once, or backwards split
 * into their input- and weight-gradient parts. */
hp_status hp_action_list_needs_slots(int *needs, const hp_action_list *l);

#endif
