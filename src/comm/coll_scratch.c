/* comm/coll_scratch: see the header. Each figure names the allocation it
 * mirrors. */
#include "comm/coll_scratch.h"

#include "core/tensor.h"

static size_t r64(size_t b) { return (b + 63) & ~(size_t)63; }

size_t hp_comm_scratch_capacity(size_t need) {
    if (!need) return 0;
    return (need + need / 2 + 256 + 63) & ~(size_t)63;
}

/* coll_rs_ag's reduce-scatter: this rank's fp32 accumulator (unless it is alone in its supernode in fp32), the
 * other supernodes' partials of its shard, and the partials it computes for one member of each other supernode */
static size_t reduce_scatter(size_t esz, int fp32, int64_t mine, int n, int k) {
    if (k <= 1) return 64; /* asked for 0 bytes: coll_base gives 64 */
    int solo = n / k == 1 && fp32;
    size_t acc = solo ? 0 : r64((size_t)mine * 4), inbox = r64((size_t)(k - 1) * (size_t)mine * esz);
    return acc + inbox + (size_t)(k - 1) * (size_t)mine * esz;
}

size_t hp_comm_scratch_need(hp_comm_kind kind, hp_dtype dt, int64_t count, int nt, int n, int k) {
    size_t esz = hp_dtype_size(dt);
    int fp32 = dt == HP_F32;
    if (n < 1 || k < 1 || count < 0) return 0;
    int64_t chunk = (count + n - 1) / n; /* the largest of the balanced chunks */
    switch (kind) {
    case HP_COMM_REDUCE_SCATTER: return reduce_scatter(esz, fp32, count, n, k);
    case HP_COMM_ALL_GATHER: /* packed only when fused: this rank's shards and one member's per other supernode */
        return k > 1 && nt > 1 ? (size_t)count * esz * (size_t)k : 0;
    case HP_COMM_ALL_REDUCE:
        if (k <= 1) return 0;
        if (nt == 1 && k == 2 && n == 2 && (size_t)count * esz >= HP_COMM_SPLIT_ALL_REDUCE_BYTES) /* reduce-scatter, all-gather */
            return reduce_scatter(esz, fp32, chunk, n, k);
        if (k == 2) /* all_reduce_pair: out- and inboxes of its own chunk and one of the other supernode's */
            return 2 * r64(2 * (size_t)chunk * esz);
        /* partials out (one member per other supernode), in (one per other supernode), the reduced chunk,
         * results in */
        return 2 * r64((size_t)(k - 1) * (size_t)chunk * esz) + r64((size_t)(k - 1) * (size_t)chunk * esz) +
               r64((size_t)chunk * esz);
    default: return 0;
    }
}
