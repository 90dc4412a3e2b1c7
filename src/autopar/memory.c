/* autopar/memory: see the header. Each part follows the allocation it
 * prices: runtime/program (gradients, persistent values, arena, scratch),
 * runtime/params and runtime/dist (the store), parallel/comm_ops (the
 * redistributions' scratch), parallel/fsdp_state (staging, bf16 pairs) and
 * comm/coll_scratch (the collectives' scratch across supernodes). */
#include "autopar/memory.h"

#include <string.h>

#include "comm/coll_scratch.h"
#include "core/coll_desc.h"
#include "core/opdef.h"
#include "parallel/rank.h"
#include "parallel/redistribute.h"
#include "runtime/params.h"

static double round64(double b) { return (double)(((size_t)b + 63) / 64 * 64); }
static double round4k(double b) { return (double)(((size_t)b + 4095) / 4096 * 4096); }

/* The values the program keeps outside the arena and the store: into grads, optimizer and inputs (and, without
 * FSDP, the parameters and their gradients value by value). */
static void persistent_values(hp_rank_memory *m, const hp_graph *lg, int fsdp) {
    for (int v = 0; v < lg->nvals; v++) {
        const hp_value *val = &lg->vals[v];
        double b = round64((double)hp_val_numel(lg, v) * (double)hp_dtype_size(val->dtype));
        /* no storage of its own (or in the store's mirror, or its slots) */
        if (val->view_of >= 0 || val->mirror_of >= 0 || val->store_slot >= 0) continue;
        if (val->kind == HP_V_PARAM) {
            if (fsdp) continue; /* the store and the flat gradients: below */
            m->params += b;
            m->grads += val->grad >= 0 ? b : 0;
        } else if (val->kind == HP_V_STATE) {
            m->optimizer += b; /* AdamW m, v; Muon momentum */
        } else if (val->grad_of >= 0 && lg->vals[val->grad_of].kind == HP_V_PARAM && val->persistent) {
            continue; /* in the gradient buffer */
        } else if ((fsdp && val->persistent && !strncmp(val->name, "fsdp.", 5)) ||
                   (val->persistent && !strncmp(val->name, "accum.", 6) && val->dtype == HP_F32)) {
            m->grads += b; /* a unit's gradient (level 1), the rank's reduced shard, or an accumulator */
        } else if (val->persistent) {
            m->inputs += b;
        }
    }
}

/* FSDP's store: level 3 shares one store among the shard group's ranks of a supernode (this rank's share);
 * gather=bf16 adds the store's bf16 mirror (2 bytes a float, shared as the store is); transient gathered units
 * keep the supernode's shards only, beside the slots. */
static double fsdp_store(const hp_fsdp_plan *f) {
    double store = (double)f->total;
    if (f->transient) {
        store = (double)(f->nunits ? f->units[0].offset : f->total); /* the unmanaged parameters */
        for (int u = 0; u < f->nunits; u++) store += (double)f->units[u].shard * f->sn_members;
        store += (double)f->slot_floats;
    }
    return (f->gather_bf16 ? 6.0 : 4.0) * store / (f->level == 3 && f->style == HP_FSDP_STYLE_HYPERPAR ? f->sn_members : 1);
}

/* The communication buffers: the largest redistribution's scratch (one per rank), the fsdp2 style's staging
 * buffers (prefetch + 2 of the largest unit), and the bf16 reductions' two pairs (a unit's gradient, its
 * shard), each page-aligned. */
static double comm_buffers(const hp_compiled *cc) {
    size_t rd = 0;
    for (int i = 0; i < cc->rg.ctx.nplans; i++) {
        size_t s = hp_redistribute_scratch(&cc->rg.ctx.plans[i], &cc->mesh);
        if (s > rd) rd = s;
    }
    double b = round4k(4.0 * (double)(rd ? rd : 1));
    const hp_fsdp_plan *f = &cc->fsdp;
    if (f->level && f->style == HP_FSDP_STYLE_FSDP2)
        b += (f->prefetch + 2) * round4k(4.0 * (double)hp_fsdp_largest_unit(f));
    if (f->level && f->reduce_bf16) {
        size_t big = hp_fsdp_largest_unit(f), members = (size_t)f->members;
        b += 2.0 * (round4k(2.0 * (double)big) + round4k(2.0 * (double)((big + members - 1) / members)));
    }
    return b;
}

/* ---- the collectives' scratch (comm/coll_scratch) ---- */

/* The supernodes the rank's group along mesh axis `axis` spans (contiguous global ranks, supernode_ranks each). */
static int axis_supernodes(const hp_compiled *cc, int axis) {
    const hp_mesh *m = &cc->mesh;
    if (cc->supernode_ranks <= 0 || axis < 0 || axis >= m->ndim) return 1;
    int coord[HP_MESH_MAX_DIMS], k = 0, last = -1;
    hp_mesh_coords(coord, m, cc->rank);
    for (int i = 0; i < m->size[axis]; i++) { /* the members' supernodes rise with their coordinate */
        coord[axis] = i;
        int sn = hp_mesh_rank(m, coord) / cc->supernode_ranks;
        if (sn != last) k++, last = sn;
    }
    return k;
}

/* Each executor's largest need: the rank's own thread (blocking calls) and one lane per mesh axis (the calls
 * started on the axis's group). */
typedef struct {
    size_t own, lane[HP_MESH_MAX_DIMS];
} executors;

static void need(executors *e, const hp_compiled *cc, int axis, int started, hp_comm_kind kind, hp_dtype dt,
                 int64_t count) {
    if (axis < 0 || axis >= cc->mesh.ndim) return;
    size_t b = hp_comm_scratch_need(kind, dt, count, 1, cc->mesh.size[axis], axis_supernodes(cc, axis));
    size_t *at = started ? &e->lane[axis] : &e->own;
    if (b > *at) *at = b;
}

/* A redistribution's steps as runtime/redistribute calls them (one tensor each, the step's local input). */
static void redist_needs(executors *e, const hp_compiled *cc, const hp_redist *plan, hp_dtype dt, int started) {
    for (int i = 0; i < plan->nsteps; i++) {
        const hp_redist_step *s = &plan->step[i];
        hp_shape lin;
        hp_local_shape(&lin, NULL, &s->global, &s->before, &cc->mesh, cc->rank);
        int64_t nin = hp_shape_numel(&lin), n = cc->mesh.size[s->axis];
        if (s->kind == HP_RD_ALL_REDUCE && s->op != HP_PARTIAL_MAX)
            need(e, cc, s->axis, started, HP_COMM_ALL_REDUCE, dt, nin);
        else if (s->kind == HP_RD_REDUCE_SCATTER && s->op != HP_PARTIAL_MAX)
            need(e, cc, s->axis, started, HP_COMM_REDUCE_SCATTER, dt, (nin + n - 1) / n);
    }
}

/* The scratch the rank's collectives leave in their executors: the redistributions (blocking on the rank's
 * thread; a started one, a single all-reduce, on its axis's lane) and FSDP's reduce-scatters and replicas'
 * all-reduces (on the shard and replicate axes' lanes). Gathers of one tensor stage nothing; the small calls
 * (norms, broadcasts), sends and receives and EP's all-to-alls are left out. */
static double collective_scratch(const hp_compiled *cc) {
    executors e;
    memset(&e, 0, sizeof e);
    const hp_graph *lg = cc->rg.g;
    const hp_fsdp_plan *f = &cc->fsdp;
    for (int i = 0; i < lg->nnodes; i++) {
        const hp_node *n = &lg->nodes[i];
        hp_coll_desc d;
        if (!hp_coll_describe(&d, lg, n) || d.role == HP_COLL_WAIT) continue;
        if (d.kind == HP_COLL_REDISTRIBUTE) {
            const hp_redist *plan = &cc->rg.ctx.plans[d.plan];
            int async = d.role == HP_COLL_START && plan->nsteps == 1 && plan->step[0].kind == HP_RD_ALL_REDUCE &&
                        plan->step[0].op != HP_PARTIAL_MAX;
            redist_needs(&e, cc, plan, lg->vals[n->in[0]].dtype, async);
        } else if (d.group == HP_COLL_GROUP_FSDP_SHARD && d.kind == HP_COLL_REDUCE_SCATTER) {
            need(&e, cc, f->shard_axis, 1, HP_COMM_REDUCE_SCATTER, f->reduce_bf16 ? HP_BF16 : HP_F32,
                 (int64_t)f->units[d.unit].shard);
            if (f->fuse_replicas && !f->units[d.unit].split && f->replicas > 1) /* the fused second call */
                need(&e, cc, f->replicate_axis, 1, HP_COMM_ALL_REDUCE, HP_F32, (int64_t)f->units[d.unit].shard);
        } else if (d.group == HP_COLL_GROUP_FSDP_REPLICAS && d.kind == HP_COLL_ALL_REDUCE && f->replicas > 1 &&
                   !f->units[d.unit].split) {
            need(&e, cc, f->replicate_axis, 1, HP_COMM_ALL_REDUCE, HP_F32, (int64_t)f->units[d.unit].shard);
        }
    }
    double b = (double)hp_comm_scratch_capacity(e.own);
    for (int a = 0; a < HP_MESH_MAX_DIMS; a++) b += (double)hp_comm_scratch_capacity(e.lane[a]);
    return b;
}

void hp_rank_memory_of(hp_rank_memory *m, const hp_compiled *cc, int threads) {
    memset(m, 0, sizeof *m);
    const hp_graph *lg = cc->rg.g;
    const hp_fsdp_plan *f = &cc->fsdp;
    persistent_values(m, lg, f->level);
    if (f->level) {
        m->params = fsdp_store(f);
        m->grads += 4.0 * (double)hp_param_grad_floats(lg, f->offset, f->total);
    }
    m->activations = (double)cc->mem.arena_bytes;
    size_t op = 0;
    for (int i = 0; i < lg->nnodes; i++) {
        const hp_node *nd = &lg->nodes[i];
        size_t s = nd->op->scratch ? nd->op->scratch(lg, nd, threads) : 0;
        if (s > op) op = s;
    }
    m->scratch = 4.0 * (double)op;
    m->comm = comm_buffers(cc) + collective_scratch(cc);
    m->total = m->params + m->grads + m->optimizer + m->activations + m->scratch + m->comm + m->inputs;
}
