/* parallel/comm_ops: the operators that communicate inside per-rank programs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/rank.h"
#include "parallel/redistribute.h"
#include "optim/sumsq_exact.h"

int hp_rank_ctx_add_plan(hp_rank_ctx *c, const hp_redist *plan) {
    if (c->nplans == c->capplans) {
        int cap = c->capplans ? 2 * c->capplans : 16;
        hp_redist *p = realloc(c->plans, sizeof *p * (size_t)cap);
        if (!p) return -1;
        c->plans = p;
        c->capplans = cap;
    }
    c->plans[c->nplans] = *plan;
    return c->nplans++;
}

hp_status hp_rank_ctx_alloc(hp_rank_ctx *c) {
    size_t need = 0;
    for (int i = 0; i < c->nplans; i++) {
        size_t s = hp_redistribute_scratch(&c->plans[i], c->mesh);
        if (s > need) need = s;
    }
    free(c->scratch);
    c->scratch = malloc(sizeof(float) * (need ? need : 1));
    if (!c->scratch) return hp_errorf("rank %d: cannot allocate %zu MB of redistribution scratch", c->rank, need * 4 >> 20);
    memset(c->scratch, 0, sizeof(float) * (need ? need : 1));
    c->scratch_floats = need;
    int ns = c->nslots > 0 ? c->nslots : 1, nw = c->world_size > 0 ? c->world_size : 1;
    c->reqs = calloc((size_t)ns, sizeof *c->reqs);
    c->args = calloc((size_t)ns, sizeof *c->args);
    c->tens = calloc((size_t)ns, sizeof *c->tens);
    /* the optimizer norm's partials: a double per rank, or the exact accumulator's words */
    c->gathered = calloc((size_t)nw * (c->tree ? HP_SUMSQ_EXACT_WORDS : 1), sizeof *c->gathered);
    if (!c->reqs || !c->args || !c->tens || !c->gathered) return hp_errorf("rank %d: out of memory", c->rank);
    return HP_OK;
}

void hp_rank_ctx_free(hp_rank_ctx *c) {
    free(c->plans);
    free(c->scratch);
    free(c->reqs);
    free(c->args);
    free(c->tens);
    free(c->gathered);
    c->plans = NULL;
    c->scratch = NULL;
    c->reqs = NULL;
    c->args = NULL;
    c->tens = NULL;
    c->gathered = NULL;
    c->nplans = c->capplans = 0;
}

static hp_comm_args all_reduce_args(const hp_rank_ctx *c, const hp_redist_step *s, hp_comm_tensor *t, hp_dtype dt) {
    return (hp_comm_args){.kind = HP_COMM_ALL_REDUCE, .dtype = dt,
                          .op = s->op == HP_PARTIAL_AVG ? HP_COMM_AVG : HP_COMM_SUM, .t = t, .nt = 1, .tree = c->tree};
}

static void redistribute_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    hp_rank_ctx *c = k->rank;
    const hp_redist *plan = &c->plans[n->a.i[0]];
    if (c->tree && hp_redist_plan_async(plan)) { /* one all-reduce: summed as a tree */
        hp_comm_tensor t = {out[0].data, in[0].data, hp_shape_numel(&in[0].shape)};
        hp_comm_args a = all_reduce_args(c, &plan->step[0], &t, in[0].dtype);
        hp_status st = hp_comm_run(c->comm, hp_mesh_comm_group(c->mc, plan->step[0].axis, c->rank), &a);
        if (st) *k->err = st;
        return;
    }
    hp_status st = hp_redistribute_dt(c->comm, c->mc, plan, out[0].data, in[0].data, in[0].dtype, c->scratch, c->rank);
    if (st) *k->err = st;
}

static double redistribute_bytes(const hp_graph *g, const hp_node *n) {
    (void)g;
    return (double)n->a.f[0];
}

/* A descriptor's defaults: blocking, no group detail, no pair, nothing checked. */
static hp_coll_desc desc_of(hp_coll_kind kind, hp_coll_group group, double bytes) {
    return (hp_coll_desc){.kind = kind, .role = HP_COLL_BLOCKING, .group = group, .axis = -1, .plan = -1,
                          .unit = -1, .pair = HP_COLL_PAIR_NONE, .pair_key = -1, .bytes = bytes};
}

/* a.i[0]: the plan; a.i[1]: the request slot once split; a.f[0]: the plan's bytes */
static void redistribute_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    (void)g;
    *d = desc_of(HP_COLL_REDISTRIBUTE, HP_COLL_GROUP_PLAN, (double)n->a.f[0]);
    d->plan = (int)n->a.i[0];
    d->grad = n->phase == HP_PHASE_BWD && n->a.i[HP_REDIST_GRAD];
    d->check = HP_COLL_CHECK_VALUE;
}

const hp_opdef hp_op_redistribute = {.name = "redistribute", .nout = 1, .communicates = 1, .run = redistribute_run,
                                     .bytes = redistribute_bytes, .describe = redistribute_describe};

static void all_gather_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    hp_rank_ctx *c = k->rank;
    hp_comm_group *grp = hp_mesh_comm_group(c->mc, (int)n->a.i[0], c->rank);
    hp_status st = hp_comm_all_gather(c->comm, grp, out[0].data, in[0].data, hp_shape_numel(&in[0].shape), NULL, in[0].dtype);
    if (st) *k->err = st;
}

static double all_gather_bytes(const hp_graph *g, const hp_node *n) {
    return (double)hp_dtype_size(g->vals[n->out[0]].dtype) * (double)hp_val_numel(g, n->out[0]);
}

/* a.i[0]: the mesh axis */
static void all_gather_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    *d = desc_of(HP_COLL_ALL_GATHER, HP_COLL_GROUP_AXIS, all_gather_bytes(g, n));
    d->axis = (int)n->a.i[0];
    d->purpose = "cross-entropy statistics";
}

const hp_opdef hp_op_mesh_all_gather = {.name = "all_gather", .nout = 1, .communicates = 1, .run = all_gather_run,
                                        .bytes = all_gather_bytes, .describe = all_gather_describe};

/* ---- start / wait ---- */

int hp_redist_plan_async(const hp_redist *plan) {
    return plan->nsteps == 1 && plan->step[0].kind == HP_RD_ALL_REDUCE &&
           (plan->step[0].op == HP_PARTIAL_SUM || plan->step[0].op == HP_PARTIAL_AVG);
}

static void redistribute_start_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    hp_rank_ctx *c = k->rank;
    const hp_redist *plan = &c->plans[n->a.i[0]];
    int slot = (int)n->a.i[1];
    c->reqs[slot] = NULL;
    if (!hp_redist_plan_async(plan)) {
        redistribute_run(k, n, in, out);
        return;
    }
    const hp_redist_step *s = &plan->step[0];
    c->tens[slot] = (hp_comm_tensor){out[0].data, in[0].data, hp_shape_numel(&in[0].shape)};
    c->args[slot] = all_reduce_args(c, s, &c->tens[slot], in[0].dtype);
    hp_status st = hp_comm_start(&c->reqs[slot], c->comm, hp_mesh_comm_group(c->mc, s->axis, c->rank), &c->args[slot]);
    if (st) *k->err = st;
}

static void redistribute_wait_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)in, (void)out;
    hp_rank_ctx *c = k->rank;
    int slot = (int)n->a.i[1];
    hp_status st = hp_comm_wait(c->reqs[slot]);
    c->reqs[slot] = NULL;
    if (st) *k->err = st;
}

/* the start and its wait carry the same attributes: the pair is the slot a.i[1] */
static void redistribute_half(hp_coll_desc *d, const hp_graph *g, const hp_node *n, hp_coll_role role) {
    redistribute_describe(d, g, n);
    d->role = role;
    d->pair = HP_COLL_PAIR_SLOT;
    d->pair_key = (int)n->a.i[1];
    d->check = HP_COLL_CHECK_NONE;
}

static void redistribute_start_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    redistribute_half(d, g, n, HP_COLL_START);
}

static void redistribute_wait_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    redistribute_half(d, g, n, HP_COLL_WAIT);
}

const hp_opdef hp_op_redistribute_start = {.name = "redistribute_start", .nout = 1, .communicates = 1,
                                           .run = redistribute_start_run, .bytes = redistribute_bytes,
                                           .describe = redistribute_start_describe};
const hp_opdef hp_op_redistribute_wait = {.name = "redistribute_wait", .nout = 0, .communicates = 1,
                                          .run = redistribute_wait_run, .describe = redistribute_wait_describe};

/* ---- the optimizer norm's sum over ranks ---- */

static void sumsq_combine_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)n;
    hp_rank_ctx *c = k->rank;
    hp_status st = hp_comm_all_gather(c->comm, c->world_group, c->gathered, in[0].data, 2, NULL, HP_F32);
    if (st) {
        *k->err = st;
        return;
    }
    float total = (float)c->gathered[0];
    for (int r = 1; r < c->world_size; r++) total += (float)c->gathered[r];
    *(double *)out[0].data = (double)total;
}

/* i[0] = the world size: each rank sends its 8 bytes to every other */
static double sumsq_combine_bytes(const hp_graph *g, const hp_node *n) {
    (void)g;
    return 8.0 * (double)(n->a.i[0] - 1);
}

static void sumsq_combine_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    *d = desc_of(HP_COLL_ALL_GATHER, HP_COLL_GROUP_WORLD, sumsq_combine_bytes(g, n));
    d->purpose = "gradient norm";
}

const hp_opdef hp_op_sumsq_combine = {.name = "sumsq_combine", .nout = 1, .communicates = 1,
                                      .run = sumsq_combine_run, .bytes = sumsq_combine_bytes,
                                      .describe = sumsq_combine_describe};

/* The deterministic mode's: every rank's exact accumulator gathered bytewise
 * and merged (integer sums, any order), read as one double (optim/sumsq_exact). */
static void sumsq_combine_exact_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)n;
    hp_rank_ctx *c = k->rank;
    hp_sumsq_exact *all = (hp_sumsq_exact *)(void *)c->gathered, total;
    if (c->world_size > 1) {
        hp_status st = hp_comm_all_gather(c->comm, c->world_group, all, in[0].data, 2 * HP_SUMSQ_EXACT_WORDS, NULL,
                                          HP_F32);
        if (st) {
            *k->err = st;
            return;
        }
    } else {
        memcpy(all, in[0].data, sizeof *all);
    }
    hp_sumsq_exact_clear(&total);
    for (int r = 0; r < (c->world_size > 1 ? c->world_size : 1); r++) hp_sumsq_exact_merge(&total, &all[r]);
    *(double *)out[0].data = hp_sumsq_exact_value(&total);
}

static double sumsq_combine_exact_bytes(const hp_graph *g, const hp_node *n) {
    (void)g;
    return 8.0 * HP_SUMSQ_EXACT_WORDS * (double)(n->a.i[0] - 1);
}

const hp_opdef hp_op_sumsq_combine_exact = {.name = "sumsq_combine_exact", .nout = 1, .communicates = 1,
                                            .run = sumsq_combine_exact_run, .bytes = sumsq_combine_exact_bytes};
