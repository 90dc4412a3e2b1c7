/* api/plan_report_gather: one rank's part of an hp_plan_report, read off its
 * compile — the listed tensors (global shape, layout, local shape), every
 * redistribution and collective in its local graph (as its descriptor says,
 * core/coll_desc.h) with totals per phase and kind (every kind a descriptor
 * has: all-reduce, all-gather, reduce-scatter, all-to-all, send, recv,
 * broadcast), and the memory its program would use (autopar/memory's model,
 * the communication buffers counted in the scratch); its FSDP units from
 * plan_report_fsdp.c.
 * Nothing per tensor is allocated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/plan_report.h"
#include "autopar/memory.h"
#include "parallel/rank.h"
#include "parallel/redistribute.h"

/* The tally's kinds: the redistribution steps' (layout/redist.h), then the
 * descriptors' kinds that no step has. */
enum { NKINDS = HP_RD_TO_PARTIAL + 1, K_SEND = NKINDS, K_RECV, K_BROADCAST, NTALLY };

_Static_assert(HP_PLAN_NAME_LEN >= HP_NAME_LEN, "hp_plan_tensor names hold graph names");
_Static_assert(HP_PLAN_MAX_DIMS >= HP_MAX_DIMS, "hp_plan_tensor shapes hold tensor shapes");

static const char *phase_name(hp_phase p) { return p == HP_PHASE_OPT ? "opt" : p == HP_PHASE_BWD ? "bwd" : "fwd"; }

static const char *kind_name(hp_vkind k) {
    switch (k) {
    case HP_V_INPUT: return "input";
    case HP_V_PARAM: return "param";
    case HP_V_CONST: return "const";
    case HP_V_GRAD: return "grad";
    default: return "act";
    }
}

char *hp_api_bytes_str(char *buf, size_t n, double b) {
    const char *unit[] = {"B", "KB", "MB", "GB", "TB"};
    int u = 0;
    while (b >= 1000 && u < 4) b /= 1000, u++;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

void hp_plan_group_str(char *buf, size_t n, const hp_mesh *m, int axis, int rank) {
    int ranks[256], idx;
    if (m->size[axis] > 256) {
        snprintf(buf, n, "%s", m->name[axis]);
        return;
    }
    hp_mesh_axis_group(ranks, &idx, m, axis, rank);
    size_t u = (size_t)snprintf(buf, n, "%s[", m->name[axis]);
    for (int i = 0; i < m->size[axis] && u < n; i++) u += (size_t)snprintf(buf + u, n - u, "%s%d", i ? "," : "", ranks[i]);
    if (u < n) snprintf(buf + u, n - u, "]");
}

/* ---- tensors ---- */

static hp_status gather_tensors(hp_plan_rank_report *r, const hp_compiled *cc, const int *listed, int nlisted) {
    r->tensors = calloc(nlisted > 0 ? (size_t)nlisted : 1, sizeof *r->tensors);
    if (!r->tensors) return hp_errorf("hp_plan_report_create: out of memory");
    const hp_graph *g = cc->global;
    for (int k = 0; k < nlisted; k++) {
        int v = listed[k];
        const hp_value *val = &g->vals[v];
        hp_plan_tensor *t = &r->tensors[k];
        snprintf(t->name, sizeof t->name, "%s", val->name);
        t->kind = kind_name(val->kind);
        hp_shape loc;
        hp_local_shape(&loc, NULL, &val->shape, &cc->prop.val[v], &cc->mesh, r->rank);
        t->ndim = val->shape.ndim;
        for (int d = 0; d < t->ndim; d++) t->shape[d] = val->shape.d[d], t->local_shape[d] = loc.d[d];
        hp_layout_str(t->layout, sizeof t->layout, &cc->prop.val[v], &cc->mesh);
    }
    r->ntensors = nlisted;
    return HP_OK;
}

/* ---- collectives ---- */

typedef struct {
    int count[HP_NPHASES][NTALLY];
    double bytes[HP_NPHASES][NTALLY];
    int cap;
} tally;

/* The tally's kind of a described call. */
static int tally_kind(hp_coll_kind k) {
    switch (k) {
    case HP_COLL_ALL_REDUCE: return HP_RD_ALL_REDUCE;
    case HP_COLL_ALL_GATHER: return HP_RD_ALL_GATHER;
    case HP_COLL_REDUCE_SCATTER: return HP_RD_REDUCE_SCATTER;
    case HP_COLL_ALL_TO_ALL: return HP_RD_ALL_TO_ALL;
    case HP_COLL_SEND: return K_SEND;
    case HP_COLL_RECV: return K_RECV;
    default: return K_BROADCAST; /* a redistribution is tallied by its steps */
    }
}

static const char *tally_name(int k) {
    if (k >= NKINDS) return k == K_SEND ? "send" : k == K_RECV ? "recv" : "broadcast";
    return hp_rd_kind_name((hp_rd_kind)k);
}

/* A described call over a mesh axis or the world that no branch of
 * gather_colls spells out (send, recv, the all-to-all with counts, a
 * broadcast, ...): its descriptor's kind, group and bytes. 0: no transfer
 * (a group of one rank). */
static int described_coll(hp_plan_collective *c, tally *t, const hp_coll_desc *d, const hp_mesh *m, int rank,
                          hp_phase ph) {
    int k = tally_kind(d->kind);
    char bb[32], peer[48] = "";
    if (d->group == HP_COLL_GROUP_AXIS) {
        if (m->size[d->axis] <= 1) return 0;
        hp_plan_group_str(c->groups, sizeof c->groups, m, d->axis, rank);
    } else {
        if (hp_mesh_size(m) <= 1) return 0;
        snprintf(c->groups, sizeof c->groups, "world[0..%d]", hp_mesh_size(m) - 1);
    }
    if (d->peer >= 0) snprintf(peer, sizeof peer, " %s member %d", d->kind == HP_COLL_RECV ? "from" : "to", d->peer);
    c->bytes = d->bytes;
    c->communicates = 1;
    snprintf(c->steps, sizeof c->steps, "%s(%s) %s%s%s%s%s", tally_name(k),
             d->group == HP_COLL_GROUP_AXIS ? m->name[d->axis] : "world", hp_api_bytes_str(bb, sizeof bb, c->bytes),
             peer, d->purpose ? " (" : "", d->purpose ? d->purpose : "", d->purpose ? ")" : "");
    t->count[ph][k]++;
    t->bytes[ph][k] += c->bytes;
    return 1;
}

static hp_status add_coll(hp_plan_rank_report *r, tally *t, const hp_plan_collective *c) {
    if (r->ncollectives == t->cap) {
        int cap = t->cap ? 2 * t->cap : 32;
        hp_plan_collective *n = realloc(r->collectives, sizeof *n * (size_t)cap);
        if (!n) return hp_errorf("hp_plan_report_create: out of memory");
        r->collectives = n, t->cap = cap;
    }
    r->collectives[r->ncollectives++] = *c;
    return HP_OK;
}

/* A redistribution node's plan: its steps, the groups it talks over, bytes. */
static void redist_coll(hp_plan_collective *c, tally *t, const hp_redist *p, const hp_mesh *m, int rank, hp_phase ph) {
    hp_redist_str(c->steps, sizeof c->steps, p);
    size_t len = strlen(c->steps);
    if (p->elem_bytes == 2 && p->nsteps && len < sizeof c->steps)
        snprintf(c->steps + len, sizeof c->steps - len, " (bf16)"); /* the bytes count 2 per element */
    c->bytes = p->bytes;
    size_t u = 0;
    for (int s = 0; s < p->nsteps; s++) {
        const hp_redist_step *st = &p->step[s];
        int k = (int)st->kind;
        t->count[ph][k]++;
        t->bytes[ph][k] += st->bytes;
        if (k == HP_RD_SLICE || k == HP_RD_TO_PARTIAL) continue;
        c->communicates = 1;
        char gb[160];
        hp_plan_group_str(gb, sizeof gb, m, st->axis, rank);
        if (!strstr(c->groups, gb) && u < sizeof c->groups)
            u += (size_t)snprintf(c->groups + u, sizeof c->groups - u, "%s%s", u ? " " : "", gb);
    }
    if (!c->groups[0]) snprintf(c->groups, sizeof c->groups, "-");
}

static hp_status gather_colls(hp_plan_rank_report *r, tally *t, const hp_compiled *cc) {
    const hp_graph *lg = cc->rg.g;
    const hp_mesh *m = &cc->mesh;
    for (int i = 0; i < lg->nnodes; i++) {
        const hp_node *n = &lg->nodes[i];
        hp_plan_collective c;
        memset(&c, 0, sizeof c);
        c.phase = phase_name(n->phase);
        snprintf(c.where, sizeof c.where, "%s", n->name);
        char *suffix = strstr(c.where, ".redistribute");
        if (suffix && suffix[13] == 0) *suffix = 0;
        hp_coll_desc d; /* the collectives that start (or are) a transfer; waits add nothing */
        if (!hp_coll_describe(&d, lg, n) || d.role == HP_COLL_WAIT) continue;
        if (d.kind == HP_COLL_REDISTRIBUTE) {
            redist_coll(&c, t, &cc->rg.ctx.plans[d.plan], m, r->rank, n->phase);
        } else if (d.kind == HP_COLL_ALL_GATHER && d.group == HP_COLL_GROUP_AXIS) {
            int axis = d.axis, k = m->size[axis];
            double out = 4.0 * (double)hp_val_numel(lg, n->out[0]);
            c.bytes = out * (k - 1) / k;
            c.communicates = 1;
            char bb[32];
            snprintf(c.steps, sizeof c.steps, "all-gather(%s) %s (%s)", m->name[axis],
                     hp_api_bytes_str(bb, sizeof bb, c.bytes), d.purpose ? d.purpose : "");
            hp_plan_group_str(c.groups, sizeof c.groups, m, axis, r->rank);
            t->count[n->phase][HP_RD_ALL_GATHER]++;
            t->bytes[n->phase][HP_RD_ALL_GATHER] += c.bytes;
        } else if (d.group == HP_COLL_GROUP_FSDP_SHARD || d.group == HP_COLL_GROUP_FSDP_REPLICAS) {
            const hp_fsdp_plan *f = &cc->fsdp;
            const hp_fsdp_unit *un = &f->units[d.unit];
            int gather = d.kind == HP_COLL_ALL_GATHER, reps = d.group == HP_COLL_GROUP_FSDP_REPLICAS;
            if (reps && (f->replicas <= 1 || un->split)) continue; /* a split unit: no replicas' all-reduce */
            int axis = reps ? f->replicate_axis : f->shard_axis, k = m->size[axis];
            /* bytes a rank sends: (k - 1) shards in a ring-like exchange; an all-reduce twice that */
            /* reduce=bf16: the reduce-scatter moves bf16; gather=bf16: the all-gather */
            int bf16 = gather ? f->gather_bf16 : !reps && f->reduce_bf16;
            c.bytes = (bf16 ? 2.0 : 4.0) * (double)un->shard * (k - 1) * (reps ? 2.0 : 1.0);
            c.communicates = 1;
            char bb[32];
            snprintf(c.steps, sizeof c.steps, "%s(%s) %s (unit %s, %s)",
                     gather ? "all-gather" : reps ? "all-reduce" : "reduce-scatter", m->name[axis],
                     hp_api_bytes_str(bb, sizeof bb, c.bytes), un->name,
                     gather ? (f->level == 3 ? (bf16 ? "in place, bf16: shared inside a supernode"
                                                : f->transient ? "into a transient slot shared inside a supernode"
                                                               : "in place: shared inside a supernode")
                                     : bf16 ? "updated shards, bf16" : "updated shards")
                            : reps ? "replicas" : bf16 ? "gradient shards, bf16" : "gradient shards");
            hp_plan_group_str(c.groups, sizeof c.groups, m, axis, r->rank);
            int kind = gather ? HP_RD_ALL_GATHER : reps ? HP_RD_ALL_REDUCE : HP_RD_REDUCE_SCATTER;
            t->count[n->phase][kind]++;
            t->bytes[n->phase][kind] += c.bytes;
        } else if (d.kind == HP_COLL_ALL_GATHER && d.group == HP_COLL_GROUP_WORLD) {
            int w = hp_mesh_size(m);
            if (w <= 1) continue; /* the deterministic mode's exact norm on one rank: nothing moves */
            c.bytes = d.bytes;
            c.communicates = 1;
            snprintf(c.steps, sizeof c.steps, "all-gather(world) %.0f B (%s)", c.bytes, d.purpose ? d.purpose : "");
            snprintf(c.groups, sizeof c.groups, "world[0..%d]", w - 1);
            t->count[n->phase][HP_RD_ALL_GATHER]++;
            t->bytes[n->phase][HP_RD_ALL_GATHER] += c.bytes;
        } else if (d.group == HP_COLL_GROUP_AXIS || d.group == HP_COLL_GROUP_WORLD) {
            if (!described_coll(&c, t, &d, m, r->rank, n->phase)) continue;
        } else {
            continue;
        }
        HP_TRY(add_coll(r, t, &c));
    }
    return HP_OK;
}

static hp_status gather_totals(hp_plan_rank_report *r, const tally *t) {
    r->totals = calloc(HP_NPHASES * NTALLY, sizeof *r->totals);
    if (!r->totals) return hp_errorf("hp_plan_report_create: out of memory");
    for (int ph = 0; ph < HP_NPHASES; ph++)
        for (int k = 0; k < NTALLY; k++) {
            if (!t->count[ph][k]) continue;
            hp_plan_total *o = &r->totals[r->ntotals++];
            o->phase = phase_name((hp_phase)ph);
            o->kind = tally_name(k);
            o->communicates = k != HP_RD_SLICE && k != HP_RD_TO_PARTIAL;
            o->count = t->count[ph][k];
            o->bytes = t->bytes[ph][k];
        }
    return HP_OK;
}

/* ---- memory ---- */

/* autopar's memory model, its communication buffers in the report's scratch */
void hp_plan_gather_memory(hp_plan_memory *m, const hp_compiled *cc, int threads) {
    hp_rank_memory r;
    hp_rank_memory_of(&r, cc, threads);
    *m = (hp_plan_memory){.params = r.params, .grads = r.grads, .optimizer = r.optimizer, .activations = r.activations,
                          .scratch = r.scratch + r.comm, .inputs = r.inputs, .total = r.total};
}

/* ---- one rank ---- */

hp_status hp_plan_gather_rank(hp_plan_rank_report *r, const hp_compiled *cc, const int *listed, int nlisted,
                              int threads) {
    r->rank = cc->rank;
    for (int a = 0; a < cc->mesh.ndim && a < HP_PLAN_MAX_AXES; a++)
        hp_plan_group_str(r->axis_group[a], sizeof r->axis_group[a], &cc->mesh, a, r->rank);
    HP_TRY(gather_tensors(r, cc, listed, nlisted));
    tally t;
    memset(&t, 0, sizeof t);
    HP_TRY(gather_colls(r, &t, cc));
    HP_TRY(gather_totals(r, &t));
    hp_plan_gather_memory(&r->memory, cc, threads);
    return hp_plan_gather_fsdp(&r->fsdp, r->tensors, cc, listed, nlisted);
}

void hp_plan_rank_report_free(hp_plan_rank_report *r) {
    free(r->tensors);
    free(r->collectives);
    free(r->totals);
    free(r->fsdp.units);
}
