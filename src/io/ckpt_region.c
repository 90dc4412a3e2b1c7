#include "io/ckpt_region.h"

#include <stdio.h>
#include <string.h>

#include "io/crc32c.h"

/* A 0-d tensor is treated as [1]. */
static hp_shape dims_of(const hp_shape *g) {
    if (g->ndim > 0) return *g;
    return hp_shape1(1);
}

hp_region hp_region_whole(const hp_shape *g) {
    hp_region r;
    memset(&r, 0, sizeof r);
    hp_shape s = dims_of(g);
    for (int i = 0; i < s.ndim; i++) r.extent[i] = s.d[i];
    return r;
}

hp_region hp_region_box(const int64_t *start, const hp_shape *extent) {
    hp_region r;
    memset(&r, 0, sizeof r);
    hp_shape s = dims_of(extent);
    for (int i = 0; i < s.ndim; i++) r.start[i] = extent->ndim ? start[i] : 0, r.extent[i] = s.d[i];
    return r;
}

hp_region hp_region_flat(int64_t begin, int64_t end) {
    hp_region r;
    memset(&r, 0, sizeof r);
    r.kind = HP_REGION_FLAT;
    r.begin = begin, r.end = end;
    return r;
}

int64_t hp_region_numel(const hp_region *r, const hp_shape *g) {
    if (r->kind == HP_REGION_FLAT) return r->end > r->begin ? r->end - r->begin : 0;
    hp_shape s = dims_of(g);
    int64_t n = 1;
    for (int i = 0; i < s.ndim; i++) n *= r->extent[i];
    return n;
}

int hp_region_eq(const hp_region *a, const hp_region *b, const hp_shape *g) {
    if (a->kind != b->kind) return 0;
    if (a->kind == HP_REGION_FLAT) return a->begin == b->begin && a->end == b->end;
    hp_shape s = dims_of(g);
    for (int i = 0; i < s.ndim; i++)
        if (a->start[i] != b->start[i] || a->extent[i] != b->extent[i]) return 0;
    return 1;
}

int hp_region_invalid(char *why, size_t n, const hp_region *r, const hp_shape *g) {
    hp_shape s = dims_of(g);
    int64_t numel = hp_shape_numel(&s);
    if (r->kind == HP_REGION_FLAT) {
        if (r->begin < 0 || r->end < r->begin || r->end > numel) {
            snprintf(why, n, "range [%lld, %lld) is not within the tensor's %lld elements", (long long)r->begin,
                     (long long)r->end, (long long)numel);
            return 1;
        }
        return 0;
    }
    if (r->kind != HP_REGION_BOX) {
        snprintf(why, n, "unknown region kind %d", (int)r->kind);
        return 1;
    }
    for (int i = 0; i < s.ndim; i++)
        if (r->start[i] < 0 || r->extent[i] < 0 || r->extent[i] > s.d[i] || r->start[i] > s.d[i] - r->extent[i]) {
            snprintf(why, n, "start[%d] %lld + extent[%d] %lld is not within dimension %d (%lld)", i,
                     (long long)r->start[i], i, (long long)r->extent[i], i, (long long)s.d[i]);
            return 1;
        }
    return 0;
}

/* Where global element index gi lies in a buffer holding region r. */
static int64_t local_index(const hp_region *r, const hp_shape *s, int64_t gi) {
    if (r->kind == HP_REGION_FLAT) return gi - r->begin;
    int64_t li = 0, stride = 1;
    for (int i = s->ndim - 1; i >= 0; i--) {
        int64_t m = gi % s->d[i];
        gi /= s->d[i];
        li += (m - r->start[i]) * stride;
        stride *= r->extent[i];
    }
    return li;
}

typedef void (*run_fn)(void *ctx, int64_t la, int64_t lb, int64_t n);

/* Calls fn for every run of elements common to a and b: la, lb are the run's
 * first element in a's and b's buffers, n its length. */
static void each_run(const hp_region *a, const hp_region *b, const hp_shape *g, run_fn fn, void *ctx) {
    hp_shape s = dims_of(g);
    if (a->kind == HP_REGION_FLAT && b->kind == HP_REGION_FLAT) {
        int64_t lo = a->begin > b->begin ? a->begin : b->begin, hi = a->end < b->end ? a->end : b->end;
        if (lo < hi) fn(ctx, lo - a->begin, lo - b->begin, hi - lo);
        return;
    }
    /* x: the box whose rows are walked (the intersection when both are boxes); f: a flat range clipping them */
    hp_region x;
    const hp_region *f = NULL;
    if (a->kind == HP_REGION_BOX && b->kind == HP_REGION_BOX) {
        x = *a;
        for (int i = 0; i < s.ndim; i++) {
            int64_t lo = a->start[i] > b->start[i] ? a->start[i] : b->start[i];
            int64_t hi = a->start[i] + a->extent[i] < b->start[i] + b->extent[i] ? a->start[i] + a->extent[i]
                                                                                   : b->start[i] + b->extent[i];
            if (hi <= lo) return;
            x.start[i] = lo, x.extent[i] = hi - lo;
        }
    } else {
        x = a->kind == HP_REGION_BOX ? *a : *b;
        f = a->kind == HP_REGION_FLAT ? a : b;
        if (f->end <= f->begin) return;
    }
    for (int i = 0; i < s.ndim; i++)
        if (x.extent[i] == 0) return;
    /* rows: dimensions k.. are contiguous in the tensor (all after k are whole) */
    int k = s.ndim - 1;
    while (k > 0 && x.extent[k] == s.d[k]) k--;
    int64_t stride[HP_MAX_DIMS], len = 1;
    stride[s.ndim - 1] = 1;
    for (int i = s.ndim - 2; i >= 0; i--) stride[i] = stride[i + 1] * s.d[i + 1];
    for (int i = k; i < s.ndim; i++) len *= x.extent[i];
    int64_t idx[HP_MAX_DIMS] = {0}; /* over dimensions 0..k-1 */
    for (;;) {
        int64_t gs = x.start[k] * stride[k];
        for (int i = 0; i < k; i++) gs += (x.start[i] + idx[i]) * stride[i];
        int64_t lo = gs, hi = gs + len;
        if (f) {
            if (lo >= f->end) return; /* rows only go up */
            if (lo < f->begin) lo = f->begin;
            if (hi > f->end) hi = f->end;
        }
        if (lo < hi) fn(ctx, local_index(a, &s, lo), local_index(b, &s, lo), hi - lo);
        int i = k - 1;
        while (i >= 0 && ++idx[i] == x.extent[i]) idx[i--] = 0;
        if (i < 0) return;
    }
}

/* Dimensions d.. of box, elements [lb, le) of their row-major order, with
 * the indices of dimensions < d fixed at start[0..d). */
static int flat_boxes(hp_region *out, const hp_region *box, const hp_shape *s, int d, int64_t *start, int64_t lb,
                      int64_t le) {
    if (lb >= le) return 0;
    int64_t inner = 1;
    for (int i = d + 1; i < s->ndim; i++) inner *= box->extent[i];
    int n = 0;
    if (d == s->ndim - 1 || (lb % inner == 0 && le % inner == 0)) { /* whole slabs of dimension d */
        hp_region r = *box;
        for (int i = 0; i < d; i++) r.start[i] = start[i], r.extent[i] = 1;
        r.start[d] = box->start[d] + lb / inner, r.extent[d] = (le - lb) / inner;
        out[n++] = r;
        return n;
    }
    int64_t i0 = lb / inner, i1 = le / inner, r0 = lb % inner, r1 = le % inner;
    if (i0 == i1) {
        start[d] = box->start[d] + i0;
        return flat_boxes(out, box, s, d + 1, start, r0, r1);
    }
    if (r0) {
        start[d] = box->start[d] + i0;
        n += flat_boxes(out + n, box, s, d + 1, start, r0, inner);
        i0++;
    }
    if (i1 > i0) n += flat_boxes(out + n, box, s, d, start, i0 * inner, i1 * inner);
    if (r1) {
        start[d] = box->start[d] + i1;
        n += flat_boxes(out + n, box, s, d + 1, start, 0, r1);
    }
    return n;
}

int hp_region_flat_boxes(hp_region *out, const hp_region *box, int64_t lb, int64_t le, const hp_shape *g) {
    hp_shape s = dims_of(g);
    int64_t start[HP_MAX_DIMS] = {0};
    return flat_boxes(out, box, &s, 0, start, lb, le);
}

static void count_run(void *ctx, int64_t la, int64_t lb, int64_t n) {
    (void)la, (void)lb;
    *(int64_t *)ctx += n;
}

int64_t hp_region_overlap(const hp_region *a, const hp_region *b, const hp_shape *g) {
    int64_t n = 0;
    each_run(a, b, g, count_run, &n);
    return n;
}

int hp_region_contains(const hp_region *outer, const hp_region *inner, const hp_shape *g) {
    return hp_region_overlap(outer, inner, g) == hp_region_numel(inner, g);
}

typedef struct {
    char *dst;
    const char *src;
    size_t elem;
    int64_t n;
} copy_ctx;

static void copy_run(void *ctx_, int64_t ld, int64_t ls, int64_t n) {
    copy_ctx *c = ctx_;
    memcpy(c->dst + (size_t)ld * c->elem, c->src + (size_t)ls * c->elem, (size_t)n * c->elem);
    c->n += n;
}

int64_t hp_region_copy(void *dst, const hp_region *dst_r, const void *src, const hp_region *src_r, const hp_shape *g,
                       size_t elem) {
    copy_ctx c = {dst, src, elem, 0};
    each_run(dst_r, src_r, g, copy_run, &c);
    return c.n;
}

typedef struct {
    copy_ctx c;
    uint32_t crc;
} crc_copy_ctx;

static void crc_copy_run(void *ctx_, int64_t ld, int64_t ls, int64_t n) {
    crc_copy_ctx *x = ctx_;
    x->crc = hp_crc32c_copy(x->c.dst + (size_t)ld * x->c.elem, x->crc, x->c.src + (size_t)ls * x->c.elem,
                            (size_t)n * x->c.elem);
    x->c.n += n;
}

int64_t hp_region_copy_crc(void *dst, uint32_t *crc, const hp_region *dst_r, const void *src, const hp_region *src_r,
                           const hp_shape *g, size_t elem) {
    crc_copy_ctx x = {{dst, src, elem, 0}, *crc};
    each_run(dst_r, src_r, g, crc_copy_run, &x);
    *crc = x.crc;
    return x.c.n;
}
