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
} hp_action_list;

#endif
