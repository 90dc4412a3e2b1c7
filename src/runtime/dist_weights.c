/* runtime/dist_weights: parameters read and written whole by name (see the header). */
#include "runtime/dist_weights.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/ckpt_region.h"

/* Every rank's pieces of one parameter, and which of them a read takes. */
typedef struct {
    int world;
    hp_shape shape;
    hp_ckpt_held *held;  /* [world][HP_DIST_CKPT_MAX_PIECES] */
    int *n;              /* [world] */
    unsigned char *take; /* [world][HP_DIST_CKPT_MAX_PIECES]: 1 when a read takes it from that rank */
    int64_t *count;      /* [world]: elements a read takes from each rank */
    int64_t *off;        /* [world + 1]: where each rank's elements sit in the gathered buffer */
} pieces;

static void pieces_free(pieces *p) { free(p->held), free(p->n), free(p->take), free(p->count), free(p->off); }

static hp_ckpt_held *held_at(const pieces *p, int q, int k) {
    return &p->held[(size_t)q * HP_DIST_CKPT_MAX_PIECES + (size_t)k];
}

/* The pieces of `name` (for_save: the current ones) and its element count checked against n. */
static hp_status pieces_list(pieces *p, hp_dist *d, const hp_dist_ckpt *c, const char *name, int64_t n, int for_save,
                             int states) {
    memset(p, 0, sizeof *p);
    if (!name) return hp_errorf("weights: the tensor name is NULL");
    p->world = hp_comm_world_size(hp_dist_world(d));
    size_t slots = (size_t)p->world * HP_DIST_CKPT_MAX_PIECES;
    p->held = calloc(slots, sizeof *p->held);
    p->n = calloc((size_t)p->world, sizeof *p->n);
    p->take = calloc(slots, 1);
    p->count = calloc((size_t)p->world, sizeof *p->count);
    p->off = calloc((size_t)p->world + 1, sizeof *p->off);
    if (!p->held || !p->n || !p->take || !p->count || !p->off) return hp_errorf("'%s': out of memory", name);
    int index = -1;
    for (int q = 0; q < p->world; q++) {
        p->n[q] = hp_dist_ckpt_tensor_pieces(held_at(p, q, 0), &index, &p->shape, c, name, q, for_save, states);
        if (p->n[q] < 0) return hp_errorf("'%s': no %s of this name", name, states ? "parameter or state" : "parameter");
    }
    int64_t numel = hp_shape_numel(&p->shape);
    if (n != numel)
        return hp_errorf("'%s': %lld elements given, the tensor has %lld", name, (long long)n, (long long)numel);
    return HP_OK;
}

/* Each distinct region once, from the lowest rank holding it; they must tile the tensor. */
static hp_status choose(pieces *p, const char *name) {
    int64_t total = 0;
    for (int q = 0; q < p->world; q++) {
        p->off[q] = total;
        for (int k = 0; k < p->n[q]; k++) {
            const hp_region *r = &held_at(p, q, k)->region;
            int64_t m = hp_region_numel(r, &p->shape);
            int dup = m == 0;
            for (int a = 0; a <= q && !dup; a++)
                for (int b = 0; b < (a == q ? k : p->n[a]) && !dup; b++)
                    dup = p->take[(size_t)a * HP_DIST_CKPT_MAX_PIECES + (size_t)b] &&
                          hp_region_eq(&held_at(p, a, b)->region, r, &p->shape);
            if (dup) continue;
            p->take[(size_t)q * HP_DIST_CKPT_MAX_PIECES + (size_t)k] = 1;
            p->count[q] += m;
            total += m;
        }
    }
    p->off[p->world] = total;
    if (total != hp_shape_numel(&p->shape))
        return hp_errorf("'%s': the ranks' pieces do not tile it (%lld distinct elements of %lld)", name,
                         (long long)total, (long long)hp_shape_numel(&p->shape));
    return HP_OK;
}

typedef struct {
    const pieces *p;
    hp_comm_group *world;
    float *all;
} gather_ctx;

/* Every rank's taken pieces are already at its place in the process's one
 * buffer (a supernode-shared output); the other processes' arrive. */
static hp_status gather_rank(hp_dist_rank *r, void *c_) {
    gather_ctx *g = c_;
    const pieces *p = g->p;
    return hp_comm_all_gather(r->c.rg.ctx.comm, g->world, g->all, g->all + p->off[r->rank], p->count[r->rank],
                              p->count, HP_F32);
}

static hp_status tensor_get(hp_dist *d, const hp_dist_ckpt *c, float *out, const char *name, int64_t n, int states) {
    pieces p;
    hp_status st = pieces_list(&p, d, c, name, n, 1, states);
    if (!st) st = choose(&p, name);
    float *all = st ? NULL : malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!st && !all) st = hp_errorf("'%s': out of memory for %lld floats", name, (long long)n);
    for (int q = 0; q < p.world && !st; q++) { /* the hosted ranks' pieces, packed rank by rank */
        float *at = all + p.off[q];
        for (int k = 0; k < p.n[q]; k++) {
            const hp_ckpt_held *h = held_at(&p, q, k);
            if (!p.take[(size_t)q * HP_DIST_CKPT_MAX_PIECES + (size_t)k] || !h->data) continue;
            int64_t m = hp_region_numel(&h->region, &p.shape);
            memcpy(at, h->data, sizeof(float) * (size_t)m);
            at += m;
        }
    }
    if (!st) {
        gather_ctx g = {&p, hp_comm_world_group(hp_dist_world(d)), all};
        st = hp_dist_run(d, gather_rank, &g);
        if (st) st = hp_error_wrap(st, "'%s'", name);
    }
    hp_region whole = hp_region_whole(&p.shape);
    for (int q = 0; q < p.world && !st; q++) {
        const float *at = all + p.off[q];
        for (int k = 0; k < p.n[q]; k++) {
            const hp_ckpt_held *h = held_at(&p, q, k);
            if (!p.take[(size_t)q * HP_DIST_CKPT_MAX_PIECES + (size_t)k]) continue;
            at += hp_region_copy(out, &whole, at, &h->region, &p.shape, sizeof(float));
        }
    }
    free(all);
    pieces_free(&p);
    return st;
}

hp_status hp_dist_weight_get(hp_dist *d, const hp_dist_ckpt *c, float *out, const char *name, int64_t n) {
    return tensor_get(d, c, out, name, n, 0);
}

hp_status hp_dist_tensor_get(hp_dist *d, const hp_dist_ckpt *c, float *out, const char *name, int64_t n) {
    return tensor_get(d, c, out, name, n, 1);
}

hp_status hp_dist_weight_set(hp_dist *d, const hp_dist_ckpt *c, const char *name, const float *in, int64_t n) {
    pieces p;
    hp_status st = pieces_list(&p, d, c, name, n, 0, 0);
    for (int64_t i = 0; i < n && !st; i++) /* a NaN would train on silently */
        if (!isfinite(in[i]))
            st = hp_errorf("'%s': element %lld is %g (not finite)", name, (long long)i, (double)in[i]);
    hp_region whole = hp_region_whole(&p.shape);
    for (int q = 0; q < p.world && !st; q++)
        for (int k = 0; k < p.n[q]; k++) {
            const hp_ckpt_held *h = held_at(&p, q, k);
            if (h->data) hp_region_copy(h->data, &h->region, in, &whole, &p.shape, sizeof(float));
        }
    pieces_free(&p);
    return st;
}
