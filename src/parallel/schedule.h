/* parallel/schedule: the schedule pass of hp_compile — the explicit step order
 * of a rank's program. Phases run in order (forward, backward, optimizer);
 * inside a phase nodes keep their dependency order (creation order). With
 * overlap on, every parameter gradient's reduction (a backward redistribution
 * lowering marked, HP_REDIST_GRAD, that is one all-reduce) is split into a
 * start, placed where the gradient is complete, and a wait, placed as late as
 * possible: before the first step that reads the reduced value (or an output
 * of a node placed after the wait), when a new start would exceed
 * max_inflight collectives in flight (the oldest is waited first), or at the
 * end of the backward phase. Waits come in start order. Nodes a pass placed
 * with a hint (hp_rank_graph.hint: before or after an anchor node, after the
 * wait of a split reduction, or at the end of the phase) go exactly there.
 * The memory plan (a later pass)
 * follows this order, so a buffer that an in-flight collective reads or
 * writes stays live until its wait.
 *
 * The pass also writes the rank's step as actions (core/action): for each of
 * the plan's `micro` micro-batches its forward then its backward (F0 B0 F1 B1
 * ...), then the optimizer; and the evaluation step: forwards only, of every
 * micro-batch in the deterministic mode (tree), else of one. */
#ifndef HP_PARALLEL_SCHEDULE_H
#define HP_PARALLEL_SCHEDULE_H

#include "core/action.h"
#include "parallel/lower.h"

/* Which expert-parallel exchanges the overlap pass splits: none, those whose group spans supernodes (the
 * supernode_ranks the program is compiled for), every one. */
enum { HP_EP_OVERLAP_OFF = 0, HP_EP_OVERLAP_AUTO = 1, HP_EP_OVERLAP_ALWAYS = 2 };

typedef struct {
    int overlap;      /* 1: gradient reductions start early, wait late */
    int ep_overlap;   /* expert-parallel exchanges split around independent compute (hp_compile runs
                       * parallel/ep's overlap pass before this one): HP_EP_OVERLAP_* */
    int max_inflight; /* collectives in flight at once per rank (>= 1; 0 = 4) */
    int micro;        /* micro-batches per step (<= 1: one); set by hp_compile from grad_accum */
    int tree;         /* the deterministic mode: losses summed as a tree over the micro-batches */
    const hp_action *stage_act; /* a pipeline stage's actions (parallel/pp_sched's table), then the
                                 * optimizer; NULL: F0 B0 F1 B1 ... */
    int nstage_act;
    int chunks;                 /* model chunks per stage (an interleaved table's; <= 1: one) */
} hp_schedule_opts;

typedef struct {
    int *order;                 /* node ids of rg->g in execution order */
    int n;
    int begin[HP_NPHASES + 1];  /* order[begin[ph] .. begin[ph + 1]) is phase ph */
    int nsplit;                 /* collectives split into start and wait */
    hp_action_list step;        /* the training step's actions */
    int *chunk_of;              /* [nodes] each node's model chunk (chunks > 1; the lists point here), else NULL */
    hp_action_list eval;        /* the evaluation step's: forwards only */
} hp_schedule;

hp_status hp_pass_schedule(hp_schedule *out, hp_rank_graph *rg, const hp_schedule_opts *o);
void hp_schedule_free(hp_schedule *s);

#endif
