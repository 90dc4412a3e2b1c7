#include "core/memplan.h"

#include <stdlib.h>

typedef struct {
    int v;
    int first, last;
    size_t size;
} interval;

static int by_size_desc(const void *a_, const void *b_) {
    const interval *a = a_, *b = b_;
    if (a->size != b->size) return a->size < b->size ? 1 : -1;
    return a->v - b->v;
}

static int by_offset(const void *a_, const void *b_) {
    const size_t *a = a_, *b = b_;
    return (*a > *b) - (*a < *b);
}

hp_status hp_memplan_build(hp_memplan *out, const hp_graph *g, const int *order, int norder) {
    out->offset = NULL;
    out->arena_bytes = out->naive_bytes = 0;
    int nv = g->nvals;
    size_t *offset = malloc(sizeof(size_t) * (size_t)(nv ? nv : 1));
    int *first = malloc(sizeof(int) * (size_t)(nv ? nv : 1));
    int *last = malloc(sizeof(int) * (size_t)(nv ? nv : 1));
    interval *iv = malloc(sizeof(interval) * (size_t)(nv ? nv : 1));
    size_t *busy = malloc(sizeof(size_t) * 2 * (size_t)(nv ? nv : 1));
    if (!offset || !first || !last || !iv || !busy) {
        free(offset), free(first), free(last), free(iv), free(busy);
        return hp_errorf("memory planner: out of memory");
    }
    for (int v = 0; v < nv; v++) {
        offset[v] = HP_MEMPLAN_NONE;
        first[v] = last[v] = -1;
    }
    for (int pos = 0; pos < norder; pos++) {
        const hp_node *n = &g->nodes[order[pos]];
        for (int k = 0; k < n->nout; k++) {
            int v = n->out[k];
            if (v < 0) continue;
            if (first[v] < 0) first[v] = pos;
            if (last[v] < pos) last[v] = pos;
        }
        for (int k = 0; k < hp_node_nin_all(n); k++) {
            int v = hp_node_input(g, n, k);
            if (first[v] < 0) first[v] = pos;
            last[v] = pos;
        }
    }
    /* a view's uses are its base's */
    for (int v = 0; v < nv; v++) {
        int b = g->vals[v].view_of;
        if (b < 0 || first[v] < 0) continue;
        if (first[b] < 0 || first[v] < first[b]) first[b] = first[v];
        if (last[v] > last[b]) last[b] = last[v];
    }
    int ni = 0;
    for (int v = 0; v < nv; v++) {
        if (first[v] < 0 || g->vals[v].persistent || g->vals[v].view_of >= 0) continue;
        size_t bytes = (size_t)hp_val_numel(g, v) * hp_dtype_size(g->vals[v].dtype);
        bytes = (bytes + HP_MEMPLAN_ALIGN - 1) / HP_MEMPLAN_ALIGN * HP_MEMPLAN_ALIGN;
        iv[ni++] = (interval){v, first[v], last[v], bytes};
        out->naive_bytes += bytes;
    }
    qsort(iv, (size_t)ni, sizeof *iv, by_size_desc);
    /* Greedy: largest first, at the lowest offset free during its whole life. */
    size_t arena = 0;
    for (int i = 0; i < ni; i++) {
        int nb = 0;
        for (int j = 0; j < i; j++) {
            if (iv[j].last < iv[i].first || iv[i].last < iv[j].first) continue;
            busy[2 * nb] = offset[iv[j].v];
            busy[2 * nb + 1] = offset[iv[j].v] + iv[j].size;
            nb++;
        }
        qsort(busy, (size_t)nb, 2 * sizeof(size_t), by_offset);
        size_t at = 0;
        for (int k = 0; k < nb; k++) {
            if (busy[2 * k] >= at + iv[i].size) break;
            if (busy[2 * k + 1] > at) at = busy[2 * k + 1];
        }
        offset[iv[i].v] = at;
        if (at + iv[i].size > arena) arena = at + iv[i].size;
    }
    free(first), free(last), free(iv), free(busy);
    out->offset = offset;
    out->arena_bytes = arena;
    return HP_OK;
}

void hp_memplan_free(hp_memplan *p) {
    free(p->offset);
    p->offset = NULL;
}
