#include "parallel/holdings.h"

#include <stdlib.h>
#include <string.h>

/* Rank q's layout box of global value v. */
static void box_of(hp_shape *box, int64_t *start, const hp_holdings *h, int v, int q) {
    memset(start, 0, sizeof(int64_t) * HP_MAX_DIMS);
    hp_local_shape(box, start, &h->g->vals[v].shape, &h->layouts[v], &h->mesh, q);
}

/* Flat parts (FSDP): the part of tensor t's box (n elements) that rank q's
 * shard covers, from the parameter's place in its unit (every member of a
 * shard group lays its units out alike): elements [*lo, *hi) of the box
 * (empty: *lo == *hi). */
static void fsdp_part(int64_t *lo, int64_t *hi, const hp_holdings *h, const hp_held_tensor *t, int q, int64_t n) {
    int coord[HP_MESH_MAX_DIMS];
    hp_mesh_coords(coord, &h->mesh, q);
    int64_t o = t->part_at, s = t->part_shard * coord[h->fsdp.shard_axis];
    int64_t a = o > s ? o : s, b = o + n < s + t->part_shard ? o + n : s + t->part_shard;
    *lo = a - o, *hi = b > a ? b - o : a - o;
}

int hp_holdings_pieces_for(hp_holding *out, const hp_holdings *h, int t, int state, int q) {
    const hp_held_tensor *ht = &h->tensors[t];
    if (!hp_pp_holds(h->pp, &h->mesh, ht->v, q)) return 0; /* another pipeline stage's */
    hp_holding p = {.tensor = t};
    box_of(&p.box, p.start, h, ht->v, q);
    int64_t n = hp_shape_numel(&p.box);
    if (!ht->parts) {
        p.lo = 0, p.hi = n, p.current = p.loaded = 1;
        out[0] = p;
        return 1;
    }
    int k = 0;
    fsdp_part(&p.lo, &p.hi, h, &h->tensors[ht->param], q, n);
    p.part = p.current = 1;
    p.loaded = state || h->fsdp.level == 3;
    if (p.hi > p.lo) out[k++] = p;
    if (!state && h->fsdp.level != 3) { /* levels 1, 2: the rank's own store holds the whole box, loaded whole */
        p.lo = 0, p.hi = n, p.part = 0, p.current = 0, p.loaded = 1;
        out[k++] = p;
    }
    return k;
}

static int same_box(const hp_shape *a, const int64_t *as, const hp_shape *b, const int64_t *bs) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->d[i] != b->d[i] || as[i] != bs[i]) return 0;
    return 1;
}

typedef struct {
    hp_holdings *h;
    int cap_pieces;
} builder;

static hp_status add_piece(builder *b, const hp_holding *p) {
    hp_holdings *h = b->h;
    if (h->npieces == b->cap_pieces) {
        int cap = b->cap_pieces ? 2 * b->cap_pieces : 64;
        hp_holding *np = realloc(h->pieces, sizeof *np * (size_t)cap);
        if (!np) return hp_errorf("holdings: out of memory");
        h->pieces = np, b->cap_pieces = cap;
    }
    h->pieces[h->npieces++] = *p;
    h->tensors[p->tensor].count++;
    return HP_OK;
}

/* Tensor t's pieces on this rank: k is its parameter's store index, s the
 * state's local value (-1: a parameter). */
static hp_status add_pieces(builder *b, int t, int k, int s, const hp_shape *have) {
    hp_holdings *h = b->h;
    hp_held_tensor *ht = &h->tensors[t];
    ht->first = h->npieces;
    hp_holding ps[2];
    int n = hp_holdings_pieces_for(ps, h, ht->param, s >= 0, h->rank);
    if (!ht->parts ? !hp_shape_eq(have, &ps[0].box)
                     : s >= 0 && hp_shape_numel(have) != (n ? ps[0].hi - ps[0].lo : 0))
        return hp_errorf("holdings: rank %d's piece of '%s' does not have its layout's shape", h->rank, ht->name);
    for (int i = 0; i < n; i++) {
        hp_holding *p = &ps[i];
        p->tensor = t;
        p->place = s < 0 ? HP_HOLD_STORE : HP_HOLD_VALUE;
        p->local = s < 0 ? k : s;
        p->at = s < 0 ? h->store.offset[k] + (size_t)p->lo : 0; /* a state holds just [lo, hi) */
        HP_TRY(add_piece(b, p));
    }
    return HP_OK;
}

/* The ranks holding the same piece as p. */
static hp_status find_replicas(builder *b, hp_holding *p, int *cap) {
    hp_holdings *h = b->h;
    const hp_held_tensor *ht = &h->tensors[p->tensor];
    int world = hp_mesh_size(&h->mesh), flat = p->part;
    p->first_replica = h->nreplicas;
    p->nreplicas = 0;
    for (int q = 0; q < world; q++) {
        if (!hp_pp_holds(h->pp, &h->mesh, ht->v, q)) continue;
        hp_shape box;
        int64_t start[HP_MAX_DIMS], lo = 0, hi;
        box_of(&box, start, h, ht->v, q);
        if (!same_box(&box, start, &p->box, p->start)) continue;
        hi = hp_shape_numel(&box);
        if (flat) fsdp_part(&lo, &hi, h, &h->tensors[ht->param], q, hi);
        if (lo != p->lo || hi != p->hi) continue;
        if (h->nreplicas == *cap) {
            int c = *cap ? 2 * *cap : 256;
            int *nr = realloc(h->replicas, sizeof *nr * (size_t)c);
            if (!nr) return hp_errorf("holdings: out of memory");
            h->replicas = nr, *cap = c;
        }
        h->replicas[h->nreplicas++] = q;
        p->nreplicas++;
    }
    return p->nreplicas > 0 ? HP_OK : hp_errorf("holdings: '%s' has a piece no rank holds", ht->name);
}

/* The store's layout: FSDP's, else every parameter on a 16-float boundary in
 * graph order (runtime/params' own layout). */
static hp_status describe_store(hp_held_store *st, const hp_graph *lg, const hp_fsdp_plan *f) {
    int n = hp_graph_params(lg, NULL, 0);
    int *ids = malloc(sizeof(int) * (size_t)(n + 1));
    st->offset = calloc((size_t)n + 1, sizeof *st->offset);
    if (!ids || !st->offset) {
        free(ids);
        return hp_errorf("holdings: out of memory");
    }
    hp_graph_params(lg, ids, n);
    st->nparams = n;
    if (f->level) {
        if (f->nparams != n) {
            free(ids);
            return hp_errorf("holdings: FSDP lays out %d parameters, the rank's graph has %d", f->nparams, n);
        }
        memcpy(st->offset, f->offset, sizeof *st->offset * (size_t)n);
        st->total = f->total;
        st->mirror = f->gather_bf16;
        /* one store per supernode only when every trainable parameter is in a unit: a parameter outside the
         * units (reduced as in data parallelism) is updated by each rank holding it, which in a shared store
         * would update it once per sharer (the experts split along ep are in split units: the sharers, one
         * shard group, hold the same experts) */
        int outside = 0;
        for (int k = 0; k < n; k++) outside |= f->unit_of[k] < 0 && lg->vals[ids[k]].grad >= 0;
        st->shared = f->level == 3 && f->style == HP_FSDP_STYLE_HYPERPAR && !outside;
        st->shared_axis = st->shared ? f->shard_axis : -1;
        if (f->transient) {
            int ns = hp_fsdp_store_spans(NULL, 0, f);
            st->span = malloc(sizeof *st->span * (size_t)(ns ? ns : 1));
            if (!st->span) {
                free(ids);
                return hp_errorf("holdings: out of memory");
            }
            st->nspans = hp_fsdp_store_spans(st->span, ns, f);
            st->nslots = f->nslots, st->slot_at = f->slot_at;
        }
        st->parts = 1;
    } else {
        st->shared_axis = -1;
        size_t off = 0;
        for (int k = 0; k < n; k++) {
            st->offset[k] = off;
            off += ((size_t)hp_shape_numel(&lg->vals[ids[k]].shape) + 15) / 16 * 16;
        }
        st->total = off;
    }
    free(ids);
    return HP_OK;
}

/* The units of flat parts (FSDP's) and, per parameter held as flat parts,
 * the rank's piece of its reduced gradient: the same part as its current
 * piece, in the unit's reduced range (value grad_shard). */
static hp_status add_units(hp_holdings *h, const hp_fsdp_plan *f) {
    if (!f->level || f->nunits == 0) return HP_OK;
    h->units = calloc((size_t)f->nunits, sizeof *h->units);
    h->grads = calloc((size_t)h->ntensors + 1, sizeof *h->grads);
    if (!h->units || !h->grads) return hp_errorf("holdings: out of memory");
    h->nunits = f->nunits;
    for (int u = 0; u < f->nunits; u++) {
        hp_held_unit *x = &h->units[u];
        memcpy(x->name, f->units[u].name, HP_NAME_LEN);
        x->shard = f->units[u].shard, x->member = f->me, x->grad = f->units[u].grad_shard;
        x->replicas = f->replicas > 1 && !f->units[u].split ? f->replicas : 1; /* split: final at the reduce-scatter */
    }
    for (int t = 0; t < h->ntensors; t++) {
        hp_held_tensor *ht = &h->tensors[t];
        if (ht->is_state || ht->fsdp < 0) continue;
        int u = f->unit_of[ht->fsdp];
        ht->unit = u, ht->unit_at = f->offset[ht->fsdp] - f->units[u].offset;
        hp_holding p = {.tensor = t, .part = 1, .current = 1, .place = HP_HOLD_VALUE, .local = h->units[u].grad};
        box_of(&p.box, p.start, h, ht->v, h->rank);
        fsdp_part(&p.lo, &p.hi, h, ht, h->rank, hp_shape_numel(&p.box));
        if (p.hi <= p.lo || h->units[u].grad < 0) continue;
        p.at = ht->unit_at + (size_t)p.lo - h->units[u].shard * (size_t)h->units[u].member;
        ht->grad = h->ngrads;
        h->grads[h->ngrads++] = p;
    }
    for (int t = 0; t < h->ntensors; t++) /* a state's unit is its parameter's */
        if (h->tensors[t].is_state) h->tensors[t].unit = h->tensors[h->tensors[t].param].unit,
                                    h->tensors[t].unit_at = h->tensors[h->tensors[t].param].unit_at;
    return HP_OK;
}

hp_status hp_holdings_build(hp_holdings *out, const hp_graph *g, const hp_propagation *prop, const hp_mesh *m,
                            const hp_rank_graph *rg, const hp_fsdp_plan *f, const hp_fsdp_place *place, int rank,
                            const hp_pp_plan *pp) {
    memset(out, 0, sizeof *out);
    out->rank = rank;
    out->pp = pp && pp->axis >= 0 ? pp : NULL;
    out->partial = out->pp != NULL;
    const hp_graph *lg = rg->g;
    builder b = {out, 0};
    out->g = g, out->layouts = prop->val, out->mesh = *m, out->fsdp = *f;
    int np = hp_graph_params(g, NULL, 0), ns = 0;
    for (int v = 0; v < lg->nvals; v++) ns += lg->vals[v].kind == HP_V_STATE;
    int *ids = malloc(sizeof(int) * (size_t)(np + 1));
    int *local_index = malloc(sizeof(int) * (size_t)(lg->nvals + 1)); /* local value -> store index */
    out->tensors = calloc((size_t)(np + ns + 1), sizeof *out->tensors);
    hp_status st = ids && local_index && out->tensors ? HP_OK : hp_errorf("holdings: out of memory");
    if (!st) st = describe_store(&out->store, lg, f);
    if (!st) {
        hp_graph_params(g, ids, np);
        for (int v = 0, k = 0; v < lg->nvals; v++) local_index[v] = lg->vals[v].kind == HP_V_PARAM ? k++ : -1;
    }
    for (int i = 0; i < np && !st; i++) {
        int lp = rg->map[ids[i]], k = lp >= 0 ? local_index[lp] : -1;
        hp_held_tensor *t = &out->tensors[out->ntensors];
        memcpy(t->name, g->vals[ids[i]].name, HP_NAME_LEN);
        t->v = ids[i], t->param = out->ntensors, t->shape = g->vals[ids[i]].shape;
        t->fsdp = f->level && k >= 0 && k < f->nparams && f->unit_of[k] >= 0 ? k : -1;
        if (f->level && place && place[ids[i]].shard > 0) /* laid out by its holders (maybe other stages) */
            t->part_at = place[ids[i]].at, t->part_shard = place[ids[i]].shard;
        else if (t->fsdp >= 0)
            t->part_at = (int64_t)(f->offset[k] - f->units[f->unit_of[k]].offset),
            t->part_shard = (int64_t)f->units[f->unit_of[k]].shard;
        t->parts = t->part_shard > 0;
        t->unit = t->grad = -1;
        t->first = out->npieces;
        out->ntensors++;
        if (k >= 0) st = add_pieces(&b, out->ntensors - 1, k, -1, &lg->vals[lp].shape);
    }
    /* the states, grouped by parameter in graph order, each parameter's in value order */
    for (int i = 0; i < np && !st; i++) {
        int lp = rg->map[ids[i]], k = lp >= 0 ? local_index[lp] : -1;
        for (int s = 0; s < lg->nvals && lp >= 0 && !st; s++) {
            if (lg->vals[s].kind != HP_V_STATE || lg->vals[s].state_of != lp) continue;
            hp_held_tensor *t = &out->tensors[out->ntensors];
            *t = out->tensors[i];
            memcpy(t->name, lg->vals[s].name, HP_NAME_LEN);
            t->is_state = 1, t->param = i, t->count = 0;
            out->ntensors++;
            st = add_pieces(&b, out->ntensors - 1, k, s, &lg->vals[s].shape);
        }
    }
    if (!st && out->ntensors != np + ns) st = hp_errorf("holdings: %d optimizer states belong to no parameter",
                                                        np + ns - out->ntensors);
    if (!st) st = add_units(out, f);
    int cap = 0;
    for (int i = 0; i < out->npieces && !st; i++) st = find_replicas(&b, &out->pieces[i], &cap);
    for (int i = 0; i < out->ngrads && !st; i++) st = find_replicas(&b, &out->grads[i], &cap);
    free(ids);
    free(local_index);
    if (st) hp_holdings_free(out);
    return st;
}

void hp_holdings_free(hp_holdings *h) {
    free(h->tensors);
    free(h->pieces);
    free(h->replicas);
    free(h->store.offset);
    free(h->store.span);
    free(h->units);
    free(h->grads);
    memset(h, 0, sizeof *h);
}

int hp_holdings_find(const hp_holdings *h, const char *name) {
    for (int i = 0; i < h->ntensors; i++)
        if (!strcmp(h->tensors[i].name, name)) return i;
    return -1;
}

int64_t hp_holding_numel(const hp_holding *p) { return p->hi - p->lo; }
