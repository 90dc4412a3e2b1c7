/* runtime/program: a graph compiled for one rank. Every tensor pointer is
 * resolved, the arena planned by liveness and the scratch sized once at
 * creation; running a phase is a loop over prepared steps that allocates
 * nothing and asks nothing about layouts (production mode). Parameters live in
 * a shared hp_param_store; parameter gradients in one flat buffer with the
 * same layout. */
#ifndef HP_RUNTIME_PROGRAM_H
#define HP_RUNTIME_PROGRAM_H

#include <stddef.h>

#include "core/action.h"
#include "core/graph.h"
#include "core/memplan.h"
#include "core/opdef.h"
#include "core/pool.h"
#include "runtime/params.h"

typedef struct hp_program hp_program;

typedef struct {
    double flops[HP_NPHASES]; /* per phase (forward, backward, optimizer) */
    double bytes[HP_NPHASES];
    size_t arena_bytes;   /* planned activation/gradient arena */
    size_t naive_bytes;   /* one buffer per value, for comparison */
    size_t peak_bytes;    /* the most arena bytes live at once in the planned order (the least any arena could be) */
    size_t scratch_bytes;
    size_t grad_bytes;
    size_t input_bytes;
    int nsteps[HP_NPHASES];
} hp_program_info;

/* Compiles g for a rank that runs on `pool`, with parameters in ps; steps in
 * node order, the arena planned for that order. */
hp_status hp_program_create(hp_program **out, const hp_graph *g, hp_param_store *ps, hp_pool *pool);
/* The same for one rank of a distributed program: rank_ctx is handed to
 * communicating operators (hp_kctx.rank). */
hp_status hp_program_create_rank(hp_program **out, const hp_graph *g, hp_param_store *ps, hp_pool *pool,
                                 void *rank_ctx);
/* The general form (parallel/compile's output): steps in order[0..norder) (node
 * ids; NULL: node order), phases in order; the arena as mem lays it out (NULL:
 * planned here for that order). mem must have been planned for the same order. */
hp_status hp_program_create_ordered(hp_program **out, const hp_graph *g, const int *order, int norder,
                                    const hp_memplan *mem, hp_param_store *ps, hp_pool *pool, void *rank_ctx);
/* What a program runs on: the kernel backend table its operators launch
 * through (kernels/backend.h; NULL: hp_kbackend_from_env) and the allocator
 * of its memory: arena, gradients, inputs, scratch (core/alloc.h; NULL: the
 * host allocator). Every create above uses the defaults. */
typedef struct {
    const struct hp_kbackend *kern;
    const hp_allocator *mem;
} hp_program_backend;
/* hp_program_create_ordered on the backend be (NULL: the defaults). */
hp_status hp_program_create_on(hp_program **out, const hp_program_backend *be, const hp_graph *g, const int *order,
                               int norder, const hp_memplan *mem, hp_param_store *ps, hp_pool *pool, void *rank_ctx);
/* A program planned for the action list l (core/action): nodes run in
 * order[0..norder) (phases in order), each action runs the nodes of its kind
 * (hp_action_parts: backward input and weight parts apart when split), and
 * every micro-batch in flight has its own activation slot: the arena is
 * planned over the whole list (its info's peak_bytes, arena_bytes). It runs l
 * (hp_program_run_actions), and lists of forwards alone (an evaluation: each in
 * slot 0); hp_program_run and hp_program_data are slot 0's. Its actions may be in any order a micro-batch's own dependencies allow
 * (F0 F1 B0 B1, backward-input and -weight apart). */
hp_status hp_program_create_actions(hp_program **out, const hp_graph *g, const int *order, int norder,
                                    const hp_action_list *l, hp_param_store *ps, hp_pool *pool, void *rank_ctx);
void hp_program_destroy(hp_program *p);

/* What a step's actions need from the caller. inputs(ctx, m) writes
 * micro-batch m's inputs into the program (hp_program_data); it is called
 * before an action of micro-batch m whenever the micro-batch before was
 * another (NULL: the inputs are set already). opt_seconds, when set, gets the
 * optimizer actions' seconds added, and they are kept out of the profile
 * (hp_program_profile). */
typedef struct {
    hp_status (*inputs)(void *ctx, int micro);
    void *ctx;
    double *opt_seconds;
} hp_step_io;

/* Runs the step: the actions of l in order (parallel/schedule writes them).
 * *loss (may be NULL; needs l->loss >= 0): the micro-batches' losses, read
 * after each forward and combined as l->tree says. Allocates nothing. The
 * activations have one slot unless the program was created for l
 * (hp_program_create_actions), so on another program a backward must follow
 * its own micro-batch's forward with no other forward between (F0 B0 F1 B1;
 * F0 F1 B0 B1 is refused) and a split backward is refused. An operator that fails stops the step with its error, as
 * hp_program_run. */
hp_status hp_program_run_actions(hp_program *p, float *loss, const hp_action_list *l, const hp_step_io *io);

/* Runs the steps of one phase (forward, backward or optimizer): the
 * validation executor and programs run without a schedule (tests, benchmarks,
 * inference). An
 * operator that fails (a collective that timed out) stops the phase; its
 * error is returned (and the program must not be run again). */
hp_status hp_program_run(hp_program *p, hp_phase phase);

/* Profiling (benchmarks): when acc is set, every step is timed and its
 * seconds added to acc[0] (computation) or acc[1] (communicating operators).
 * NULL turns it off (the default: no clock is read). */
void hp_program_profile(hp_program *p, double *acc);
/* Tracing: when set, hook(ctx, node, t0, t1) is called after every step with
 * its start and end times (hp_now seconds). NULL turns it off. */
typedef void (*hp_step_hook)(void *ctx, const hp_node *n, double t0, double t1);
void hp_program_set_hook(hp_program *p, hp_step_hook hook, void *ctx);

/* Step by step (the validation executor): the number of steps of a phase,
 * the node of step i, and running steps [begin, end) of a phase. */
int hp_program_num_steps(const hp_program *p, hp_phase phase);
const hp_node *hp_program_step_node(const hp_program *p, hp_phase phase, int i);
hp_status hp_program_run_range(hp_program *p, hp_phase phase, int begin, int end);

/* Storage of a value (persistent values are stable; arena values are valid
 * only while live in the step). */
void *hp_program_data(const hp_program *p, int value);
/* Flat gradient buffer (same layout as the parameter store), NULL without backward. */
float *hp_program_grads(const hp_program *p);
const hp_program_info *hp_program_get_info(const hp_program *p);
const hp_graph *hp_program_graph(const hp_program *p);
/* oneDNN primitives created for this program (all when it was created; a
 * steady-state step adds none). 0 for fp32 programs on OpenBLAS. */
long hp_program_gemm_creations(const hp_program *p);

#endif
