/* Collective volumes (autopar/volume) against the comm layer's counters
 * (hp_comm_rank_tier_stats): every kind (all_reduce, all_gather,
 * reduce_scatter, all_to_all, send, broadcast from the first and the last
 * member), sizes 0, 1, 7, 1000, 1001, 4001 and 20003 elements (most not
 * divisible by the group size; shards then uneven, given as counts) and a
 * 1 MiB + 12 B all_reduce, fp32 and bf16, separate and supernode-shared
 * outputs; on rank-threads of 1 x 2, 1 x 3, 1 x 4, 2 x 1, 2 x 2 and 3 x 2
 * (supernodes x ranks; the inter tier on the link emulator at 10 GB/s, no
 * latency), the all_to_all under and over the fusion threshold (the default,
 * never, and 4001 bytes on 2 x 2, where one direction of the pair fuses and
 * the other does not). For each call every rank resets its counters, runs
 * the call once, and its bytes and messages per tier must equal
 * hp_coll_volume's for its member index; the most over the members must
 * equal hp_coll_volume(member = -1). The model's errors name their field.
 *   test_volume                                   emulated supernodes
 *   mpirun -n 2 test_volume --ranks R             2 processes (supernodes) of R ranks */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autopar/volume.h"
#include "comm/comm.h"
#include "testutil.h"

#define MAXP 8
#define MAXCASES 512

typedef struct {
    hp_prof_kind kind;
    int64_t n; /* elements of the whole buffer */
    hp_dtype dt;
    int shared; /* supernode-shared output */
    int root;   /* broadcast: 0 = first member, 1 = last */
} tcase;

typedef struct {
    tcase c[MAXCASES];
    int n;
    int64_t got[MAXCASES][MAXP][4]; /* per rank: intra bytes, inter bytes, intra msgs, inter msgs */
    int64_t maxn;                   /* elements the buffers hold */
} plan;

static const char *kind_name(hp_prof_kind k) { return k == HP_VOL_BROADCAST ? "broadcast" : hp_profile_kind_name(k); }

static void add_case(plan *pl, hp_prof_kind k, int64_t n, hp_dtype dt, int shared, int root) {
    HP_ASSERT(pl->n < MAXCASES);
    pl->c[pl->n++] = (tcase){k, n, dt, shared, root};
    if (n > pl->maxn) pl->maxn = n;
}

static void make_plan(plan *pl) {
    static const int64_t sizes[] = {0, 1, 7, 1000, 1001, 4001, 20003};
    memset(pl, 0, sizeof *pl);
    for (int d = 0; d < 2; d++) {
        hp_dtype dt = d ? HP_BF16 : HP_F32;
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            int64_t n = sizes[i];
            for (int sh = 0; sh < 2; sh++) {
                add_case(pl, HP_PROF_ALL_REDUCE, n, dt, sh, 0);
                add_case(pl, HP_PROF_ALL_GATHER, n, dt, sh, 0);
                add_case(pl, HP_VOL_BROADCAST, n, dt, sh, 0);
                add_case(pl, HP_VOL_BROADCAST, n, dt, sh, 1);
            }
            add_case(pl, HP_PROF_REDUCE_SCATTER, n, dt, 0, 0);
            add_case(pl, HP_PROF_ALL_TO_ALL, n, dt, 0, 0);
            add_case(pl, HP_PROF_SEND, n, dt, 0, 0);
        }
    }
    /* from 1 MiB on, two lone ranks split the all-reduce into reduce-scatter + all-gather */
    add_case(pl, HP_PROF_ALL_REDUCE, ((int64_t)1 << 18) + 3, HP_F32, 0, 0);
    add_case(pl, HP_PROF_ALL_REDUCE, ((int64_t)1 << 18) + 3, HP_F32, 1, 0);
}

/* Balanced shards of n elements over p members (autopar/volume.h's c_x). */
static int64_t shard_of(int64_t n, int p, int x) { return n / p + (x < n % p); }

typedef struct {
    hp_comm_world *w;
    plan *pl;
    int rank;
    void *A, *B;   /* this rank's buffers */
    void **shared; /* per supernode (hosted ones): one output */
} job;

/* Runs case c on this rank once and stores its counters. */
static void run_case(job *j, int ci) {
    hp_comm_rank *r = hp_comm_world_rank(j->w, j->rank);
    hp_comm_group *g = hp_comm_world_group(j->w);
    const tcase *c = &j->pl->c[ci];
    int p = hp_comm_group_size(g), me = hp_comm_group_index(g, j->rank), R = hp_comm_ranks_per_supernode(j->w);
    size_t es = hp_dtype_size(c->dt);
    void *out = c->shared ? j->shared[me / R] : j->B;
    int64_t counts[MAXP], rcounts[MAXP], n = c->n;
    int even = n % p == 0;
    for (int x = 0; x < p; x++) counts[x] = shard_of(n, p, x), rcounts[x] = shard_of(n, p, me);
    memset(j->A, 0, (size_t)n * es + 64); /* zeros: sums of zeros are finite in both dtypes */
    CHECK_OK(hp_comm_barrier(r, g));     /* nobody still reads a shared output of the last case */
    hp_comm_rank_reset_stats(r);
    hp_status st = HP_OK;
    switch ((int)c->kind) {
    case HP_PROF_ALL_REDUCE: st = hp_comm_all_reduce(r, g, out, j->A, n, c->dt, HP_COMM_SUM); break;
    case HP_PROF_ALL_GATHER:
        st = hp_comm_all_gather(r, g, out, j->A, even ? n / p : 0, even ? NULL : counts, c->dt);
        break;
    case HP_PROF_REDUCE_SCATTER:
        st = hp_comm_reduce_scatter(r, g, j->B, j->A, even ? n / p : 0, even ? NULL : counts, c->dt, HP_COMM_SUM);
        break;
    case HP_PROF_ALL_TO_ALL:
        st = hp_comm_all_to_all(r, g, j->B, j->A, even ? n / p : 0, even ? NULL : counts, even ? NULL : rcounts,
                                c->dt);
        break;
    case HP_PROF_SEND: { /* around the ring, even members first: every rank sends one message */
        int to = (me + 1) % p, from = (me + p - 1) % p;
        if (me % 2 == 0) {
            st = hp_comm_send(r, g, j->A, n, c->dt, to);
            if (!st) st = hp_comm_recv(r, g, j->B, n, c->dt, from);
        } else {
            st = hp_comm_recv(r, g, j->B, n, c->dt, from);
            if (!st) st = hp_comm_send(r, g, j->A, n, c->dt, to);
        }
        break;
    }
    default: st = hp_comm_broadcast(r, g, out == j->B ? j->A : out, n, c->dt, c->root ? p - 1 : 0); break;
    }
    int64_t b[2], m[2];
    hp_comm_rank_tier_stats(r, b, m);
    CHECKF(!st, "%s of %lld elements: %s", kind_name(c->kind), (long long)n, st ? hp_status_msg(st) : "");
    hp_status_free(st);
    int64_t *got = j->pl->got[ci][me];
    got[0] = b[0], got[1] = b[1], got[2] = m[0], got[3] = m[1];
}

static void *rank_main(void *arg) {
    job *j = arg;
    hp_comm_group *g = hp_comm_world_group(j->w);
    if (hp_comm_group_size(g) == 1) return NULL;
    for (int ci = 0; ci < j->pl->n; ci++) {
        const tcase *c = &j->pl->c[ci];
        if (c->kind == HP_PROF_SEND && hp_comm_group_size(g) < 2) continue;
        run_case(j, ci);
    }
    CHECK_OK(hp_comm_barrier(hp_comm_world_rank(j->w, j->rank), g));
    return NULL;
}

static hp_coll_call call_of(const tcase *c, int p, int s, int64_t thr) {
    hp_coll_call k = {c->kind, c->n * (int64_t)hp_dtype_size(c->dt), (int)hp_dtype_size(c->dt), p, s, thr, 0, c->shared};
    if (c->kind == HP_VOL_BROADCAST) k.peer = c->root ? p - 1 : 0;
    return k;
}

static const char *tier_field[4] = {"intra bytes", "inter bytes", "intra messages", "inter messages"};

static void vol_fields(int64_t f[4], const hp_coll_vol *v) {
    f[0] = v->bytes[HP_PROF_INTRA], f[1] = v->bytes[HP_PROF_INTER];
    f[2] = v->msgs[HP_PROF_INTRA], f[3] = v->msgs[HP_PROF_INTER];
}

/* Runs the plan on every hosted rank of w and compares with the model; returns the calls compared. */
static int check_world(hp_comm_world *w, int64_t thr, const char *cfg) {
    static plan pl;
    make_plan(&pl);
    int first, count, p = hp_comm_world_size(w), s = hp_comm_supernodes(w), R = hp_comm_ranks_per_supernode(w);
    hp_comm_hosted_ranks(w, &first, &count);
    HP_ASSERT(count <= MAXP && p <= MAXP);
    size_t cap = ((size_t)pl.maxn * 4 + 64 + 63) & ~(size_t)63; /* aligned_alloc: a multiple of the alignment */
    void *shared[MAXP] = {0};
    job jobs[MAXP];
    pthread_t th[MAXP];
    for (int T = first / R; T < (first + count) / R; T++) shared[T] = aligned_alloc(64, cap);
    for (int i = 0; i < count; i++) {
        jobs[i] = (job){w, &pl, first + i, aligned_alloc(64, cap), aligned_alloc(64, cap), shared};
        pthread_create(&th[i], NULL, rank_main, &jobs[i]);
    }
    for (int i = 0; i < count; i++) pthread_join(th[i], NULL);
    int compared = 0, fails_before = hp_test_failures;
    for (int ci = 0; ci < pl.n; ci++) {
        const tcase *c = &pl.c[ci];
        hp_coll_call k = call_of(c, p, s, thr);
        int64_t most[4] = {0, 0, 0, 0};
        for (int i = 0; i < count; i++) {
            int me = first + i;
            if (c->kind == HP_PROF_SEND) k.peer = (me + 1) % p;
            hp_coll_vol v;
            CHECK_OK(hp_coll_volume(&v, &k, me));
            int64_t want[4];
            vol_fields(want, &v);
            for (int f = 0; f < 4; f++) {
                CHECKF(pl.got[ci][me][f] == want[f],
                       "%s: %s of %lld %s elements%s%s, member %d: %lld %s counted, %lld predicted", cfg,
                       kind_name(c->kind), (long long)c->n, hp_dtype_name(c->dt), c->shared ? ", shared output" : "",
                       c->kind == HP_VOL_BROADCAST ? (c->root ? ", root last" : ", root first") : "", me,
                       (long long)pl.got[ci][me][f], tier_field[f], (long long)want[f]);
                if (pl.got[ci][me][f] > most[f]) most[f] = pl.got[ci][me][f];
            }
        }
        compared++;
        if (c->kind == HP_PROF_SEND || count < p) continue; /* each rank sends to another peer; or ranks elsewhere */
        hp_coll_vol v;
        CHECK_OK(hp_coll_volume(&v, &k, -1));
        int64_t want[4];
        vol_fields(want, &v);
        for (int f = 0; f < 4; f++)
            CHECKF(most[f] == want[f], "%s: %s of %lld %s elements%s: most %s over the members %lld, predicted %lld",
                   cfg, kind_name(c->kind), (long long)c->n, hp_dtype_name(c->dt), c->shared ? ", shared output" : "",
                   tier_field[f], (long long)most[f], (long long)want[f]);
    }
    for (int i = 0; i < count; i++) free(jobs[i].A), free(jobs[i].B);
    for (int T = 0; T < MAXP; T++) free(shared[T]);
    printf("collective volumes: %s, a2a_fuse_bytes %lld: %d calls x %d ranks, counted vs predicted per tier: %d "
           "mismatch(es)\n", cfg, (long long)thr, compared, count, hp_test_failures - fails_before);
    return compared;
}

static hp_comm_world *make(int S, int R, int64_t thr) {
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.supernodes = S;
    o.ranks_per_supernode = R;
    o.mpi = 0;
    o.timeout_s = 60;
    o.inter_bw_gbps = 10;
    o.inter_latency_us = 0;
    o.a2a_fuse_bytes = thr;
    hp_comm_world *w = NULL;
    CHECK_OK(hp_comm_world_create(&w, &o));
    return w;
}

/* Hand-worked numbers (volume.h's formulas) and the model's errors. */
static void by_hand(void) {
    hp_coll_vol v;
    /* all_reduce of 4000 fp32 bytes on 2 x 2: chunks of 1000 B; member 1 swaps 2000 B with member 3, reads its
     * peer's input and writes its peer's output for both chunks (1 message each per chunk) */
    hp_coll_call c = {HP_PROF_ALL_REDUCE, 4000, 4, 4, 2, 0, 0, 0};
    CHECK_OK(hp_coll_volume(&v, &c, 1));
    CHECK(v.bytes[HP_PROF_INTER] == 2000 && v.msgs[HP_PROF_INTER] == 1);
    CHECK(v.bytes[HP_PROF_INTRA] == 4000 && v.msgs[HP_PROF_INTRA] == 4);
    /* the same on one supernode of 4: no inter; its chunk read from 3 peers, written into 3 */
    c.supernodes = 1;
    CHECK_OK(hp_coll_volume(&v, &c, 0));
    CHECK(v.bytes[HP_PROF_INTER] == 0 && v.bytes[HP_PROF_INTRA] == 6000 && v.msgs[HP_PROF_INTRA] == 6);
    /* all_to_all of 4000 B on 2 x 2, threshold 8 KiB: each pair fuses; member 1 (l = 1 = U mod 2 for U = 1) sends
     * the header (4 x 8 B) and its supernode's rows for U (2 x 2000 B) */
    c = (hp_coll_call){HP_PROF_ALL_TO_ALL, 4000, 4, 4, 2, 8192, 0, 0};
    CHECK_OK(hp_coll_volume(&v, &c, 1));
    CHECK(v.bytes[HP_PROF_INTER] == 32 + 4000 && v.msgs[HP_PROF_INTER] == 1);
    CHECK_OK(hp_coll_volume(&v, &c, 0));
    CHECK(v.bytes[HP_PROF_INTER] == 0 && v.msgs[HP_PROF_INTER] == 0);
    c.a2a_fuse_bytes = 0; /* direct: 2 messages of 1000 B each */
    CHECK_OK(hp_coll_volume(&v, &c, 0));
    CHECK(v.bytes[HP_PROF_INTER] == 2000 && v.msgs[HP_PROF_INTER] == 2);
    c = (hp_coll_call){HP_PROF_ALL_REDUCE, 4000, 4, 4, 3, 0, 0, 0};
    CHECK_ERR(hp_coll_volume(&v, &c, 0), "supernodes: 3 does not divide members 4");
    c = (hp_coll_call){HP_PROF_ALL_REDUCE, 4001, 4, 4, 2, 0, 0, 0};
    CHECK_ERR(hp_coll_volume(&v, &c, 0), "bytes: 4001 is not a nonnegative multiple of elem_bytes 4");
    c = (hp_coll_call){HP_PROF_SEND, 4000, 4, 4, 2, 0, 2, 0};
    CHECK_ERR(hp_coll_volume(&v, &c, 2), "send: member 2 cannot send to itself");
    c.peer = 4;
    CHECK_ERR(hp_coll_volume(&v, &c, 0), "peer: 4 is not a member index in [0, 4)");
    c.peer = 0;
    CHECK_ERR(hp_coll_volume(&v, &c, 4), "member: 4 is not -1 or a member index");
    c.kind = (hp_prof_kind)(HP_PROF_NKINDS + 1);
    CHECK_ERR(hp_coll_volume(&v, &c, 0), "kind: 6 is not a collective kind");
}

int main(int argc, char **argv) {
    if (argc > 1) { /* under mpirun: the processes are the supernodes */
        hp_comm_opts o;
        hp_comm_opts_default(&o);
        for (int i = 1; i < argc; i += 2) {
            int used = 0;
            hp_status st = hp_comm_opts_parse(&o, argv[i], i + 1 < argc ? argv[i + 1] : NULL, &used);
            if (st || !used) {
                fprintf(stderr, "test_volume: bad argument '%s': %s\n", argv[i], st ? hp_status_msg(st) : "unknown");
                hp_status_free(st);
                return 2;
            }
        }
        o.timeout_s = 120;
        hp_comm_world *w = NULL;
        CHECK_OK(hp_comm_world_create(&w, &o));
        if (!w) return hp_test_finish("test_volume");
        char cfg[64];
        snprintf(cfg, sizeof cfg, "%s %d x %d", hp_comm_uses_mpi(w) ? "MPI" : "threads", hp_comm_supernodes(w),
                 hp_comm_ranks_per_supernode(w));
        check_world(w, o.a2a_fuse_bytes, cfg);
        hp_comm_world_destroy(w);
        return hp_test_finish("test_volume");
    }
    by_hand();
    static const struct {
        int S, R;
        int64_t thr;
    } worlds[] = {{1, 2, HP_COMM_A2A_FUSE_BYTES_DEFAULT}, {1, 3, HP_COMM_A2A_FUSE_BYTES_DEFAULT},
                  {1, 4, HP_COMM_A2A_FUSE_BYTES_DEFAULT}, {2, 1, HP_COMM_A2A_FUSE_BYTES_DEFAULT},
                  {2, 2, HP_COMM_A2A_FUSE_BYTES_DEFAULT}, {2, 2, 0},
                  {2, 2, 4001},                           {3, 2, HP_COMM_A2A_FUSE_BYTES_DEFAULT}};
    for (size_t i = 0; i < sizeof worlds / sizeof *worlds; i++) {
        hp_comm_world *w = make(worlds[i].S, worlds[i].R, worlds[i].thr);
        if (!w) continue;
        char cfg[64];
        snprintf(cfg, sizeof cfg, "emulated %d x %d", worlds[i].S, worlds[i].R);
        check_world(w, worlds[i].thr, cfg);
        hp_comm_world_destroy(w);
    }
    return hp_test_finish("test_volume");
}
