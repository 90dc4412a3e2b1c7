/* runtime/trainer: the one training loop — for one rank, for rank-threads in
 * this process and for MPI processes alike. Per step: the next batch (every
 * process reads the same stream and scatters its ranks' pieces), then every
 * hosted rank runs its compiled program's three phases (forward, backward,
 * optimizer: clipping and the AdamW/Muon updates are nodes of the program).
 * Around the steps: validation on a held-out stream every val_every steps and
 * at the end, metrics as JSON lines, checkpoints every ckpt_every steps, at
 * the end and at stop_at (runtime/dist_ckpt: whole tensors, any plan
 * resumes them; the checkpoint directory locked and recovered from an
 * interrupted save first, io/ckpt_dir), resume bit for bit, and the first
 * step through the validation executor when asked. Every output write is
 * checked (runtime/metrics, traces). What is printed is the caller's: the
 * trainer reports events (the lead process only, warnings from any) through a
 * callback. */
#ifndef HP_RUNTIME_TRAINER_H
#define HP_RUNTIME_TRAINER_H

#include <stdio.h>

#include "io/ckpt.h"
#include "io/ckpt_lineage.h"
#include "io/data.h"
#include "layout/plan.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "runtime/dist.h"
#include "runtime/dist_ckpt.h"
#include "runtime/metrics.h"
#include "runtime/validate.h"

typedef enum {
    HP_TRAIN_START,     /* the run is set up (model summary fields) */
    HP_TRAIN_VALIDATED, /* the validation executor checked step 1 (vrep) */
    HP_TRAIN_STEP,      /* a step finished (nonfinite: its loss or gradient norm was NaN/Inf, skipped) */
    HP_TRAIN_VAL,       /* a validation pass finished (val_loss) */
    HP_TRAIN_CKPT,      /* a checkpoint was written (dir) */
    HP_TRAIN_STOPPED,   /* stop_at reached before steps */
    HP_TRAIN_DONE,      /* the loop ended (steps done, seconds) */
    HP_TRAIN_NOTE,      /* something the caller may print (message): a recovered checkpoint directory,
                         * a taken-over lock, metrics lines dropped on resume */
    HP_TRAIN_WARNING    /* an output failed and stopped (message; on_write_error): from any process */
} hp_train_event_kind;

typedef struct {
    hp_train_event_kind kind;
    long step; /* 1-based: the step just done */
    float loss, lr, grad_norm, val_loss;
    int nonfinite;
    double tokens_per_s, step_ms, eta_s, seconds;
    long steps_done;
    const char *dir;
    const char *message; /* HP_TRAIN_NOTE, HP_TRAIN_WARNING */
    const hp_validate_report *vrep;
    /* HP_TRAIN_START */
    long nparams;
    int ranks, ranks_here;
    const char *mesh;
    long start_step;
} hp_train_event;

typedef struct {
    /* the model: a forward graph with its loss (graph->loss) and inputs */
    const hp_graph *model;
    int tokens, targets; /* i32 input values [B, T] */
    /* Fills a whole model's parameters (a fresh run): ptrs/names/shapes [n]. */
    hp_status (*init)(void *ctx, float *const *ptrs, const char (*names)[HP_NAME_LEN], const hp_shape *shapes, int n);
    void *init_ctx;
    /* distribution */
    const hp_plan *plan;    /* NULL: one rank */
    hp_comm_world *world;   /* borrowed, sized to the mesh; NULL: the one the plan needs (hp_dist_world_create) */
    int threads;            /* compute threads of this process, shared out among its ranks */
    double comm_timeout;    /* seconds */
    long a2a_fuse_bytes;    /* the world made here: hp_dist_world_create's */
    int validate;           /* 1: step 1 through the validation executor */
    /* What every hosted rank's program is compiled with (parallel/compile: the schedule, dtype, GEMM
     * policy, the gradient all-reduces' dtype, clipping (max_norm), grad_accum, accum_comm_last and
     * deterministic), filled by the caller; the trainer sets train and optim itself. grad_accum: micro-
     * batches per step (<= 1: none): the model's batch is one micro-batch and a step reads grad_accum of
     * them (hp_trainer_step: tokens[grad_accum][B*T]). deterministic: the step's loss is the tree of the
     * micro-batches' losses too, so with a fixed micro-batch per rank (the caller's split) the same bits
     * at any power-of-two rank count; the data readers (train, val) then give a whole step (grad_accum
     * micro-batches) per hp_data_next, and a validation step is a whole step too. */
    hp_compile_opts compile;
    /* optimization */
    hp_optim_config optim;
    double peak_gflops;     /* this process's measured FP32 peak (GFLOP/s) on its threads: the metrics
                             * then carry each step's MFU; 0: none */
    int on_nan;             /* a step whose loss or gradient norm is not finite: 0 stops the run with an
                             * error naming the step (no checkpoint of that state is written), 1 skips
                             * the step (its update is not applied) and goes on */
    int max_skipped;        /* on_nan 1: this many consecutive skipped steps end the run with an error
                             * (a run that diverged for good); 0: 10 */
    hp_lr_schedule lr;
    long steps, stop_at;    /* stop_at 0: none */
    /* data (borrowed) */
    hp_data *train, *val;
    long val_every, val_steps;
    /* outputs */
    const char *metrics;    /* JSON lines file ("" or NULL: none); on resume, cut back to start_step, then
                             * appended (runtime/metrics) */
    const char *ckpt_dir;   /* "" or NULL: no checkpoints. The lead process locks it for the run and
                             * recovers it from an interrupted save first (io/ckpt_dir) */
    long ckpt_every;
    int keep_last;          /* > 0: after each save keep only the keep_last newest step_* of the run's
                             * lineage (and latest's) */
    const hp_ckpt_lineage *lineage; /* the run's (borrowed; NULL: retention counts every checkpoint) */
    int ckpt_overwrite;     /* 0: a ckpt_dir holding a step past start_step is refused at start (the run
                             * would write over another run's or a newer checkpoint); 1: allowed */
    int on_write_error;     /* a failed metrics or trace write: 0 ends the run with an error naming the
                             * file, 1 warns once (HP_TRAIN_WARNING) and that output stops */
    int ckpt_sharded;       /* 1: the sharded format (every rank writes its pieces); 0: whole tensors */
    /* resume (borrowed): an opened checkpoint and its step, or NULL */
    const hp_ckpt *resume;
    long start_step;
    /* The checkpoint's state.json text at `step` (lead process only; *out malloc'd). */
    hp_status (*state_json)(void *ctx, char **out, long step, const hp_data_state *ds);
    void *state_ctx;
    /* Events (lead process only). */
    void (*on_event)(void *ctx, const hp_train_event *e);
    void *event_ctx;
    /* Called once the world exists, before any rank's program is compiled or allocated, with the
     * compile options every hosted rank's program will use and each rank's threads; an error ends
     * hp_trainer_create there (the caller's memory check). It may settle what the memory budget chooses
     * (co->fsdp_keep_auto). NULL: none. */
    hp_status (*before_alloc)(void *ctx, hp_comm_world *world, hp_compile_opts *co, int threads_per_rank);
    void *before_alloc_ctx;
    /* More fields of each step's metrics record (NULL: none), read from the process's first rank after the
     * step: its program and compiled graph (the model's own statistics, e.g. a MoE layer's tokens per expert,
     * from values the model keeps persistent). */
    void (*step_metrics)(void *ctx, const hp_program *prog, const hp_graph *local, hp_metrics_rec *rec);
    void *step_metrics_ctx;
    const char *trace;      /* "" or NULL: no trace; else PREFIX for PREFIX.rankN.json */
    long trace_steps;       /* steps traced (from the first); 0 = 1 */
} hp_trainer_config;

typedef struct hp_trainer hp_trainer;

/* Compiles the model for every rank this process hosts, initialises or loads
 * the parameters and optimizer state; errors (plans, shapes, checkpoints,
 * files) before any step. */
hp_status hp_trainer_create(hp_trainer **out, const hp_trainer_config *cfg);
/* Runs steps start_step .. steps (or stop_at). */
hp_status hp_trainer_run(hp_trainer *t);
void hp_trainer_destroy(hp_trainer *t);

/* The compiled model (ranks of this process). */
hp_dist *hp_trainer_dist(hp_trainer *t);
/* Runs one training step on the batch tokens/targets ([B, T] each, whole) and
 * returns the loss and gradient norm (benchmarks, tests); lr is this step's
 * AdamW lr, step the 0-based step number. */
hp_status hp_trainer_step(hp_trainer *t, const int32_t *tokens, const int32_t *targets, long step, float lr,
                          float *loss, float *grad_norm);

/* For a loop of hp_trainer_step (the API's hp_train_save / hp_train_load).
 * Writes the current parameters and optimizer state as checkpoint
 * ckpt_dir/step_NNNNNN (step: the steps done; the state_json callback's text
 * with the training stream's position) in the configured format and points
 * ckpt_dir/latest at it, as the loop's saves do (keep_last applied). A
 * ckpt_dir other than the configured one is locked and recovered for the
 * save only. Every process calls it (it communicates). */
hp_status hp_trainer_save(hp_trainer *t, const char *ckpt_dir, long step);
/* Fills the parameters and optimizer state from an opened checkpoint of
 * `step` (any plan or format wrote it), checked finite; the caller sets the
 * data position and agrees on the outcome (hp_trainer_agree). */
hp_status hp_trainer_load(hp_trainer *t, const hp_ckpt *ck, long step);
/* Under mpirun (every process calls it): st, or an error when another
 * process's st was one ("another process failed WHAT: its error"); else st. */
hp_status hp_trainer_agree(hp_trainer *t, hp_status st, const char *what);
/* The trainer's checkpoint writer and reader (made on first use; owned by
 * the trainer): what reads and writes whole parameters by name
 * (runtime/dist_weights). */
hp_status hp_trainer_ckpt(hp_dist_ckpt **out, hp_trainer *t);

#endif
