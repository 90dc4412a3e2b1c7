/* parallel/redistribute: runs a redistribution plan (layout/redist.h) on one
 * rank — local slices, packing of strided pieces, and the plan's collectives
 * on the mesh's axis groups, in fp32 or bf16 (bf16 sums in fp32, rounded once).
 *
 * Every rank of the mesh calls hp_redistribute with the same plan, at the
 * same point in its sequence of collectives. The scratch buffer (floats, from
 * hp_redistribute_scratch; allocate once and reuse) holds intermediate
 * layouts, packed pieces and count arrays: nothing is allocated inside.
 * Uneven and empty shards follow the ceil-chunk rule of layout.h. dst and
 * scratch belong to this rank alone: the comm layer takes one receive buffer
 * passed by every rank of a supernode as a shared output. */
#ifndef HP_PARALLEL_REDISTRIBUTE_H
#define HP_PARALLEL_REDISTRIBUTE_H

#include <stddef.h>

#include "comm/comm.h"
#include "layout/redist.h"
#include "parallel/mesh_comm.h"

/* Floats of scratch hp_redistribute needs for `plan` on mesh m (any rank). */
size_t hp_redistribute_scratch(const hp_redist *plan, const hp_mesh *m);

/* dst: rank's local piece of plan->to (hp_local_shape), written;
 * src: rank's local piece of plan->from, read; dst and src must not overlap;
 * scratch: hp_redistribute_scratch(plan, mesh) floats, 8-byte aligned (malloc);
 * rank: r's global rank (= hp_comm_rank_id(r)). Partial targets: see
 * redist.h for which member keeps the value. */
hp_status hp_redistribute(hp_comm_rank *r, const hp_mesh_comm *mc, const hp_redist *plan, float *dst,
                          const float *src, float *scratch, int rank);
/* The same for elements of dtype dt (HP_F32 or HP_BF16; Partial(max) fp32
 * only); the scratch is counted in floats either way. */
hp_status hp_redistribute_dt(hp_comm_rank *r, const hp_mesh_comm *mc, const hp_redist *plan, void *dst,
                             const void *src, hp_dtype dt, float *scratch, int rank);

#endif
