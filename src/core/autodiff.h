/* core/autodiff: reverse-mode differentiation as a graph pass. It walks the
 * forward nodes backwards and asks each operator's backward rule to emit the
 * nodes that compute its inputs' gradients; contributions to one value are
 * summed as they arrive (in a fixed order), by add nodes or by rules that
 * take the running sum into their own kernel (hp_grad_take). Parameter gradients become
 * persistent values named "<param>.grad". */
#ifndef HP_CORE_AUTODIFF_H
#define HP_CORE_AUTODIFF_H

#include "core/graph.h"
#include "core/opdef.h"

/* Differentiates the scalar `loss`; add_op sums two gradients (out = a + b). */
hp_status hp_autodiff(hp_graph *g, int loss, const hp_opdef *add_op);

/* The dtype of value v's gradient: v's own, fp32 where v has grad_fp32. */
static inline hp_dtype hp_grad_dtype(const hp_graph *g, int v) {
    return g->vals[v].grad_fp32 ? HP_F32 : g->vals[v].dtype;
}
/* For backward rules: a new gradient value shaped like value `of`, of
 * hp_grad_dtype(g, of). */
int hp_grad_value(hp_graph *g, int of);
/* For backward rules that fold the gradient summed so far into their own
 * kernel (an accumulating kernel instead of a separate add node: e.g. a tied
 * embedding adds its table gradient to the LM head's). Returns the gradient of
 * v contributed by the uses already differentiated (-1: none yet) and hands
 * it over: the rule must return in gin a new value that includes it, and
 * autodiff then adds nothing. The graph stays single-assignment. While the
 * pass runs, g->vals[v].grad holds these running sums. */
int hp_grad_take(hp_graph *g, int v);
/* For backward rules: does input `v` need a gradient? */
static inline int hp_needs_grad(const hp_graph *g, int v) { return g->vals[v].requires_grad; }

#endif
