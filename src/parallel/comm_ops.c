/* parallel/comm_ops: the operators that communicate inside per-rank programs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
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
    free(c->scratch); /* page-aligned and touched, as the runtime's other buffers (core/alloc) */
    c->scratch = hp_alloc_zeroed(sizeof(float) * (need ? need : 1));
    if (!c->scratch) return hp_errorf("rank %d: cannot allocate %zu MB of redistribution scratch", c->rank, need * 4 >> 20);
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
                          .unit = -1, .peer = -1, .pair = HP_COLL_PAIR_NONE, .pair_key = -1, .bytes = bytes};
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

/* i[0] ranks, each sending its accumulator's bytes to every other (none on one rank: no transfer) */
static void sumsq_combine_exact_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    *d = desc_of(HP_COLL_ALL_GATHER, HP_COLL_GROUP_WORLD, sumsq_combine_exact_bytes(g, n));
    d->purpose = "gradient norm, exact";
}

const hp_opdef hp_op_sumsq_combine_exact = {.name = "sumsq_combine_exact", .nout = 1, .communicates = 1,
                                            .run = sumsq_combine_exact_run, .bytes = sumsq_combine_exact_bytes,
                                            .describe = sumsq_combine_exact_describe};

/* ---- point to point and the all-to-all with counts: start / wait ---- */

/* Starts node n's call a on its slot i[1] along mesh axis i[0]; the slot
 * keeps the tensor and the arguments until the wait. */
static void start_on_slot(const hp_kctx *k, const hp_node *n, hp_comm_args a, hp_comm_tensor t) {
    hp_rank_ctx *c = k->rank;
    int slot = (int)n->a.i[1];
    c->tens[slot] = t;
    c->args[slot] = a;
    c->args[slot].t = &c->tens[slot];
    c->reqs[slot] = NULL;
    int axis = (int)n->a.i[0];
    hp_comm_group *grp = n->a.i[HP_P2P_CHANNEL] ? hp_mesh_comm_group_back(c->mc, axis, c->rank)
                                               : hp_mesh_comm_group(c->mc, axis, c->rank);
    if (!grp) {
        *k->err = hp_errorf("%s: rank %d has no %sgroup along mesh axis %d", n->op->name, c->rank,
                            n->a.i[HP_P2P_CHANNEL] ? "second " : "", axis);
        return;
    }
    hp_status st = hp_comm_start(&c->reqs[slot], c->comm, grp, &c->args[slot]);
    if (st) *k->err = st;
}

/* in[0]: x, sent whole to member i[2] */
static void send_start_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)out;
    hp_comm_args a = {.kind = HP_COMM_SEND, .dtype = in[0].dtype, .peer = (int)n->a.i[2], .nt = 1};
    start_on_slot(k, n, a, (hp_comm_tensor){NULL, in[0].data, hp_shape_numel(&in[0].shape)});
}

/* out[0]: y, filled whole from member i[2] */
static void recv_start_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)in;
    hp_comm_args a = {.kind = HP_COMM_RECV, .dtype = out[0].dtype, .peer = (int)n->a.i[2], .nt = 1};
    start_on_slot(k, n, a, (hp_comm_tensor){out[0].data, NULL, hp_shape_numel(&out[0].shape)});
}

/* in[0]: x (the pieces for each member in member order), out[0]: y (the
 * pieces from each member in member order); i[3]: the blob of the counts,
 * int64 [2 * i[4]]: elements sent to each member, then received from each */
static void all_to_all_v_start_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    const int64_t *counts = hp_graph_blob_at(k->graph, (long)n->a.i[3]);
    hp_comm_args a = {.kind = HP_COMM_ALL_TO_ALL, .dtype = in[0].dtype, .nt = 1, .counts = counts,
                      .recv_counts = counts + n->a.i[4]};
    start_on_slot(k, n, a, (hp_comm_tensor){out[0].data, in[0].data, 0});
}

/* the starts' and their wait's descriptor: a.f[0] the bytes, i[5] the kind (the wait's) */
static void slot_describe(hp_coll_desc *d, const hp_node *n, hp_coll_kind kind, hp_coll_role role) {
    *d = desc_of(kind, HP_COLL_GROUP_AXIS, n->a.f[0]);
    d->role = role;
    d->axis = (int)n->a.i[0];
    d->pair = HP_COLL_PAIR_SLOT;
    d->pair_key = (int)n->a.i[1];
    if (kind == HP_COLL_SEND || kind == HP_COLL_RECV) d->peer = (int)n->a.i[2];
}

static void send_start_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    (void)g;
    slot_describe(d, n, HP_COLL_SEND, HP_COLL_START);
}

static void recv_start_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    (void)g;
    slot_describe(d, n, HP_COLL_RECV, HP_COLL_START);
}

/* in[0]: x (this member's piece), out[0]: y (every member's piece in member
 * order); i[3]: the blob of the counts, int64 [i[4]]: elements from each member */
static void all_gather_v_start_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    const int64_t *counts = hp_graph_blob_at(k->graph, (long)n->a.i[3]);
    hp_comm_args a = {.kind = HP_COMM_ALL_GATHER, .dtype = in[0].dtype, .nt = 1, .counts = counts};
    start_on_slot(k, n, a, (hp_comm_tensor){out[0].data, in[0].data, 0});
}

static void all_gather_v_start_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    (void)g;
    slot_describe(d, n, HP_COLL_ALL_GATHER, HP_COLL_START);
}

static void all_to_all_v_start_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    (void)g;
    slot_describe(d, n, HP_COLL_ALL_TO_ALL, HP_COLL_START);
}

static void slot_wait_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    (void)g;
    slot_describe(d, n, (hp_coll_kind)n->a.i[5], HP_COLL_WAIT);
}

static double slot_bytes(const hp_graph *g, const hp_node *n) {
    (void)g;
    return n->a.f[0];
}

const hp_opdef hp_op_send_start = {.name = "send_start", .communicates = 1, .run = send_start_run,
                                   .bytes = slot_bytes, .describe = send_start_describe};
const hp_opdef hp_op_recv_start = {.name = "recv_start", .nout = 1, .communicates = 1, .run = recv_start_run,
                                   .bytes = slot_bytes, .describe = recv_start_describe};
const hp_opdef hp_op_all_to_all_v_start = {.name = "all_to_all_v_start", .nout = 1, .communicates = 1,
                                           .run = all_to_all_v_start_run, .bytes = slot_bytes,
                                           .describe = all_to_all_v_start_describe};
const hp_opdef hp_op_all_gather_v_start = {.name = "all_gather_v_start", .nout = 1, .communicates = 1,
                                           .run = all_gather_v_start_run, .bytes = slot_bytes,
                                           .describe = all_gather_v_start_describe};
const hp_opdef hp_op_slot_wait = {.name = "slot_wait", .communicates = 1, .run = redistribute_wait_run,
                                  .describe = slot_wait_describe};

/* in[0]: x; out[0]: the staging copy (persistent, x's shape) sent to member i[2]: the slot's previous send
 * is waited first (its receiver has it by then in any valid pipeline order), x is copied, the send starts */
static void send_staged_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    hp_rank_ctx *c = k->rank;
    int slot = (int)n->a.i[1];
    if (c->reqs[slot]) {
        hp_status st = hp_comm_wait(c->reqs[slot]);
        c->reqs[slot] = NULL;
        if (st) {
            *k->err = st;
            return;
        }
    }
    size_t nb = (size_t)hp_shape_numel(&in[0].shape) * hp_dtype_size(in[0].dtype);
    memcpy(out[0].data, in[0].data, nb);
    hp_comm_args a = {.kind = HP_COMM_SEND, .dtype = in[0].dtype, .peer = (int)n->a.i[2], .nt = 1};
    start_on_slot(k, n, a, (hp_comm_tensor){NULL, out[0].data, hp_shape_numel(&in[0].shape)});
}

static void send_staged_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    (void)g;
    *d = desc_of(HP_COLL_SEND, HP_COLL_GROUP_AXIS, n->a.f[0]);
    d->axis = (int)n->a.i[0];
    d->peer = (int)n->a.i[2];
    d->purpose = "pipeline send (waited at its next call)";
}

const hp_opdef hp_op_send_staged = {.name = "send_staged", .nout = 1, .communicates = 1, .run = send_staged_run,
                                    .bytes = slot_bytes, .describe = send_staged_describe};

int hp_comm_op_send_staged(hp_graph *g, int x, int axis, int peer, int slot, hp_phase ph) {
    char nm[HP_NAME_LEN];
    snprintf(nm, sizeof nm, "%.80s.sendbuf", g->vals[x].name);
    int buf = hp_graph_value(g, HP_V_ACT, g->vals[x].dtype, g->vals[x].shape, nm);
    if (buf < 0) return -1;
    g->vals[buf].persistent = 1, g->vals[buf].no_grad = 1;
    hp_attrs a = {{axis, slot, peer}, {(double)hp_dtype_size(g->vals[x].dtype) * (double)hp_val_numel(g, x)}};
    return hp_graph_node_into(g, &hp_op_send_staged, &x, 1, &buf, 1, &a, ph, -1);
}

/* The start node and its wait (reading `reads`, the values the call uses). */
static int emit_pair(hp_graph *g, const hp_opdef *op, int x, int y, hp_attrs *a, hp_coll_kind kind, hp_phase ph) {
    int in[2], nin = 0;
    if (x >= 0) in[nin++] = x;
    int s = hp_graph_node_into(g, op, in, nin, y >= 0 ? &y : NULL, y >= 0, a, ph, -1);
    if (s < 0) return -1;
    a->i[5] = kind;
    nin = 0;
    if (y >= 0) in[nin++] = y;
    if (x >= 0) in[nin++] = x;
    return hp_graph_node_into(g, &hp_op_slot_wait, in, nin, NULL, 0, a, ph, -1);
}

int hp_comm_op_send(hp_graph *g, int x, int axis, int peer, int slot, hp_phase ph) {
    hp_attrs a = {{axis, slot, peer}, {(double)hp_dtype_size(g->vals[x].dtype) * (double)hp_val_numel(g, x)}};
    return emit_pair(g, &hp_op_send_start, x, -1, &a, HP_COLL_SEND, ph);
}

int hp_comm_op_recv(hp_graph *g, int y, int axis, int peer, int slot, hp_phase ph) {
    hp_attrs a = {{axis, slot, peer}, {(double)hp_dtype_size(g->vals[y].dtype) * (double)hp_val_numel(g, y)}};
    return emit_pair(g, &hp_op_recv_start, -1, y, &a, HP_COLL_RECV, ph);
}

int hp_comm_op_all_to_all_v(hp_graph *g, int y, int x, int axis, const int64_t *send_counts,
                            const int64_t *recv_counts, int k, int slot, hp_phase ph) {
    int64_t sent = 0, got = 0, *both = malloc(sizeof(int64_t) * 2 * (size_t)(k > 0 ? k : 1));
    if (!both) {
        hp_graph_fail(g, hp_errorf("all_to_all_v: out of memory"));
        return -1;
    }
    for (int m = 0; m < k; m++) sent += both[m] = send_counts[m], got += both[k + m] = recv_counts[m];
    long at = hp_graph_blob(g, both, sizeof(int64_t) * 2 * (size_t)k);
    free(both);
    if (at < 0) return -1;
    if (sent > hp_val_numel(g, x) || got > hp_val_numel(g, y)) {
        hp_graph_fail(g, hp_errorf("all_to_all_v: the counts send %lld and receive %lld elements, the values hold "
                                   "%lld and %lld", (long long)sent, (long long)got, (long long)hp_val_numel(g, x),
                                   (long long)hp_val_numel(g, y)));
        return -1;
    }
    hp_attrs a = {{axis, slot, -1, at, k}, {(double)hp_dtype_size(g->vals[x].dtype) * (double)sent}};
    return emit_pair(g, &hp_op_all_to_all_v_start, x, y, &a, HP_COLL_ALL_TO_ALL, ph);
}

int hp_comm_op_all_gather_v(hp_graph *g, int y, int x, int axis, const int64_t *counts, int k, int me, int slot,
                            hp_phase ph) {
    int64_t got = 0;
    for (int m = 0; m < k; m++) got += counts[m];
    if (me < 0 || me >= k || counts[me] > hp_val_numel(g, x) || got > hp_val_numel(g, y)) {
        hp_graph_fail(g, hp_errorf("all_gather_v: member %d of %d sends %lld of %lld elements and receives %lld of "
                                   "%lld", me, k, (long long)(me >= 0 && me < k ? counts[me] : -1),
                                   (long long)hp_val_numel(g, x), (long long)got, (long long)hp_val_numel(g, y)));
        return -1;
    }
    long at = hp_graph_blob(g, counts, sizeof(int64_t) * (size_t)k);
    if (at < 0) return -1;
    hp_attrs a = {{axis, slot, -1, at, k}, {(double)hp_dtype_size(g->vals[x].dtype) * (double)counts[me]}};
    return emit_pair(g, &hp_op_all_gather_v_start, x, y, &a, HP_COLL_ALL_GATHER, ph);
}
