/* core/memplan: assigns every non-persistent value (activations, gradients) an
 * offset in one arena by liveness over a node order, so buffers whose lives do
 * not overlap share memory. Persistent values (parameters, their gradients,
 * inputs, constants) are left to the caller. A view (hp_value.view_of) gets
 * no offset of its own; its uses keep its base live. Planned once, before the first
 * step. */
#ifndef HP_CORE_MEMPLAN_H
#define HP_CORE_MEMPLAN_H

#include <stddef.h>

#include "core/graph.h"

#define HP_MEMPLAN_NONE ((size_t)-1)
#define HP_MEMPLAN_ALIGN 64

typedef struct {
    size_t *offset;     /* per value: byte offset in the arena, or HP_MEMPLAN_NONE */
    size_t arena_bytes; /* arena size the plan needs */
    size_t naive_bytes; /* what one buffer per value would need (for reports) */
    size_t peak_bytes;  /* the most bytes live at once (the least any arena could be) */
    int nslots;         /* activation slots: offset[s * g->nvals + v] is value v's in slot s */
} hp_memplan;

/* Plans the values used or written by nodes order[0..norder) (node ids, in
 * execution order). */
hp_status hp_memplan_build(hp_memplan *out, const hp_graph *g, const int *order, int norder);
/* The same with activation slots (micro-batches in flight at once): position
 * i runs node nodes[i] for tenure tenure[i] (0 <= tenure < ntenures: a
 * micro-batch, or the optimizer), which holds slot slot_of[tenure] (0 <= slot
 * < nslots; tenures sharing a slot must not overlap in time). Every
 * non-persistent value has one buffer per slot, at an offset free during its
 * lives in every tenure of the slot. */
hp_status hp_memplan_build_slots(hp_memplan *out, const hp_graph *g, const int *nodes, const int *tenure, int n,
                                 const int *slot_of, int ntenures, int nslots);
void hp_memplan_free(hp_memplan *p);

#endif
