/* ops: the operator table. Per operator: shape rule, forward kernel, backward
 * rule, scratch size and cost (FLOPs, bytes), as hp_opdef records (core/opdef.h);
 * and the builder calls that model code uses to put operators into a graph.
 * Builders return the new value id (the first output), or -1 once the graph
 * holds an error (see hp_graph_status). */
#ifndef HP_OPS_H
#define HP_OPS_H

#include "core/graph.h"
#include "core/opdef.h"

/* ---- builders ---- */
/* ids[...] (i32) -> table rows: out[..., C]; table[R, C]. */
int hp_embedding(hp_graph *g, int ids, int table);
/* x[B,T,C] + pos[t, :] for t < T; pos[P,C] with P >= T. */
int hp_add_pos(hp_graph *g, int x, int pos);
/* x[..., IC] . w[O..., IC]^T + b[O...] -> [..., O...]; b = -1 for none. */
int hp_linear(hp_graph *g, int x, int w, int b);
int hp_layernorm(hp_graph *g, int x, int w, int b, float eps);
int hp_rmsnorm(hp_graph *g, int x, int w, float eps);
int hp_gelu(hp_graph *g, int x);
int hp_add(hp_graph *g, int a, int b);
/* x[..., 2, H] (gate, up) -> silu(gate) * up [..., H]. */
int hp_swiglu(hp_graph *g, int x);
/* Causal self-attention on fused qkv[B,T,3,C] with nh heads -> [B,T,C]. */
int hp_attention(hp_graph *g, int qkv, int nh);
/* Rotary embedding of the q and k parts of qkv[B,T,3,C]. */
int hp_rope(hp_graph *g, int qkv, int nh, float theta);
/* a and b joined along dimension dim (equal elsewhere, one dtype): e.g. a
 * query [B,T,1,C] and keys and values [B,T,2,C] into attention's [B,T,3,C]. */
int hp_concat(hp_graph *g, int a, int b, int dim);
/* table[P, C] broadcast over a batch: [B, T, C] = table[t] (T <= P): a learned
 * per-position vector as an activation (PanGu-α's top query). */
int hp_pos_table(hp_graph *g, int table, int B, int T);
/* Mean softmax cross-entropy of logits[..., Vp] (first V columns real) against
 * targets[...] (i32) -> scalar loss. *per_position (may be NULL) gets the
 * value of the per-position losses. */
int hp_xent(hp_graph *g, int logits, int targets, int V, int *per_position);
/* Grouped-query attention's keys and values: heads repeated (ops/heads). */
int hp_repeat_heads(hp_graph *g, int x, int head_size, int copies);
/* A Mixture-of-Experts MLP (ops/moe; the public header says more). */
#define HP_MOE_SIGMOID 1
#define HP_MOE_RENORM 2
int hp_moe(hp_graph *g, int *aux, int x, int router, int gate_up, int down, int top_k, int flags,
           double capacity_factor, double aux_coef, double z_coef);

/* ---- operator records (forward and backward) ---- */
extern const hp_opdef hp_op_embedding, hp_op_embedding_bwd, hp_op_embedding_bwd_acc;
/* grad_rows: in (rows[..., C], ids[...] i32, grad[R, C] fp32), no output: the
 * rows added into grad at ids in place (a gradient split by the rows pass,
 * parallel/grad_rows: a.i[0] names the parameter); with the first two inputs
 * only (its local form) it does nothing. */
extern const hp_opdef hp_op_grad_rows;
int hp_op_is_grad_rows(const hp_opdef *op); /* 1: op is grad_rows */
int hp_op_is_embedding_bwd_acc(const hp_opdef *op); /* 1: op is embedding_bwd_acc (dy, ids, dsofar) -> dtable */
extern const hp_opdef hp_op_add_pos, hp_op_add_pos_bwd;
extern const hp_opdef hp_op_concat, hp_op_concat_bwd, hp_op_pos_table;
extern const hp_opdef hp_op_linear, hp_op_linear_bwd;
/* Splits every linear_bwd node of order[0..*norder) that computes both the
 * input's gradient and a weight's (or bias's) into the input part (the node,
 * dx only) and the weight part (a new node, dW and db), placed right after it
 * in the order (cap: the order's room). The parts' products are the whole
 * node's, bit for bit; the weight part's are what a backward-weight action
 * (core/action) runs. *nsplit: how many were split. */
hp_status hp_linear_bwd_split(int *nsplit, hp_graph *g, int *order, int *norder, int cap);
/* The same for one node of g: the weight part's new node (created last), or -1 when the node is no
 * linear_bwd computing both (or g has an error). */
int hp_linear_bwd_split_node(hp_graph *g, int node);
/* linear's attribute a.i[HP_LINEAR_GEMM]: how its fp32 products pick a GEMM
 * (kernels/gemm.h hp_gemm_fp32_policy; 0 = OpenBLAS). */
#define HP_LINEAR_GEMM 7
int hp_op_is_linear_bwd(const hp_opdef *op); /* 1: op is linear_bwd (dy, x, W) -> (dx, dW, db) */
int hp_op_is_linear(const hp_opdef *op);     /* 1: op is linear (x, W[, b]) -> y */
int hp_op_is_xent(const hp_opdef *op);       /* 1: op is cross_entropy (logits, targets) -> (loss, probs, losses) */
/* Which input of a linear node (forward or backward) is its fp32 GEMM's
 * operand whose dtype decides the policy: 0 or 1; -1: not a linear operator. */
int hp_op_linear_gemm_input(const hp_opdef *op);
extern const hp_opdef hp_op_layernorm, hp_op_layernorm_bwd;
extern const hp_opdef hp_op_rmsnorm, hp_op_rmsnorm_bwd;
extern const hp_opdef hp_op_gelu, hp_op_gelu_bwd;
extern const hp_opdef hp_op_add;
extern const hp_opdef hp_op_swiglu, hp_op_swiglu_bwd;
extern const hp_opdef hp_op_attention, hp_op_attention_bwd;
extern const hp_opdef hp_op_rope, hp_op_rope_bwd;
extern const hp_opdef hp_op_xent, hp_op_xent_bwd;
/* ops/heads: grouped-query attention's repeated kv heads (see there) */
extern const hp_opdef hp_op_repeat_heads, hp_op_repeat_heads_bwd;
/* ops/moe: the Mixture-of-Experts layer (see there) */
extern const hp_opdef hp_op_moe_route, hp_op_moe_route_bwd, hp_op_moe_aux, hp_op_moe_aux_bwd, hp_op_moe_dispatch,
    hp_op_moe_dispatch_bwd, hp_op_grouped_linear, hp_op_grouped_linear_bwd, hp_op_moe_combine, hp_op_moe_combine_bwd;
/* grouped_linear's attributes: i[0] the first expert the local weight holds (its lowered form under expert
 * parallelism; ids outside the weight's experts give 0), i[1] 1 + the mesh axis its rows came over from
 * moe_ep_send (0: none; the sharding rules then let the weight be split by expert along it). */
#define HP_GROUPED_E0 0
#define HP_GROUPED_EP_AXIS 1
#define HP_GROUPED_SOURCES 2 /* with a 4th input (the rows' sources): G, the members they came from */
#define HP_MOE_MAX_SOURCES 4096
/* moe_aux's a.i[HP_MOE_PER_PART] and moe_route's a.i[HP_MOE_ROUTE_PER_PART] = 1: the balancing loss per part of
 * the batch (ops/moe; the deterministic mode: each slice's own, whatever the rank count) */
#define HP_MOE_PER_PART 2
#define HP_MOE_ROUTE_PER_PART 4
/* moe_dispatch's a.i[HP_MOE_DISPATCH_CHUNK] of a.i[HP_MOE_DISPATCH_CHUNKS] (> 1): one chunk of the rank's
 * tokens (parallel/moe_chunk) */
#define HP_MOE_DISPATCH_CHUNK 1
#define HP_MOE_DISPATCH_CHUNKS 2
/* ops/moe_ep: expert parallelism's token exchange (see there) */
extern const hp_opdef hp_op_moe_ep_send, hp_op_moe_ep_return, hp_op_moe_ep_resend;
/* What a MoE pass needs to know of an operator: its part in the layer. */
typedef enum {
    HP_MOE_ROLE_NONE,
    HP_MOE_ROLE_ROUTE,    /* moe_route */
    HP_MOE_ROLE_AUX,      /* moe_aux */
    HP_MOE_ROLE_DISPATCH, /* moe_dispatch */
    HP_MOE_ROLE_EXPERTS,  /* grouped_linear */
    HP_MOE_ROLE_ROWWISE,  /* row for row (gelu, cast): the experts' rows stay where they are */
    HP_MOE_ROLE_GATED,    /* row for row and takes the rows' ids as a second input (swiglu): only the leading
                           * rows with an id are computed */
    HP_MOE_ROLE_COMBINE,  /* moe_combine: the rows back to their tokens */
    HP_MOE_ROLE_SEND,
    HP_MOE_ROLE_RETURN,
    HP_MOE_ROLE_RESEND
} hp_moe_role;
hp_moe_role hp_op_moe_role(const hp_opdef *op);
/* ops/loss_fused: the LM head and the cross-entropy over vocabulary chunks (see there) */
extern const hp_opdef hp_op_linear_xent, hp_op_linear_xent_bwd;
extern const hp_opdef hp_op_cast; /* a.i[0]: the output dtype (ops/cast.c) */
int hp_op_is_cast(const hp_opdef *op); /* 1: op is the dtype cast */
int hp_op_is_add(const hp_opdef *op);  /* 1: op is the elementwise add (autodiff sums gradient parts with it) */

/* Local operators of per-rank programs (ops/vocab_parallel.c). */
extern const hp_opdef hp_op_embedding_vp, hp_op_embedding_vp_bwd, hp_op_embedding_vp_bwd_acc;
extern const hp_opdef hp_op_xent_vp_stats, hp_op_xent_vp_finish, hp_op_xent_vp_bwd;

/* Every operator record, for listings and lookups by name. */
const hp_opdef *const *hp_ops_all(int *count);

#endif
