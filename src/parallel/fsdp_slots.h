/* parallel/fsdp_slots: FSDP's transient gathered units (parallel/fsdp.h,
 * "Transient gathered units"), the part of the fsdp pass that decides which
 * compute slot each unit's gathers fill, whether the backward gathers a unit
 * again, makes the compute copies (views of the slots' values) and moves the
 * forward and backward readers of the managed parameters onto them.
 *
 * Times are node positions, the forward's before the backward's. A unit's
 * forward interval runs from its gather start (the first reader of the unit
 * `prefetch` units earlier in first-use order) to its last forward reader;
 * its backward interval likewise in the backward's first-use order. Slots are
 * given in forward order, the lowest whose occupant's interval has ended; a
 * unit whose backward interval follows its own forward one in its slot keeps
 * the slot (no second gather); one whose backward interval would overlap
 * another's gets a slot of its own. keep_bytes: the backward's first units,
 * up to that many bytes, keep their slot from the forward (no one else's).
 * The hyperpar style then moves each backward gather's start back to the
 * first backward node after the slot's previous occupant's last reader. */
#ifndef HP_PARALLEL_FSDP_SLOTS_H
#define HP_PARALLEL_FSDP_SLOTS_H

#include "parallel/fsdp.h"

typedef struct {
    int *pc;        /* [f->nparams]: local value of parameter k's compute copy, -1: none */
    int *bwd_start; /* [f->nunits]: the node the unit's backward gather starts before (-1: none) */
    int *bwd_wait;  /* [f->nunits]: the node it is waited before */
} hp_fsdp_slots;

/* Sets f->nslots and each unit's slot and bwd_gather, adds the slot values
 * and the compute copies to g, and rewrites the inputs of nodes [0, n0) of
 * the forward and backward phases. ids[f->nparams]: the parameters in graph
 * order. */
hp_status hp_fsdp_slots_make(hp_fsdp_slots *out, hp_fsdp_plan *f, hp_graph *g, const int *ids, int n0);
void hp_fsdp_slots_free(hp_fsdp_slots *s);

#endif
