/* autopar/cost_calls: a collective node's calls as the cost model prices
 * them — kind, whole buffer, group size and span — read from the node's
 * descriptor (core/coll_desc) and the compile it belongs to (see cost.h). */
#include "autopar/cost.h"
#include "core/opdef.h"
#include "parallel/ep.h"

/* The group along mesh axis `axis` through `rank`: its size and the supernodes it spans (rps ranks per
 * supernode, contiguous; 0: one). */
static void axis_span(int *members, int *supernodes, const hp_mesh *m, int axis, int rank, int rps) {
    int coord[HP_MESH_MAX_DIMS];
    hp_mesh_coords(coord, m, rank);
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

static void world_span(int *members, int *supernodes, int world, int rps) {
    *members = world;
    *supernodes = rps > 0 ? (world + rps - 1) / rps : 1;
}

static int add(hp_cost_call *out, int n, hp_prof_kind kind, double bytes, int members, int supernodes, int lane) {
    if (members <= 1 || bytes <= 0) return n;
    out[n] = (hp_cost_call){.kind = kind, .bytes = bytes, .members = members, .supernodes = supernodes,
                            .lane = lane};
    return n + 1;
}

/* A redistribution plan's steps as calls: each step's bytes (sent per rank, layout/redist.h) back to the
 * whole buffer N. */
static int redist_calls(hp_cost_call *out, const hp_redist *p, const hp_mesh *m, int rank, int rps) {
    int n = 0;
    for (int s = 0; s < p->nsteps; s++) {
        const hp_redist_step *st = &p->step[s];
        int members, sns;
        axis_span(&members, &sns, m, st->axis, rank, rps);
        if (members <= 1) continue;
        double k = (double)members, share = (k - 1) / k;
        switch (st->kind) {
        case HP_RD_ALL_GATHER: n = add(out, n, HP_PROF_ALL_GATHER, st->bytes / share, members, sns, st->axis); break;
        case HP_RD_REDUCE_SCATTER:
            n = add(out, n, HP_PROF_REDUCE_SCATTER, st->bytes / share, members, sns, st->axis);
            break;
        case HP_RD_ALL_REDUCE: n = add(out, n, HP_PROF_ALL_REDUCE, st->bytes / (2 * share), members, sns, st->axis); break;
        case HP_RD_ALL_TO_ALL: n = add(out, n, HP_PROF_ALL_TO_ALL, st->bytes / share, members, sns, st->axis); break;
        default: break; /* slices and to-partial: local */
        }
    }
    return n;
}

int hp_cost_calls_of(hp_cost_call *out, const hp_compiled *cc, int node, int rps) {
    const hp_graph *g = cc->rg.g;
    const hp_node *nd = &g->nodes[node];
    hp_coll_desc d;
    if (!hp_coll_describe(&d, g, nd) || d.role == HP_COLL_WAIT || d.kind == HP_COLL_RECV) return 0;
    const hp_mesh *m = &cc->mesh;
    int rank = cc->rank, members = 1, sns = 1;
    if (d.kind == HP_COLL_REDISTRIBUTE) return redist_calls(out, &cc->rg.ctx.plans[d.plan], m, rank, rps);
    if (d.group == HP_COLL_GROUP_FSDP_SHARD || d.group == HP_COLL_GROUP_FSDP_REPLICAS) {
        const hp_fsdp_plan *f = &cc->fsdp;
        const hp_fsdp_unit *u = &f->units[d.unit];
        int reps = d.group == HP_COLL_GROUP_FSDP_REPLICAS;
        axis_span(&members, &sns, m, reps ? f->replicate_axis : f->shard_axis, rank, rps);
        if (reps) { /* the replicas' all-reduce of the reduced shard (fp32) */
            if (f->replicas <= 1 || u->split) return 0;
            return add(out, 0, HP_PROF_ALL_REDUCE, 4.0 * (double)u->shard, members, sns,
                       f->fuse_replicas ? HP_COST_LANE_FSDP_SHARD : HP_COST_LANE_FSDP_REPLICAS);
        }
        /* the gather's whole output, the reduce-scatter's whole input: the descriptor's bytes */
        int n = add(out, 0, d.kind == HP_COLL_ALL_GATHER ? HP_PROF_ALL_GATHER : HP_PROF_REDUCE_SCATTER, d.bytes,
                    members, sns, HP_COST_LANE_FSDP_SHARD);
        return n;
    }
    int lane = HP_COST_LANE_WORLD;
    if (d.group == HP_COLL_GROUP_AXIS) {
        axis_span(&members, &sns, m, d.axis, rank, rps);
        lane = d.axis;
    } else if (d.group == HP_COLL_GROUP_WORLD) {
        world_span(&members, &sns, hp_mesh_size(m), rps);
    } else {
        return 0;
    }
    double k = (double)members, b = d.bytes;
    switch (d.kind) {
    case HP_COLL_ALL_REDUCE: return add(out, 0, HP_PROF_ALL_REDUCE, b, members, sns, lane);
    case HP_COLL_REDUCE_SCATTER: return add(out, 0, HP_PROF_REDUCE_SCATTER, b, members, sns, lane);
    case HP_COLL_ALL_GATHER:
        /* the world's norm gather counts what a rank sends to the others; a slot's start (all_gather_v) its own
         * piece; the others their whole output */
        if (d.group == HP_COLL_GROUP_WORLD) b = b * k / (k - 1);
        else if (d.pair == HP_COLL_PAIR_SLOT) b = b * k;
        return add(out, 0, HP_PROF_ALL_GATHER, b, members, sns, lane);
    case HP_COLL_ALL_TO_ALL:
        /* expert parallelism's exchange counts what leaves the member ((G-1)/G of its rows); a slot's
         * all_to_all_v its whole send buffer */
        if (hp_ep_exchange_of(nd->op) != HP_EP_X_NONE) b = b * k / (k - 1);
        return add(out, 0, HP_PROF_ALL_TO_ALL, b, members, sns, lane);
    case HP_COLL_SEND: {
        /* one message to one member: the span of that pair */
        int coord[HP_MESH_MAX_DIMS];
        hp_mesh_coords(coord, m, rank);
        coord[d.axis] = d.peer;
        int peer = hp_mesh_rank(m, coord);
        int cross = rps > 0 && peer / rps != rank / rps;
        return add(out, 0, HP_PROF_SEND, b, 2, cross ? 2 : 1, lane);
    }
    case HP_COLL_BROADCAST: return add(out, 0, HP_PROF_ALL_GATHER, b, members, sns, lane);
    default: return 0;
    }
}
