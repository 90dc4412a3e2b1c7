/* runtime/params: the storage of a graph's parameters as one flat fp32 buffer
 * (each tensor starts on a 64-byte boundary, in the graph's parameter order,
 * or at offsets the caller lays out: FSDP's units).
 * Programs compiled from graphs with the same parameters (a training graph, an
 * evaluation graph) share one store; optimizers and checkpoints see the flat
 * buffer and the per-tensor views. */
#ifndef HP_RUNTIME_PARAMS_H
#define HP_RUNTIME_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "core/alloc.h"
#include "core/graph.h"

typedef struct {
    int n;            /* number of parameter tensors */
    char (*name)[HP_NAME_LEN];
    hp_shape *shape;
    int *hidden_matrix; /* optim's default Muon rule (by shape and name) */
    size_t *offset;   /* floats into data */
    float *data;      /* total floats, zero-initialised */
    size_t total;
    uint16_t *data16; /* the bf16 mirror: total bf16 values in data's layout (FSDP gather=bf16), or NULL */
    int borrowed;     /* data (and data16, slots) belong to another store (FSDP level 3: one per shard group) */
    /* FSDP with transient gathered units (parallel/fsdp): data is reserved address space of which only the
     * spans [span[i][0], span[i][1]) (floats, sorted, disjoint) are memory: the supernode's shards and the
     * unmanaged parameters. nspans 0: all of data is memory. */
    int nspans;
    size_t (*span)[2];
    /* the compute copies of the units in flight: nslots slots, slot j floats [slot_at[j], slot_at[j + 1]) of
     * slots (NULL: none) */
    float *slots;
    int nslots;
    size_t *slot_at;
    /* where data (unless reserved: spans), data16 and slots come from (core/alloc.h) */
    const hp_allocator *mem;
} hp_param_store;

hp_status hp_param_store_create(hp_param_store *ps, const hp_graph *g);
/* The same with the caller's layout: offset[i] floats for the i-th parameter
 * in graph order, total floats in all (parallel/fsdp's unit layout). */
hp_status hp_param_store_create_at(hp_param_store *ps, const hp_graph *g, const size_t *offset, size_t total);
/* Either of those (offset NULL: the graph's layout) with its memory from mem
 * instead of the host allocator (the others use hp_allocator_host). */
hp_status hp_param_store_create_with(hp_param_store *ps, const hp_allocator *mem, const hp_graph *g,
                                     const size_t *offset, size_t total);
/* The same, with only spans[nspans] (floats, sorted, disjoint) of the layout
 * as memory (core/alloc's reserved buffers: every parameter keeps its
 * address, the rest faults), and nslots compute slots laid out at
 * slot_at[nslots + 1] (floats). */
hp_status hp_param_store_create_spans(hp_param_store *ps, const hp_graph *g, const size_t *offset, size_t total,
                                      const size_t (*spans)[2], int nspans, int nslots, const size_t *slot_at);
/* A store with src's layout whose data is src's (not freed by this one). */
hp_status hp_param_store_borrow(hp_param_store *ps, const hp_param_store *src);
void hp_param_store_free(hp_param_store *ps);
/* Gives the store (not a borrowed one) its bf16 mirror, zeroed; a second call keeps the first. */
hp_status hp_param_store_add_mirror(hp_param_store *ps);
/* The j-th part of parameter i that is memory: elements [*a, *b) of it;
 * returns 0 when there is no j-th part. */
int hp_param_store_part(const hp_param_store *ps, int i, int j, size_t *a, size_t *b);
/* Copies the parts of parameter i that are memory in ps from src to dst,
 * both buffers of the parameter's elements (the store's own place or a whole
 * copy of it). */
void hp_param_store_copy_parts(float *dst, const float *src, const hp_param_store *ps, int i);
/* Index of the parameter with this name, or -1. */
int hp_param_store_find(const hp_param_store *ps, const char *name);
static inline float *hp_param_ptr(const hp_param_store *ps, int i) { return ps->data + ps->offset[i]; }
static inline size_t hp_param_numel(const hp_param_store *ps, int i) {
    return (size_t)hp_shape_numel(&ps->shape[i]);
}
/* Checks that the graph's parameters match the store (same names, order, shapes). */
hp_status hp_param_store_check(const hp_param_store *ps, const hp_graph *g);

/* Floats of the flat gradient buffer a program over g keeps beside a store
 * laid out at offset[i] (graph order; total floats in all): up to the end of
 * the last parameter whose gradient is a value of its own (FSDP's are views
 * into its units' gradients); the whole store when no gradient is a view. */
size_t hp_param_grad_floats(const hp_graph *g, const size_t *offset, size_t total);

#endif
