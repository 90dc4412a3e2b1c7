/* comm/internal: the structures shared by the files of the comm room (world,
 * groups, rank handles and their lanes, executor scratch, link requests) and
 * the prototypes one file of the room gives the others. Not for use outside
 * src/comm. */
#ifndef HP_COMM_INTERNAL_H
#define HP_COMM_INTERNAL_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"
#include "comm/sync.h"

struct hp_comm_transport;

/* One posted message on a link (in-process mailbox or MPI). */
typedef struct hp_comm_lreq {
    struct hp_comm_lreq *next; /* mailbox pending list */
    int is_send, src, dst, gid;
    void *buf;
    size_t bytes;
    atomic_uint done;  /* 1 when the data has moved */
    int size_mismatch; /* set on the receiver when the sizes differ */
    const struct hp_comm_transport *tp; /* the transport it was posted on */
    MPI_Request mreq;
    int64_t ready_ns;  /* throttle: not complete before this time */
} hp_comm_lreq;

/* The in-process matching engine: intra-supernode send/recv and the emulated
 * inter-supernode link. A send and a recv with the same (src, dst, gid) match
 * in posting order; the data moves with one copy. */
typedef struct {
    pthread_mutex_t mu;
    hp_comm_lreq *head, *tail;
} hp_comm_mbox;

/* What a rank publishes to its supernode peers for one collective. */
typedef struct {
    _Alignas(64) const void *const *src; /* per tensor: input buffer */
    void *const *dst;                    /* per tensor: output buffer */
    const int64_t *counts;               /* all-to-all send counts (or NULL) */
    const int64_t *recv_counts;          /* all-to-all receive counts (or NULL) */
    int64_t count;                       /* all-to-all equal count */
    atomic_long phase;                   /* barrier arrivals, for diagnosis */
    atomic_int link_peer;                /* 1 + the rank this rank waits for across supernodes, 0: none
                                          * (a barrier that times out names the root cause through it) */
} hp_comm_slot;

/* The part of a group inside one hosted supernode. */
typedef struct {
    hp_comm_fence bar;
    hp_comm_slot *slots; /* one per local member */
} hp_comm_sngroup;

struct hp_comm_group {
    hp_comm_world *w;
    int gid, n;
    char name[64];
    int *ranks;     /* member -> global rank */
    int *member_of; /* global rank -> member or -1 */
    int *sn;        /* member -> position of its supernode in sn_list */
    int *lidx;      /* member -> index among its supernode's members */
    int k;          /* supernodes involved */
    int *sn_list;   /* ascending supernode ids */
    int *sn_n;      /* members per involved supernode */
    int **sn_members;     /* [pos][j] member index */
    int *lane;            /* member -> its lane on its rank (hosted members) */
    int lanes_taken;      /* the hosted members' lanes are counted in their ranks */
    hp_comm_sngroup *sng; /* [pos], slots allocated only where hosted */
    atomic_int failed;
    pthread_mutex_t fail_mu;
    char fail_msg[400];
};

/* The grown-once buffers of one executor of collectives (a lane, or the
 * rank's own thread): a collective uses them from its start to its return,
 * and an executor runs one collective at a time, so calls in flight at once
 * never share scratch. Grown on demand and kept: no allocation per call
 * once warm. */
typedef struct {
    void *buf; /* packed partials, inboxes */
    size_t cap;
    void *ptrs; /* pointer and offset arrays of a fused call */
    size_t ptrs_cap;
    void *ptrs2; /* all-reduce: distinct local outputs, handled chunks */
    size_t ptrs2_cap;
    hp_comm_lreq *lreqs;
    size_t lreqs_cap;
} hp_comm_scratch;

struct hp_comm_req {
    struct hp_comm_req *next;
    hp_comm_rank *r;
    hp_comm_group *g;
    hp_comm_args a;
    hp_comm_group *g2; /* hp_comm_start_then: the second call, run after a on g2's lane (NULL: none) */
    hp_comm_args a2;
    int done1;         /* the first call has finished (hp_comm_wait_first) */
    int stage2;        /* queued on g2's lane for its second call */
    int lane;
    hp_status st;
    int done;
    int direct;        /* a send or recv posted by the starting thread itself (no lane): lr, deadline */
    hp_comm_lreq lr;
    int64_t deadline;
};

/* Communication lanes per rank. Each group a rank belongs to gets a lane on
 * that rank when it is created: the lane with the fewest live groups of the
 * rank (the lowest on a tie), so up to HP_COMM_LANES live groups per rank
 * each have their own. A lane runs its calls one at a time in the order
 * they were started, on its own thread (started on first use). */
#define HP_COMM_LANES 8

typedef struct {
    hp_comm_rank *r;
    pthread_cond_t cv;          /* work queued, or stop (under the rank's mu) */
    hp_comm_req *qhead, *qtail; /* started, not yet running */
    int pending;                /* queued + running */
    int has_thread;
    pthread_t thread;
    hp_comm_scratch s;
} hp_comm_lane;

struct hp_comm_rank {
    hp_comm_world *w;
    int rank, sn, local;
    /* link model of this rank's inter-supernode port; every lane posts on it */
    pthread_mutex_t port_mu;
    int64_t tx_free_ns, rx_free_ns;
    atomic_llong inter_bytes, inter_msgs; /* sent to other supernodes (link.c, at the post) */
    atomic_llong intra_bytes, intra_msgs; /* moved to or from peers of its supernode (hp_comm_rank_tier_stats) */
    atomic_llong busy_ns; /* time collectives were running (on lanes or the calling thread) */
    atomic_llong wait_ns; /* time the rank's own thread was blocked on collectives (waits, blocking runs) */
    hp_comm_scratch own; /* calls run on the rank's own thread (hp_comm_run) */
    /* asynchronous calls (progress.c) */
    pthread_mutex_t mu;
    pthread_cond_t done_cv; /* a started call finished */
    hp_comm_req *spare;     /* finished handles, reused by the next starts */
    int stop;
    int lane_groups[HP_COMM_LANES]; /* live groups of this rank on each lane */
    hp_comm_lane lanes[HP_COMM_LANES];
};

struct hp_comm_world {
    int S, R;
    int use_mpi, mpi_inited_here, mpi_rank, mpi_serialize, tag_ub;
    const struct hp_comm_transport *inter; /* the inter-supernode tier's transport, chosen at creation */
    MPI_Comm comm;
    pthread_mutex_t mpi_mu;
    int first, nhosted;
    int64_t timeout_ns;
    double bw_bytes_per_ns, lat_ns;
    int64_t a2a_fuse_bytes; /* hp_comm_opts.a2a_fuse_bytes: the all-to-all's fusion threshold */
    hp_comm_rank *ranks;
    hp_comm_mbox mbox;
    atomic_int next_gid;
    atomic_int failed; /* a collective failed (timed out, broke a group): destroy aborts an MPI job */
    atomic_int abandoned; /* hp_comm_world_abandon: destroy frees nothing (or aborts an MPI job) */
    hp_comm_group *world_group;
};

/* Link layer (link.c). Messages between ranks of one supernode go through the
 * mailbox; between supernodes through MPI or the emulated mailbox, throttled. */
hp_status hp_comm_link_isend(hp_comm_rank *r, hp_comm_lreq *q, int dst, int gid, const void *buf,
                             size_t bytes);
hp_status hp_comm_link_irecv(hp_comm_rank *r, hp_comm_lreq *q, int src, int gid, void *buf,
                             size_t bytes);
/* 0 when done, -1 on deadline. */
int hp_comm_link_wait(hp_comm_rank *r, hp_comm_lreq *q, int64_t deadline_ns);
/* Withdraws a request that timed out (mailbox) so it can be freed. */
void hp_comm_link_cancel(hp_comm_rank *r, hp_comm_lreq *q);
/* A transport: how a message crosses a link, one table of calls per kind.
 * Inside a supernode messages always take the mailbox (one copy, sender's
 * buffer to receiver's); the world picks the inter-supernode tier's when it
 * is made: MPI between processes (comm/transport_mpi.c), or the mailbox
 * (the emulated tier, throttled by link.c). */
typedef struct hp_comm_transport {
    const char *name;
    /* Sets the world's tier up (NULL: nothing to set up): MPI's communicator,
     * w->S from the process count, this process's supernode (w->mpi_rank). */
    hp_status (*open)(hp_comm_world *w);
    void (*close)(hp_comm_world *w); /* undoes open (NULL: nothing) */
    /* Ends the job after a failure, where peers in other processes could
     * otherwise wait forever (NULL: nothing to do). */
    void (*abort)(hp_comm_world *w);
    /* Posts q (is_send, src, dst, gid, buf and bytes filled) towards global rank peer. */
    hp_status (*post)(hp_comm_rank *r, hp_comm_lreq *q, int peer);
    /* 0 once q's data has moved, -1 at the deadline. */
    int (*wait)(hp_comm_rank *r, hp_comm_lreq *q, int64_t deadline_ns);
    /* Withdraws q, not done, after a timeout so that it can be freed. */
    void (*cancel)(hp_comm_rank *r, hp_comm_lreq *q);
} hp_comm_transport;
extern const hp_comm_transport hp_comm_transport_mbox, hp_comm_transport_mpi;
void hp_comm_mbox_init(hp_comm_mbox *m);
void hp_comm_mbox_destroy(hp_comm_mbox *m);

/* Collectives (coll.c), run on the calling thread with the executor's scratch. */
hp_status hp_comm_exec(hp_comm_rank *r, hp_comm_scratch *s, hp_comm_group *g, const hp_comm_args *a);
/* A send or recv started on the calling thread, outside the lanes (hp_comm_start): posted at once into q,
 * its deadline from now; finished (waited, a timeout reported as a collective's) by hp_comm_p2p_finish. */
hp_status hp_comm_p2p_post(hp_comm_rank *r, hp_comm_group *g, const hp_comm_args *a, hp_comm_lreq *q,
                           int64_t *deadline);
hp_status hp_comm_p2p_finish(hp_comm_rank *r, hp_comm_group *g, const hp_comm_args *a, hp_comm_lreq *q,
                             int64_t deadline);
/* Frees an executor's scratch (coll_base.c). */
void hp_comm_scratch_free(hp_comm_scratch *s);

/* Asynchronous progress (progress.c): a rank's lanes are set up with the
 * rank and stopped (after draining their queues) before it goes. */
void hp_comm_progress_init(hp_comm_rank *r);
void hp_comm_progress_fini(hp_comm_rank *r);

#endif
