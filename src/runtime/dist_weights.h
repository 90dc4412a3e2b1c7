/* runtime/dist_weights: one parameter of a compiled model read or written
 * whole (its global tensor) by name, whatever the plan. The pieces are the
 * checkpoints' (runtime/dist_ckpt: a rank's layout box, or under FSDP the
 * flat shards it keeps current), so a read takes each distinct piece once,
 * from the lowest rank that holds it, and a write fills every piece every
 * hosted rank holds memory for — replicas, tensor-parallel boxes, FSDP
 * shards (and at levels 1 and 2 each rank's whole copy) — as a checkpoint
 * load does. Copies made from the fp32 parameters (bf16 compute copies, an
 * FSDP gather's units, the bf16 mirror) are remade by the next step. */
#ifndef HP_RUNTIME_DIST_WEIGHTS_H
#define HP_RUNTIME_DIST_WEIGHTS_H

#include <stdint.h>

#include "runtime/dist.h"
#include "runtime/dist_ckpt.h"

/* The whole tensor of parameter `name` into out[n] (n: its element count).
 * Every process calls it: the pieces are brought together by one all-gather
 * over the world (inside a process it only synchronises), so every process
 * gets the whole tensor. Errors name the tensor (unknown name, wrong count). */
hp_status hp_dist_weight_get(hp_dist *d, const hp_dist_ckpt *c, float *out, const char *name, int64_t n);
/* The same for a parameter or an optimizer state by its checkpoint name
 * ("muon.m.h.0.mlp.fc.weight": validation mode reads Muon's momentum whole). */
hp_status hp_dist_tensor_get(hp_dist *d, const hp_dist_ckpt *c, float *out, const char *name, int64_t n);
/* Fills every piece of parameter `name` that this process's ranks hold from
 * the whole tensor in[n]; no communication (under mpirun every process passes
 * the same values). Errors name the tensor. */
hp_status hp_dist_weight_set(hp_dist *d, const hp_dist_ckpt *c, const char *name, const float *in, int64_t n);

#endif
