/* runtime/validate_fsdp: FSDP's checks in validation mode (see the header). */
#include "runtime/validate_fsdp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/piece.h"

hp_status hp_vfsdp_init(hp_vfsdp *c, hp_dist *d, const hp_graph *g, hp_program *ref, const hp_param_store *rps,
                        double atol, double rtol) {
    *c = (hp_vfsdp){d, g, ref, rps, atol, rtol, NULL, NULL, 0, NULL, 0, NULL, 0};
    c->np = hp_graph_params(g, NULL, 0);
    c->ids = malloc(sizeof(int) * (size_t)(c->np ? c->np : 1));
    c->ri = malloc(sizeof(int) * (size_t)(c->np ? c->np : 1));
    if (!c->ids || !c->ri) return hp_errorf("validation: out of memory");
    hp_graph_params(g, c->ids, c->np);
    for (int k = 0; k < c->np; k++) {
        c->ri[k] = hp_param_store_find(rps, g->vals[c->ids[k]].name);
        if (c->ri[k] < 0) return hp_errorf("validation: the reference has no parameter '%s'", g->vals[c->ids[k]].name);
    }
    return HP_OK;
}

void hp_vfsdp_free(hp_vfsdp *c) {
    free(c->buf), free(c->ids), free(c->ri), free(c->leaf);
    c->buf = c->leaf = NULL, c->ids = c->ri = NULL;
    c->cap = c->leaf_cap = 0;
}

hp_status hp_vfsdp_leaf(hp_vfsdp *c, hp_tensor *t, int gv) {
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

/* The reference's piece of parameter k (graph order) or of its gradient
 * (grad = 1) as rank r holds it: c->buf[numel], whose count is returned. */
static hp_status ref_piece(int64_t *numel, hp_vfsdp *c, int k, int grad, int r) {
    const hp_dist_rank *R = hp_dist_rank_at(c->d, r);
    int gv = c->ids[k];
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
    int ri = c->ri[k];
    const float *src = grad ? hp_program_grads(c->ref) + c->rps->offset[ri] : hp_param_ptr(c->rps, ri);
    hp_piece_extract(c->buf, src, sizeof(float), gs, &loc, off);
    *numel = n;
    return HP_OK;
}

static const char *param_name(const hp_vfsdp *c, int k) { return c->g->vals[c->ids[k]].name; }

/* gather=bf16: rank r's gathered copies of unit u in its store's bf16
 * mirror must be the reference's parameters rounded to bf16, bit for bit. */
static hp_status mirror_params(hp_vfsdp *c, const char *step, int u, int r) {
    const hp_dist_rank *R = hp_dist_rank_at(c->d, r);
    const hp_fsdp_plan *f = &R->c.fsdp;
    const hp_fsdp_unit *un = &f->units[u];
    for (int k = 0; k < f->nparams; k++) {
        if (f->unit_of[k] != u) continue;
        int64_t n;
        HP_TRY(ref_piece(&n, c, k, 0, r));
        const uint16_t *a = R->ps.data16 + f->offset[k];
        for (int64_t e = 0; e < n; e++) {
            uint16_t want = hp_f32_to_bf16(c->buf[e]);
            if (a[e] == want) continue;
            size_t at = f->offset[k] - un->offset + (size_t)e;
            return hp_errorf("validation: %s: rank %d holds parameter '%s' (bf16) unlike the reference at element %lld "
                             "(%g, expected %g): a wrong gathered shard (member %zu's)",
                             step, R->rank, param_name(c, k), (long long)e, (double)hp_bf16_to_f32(a[e]),
                             (double)hp_bf16_to_f32(want), at / un->shard);
        }
    }
    return HP_OK;
}

hp_status hp_vfsdp_params(hp_vfsdp *c, const char *step, int u, const hp_tensor *const *params) {
    for (int r = 0; r < hp_dist_nranks(c->d); r++) {
        const hp_fsdp_plan *f = &hp_dist_rank_at(c->d, r)->c.fsdp;
        const hp_fsdp_unit *un = &f->units[u];
        if (f->gather_bf16) { /* the fp32 store is current in the rank's own shards only */
            HP_TRY(mirror_params(c, step, u, r));
            continue;
        }
        for (int k = 0, q = 0; k < f->nparams; k++) {
            if (f->unit_of[k] != u) continue;
            int64_t n;
            HP_TRY(ref_piece(&n, c, k, 0, r));
            const float *a = params[r][q++].data;
            for (int64_t e = 0; e < n; e++) {
                if (a[e] == c->buf[e] || (isnan(a[e]) && isnan(c->buf[e]))) continue;
                size_t at = f->offset[k] - un->offset + (size_t)e;
                return hp_errorf("validation: %s: rank %d holds parameter '%s' unlike the reference at element %lld "
                                 "(%g, expected %g): a wrong gathered shard (member %zu's)",
                                 step, hp_dist_rank_at(c->d, r)->rank, param_name(c, k), (long long)e, (double)a[e],
                                 (double)c->buf[e], at / un->shard);
            }
        }
    }
    return HP_OK;
}

/* The largest |a - b| over rank r's shard of unit u and the largest |b|,
 * per parameter k when only_k >= 0; *where gets the worst (k, element). */
static hp_status shard_diff(double *maxdiff, double *maxref, int *wk, int64_t *we, hp_vfsdp *c, int r, int u,
                            const float *shard, int only_k) {
    const hp_fsdp_plan *f = &hp_dist_rank_at(c->d, r)->c.fsdp;
    const hp_fsdp_unit *un = &f->units[u];
    size_t lo = un->shard * (size_t)f->me, hi = lo + un->shard;
    for (int k = 0; k < f->nparams; k++) {
        if (f->unit_of[k] != u || (only_k >= 0 && k != only_k)) continue;
        int64_t n;
        HP_TRY(ref_piece(&n, c, k, 1, r));
        size_t o = f->offset[k] - un->offset;
        size_t a = o > lo ? o : lo, b = o + (size_t)n < hi ? o + (size_t)n : hi;
        for (size_t i = a; i < b; i++) {
            double ref = c->buf[i - o], d = fabs((double)shard[i - lo] - ref);
            if (isnan(d)) d = INFINITY;
            if (d > *maxdiff) *maxdiff = d, *wk = k, *we = (int64_t)(i - o);
            if (fabs(ref) > *maxref) *maxref = fabs(ref);
        }
    }
    return HP_OK;
}

hp_status hp_vfsdp_shards(hp_vfsdp *c, const char *step, int u, const hp_tensor *shard) {
    for (int r = 0; r < hp_dist_nranks(c->d); r++) {
        double maxdiff = 0, maxref = 0;
        int wk = -1;
        int64_t we = 0;
        HP_TRY(shard_diff(&maxdiff, &maxref, &wk, &we, c, r, u, shard[r].data, -1));
        if (maxdiff <= c->atol + c->rtol * maxref) continue;
        const hp_fsdp_plan *f = &hp_dist_rank_at(c->d, r)->c.fsdp;
        return hp_errorf("validation: %s: rank %d's reduced gradient shard of unit '%s' differs from the reference "
                         "(parameter '%s' element %lld off by %g, tolerance %g): a missing or wrong reduction",
                         step, hp_dist_rank_at(c->d, r)->rank, f->units[u].name, param_name(c, wk), (long long)we,
                         maxdiff, c->atol + c->rtol * maxref);
    }
    return HP_OK;
}

hp_status hp_vfsdp_grad_err(double *rel, int *managed, hp_vfsdp *c, int k) {
    *rel = 0;
    const hp_fsdp_plan *f0 = &hp_dist_rank_at(c->d, 0)->c.fsdp;
    *managed = f0->level > 0 && f0->unit_of[k] >= 0;
    if (!*managed) return HP_OK;
    double maxdiff = 0, maxref = 0;
    for (int r = 0; r < hp_dist_nranks(c->d); r++) {
        hp_dist_rank *R = hp_dist_rank_at(c->d, r);
        int u = R->c.fsdp.unit_of[k], wk = -1;
        int64_t we = 0;
        const float *shard = hp_program_data(R->prog, R->c.fsdp.units[u].grad_shard);
        HP_TRY(shard_diff(&maxdiff, &maxref, &wk, &we, c, r, u, shard, k));
    }
    *rel = maxref > 0 ? maxdiff / maxref : maxdiff;
    return HP_OK;
}
