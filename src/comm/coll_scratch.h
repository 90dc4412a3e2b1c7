/* comm/coll_scratch: the executor scratch a collective call takes (the
 * buffer hp_coll_scratch grows: packed partials, inboxes, outboxes), from
 * the call's shape alone, for a memory model that prices a program without
 * a communicator (autopar/memory). Inside one supernode the collectives
 * need none (the members read each other's buffers); across supernodes
 * they stage what crosses the link. The figures follow the algorithms of
 * coll_allreduce and coll_rs_ag for a group of n members spread evenly
 * over k supernodes (n / k each), chunks of N / n elements; an executor
 * keeps hp_comm_scratch_capacity of the largest need it met. Not covered:
 * all-to-all (its packing depends on the counts at run time), broadcast
 * and the pointer tables of fused calls (bytes, not buffers). */
#ifndef HP_COMM_COLL_SCRATCH_H
#define HP_COMM_COLL_SCRATCH_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"

/* Bytes of scratch one call needs: kind (all-reduce, reduce-scatter,
 * all-gather; any other kind 0), elements of dtype dt (all-reduce: the
 * fused vector's; reduce-scatter, all-gather: per member, as
 * hp_comm_tensor.count), nt fused tensors, n members over k supernodes. */
size_t hp_comm_scratch_need(hp_comm_kind kind, hp_dtype dt, int64_t count, int nt, int n, int k);

/* Bytes an executor's scratch holds once a call needed `need` (the growth
 * rule of coll_base's hp_coll_grow); 0 for 0. */
size_t hp_comm_scratch_capacity(size_t need);

#endif
