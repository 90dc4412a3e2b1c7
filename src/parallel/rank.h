/* parallel/rank: what one rank of a distributed program carries at run time —
 * its communicator handle, the mesh and its groups, the redistribution plans
 * its program's communicating nodes refer to (by index), and their scratch.
 * Communicating operators find it in hp_kctx.rank. */
#ifndef HP_PARALLEL_RANK_H
#define HP_PARALLEL_RANK_H

#include <stddef.h>

#include "comm/comm.h"
#include "layout/layout.h"
#include "layout/redist.h"
#include "parallel/mesh_comm.h"

typedef struct {
    int rank; /* global rank = mesh rank */
    hp_comm_rank *comm;
    const hp_mesh *mesh;
    const hp_mesh_comm *mc;
    hp_redist *plans; /* owned */
    int nplans, capplans;
    float *scratch; /* owned: the largest scratch any plan needs */
    size_t scratch_floats;
} hp_rank_ctx;

/* Adds a plan; returns its index (-1 when out of memory). */
int hp_rank_ctx_add_plan(hp_rank_ctx *c, const hp_redist *plan);
/* Allocates the scratch the plans need (once, after compiling). */
hp_status hp_rank_ctx_alloc(hp_rank_ctx *c);
void hp_rank_ctx_free(hp_rank_ctx *c);

/* Communicating operators of per-rank programs (parallel/comm_ops.c).
 * redistribute: in (x) -> out (x in another layout); i[0] = plan index.
 * all_gather: in (x[...]) -> out [k, ...] (the k members' x along mesh axis i[0]). */
#include "core/opdef.h"
extern const hp_opdef hp_op_redistribute, hp_op_mesh_all_gather;

#endif
