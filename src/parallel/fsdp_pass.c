/* parallel/fsdp_pass: the FSDP / ZeRO pass of hp_compile (see parallel/fsdp.h) —
 * before lowering, the units and the store layout; after lowering, the gather
 * and reduce nodes; then the optimizer's pieces of each rank's shards. */
#include "parallel/fsdp.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "parallel/fsdp_slots.h"

void hp_fsdp_plan_free(hp_fsdp_plan *f) {
    free(f->units);
    free(f->gval);
    free(f->unit_of);
    free(f->offset);
    free(f->grad_layout);
    free(f->local);
    free(f->slot_at);
    memset(f, 0, sizeof *f);
}

void hp_fsdp_places(hp_fsdp_place *out, const hp_fsdp_plan *f) {
    for (int k = 0; f->level && k < f->nparams; k++) {
        int u = f->unit_of[k];
        if (u >= 0) out[f->gval[k]] = (hp_fsdp_place){(int64_t)(f->offset[k] - f->units[u].offset),
                                                       (int64_t)f->units[u].shard};
    }
}

size_t hp_fsdp_largest_unit(const hp_fsdp_plan *f) {
    size_t big = 0;
    for (int u = 0; u < f->nunits; u++)
        if (f->units[u].size > big) big = f->units[u].size;
    return big;
}

static size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* "h.3.attn.qkv.weight" -> "h.3" (a name part that is all digits ends the
 * block's prefix); names without one are the root's. */
static void default_unit(char *out, size_t cap, const char *name) {
    const char *dot = strchr(name, '.');
    while (dot) {
        const char *e = dot + 1;
        while (*e >= '0' && *e <= '9') e++;
        if (e > dot + 1 && (*e == '.' || !*e)) {
            snprintf(out, cap, "%.*s", (int)(e - name), name);
            return;
        }
        dot = strchr(dot + 1, '.');
    }
    snprintf(out, cap, "root");
}

static int unit_named(const hp_fsdp_plan *f, const char *name) {
    for (int u = 0; u < f->nunits; u++)
        if (!strcmp(f->units[u].name, name)) return u;
    return -1;
}

/* 0: not managed; 1: managed, Replicate on the replicate axis (or none);
 * 2: managed, split along the replicate axis (a split unit's: the experts) */
static int managed(const hp_layout *l, const hp_fsdp_spec *s) {
    if (l->p[s->shard_axis].kind != HP_REPLICATE) return 0;
    if (s->replicate_axis < 0 || l->p[s->replicate_axis].kind == HP_REPLICATE) return 1;
    return l->p[s->replicate_axis].kind == HP_SHARD ? 2 : 0;
}

typedef struct {
    size_t (*out)[2];
    int cap, n;
    size_t a, b; /* the range being extended */
} span_list;

static void span_flush(span_list *l) {
    if (l->b > l->a) {
        if (l->n < l->cap) l->out[l->n][0] = l->a, l->out[l->n][1] = l->b;
        l->n++;
    }
    l->a = l->b = 0;
}

static void span_add(span_list *l, size_t x, size_t y) {
    if (y <= x) return;
    if (l->b > l->a && x == l->b) {
        l->b = y;
        return;
    }
    span_flush(l);
    l->a = x, l->b = y;
}

int hp_fsdp_store_spans(size_t (*out)[2], int cap, const hp_fsdp_plan *f) {
    span_list l = {out, cap, 0, 0, 0};
    span_add(&l, 0, f->nunits ? f->units[0].offset : f->total); /* the unmanaged parameters come first */
    for (int u = 0; u < f->nunits; u++)
        for (int j = 0; j < f->members; j++)
            if (f->local[j])
                span_add(&l, f->units[u].offset + f->units[u].shard * (size_t)j,
                         f->units[u].offset + f->units[u].shard * (size_t)(j + 1));
    span_flush(&l);
    return l.n;
}

/* unit_bytes: the managed parameters (unit_of[k] >= 0 on entry) in the
 * forward's first-use order (those the forward does not read after them, in
 * graph order), cut into units of at most `budget` bytes of the rank's local
 * pieces: a parameter that would pass the budget starts a new unit unless it
 * is small (at most budget / 16: a bias or a norm joins its neighbour), so a
 * parameter larger than the budget is a unit of its own with its small
 * neighbours; a parameter of another kind than the one before it (kind[k]:
 * managed()'s) starts a unit. A unit is named after its first parameter
 * ("wte", or "h.0.attn.qkv.weight+1" with one more). */
static hp_status byte_units(hp_fsdp_plan *out, const hp_graph *g, const hp_propagation *prop, const hp_mesh *m,
                            int rank, const int *ids, const unsigned char *kind, int64_t budget) {
    int np = out->nparams;
    int *kof = malloc(sizeof(int) * (size_t)(g->nvals ? g->nvals : 1)), *ord = malloc(sizeof(int) * (size_t)(np ? np : 1));
    unsigned char *seen = calloc((size_t)(np ? np : 1), 1);
    if (!kof || !ord || !seen) {
        free(kof), free(ord), free(seen);
        return hp_errorf("fsdp: out of memory");
    }
    for (int v = 0; v < g->nvals; v++) kof[v] = -1;
    for (int k = 0; k < np; k++)
        if (out->unit_of[k] >= 0) kof[ids[k]] = k;
    int n = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *nd = &g->nodes[i];
        if (nd->phase != HP_PHASE_FWD) continue;
        for (int q = 0; q < hp_node_nin_all(nd); q++) {
            int v = hp_node_input(g, nd, q), k = v >= 0 ? kof[v] : -1;
            if (k >= 0 && !seen[k]) seen[k] = 1, ord[n++] = k;
        }
    }
    for (int k = 0; k < np; k++)
        if (out->unit_of[k] >= 0 && !seen[k]) ord[n++] = k;
    /* where each gradient is complete in the backward (a gradient's rows added at the end, parallel/grad_rows,
     * do not count: its reduction starts before them) */
    int *done = kof; /* reused: kof is not read below */
    for (int k = 0; k < np; k++) done[k] = -1;
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *nd = &g->nodes[i];
        if (nd->phase != HP_PHASE_BWD || hp_op_is_grad_rows(nd->op)) continue;
        for (int q = 0; q < nd->nout; q++)
            for (int k = 0; k < np && nd->out[q] >= 0; k++)
                if (g->vals[ids[k]].grad == nd->out[q]) done[k] = i;
    }
    int cur = -1, first = -1, prev = -1;
    size_t sum = 0;
    for (int q = 0; q < n; q++) {
        int k = ord[q];
        hp_shape local;
        hp_local_shape(&local, NULL, &g->vals[ids[k]].shape, &prop->val[ids[k]], m, rank);
        size_t b = align_up((size_t)hp_shape_numel(&local), HP_FSDP_ALIGN) * sizeof(float);
        /* a parameter whose gradient is complete later in the backward than that of the one before it in the
         * forward (GPT-2's position table after the tied embedding, whose LM-head part is complete first)
         * starts a unit: it would hold the unit's reduction back */
        int late = prev >= 0 && done[k] > done[prev];
        int other = prev >= 0 && kind[k] != kind[prev]; /* split and replicated parameters: never one unit */
        prev = k;
        if (cur < 0 || late || other || (sum + b > (size_t)budget && b > (size_t)budget / 16)) {
            cur = out->nunits++, first = k, sum = 0;
            snprintf(out->units[cur].name, HP_NAME_LEN, "%s", g->vals[ids[k]].name);
        }
        sum += b;
        out->unit_of[k] = cur;
        out->units[cur].nparams++;
        if (k != first) {
            char nm[HP_NAME_LEN];
            snprintf(nm, sizeof nm, "%.*s+%d", HP_NAME_LEN - 8, g->vals[ids[first]].name, out->units[cur].nparams - 1);
            memcpy(out->units[cur].name, nm, sizeof nm);
        }
    }
    free(kof), free(ord), free(seen);
    return HP_OK;
}

/* Which members of the shard group share this rank's supernode (contiguous
 * global ranks, supernode_ranks each), and whether the gathered units are
 * transient (see the header). */
static hp_status supernode_members(hp_fsdp_plan *out, const hp_mesh *m, const hp_fsdp_spec *s, int rank,
                                   int supernode_ranks) {
    out->local = calloc((size_t)out->members, 1);
    if (!out->local) return hp_errorf("fsdp: out of memory");
    int coord[HP_MESH_MAX_DIMS];
    hp_mesh_coords(coord, m, rank);
    for (int j = 0; j < out->members; j++) {
        coord[s->shard_axis] = j;
        int r = hp_mesh_rank(m, coord);
        out->local[j] = supernode_ranks <= 0 || r / supernode_ranks == rank / supernode_ranks;
        out->sn_members += out->local[j];
    }
    /* hyperpar: a supernode keeps its members' shards and shares the slots; fsdp2 (PyTorch FSDP2's default
     * reshard_after_forward): every rank keeps its own shard and gathers into slots of its own */
    out->transient = out->level == 3 && s->reshard_after_forward && !out->gather_bf16 &&
                     (out->style == HP_FSDP_STYLE_HYPERPAR ? out->sn_members < out->members : out->members > 1);
    if (out->transient && out->style == HP_FSDP_STYLE_FSDP2) {
        for (int j = 0; j < out->members; j++) out->local[j] = j == out->me;
        out->sn_members = 1;
    }
    return HP_OK;
}

hp_status hp_fsdp_prepare(hp_fsdp_plan *out, const hp_graph *g, const hp_propagation *prop, const hp_mesh *m,
                          const hp_plan *plan, int rank, int supernode_ranks, int64_t keep_auto,
                          const unsigned char *held) {
    memset(out, 0, sizeof *out);
    const hp_fsdp_spec *s = &plan->fsdp;
    if (s->level <= 0) return HP_OK;
    const char *where = s->where ? s->where : "plan";
    int coord[HP_MESH_MAX_DIMS];
    hp_mesh_coords(coord, m, rank);
    out->level = s->level;
    out->style = s->style;
    out->shard_axis = s->shard_axis;
    out->replicate_axis = s->replicate_axis;
    out->members = m->size[s->shard_axis];
    out->me = coord[s->shard_axis];
    out->reduce_bf16 = s->reduce_bf16;
    out->gather_bf16 = s->gather_bf16;
    out->replicas = s->replicate_axis >= 0 ? m->size[s->replicate_axis] : 1;
    out->prefetch = s->prefetch;
    out->keep_bytes = s->keep_bytes == HP_FSDP_KEEP_AUTO ? keep_auto : s->keep_bytes;
    int np = hp_graph_params(g, NULL, 0);
    int *ids = malloc(sizeof(int) * (size_t)(np ? np : 1));
    out->unit_of = malloc(sizeof(int) * (size_t)(np ? np : 1));
    out->offset = calloc((size_t)(np ? np : 1), sizeof(size_t));
    out->units = calloc((size_t)(np + s->nunits + 1), sizeof *out->units);
    out->grad_layout = calloc((size_t)(g->nvals ? g->nvals : 1), sizeof *out->grad_layout);
    unsigned char *matched = calloc((size_t)s->nunits + 1, 1), *kind = calloc((size_t)(np ? np : 1), 1);
    hp_status st = ids && out->unit_of && out->offset && out->units && out->grad_layout && matched && kind
                       ? HP_OK
                       : hp_errorf("fsdp: out of memory");
    if (!st) { /* the rank's parameters: a pipeline stage's only */
        hp_graph_params(g, ids, np);
        int n = 0;
        for (int k = 0; k < np; k++)
            if (!held || held[ids[k]]) ids[n++] = ids[k];
        np = n;
        out->gval = malloc(sizeof(int) * (size_t)(np ? np : 1));
        if (out->gval) memcpy(out->gval, ids, sizeof(int) * (size_t)np);
        else st = hp_errorf("fsdp: out of memory");
    }
    out->nparams = np;
    /* the plan's units first (in the plan's order), then the default ones as met */
    for (int u = 0; !st && u < s->nunits; u++) snprintf(out->units[out->nunits++].name, HP_NAME_LEN, "%s", s->units[u].name);
    for (int k = 0; !st && k < np; k++) {
        const hp_value *v = &g->vals[ids[k]];
        out->unit_of[k] = -1;
        kind[k] = v->grad < 0 ? 0 : (unsigned char)managed(&prop->val[ids[k]], s);
        if (!kind[k]) continue;
        int u = -1;
        if (held && held[ids[k]] == 2) { /* tied across stages: a unit of its own, made below */
            for (int r = 0; r < s->nunits; r++)
                for (int q = 0; q < s->units[r].nglobs; q++)
                    if (fnmatch(s->units[r].globs[q], v->name, 0) == 0) matched[r] = 1;
            out->unit_of[k] = -3;
            continue;
        }
        if (s->unit_bytes > 0) {
            out->unit_of[k] = 0; /* managed: byte_units below */
            continue;
        } else if (s->nunits) {
            for (int r = 0; r < s->nunits && u < 0; r++)
                for (int q = 0; q < s->units[r].nglobs && u < 0; q++)
                    if (fnmatch(s->units[r].globs[q], v->name, 0) == 0) u = r;
            if (u < 0)
                st = hp_errorf("%s: fsdp: parameter '%s' is in no unit (add one, e.g. 'unit rest: *')", where, v->name);
        } else {
            char nm[HP_NAME_LEN];
            default_unit(nm, sizeof nm, v->name);
            if (kind[k] == 2) { /* split along the replicate axis: a unit of its own kind, "h.3@ep" */
                size_t l = strlen(nm);
                snprintf(nm + l, sizeof nm - l, "@%s", m->name[s->replicate_axis]);
            }
            u = unit_named(out, nm);
            if (u < 0) {
                u = out->nunits++;
                snprintf(out->units[u].name, HP_NAME_LEN, "%s", nm);
            }
        }
        out->unit_of[k] = u;
        if (u >= 0) out->units[u].nparams++;
    }
    if (!st && s->unit_bytes > 0) st = byte_units(out, g, prop, m, rank, ids, kind, s->unit_bytes);
    for (int k = 0; !st && k < np; k++) {
        if (out->unit_of[k] != -3) continue;
        int u = out->unit_of[k] = out->nunits++;
        snprintf(out->units[u].name, HP_NAME_LEN, "%s", g->vals[ids[k]].name);
        out->units[u].nparams = 1;
    }
    /* split units: every parameter of a unit of one kind (a plan's unit may not mix them) */
    for (int k = 0; !st && k < np; k++) {
        int u = out->unit_of[k], first = 0;
        if (u < 0) continue;
        while (out->unit_of[first] != u) first++;
        if (kind[first] != kind[k])
            st = hp_errorf("%s: fsdp: unit '%s' has '%s', split along the replicate axis '%s', and '%s', replicated "
                           "along it (give the split parameters, e.g. the experts, a unit of their own)",
                           where, out->units[u].name, g->vals[ids[kind[k] == 2 ? k : first]].name,
                           m->name[s->replicate_axis], g->vals[ids[kind[k] == 2 ? first : k]].name);
        out->units[u].split = kind[k] == 2;
    }
    for (int u = 0; !st && u < s->nunits; u++)
        if (!out->units[u].nparams && !matched[u])
            st = hp_errorf("%s: unit '%s' matches no parameter FSDP manages", s->units[u].where, s->units[u].name);
    /* the store: the unmanaged parameters (unit -1), then unit by unit */
    size_t at = 0;
    for (int u = -1; !st && u < out->nunits; u++) {
        hp_fsdp_unit *un = u >= 0 ? &out->units[u] : NULL;
        if (un) un->offset = at;
        for (int k = 0; k < np; k++) {
            if (out->unit_of[k] != u) continue;
            hp_shape local;
            hp_local_shape(&local, NULL, &g->vals[ids[k]].shape, &prop->val[ids[k]], m, rank);
            out->offset[k] = at;
            at += align_up((size_t)hp_shape_numel(&local), HP_FSDP_ALIGN);
        }
        if (!un) continue;
        un->size = align_up(at - un->offset, (size_t)HP_FSDP_ALIGN * (size_t)out->members);
        un->shard = un->size / (size_t)out->members;
        at = un->offset + un->size;
    }
    out->total = at;
    if (!st) st = supernode_members(out, m, s, rank, supernode_ranks);
    /* HSDP: the replicas' all-reduce fused behind the reduce-scatter when no other gradient reduction
     * (an unmanaged parameter's) could use the replicate group meanwhile */
    out->fuse_replicas = out->replicas > 1 && out->style == HP_FSDP_STYLE_HYPERPAR && !out->reduce_bf16;
    for (int k = 0; k < np && !st; k++)
        if (out->unit_of[k] < 0 && g->vals[ids[k]].grad >= 0) out->fuse_replicas = 0;
    /* nor when parameters are split along the replicate axis: its group carries their own traffic (EP's token
     * exchange in the backward), which the all-reduce, issued later from the shard group's lane, would cross */
    for (int u = 0; u < out->nunits && !st; u++)
        if (out->units[u].split) out->fuse_replicas = 0;
    /* gradients stay Partial on the axes this pass reduces */
    for (int k = 0; !st && k < np; k++) {
        if (out->unit_of[k] < 0) continue;
        hp_layout l = prop->val[ids[k]];
        if (m->size[s->shard_axis] > 1) l.p[s->shard_axis] = hp_partial(HP_PARTIAL_SUM);
        if (s->replicate_axis >= 0 && m->size[s->replicate_axis] > 1 && kind[k] == 1)
            l.p[s->replicate_axis] = hp_partial(HP_PARTIAL_SUM); /* a split one stays split there (its own piece) */
        out->grad_layout[ids[k]] = l;
    }
    free(ids), free(matched), free(kind);
    if (st) hp_fsdp_plan_free(out);
    return st;
}

/* ---- after lowering: the nodes ---- */

static int touches(const hp_graph *g, const hp_node *n, const unsigned char *mark) {
    for (int k = 0; k < hp_node_nin_all(n); k++)
        if (mark[hp_node_input(g, n, k)]) return 1;
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] >= 0 && mark[n->out[k]]) return 1;
    return 0;
}

static int by_key(const void *a_, const void *b_) {
    const int *a = a_, *b = b_;
    return a[0] != b[0] ? (a[0] < b[0] ? -1 : 1) : a[1] - b[1];
}

/* A node of unit `unit` (a.i[0]) named "fsdp.<unit>.<what>": inputs in[nin]
 * then xin[nx], outputs out[nout]. */
static int emit(hp_rank_graph *rg, const hp_opdef *op, const int *in, int nin, const int *xin, int nx, const int *out,
                int nout, int unit, hp_phase ph, const char *name, const char *what) {
    hp_attrs a;
    memset(&a, 0, sizeof a);
    a.i[0] = unit;
    int node = hp_graph_node_list(rg->g, op, in, nin, xin, nx, out, nout, &a, ph);
    if (node >= 0) snprintf(rg->g->nodes[node].name, HP_NAME_LEN, "fsdp.%.60s.%s", name, what);
    return node;
}

/* Unit u's gather start and wait in phase ph over its parameters' values
 * xp[nx] (what: the names' suffix), hinted before nodes `start` and `wait`;
 * a.i[2] gather=bf16, a.i[3] the unit's transient slot (-1: none). */
static hp_status emit_gather(hp_rank_graph *rg, hp_fsdp_plan *f, int u, const int *xp, int nx, hp_phase ph,
                             const char *what, int start, int wait) {
    char wn[24];
    snprintf(wn, sizeof wn, "%s_wait", what);
    int s = emit(rg, &hp_op_fsdp_gather_start, NULL, 0, xp, nx, NULL, 0, u, ph, f->units[u].name, what);
    int w = emit(rg, &hp_op_fsdp_gather_wait, NULL, 0, xp, nx, NULL, 0, u, ph, f->units[u].name, wn);
    HP_TRY(hp_rank_graph_sync_nodes(rg));
    HP_TRY(hp_graph_error(rg->g));
    hp_node *ns = &rg->g->nodes[s], *nw = &rg->g->nodes[w];
    ns->a.i[2] = nw->a.i[2] = f->gather_bf16;
    ns->a.i[3] = nw->a.i[3] = f->transient ? f->units[u].slot : -1;
    rg->hint[s] = HP_HINT_BEFORE(start);
    rg->hint[w] = HP_HINT_BEFORE(wait);
    if (rg->chunk) rg->chunk[s] = rg->chunk[w] = f->units[u].chunk;
    if (ph == HP_PHASE_FWD) f->units[u].gather_node[0] = s, f->units[u].gather_node[1] = w;
    return HP_OK;
}

/* gather=bf16: each managed parameter's bf16 copy becomes its place in the
 * store's bf16 mirror, its cast a node that does nothing. managed[nvals]:
 * scratch, left marking the managed parameters. */
static hp_status mirror_copies(const hp_fsdp_plan *f, hp_graph *g, const int *ids, unsigned char *managed) {
    memset(managed, 0, (size_t)g->nvals);
    for (int q = 0; q < f->nparams; q++) managed[ids[q]] = f->unit_of[q] >= 0;
    for (int i = 0; i < g->nnodes; i++) {
        hp_node *nd = &g->nodes[i];
        if (!hp_op_is_cast(nd->op) || nd->phase != HP_PHASE_FWD || nd->a.i[0] != HP_BF16) continue;
        int p = nd->in[0], c = nd->out[0];
        if (!managed[p]) continue;
        if (g->vals[c].mirror_of >= 0)
            return hp_errorf("fsdp gather=bf16: '%s' has two bf16 copies", g->vals[p].name);
        nd->op = &hp_op_fsdp_param16;
        g->vals[c].mirror_of = p;
        g->vals[c].persistent = 1;
    }
    return HP_OK;
}

hp_status hp_fsdp_emit(hp_fsdp_plan *f, hp_rank_graph *rg) {
    if (f->level <= 0) return HP_OK;
    hp_graph *g = rg->g;
    int nu = f->nunits, n0 = g->nnodes;
    int *ids = malloc(sizeof(int) * (size_t)(f->nparams ? f->nparams : 1));
    int *xp = malloc(sizeof(int) * (size_t)(f->nparams ? f->nparams : 1));
    int *first = malloc(sizeof(int) * 2 * (size_t)(nu ? nu : 1)); /* (fwd position, unit) */
    int *last = malloc(sizeof(int) * 2 * (size_t)(nu ? nu : 1));  /* (bwd position, unit) */
    unsigned char *mp = calloc((size_t)g->nvals, 1), *mg = calloc((size_t)g->nvals, 1);
    hp_status st = ids && xp && first && last && mp && mg ? HP_OK : hp_errorf("fsdp: out of memory");
    hp_fsdp_slots sl = {0};
    if (!st && hp_graph_params(g, NULL, 0) != f->nparams)
        st = hp_errorf("fsdp: the rank's graph has %d parameters, FSDP laid out %d", hp_graph_params(g, NULL, 0),
                       f->nparams);
    if (!st) hp_graph_params(g, ids, f->nparams);
    for (int k = 0; !st && k < f->nparams; k++)
        if (ids[k] < rg->nglobal_of && rg->global_of[ids[k]] != f->gval[k])
            st = hp_errorf("fsdp: the rank's parameter %d ('%s') is not the one FSDP laid out there", k,
                           g->vals[ids[k]].name);
    if (!st && f->gather_bf16) st = mirror_copies(f, g, ids, mp);
    if (!st && f->transient) { /* the readers move onto the compute copies in the slots */
        st = hp_fsdp_slots_make(&sl, f, g, ids, n0);
        if (!st) {
            unsigned char *m2 = realloc(mp, (size_t)g->nvals), *g2 = m2 ? realloc(mg, (size_t)g->nvals) : NULL;
            if (m2) mp = m2;
            if (g2) mg = g2;
            if (!m2 || !g2) st = hp_errorf("fsdp: out of memory");
        }
    }
    for (int u = 0; !st && u < nu; u++) {
        memset(mp, 0, (size_t)g->nvals);
        memset(mg, 0, (size_t)g->nvals);
        for (int k = 0; k < f->nparams; k++)
            if (f->unit_of[k] == u) {
                mp[ids[k]] = 1;
                if (sl.pc && sl.pc[k] >= 0) mp[sl.pc[k]] = 1; /* transient: the compute copy is the unit's */
                if (g->vals[ids[k]].grad >= 0) mg[g->vals[ids[k]].grad] = 1;
            }
        for (int v = 0; v < g->nvals; v++) /* gather=bf16: the copies in the mirror are the unit's too */
            if (g->vals[v].mirror_of >= 0 && mp[g->vals[v].mirror_of]) mp[v] = 1;
        first[2 * u] = last[2 * u] = -1;
        first[2 * u + 1] = last[2 * u + 1] = u;
        f->units[u].chunk = -1;
        f->units[u].gather_node[0] = f->units[u].gather_node[1] = -1;
        for (int i = 0; i < n0 && !st; i++) {
            const hp_node *n = &g->nodes[i];
            int fw = n->phase == HP_PHASE_FWD && touches(g, n, mp);
            int bw = n->phase == HP_PHASE_BWD && (touches(g, n, mp) || touches(g, n, mg));
            if (fw && first[2 * u] < 0) first[2 * u] = i;
            if (bw) last[2 * u] = i;
            /* an interleaved pipeline stage: the unit's gathers and reductions run in its model chunk's actions */
            int c = (fw || bw) && rg->chunk && i < rg->nnode_of ? rg->chunk[i] : -1;
            if (c < 0) continue;
            if (f->units[u].chunk >= 0 && f->units[u].chunk != c)
                st = hp_errorf("fsdp: unit '%s' has parameters in model chunks %d and %d of this pipeline stage "
                               "(give each chunk's blocks units of their own)", f->units[u].name, f->units[u].chunk, c);
            f->units[u].chunk = c;
        }
        if (f->units[u].chunk < 0) f->units[u].chunk = 0;
    }
    if (!st) {
        qsort(first, (size_t)nu, 2 * sizeof(int), by_key);
        qsort(last, (size_t)nu, 2 * sizeof(int), by_key);
    }
    /* forward: gathers, `prefetch` units ahead (units nothing reads need none) */
    int nf = 0, fa = 0;
    while (fa < nu && first[2 * fa] < 0) fa++;
    for (int q = fa; !st && q < nu; q++) {
        int u = first[2 * q + 1], nx = 0;
        f->units[u].fwd_pos = nf++;
        for (int k = 0; k < f->nparams; k++)
            if (f->unit_of[k] == u) xp[nx++] = sl.pc && sl.pc[k] >= 0 ? sl.pc[k] : ids[k];
        int ahead = q - f->prefetch < fa ? fa : q - f->prefetch;
        st = emit_gather(rg, f, u, xp, nx, HP_PHASE_FWD, "gather", first[2 * ahead], first[2 * q]);
    }
    /* transient: the backward gathers again the units that gave up their slot, in the order it needs them (so
     * gathers started before one node queue in that order) */
    int nb = 0;
    for (int u = 0; !st && f->transient && u < nu; u++)
        if (sl.bwd_start[u] >= 0) first[2 * nb] = sl.bwd_wait[u], first[2 * nb + 1] = u, nb++; /* (first: done with) */
    if (nb) qsort(first, (size_t)nb, 2 * sizeof(int), by_key);
    for (int q = 0; !st && q < nb; q++) {
        int u = first[2 * q + 1];
        int nx = 0;
        for (int k = 0; k < f->nparams; k++)
            if (f->unit_of[k] == u && sl.pc[k] >= 0) xp[nx++] = sl.pc[k];
        st = emit_gather(rg, f, u, xp, nx, HP_PHASE_BWD, "bwd_gather", sl.bwd_start[u], sl.bwd_wait[u]);
    }
    /* each unit's gradient as one value, its parameters' gradients views into it */
    for (int u = 0; !st && u < nu; u++) {
        hp_fsdp_unit *un = &f->units[u];
        un->grad_acc = un->grad_sum = -1;
        un->reduce_node[0] = un->reduce_node[1] = un->reduce_node[2] = -1; /* set below when the unit has a backward */
        char nm[HP_NAME_LEN];
        snprintf(nm, sizeof nm, "fsdp.%.60s.grad", un->name);
        un->grad = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1((int64_t)un->size), nm);
        if (un->grad < 0) break;
        g->vals[un->grad].persistent = f->level == 1;
        g->vals[un->grad].no_grad = 1;
        snprintf(nm, sizeof nm, "fsdp.%.60s.grad_shard", un->name);
        un->grad_shard = f->level == 1 ? hp_graph_view(g, un->grad, (int64_t)un->shard * f->me, hp_shape1((int64_t)un->shard), nm)
                                       : hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1((int64_t)un->shard), nm);
        if (un->grad_shard < 0) break;
        g->vals[un->grad_shard].persistent = 1;
        g->vals[un->grad_shard].no_grad = 1;
        for (int k = 0; k < f->nparams; k++) {
            int gv = g->vals[ids[k]].grad;
            if (f->unit_of[k] != u || gv < 0) continue;
            g->vals[gv].view_of = un->grad;
            g->vals[gv].view_offset = (int64_t)(f->offset[k] - un->offset);
            g->vals[gv].persistent = f->level == 1;
        }
    }
    if (!st) st = hp_graph_error(g);
    /* backward: each unit's reduction after its last node, waited after the next one's start */
    int prev = -1, la = 0;
    while (la < nu && last[2 * la] < 0) la++;
    for (int q = la; !st && q < nu; q++) {
        int u = last[2 * q + 1];
        const hp_fsdp_unit *un = &f->units[u];
        int io[2] = {un->grad, un->grad_shard};
        const char *nm = f->units[u].name;
        int s = emit(rg, &hp_op_fsdp_reduce_start, io, 1, NULL, 0, &io[1], 1, u, HP_PHASE_BWD, nm, "reduce");
        int w = emit(rg, &hp_op_fsdp_reduce_wait, io, 2, NULL, 0, NULL, 0, u, HP_PHASE_BWD, nm, "reduce_wait");
        int a = f->replicas > 1 && !un->split
                    ? emit(rg, &hp_op_fsdp_allreduce_wait, &io[1], 1, NULL, 0, NULL, 0, u, HP_PHASE_BWD, nm, "replicas_wait")
                    : -1;
        st = hp_rank_graph_sync_nodes(rg);
        if (!st) st = hp_graph_error(g);
        if (st) break;
        f->units[u].reduce_node[0] = s, f->units[u].reduce_node[1] = w, f->units[u].reduce_node[2] = a;
        /* reduce=bf16: a.i[2] set, a.i[3] the buffer pair (reductions alternate in backward order) */
        g->nodes[s].a.i[2] = g->nodes[w].a.i[2] = f->reduce_bf16;
        g->nodes[s].a.i[3] = g->nodes[w].a.i[3] = (q - la) % 2;
        rg->hint[s] = HP_HINT_AFTER(last[2 * q]);
        rg->hint[w] = HP_HINT_END;
        /* hyperpar: the previous unit's reduction overlaps this unit's; fsdp2: one in flight */
        if (prev >= 0) rg->hint[prev] = f->style == HP_FSDP_STYLE_FSDP2 ? HP_HINT_BEFORE(s) : HP_HINT_AFTER(s);
        if (a >= 0) rg->hint[a] = HP_HINT_END;
        if (rg->chunk) {
            rg->chunk[s] = rg->chunk[w] = un->chunk;
            if (a >= 0) rg->chunk[a] = un->chunk;
        }
        prev = w;
    }
    free(ids), free(xp), free(first), free(last), free(mp), free(mg);
    hp_fsdp_slots_free(&sl);
    return st;
}

int hp_fsdp_shard_part(int64_t *begin, int64_t *end, const hp_fsdp_plan *f, int k, int64_t numel) {
    const hp_fsdp_unit *un = &f->units[f->unit_of[k]];
    int64_t o = (int64_t)(f->offset[k] - un->offset), lo = (int64_t)un->shard * f->me, hi = lo + (int64_t)un->shard;
    int64_t a = o > lo ? o : lo, b = o + numel < hi ? o + numel : hi;
    *begin = a < b ? a - o : 0, *end = a < b ? b - o : 0;
    return a < b;
}

int hp_fsdp_optim_pieces(hp_optim_phase_param *out, const hp_fsdp_plan *f, hp_rank_graph *rg, int p, int k,
                         int replicas) {
    int u = f->unit_of[k];
    hp_graph *g = rg->g;
    const hp_fsdp_unit *un = &f->units[u];
    int64_t o = (int64_t)(f->offset[k] - un->offset), lo = (int64_t)un->shard * f->me, pa, pb;
    if (!hp_fsdp_shard_part(&pa, &pb, f, k, hp_val_numel(g, p))) return 0;
    int64_t a = o + pa; /* the part's start in the unit's floats */
    char nm[HP_NAME_LEN];
    snprintf(nm, sizeof nm, "%.70s[%lld:%lld]", g->vals[p].name, (long long)pa, (long long)pb);
    int pv = hp_graph_view(g, p, pa, hp_shape1(pb - pa), nm);
    snprintf(nm, sizeof nm, "%.64s.grad[%lld:%lld]", g->vals[p].name, (long long)pa, (long long)pb);
    int gv = -1;
    if (pv >= 0 && un->grad_sum >= 0) /* tied across pipeline stages: the stages' shards summed */
        gv = hp_graph_view(g, un->grad_sum, a - lo, hp_shape1(pb - pa), nm);
    else if (pv >= 0 && un->grad_acc >= 0) /* accumulated: the shard's accumulator */
        gv = hp_graph_view(g, un->grad_acc, a - lo, hp_shape1(pb - pa), nm);
    else if (pv >= 0 && g->vals[un->grad_shard].view_of >= 0) /* level 1: the shard is a view of the unit's gradient */
        gv = hp_graph_view(g, un->grad, a, hp_shape1(pb - pa), nm);
    else if (pv >= 0)
        gv = hp_graph_view(g, un->grad_shard, a - lo, hp_shape1(pb - pa), nm);
    if (gv < 0) return -1;
    *out = (hp_optim_phase_param){pv, gv, replicas, 1, p, 0};
    return 1;
}
