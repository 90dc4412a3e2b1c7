/* parallel/ep: expert parallelism. The pass (ep_pass.c) finds each MoE
 * layer whose stacked expert weights the plan splits by expert (dim 0) over a
 * mesh axis of more than one member, and puts the token exchange around its
 * experts: moe_ep_send after the dispatch (the rows to their experts'
 * owners), the experts' grouped GEMMs and the row-for-row operators between
 * them on the received rows, moe_ep_return before the combine (the rows
 * back); autodiff then gives the backward the same exchange the other way.
 * Lowering turns the three into the communicating operators below
 * (ep_ops.c), and each grouped GEMM into its member's experts. */
#ifndef HP_PARALLEL_EP_H
#define HP_PARALLEL_EP_H

#include "core/graph.h"
#include "core/opdef.h"
#include "layout/plan.h"
#include "parallel/lower.h"

/* ep_send, ep_return, ep_resend: moe_ep_send / _return / _resend's local forms (ops/moe_ep.h says what they
 * compute), the same inputs, outputs and attributes; blocking all-to-alls along mesh axis i[2]. */
extern const hp_opdef hp_op_ep_send, hp_op_ep_return, hp_op_ep_resend;

/* The same split in two by the overlap pass (attributes as the blocking node's, plus the request slot
 * i[HP_EP_SLOT] — ep_send takes it and the next HP_EP_SEND_SLOTS - 1 — and the sizes of the stage:
 * i[HP_EP_ROWS] the most rows (G R), i[HP_EP_WIDE] the widest row in floats):
 *   ep_send_start (xp, eid[, scores, rowof]) -> stage;   ep_send_wait (stage, xp, eid[, ...]) -> (xr, er, src)
 *   ep_return_start (yr, src, eid) -> (yp, stage);        ep_return_wait (stage, yp) -> nothing (yp is ready)
 *   ep_resend_start (dyp, src, eid) -> stage;             ep_resend_wait (stage, dyp, src, eid) -> dyr
 * The start starts the all-to-alls (ep_send's: each expert's row count, then the rows, whose receive counts the
 * lane fills from those right before it begins them: nothing blocks), the wait waits for them and puts the rows
 * in place. Between them the sent rows (an input of the wait) must not change:
 * the peers of a supernode read them in place. stage: fp32 [hp_ep_stage_floats]. */
extern const hp_opdef hp_op_ep_send_start, hp_op_ep_send_wait, hp_op_ep_return_start, hp_op_ep_return_wait,
    hp_op_ep_resend_start, hp_op_ep_resend_wait;
/* What an exchange operator is (HP_EP_X_NONE for any other operator), and a blocking one's start and wait. */
typedef enum { HP_EP_X_NONE = 0, HP_EP_X_SEND, HP_EP_X_RETURN, HP_EP_X_RESEND, HP_EP_X_RETURN_START, HP_EP_X_OTHER } hp_ep_x;
hp_ep_x hp_ep_exchange_of(const hp_opdef *op);
void hp_ep_split_ops(const hp_opdef **start, const hp_opdef **wait, const hp_opdef *blocking);
#define HP_EP_SLOT 3
#define HP_EP_ROWS 4
#define HP_EP_WIDE 5
#define HP_EP_SEND_SLOTS 3
size_t hp_ep_stage_floats(long G, long E, int64_t rows, int64_t wide);
/* The most rows and the widest row (floats) of a blocking exchange node's fp32/bf16 matrices. */
void hp_ep_rows_wide(int64_t *rows, int64_t *wide, const hp_graph *g, const hp_node *n);

/* The pass, on the forward graph (before autodiff) with plan p over mesh m (its pipeline axis, if any, of size
 * 1): *layers gets the MoE layers given an exchange and *axis the mesh axis (-1: none). Stacks split other than
 * by expert, or over two axes, or layers split over different axes are errors naming the parameter.
 * deterministic (the deterministic mode): every MoE layer's balancing loss per part of the batch (a rank's
 * slice: HP_MOE_PER_PART), and the experts' GEMMs per source run with their weight gradients added as a tree
 * over the sources, so the results do not depend on how the slices are spread over ranks. */
hp_status hp_pass_ep(hp_graph *g, const hp_plan *p, const hp_mesh *m, int deterministic, int *layers, int *axis);

/* The overlap pass (ep_overlap.c), on a rank's local graph before the schedule: each exchange node (ep_send,
 * ep_return, ep_resend) — with supernode_ranks > 0 only one whose group spans supernodes of that many ranks (the
 * rank context's mesh and rank say which) — becomes a start and a wait (request slots numbered after the rank context's), the wait
 * placed right before the first node that reads what the exchange makes, and the nodes of its phase that neither
 * lead to the exchange nor depend on it (the shared experts, the router's and balancing loss's backward, their
 * gradients' reductions) moved between the two, split between consecutive exchanges by their FLOPs — where the
 * step's order stays valid (every value made before it is read, every write to a buffer in its place among the
 * other accesses); an exchange with nothing to overlap stays blocking. *nsplit: exchanges split, *moved: nodes
 * moved between a start and its wait. */
hp_status hp_pass_ep_overlap(int *nsplit, int *moved, hp_rank_graph *rg, int supernode_ranks);

#endif
