/* comm/coll_internal: what the files of the collectives share (coll.c,
 * coll_base.c, coll_sum.c, coll_rs_ag.c, coll_allreduce.c, coll_a2a.c): the call
 * context, the shard layout of a fused call, the fused vector of an
 * all-reduce, the small index helpers, and the prototypes of the pieces one
 * file gives the others. Not for use outside these files. */
#ifndef HP_COMM_COLL_INTERNAL_H
#define HP_COMM_COLL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "comm/internal.h"

typedef struct {
    hp_comm_rank *r;
    hp_comm_scratch *s; /* the executor's scratch */
    hp_comm_group *g;
    const char *what;
    int me, T, L, myl;
    hp_comm_slot *slots;
    hp_comm_fence *bar;
    int64_t deadline;
    hp_dtype dt;
    size_t esz;
    const void *const *src; /* all-reduce: per tensor input */
    void *const *dst;       /* all-reduce: per tensor output */
    int64_t copied;         /* all-gather: bytes copied so far */
    int tree;               /* sums as binary trees over member positions (hp_comm_args.tree) */
    int fence;              /* all-gather: the supernode's members meet before any write (hp_comm_args.fence) */
    int defer_size;         /* hp_coll_wait_all: a message of the wrong size is noted (size_*) and the waits go on;
                             * the group is not broken (hp_coll_size_error) */
    int size_bad, size_peer;
    size_t size_bytes;
    int64_t intra_bytes, intra_msgs; /* moved to or from the peers' buffers (hp_comm_rank_tier_stats);
                                      * added to the rank's counters when the call returns */
} ctx;

/* Counts n elements read from (or written into) each of `peers` peers' buffers: one message per peer,
 * none for an empty range. */
static inline void peer_io(ctx *c, int peers, int64_t n) {
    if (n <= 0 || peers <= 0) return;
    c->intra_bytes += (int64_t)peers * n * (int64_t)c->esz;
    c->intra_msgs += peers;
}

/* Shard layout of a fused all-gather / reduce-scatter. */
typedef struct {
    int mode; /* 0: t[i].count each; 1: explicit counts (nt = 1) */
    int nt, n;
    const hp_comm_tensor *t;
    const int64_t *counts;
    const int64_t *offs;
} lay;

static inline int64_t lcnt(const lay *l, int i, int m) { return l->mode == 0 ? l->t[i].count : l->counts[m]; }

static inline int64_t loff(const lay *l, int i, int m) {
    return l->mode == 0 ? (int64_t)m * l->t[i].count : l->offs[m];
}

/* The fused tensors back to back: pre[i] is where tensor i starts. */
typedef struct {
    const hp_comm_tensor *t;
    int nt;
    const int64_t *pre;
} fvec;

/* Start of member m's chunk when N elements are cut into n balanced chunks. */
static inline int64_t chunk_at(int64_t N, int n, int m) {
    int64_t q = N / n, rem = N % n;
    return (int64_t)m * q + (m < rem ? m : rem);
}

/* The rank of supernode position T that handles member m's data there. */
static inline int owner(const hp_comm_group *g, int T, int m) { return g->sn_members[T][g->lidx[m] % g->sn_n[T]]; }

static inline void *ptr_at(void *base, int64_t off, size_t esz) { return (char *)base + off * (int64_t)esz; }

/* Failure, barrier, link waits and scratch (coll_base.c). */
hp_status hp_coll_fail(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
hp_status hp_coll_broken(ctx *c);
hp_status hp_coll_bar(ctx *c);
hp_status hp_coll_wait_all(ctx *c, hp_comm_lreq *q, int n);
/* The error of a wrong-sized message noted under defer_size (HP_OK if none); the group stays usable. */
hp_status hp_coll_size_error(const ctx *c);
void hp_coll_cancel_all(ctx *c, hp_comm_lreq *q, int n);
void *hp_coll_grow(void **p, size_t *cap, size_t need);
hp_status hp_coll_scratch(ctx *c, void **out, size_t bytes);
hp_status hp_coll_lreqs(ctx *c, hp_comm_lreq **out, size_t n);

/* Returns the status of expr when it fails, after withdrawing the requests
 * q[0, nq) posted so far (needs ctx *c, hp_comm_lreq *q and int nq). */
#define TRY_Q(expr)                       \
    do {                                  \
        hp_status tq_ = (expr);           \
        if (tq_) {                        \
            hp_coll_cancel_all(c, q, nq); \
            return tq_;                   \
        }                                 \
    } while (0)

/* Arithmetic: fp32 sums in a fixed order, in blocks of BLK elements (coll_sum.c). */
#define BLK 1024
void hp_coll_load_f32(float *t, const void *src, hp_dtype dt, int64_t off, int64_t n);
void hp_coll_add_f32(float *t, const void *src, hp_dtype dt, int64_t off, int64_t n);
void hp_coll_store(void *dst, hp_dtype dt, int64_t off, const float *t, int64_t n, float div, int stream);
/* One source of a tree sum: element off of p (dtype dt) and on. */
typedef struct {
    const void *p;
    hp_dtype dt;
    int64_t off;
} hp_coll_src;
void hp_coll_tree_sum(float *t, const hp_coll_src *src, int n, int64_t nb);
void hp_coll_reduce_peers(void *out, int acc, hp_dtype dt, const void *const *src, int nsrc, int64_t off,
                          int64_t n, float div, int stream, int tree);
void hp_coll_canon_sum(float *u, hp_dtype dt, float *own, const void *const *parts, int k, int T, int64_t off,
                       int64_t n, int tree);
void hp_coll_combine(void *out, hp_dtype dt, const float *acc, const void *const *parts, int k, int T, int64_t n,
                     float div, int stream, int tree);

/* Reduce-scatter and all-gather (coll_rs_ag.c). */
hp_status hp_coll_reduce_scatter(ctx *c, const lay *l, const void *const *src, void *const *out, float div);
hp_status hp_coll_all_gather(ctx *c, const lay *l, const void *const *in, void *const *out);

/* All-reduce (coll_allreduce.c). */
hp_status hp_coll_all_reduce(ctx *c, const fvec *v, float div);

/* All-to-all with per-pair counts, direct or fused across supernodes (coll_a2a.c). */
hp_status hp_coll_all_to_all(ctx *c, const hp_comm_args *a);

#endif
