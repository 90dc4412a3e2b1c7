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
    hp_comm_group *world_group; /* every rank (the optimizer's norm) */
    int world_size;
    /* collectives in flight (start/wait node pairs; the schedule pass numbers
     * the slots): per slot the request and the call's arguments */
    int nslots;
    hp_comm_req **reqs;
    hp_comm_args *args;
    hp_comm_tensor *tens;
    double *gathered; /* [world_size]: the optimizer norm's partials */
    struct hp_fsdp_rt *fsdp; /* FSDP's run-time state (parallel/fsdp.h), NULL without FSDP */
    int tree; /* the deterministic mode: gradient and loss all-reduces and FSDP reduce-scatters sum as
               * trees over the members (hp_comm_args.tree), the norm's partials exactly */
} hp_rank_ctx;

/* Adds a plan; returns its index (-1 when out of memory). */
int hp_rank_ctx_add_plan(hp_rank_ctx *c, const hp_redist *plan);
/* Allocates the scratch the plans and slots need (once, after compiling and
 * after world_size and nslots are set). */
hp_status hp_rank_ctx_alloc(hp_rank_ctx *c);
void hp_rank_ctx_free(hp_rank_ctx *c);

/* Communicating operators of per-rank programs (parallel/comm_ops.c).
 * redistribute: in (x) -> out (x in another layout); i[0] = plan index,
 *   i[HP_REDIST_GRAD] = 1 on a parameter gradient's reduction (lowering marks
 *   them; the schedule overlaps them, parallel/reduce_dtype may narrow them);
 *   x's dtype (fp32 or bf16) is the dtype moved and summed.
 * redistribute_start / redistribute_wait: the same split in two (i[1] = slot):
 *   the start (in x, out y) begins it, the wait (in y, x; no output) completes
 *   it; between them x must not change and y is not ready. A plan that is one
 *   all-reduce (sum or avg) runs asynchronously on the comm layer; any other
 *   plan runs whole in the start and its wait returns at once.
 * all_gather: in (x[...]) -> out [k, ...] (the k members' x along mesh axis i[0]).
 * sumsq_combine: in f64 [1] (a rank's partial sum of squares) -> out f64 [1]:
 *   the partials of every rank, gathered bytewise, rounded to fp32 and added in
 *   rank order in fp32 (the order and precision the pre-compiled trainer's
 *   all-reduce used, so its runs are reproduced bit for bit). */
#define HP_REDIST_GRAD 2
#include "core/opdef.h"
extern const hp_opdef hp_op_redistribute, hp_op_mesh_all_gather;
extern const hp_opdef hp_op_redistribute_start, hp_op_redistribute_wait, hp_op_sumsq_combine;
/* sumsq_combine_exact: in f64 [HP_SUMSQ_EXACT_WORDS] (a rank's exact accumulator,
 *   optim/sumsq_exact.h) -> out f64 [1]: every rank's merged, as one double
 *   (on one rank too); i[0] = the world size. */
extern const hp_opdef hp_op_sumsq_combine_exact;
/* Point to point and the all-to-all with counts, as start/wait pairs on the
 * rank's request slot `slot` (hp_rank_ctx.nslots must cover it), along mesh
 * axis `axis` (members by coordinate); each call emits the start and its
 * wait (slot_wait: no output; it reads what the start reads and writes) into
 * phase ph and returns the wait's node (-1 once g has an error). Between them
 * the sent value must not change and the received one is not ready.
 * send: x whole to member `peer`; recv: y whole from member `peer` (the
 * sender's value has y's element count and dtype); all_to_all_v: x holds the
 * pieces for the k members in order, send_counts[k] elements each, y gets
 * the pieces from them in order, recv_counts[k] each (counts may be 0; they
 * add up to at most x's and y's element counts: the rest is not touched);
 * all_gather_v: x's first counts[me] elements (me: the rank's member index)
 * to every member, y gets the members' pieces in order, counts[m] each.
 * Descriptors: kind send, recv, all-to-all or all-gather, group the axis,
 * pair the slot, bytes what the rank sends (recv: receives). */
extern const hp_opdef hp_op_send_start, hp_op_recv_start, hp_op_all_to_all_v_start, hp_op_all_gather_v_start,
    hp_op_slot_wait;
/* A send's or receive's attribute a.i[HP_P2P_CHANNEL] = 1: on the axis's second set of groups
 * (hp_mesh_comm_group_back: a pipeline's backward traffic, matched apart from its forward traffic between
 * the same two ranks); 0: the axis's groups. */
#define HP_P2P_CHANNEL 6
int hp_comm_op_send(hp_graph *g, int x, int axis, int peer, int slot, hp_phase ph);
int hp_comm_op_recv(hp_graph *g, int y, int axis, int peer, int slot, hp_phase ph);
int hp_comm_op_all_to_all_v(hp_graph *g, int y, int x, int axis, const int64_t *send_counts,
                            const int64_t *recv_counts, int k, int slot, hp_phase ph);
int hp_comm_op_all_gather_v(hp_graph *g, int y, int x, int axis, const int64_t *counts, int k, int me, int slot,
                            hp_phase ph);
/* send_staged (a pipeline's send): x copied into a persistent staging value of its own (the node's output)
 * and sent from there to member `peer` on request slot `slot`; the call first waits the slot's previous
 * send, so the send is complete by the node's next run (or the program's end) and x is free at once.
 * Returns the node (-1 once g has an error). Descriptor: send, blocking (its wait is inside its next call). */
extern const hp_opdef hp_op_send_staged;
int hp_comm_op_send_staged(hp_graph *g, int x, int axis, int peer, int slot, hp_phase ph);
/* 1 if plan runs asynchronously as a redistribute_start/wait pair. */
int hp_redist_plan_async(const hp_redist *plan);

#endif
