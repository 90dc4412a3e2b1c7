/* layout/rules_moe: strategies of the Mixture-of-Experts operators
 * (ops/moe) per mesh axis: the tokens split along their first dimension
 * (the batch), every row-shaped output split alike (the dispatched rows
 * [N k, C] along theirs); the router's statistics
 * and z-loss become partial sums there, the experts' weights stay whole and
 * their gradients partial sums. The balancing loss takes its statistics
 * whole (summed over the ranks first), so its value is the batch's whatever
 * the split. Expert parallelism: along the axis the expert-parallel pass
 * (parallel/ep_pass) put moe_ep_send over, grouped_linear's rows are the ones
 * a member's own experts received, so there its weight is split by expert
 * (S(0)) and the weight's gradient is whole per expert (not partial); the
 * exchange operators themselves split their rows along every axis that
 * splits the tokens and are replicated along the others, never along the
 * exchange's own axis.
 *
 * Row orders (hp_rule_option.own_order): where the tokens are split, a
 * rank's dispatched rows are its own tokens grouped by expert, and the
 * exchange's rows are those its experts received: orders of the rank's own,
 * not pieces of the global rows; the experts' outputs and gradients follow
 * them, and the combine (and the dispatch's gradient) puts the rows back
 * per token, the weight's gradient sums over them (tensor_order). A capacity
 * decided on split tokens (the router's on each rank's, the exchange's on
 * each group's) depends on the split (per_piece); the router's top-k is a
 * discrete choice (discrete). */
#include "layout/rules_family.h"
#include "ops/ops.h"

#define S(d) hp_shard(d)
#define P hp_partial(HP_PARTIAL_SUM)

/* moe_route(x[N..., C], router[E, C]) -> (weights, index [N..., k], stats[2, E], zsum[1], scores [N..., k]) */
static hp_status route_opts(hp_rule_axis *ra) {
    if (hp_rule_in_ndim(ra, 0) > 1) {
        hp_rule_option *o = hp_rule_opt(ra);
        o->in[0] = o->out[0] = o->out[1] = o->out[4] = S(0);
        o->out[2] = o->out[3] = P;
        if (ra->n->a.f[0] > 0)
            o->per_piece = "its capacity factor drops the lowest scores among each rank's tokens, where one rank "
                           "ranks all the tokens at once";
        o->discrete = 1;
    }
    hp_rule_opt(ra)->discrete = 1;
    return HP_OK;
}

/* moe_route_bwd(dweights, dstats, dzsum, x, router, index) -> (dx, drouter partial); per part (HP_MOE_ROUTE_PER_PART)
 * the statistics' gradient is each part's own (partial) */
static hp_status route_bwd_opts(hp_rule_axis *ra) {
    if (hp_rule_in_ndim(ra, 3) > 1) {
        hp_rule_option *o = hp_rule_opt(ra);
        o->in[0] = o->in[3] = o->in[5] = o->out[0] = S(0);
        if (ra->n->a.i[HP_MOE_ROUTE_PER_PART]) o->in[1] = P;
        o->out[1] = P;
    }
    hp_rule_opt(ra);
    return HP_OK;
}

/* moe_aux(stats[, drops]) -> aux: whole (the batch's statistics), or per part (HP_MOE_PER_PART): partial in and out */
static hp_status aux_opts(hp_rule_axis *ra) {
    if (ra->n->a.i[HP_MOE_PER_PART]) {
        hp_rule_option *o = hp_rule_opt(ra);
        o->in[0] = o->in[1] = o->out[0] = o->out[1] = P;
    }
    hp_rule_opt(ra);
    return HP_OK;
}

/* moe_aux_bwd(daux, stats) -> dstats: whole, or per part (each part's gradient from its statistics) */
static hp_status aux_bwd_opts(hp_rule_axis *ra) {
    if (ra->n->a.i[HP_MOE_PER_PART]) {
        hp_rule_option *o = hp_rule_opt(ra);
        o->in[1] = o->out[0] = P;
    }
    hp_rule_opt(ra);
    return HP_OK;
}

/* moe_dispatch(x[N..., C], index[N..., k]) -> (xp[N k, C], eid[N k], rowof[N..., k]) */
static hp_status dispatch_opts(hp_rule_axis *ra) {
    if (hp_rule_in_ndim(ra, 0) > 1) {
        hp_rule_option *o = hp_rule_opt(ra);
        o->in[0] = o->in[1] = o->out[0] = o->out[1] = o->out[2] = S(0);
        o->own_order = 7; /* a rank's tokens grouped by expert; rowof indexes those rows */
        if (ra->n->a.i[HP_MOE_DISPATCH_CHUNKS] > 1) /* parallel/moe_chunk: a chunk of each rank's own tokens */
            o->per_piece = "each rank cuts its own tokens into the MoE chunks (--moe-chunks), so which tokens a "
                           "chunk holds depends on the split";
    }
    hp_rule_opt(ra);
    return HP_OK;
}

/* moe_dispatch_bwd(dxp, rowof) -> dx: per token again */
static hp_status dispatch_bwd_opts(hp_rule_axis *ra) {
    if (hp_rule_in_ndim(ra, 1) > 1) {
        hp_rule_option *o = hp_rule_opt(ra);
        o->in[0] = o->in[1] = o->out[0] = S(0);
        o->tensor_order = 1;
    }
    hp_rule_opt(ra)->tensor_order = 1;
    return HP_OK;
}

/* The mesh axis of the rows' exchange (grouped_linear's HP_GROUPED_EP_AXIS), -1 none. */
static int ep_axis_of(const hp_rule_axis *ra) { return (int)ra->n->a.i[HP_GROUPED_EP_AXIS] - 1; }

/* grouped_linear(xp[..., I], W[E, O..., I], eid[...]) -> y: the rows split, the weight whole; along the rows'
 * exchange axis the weight split by expert */
static hp_status grouped_opts(hp_rule_axis *ra) {
    if (ra->axis == ep_axis_of(ra)) {
        hp_rule_option *o = hp_rule_opt(ra);
        o->in[0] = o->in[1] = o->in[2] = o->in[3] = o->out[0] = S(0);
        return HP_OK;
    }
    {
        hp_rule_option *o = hp_rule_opt(ra);
        o->in[0] = o->in[2] = o->in[3] = o->out[0] = S(0); /* in[3]: the rows' sources, when given */
    }
    hp_rule_opt(ra);
    return HP_OK;
}

/* grouped_linear_bwd(dy, xp, W, eid[, src]) -> (dxp, dW partial; along the exchange axis dW split by expert) */
static hp_status grouped_bwd_opts(hp_rule_axis *ra) {
    if (ra->axis == ep_axis_of(ra)) {
        hp_rule_option *o = hp_rule_opt(ra);
        o->in[0] = o->in[1] = o->in[2] = o->in[3] = o->in[4] = o->out[0] = o->out[1] = S(0);
        o->tensor_order = 2; /* the weight's gradient: a sum over the rows, whatever their order */
        return HP_OK;
    }
    {
        hp_rule_option *o = hp_rule_opt(ra);
        o->in[0] = o->in[1] = o->in[3] = o->in[4] = o->out[0] = S(0);
        o->out[1] = P;
        o->tensor_order = 2;
    }
    hp_rule_opt(ra)->tensor_order = 2;
    return HP_OK;
}

/* moe_combine(yp[N k, C], weights, rowof [N..., k]) -> y[N..., C] */
static hp_status combine_opts(hp_rule_axis *ra) {
    if (hp_rule_in_ndim(ra, 1) > 1) {
        hp_rule_option *o = hp_rule_opt(ra);
        o->in[0] = o->in[1] = o->in[2] = o->out[0] = S(0);
        o->tensor_order = 1; /* per token again */
    }
    hp_rule_opt(ra)->tensor_order = 1;
    return HP_OK;
}

/* moe_combine_bwd(dy, yp, weights, rowof) -> (dyp, dweights) */
static hp_status combine_bwd_opts(hp_rule_axis *ra) {
    if (hp_rule_in_ndim(ra, 2) > 1) {
        hp_rule_option *o = hp_rule_opt(ra);
        o->in[0] = o->in[1] = o->in[2] = o->in[3] = o->out[0] = o->out[1] = S(0);
        o->tensor_order = 2; /* dweights: per token */
    }
    hp_rule_opt(ra)->tensor_order = 2;
    return HP_OK;
}

/* moe_ep_send(xp, eid[, scores, rowof]) -> (xr, er, src[, drops]), moe_ep_return / moe_ep_resend(rows, src, eid) -> rows: every value's
 * rows split alike, or (not along the exchange's own axis, a.i[2]) every value whole. Along its own axis the rows
 * are each member's own (what its experts received, or its dispatched rows back); a send with a capacity decides
 * it over the group's rows, so a split along another axis (the group a part of the tokens) changes it. */
static hp_status exchange_opts(hp_rule_axis *ra) {
    hp_rule_option *o = hp_rule_opt(ra);
    for (int k = 0; k < ra->n->nin; k++) o->in[k] = S(0);
    for (int k = 0; k < ra->n->nout; k++) o->out[k] = k == 3 ? P : S(0); /* send's drops: a count per member */
    int own = ra->axis == (int)ra->n->a.i[2];
    if (own) o->own_order = ((1u << ra->n->nout) - 1) & 7u;
    if (!own && hp_op_moe_role(ra->n->op) == HP_MOE_ROLE_SEND && ra->n->nin >= 4 && ra->n->a.f[0] > 0)
        o->per_piece = "its experts' owners apply the capacity factor to the rows of their group's tokens only, "
                       "where one rank ranks all the tokens at once";
    if (!own) hp_rule_opt(ra);
    return HP_OK;
}

static const hp_rule_family moe[] = {
    {&hp_op_moe_ep_send, exchange_opts, NULL},
    {&hp_op_moe_ep_return, exchange_opts, NULL},
    {&hp_op_moe_ep_resend, exchange_opts, NULL},
    {&hp_op_moe_route, route_opts, NULL},
    {&hp_op_moe_route_bwd, route_bwd_opts, NULL},
    {&hp_op_moe_aux, aux_opts, NULL},
    {&hp_op_moe_aux_bwd, aux_bwd_opts, NULL},
    {&hp_op_moe_dispatch, dispatch_opts, NULL},
    {&hp_op_moe_dispatch_bwd, dispatch_bwd_opts, NULL},
    {&hp_op_grouped_linear, grouped_opts, NULL},
    {&hp_op_grouped_linear_bwd, grouped_bwd_opts, NULL},
    {&hp_op_moe_combine, combine_opts, NULL},
    {&hp_op_moe_combine_bwd, combine_bwd_opts, NULL},
};

const hp_rule_family *hp_rules_moe(int *count) {
    *count = (int)(sizeof moe / sizeof moe[0]);
    return moe;
}
