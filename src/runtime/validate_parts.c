/* runtime/validate_parts: checks of flat parts in validation mode (see the header). */
#include "runtime/validate_parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/piece.h"

hp_status hp_vparts_init(hp_vparts *c, hp_dist *d, const hp_graph *g, hp_program *ref, const hp_param_store *rps,
                         double atol, double rtol) {
    *c = (hp_vparts){d, g, ref, rps, atol, rtol, NULL, NULL, 0, NULL, 0};
    c->ri = malloc(sizeof(int) * (size_t)(g->nvals ? g->nvals : 1));
    if (!c->ri) return hp_errorf("validation: out of memory");
    for (int v = 0; v < g->nvals; v++) {
        c->ri[v] = -1;
        if (g->vals[v].kind != HP_V_PARAM) continue;
        c->ri[v] = hp_param_store_find(rps, g->vals[v].name);
        if (c->ri[v] < 0) return hp_errorf("validation: the reference has no parameter '%s'", g->vals[v].name);
    }
    return HP_OK;
}

void hp_vparts_free(hp_vparts *c) {
    free(c->buf), free(c->ri), free(c->leaf);
    c->buf = c->leaf = NULL, c->ri = NULL;
    c->cap = c->leaf_cap = 0;
}

hp_status hp_vparts_leaf(hp_vparts *c, hp_tensor *t, int gv) {
    int n = hp_dist_nranks(c->d), cut = 0;
    for (int r = 0; r < n; r++) cut |= hp_dist_rank_at(c->d, r)->ps.nspans > 0;
    if (!cut || c->g->vals[gv].kind != HP_V_PARAM) return HP_OK;
    size_t most = 0;
    for (int r = 0; r < n; r++) {
        size_t e = (size_t)hp_shape_numel(&t[r].shape);
        if (t[r].dtype != HP_F32) return hp_errorf("validation: parameter '%s' is not fp32", c->g->vals[gv].name);
        if (e > most) most = e;
    }
    if (most > c->leaf_cap || !c->leaf) {
        float *b = realloc(c->leaf, sizeof(float) * (most ? most : 1) * (size_t)n);
        if (!b) return hp_errorf("validation: out of memory");
        c->leaf = b, c->leaf_cap = most;
    }
    const hp_mesh *m = hp_dist_mesh(c->d);
    const hp_layout *l = &hp_dist_propagation(c->d)->val[gv];
    for (int r = 0; r < n; r++) {
        const hp_dist_rank *R = hp_dist_rank_at(c->d, r);
        int k = hp_param_store_find(&R->ps, c->g->vals[gv].name);
        if (k < 0) return hp_errorf("validation: rank %d has no parameter '%s'", R->rank, c->g->vals[gv].name);
        float *dst = c->leaf + c->leaf_cap * (size_t)r;
        hp_shape mine, other;
        int64_t off[HP_MAX_DIMS] = {0}, off2[HP_MAX_DIMS] = {0};
        hp_local_shape(&mine, off, &c->g->vals[gv].shape, l, m, R->rank);
        /* the others first (the same piece: the same shape at the same place), the rank's own parts last */
        for (int r2 = 0; r2 < n; r2++) {
            const hp_dist_rank *Q = hp_dist_rank_at(c->d, r2);
            if (r2 == r) continue;
            hp_local_shape(&other, off2, &c->g->vals[gv].shape, l, m, Q->rank);
            if (!hp_shape_eq(&mine, &other) || memcmp(off, off2, sizeof off)) continue;
            int k2 = hp_param_store_find(&Q->ps, c->g->vals[gv].name);
            if (k2 >= 0) hp_param_store_copy_parts(dst, hp_param_ptr(&Q->ps, k2), &Q->ps, k2);
        }
        hp_param_store_copy_parts(dst, hp_param_ptr(&R->ps, k), &R->ps, k);
        t[r].data = dst;
    }
    return HP_OK;
}

/* The reference's box of global parameter gv or of its gradient (grad = 1)
 * as rank r holds it: c->buf[numel], whose count is returned. */
static hp_status ref_piece(int64_t *numel, hp_vparts *c, int gv, int grad, int r) {
    const hp_dist_rank *R = hp_dist_rank_at(c->d, r);
    const hp_shape *gs = &c->g->vals[gv].shape;
    hp_shape loc;
    int64_t off[HP_MAX_DIMS] = {0};
    hp_local_shape(&loc, off, gs, &hp_dist_propagation(c->d)->val[gv], hp_dist_mesh(c->d), R->rank);
    int64_t n = hp_shape_numel(&loc);
    if ((size_t)n > c->cap) {
        float *b = realloc(c->buf, sizeof(float) * (size_t)n);
        if (!b) return hp_errorf("validation: out of memory");
        c->buf = b;
        c->cap = (size_t)n;
    }
    int ri = c->ri[gv];
    const float *src = grad ? hp_program_grads(c->ref) + c->rps->offset[ri] : hp_param_ptr(c->rps, ri);
    hp_piece_extract(c->buf, src, sizeof(float), gs, &loc, off);
    *numel = n;
    return HP_OK;
}

/* Rank r's table, checked to have unit u. */
static hp_status table_of(const hp_holdings **h, hp_vparts *c, int r, int u) {
    *h = &hp_dist_rank_at(c->d, r)->c.hold;
    if (u < 0 || u >= (*h)->nunits)
        return hp_errorf("validation: rank %d's table has no unit %d", hp_dist_rank_at(c->d, r)->rank, u);
    return HP_OK;
}

int hp_vparts_reduced(const hp_vparts *c, const hp_coll_desc *d) {
    const hp_holdings *h = &hp_dist_rank_at(c->d, 0)->c.hold;
    return d->role == HP_COLL_WAIT || d->unit < 0 || d->unit >= h->nunits || h->units[d->unit].replicas <= 1;
}

/* A bf16 mirror: rank r's gathered copies of unit u in its store's mirror
 * must be the reference's parameters rounded to bf16, bit for bit. */
static hp_status mirror_params(hp_vparts *c, const char *step, int u, int r) {
    const hp_dist_rank *R = hp_dist_rank_at(c->d, r);
    const hp_holdings *h = &R->c.hold;
    for (int t = 0; t < h->ntensors; t++) {
        const hp_held_tensor *ht = &h->tensors[t];
        if (ht->is_state || ht->unit != u) continue;
        int k = hp_param_store_find(&R->ps, ht->name);
        if (k < 0) return hp_errorf("validation: rank %d has no parameter '%s'", R->rank, ht->name);
        int64_t n;
        HP_TRY(ref_piece(&n, c, ht->v, 0, r));
        const uint16_t *a = R->ps.data16 + R->ps.offset[k];
        for (int64_t e = 0; e < n; e++) {
            uint16_t want = hp_f32_to_bf16(c->buf[e]);
            if (a[e] == want) continue;
            size_t at = ht->unit_at + (size_t)e;
            return hp_errorf("validation: %s: rank %d holds parameter '%s' (bf16) unlike the reference at element %lld "
                             "(%g, expected %g): a wrong gathered shard (member %zu's)",
                             step, R->rank, ht->name, (long long)e, (double)hp_bf16_to_f32(a[e]),
                             (double)hp_bf16_to_f32(want), at / h->units[u].shard);
        }
    }
    return HP_OK;
}

hp_status hp_vparts_params(hp_vparts *c, const char *step, int u, const hp_tensor *const *params) {
    for (int r = 0; r < hp_dist_nranks(c->d); r++) {
        const hp_holdings *h;
        HP_TRY(table_of(&h, c, r, u));
        if (h->store.mirror) { /* the fp32 store is current in the rank's own parts only */
            HP_TRY(mirror_params(c, step, u, r));
            continue;
        }
        for (int t = 0, q = 0; t < h->ntensors; t++) {
            const hp_held_tensor *ht = &h->tensors[t];
            if (ht->is_state || ht->unit != u) continue;
            int64_t n;
            HP_TRY(ref_piece(&n, c, ht->v, 0, r));
            const float *a = params[r][q++].data;
            for (int64_t e = 0; e < n; e++) {
                if (a[e] == c->buf[e] || (isnan(a[e]) && isnan(c->buf[e]))) continue;
                size_t at = ht->unit_at + (size_t)e;
                return hp_errorf("validation: %s: rank %d holds parameter '%s' unlike the reference at element %lld "
                                 "(%g, expected %g): a wrong gathered shard (member %zu's)",
                                 step, hp_dist_rank_at(c->d, r)->rank, ht->name, (long long)e, (double)a[e],
                                 (double)c->buf[e], at / h->units[u].shard);
            }
        }
    }
    return HP_OK;
}

/* The largest |a - b| over the pieces of rank r's reduced gradient of tensor
 * t (h: rank r's table; range: the unit's reduced range it lies in) and the
 * largest |b|; *wt, *we get the worst tensor and element of its box. */
static hp_status range_diff(double *maxdiff, double *maxref, int *wt, int64_t *we, hp_vparts *c, int r,
                            const hp_holdings *h, int t, const float *range) {
    const hp_held_tensor *ht = &h->tensors[t];
    if (ht->grad < 0) return HP_OK;
    const hp_holding *p = &h->grads[ht->grad];
    int64_t n;
    HP_TRY(ref_piece(&n, c, ht->v, 1, r));
    const float *a = range + p->at;
    for (int64_t e = p->lo; e < p->hi; e++) {
        double ref = c->buf[e], d = fabs((double)a[e - p->lo] - ref);
        if (isnan(d)) d = INFINITY;
        if (d > *maxdiff) *maxdiff = d, *wt = t, *we = e;
        if (fabs(ref) > *maxref) *maxref = fabs(ref);
    }
    return HP_OK;
}

hp_status hp_vparts_ranges(hp_vparts *c, const char *step, int u, const hp_tensor *range) {
    for (int r = 0; r < hp_dist_nranks(c->d); r++) {
        const hp_holdings *h;
        HP_TRY(table_of(&h, c, r, u));
        double maxdiff = 0, maxref = 0;
        int wt = -1;
        int64_t we = 0;
        for (int t = 0; t < h->ntensors; t++)
            if (!h->tensors[t].is_state && h->tensors[t].unit == u)
                HP_TRY(range_diff(&maxdiff, &maxref, &wt, &we, c, r, h, t, range[r].data));
        if (maxdiff <= c->atol + c->rtol * maxref) continue;
        return hp_errorf("validation: %s: rank %d's reduced gradient shard of unit '%s' differs from the reference "
                         "(parameter '%s' element %lld off by %g, tolerance %g): a missing or wrong reduction",
                         step, hp_dist_rank_at(c->d, r)->rank, h->units[u].name, h->tensors[wt].name, (long long)we,
                         maxdiff, c->atol + c->rtol * maxref);
    }
    return HP_OK;
}

hp_status hp_vparts_grad_err(double *rel, int *parts, hp_vparts *c, int gv) {
    *rel = 0;
    const char *name = c->g->vals[gv].name;
    const hp_holdings *h0 = &hp_dist_rank_at(c->d, 0)->c.hold;
    int t0 = hp_holdings_find(h0, name);
    *parts = t0 >= 0 && h0->tensors[t0].unit >= 0;
    if (!*parts) return HP_OK;
    double maxdiff = 0, maxref = 0;
    for (int r = 0; r < hp_dist_nranks(c->d); r++) {
        hp_dist_rank *R = hp_dist_rank_at(c->d, r);
        const hp_holdings *h = &R->c.hold;
        int t = hp_holdings_find(h, name), wt = -1;
        int64_t we = 0;
        if (t < 0 || h->tensors[t].grad < 0) continue;
        const float *range = hp_program_data(R->prog, h->grads[h->tensors[t].grad].local);
        HP_TRY(range_diff(&maxdiff, &maxref, &wt, &we, c, r, h, t, range));
    }
    *rel = maxref > 0 ? maxdiff / maxref : maxdiff;
    return HP_OK;
}
