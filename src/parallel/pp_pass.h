/* parallel/pp_pass: pipeline parallelism's passes of hp_compile (issue 26).
 *
 * A plan pipelines the model when its mesh has an axis named "pp" of size
 * p > 1: rank r runs stage s = its pp coordinate. The model is cut into p
 * runs of consecutive units (parallel/pp_stages: the embeddings, the
 * blocks, the head; balanced by forward FLOPs, even, or the plan's blocks
 * per stage) and each global node gets the stages that run it:
 *   - a forward node its unit's stage; a backward node its forward node's;
 *   - the node that adds two parts of a parameter's gradient (autodiff's
 *     accumulation) every stage that reads the parameter (a tied embedding:
 *     the first and the last), and what it feeds likewise; a stage with
 *     one part takes that part as the gradient, a stage with both adds;
 *   - anything else the stages of what produces its inputs.
 *
 * stage (after lower): the rank's graph keeps its stage's nodes and the
 * values they touch — the other stages' parameters, gradients and
 * activations are gone (its store, optimizer state, checkpoint pieces and
 * memory are the stage's). An activation or activation gradient that a
 * kept node reads and another stage produces is received (recv start and
 * wait, right before its first reader, one request slot for all), and one
 * this stage produces for another is sent right after it is made
 * (send_staged: a persistent copy, the slot's previous send waited first,
 * so nothing waits on the receiver inside a micro-batch's own action).
 * Sends and receives between two stages come in the producers' order on
 * both sides, so the link's first-in-first-out matching pairs them.
 *
 * shared (after accumulate): a parameter read on several stages (GPT-2's
 * tied wte) has a part of its gradient on each. Once per step, at the start
 * of the optimizer phase, every holding stage sends its part (accumulated
 * over the micro-batches, reduced over the data-parallel ranks) to the
 * others and adds all parts in stage order into a new value, the
 * parameter's gradient: the same bits on every holder, so their copies
 * stay equal (Megatron's embedding all-reduce, as point-to-point pairs).
 *
 * split backward (ZB-H1, before the schedule): linear backwards split into their input- and weight-gradient
 * nodes, the weight GEMMs left to the W actions that fill the bubbles.
 *
 * The schedule pass takes the stage's actions from the table
 * (parallel/pp_sched: GPipe, 1F1B, ZB-H1); micro-batches are the run's
 * gradient-accumulation micro-batches. */
#ifndef HP_PARALLEL_PP_PASS_H
#define HP_PARALLEL_PP_PASS_H

#include <stdint.h>

#include "core/graph.h"
#include "layout/layout.h"
#include "parallel/lower.h"
#include "parallel/pp_sched.h"

#define HP_PP_MAX_STAGES 64

typedef enum { HP_PP_SPLIT_BALANCED = 0, HP_PP_SPLIT_EVEN = 1, HP_PP_SPLIT_EXPLICIT = 2 } hp_pp_split;

typedef struct {
    hp_pp_kind kind;   /* the schedule (0: GPipe) */
    int chunks;        /* model chunks per stage (interleaved: >= 2; else 1) */
    hp_pp_split split;
    int blocks[HP_PP_MAX_STAGES]; /* HP_PP_SPLIT_EXPLICIT: blocks per stage */
    int nblocks;                  /* entries in blocks */
} hp_pp_opts;

typedef struct {
    int axis;              /* the mesh axis "pp" (size > 1); -1: no pipeline (nothing else is set) */
    int stages, stage;     /* p, this rank's */
    int vstages;           /* virtual stages p x chunks: chunk c of stage r is virtual stage c p + r (the masks'
                            * bits, first[]'s entries) */
    uint64_t mine;         /* this rank's virtual stages */
    hp_pp_kind kind;
    int chunks, micro;
    int first[HP_PP_MAX_STAGES + 1]; /* the units of virtual stage j: first[j] .. first[j + 1] */
    int nunits;
    double imbalance;      /* the costliest stage's forward FLOPs over the mean */
    uint64_t *node_mask;   /* [global nnodes]: the virtual stages running each global node */
    uint64_t *val_mask;    /* [global nvals]: parameters and inputs: the virtual stages reading them */
    int nglobal_vals;
    int loss_rank;         /* the global rank whose loss is the step's (the last stage, other coordinates 0) */
    hp_pp_sched sched;
    /* what the passes emitted on this rank */
    int nsend, nrecv, nshared;
    double send_bytes, recv_bytes; /* per micro-batch */
} hp_pp_plan;

/* The plan of rank `rank` on mesh m for the differentiated global graph g
 * and `micro` micro-batches; no "pp" axis of size > 1: out->axis = -1. */
/* Small helpers the pipeline's files share: a stage's bit, the lowest set bit (-1: none), a view's base. */
static inline uint64_t hp_pp_bit(int s) { return (uint64_t)1 << s; }
static inline int hp_pp_lowest(uint64_t m) { return m ? __builtin_ctzll(m) : -1; }
static inline int hp_pp_base(const hp_graph *g, int v) { return g->vals[v].view_of >= 0 ? g->vals[v].view_of : v; }
/* The stages (ranks along pp) of a mask of virtual stages. */
uint64_t hp_pp_ranks_of(const hp_pp_plan *p, uint64_t vmask);
/* A backward node adding a part to a tied parameter's gradient (read by several virtual stages): the
 * parameter, else -1; *sofar: the input holding the sum so far (-1: an add of two parts). */
int hp_pp_tied_acc(const hp_graph *g, const hp_node *n, const uint64_t *val_mask, int *sofar);

hp_status hp_pp_plan_build(hp_pp_plan *out, const hp_graph *g, const hp_mesh *m, int rank, const hp_pp_opts *o,
                           int micro);
void hp_pp_plan_free(hp_pp_plan *p);

/* Whether `rank`'s stage holds global parameter or input v (1 without a pipeline). */
int hp_pp_holds(const hp_pp_plan *p, const hp_mesh *m, int v, int rank);
/* How many stages hold global parameter v (1 without a pipeline). */
int hp_pp_copies(const hp_pp_plan *p, int v);

hp_status hp_pass_pp_stage(hp_pp_plan *p, hp_rank_graph *rg, const hp_graph *global);
/* f: the rank's FSDP plan (level 0: none): a tied parameter FSDP manages is a unit of its own, whose reduced
 * shard is exchanged and summed (into hp_fsdp_unit.grad_sum) instead of the whole gradient. */
struct hp_fsdp_plan;
hp_status hp_pass_pp_shared(hp_pp_plan *p, hp_rank_graph *rg, const hp_graph *global, struct hp_fsdp_plan *f);
/* split backward (zero-bubble schedules, after wgrad first): every linear backward that computes both its
 * input's and its weight's gradient becomes two nodes, the weight part right after the input part, so that
 * a backward-input action (B) leaves the weight GEMMs to its W (core/action's parts). *nsplit: how many. */
hp_status hp_pass_pp_split_backward(int *nsplit, const hp_pp_plan *p, hp_rank_graph *rg);

#endif
