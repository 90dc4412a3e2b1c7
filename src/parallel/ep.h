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

/* ep_send, ep_return, ep_resend: moe_ep_send / _return / _resend's local forms (ops/moe_ep.h says what they
 * compute), the same inputs, outputs and attributes; blocking all-to-alls along mesh axis i[2]. */
extern const hp_opdef hp_op_ep_send, hp_op_ep_return, hp_op_ep_resend;

/* The pass, on the forward graph (before autodiff) with plan p over mesh m (its pipeline axis, if any, of size
 * 1): *layers gets the MoE layers given an exchange and *axis the mesh axis (-1: none). Stacks split other than
 * by expert, or over two axes, or layers split over different axes are errors naming the parameter.
 * deterministic (the deterministic mode): every MoE layer's balancing loss per part of the batch (a rank's
 * slice: HP_MOE_PER_PART), and the experts' GEMMs per source run with their weight gradients added as a tree
 * over the sources, so the results do not depend on how the slices are spread over ranks. */
hp_status hp_pass_ep(hp_graph *g, const hp_plan *p, const hp_mesh *m, int deterministic, int *layers, int *axis);

#endif
