/* parallel/fsdp_ops: the FSDP operators (see parallel/fsdp.h) — the units'
 * gathers and reductions, their run functions over the rank's hp_fsdp_rt and
 * their collective descriptors, and fsdp_param16. */
#include "parallel/fsdp.h"

#include <string.h>

#include "kernels/bf16.h"
#include "parallel/rank.h"

/* Gradient accumulation (parallel/accum): the node carries the micro-batch
 * input last; a reduction that communicates at the last micro-batch only
 * (a.i[1] = 1) does nothing before it, a forward gather (a.i[1] = 2) nothing
 * after the first (the store keeps the gathered unit until the optimizer). */
static int skipped(const hp_node *n, const hp_tensor *in) {
    if (!n->a.i[1]) return 0;
    const int32_t *m = in[n->nin - 1].data;
    return n->a.i[1] == 2 ? m[0] != 0 : m[0] != m[1] - 1;
}

static hp_fsdp_rt *rt_of(const hp_kctx *k) { return ((hp_rank_ctx *)k->rank)->fsdp; }

static void start_dt(const hp_kctx *k, int slot, hp_comm_group *grp, hp_comm_kind kind, void *recv, const void *send,
                     int64_t count, hp_dtype dt, int fence) {
    hp_rank_ctx *c = k->rank;
    hp_fsdp_rt *rt = c->fsdp;
    rt->req[slot] = NULL;
    if (hp_comm_group_size(grp) == 1) return;
    rt->tens[slot] = (hp_comm_tensor){recv, send, count};
    rt->args[slot] = (hp_comm_args){.kind = kind, .dtype = dt, .op = HP_COMM_SUM, .t = &rt->tens[slot], .nt = 1,
                                    .copied = kind == HP_COMM_ALL_GATHER ? &rt->copied : NULL, .tree = c->tree,
                                    .fence = fence};
    hp_status st = hp_comm_start(&rt->req[slot], c->comm, grp, &rt->args[slot]);
    if (st) *k->err = st;
}

static void start(const hp_kctx *k, int slot, hp_comm_group *grp, hp_comm_kind kind, void *recv, const void *send,
                  int64_t count) {
    start_dt(k, slot, grp, kind, recv, send, count, HP_F32, 0);
}

static void wait_slot(const hp_kctx *k, int slot) {
    hp_fsdp_rt *rt = rt_of(k);
    hp_status st = hp_comm_wait(rt->req[slot]);
    rt->req[slot] = NULL;
    if (st && !*k->err) *k->err = st;
    else hp_status_free(st);
}

static void gather_start_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)out;
    hp_fsdp_rt *rt = rt_of(k);
    int u = (int)n->a.i[0];
    rt->req[3 * u] = NULL;
    if (skipped(n, in)) return;
    const hp_fsdp_unit *un = &rt->plan->units[u];
    float *base = rt->params + un->offset, *mine = base + un->shard * (size_t)rt->plan->me;
    if (rt->slots && !rt->staging) { /* transient: the rank's shard from the store into the unit's slot, the slot gathered in place,
                      * fenced: a peer of the supernode may still read the slot's previous unit */
        float *slot = rt->slots + rt->plan->slot_at[n->a.i[3]];
        start_dt(k, 3 * u, rt->shard_group, HP_COMM_ALL_GATHER, slot, mine, (int64_t)un->shard, HP_F32, 1);
        return;
    }
    if (rt->params16) { /* gather=bf16: the rank's shard narrowed into the mirror, the mirror gathered */
        uint16_t *b16 = rt->params16 + un->offset, *mine16 = b16 + un->shard * (size_t)rt->plan->me;
        hp_kb_f32_to_bf16(k->pool, mine16, mine, (long)un->shard);
        uint16_t *to = rt->staging ? (uint16_t *)(void *)rt->staging[un->fwd_pos % rt->nstaging] : b16;
        start_dt(k, 3 * u, rt->shard_group, HP_COMM_ALL_GATHER, to, mine16, (int64_t)un->shard, HP_BF16, 0);
        if (rt->staging && hp_comm_group_size(rt->shard_group) == 1) memcpy(to, mine16, un->shard * sizeof(uint16_t));
        return;
    }
    if (rt->staging) { /* fsdp2: into a staging buffer, copied out at the wait */
        float *st = rt->staging[un->fwd_pos % rt->nstaging];
        start(k, 3 * u, rt->shard_group, HP_COMM_ALL_GATHER, st, mine, (int64_t)un->shard);
        if (hp_comm_group_size(rt->shard_group) == 1) memcpy(st, mine, un->shard * sizeof(float));
        return;
    }
    start(k, 3 * u, rt->shard_group, HP_COMM_ALL_GATHER, base, mine, (int64_t)un->shard);
}

static void gather_wait_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)out;
    hp_fsdp_rt *rt = rt_of(k);
    int u = (int)n->a.i[0];
    wait_slot(k, 3 * u);
    if (!rt->staging || *k->err || skipped(n, in)) return;
    const hp_fsdp_unit *un = &rt->plan->units[u];
    size_t es = rt->params16 ? sizeof(uint16_t) : sizeof(float);
    void *to = rt->params16 ? (void *)(rt->params16 + un->offset) : (void *)(rt->params + un->offset);
    if (rt->slots) to = rt->slots + rt->plan->slot_at[n->a.i[3]]; /* fsdp2, resharded: copied out to the slot */
    memcpy(to, rt->staging[un->fwd_pos % rt->nstaging], un->size * es);
    rt->copied += (int64_t)(un->size * es);
}

/* fuse_replicas: unit u's gradient `from` reduce-scattered into `shard`, then
 * the shard all-reduced in place over the replicas, on the shard group's lane
 * (a group of one: the reduce-scatter is the lane's copy of the rank's slice,
 * off the compute thread). The reduction's wait waits for the reduce-scatter only (the gradient's space is
 * then free), the replicas' wait for the whole. */
static void fused_start(const hp_kctx *k, int u, float *shard, const float *from) {
    hp_rank_ctx *c = k->rank;
    hp_fsdp_rt *rt = c->fsdp;
    const hp_fsdp_unit *un = &rt->plan->units[u];
    int64_t n = (int64_t)un->shard;
    hp_comm_args *rs = &rt->args[3 * u + 1], *ar = &rt->args[3 * u + 2];
    rt->tens[3 * u + 1] = (hp_comm_tensor){shard, from, n};
    rt->tens[3 * u + 2] = (hp_comm_tensor){shard, shard, n};
    *rs = (hp_comm_args){.kind = HP_COMM_REDUCE_SCATTER, .dtype = HP_F32, .op = HP_COMM_SUM,
                         .t = &rt->tens[3 * u + 1], .nt = 1, .tree = c->tree};
    *ar = (hp_comm_args){.kind = HP_COMM_ALL_REDUCE, .dtype = HP_F32, .op = HP_COMM_SUM, .t = &rt->tens[3 * u + 2],
                         .nt = 1, .tree = c->tree};
    rt->req[3 * u + 1] = rt->req[3 * u + 2] = NULL;
    hp_status st = hp_comm_start_then(&rt->req[3 * u + 2], c->comm, rt->shard_group, rs, rt->replicate_group, ar);
    if (st) *k->err = st;
}

/* in[0]: the unit's gradient [size]; out[0]: the rank's reduced shard [shard] */
static void reduce_start_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    hp_fsdp_rt *rt = rt_of(k);
    int u = (int)n->a.i[0];
    const hp_fsdp_unit *un = &rt->plan->units[u];
    int fused = rt->plan->fuse_replicas && !un->split; /* a split unit: the reduce-scatter alone */
    rt->req[3 * u + 1] = NULL;
    if (fused) rt->req[3 * u + 2] = NULL;
    if (skipped(n, in)) return;
    const float *from = in[0].data;
    if (rt->plan->reduce_bf16) { /* narrowed (the fsdp2 style's staging copy too), reduced in bf16 */
        int b = (int)n->a.i[3];
        if (rt->red16_unit[b] >= 0) {
            *k->err = hp_errorf("fsdp reduce=bf16: unit %d's reduction starts while unit %d's is in flight", u,
                                rt->red16_unit[b]);
            return;
        }
        rt->red16_unit[b] = u;
        hp_kb_f32_to_bf16(k->pool, rt->red16[b], from, (long)un->size);
        start_dt(k, 3 * u + 1, rt->shard_group, HP_COMM_REDUCE_SCATTER, rt->shard16[b], rt->red16[b],
                 (int64_t)un->shard, HP_BF16, 0);
        if (hp_comm_group_size(rt->shard_group) == 1)
            memcpy(rt->shard16[b], rt->red16[b] + un->shard * (size_t)rt->plan->me, un->shard * sizeof(uint16_t));
        return;
    }
    if (rt->staging) { /* fsdp2: the gradient copied into a staging buffer first */
        memcpy(rt->staging[rt->nstaging], from, un->size * sizeof(float));
        from = rt->staging[rt->nstaging];
    }
    if (fused) { /* HSDP: the reduce-scatter, then the replicas' all-reduce, one call */
        fused_start(k, u, out[0].data, from);
        return;
    }
    start(k, 3 * u + 1, rt->shard_group, HP_COMM_REDUCE_SCATTER, out[0].data, from, (int64_t)un->shard);
    if (hp_comm_group_size(rt->shard_group) == 1 && out[0].data != from)
        memcpy(out[0].data, from + un->shard * (size_t)rt->plan->me, un->shard * sizeof(float));
}

/* in[0]: the unit's gradient, in[1]: the shard (HSDP: all-reduced over the replicas from here, but for a split
 * unit's: its replicate axis's members hold other pieces) */
static void reduce_wait_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)out;
    hp_fsdp_rt *rt = rt_of(k);
    int u = (int)n->a.i[0], split = rt->plan->units[u].split;
    wait_slot(k, 3 * u + 1);
    if (rt->plan->fuse_replicas && !split)
        hp_comm_wait_first(rt->req[3 * u + 2]); /* the gradient read: the all-reduce goes on */
    else rt->req[3 * u + 2] = NULL;
    int b = (int)n->a.i[3];
    if (rt->plan->reduce_bf16 && rt->red16_unit[b] == u) { /* the bf16 shard widened into the fp32 one */
        rt->red16_unit[b] = -1;
        if (!*k->err) hp_kb_bf16_to_f32(k->pool, in[1].data, rt->shard16[b], (long)rt->plan->units[u].shard);
    }
    if (*k->err || rt->plan->replicas <= 1 || rt->plan->fuse_replicas || split || skipped(n, in)) return;
    const hp_fsdp_unit *un = &rt->plan->units[u];
    start(k, 3 * u + 2, rt->replicate_group, HP_COMM_ALL_REDUCE, in[1].data, in[1].data, (int64_t)un->shard);
    if (rt->staging) wait_slot(k, 3 * u + 2); /* fsdp2: a separate, blocking all-reduce */
}

static void allreduce_wait_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)in, (void)out;
    wait_slot(k, 3 * (int)n->a.i[0] + 2);
}

/* bytes each rank sends per step (an estimate for reports: (members - 1) shards) */
static double gather_bytes(const hp_graph *g, const hp_node *n) {
    double b = 0, es = n->a.i[2] ? 2.0 : 4.0; /* a.i[2]: gather=bf16 */
    for (int k = 0; k < n->nxin; k++) b += es * (double)hp_val_numel(g, g->xin[n->xin_at + k]);
    return b;
}

/* gather=bf16: a parameter's bf16 copy is its place in the store's mirror,
 * which the unit's gather filled; nothing is left to do. */
static void param16_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)k, (void)n, (void)in, (void)out;
}

/* The FSDP collectives: unit a.i[0]'s stages, paired by the unit. bytes:
 * what the trace counts (each start's own estimate; waits 0). */
static void fsdp_describe(hp_coll_desc *d, const hp_node *n, hp_coll_kind kind, hp_coll_role role, hp_coll_group grp,
                          double bytes) {
    *d = (hp_coll_desc){.kind = kind, .role = role, .group = grp, .axis = -1, .plan = -1, .unit = (int)n->a.i[0], .peer = -1,
                        .grad = kind != HP_COLL_ALL_GATHER, .pair = HP_COLL_PAIR_UNIT, .pair_key = (int)n->a.i[0],
                        .bytes = bytes};
}

static void gather_start_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    fsdp_describe(d, n, HP_COLL_ALL_GATHER, HP_COLL_START, HP_COLL_GROUP_FSDP_SHARD, gather_bytes(g, n));
}

static void gather_wait_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    (void)g;
    fsdp_describe(d, n, HP_COLL_ALL_GATHER, HP_COLL_WAIT, HP_COLL_GROUP_FSDP_SHARD, 0);
    d->check = HP_COLL_CHECK_PARAMS;
}

const hp_opdef hp_op_fsdp_gather_start = {.name = "fsdp_gather_start", .communicates = 1, .run = gather_start_run,
                                          .bytes = gather_bytes, .describe = gather_start_describe};
const hp_opdef hp_op_fsdp_gather_wait = {.name = "fsdp_gather_wait", .communicates = 1, .run = gather_wait_run,
                                         .describe = gather_wait_describe};
static double reduce_bytes(const hp_graph *g, const hp_node *n) {
    return (n->a.i[2] ? 2.0 : 4.0) * (double)hp_val_numel(g, n->in[0]); /* a.i[2]: reduce=bf16 */
}

static void reduce_start_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    fsdp_describe(d, n, HP_COLL_REDUCE_SCATTER, HP_COLL_START, HP_COLL_GROUP_FSDP_SHARD, reduce_bytes(g, n));
}

/* the reduce-scatter's wait, which starts the replicas' all-reduce (where
 * the plan has replicas): described as that start; in[1] is the shard */
static void reduce_wait_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    (void)g;
    fsdp_describe(d, n, HP_COLL_ALL_REDUCE, HP_COLL_START, HP_COLL_GROUP_FSDP_REPLICAS, 0);
    d->check = HP_COLL_CHECK_SHARD;
    d->check_in = 1;
}

/* the replicas' all-reduce's wait; in[0] is the shard */
static void allreduce_wait_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    (void)g;
    fsdp_describe(d, n, HP_COLL_ALL_REDUCE, HP_COLL_WAIT, HP_COLL_GROUP_FSDP_REPLICAS, 0);
    d->check = HP_COLL_CHECK_SHARD;
    d->check_in = 0;
}

const hp_opdef hp_op_fsdp_reduce_start = {.name = "fsdp_reduce_start", .nout = 1, .communicates = 1,
                                          .run = reduce_start_run, .bytes = reduce_bytes,
                                          .describe = reduce_start_describe};
const hp_opdef hp_op_fsdp_reduce_wait = {.name = "fsdp_reduce_wait", .communicates = 1, .run = reduce_wait_run,
                                         .describe = reduce_wait_describe};
const hp_opdef hp_op_fsdp_allreduce_wait = {.name = "fsdp_allreduce_wait", .communicates = 1,
                                            .run = allreduce_wait_run, .describe = allreduce_wait_describe};
const hp_opdef hp_op_fsdp_param16 = {.name = "fsdp_param16", .nout = 1, .run = param16_run};
