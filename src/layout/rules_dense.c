/* layout/rules_dense: strategies of linear, layernorm / rmsnorm, GELU, SwiGLU,
 * add and cast, forward and backward, per mesh axis. "S(d)" is Shard(d), "P"
 * Partial(sum), "R" Replicate. */
#include "layout/rules_family.h"
#include "ops/ops.h"

#define S(d) hp_shard(d)
#define R hp_replicate()
#define P hp_partial(HP_PARTIAL_SUM)

/* linear(x[..., I], W[O..., I], b[O...]) -> y[..., O...] */
static hp_status linear_opts(hp_rule_axis *ra) {
    int xi = hp_rule_in_ndim(ra, 0), wn = hp_rule_in_ndim(ra, 1), hb = ra->n->nin == 3;
    hp_rule_option *o;
    for (int d = 0; d < xi - 1; d++) { /* batch split */
        o = hp_rule_opt(ra);
        o->in[0] = S(d), o->out[0] = S(d);
    }
    for (int j = 0; j < wn - 1; j++) { /* column parallel: output features split */
        o = hp_rule_opt(ra);
        o->in[1] = S(j), o->out[0] = S(xi - 1 + j);
        if (hb) o->in[2] = S(j);
    }
    /* row parallel: the contraction is split, terms add up (bias on one member) */
    o = hp_rule_opt(ra);
    o->in[0] = S(xi - 1), o->in[1] = S(wn - 1), o->out[0] = P;
    if (hb) o->in[2] = P;
    /* linear in x: a Partial x gives a Partial y */
    o = hp_rule_opt(ra);
    o->in[0] = P, o->out[0] = P;
    if (hb) o->in[2] = P;
    hp_rule_opt(ra);
    return HP_OK;
}

/* linear_bwd(dy, x, W) -> (dx, dW, db), mirroring the forward strategies */
static hp_status linear_bwd_opts(hp_rule_axis *ra) {
    int xi = hp_rule_in_ndim(ra, 1), wn = hp_rule_in_ndim(ra, 2);
    hp_rule_option *o;
    for (int d = 0; d < xi - 1; d++) {
        o = hp_rule_opt(ra);
        o->in[0] = S(d), o->in[1] = S(d);
        o->out[0] = S(d), o->out[1] = P, o->out[2] = P;
    }
    for (int j = 0; j < wn - 1; j++) {
        o = hp_rule_opt(ra);
        o->in[0] = S(xi - 1 + j), o->in[2] = S(j);
        o->out[0] = P, o->out[1] = S(j), o->out[2] = S(j);
    }
    o = hp_rule_opt(ra);
    o->in[1] = S(xi - 1), o->in[2] = S(wn - 1);
    o->out[0] = S(xi - 1), o->out[1] = S(wn - 1);
    hp_rule_opt(ra);
    return HP_OK;
}

/* layernorm(x, w, b) -> (y, mean, rstd); rmsnorm(x, w) -> (y, rstd): statistics
 * keep the leading dims of x, so any leading dim may be split. */
static hp_status norm_opts(hp_rule_axis *ra) {
    int xi = hp_rule_in_ndim(ra, 0);
    for (int d = 0; d < xi - 1; d++) {
        hp_rule_option *o = hp_rule_opt(ra);
        o->in[0] = S(d);
        for (int k = 0; k < ra->n->nout; k++) o->out[k] = S(d);
    }
    hp_rule_opt(ra);
    return HP_OK;
}

/* layernorm_bwd(dy, x, w, mean, rstd) -> (dx, dw, db);
 * rmsnorm_bwd(dy, x, w, rstd) -> (dx, dw): dw, db sum over rows. */
static hp_status norm_bwd_opts(hp_rule_axis *ra) {
    int xi = hp_rule_in_ndim(ra, 1);
    for (int d = 0; d < xi - 1; d++) {
        hp_rule_option *o = hp_rule_opt(ra);
        for (int k = 0; k < ra->n->nin; k++) o->in[k] = k == 2 ? R : S(d);
        o->out[0] = S(d);
        for (int k = 1; k < ra->n->nout; k++) o->out[k] = P;
    }
    hp_rule_opt(ra);
    return HP_OK;
}

/* elementwise (gelu(x), gelu_bwd(dy, x)): any split passes through when the
 * inputs agree; non-linear, so no Partial. */
static hp_status eltwise_opts(hp_rule_axis *ra) {
    int xi = hp_rule_in_ndim(ra, 0);
    for (int d = 0; d < xi; d++) {
        hp_rule_option *o = hp_rule_opt(ra);
        for (int k = 0; k < ra->n->nin; k++) o->in[k] = S(d);
        o->out[0] = S(d);
    }
    hp_rule_opt(ra);
    return HP_OK;
}

/* add(a, b): the same split in and out; Partial terms add up. */
static hp_status add_opts(hp_rule_axis *ra) {
    HP_TRY(eltwise_opts(ra));
    hp_rule_option *o = hp_rule_opt(ra);
    o->in[0] = o->in[1] = o->out[0] = P;
    return HP_OK;
}

/* swiglu(x[..., 2, H]) -> [..., H]: leading dims and H split; the gate/up dim not. */
static hp_status swiglu_opts(hp_rule_axis *ra) {
    int xi = hp_rule_in_ndim(ra, 0);
    hp_rule_option *o;
    for (int d = 0; d < xi - 2; d++) {
        o = hp_rule_opt(ra);
        o->in[0] = S(d), o->out[0] = S(d);
        if (d == 0) o->in[1] = S(0); /* the row ids, when given, split with the rows */
    }
    o = hp_rule_opt(ra);
    o->in[0] = S(xi - 1), o->out[0] = S(xi - 2);
    hp_rule_opt(ra);
    return HP_OK;
}

/* swiglu_bwd(dy[..., H], x[..., 2, H]) -> dx[..., 2, H] */
static hp_status swiglu_bwd_opts(hp_rule_axis *ra) {
    int xi = hp_rule_in_ndim(ra, 1);
    hp_rule_option *o;
    for (int d = 0; d < xi - 2; d++) {
        o = hp_rule_opt(ra);
        o->in[0] = o->in[1] = o->out[0] = S(d);
        if (d == 0) o->in[2] = S(0);
    }
    o = hp_rule_opt(ra);
    o->in[0] = S(xi - 2), o->in[1] = S(xi - 1), o->out[0] = S(xi - 1);
    hp_rule_opt(ra);
    return HP_OK;
}

static const hp_rule_family dense[] = {
    {&hp_op_linear, linear_opts, NULL},       {&hp_op_linear_bwd, linear_bwd_opts, NULL},
    {&hp_op_layernorm, norm_opts, NULL},      {&hp_op_layernorm_bwd, norm_bwd_opts, NULL},
    {&hp_op_rmsnorm, norm_opts, NULL},        {&hp_op_rmsnorm_bwd, norm_bwd_opts, NULL},
    {&hp_op_gelu, eltwise_opts, NULL},        {&hp_op_gelu_bwd, eltwise_opts, NULL},
    {&hp_op_add, add_opts, NULL},             {&hp_op_swiglu, swiglu_opts, NULL},
    {&hp_op_swiglu_bwd, swiglu_bwd_opts, NULL}, {&hp_op_cast, eltwise_opts, NULL},
};

const hp_rule_family *hp_rules_dense(int *count) {
    *count = (int)(sizeof dense / sizeof dense[0]);
    return dense;
}
