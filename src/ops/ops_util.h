/* ops/ops_util: small helpers shared by the operator files (not public). */
#ifndef HP_OPS_UTIL_H
#define HP_OPS_UTIL_H

#include "core/autodiff.h"
#include "core/graph.h"
#include "core/opdef.h"
#include "kernels/backend.h"
#include "kernels/kernels.h"

#define F32(t) ((float *)(t).data)
#define CF32(t) ((const float *)(t).data)
#define I32(t) ((const int32_t *)(t).data)
#define BF(t) ((uint16_t *)(t).data)
#define CBF(t) ((const uint16_t *)(t).data)

/* Does the kernel run in bf16 (its tensor t is bf16)? */
static inline int is_bf16(const hp_tensor *t) { return t->dtype == HP_BF16; }
/* The same for value k of a node's inputs, at compile time (scratch sizes). */
static inline int in_bf16(const hp_graph *g, const hp_node *n, int k) { return g->vals[n->in[k]].dtype == HP_BF16; }
/* A precision rule (core/opdef.h hp_precision) as a static compound literal. */
#define HP_PREC(i, o) (&(const hp_precision){(i), (o)})

static inline const hp_shape *in_shape(const hp_graph *g, const hp_node *n, int k) {
    return &g->vals[n->in[k]].shape;
}
static inline int64_t in_numel(const hp_graph *g, const hp_node *n, int k) {
    return hp_val_numel(g, n->in[k]);
}
static inline int64_t last_dim(const hp_shape *s) { return s->d[s->ndim - 1]; }
static inline int64_t rows_of(const hp_shape *s) { return hp_shape_numel(s) / last_dim(s); }
static inline int64_t t_last(const hp_tensor *t) { return t->shape.d[t->shape.ndim - 1]; }
static inline int64_t t_rows(const hp_tensor *t) { return hp_shape_numel(&t->shape) / t_last(t); }

/* The kernel backend table a node's kernels launch through (core/opdef.h). */
static inline const hp_kbackend *kern_of(const hp_kctx *k) {
    return k->kern ? k->kern : hp_kbackend_from_env();
}

/* Emits a backward node for forward node fwd; returns its id. */
static inline int emit_bwd(hp_graph *g, const hp_opdef *op, int fwd, const int *in, int nin,
                           const int *out, int nout) {
    hp_attrs a = g->nodes[fwd].a;
    return hp_graph_node_into(g, op, in, nin, out, nout, &a, HP_PHASE_BWD, fwd);
}

/* A gradient value for input k of node fwd if it needs one, else -1. */
static inline int grad_for(hp_graph *g, int fwd, int k) {
    int v = g->nodes[fwd].in[k];
    return hp_needs_grad(g, v) ? hp_grad_value(g, v) : -1;
}

/* Bytes of all inputs and outputs of a node (each at its dtype's size). */
double hp_ops_io_bytes(const hp_graph *g, const hp_node *n);

/* Shape-rule errors name the operator and the problem. */
#define SHAPE_ERR(fmt, ...) hp_errorf("shape rule: " fmt, __VA_ARGS__)

#endif
