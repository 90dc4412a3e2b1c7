/* autopar/volume: what one collective call moves per rank and tier — bytes
 * and messages, intra-supernode and inter-supernode — as the comm layer's
 * algorithms move them (src/comm/coll_*.c), for the cost model to price.
 * The numbers are exactly what the comm layer counts for the call
 * (hp_comm_rank_tier_stats; tests/autopar/test_volume checks them against
 * real calls); comm.h says what a byte and a message of each tier are.
 *
 * The call: kind k, a whole buffer of N bytes (as autopar/profile.h defines
 * N: all_reduce's buffer, all_gather's output, reduce_scatter's input,
 * all_to_all's send buffer, send's message, broadcast's buffer) of e-byte
 * elements, n = N / e, over a group of p members on s supernodes, L = p / s
 * members in each, contiguous: member m = T L + l is the local member l of
 * supernode T. Shards are balanced on elements: member x's is
 *     c_x = e (floor(n / p) + [x < n mod p])  bytes
 * (all_gather's and reduce_scatter's shards, all_reduce's chunks, and what an
 * all_to_all member sends member x). R_l = {U L + l : U < s}: the members
 * with local index l, one per supernode (a member's counterparts). nd = 1
 * with a supernode-shared output (every member of a supernode passes the
 * same output buffer), else L. "per nonempty" = one message for each such
 * range that holds at least one byte.
 *
 * Per member m (inter = sent to other supernodes; intra = read from or
 * written into peers' buffers of the supernode, or sent to them):
 *   all_gather: across, then within.
 *     inter: s - 1 messages, (s - 1) c_m bytes (its shard to its counterparts);
 *     intra: nothing with a shared output; else the shards of every x with
 *       x mod L != l (the local peers' and what their counterparts received),
 *       sum c_x bytes, one message per nonempty.
 *   reduce_scatter: within, then across.
 *     inter: s - 1 messages, sum over x in R_l, x != m of c_x bytes (its
 *       supernode's partials of its counterparts' shards);
 *     intra: (L - 1) c_x bytes for each x in R_l (the peers' inputs read for
 *       the sums), L - 1 messages per nonempty.
 *   all_reduce: chunk x's sums are made by the members of R_x mod L.
 *     p = s = 2 and N >= HP_COMM_SPLIT_ALL_REDUCE_BYTES: reduce-scatter then
 *       all-gather: inter 2 messages, N bytes; intra nothing.
 *     otherwise intra: (L - 1 + nd - 1) c_x bytes for each x in R_l (the
 *       peers' inputs read, the result written into the peers' outputs),
 *       L - 1 + nd - 1 messages per nonempty;
 *     inter, s = 2: one message of c_m + c_m' bytes (m' its counterpart:
 *       the partials swapped), none when empty;
 *     inter, s >= 3: its supernode's partial of each counterpart's chunk,
 *       sum over x in R_l, x != m of c_x bytes, one message per nonempty;
 *       then its reduced chunk to each counterpart, s - 1 messages of c_m
 *       bytes when c_m > 0.
 *     (About 2 (s - 1) / s N / L bytes across per member, the ring's figure
 *     over L.)
 *   broadcast from root r: the root sends to one holder per other supernode
 *     (h_T = T L + r mod L), the others read the holder's buffer.
 *     inter: the root: s - 1 messages, (s - 1) N bytes; others nothing;
 *     intra: a member that is not its supernode's holder (r in r's
 *       supernode), without a shared output: N bytes, 1 message (N > 0).
 *   all_to_all: every member sends c_x to member x; S_U = sum of c_x over
 *     the members x of supernode U. The pair T -> U fuses (one message from
 *     T's member U mod L) iff s > 1, L > 1, a2a_fuse_bytes > 0 and
 *     floor(L S_U / L^2) < a2a_fuse_bytes (the mean message per rank pair).
 *     intra: (L - 1) c_m bytes in L - 1 messages when c_m > 0 (its rows out
 *       of the peers' send buffers); and for each U != T with U mod L = l:
 *       T -> U fused: (L - 1) S_U bytes, (L - 1) x (nonempty c_x, x in U)
 *       messages (the peers' rows packed); U -> T fused: L (S_T - c_m)
 *       bytes, L x (nonempty c_x, x in T, x != m) messages (the rows
 *       unpacked into the peers' receive buffers);
 *     inter, per U != T: direct: L messages (empty ones too), S_U bytes;
 *       fused: 1 message of 8 L^2 + L S_U bytes (the header of counts, then
 *       the rows) from the member with l = U mod L, nothing from the others.
 *   send from m to peer: 1 message of N bytes on the pair's tier.
 *
 * One tensor per call. A call fusing several tensors (nt > 1) moves the same
 * bytes on both tiers in more messages (intra: one per tensor piece of each
 * range; a broadcast's inter: one per tensor), and a fused all-reduce never
 * takes the p = s = 2 split.
 *
 * Members differ (the root, the holders, the fused pairs' senders, uneven
 * shards): member = -1 gives the most any member moves, each of the four
 * numbers maximised on its own (the critical path's bound; they may come
 * from different members). */
#ifndef HP_AUTOPAR_VOLUME_H
#define HP_AUTOPAR_VOLUME_H

#include <stdint.h>

#include "autopar/profile.h"
#include "core/status.h"

/* The broadcast, beside profile.h's kinds (which have no broadcast). */
#define HP_VOL_BROADCAST ((hp_prof_kind)HP_PROF_NKINDS)

typedef struct {
    hp_prof_kind kind;      /* HP_PROF_ALL_REDUCE .. HP_PROF_SEND, or HP_VOL_BROADCAST */
    int64_t bytes;          /* N >= 0, the whole buffer (above); a multiple of elem_bytes */
    int elem_bytes;         /* e >= 1: 4 for fp32 and i32, 2 for bf16 (shards are cut on elements) */
    int members;            /* p >= 1 */
    int supernodes;         /* s >= 1, dividing p */
    int64_t a2a_fuse_bytes; /* the world's hp_comm_opts.a2a_fuse_bytes (0: the all_to_all never fuses) */
    int peer;               /* broadcast: the root; send: the destination (member indices) */
    int shared_output;      /* all_gather, all_reduce, broadcast: a supernode's members pass one output */
} hp_coll_call;

typedef struct {
    int64_t bytes[HP_PROF_NTIERS]; /* [HP_PROF_INTRA], [HP_PROF_INTER] */
    int64_t msgs[HP_PROF_NTIERS];
} hp_coll_vol;

/* *out = what member `member` (0 <= member < p) moves in call *c, or with
 * member = -1 the most any member moves (for a send: any member sending to
 * c->peer). Errors name the field: a count below its bound, p not a
 * multiple of s, N not a multiple of e, a peer outside [0, p), a send to
 * itself, an unknown kind. Allocates nothing; O(s) per member, O(p s) for
 * member = -1. */
hp_status hp_coll_volume(hp_coll_vol *out, const hp_coll_call *c, int member);

#endif
