/* runtime/dist: a compiled model in this process — the mesh's ranks that this
 * process hosts, each a thread with its own compute pool, compiled program
 * (parallel/compile: hp_compile per rank), parameter pieces and optimizer
 * state. One rank (no plan) is the same thing with one rank-thread, which is
 * the caller's own thread. hp_dist_run calls a function on every hosted rank's
 * thread at once; the steps of training (data, forward, backward, optimizer)
 * happen inside it (runtime/trainer drives it). */
#ifndef HP_RUNTIME_DIST_H
#define HP_RUNTIME_DIST_H

#include "comm/comm.h"
#include "core/graph.h"
#include "layout/layout.h"
#include "layout/plan.h"
#include "layout/propagate.h"
#include "parallel/compile.h"
#include "parallel/mesh_comm.h"
#include "runtime/params.h"
#include "runtime/program.h"

/* The deterministic mode's GEMM grain (hp_pool_set_grain): blocks of 64 rows,
 * so every sgemm call's shape is fixed by the problem, not the thread count. */
#define HP_DIST_DET_GRAIN 64

typedef struct {
    int rank;            /* global (mesh) rank */
    int local_index;     /* among the ranks of this process */
    hp_compiled c;       /* the rank's compiled program (c.rg: its local graph) */
    hp_param_store ps;   /* local parameter pieces */
    hp_pool *pool;
    hp_program *prog;
    void *user;          /* the caller's per-rank state */
} hp_dist_rank;

typedef struct hp_dist hp_dist;

typedef struct {
    const hp_graph *model;      /* forward graph (loss set to train); copied by the compile */
    const hp_plan *plan;        /* NULL: one rank */
    hp_comm_world *world;       /* the collective layer, sized to the mesh */
    int threads_per_rank;
    hp_compile_opts compile;
} hp_dist_config;

hp_status hp_dist_create(hp_dist **out, const hp_dist_config *cfg);
/* The comm world a plan needs in this process: under mpirun one supernode per
 * process, the mesh's ranks spread evenly; without a plan one rank and no MPI.
 * timeout_s <= 0: the default; a2a_fuse_bytes: the all-to-all's fusing threshold (0: the default, < 0: never). */
hp_status hp_dist_world_create(hp_comm_world **out, const hp_plan *plan, double timeout_s, long a2a_fuse_bytes);
/* A process's compute threads shared out among the ranks it hosts (>= 1). */
int hp_dist_threads_per_rank(const hp_comm_world *w, int threads);
void hp_dist_destroy(hp_dist *d);

int hp_dist_nranks(const hp_dist *d); /* hosted here */
hp_dist_rank *hp_dist_rank_at(hp_dist *d, int i);
/* The differentiated global graph and its layouts (the same on every rank). */
const hp_graph *hp_dist_global(const hp_dist *d);
const hp_propagation *hp_dist_propagation(const hp_dist *d);
const hp_mesh *hp_dist_mesh(const hp_dist *d);
hp_comm_world *hp_dist_world(const hp_dist *d);
/* 1 when this process hosts global rank 0 (it prints, writes metrics and checkpoints). */
int hp_dist_lead(const hp_dist *d);

/* Runs fn(rank, ctx) on every hosted rank's thread and waits; returns the
 * first error (by local rank order). One rank runs on the caller's thread;
 * several run on threads of their own (runtime/rank_threads), so a rank-thread
 * that does not answer cannot hold the process: once one rank has failed (a
 * collective timed out), the others get a quarter of the comm timeout (0.5 to
 * 5 s; 50 ms under MPI, where the job is aborted next) to return, and those
 * still running are abandoned. The error then names
 * them; the dist and its comm world are marked abandoned (hp_dist_abandoned,
 * hp_comm_world_abandon), runs nothing more, and its destroy frees nothing:
 * the caller should report the error and exit. */
typedef hp_status (*hp_dist_fn)(hp_dist_rank *r, void *ctx);
hp_status hp_dist_run(hp_dist *d, hp_dist_fn fn, void *ctx);
/* 1 once a run left rank-threads behind (see hp_dist_run). */
int hp_dist_abandoned(const hp_dist *d);

/* The rank's local piece of global value v (layout as produced) from a whole
 * tensor (src) into the rank's buffer for it, or back (gather, for checks). */
void hp_dist_scatter_value(hp_dist *d, hp_dist_rank *r, int v, void *dst_local, const void *src_global);
void hp_dist_insert_value(hp_dist *d, hp_dist_rank *r, int v, void *dst_global, const void *src_local);
/* Fills every rank's parameter pieces from a whole-model store (same names). */
hp_status hp_dist_scatter_params(hp_dist *d, const hp_param_store *global);
/* The rank's buffer of global value v as produced (NULL if it has none). */
void *hp_dist_value(hp_dist_rank *r, int v);

#endif
