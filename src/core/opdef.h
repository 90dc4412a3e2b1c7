/* core/opdef: the interface every operator implements. The operator table
 * (src/ops) fills these in; core's passes and the runtime only call through
 * them, so core never depends on a particular operator. */
#ifndef HP_CORE_OPDEF_H
#define HP_CORE_OPDEF_H

#include <stddef.h>

#include "core/coll_desc.h"
#include "core/graph.h"
#include "core/pool.h"

/* What a kernel gets at run time: the rank's pool, its scratch buffer, and
 * for communicating operators the rank's context (owned by the parallel
 * layer) and the slot where they report an error (the program stops at the
 * first one). */
typedef struct {
    const hp_graph *graph; /* the graph the program runs (node blobs) */
    hp_pool *pool;
    float *scratch; /* hp_opdef.scratch() floats, shared by all nodes */
    void *rank;     /* parallel layer's per-rank context, NULL on one rank */
    hp_status *err; /* a failing operator stores its error here */
    void *gemm;     /* the rank's matmul context (kernels/gemm.h hp_gemm_ctx), NULL without bf16 */
    void **state;   /* [graph->nnodes]: what each node's hp_opdef.prepare made (NULL: nothing) */
    /* The kernel backend table (kernels/backend.h hp_kbackend) the operators
     * launch their kernels through; NULL: the one HP_KERNELS_PORTABLE picks. */
    const struct hp_kbackend *kern;
} hp_kctx;

/* A node's state from its prepare hook (NULL when none). */
static inline void *hp_kctx_state(const hp_kctx *k, const hp_node *n) {
    return k->state ? k->state[n - k->graph->nodes] : NULL;
}

/* The dtypes an operator computes in under --dtype bf16 (parallel/precision),
 * one letter per input and per output: 'b' bf16, 'f' fp32, '-' as it comes
 * (token ids, targets). An input of another dtype is cast before the node. */
typedef struct {
    const char *in, *out;
} hp_precision;

typedef struct hp_opdef {
    const char *name;
    int nout; /* number of outputs the shape rule creates */
    unsigned nograd_outs; /* bit k set: output k is never differentiated (saved statistics) */
    int communicates;     /* 1: the operator runs collectives (profiled as communication) */
    /* Shape rule: output shapes and dtypes from the inputs and attributes; an
     * error names the operator and the offending input. */
    hp_status (*infer)(const hp_graph *g, const hp_node *n, hp_shape *out_shape,
                       hp_dtype *out_dtype);
    /* Forward kernel on plain local tensors. */
    void (*run)(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out);
    /* Backward rule (NULL: not differentiable). gout[i] is the gradient value of
     * output i (-1: none). Emits nodes into g and writes the gradient value of
     * each input into gin[i] (-1: none); a gradient may reuse gout ids as is. */
    void (*backward)(hp_graph *g, int node, const int *gout, int *gin);
    /* Scratch floats the kernel needs with nthreads threads (NULL: none). */
    size_t (*scratch)(const hp_graph *g, const hp_node *n, int nthreads);
    /* Cost: floating-point operations and bytes moved by one run. */
    double (*flops)(const hp_graph *g, const hp_node *n);
    double (*bytes)(const hp_graph *g, const hp_node *n);
    /* Precision rule of a forward operator in bf16 mode (NULL: fp32 only; the
     * pass casts bf16 inputs to fp32 around it). Backward nodes take the
     * dtypes autodiff gives them: each gradient has its value's dtype, and
     * the gradient of a parameter (or of its bf16 copy) is fp32. */
    const hp_precision *bf16;
    /* Per-node state made once, when the rank's program is created (NULL:
     * none): e.g. a oneDNN primitive for the node's local shapes and dtypes,
     * so the steady state creates nothing. Kernels read it with
     * hp_kctx_state; release frees it. */
    hp_status (*prepare)(void **state, const hp_kctx *k, const hp_node *n, const hp_tensor *in,
                         const hp_tensor *out);
    void (*release)(void *state);
    /* Does this node's prepare need the rank's matmul context (hp_kctx.gemm)?
     * The program makes one only when some node does. NULL: no. */
    int (*uses_gemm)(const hp_graph *g, const hp_node *n);
    /* What a communicating operator does (core/coll_desc.h); NULL: not
     * described (a computing operator, or one no pass needs to read). */
    void (*describe)(hp_coll_desc *out, const hp_graph *g, const hp_node *n);
    /* A gradient accumulated by rows (NULL: not one): 1 when node n's output
     * is input *sofar (the gradient summed so far, -1: none) plus the rows of
     * input *rows ([..., C]) added at the row indices input *ids ([...], i32)
     * — e.g. a tied embedding's table gradient, whose rows come last in the
     * backward. The rows pass (parallel/grad_rows) may then reduce the two
     * parts apart. */
    int (*grad_rows)(const hp_node *n, int *rows, int *ids, int *sofar);
    /* An operator with grad_rows: its form without the sum so far (the same inputs but *sofar, the last;
     * the same output: the gradient's first part) — where the earlier parts are summed elsewhere (a
     * pipeline stage holding a tied table). NULL: none. */
    const struct hp_opdef *fresh;
} hp_opdef;

/* Fills *out from node n's operator; 0 when the operator describes no collective. */
static inline int hp_coll_describe(hp_coll_desc *out, const hp_graph *g, const hp_node *n) {
    if (!n->op->describe) return 0;
    n->op->describe(out, g, n);
    return 1;
}

#endif
