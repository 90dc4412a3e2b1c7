/* runtime/dist: a distributed program in this process — the mesh's ranks that
 * this process hosts, each a thread with its own compute pool, compiled local
 * graph, program and parameter pieces. The global graph (differentiated) and a
 * layout for every parameter and input are compiled once, at creation:
 * propagation, then one local program per hosted rank (production mode).
 * hp_dist_run calls a function on every hosted rank's thread at once; the
 * steps of training (data, forward, backward, optimizer) happen inside it. */
#ifndef HP_RUNTIME_DIST_H
#define HP_RUNTIME_DIST_H

#include "comm/comm.h"
#include "core/graph.h"
#include "layout/layout.h"
#include "layout/propagate.h"
#include "parallel/compile.h"
#include "parallel/mesh_comm.h"
#include "runtime/params.h"
#include "runtime/program.h"

typedef struct {
    int rank;            /* global (mesh) rank */
    int local_index;     /* among the ranks of this process */
    hp_rank_graph rg;    /* local graph and its communication plans */
    hp_param_store ps;   /* local parameter pieces */
    hp_pool *pool;
    hp_program *prog;
    void *user;          /* the caller's per-rank state */
} hp_dist_rank;

typedef struct hp_dist hp_dist;

typedef struct {
    const hp_graph *g;          /* global graph, differentiated; must outlive the dist */
    hp_mesh mesh;
    const hp_layout *layouts;   /* [g->nvals]: layouts of the fixed values */
    const unsigned char *fixed; /* [g->nvals]: parameters and inputs given by the plan */
    hp_comm_world *world;       /* the collective layer, sized to the mesh */
    int threads_per_rank;
} hp_dist_config;

hp_status hp_dist_create(hp_dist **out, const hp_dist_config *cfg);

/* The fixed layouts of g's parameters and inputs from a plan (layouts and
 * fixed are [g->nvals]); errors name the plan rule and the tensor. */
#include "layout/plan.h"
hp_status hp_dist_layouts_from_plan(hp_layout *layouts, unsigned char *fixed, const hp_plan *p, const hp_graph *g);
void hp_dist_destroy(hp_dist *d);

int hp_dist_nranks(const hp_dist *d); /* hosted here */
hp_dist_rank *hp_dist_rank_at(hp_dist *d, int i);
const hp_propagation *hp_dist_propagation(const hp_dist *d);
const hp_mesh *hp_dist_mesh(const hp_dist *d);
hp_comm_world *hp_dist_world(const hp_dist *d);

/* Runs fn(rank, ctx) on every hosted rank's thread and waits; returns the
 * first error (by local rank order). */
typedef hp_status (*hp_dist_fn)(hp_dist_rank *r, void *ctx);
hp_status hp_dist_run(hp_dist *d, hp_dist_fn fn, void *ctx);

/* The rank's local piece of global value v (layout as produced) from a whole
 * tensor (src) into the rank's buffer for it, or back (gather, for checks). */
void hp_dist_scatter_value(hp_dist *d, hp_dist_rank *r, int v, void *dst_local, const void *src_global);
void hp_dist_insert_value(hp_dist *d, hp_dist_rank *r, int v, void *dst_global, const void *src_local);
/* Fills every rank's parameter pieces from a whole-model store (same names). */
hp_status hp_dist_scatter_params(hp_dist *d, const hp_param_store *global);

#endif
