/* autopar/cost_calls: a collective node's calls as the cost model prices
 * them — kind, whole buffer, group size and span — read from the node's
 * descriptor (core/coll_desc) and the compile it belongs to (see cost.h). */
#include "autopar/cost.h"
#include "core/opdef.h"
#include "parallel/ep.h"

/* The group along mesh axis `axis` through `rank`: its size, the supernodes it spans (rps ranks per
 * supernode, contiguous; 0: one) and the rank's place in it. */
static void axis_span(int *members, int *supernodes, int *me, const hp_mesh *m, int axis, int rank, int rps) {
    int coord[HP_MESH_MAX_DIMS];
    hp_mesh_coords(coord, m, rank);
    *me = coord[axis];
    int n = m->size[axis], s = 0, last = -1;
    /* the members' global ranks grow with the coordinate: count the distinct supernodes in order */
    for (int i = 0; i < n; i++) {
        coord[axis] = i;
        int r = hp_mesh_rank(m, coord), sn = rps > 0 ? r / rps : 0;
        if (sn != last) s++, last = sn;
    }
    *members = n;
    *supernodes = s < 1 ? 1 : s;
}

static void world_span(int *members, int *supernodes, int *me, int world, int rank, int rps) {
    *members = world;
    *me = rank;
    *supernodes = rps > 0 ? (world + rps - 1) / rps : 1;
}

/* The call's group and element size (what add() takes besides kind, bytes and lane). */
typedef struct {
    int members, supernodes, me, elem, shared, peer;
} grp;

static int add(hp_cost_call *out, int n, hp_prof_kind kind, double bytes, const grp *g, int lane) {
    if (g->members <= 1 || bytes <= 0) return n;
    out[n] = (hp_cost_call){.kind = kind, .bytes = bytes, .elem_bytes = g->elem > 0 ? g->elem : 4,
                            .members = g->members, .supernodes = g->supernodes, .member = g->me, .peer = g->peer,
                            .shared_output = g->shared, .lane = lane};
    return n + 1;
}

/* A redistribution plan's steps as calls: each step's bytes (sent per rank, layout/redist.h) back to the
 * whole buffer N. */
static int redist_calls(hp_cost_call *out, const hp_redist *p, const hp_mesh *m, int rank, int rps) {
    int n = 0;
    for (int s = 0; s < p->nsteps; s++) {
        const hp_redist_step *st = &p->step[s];
        grp g = {.elem = p->elem_bytes, .peer = -1};
        axis_span(&g.members, &g.supernodes, &g.me, m, st->axis, rank, rps);
        if (g.members <= 1) continue;
        /* the rank's own buffer: the gathered piece after an all-gather, the piece before the others (the
         * plan's bytes are averaged over the ranks; a rank's piece may be smaller, or empty) */
        hp_shape loc;
        hp_local_shape(&loc, NULL, &st->global, st->kind == HP_RD_ALL_GATHER ? &st->after : &st->before, m, rank);
        double N = (double)hp_shape_numel(&loc) * g.elem;
        switch (st->kind) {
        case HP_RD_ALL_GATHER: n = add(out, n, HP_PROF_ALL_GATHER, N, &g, st->axis); break;
        case HP_RD_REDUCE_SCATTER: n = add(out, n, HP_PROF_REDUCE_SCATTER, N, &g, st->axis); break;
        case HP_RD_ALL_REDUCE: n = add(out, n, HP_PROF_ALL_REDUCE, N, &g, st->axis); break;
        case HP_RD_ALL_TO_ALL: n = add(out, n, HP_PROF_ALL_TO_ALL, N, &g, st->axis); break;
        default: break; /* slices and to-partial: local */
        }
    }
    return n;
}

/* The element size of value v of g. */
static int elem_of(const hp_graph *g, int v) { return v >= 0 ? (int)hp_dtype_size(g->vals[v].dtype) : 4; }

int hp_cost_calls_of(hp_cost_call *out, const hp_compiled *cc, int node, int rps) {
    const hp_graph *g = cc->rg.g;
    const hp_node *nd = &g->nodes[node];
    hp_coll_desc d;
    if (!hp_coll_describe(&d, g, nd) || d.role == HP_COLL_WAIT || d.kind == HP_COLL_RECV) return 0;
    const hp_mesh *m = &cc->mesh;
    int rank = cc->rank;
    grp gr = {.peer = -1, .elem = elem_of(g, nd->nin > 0 ? nd->in[0] : nd->nout > 0 ? nd->out[0] : -1)};
    if (d.kind == HP_COLL_REDISTRIBUTE) return redist_calls(out, &cc->rg.ctx.plans[d.plan], m, rank, rps);
    if (d.group == HP_COLL_GROUP_FSDP_SHARD || d.group == HP_COLL_GROUP_FSDP_REPLICAS) {
        const hp_fsdp_plan *f = &cc->fsdp;
        const hp_fsdp_unit *u = &f->units[d.unit];
        int reps = d.group == HP_COLL_GROUP_FSDP_REPLICAS;
        if (reps && (f->replicas <= 1 || u->split || f->replicate_axis < 0)) return 0; /* no replicas' all-reduce */
        axis_span(&gr.members, &gr.supernodes, &gr.me, m, reps ? f->replicate_axis : f->shard_axis, rank, rps);
        if (reps) { /* the replicas' all-reduce of the reduced shard (fp32) */
            gr.elem = 4;
            return add(out, 0, HP_PROF_ALL_REDUCE, 4.0 * (double)u->shard, &gr,
                       f->fuse_replicas ? HP_COST_LANE_FSDP_SHARD : HP_COST_LANE_FSDP_REPLICAS);
        }
        /* the gather's whole output, the reduce-scatter's whole input: the descriptor's bytes; level 3 in the
         * hyperpar style gathers into a buffer its supernode shares (the store, or a transient slot) */
        int gather = d.kind == HP_COLL_ALL_GATHER;
        gr.elem = (gather ? f->gather_bf16 : f->reduce_bf16) ? 2 : 4;
        gr.shared = gather && f->level == 3 && f->style == HP_FSDP_STYLE_HYPERPAR;
        return add(out, 0, gather ? HP_PROF_ALL_GATHER : HP_PROF_REDUCE_SCATTER, d.bytes, &gr,
                   HP_COST_LANE_FSDP_SHARD);
    }
    int lane = HP_COST_LANE_WORLD;
    if (d.group == HP_COLL_GROUP_AXIS) {
        axis_span(&gr.members, &gr.supernodes, &gr.me, m, d.axis, rank, rps);
        lane = d.axis;
    } else if (d.group == HP_COLL_GROUP_WORLD) {
        world_span(&gr.members, &gr.supernodes, &gr.me, hp_mesh_size(m), rank, rps);
    } else {
        return 0;
    }
    double k = (double)gr.members, b = d.bytes;
    switch (d.kind) {
    case HP_COLL_ALL_REDUCE: return add(out, 0, HP_PROF_ALL_REDUCE, b, &gr, lane);
    case HP_COLL_REDUCE_SCATTER: return add(out, 0, HP_PROF_REDUCE_SCATTER, b, &gr, lane);
    case HP_COLL_ALL_GATHER:
        /* the world's norm gather counts what a rank sends to the others; a slot's start (all_gather_v) its own
         * piece; the others their whole output */
        if (d.group == HP_COLL_GROUP_WORLD) b = b * k / (k - 1);
        else if (d.pair == HP_COLL_PAIR_SLOT) b = b * k;
        return add(out, 0, HP_PROF_ALL_GATHER, b, &gr, lane);
    case HP_COLL_ALL_TO_ALL:
        /* expert parallelism's exchange counts what leaves the member ((G-1)/G of its rows); a slot's
         * all_to_all_v its whole send buffer */
        if (hp_ep_exchange_of(nd->op) != HP_EP_X_NONE) b = b * k / (k - 1);
        return add(out, 0, HP_PROF_ALL_TO_ALL, b, &gr, lane);
    case HP_COLL_SEND: { /* one message to one member: a call of the pair (member 0 to 1) on its tier */
        int coord[HP_MESH_MAX_DIMS];
        hp_mesh_coords(coord, m, rank);
        coord[d.axis] = d.peer;
        int peer = hp_mesh_rank(m, coord);
        grp p2 = {.members = 2, .supernodes = rps > 0 && peer / rps != rank / rps ? 2 : 1, .me = 0, .peer = 1,
                  .elem = gr.elem};
        return add(out, 0, HP_PROF_SEND, b, &p2, lane);
    }
    case HP_COLL_BROADCAST: return add(out, 0, HP_PROF_ALL_GATHER, b, &gr, lane);
    default: return 0;
    }
}
