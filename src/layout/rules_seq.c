/* layout/rules_seq: strategies of attention, rotary embedding, token and
 * position embeddings and cross-entropy, forward and backward, per mesh axis;
 * and the check that a head split keeps whole heads on every rank. */
#include <stdio.h>

#include "layout/rules_family.h"
#include "ops/ops.h"

#define S(d) hp_shard(d)
#define R hp_replicate()
#define P hp_partial(HP_PARTIAL_SUM)

/* ---- heads: qkv[B, T, 3, C], head size a.i[0] ---- */

/* Does splitting C over this axis alone keep whole heads on every member? */
static int heads_split_ok(const hp_rule_axis *ra, int k) {
    int64_t C = ra->g->vals[ra->n->in[k]].shape.d[3], hs = ra->n->a.i[0];
    int parts = ra->m->size[ra->axis];
    int64_t chunk = (C + parts - 1) / parts;
    return hs > 0 && chunk % hs == 0;
}

/* May input k (qkv-shaped) be split by heads here? An input arriving split by
 * heads that cannot be is a plan mistake. */
static hp_status heads_allowed(int *ok, const hp_rule_axis *ra, int k) {
    *ok = heads_split_ok(ra, k);
    if (*ok || !ra->arriving || ra->arriving[k].kind != HP_SHARD || ra->arriving[k].dim != 3) return HP_OK;
    const hp_value *v = &ra->g->vals[ra->n->in[k]];
    int64_t C = v->shape.d[3], hs = ra->n->a.i[0];
    return hp_errorf("%s: input '%s' is S(3)@%s but %lld heads of size %lld cannot be split %d ways "
                     "(expected R or S(0) on '%s', or a head-aligned split)",
                     ra->n->name, v->name, ra->m->name[ra->axis], (long long)(hs > 0 ? C / hs : 0),
                     (long long)hs, ra->m->size[ra->axis], ra->m->name[ra->axis]);
}

/* attention(qkv) -> (y[B,T,C], att[B,NH,T,T]): batch or heads */
static hp_status attention_opts(hp_rule_axis *ra) {
    int ok;
    HP_TRY(heads_allowed(&ok, ra, 0));
    hp_rule_option *o = hp_rule_opt(ra);
    o->in[0] = o->out[0] = o->out[1] = S(0);
    if (ok) {
        o = hp_rule_opt(ra);
        o->in[0] = S(3), o->out[0] = S(2), o->out[1] = S(1);
    }
    hp_rule_opt(ra);
    return HP_OK;
}

/* attention_bwd(dy, qkv, att) -> dqkv */
static hp_status attention_bwd_opts(hp_rule_axis *ra) {
    int ok;
    HP_TRY(heads_allowed(&ok, ra, 1));
    hp_rule_option *o = hp_rule_opt(ra);
    o->in[0] = o->in[1] = o->in[2] = o->out[0] = S(0);
    if (ok) {
        o = hp_rule_opt(ra);
        o->in[0] = S(2), o->in[1] = S(3), o->in[2] = S(1), o->out[0] = S(3);
    }
    hp_rule_opt(ra);
    return HP_OK;
}

/* rope(qkv) -> qkv and rope_bwd(dqkv) -> dqkv: positions must stay whole */
static hp_status rope_opts(hp_rule_axis *ra) {
    int ok;
    HP_TRY(heads_allowed(&ok, ra, 0));
    hp_rule_option *o = hp_rule_opt(ra);
    o->in[0] = o->out[0] = S(0);
    if (ok) {
        o = hp_rule_opt(ra);
        o->in[0] = o->out[0] = S(3);
    }
    hp_rule_opt(ra);
    return HP_OK;
}

/* Across all axes: every rank's piece of C starts and ends on a head boundary. */
static hp_status heads_check_input(const hp_graph *g, int node, int k, const hp_layout *need,
                                   const hp_mesh *m) {
    const hp_node *n = &g->nodes[node];
    const hp_value *v = &g->vals[n->in[k]];
    int64_t hs = n->a.i[0];
    int split = 0;
    for (int a = 0; a < m->ndim; a++) split |= need[k].p[a].kind == HP_SHARD && need[k].p[a].dim == 3;
    if (!split) return HP_OK;
    int nr = hp_mesh_size(m);
    for (int r = 0; r < nr; r++) {
        hp_shape loc;
        int64_t off[HP_MAX_DIMS];
        hp_local_shape(&loc, off, &v->shape, &need[k], m, r);
        if (hs > 0 && loc.d[3] % hs == 0 && off[3] % hs == 0) continue;
        char ls[160];
        return hp_errorf("%s: input '%s' laid out as %s splits heads of size %lld: rank %d would hold "
                         "columns [%lld, %lld) of C = %lld",
                         n->name, v->name, hp_layout_str(ls, sizeof ls, &need[k], m), (long long)hs, r,
                         (long long)off[3], (long long)(off[3] + loc.d[3]), (long long)v->shape.d[3]);
    }
    return HP_OK;
}

static hp_status heads_check0(const hp_graph *g, int node, const hp_layout *need, const hp_mesh *m) {
    return heads_check_input(g, node, 0, need, m);
}

static hp_status heads_check1(const hp_graph *g, int node, const hp_layout *need, const hp_mesh *m) {
    return heads_check_input(g, node, 1, need, m);
}

/* ---- embeddings ---- */

/* embedding(ids[...], table[V, C]) -> [..., C] */
static hp_status embedding_opts(hp_rule_axis *ra) {
    int ni = hp_rule_in_ndim(ra, 0);
    hp_rule_option *o;
    for (int d = 0; d < ni; d++) {
        o = hp_rule_opt(ra);
        o->in[0] = o->out[0] = S(d);
    }
    o = hp_rule_opt(ra); /* vocabulary parallel: rows a rank lacks give 0 */
    o->in[1] = S(0), o->out[0] = P;
    o = hp_rule_opt(ra); /* channels split */
    o->in[1] = S(1), o->out[0] = S(ni);
    hp_rule_opt(ra);
    return HP_OK;
}

/* The embedding table's placement on this axis, seen from a backward node
 * (through its forward node); Replicate when unknown. */
static hp_placement table_placement(const hp_rule_axis *ra) {
    int fwd = ra->n->fwd_node;
    if (ra->val && fwd >= 0 && ra->g->nodes[fwd].nin > 1) return ra->val[ra->g->nodes[fwd].in[1]].p[ra->axis];
    return R;
}

/* embedding_bwd(dy[..., C], ids[...]) -> dtable[V, C]; the table gradient
 * follows the table's own layout on this axis where it can. */
static hp_status embedding_bwd_opts(hp_rule_axis *ra) {
    int ni = hp_rule_in_ndim(ra, 1);
    hp_placement tl = table_placement(ra);
    hp_rule_option *o;
    for (int d = 0; d < ni; d++) { /* batch split: every rank scatters into the whole table */
        o = hp_rule_opt(ra);
        o->in[0] = o->in[1] = S(d), o->out[0] = P;
    }
    o = hp_rule_opt(ra); /* linear in dy */
    o->in[0] = P, o->out[0] = P;
    if (tl.kind == HP_SHARD && tl.dim == 0) { /* vocabulary parallel: own rows only */
        o = hp_rule_opt(ra);
        o->out[0] = S(0);
        return HP_OK;
    }
    if (tl.kind == HP_SHARD && tl.dim == 1) {
        o = hp_rule_opt(ra);
        o->in[0] = S(ni), o->out[0] = S(1);
    }
    hp_rule_opt(ra);
    return HP_OK;
}

/* embedding_bwd_acc(dy[..., C], ids[...], dsofar[V, C]) -> dtable[V, C]:
 * the running sum dsofar plus the rows of dy, so dsofar takes the output's
 * placement. Vocabulary parallel (the table split by rows): every rank adds
 * the rows it holds to its piece of the running sum (the compile pass lowers
 * it to embedding_vp_bwd_acc). */
static hp_status embedding_bwd_acc_opts(hp_rule_axis *ra) {
    int ni = hp_rule_in_ndim(ra, 1);
    hp_placement tl = table_placement(ra);
    hp_rule_option *o;
    if (tl.kind == HP_SHARD && tl.dim == 0) { /* vocabulary parallel: own rows only */
        o = hp_rule_opt(ra);
        o->in[2] = S(0), o->out[0] = S(0);
    }
    for (int d = 0; d < ni; d++) { /* batch split: each rank adds its rows to its term */
        o = hp_rule_opt(ra);
        o->in[0] = o->in[1] = S(d), o->in[2] = P, o->out[0] = P;
    }
    o = hp_rule_opt(ra); /* linear in (dy, dsofar) */
    o->in[0] = o->in[2] = o->out[0] = P;
    o = hp_rule_opt(ra); /* channels split */
    o->in[0] = S(ni), o->in[2] = o->out[0] = S(1);
    hp_rule_opt(ra);
    return HP_OK;
}

/* add_pos(x[B,T,C], pos[P,C]) -> [B,T,C] (positions must stay whole) */
static hp_status add_pos_opts(hp_rule_axis *ra) {
    hp_rule_option *o = hp_rule_opt(ra);
    o->in[0] = o->out[0] = S(0);
    o = hp_rule_opt(ra);
    o->in[0] = S(2), o->in[1] = S(1), o->out[0] = S(2);
    o = hp_rule_opt(ra);
    o->in[0] = o->in[1] = o->out[0] = P;
    hp_rule_opt(ra);
    return HP_OK;
}

/* add_pos_bwd(dy[B,T,C]) -> dpos[P,C] */
static hp_status add_pos_bwd_opts(hp_rule_axis *ra) {
    hp_rule_option *o = hp_rule_opt(ra);
    o->in[0] = S(0), o->out[0] = P;
    o = hp_rule_opt(ra);
    o->in[0] = S(2), o->out[0] = S(1);
    o = hp_rule_opt(ra);
    o->in[0] = o->out[0] = P;
    hp_rule_opt(ra);
    return HP_OK;
}

/* concat(a, b) along i[0]: any other dimension split alike, or both partial */
static hp_status concat_opts(hp_rule_axis *ra) {
    int nd = hp_rule_in_ndim(ra, 0), dim = (int)ra->n->a.i[0];
    hp_rule_option *o;
    for (int d = 0; d < nd; d++) {
        if (d == dim) continue;
        o = hp_rule_opt(ra);
        o->in[0] = o->in[1] = o->out[0] = S(d);
    }
    o = hp_rule_opt(ra);
    o->in[0] = o->in[1] = o->out[0] = P;
    hp_rule_opt(ra);
    return HP_OK;
}

/* concat_bwd(dy) -> (da, db): the slices keep dy's split (never along the joined dimension) */
static hp_status concat_bwd_opts(hp_rule_axis *ra) {
    int nd = hp_rule_in_ndim(ra, 0), dim = (int)ra->n->a.i[0];
    hp_rule_option *o;
    for (int d = 0; d < nd; d++) {
        if (d == dim) continue;
        o = hp_rule_opt(ra);
        o->in[0] = o->out[0] = o->out[1] = S(d);
    }
    o = hp_rule_opt(ra);
    o->in[0] = o->out[0] = o->out[1] = P;
    hp_rule_opt(ra);
    return HP_OK;
}

/* pos_table(table[P, C]) -> [B, T, C]: the channels split with the table's (no free batch split: the
 * propagation would take it on any axis, a pipeline's too; a reader that wants the batch split slices it
 * locally) */
static hp_status pos_table_opts(hp_rule_axis *ra) {
    hp_rule_option *o = hp_rule_opt(ra);
    o->in[0] = S(1), o->out[0] = S(2);
    o = hp_rule_opt(ra);
    o->in[0] = o->out[0] = P;
    hp_rule_opt(ra);
    return HP_OK;
}

/* ---- repeated heads (grouped-query attention): i[0] = head size, i[1] = copies ---- */

/* repeat_heads(x[..., Hkv hs]) -> [..., Hkv rep hs] and its backward (dy -> dx): any other dimension split
 * alike; the heads' dimension split by whole kv heads (each rank's copies are its kv heads'); partial sums
 * pass through (the op is linear) */
static hp_status repeat_heads_any(hp_rule_axis *ra, int bwd) {
    const hp_value *x = &ra->g->vals[ra->n->in[0]];
    int xn = x->shape.ndim;
    int64_t hs = ra->n->a.i[0], rep = ra->n->a.i[1], hkv = x->shape.d[xn - 1] / hs / (bwd ? rep : 1);
    hp_rule_option *o;
    for (int d = 0; d < xn - 1; d++) {
        o = hp_rule_opt(ra);
        o->in[0] = o->out[0] = S(d);
    }
    if (hkv % ra->m->size[ra->axis] == 0) {
        o = hp_rule_opt(ra);
        o->in[0] = o->out[0] = S(xn - 1);
    } else if (ra->arriving && ra->arriving[0].kind == HP_SHARD && ra->arriving[0].dim == xn - 1) {
        return hp_errorf("%s: input '%s' is S(%d)@%s but its %lld kv heads cannot be split %d ways (the axis must "
                         "divide the kv heads)", ra->n->name, x->name, xn - 1, ra->m->name[ra->axis], (long long)hkv,
                         ra->m->size[ra->axis]);
    }
    o = hp_rule_opt(ra);
    o->in[0] = o->out[0] = P;
    hp_rule_opt(ra);
    return HP_OK;
}

static hp_status repeat_heads_opts(hp_rule_axis *ra) { return repeat_heads_any(ra, 0); }
static hp_status repeat_heads_bwd_opts(hp_rule_axis *ra) { return repeat_heads_any(ra, 1); }

/* ---- cross-entropy: i[0] = V, i[1] = global number of positions ---- */

/* cross_entropy(logits[..., Vp], targets[...]) -> (loss[1], probs, losses) */
static hp_status xent_opts(hp_rule_axis *ra) {
    int ln = hp_rule_in_ndim(ra, 0), tn = hp_rule_in_ndim(ra, 1);
    hp_rule_option *o;
    if (tn == ln - 1)
        for (int d = 0; d < ln - 1; d++) { /* rows split: each rank's loss is its share of the mean */
            o = hp_rule_opt(ra);
            o->in[0] = o->in[1] = S(d);
            o->out[0] = P, o->out[1] = o->out[2] = S(d);
        }
    o = hp_rule_opt(ra); /* vocabulary parallel (the op's own collectives) */
    o->in[0] = S(ln - 1), o->out[1] = S(ln - 1), o->parallel_xent = 1;
    hp_rule_opt(ra);
    return HP_OK;
}

/* cross_entropy_bwd(dloss[1], probs, targets) -> dlogits */
static hp_status xent_bwd_opts(hp_rule_axis *ra) {
    int ln = hp_rule_in_ndim(ra, 1), tn = hp_rule_in_ndim(ra, 2);
    hp_rule_option *o;
    if (tn == ln - 1)
        for (int d = 0; d < ln - 1; d++) {
            o = hp_rule_opt(ra);
            o->in[1] = o->in[2] = o->out[0] = S(d);
        }
    o = hp_rule_opt(ra);
    o->in[1] = o->out[0] = S(ln - 1), o->parallel_xent = 1;
    hp_rule_opt(ra);
    return HP_OK;
}

/* linear_cross_entropy(x[..., C], W[Vp, C], targets[...]) -> (loss[1], lse, losses): rows split, or whole (a
 * vocabulary-sharded weight is gathered: the chunked loss has no vocabulary-parallel form) */
static hp_status linear_xent_opts(hp_rule_axis *ra) {
    int xn = hp_rule_in_ndim(ra, 0), tn = hp_rule_in_ndim(ra, 2);
    hp_rule_option *o;
    if (tn == xn - 1)
        for (int d = 0; d < xn - 1; d++) {
            o = hp_rule_opt(ra);
            o->in[0] = o->in[2] = S(d);
            o->out[0] = P, o->out[1] = o->out[2] = S(d);
        }
    hp_rule_opt(ra);
    return HP_OK;
}

/* linear_cross_entropy_bwd(dloss[1], x, W, targets, lse) -> (dx, dW): rows split, the weight's gradient a
 * partial sum */
static hp_status linear_xent_bwd_opts(hp_rule_axis *ra) {
    int xn = hp_rule_in_ndim(ra, 1), tn = hp_rule_in_ndim(ra, 3);
    hp_rule_option *o;
    if (tn == xn - 1)
        for (int d = 0; d < xn - 1; d++) {
            o = hp_rule_opt(ra);
            o->in[1] = o->in[3] = o->in[4] = S(d);
            o->out[0] = S(d), o->out[1] = P;
        }
    hp_rule_opt(ra);
    return HP_OK;
}

static const hp_rule_family seq[] = {
    {&hp_op_attention, attention_opts, heads_check0},
    {&hp_op_attention_bwd, attention_bwd_opts, heads_check1},
    {&hp_op_rope, rope_opts, heads_check0},
    {&hp_op_rope_bwd, rope_opts, heads_check0},
    {&hp_op_embedding, embedding_opts, NULL},
    {&hp_op_embedding_bwd, embedding_bwd_opts, NULL},
    {&hp_op_embedding_bwd_acc, embedding_bwd_acc_opts, NULL},
    {&hp_op_add_pos, add_pos_opts, NULL},
    {&hp_op_add_pos_bwd, add_pos_bwd_opts, NULL},
    {&hp_op_concat, concat_opts, NULL},
    {&hp_op_concat_bwd, concat_bwd_opts, NULL},
    {&hp_op_pos_table, pos_table_opts, NULL},
    {&hp_op_xent, xent_opts, NULL},
    {&hp_op_xent_bwd, xent_bwd_opts, NULL},
    {&hp_op_repeat_heads, repeat_heads_opts, NULL},
    {&hp_op_repeat_heads_bwd, repeat_heads_bwd_opts, NULL},
    {&hp_op_linear_xent, linear_xent_opts, NULL},
    {&hp_op_linear_xent_bwd, linear_xent_bwd_opts, NULL},
};

const hp_rule_family *hp_rules_seq(int *count) {
    *count = (int)(sizeof seq / sizeof seq[0]);
    return seq;
}
