/* Point-to-point messages and the variable-count all-to-all, in their started
 * forms (hp_comm_start ... hp_comm_wait) beside the blocking ones: values
 * over a ring of uneven messages (some empty) and an all-to-all with uneven
 * per-peer counts (zeros included, and a call with no data at all), and one
 * whose receive counts its prepare step fills from the call before it, on
 * rank-threads in one supernode (1 x 4: messages copied once, sender's buffer
 * to receiver's), on the link emulator (2 x 2, throttled link) and, run
 * under mpirun (tests.cmake: comm/mpi_p2p), across the processes. A peer
 * that never answers gives the comm timeout's error naming it, no hang
 * (thread tier and emulated tier, blocking and started).
 *   test_comm_p2p            threads and emulator, then the timeouts
 *   mpirun -n 2 test_comm_p2p --ranks R   values across the processes */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "testutil.h"

#define MAXR 16

/* Element i of what member `from` sends member `to` (exact in fp32). */
static float val(int from, int to, int64_t i) { return (float)(from * 1000 + to * 100) + 0.5f * (float)i; }

/* Elements of the ring message from member m (uneven, member 1's empty). */
static int64_t ring_len(int m) { return m == 1 ? 0 : 3 + 29 * (int64_t)m; }

/* Elements member `from` sends member `to` in the all-to-all (zeros among them). */
static int64_t a2a_len(int from, int to) { return (int64_t)((from * 3 + to * 5) % 4) * 7 + (from == to); }

/* A ring: each member sends to the next and receives from the previous, both
 * started (even members start the send first, odd the receive: the two
 * calls share the group's lane), then waited; and the same blocking. */
static void ring(hp_comm_rank *r, hp_comm_group *g, int started, const char *cfg) {
    int n = hp_comm_group_size(g), me = hp_comm_group_index(g, hp_comm_rank_id(r));
    if (n < 2) return;
    int to = (me + 1) % n, from = (me + n - 1) % n;
    int64_t ns = ring_len(me), nr = ring_len(from);
    float *sb = malloc(sizeof(float) * (size_t)(ns + 1)), *rb = malloc(sizeof(float) * (size_t)(nr + 1));
    for (int64_t i = 0; i < ns; i++) sb[i] = val(me, to, i);
    for (int64_t i = 0; i <= nr; i++) rb[i] = -1;
    hp_comm_tensor ts = {NULL, sb, ns}, tr = {rb, NULL, nr};
    hp_comm_args as = {.kind = HP_COMM_SEND, .dtype = HP_F32, .peer = to, .t = &ts, .nt = 1};
    hp_comm_args ar = {.kind = HP_COMM_RECV, .dtype = HP_F32, .peer = from, .t = &tr, .nt = 1};
    const hp_comm_args *first = me % 2 ? &ar : &as, *second = me % 2 ? &as : &ar;
    if (started) {
        hp_comm_req *q1 = NULL, *q2 = NULL;
        CHECK_OK(hp_comm_start(&q1, r, g, first));
        CHECK_OK(hp_comm_start(&q2, r, g, second));
        CHECK_OK(hp_comm_wait(q1));
        CHECK_OK(hp_comm_wait(q2));
    } else {
        CHECK_OK(hp_comm_run(r, g, first));
        CHECK_OK(hp_comm_run(r, g, second));
    }
    int bad = 0;
    for (int64_t i = 0; i < nr; i++) bad += rb[i] != val(from, me, i);
    bad += rb[nr] != -1; /* nothing written past the message */
    CHECKF(!bad, "%s: ring %s: member %d got %d wrong elements of %lld from %d", cfg, started ? "started" : "blocking",
           me, bad, (long long)nr, from);
    free(sb), free(rb);
}

/* The all-to-all with per-peer counts, started or blocking; `empty`: every count 0. */
static void a2a(hp_comm_rank *r, hp_comm_group *g, int started, int empty, const char *cfg) {
    int n = hp_comm_group_size(g), me = hp_comm_group_index(g, hp_comm_rank_id(r));
    int64_t sc[MAXR], rc[MAXR], so = 0, ro = 0;
    for (int k = 0; k < n; k++) {
        sc[k] = empty ? 0 : a2a_len(me, k);
        rc[k] = empty ? 0 : a2a_len(k, me);
        so += sc[k], ro += rc[k];
    }
    float *sb = malloc(sizeof(float) * (size_t)(so + 1)), *rb = malloc(sizeof(float) * (size_t)(ro + 1));
    for (int k = 0, at = 0; k < n; k++)
        for (int64_t i = 0; i < sc[k]; i++) sb[at++] = val(me, k, i);
    for (int64_t i = 0; i <= ro; i++) rb[i] = -1;
    hp_comm_tensor t = {rb, sb, 0};
    hp_comm_args a = {.kind = HP_COMM_ALL_TO_ALL, .dtype = HP_F32, .t = &t, .nt = 1, .counts = sc, .recv_counts = rc};
    if (started) {
        hp_comm_req *q = NULL;
        CHECK_OK(hp_comm_start(&q, r, g, &a));
        CHECK_OK(hp_comm_wait(q));
    } else {
        CHECK_OK(hp_comm_run(r, g, &a));
    }
    int bad = 0;
    for (int k = 0, at = 0; k < n; k++)
        for (int64_t i = 0; i < rc[k]; i++) bad += rb[at++] != val(k, me, i);
    bad += rb[ro] != -1;
    CHECKF(!bad, "%s: all-to-all%s %s: member %d got %d wrong elements of %lld", cfg, empty ? " (empty)" : "",
           started ? "started" : "blocking", me, bad, (long long)ro);
    free(sb), free(rb);
}

/* A call's prepare step: the receive counts from what the call before it received (the peers' send counts, each
 * an int64 moved as two i32), on the lane once that call ended. */
typedef struct {
    const int64_t *got;
    int64_t *rc;
    int n, calls;
} prep;

static hp_status fill_counts(void *ctx) {
    prep *p = ctx;
    for (int k = 0; k < p->n; k++) p->rc[k] = p->got[k];
    p->calls++;
    return HP_OK;
}

/* The counts exchanged, then the all-to-all whose receive counts its prepare step fills from them: both started
 * back to back (nothing waited between), or both blocking. */
static void a2a_prepared(hp_comm_rank *r, hp_comm_group *g, int started, const char *cfg) {
    int n = hp_comm_group_size(g), me = hp_comm_group_index(g, hp_comm_rank_id(r));
    int64_t sc[MAXR], got[MAXR], rc[MAXR], so = 0, ro = 0;
    for (int k = 0; k < n; k++) sc[k] = a2a_len(me, k), so += sc[k], got[k] = rc[k] = -7, ro += a2a_len(k, me);
    float *sb = malloc(sizeof(float) * (size_t)(so + 1)), *rb = malloc(sizeof(float) * (size_t)(ro + 1));
    for (int k = 0, at = 0; k < n; k++)
        for (int64_t i = 0; i < sc[k]; i++) sb[at++] = val(me, k, i);
    for (int64_t i = 0; i <= ro; i++) rb[i] = -1;
    hp_comm_tensor tc = {got, sc, 2}, t = {rb, sb, 0};
    prep p = {got, rc, n, 0};
    hp_comm_args ac = {.kind = HP_COMM_ALL_TO_ALL, .dtype = HP_I32, .t = &tc, .nt = 1};
    hp_comm_args a = {.kind = HP_COMM_ALL_TO_ALL, .dtype = HP_F32, .t = &t, .nt = 1, .counts = sc, .recv_counts = rc,
                      .prepare = fill_counts, .prepare_ctx = &p};
    if (started) {
        hp_comm_req *q1 = NULL, *q2 = NULL;
        CHECK_OK(hp_comm_start(&q1, r, g, &ac));
        CHECK_OK(hp_comm_start(&q2, r, g, &a));
        CHECK_OK(hp_comm_wait(q1));
        CHECK_OK(hp_comm_wait(q2));
    } else {
        CHECK_OK(hp_comm_run(r, g, &ac));
        CHECK_OK(hp_comm_run(r, g, &a));
    }
    int bad = p.calls != 1;
    for (int k = 0; k < n; k++) bad += rc[k] != a2a_len(k, me);
    for (int k = 0, at = 0; k < n; k++)
        for (int64_t i = 0; i < rc[k] && rc[k] >= 0; i++) bad += rb[at++] != val(k, me, i);
    bad += rb[ro] != -1;
    CHECKF(!bad, "%s: all-to-all with prepared counts %s: member %d: %d wrong (prepare ran %d times)", cfg,
           started ? "started" : "blocking", me, bad, p.calls);
    free(sb), free(rb);
}

typedef struct {
    hp_comm_world *w;
    int rank;
    const char *cfg;
} job;

static void *values_main(void *arg) {
    job *j = arg;
    hp_comm_rank *r = hp_comm_world_rank(j->w, j->rank);
    hp_comm_group *g = hp_comm_world_group(j->w);
    for (int started = 0; started < 2; started++) {
        ring(r, g, started, j->cfg);
        a2a(r, g, started, 0, j->cfg);
        a2a(r, g, started, 1, j->cfg);
        a2a_prepared(r, g, started, j->cfg);
    }
    CHECK_OK(hp_comm_barrier(r, g));
    return NULL;
}

/* Runs the value checks on every rank this process hosts. */
static void values(hp_comm_world *w, const char *cfg) {
    int first = 0, count = 0;
    hp_comm_hosted_ranks(w, &first, &count);
    CHECK(count <= MAXR && hp_comm_world_size(w) <= MAXR);
    if (count > MAXR || hp_comm_world_size(w) > MAXR) return;
    pthread_t th[MAXR];
    job jobs[MAXR];
    for (int i = 0; i < count; i++) {
        jobs[i] = (job){w, first + i, cfg};
        pthread_create(&th[i], NULL, values_main, &jobs[i]);
    }
    for (int i = 0; i < count; i++) pthread_join(th[i], NULL);
    printf("comm p2p: %s: ring, all-to-all with counts and with prepared counts, blocking and started: checked\n",
           cfg);
}

static hp_comm_world *make(int S, int R, double timeout_s, double bw) {
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.supernodes = S;
    o.ranks_per_supernode = R;
    o.mpi = 0;
    o.timeout_s = timeout_s;
    o.inter_bw_gbps = bw;
    o.inter_latency_us = bw > 0 ? 20 : 0;
    hp_comm_world *w = NULL;
    CHECK_OK(hp_comm_world_create(&w, &o));
    return w;
}

/* Rank 0 calls `kind` towards rank `peer`, which never answers: the call
 * returns the timeout's error naming the call and the peer. */
static void silent_peer(int S, int R, int peer, hp_comm_kind kind, const char *kname, int started) {
    hp_comm_world *w = make(S, R, 0.5, 0);
    if (!w) return;
    hp_comm_rank *r = hp_comm_world_rank(w, 0);
    hp_comm_group *g = hp_comm_world_group(w);
    int n = hp_comm_world_size(w);
    float sb[64] = {0}, rb[64];
    int64_t sc[MAXR], rc[MAXR];
    for (int k = 0; k < n; k++) sc[k] = rc[k] = k == peer ? 3 : k == 0; /* only the silent peer owes data */
    hp_comm_tensor t = {rb, sb, 5};
    hp_comm_args a = {.kind = kind, .dtype = HP_F32, .peer = peer, .t = &t, .nt = 1};
    if (kind == HP_COMM_ALL_TO_ALL) a.counts = sc, a.recv_counts = rc;
    hp_status st;
    if (started) {
        hp_comm_req *q = NULL;
        st = hp_comm_start(&q, r, g, &a);
        if (!st) st = hp_comm_wait(q);
    } else {
        st = hp_comm_run(r, g, &a);
    }
    char want[32];
    snprintf(want, sizeof want, "rank %d", peer);
    const char *m = hp_status_msg(st);
    CHECKF(st && strstr(m, kname) && strstr(m, "timed out") && strstr(m, want),
           "%d x %d, %s%s to silent rank %d: %s", S, R, kname, started ? " (started)" : "", peer, st ? m : "no error");
    hp_status_free(st);
    hp_comm_world_destroy(w);
}

int main(int argc, char **argv) {
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    for (int i = 1; i < argc; i++) {
        int used = 0;
        hp_status st = hp_comm_opts_parse(&o, argv[i], i + 1 < argc ? argv[i + 1] : NULL, &used);
        if (st || !used) {
            fprintf(stderr, "test_comm_p2p: bad argument '%s': %s\n", argv[i], st ? hp_status_msg(st) : "unknown");
            hp_status_free(st);
            return 2;
        }
        i++;
    }
    if (argc > 1) { /* under mpirun: the processes are the supernodes */
        o.timeout_s = 120;
        hp_comm_world *w = NULL;
        CHECK_OK(hp_comm_world_create(&w, &o));
        if (!w) return hp_test_finish("test_comm_p2p");
        char cfg[64];
        snprintf(cfg, sizeof cfg, "%s %d x %d", hp_comm_uses_mpi(w) ? "MPI" : "threads", hp_comm_supernodes(w),
                 hp_comm_world_size(w) / hp_comm_supernodes(w));
        values(w, cfg);
        hp_comm_world_destroy(w);
        return hp_test_finish("test_comm_p2p");
    }
    hp_comm_world *w = make(1, 4, 60, 0);
    if (w) values(w, "threads 1 x 4"), hp_comm_world_destroy(w);
    w = make(2, 2, 60, 2);
    if (w) values(w, "emulated 2 x 2, throttled"), hp_comm_world_destroy(w);
    w = make(3, 1, 60, 0);
    if (w) values(w, "emulated 3 x 1"), hp_comm_world_destroy(w);
    for (int started = 0; started < 2; started++) {
        silent_peer(1, 2, 1, HP_COMM_RECV, "recv", started); /* thread tier */
        silent_peer(1, 2, 1, HP_COMM_SEND, "send", started);
        silent_peer(1, 2, 1, HP_COMM_ALL_TO_ALL, "all_to_all", started);
        silent_peer(2, 1, 1, HP_COMM_RECV, "recv", started); /* across emulated supernodes */
        silent_peer(2, 1, 1, HP_COMM_SEND, "send", started);
        silent_peer(2, 1, 1, HP_COMM_ALL_TO_ALL, "all_to_all", started);
    }
    printf("comm p2p: a silent peer gives the timeout's error (send, recv, all-to-all; blocking and started)\n");
    return hp_test_finish("test_comm_p2p");
}
