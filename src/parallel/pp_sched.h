/* parallel/pp_sched: pipeline schedules as data (issue 26) — for p stages
 * (ranks along the pp axis), v model chunks per stage and m micro-batches,
 * each stage's actions in run order (core/action's hp_action: the kind, the
 * micro-batch and the stage's local chunk). Virtual stage j = c * p + r is
 * chunk c of stage r (Megatron's interleaving: stage r holds chunks r, r + p,
 * ...); micro-batch b's forward runs virtual stages 0 .. v p - 1 in order and
 * its backward the other way.
 *
 *   GPIPE        every forward, then every backward (micro-batch order);
 *   1F1B         p - r - 1 warm-up forwards on stage r, then one forward and
 *                one backward in turn, then the remaining backwards;
 *   INTERLEAVED  1F1B over v chunks (Megatron): forwards in groups of p
 *                micro-batches chunk by chunk, backwards with the chunks in
 *                reverse; (p - r - 1) 2 + (v - 1) p warm-up forwards; m a
 *                multiple of p;
 *   ZBH1         zero bubble H1 (Qi et al. 2024): 1F1B's order with every
 *                backward split into its input-gradient part (B) and its
 *                weight-gradient part (W); the table comes from running
 *                those orders with unit costs, a W (owed in micro-batch
 *                order) put wherever the stage would wait and before a
 *                forward that would hold more micro-batches than 1F1B's
 *                p - r (activations are held to the W): 1F1B's memory, the
 *                Ws in the bubbles.
 *
 * A schedule is checked (hp_pp_sched_check) and simulated with given action
 * costs (hp_pp_sched_simulate): every action starts when its stage is free
 * and its inputs are there (the forward of the previous virtual stage, the
 * input gradient of the next one, its own B for a W); the result gives the
 * step's length, each stage's idle share (the bubble) and the micro-batches
 * whose activations a stage holds at once. The point-to-point transfers are
 * derived from the table (hp_pp_sched_p2p): each forward sends its output to
 * the next virtual stage's rank, each input gradient to the previous one's. */
#ifndef HP_PARALLEL_PP_SCHED_H
#define HP_PARALLEL_PP_SCHED_H

#include "core/action.h"
#include "core/status.h"

typedef enum { HP_PP_GPIPE = 0, HP_PP_1F1B, HP_PP_INTERLEAVED, HP_PP_ZBH1, HP_PP_NKINDS } hp_pp_kind;

/* "gpipe", "1f1b", "interleaved", "zb-h1" */
const char *hp_pp_kind_name(hp_pp_kind k);
/* The schedule of a name (an error naming the field `schedule` and the names). */
hp_status hp_pp_kind_parse(hp_pp_kind *out, const char *name);

typedef struct {
    hp_pp_kind kind;
    int stages, chunks, micro;
    hp_action *act; /* every stage's actions: stage r's at act[at[r] .. at[r + 1]) */
    int *at;        /* [stages + 1] */
    int *warmup;    /* [stages]: forwards before the first backward */
} hp_pp_sched;

/* The table of kind for p stages, v chunks per stage (1 but for
 * INTERLEAVED, which needs v >= 2 and m a multiple of p) and m micro-batches;
 * errors name the field. */
hp_status hp_pp_sched_build(hp_pp_sched *out, hp_pp_kind kind, int p, int v, int m);
void hp_pp_sched_free(hp_pp_sched *s);

/* The virtual stage of chunk c of stage r, and back. */
static inline int hp_pp_vstage(const hp_pp_sched *s, int r, int c) { return c * s->stages + r; }
static inline int hp_pp_stage_of(const hp_pp_sched *s, int j) { return j % s->stages; }

/* What the simulation gives (costs per action of one virtual stage). */
typedef struct {
    double length;      /* the step, first start to last end */
    double bubble;      /* idle time over stages x length (the schedule's bubble fraction) */
    double *idle;       /* [stages]: each stage's idle share of the step */
    double *start;      /* [total actions]: each action's start (the table's order) */
    int *peak;          /* [stages]: micro-batch chunks whose activations the stage holds at once (a forward
                         * to its backward's end; with a split backward, to its W) */
} hp_pp_sim;

/* Runs s with forward, backward (whole) and, for a split backward, input-
 * and weight-gradient costs tf, tb, tbi, tbw (> 0), no transfer time.
 * Errors: an action whose inputs never come (a deadlock), naming the stage
 * and action. */
hp_status hp_pp_sched_simulate(hp_pp_sim *out, const hp_pp_sched *s, double tf, double tb, double tbi, double tbw);
void hp_pp_sim_free(hp_pp_sim *sim);

/* The table's rules: on every stage each (chunk, micro-batch) has one
 * forward and one backward (or one B and one W, the W after the B), the
 * forward first; the warm-up counts are the kind's; the table runs without
 * deadlock. An error names the first rule broken. */
hp_status hp_pp_sched_check(const hp_pp_sched *s);

/* One transfer of a micro-batch between virtual stages j and j + 1 (grad 0:
 * the activation forward, from j to j + 1; 1: its gradient back). */
typedef struct {
    int micro, vstage, grad;
    int from, to; /* stages (ranks along pp) */
} hp_pp_p2p;

/* Every transfer the table implies, in the sender's order (*n of them;
 * *out malloc'd). A transfer between chunks of one stage (v > 1, p = 1)
 * is none. */
hp_status hp_pp_sched_p2p(hp_pp_p2p **out, int *n, const hp_pp_sched *s);

/* The table as a text timeline (simulated with costs 1, 2, 1, 1): one row
 * per stage, one 3-character cell per unit of time ("F3 ", "B3 ", "b3 " for
 * an input-gradient part, "W3 ", ".  " idle; chunks above 0 marked by a
 * letter after a one-digit micro-batch: "F3b"). *text malloc'd. */
hp_status hp_pp_sched_timeline(char **text, const hp_pp_sched *s);

#endif
