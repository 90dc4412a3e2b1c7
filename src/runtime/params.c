#include "runtime/params.h"

#include "core/alloc.h"
#include "core/checked.h"
#include "optim/route.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hp_status create(hp_param_store *ps, const hp_allocator *mem, const hp_graph *g, const size_t *at, size_t total,
                        int alloc) {
    memset(ps, 0, sizeof *ps);
    ps->mem = mem;
    int n = hp_graph_params(g, NULL, 0);
    int *ids = malloc(sizeof(int) * (size_t)(n ? n : 1));
    ps->name = calloc((size_t)(n ? n : 1), sizeof *ps->name);
    ps->shape = calloc((size_t)(n ? n : 1), sizeof *ps->shape);
    ps->hidden_matrix = calloc((size_t)(n ? n : 1), sizeof *ps->hidden_matrix);
    ps->offset = calloc((size_t)(n ? n : 1), sizeof *ps->offset);
    if (!ids || !ps->name || !ps->shape || !ps->hidden_matrix || !ps->offset) {
        free(ids);
        hp_param_store_free(ps);
        return hp_errorf("parameters: out of memory");
    }
    hp_graph_params(g, ids, n);
    size_t off = 0, bytes = 0;
    int fits = 1;
    for (int i = 0; i < n && fits; i++) {
        const hp_value *v = &g->vals[ids[i]];
        memcpy(ps->name[i], v->name, HP_NAME_LEN);
        ps->shape[i] = v->shape;
        ps->hidden_matrix[i] = hp_optim_hidden_matrix(v->name, &v->shape);
        ps->offset[i] = at ? at[i] : off;
        int64_t numel = 0;
        size_t end = 0;
        fits = hp_shape_numel_checked(&numel, &v->shape) && hp_add_size(&off, off, ((size_t)numel + 15) / 16 * 16);
        if (fits && at && (!hp_add_size(&end, at[i], (size_t)numel) || end > total)) {
            free(ids);
            hp_param_store_free(ps);
            return hp_errorf("parameters: '%s' lies outside the store's layout", v->name);
        }
    }
    free(ids);
    ps->n = n;
    ps->total = at ? total : off;
    if (!fits || !hp_mul_size(&bytes, ps->total, sizeof(float))) {
        hp_param_store_free(ps);
        return hp_errorf("parameters: their size overflows the address space (more than %zu floats)",
                         SIZE_MAX / sizeof(float));
    }
    if (!alloc) return HP_OK;
    ps->data = hp_allocator_alloc(mem, bytes);
    if (!ps->data) {
        hp_param_store_free(ps);
        return hp_errorf("parameters: cannot allocate %zu MB", bytes >> 20);
    }
    return HP_OK;
}

hp_status hp_param_store_create(hp_param_store *ps, const hp_graph *g) {
    return create(ps, hp_allocator_host(), g, NULL, 0, 1);
}

hp_status hp_param_store_create_at(hp_param_store *ps, const hp_graph *g, const size_t *offset, size_t total) {
    return create(ps, hp_allocator_host(), g, offset, total, 1);
}

hp_status hp_param_store_create_with(hp_param_store *ps, const hp_allocator *mem, const hp_graph *g,
                                     const size_t *offset, size_t total) {
    return create(ps, mem, g, offset, total, 1);
}

/* A malloc'd copy of n bytes at src (n > 0), or NULL. */
static void *copy_of(const void *src, size_t n) {
    void *p = malloc(n);
    if (p) memcpy(p, src, n);
    return p;
}

hp_status hp_param_store_create_spans(hp_param_store *ps, const hp_graph *g, const size_t *offset, size_t total,
                                      const size_t (*spans)[2], int nspans, int nslots, const size_t *slot_at) {
    if (nspans < 1) return hp_errorf("parameters: a store of spans needs at least one");
    HP_TRY(create(ps, hp_allocator_host(), g, offset, total, 0));
    size_t bytes = ps->total * sizeof(float), sb = 0;
    ps->span = malloc(sizeof *ps->span * (size_t)(nspans ? nspans : 1));
    ps->data = ps->span ? hp_alloc_reserve(bytes) : NULL;
    ps->nspans = nspans;
    hp_status st = ps->data ? HP_OK : hp_errorf("parameters: cannot reserve %zu MB of address space", bytes >> 20);
    for (int i = 0; !st && i < nspans; i++) {
        if (spans[i][0] > spans[i][1] || spans[i][1] > ps->total || (i && spans[i][0] < spans[i - 1][1]))
            st = hp_errorf("parameters: span %d [%zu, %zu) is not inside the store of %zu floats, after the one before",
                           i, spans[i][0], spans[i][1], ps->total);
        else if (hp_alloc_commit(ps->data, spans[i][0] * sizeof(float), (spans[i][1] - spans[i][0]) * sizeof(float)))
            st = hp_errorf("parameters: cannot commit %zu MB of the store", (spans[i][1] - spans[i][0]) * 4 >> 20);
        else
            ps->span[i][0] = spans[i][0], ps->span[i][1] = spans[i][1];
    }
    if (!st && nslots > 0) {
        ps->slot_at = copy_of(slot_at, sizeof *ps->slot_at * (size_t)(nslots + 1));
        ps->nslots = nslots;
        if (!ps->slot_at || !hp_mul_size(&sb, slot_at[nslots], sizeof(float)) || !(ps->slots = hp_allocator_alloc(ps->mem, sb)))
            st = hp_errorf("parameters: cannot allocate %d gathered-unit slots (%zu MB)", nslots, slot_at[nslots] * 4 >> 20);
    }
    if (st) hp_param_store_free(ps);
    return st;
}

int hp_param_store_part(const hp_param_store *ps, int i, int j, size_t *a, size_t *b) {
    size_t lo = ps->offset[i], hi = lo + hp_param_numel(ps, i);
    if (!ps->nspans) {
        *a = 0, *b = hi - lo;
        return j == 0;
    }
    for (int s = 0; s < ps->nspans; s++) {
        size_t x = ps->span[s][0] > lo ? ps->span[s][0] : lo, y = ps->span[s][1] < hi ? ps->span[s][1] : hi;
        if (x >= y) continue;
        if (j-- == 0) {
            *a = x - lo, *b = y - lo;
            return 1;
        }
    }
    return 0;
}

void hp_param_store_copy_parts(float *dst, const float *src, const hp_param_store *ps, int i) {
    size_t a, b;
    for (int j = 0; hp_param_store_part(ps, i, j, &a, &b); j++) memcpy(dst + a, src + a, (b - a) * sizeof(float));
}

hp_status hp_param_store_borrow(hp_param_store *ps, const hp_param_store *src) {
    memset(ps, 0, sizeof *ps);
    int n = src->n ? src->n : 1;
    ps->name = malloc(sizeof *ps->name * (size_t)n);
    ps->shape = malloc(sizeof *ps->shape * (size_t)n);
    ps->hidden_matrix = malloc(sizeof *ps->hidden_matrix * (size_t)n);
    ps->offset = malloc(sizeof *ps->offset * (size_t)n);
    if (!ps->name || !ps->shape || !ps->hidden_matrix || !ps->offset) {
        hp_param_store_free(ps);
        return hp_errorf("parameters: out of memory");
    }
    memcpy(ps->name, src->name, sizeof *ps->name * (size_t)src->n);
    memcpy(ps->shape, src->shape, sizeof *ps->shape * (size_t)src->n);
    memcpy(ps->hidden_matrix, src->hidden_matrix, sizeof *ps->hidden_matrix * (size_t)src->n);
    memcpy(ps->offset, src->offset, sizeof *ps->offset * (size_t)src->n);
    ps->n = src->n;
    ps->total = src->total;
    ps->data = src->data;
    ps->data16 = src->data16;
    ps->borrowed = 1;
    ps->slots = src->slots;
    ps->nspans = src->nspans, ps->nslots = src->nslots;
    if (src->nspans) ps->span = copy_of(src->span, sizeof *ps->span * (size_t)src->nspans);
    if (src->nslots) ps->slot_at = copy_of(src->slot_at, sizeof *ps->slot_at * (size_t)(src->nslots + 1));
    if ((src->nspans && !ps->span) || (src->nslots && !ps->slot_at)) {
        hp_param_store_free(ps);
        return hp_errorf("parameters: out of memory");
    }
    return HP_OK;
}

hp_status hp_param_store_add_mirror(hp_param_store *ps) {
    if (ps->data16) return HP_OK;
    if (ps->nspans) return hp_errorf("parameters: a store of spans has no bf16 mirror");
    if (ps->borrowed) return hp_errorf("parameters: a borrowed store cannot get a mirror of its own");
    ps->data16 = hp_allocator_alloc(ps->mem, ps->total * sizeof(uint16_t));
    if (!ps->data16) return hp_errorf("parameters: cannot allocate the %zu MB bf16 mirror", ps->total * 2 >> 20);
    return HP_OK;
}

void hp_param_store_free(hp_param_store *ps) {
    if (ps->borrowed) ps->data = NULL, ps->data16 = NULL, ps->slots = NULL;
    if (ps->span && ps->data) hp_alloc_release(ps->data, ps->total * sizeof(float)), ps->data = NULL;
    const hp_allocator *mem = ps->mem ? ps->mem : hp_allocator_host();
    if (ps->slots) hp_allocator_free(mem, ps->slots, ps->slot_at[ps->nslots] * sizeof(float));
    hp_allocator_free(mem, ps->data16, ps->total * sizeof(uint16_t));
    hp_allocator_free(mem, ps->data, ps->total * sizeof(float));
    free(ps->span);
    free(ps->slot_at);
    free(ps->name);
    free(ps->shape);
    free(ps->hidden_matrix);
    free(ps->offset);
    memset(ps, 0, sizeof *ps);
}

int hp_param_store_find(const hp_param_store *ps, const char *name) {
    for (int i = 0; i < ps->n; i++)
        if (strcmp(ps->name[i], name) == 0) return i;
    return -1;
}

hp_status hp_param_store_check(const hp_param_store *ps, const hp_graph *g) {
    int k = 0;
    for (int v = 0; v < g->nvals; v++) {
        if (g->vals[v].kind != HP_V_PARAM) continue;
        if (k >= ps->n || strcmp(ps->name[k], g->vals[v].name) != 0 ||
            !hp_shape_eq(&ps->shape[k], &g->vals[v].shape))
            return hp_errorf("parameters: graph parameter '%s' does not match the store", g->vals[v].name);
        k++;
    }
    if (k != ps->n) return hp_errorf("parameters: the graph has %d parameters, the store %d", k, ps->n);
    return HP_OK;
}

size_t hp_param_grad_floats(const hp_graph *g, const size_t *offset, size_t total) {
    size_t end = 0;
    int any_view = 0;
    for (int v = 0, k = 0; v < g->nvals; v++) {
        if (g->vals[v].kind != HP_V_PARAM) continue;
        int gv = g->vals[v].grad;
        if (gv >= 0 && g->vals[gv].view_of >= 0) any_view = 1;
        else if (gv >= 0 && g->vals[gv].persistent) {
            size_t e = offset[k] + ((size_t)hp_val_numel(g, v) + 15) / 16 * 16;
            if (e > end) end = e;
        }
        k++;
    }
    return any_view ? end : total;
}
