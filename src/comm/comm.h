/* comm/comm: the one collective interface of hyperpar.
 *
 * A world is S supernodes x R ranks (global rank = supernode * R + local).
 * Ranks of one supernode are threads of one process and share memory: their
 * collectives read peers' buffers directly (zero-copy). Supernodes are MPI
 * processes when the program runs under mpirun/mpiexec (one supernode per
 * process), or are emulated inside one process (opts.supernodes > 1), where
 * the inter-supernode link can be throttled (inter_bw_gbps, inter_latency_us;
 * the throttle also applies on top of MPI).
 *
 * Use: create the world once per process; take a rank handle per hosted rank
 * (hp_comm_world_rank) and give each to its own thread; every thread calls
 * the collectives with its own handle. Groups are created once per process,
 * by one thread, in the same order on every process, before ranks use them,
 * and destroyed (with no call in flight) before the world. Every member of
 * a group calls the group's collectives in the same order.
 *
 * Counts are in elements of the dtype (HP_F32 or HP_BF16; bf16 is summed in
 * fp32 and rounded once per tier; HP_I32 too where nothing is added: the
 * all-to-all, all-gather, broadcast, send and receive). Member indices are positions in the
 * group's rank list; shards are laid out in member order.
 *
 * Shared outputs: when every rank of a supernode passes the same recv buffer
 * to an all-gather, all-reduce or broadcast, that buffer is the supernode's
 * one shared output; each rank fills only its own part (no peer copies).
 *
 * Two tiers are chosen from the group's topology: reduce-scatter = within the
 * supernode, then across; all-gather = across, then within; all-reduce = the
 * two in sequence. A collective that waits longer than the world's timeout
 * returns an error naming the collective, the group and the missing rank; the
 * group is then broken (later calls fail at once).
 *
 * Concurrency. A rank handle is used by one thread at a time (its own); it
 * may have any number of started calls in flight (hp_comm_start), waited in
 * any order (hp_comm_wait; hp_comm_test checks without blocking). Each group
 * a rank belongs to is given one of the rank's 8 lanes when it is created
 * (the lane with the fewest live groups of that rank); a lane is a
 * communication thread that runs its calls one at a time, in start order,
 * and drives MPI progress while the rank computes. So:
 *  - calls on one group run in the order the rank started (or ran) them, on
 *    every member; every member must issue a group's calls in the same order;
 *  - calls on different groups progress concurrently, so members may issue
 *    them in different orders (rank 0: TP then DP, rank 1: DP then TP) and
 *    may wait on one while another is still in flight, as long as the rank
 *    belongs to at most 8 groups at a time (beyond, groups that share a lane
 *    are ordered by the start order on that rank, as one group);
 *  - hp_comm_run runs a call on the calling thread when its group's lane has
 *    nothing pending (concurrently with other lanes), else after the calls
 *    started before it on that lane.
 * The deadline of a started call runs from the moment its lane begins it. */
#ifndef HP_COMM_COMM_H
#define HP_COMM_COMM_H

#include <stdint.h>

#include "core/status.h"
#include "core/tensor.h"

typedef struct hp_comm_world hp_comm_world;
typedef struct hp_comm_rank hp_comm_rank;
typedef struct hp_comm_group hp_comm_group;
typedef struct hp_comm_req hp_comm_req;

typedef struct {
    int ranks_per_supernode; /* R >= 1 rank-threads per supernode */
    int supernodes;          /* emulated supernodes without MPI; 0 = 1 (or the MPI size) */
    int mpi;                 /* -1: when started by mpirun; 0: never; 1: required */
    double timeout_s;        /* collective timeout; default 300 */
    double inter_bw_gbps;    /* inter-supernode bandwidth per rank, GB/s; 0 = unthrottled */
    double inter_latency_us; /* inter-supernode latency per message */
    int64_t a2a_fuse_bytes;  /* the all-to-all fuses its cross-supernode leg for a pair of supernodes (one
                              * message between them) when the mean message per rank pair of theirs is below
                              * this many bytes; 0 = never. Give every process the same value */
} hp_comm_opts;

/* A single-tensor all-reduce between two supernodes of one rank each runs as
 * reduce-scatter + all-gather (two messages per rank instead of one) from
 * this many bytes on. */
#define HP_COMM_SPLIT_ALL_REDUCE_BYTES ((size_t)1 << 20)

/* The all-to-all's fusion threshold by default (hp_comm_opts.a2a_fuse_bytes; docs/benchmarks.md "The
 * all-to-all itself" has the figures it is chosen from). */
#define HP_COMM_A2A_FUSE_BYTES_DEFAULT ((int64_t)8 << 10)

void hp_comm_opts_default(hp_comm_opts *o);
/* Parses one command-line flag (--ranks, --supernodes, --comm-timeout,
 * --inter-bw, --inter-latency, --a2a-fuse-bytes) with its value; *used = 1
 * if it was one. */
hp_status hp_comm_opts_parse(hp_comm_opts *o, const char *flag, const char *value, int *used);

/* MPI is initialised here (MPI_THREAD_MULTIPLE) when needed and not already
 * initialised, and finalised by destroy in that case. After a collective of
 * an MPI world failed (a timeout: a peer stopped answering), destroy aborts
 * the job (MPI_Abort) instead: finalizing would wait for the missing peer.
 * Print the error before destroying the world. */
hp_status hp_comm_world_create(hp_comm_world **out, const hp_comm_opts *o);
void hp_comm_world_destroy(hp_comm_world *w);
/* Rank-threads of this process stopped answering and were left running
 * (runtime/rank_threads): they may still use the world, so destroy then
 * frees nothing; an MPI world's destroy ends the job (MPI_Abort), as after a
 * failed collective. */
void hp_comm_world_abandon(hp_comm_world *w);
/* After a collective of an MPI world failed (or the world was abandoned):
 * ends the job now (MPI_Abort), before anything that calls still in flight
 * on the rank's lanes may use is freed; those calls would wait for the
 * missing peer until their own deadlines. Otherwise returns. The caller has
 * printed its error. */
void hp_comm_world_end_if_failed(hp_comm_world *w);
double hp_comm_timeout_s(const hp_comm_world *w);

int hp_comm_world_size(const hp_comm_world *w);
int hp_comm_supernodes(const hp_comm_world *w);
int hp_comm_ranks_per_supernode(const hp_comm_world *w);
int hp_comm_uses_mpi(const hp_comm_world *w);
int hp_comm_supernode_of(const hp_comm_world *w, int rank);
int hp_comm_local_index_of(const hp_comm_world *w, int rank);
/* The global ranks this process hosts: [*first, *first + *count). */
void hp_comm_hosted_ranks(const hp_comm_world *w, int *first, int *count);
/* The handle of a hosted rank (NULL if not hosted). Owned by the world. */
hp_comm_rank *hp_comm_world_rank(hp_comm_world *w, int rank);
int hp_comm_rank_id(const hp_comm_rank *r);
/* Inter-supernode traffic this rank has sent so far. */
void hp_comm_rank_stats(const hp_comm_rank *r, int64_t *inter_bytes, int64_t *inter_msgs);
/* The traffic this rank has moved so far, per tier: [0] intra (between ranks
 * of its supernode), [1] inter (to other supernodes; hp_comm_rank_stats).
 *  - inter: the bytes and messages it posts to ranks of other supernodes
 *    (a message counts when posted, zero-byte ones included).
 *  - intra: what a supernode's fabric would carry for this rank: the bytes it
 *    reads out of a peer's buffer (zero-copy reads of the peers' inputs, sums
 *    included) plus the bytes it writes into a peer's buffer (an all-reduce's
 *    results in the peers' outputs, a fused all-to-all's rows in the peers'
 *    receive buffers), plus the send/recv messages it sends to a peer. A
 *    supernode-shared output is everyone's own buffer: writing into it moves
 *    nothing. A message is one send, or one contiguous range read from or
 *    written to one peer's buffer (a range summed over the L ranks of a
 *    supernode is L - 1 messages); empty ranges are not counted.
 * Copies between a rank's own buffers (its input into its output, packing
 * its own rows) are not traffic. autopar/volume predicts these numbers per
 * call (docs/architecture.md, "Collective volumes"). */
void hp_comm_rank_tier_stats(const hp_comm_rank *r, int64_t bytes[2], int64_t msgs[2]);
/* Zeroes both tiers' counters and the busy and wait times. */
void hp_comm_rank_reset_stats(hp_comm_rank *r);
/* Nanoseconds this rank's collectives have been running (summed over its
 * lanes and blocking calls; reset with the stats): against the time the rank
 * waited for them, how much of its communication hid behind compute. */
int64_t hp_comm_rank_busy_ns(const hp_comm_rank *r);
/* Nanoseconds the rank's own thread was blocked on collectives: inside
 * hp_comm_wait / hp_comm_wait_first until the call was done, and whole
 * blocking calls (hp_comm_run): its exposed communication (reset with the
 * stats). Starting a call is not counted. */
int64_t hp_comm_rank_wait_ns(const hp_comm_rank *r);

/* The group of every rank in order (owned by the world). */
hp_comm_group *hp_comm_world_group(hp_comm_world *w);
/* A group of the given distinct global ranks, member i = ranks[i]. */
hp_status hp_comm_group_create(hp_comm_group **out, hp_comm_world *w, const int *ranks, int n,
                               const char *name);
void hp_comm_group_destroy(hp_comm_group *g);
int hp_comm_group_size(const hp_comm_group *g);
/* Member index of a global rank, -1 if not a member. */
int hp_comm_group_index(const hp_comm_group *g, int rank);
const char *hp_comm_group_name(const hp_comm_group *g);

typedef enum { HP_COMM_SUM = 0, HP_COMM_AVG = 1 } hp_comm_redop;

typedef enum {
    HP_COMM_ALL_GATHER,
    HP_COMM_REDUCE_SCATTER,
    HP_COMM_ALL_REDUCE,
    HP_COMM_BROADCAST,
    HP_COMM_ALL_TO_ALL,
    HP_COMM_SEND,
    HP_COMM_RECV,
    HP_COMM_BARRIER
} hp_comm_kind;

/* One tensor of a (possibly fused) call. count: all-gather / reduce-scatter
 * = shard elements per member (recv / send hold count * group size);
 * all-reduce / broadcast / send / recv = elements; all-to-all = elements per
 * pair. In place: all-gather send == recv + me * count; reduce-scatter
 * recv == send + me * count; all-reduce send == recv. */
typedef struct {
    void *recv;       /* output (broadcast: the buffer; send: unused) */
    const void *send; /* input (broadcast, recv: unused) */
    int64_t count;
} hp_comm_tensor;

/* A collective call. nt tensors are fused into one operation per tier
 * (all-gather, reduce-scatter, all-reduce, broadcast; others take nt = 1). */
typedef struct {
    hp_comm_kind kind;
    hp_dtype dtype;
    hp_comm_redop op;
    int peer;                   /* broadcast root; send destination; recv source (member index) */
    const hp_comm_tensor *t;
    int nt;
    const int64_t *counts;      /* nt = 1, optional: per-member shard counts (all-gather, reduce-scatter),
                                 * or elements sent to each member (all-to-all) */
    const int64_t *recv_counts; /* all-to-all with counts: elements received from each member */
    int64_t *copied;            /* optional (all-gather): the call adds the bytes it copied between
                                 * this rank's and its peers' buffers (0 for an in-place call on a
                                 * supernode-shared output: nothing moves) */
    int tree;                   /* all-reduce, reduce-scatter: add the members' values as a binary tree over
                                 * member positions, ((m0+m1)+(m2+m3))..., within each supernode and then over
                                 * the supernodes, instead of left to right. With a power-of-two count of
                                 * members per supernode and of supernodes this is one tree over the group
                                 * whatever the split (the deterministic mode's order); 0: left to right */
    int fence;                  /* all-gather: no member writes the output before every member of its
                                 * supernode has begun the call (a supernode-shared output that still held
                                 * data its ranks read before the call: FSDP's reused slots) */
    hp_status (*prepare)(void *ctx); /* optional: called on the thread that runs the call (its lane, for a
                                      * started one) right before it begins, after the calls started before it
                                      * on that lane ended: it may fill the counts from what they received */
    void *prepare_ctx;
} hp_comm_args;

/* Runs a collective on the calling rank and returns when it is done. */
hp_status hp_comm_run(hp_comm_rank *r, hp_comm_group *g, const hp_comm_args *a);
/* Starts a collective on the lane of g on this rank (see Concurrency above);
 * the buffers and the arrays in *a must stay valid until hp_comm_wait (a
 * itself is copied). Calls on one group run in the order they were started. */
hp_status hp_comm_start(hp_comm_req **req, hp_comm_rank *r, hp_comm_group *g, const hp_comm_args *a);
/* The same, then (once it succeeded) a second collective a2 on group g2, as
 * one request: a fused two-step reduction (FSDP's reduce-scatter inside the
 * shard group, then the all-reduce across the replicas) whose second step is
 * queued on g2's lane the moment the first ends, driven by the lanes and not
 * by the rank; g's lane goes on with its next call meanwhile (a reduce-scatter
 * never waits behind an all-reduce across supernodes). g2's calls then run in
 * the order their first steps finished, which is g's lane order: every call a
 * rank makes on g2 must be one of these, or be ordered against them by the
 * caller (waited before the next starts). */
hp_status hp_comm_start_then(hp_comm_req **req, hp_comm_rank *r, hp_comm_group *g, const hp_comm_args *a,
                             hp_comm_group *g2, const hp_comm_args *a2);
/* Waits until the first call of a hp_comm_start_then request has finished
 * (its buffers may then be reused), without freeing the handle; the status of
 * both is hp_comm_wait's. A NULL handle or a plain request: returns at once
 * when done (a plain request: when its one call is). */
void hp_comm_wait_first(hp_comm_req *req);
/* Sets *done to 1 when the started collective has finished, 0 otherwise,
 * without blocking; the handle stays valid and hp_comm_wait then returns its
 * status at once. A NULL handle is done. */
hp_status hp_comm_test(hp_comm_req *req, int *done);
/* Waits for a started collective, returns its status and frees the handle. */
hp_status hp_comm_wait(hp_comm_req *req);

/* Shorthands for single-tensor calls (counts may be NULL: equal shards). */
hp_status hp_comm_all_gather(hp_comm_rank *r, hp_comm_group *g, void *recv, const void *send,
                             int64_t count, const int64_t *counts, hp_dtype dt);
hp_status hp_comm_reduce_scatter(hp_comm_rank *r, hp_comm_group *g, void *recv, const void *send,
                                 int64_t count, const int64_t *counts, hp_dtype dt, hp_comm_redop op);
hp_status hp_comm_all_reduce(hp_comm_rank *r, hp_comm_group *g, void *recv, const void *send,
                             int64_t count, hp_dtype dt, hp_comm_redop op);
hp_status hp_comm_broadcast(hp_comm_rank *r, hp_comm_group *g, void *buf, int64_t count, hp_dtype dt,
                            int root);
hp_status hp_comm_all_to_all(hp_comm_rank *r, hp_comm_group *g, void *recv, const void *send,
                             int64_t count, const int64_t *send_counts, const int64_t *recv_counts,
                             hp_dtype dt);
hp_status hp_comm_send(hp_comm_rank *r, hp_comm_group *g, const void *buf, int64_t count, hp_dtype dt,
                       int dst);
hp_status hp_comm_recv(hp_comm_rank *r, hp_comm_group *g, void *buf, int64_t count, hp_dtype dt,
                       int src);
hp_status hp_comm_barrier(hp_comm_rank *r, hp_comm_group *g);

#endif
