#include "core/memplan.h"

#include <stdlib.h>

typedef struct {
    int v;           /* the buffer: value + nvals * slot */
    int first, last; /* one life of it: a value in one micro-batch's tenure of the slot */
    size_t size;
} interval;

static int by_size_desc(const void *a_, const void *b_) {
    const interval *a = a_, *b = b_;
    if (a->size != b->size) return a->size < b->size ? 1 : -1;
    if (a->v != b->v) return a->v - b->v;
    return a->first - b->first;
}

static int by_offset(const void *a_, const void *b_) {
    const size_t *a = a_, *b = b_;
    return (*a > *b) - (*a < *b);
}

hp_status hp_memplan_build(hp_memplan *out, const hp_graph *g, const int *order, int norder) {
    int zero = 0;
    return hp_memplan_build_slots(out, g, order, NULL, norder, &zero, 1, 1);
}

/* The most bytes live at any position of [0, npos). */
static size_t peak_of(const interval *iv, int ni, int npos) {
    long long *delta = calloc((size_t)npos + 1, sizeof *delta);
    if (!delta) return 0;
    for (int i = 0; i < ni; i++) delta[iv[i].first] += (long long)iv[i].size, delta[iv[i].last + 1] -= (long long)iv[i].size;
    long long live = 0, most = 0;
    for (int p = 0; p < npos; p++) {
        live += delta[p];
        if (live > most) most = live;
    }
    free(delta);
    return (size_t)most;
}

static int overlap(const interval *a, const interval *b) { return !(a->last < b->first || b->last < a->first); }

hp_status hp_memplan_build_slots(hp_memplan *out, const hp_graph *g, const int *order, const int *tenure, int norder,
                                 const int *slot_of, int ntenures, int nslots) {
    out->offset = NULL;
    out->arena_bytes = out->naive_bytes = out->peak_bytes = 0;
    out->nslots = nslots;
    int nv1 = g->nvals, nk = nv1 * ntenures, nb = nv1 * nslots; /* lives (value, tenure); buffers (value, slot) */
    size_t *offset = malloc(sizeof(size_t) * (size_t)(nb ? nb : 1));
    int *first = malloc(sizeof(int) * (size_t)(nk ? nk : 1));
    int *last = malloc(sizeof(int) * (size_t)(nk ? nk : 1));
    interval *iv = malloc(sizeof(interval) * (size_t)(nk ? nk : 1));
    size_t *busy = malloc(sizeof(size_t) * 2 * (size_t)(nk ? nk : 1));
    char *counted = calloc((size_t)(nb ? nb : 1), 1);
    if (!offset || !first || !last || !iv || !busy || !counted) {
        free(offset), free(first), free(last), free(iv), free(busy), free(counted);
        return hp_errorf("memory planner: out of memory");
    }
    for (int v = 0; v < nb; v++) offset[v] = HP_MEMPLAN_NONE;
    for (int v = 0; v < nk; v++) first[v] = last[v] = -1;
    for (int pos = 0; pos < norder; pos++) {
        const hp_node *n = &g->nodes[order[pos]];
        int at = tenure ? tenure[pos] * nv1 : 0;
        for (int k = 0; k < n->nout; k++) {
            int v = n->out[k];
            if (v < 0) continue;
            v += at;
            if (first[v] < 0) first[v] = pos;
            if (last[v] < pos) last[v] = pos;
        }
        for (int k = 0; k < hp_node_nin_all(n); k++) {
            int v = hp_node_input(g, n, k) + at;
            if (first[v] < 0) first[v] = pos;
            last[v] = pos;
        }
    }
    /* a view's uses are its base's */
    for (int v = 0; v < nk; v++) {
        int b = g->vals[v % nv1].view_of;
        if (b < 0 || first[v] < 0) continue;
        b += v / nv1 * nv1;
        if (first[b] < 0 || first[v] < first[b]) first[b] = first[v];
        if (last[v] > last[b]) last[b] = last[v];
    }
    int ni = 0;
    for (int v = 0; v < nk; v++) {
        const hp_value *val = &g->vals[v % nv1];
        if (first[v] < 0 || val->persistent || val->view_of >= 0) continue;
        size_t bytes = (size_t)hp_val_numel(g, v % nv1) * hp_dtype_size(val->dtype);
        bytes = (bytes + HP_MEMPLAN_ALIGN - 1) / HP_MEMPLAN_ALIGN * HP_MEMPLAN_ALIGN;
        int buf = v % nv1 + nv1 * slot_of[v / nv1];
        iv[ni++] = (interval){buf, first[v], last[v], bytes};
        if (!counted[buf]) out->naive_bytes += bytes, counted[buf] = 1;
    }
    out->peak_bytes = peak_of(iv, ni, norder);
    qsort(iv, (size_t)ni, sizeof *iv, by_size_desc);
    /* Greedy: largest first, each buffer at the lowest offset free during all its lives. */
    size_t arena = 0;
    for (int i = 0, e; i < ni; i = e) {
        for (e = i + 1; e < ni && iv[e].v == iv[i].v;) e++; /* iv[i .. e): one buffer's lives */
        int nbusy = 0;
        for (int j = 0; j < i; j++) {
            int hit = 0;
            for (int q = i; q < e && !hit; q++) hit = overlap(&iv[j], &iv[q]);
            if (!hit) continue;
            busy[2 * nbusy] = offset[iv[j].v];
            busy[2 * nbusy + 1] = offset[iv[j].v] + iv[j].size;
            nbusy++;
        }
        qsort(busy, (size_t)nbusy, 2 * sizeof(size_t), by_offset);
        size_t at = 0;
        for (int k = 0; k < nbusy; k++) {
            if (busy[2 * k] >= at + iv[i].size) break;
            if (busy[2 * k + 1] > at) at = busy[2 * k + 1];
        }
        offset[iv[i].v] = at;
        if (at + iv[i].size > arena) arena = at + iv[i].size;
    }
    free(first), free(last), free(iv), free(busy), free(counted);
    out->offset = offset;
    out->arena_bytes = arena;
    return HP_OK;
}

void hp_memplan_free(hp_memplan *p) {
    free(p->offset);
    p->offset = NULL;
}
