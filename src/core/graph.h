/* core/graph: the graph IR. A model is a list of nodes (operator + input and
 * output values) over values with global shapes; parameters carry stable names
 * ("h.3.attn.qkv.weight"). Builders append nodes through plain C calls; the
 * first builder error sticks to the graph (hp_graph_status) so model code can
 * be written straight through and checked once. Passes (autodiff, layout
 * propagation, collective insertion) append or rewrite nodes; nodes are kept
 * in a valid execution order. */
#ifndef HP_CORE_GRAPH_H
#define HP_CORE_GRAPH_H

#include "core/status.h"
#include "core/tensor.h"

#define HP_MAX_IN 6
#define HP_MAX_OUT 5
#define HP_NAME_LEN 96

typedef enum {
    HP_V_INPUT,  /* fed by the caller each step (tokens, targets) */
    HP_V_PARAM,  /* trainable parameter, persistent */
    HP_V_ACT,    /* forward activation */
    HP_V_GRAD,   /* gradient of an activation */
    HP_V_CONST,  /* a constant set once (the seed gradient of the loss) */
    HP_V_STATE,  /* optimizer state of a parameter (moments), persistent; state_of names it */
} hp_vkind;

/* The three phases of a training step, run in this order. */
typedef enum { HP_PHASE_FWD = 0, HP_PHASE_BWD = 1, HP_PHASE_OPT = 2 } hp_phase;
#define HP_NPHASES 3

typedef struct {
    hp_dtype dtype;
    hp_shape shape;
    hp_vkind kind;
    char name[HP_NAME_LEN];
    int producer;      /* node that writes it, -1 for inputs, params, consts */
    int grad;          /* value holding d(loss)/d(this), -1 if none */
    int grad_of;       /* for gradients: the value it is the gradient of, else -1 */
    int state_of;      /* for optimizer state: the parameter it belongs to, else -1 */
    int persistent;    /* kept for the whole step (params, their grads, inputs, loss) */
    int no_grad;       /* never differentiated (indices, saved statistics) */
    long init;         /* constants: blob offset of the initial bytes, or -1 (zeros) */
    long param_init;   /* parameters: blob offset of the init stated where it was declared (written and read by
                        * models/build), or -1: initialised by name */
    int requires_grad; /* set by autodiff: depends on a parameter */
    int view_of;       /* a view has no storage of its own: its elements are those of value view_of
                        * (not itself a view) from element view_offset on (-1: not a view) */
    int64_t view_offset;
    int grad_fp32;     /* its gradient is fp32 whatever its own dtype (the bf16 copy of a parameter,
                        * whose gradient is the fp32 master's: parallel/precision) */
    int mirror_of;     /* the bf16 copy of parameter mirror_of kept in the parameter store's bf16
                        * mirror at the parameter's offset (FSDP gather=bf16: parallel/fsdp), -1: none */
    int store_slot;    /* lives in the parameter store's compute slot store_slot (FSDP's transient
                        * gathered units: parallel/fsdp), -1: none */
} hp_value;

typedef struct {
    int64_t i[8];
    double f[4];
} hp_attrs;

struct hp_opdef;

typedef struct {
    const struct hp_opdef *op;
    int in[HP_MAX_IN];
    int nin;
    int out[HP_MAX_OUT];
    int nout;
    hp_attrs a;
    hp_phase phase;
    int fwd_node; /* backward nodes: the forward node they differentiate, else -1 */
    int xin_at, nxin; /* extra inputs (optimizer nodes over many tensors): g->xin[xin_at ..+ nxin) */
    char name[HP_NAME_LEN];
} hp_node;

typedef struct hp_graph {
    hp_value *vals;
    int nvals, capv;
    hp_node *nodes;
    int nnodes, capn;
    hp_status err;          /* first builder error, sticky */
    char scope[HP_NAME_LEN]; /* name prefix for nodes being built */
    int loss;               /* value id of the scalar loss, -1 until set */
    int loss_seed;          /* constant 1.0 seeding backward, -1 until autodiff */
    int *xin;               /* the nodes' extra input lists */
    int nxin, capxin;
    char *blob;             /* plain data of nodes and constants (hp_graph_blob) */
    long nblob, capblob;
} hp_graph;

hp_status hp_graph_create(hp_graph **out);
void hp_graph_destroy(hp_graph *g);
/* The first builder error, or HP_OK. The graph keeps ownership. */
hp_status hp_graph_status(const hp_graph *g);
/* The graph's error as a status of the caller's own (a copy: the graph keeps and frees its
 * own), HP_OK when there is none: what a pass returns. */
hp_status hp_graph_error(const hp_graph *g);
/* Records err as the graph's error unless one is already recorded (then frees it). */
void hp_graph_fail(hp_graph *g, hp_status err);

/* Name prefix for the nodes that follow ("h.3.attn"); NULL or "" clears it. */
void hp_graph_scope(hp_graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int hp_graph_input(hp_graph *g, const char *name, hp_dtype dtype, hp_shape shape);
int hp_graph_param(hp_graph *g, const char *name, hp_shape shape);
/* A new value (used by passes and op rules); returns its id or -1 on error. */
int hp_graph_value(hp_graph *g, hp_vkind kind, hp_dtype dtype, hp_shape shape, const char *name);

/* Appends a node running `op` on inputs in[0..nin), creating its outputs from
 * the op's shape rule. Writes the output ids to outs (may be NULL) and returns
 * the first output id, or -1 once the graph has an error. */
int hp_graph_node(hp_graph *g, int *outs, const struct hp_opdef *op, const int *in, int nin,
                  const hp_attrs *a);
/* The same for a node whose outputs already exist (passes). */
int hp_graph_node_into(hp_graph *g, const struct hp_opdef *op, const int *in, int nin,
                       const int *out, int nout, const hp_attrs *a, hp_phase phase,
                       int fwd_node);

/* A node with extra inputs beyond HP_MAX_IN (xin[0..nxin), after in[0..nin)):
 * a kernel sees all nin + nxin tensors in its input array, in that order. */
int hp_graph_node_list(hp_graph *g, const struct hp_opdef *op, const int *in, int nin, const int *xin, int nxin,
                       const int *out, int nout, const hp_attrs *a, hp_phase phase);
/* Every input of a node, extra inputs included: count and the k-th. */
static inline int hp_node_nin_all(const hp_node *n) { return n->nin + n->nxin; }
static inline int hp_node_input(const hp_graph *g, const hp_node *n, int k) {
    return k < n->nin ? n->in[k] : g->xin[n->xin_at + k - n->nin];
}
/* Plain data kept by the graph (a node's configuration, a constant's initial
 * bytes), 16-byte aligned; returns its offset, or -1 once the graph has an
 * error. Kernels read it through hp_kctx.graph. */
long hp_graph_blob(hp_graph *g, const void *data, size_t bytes);
static inline const void *hp_graph_blob_at(const hp_graph *g, long at) { return g->blob + at; }
/* A constant whose initial value is data (numel x dtype bytes). */
int hp_graph_const(hp_graph *g, const char *name, hp_dtype dtype, hp_shape shape, const void *data);
/* A deep copy of g (values, nodes, lists); g must have no error. */
hp_status hp_graph_clone(hp_graph **out, const hp_graph *g);

static inline hp_value *hp_val(const hp_graph *g, int id) { return &g->vals[id]; }
static inline int64_t hp_val_numel(const hp_graph *g, int id) {
    return hp_shape_numel(&g->vals[id].shape);
}
/* Parameter ids in creation order (their stable order for checkpoints). */
int hp_graph_params(const hp_graph *g, int *ids, int cap);
/* The value with this name, or -1. */
int hp_graph_find(const hp_graph *g, const char *name);
/* How many node inputs (extra inputs included) read value v. */
int hp_graph_readers(const hp_graph *g, int v);
/* A view: a value of `shape` whose elements are base's from element `offset`
 * on (base's dtype; the range must lie inside base, and base is no view).
 * Returns its id, or -1 once the graph has an error. */
int hp_graph_view(hp_graph *g, int base, int64_t offset, hp_shape shape, const char *name);

#endif
