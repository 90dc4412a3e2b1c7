/* tests/comm/concur: several collectives in flight per rank, checked by
 * value (harness.h's integer data, compared bit for bit).
 *  - cross: every rank has calls on two groups in flight at once and issues
 *    them in a rank-dependent order that forms a cycle (on 2 x 2: rank 0
 *    row then column, rank 1 column then row, ...; on 2 ranks: the world
 *    and the reversed world in opposite orders). Run one after another per
 *    rank, every rank would wait for a peer busy with the other group, so
 *    the values only come out when the two groups progress concurrently.
 *    Two variants: both started and waited in the reverse of the start
 *    order, and the first started with the second run synchronously (on
 *    the calling thread) before waiting on the first.
 *  - many: 8 started calls of different kinds on one group, polled with
 *    hp_comm_test and waited in reverse order, and a synchronous call
 *    issued while they are in flight (it runs after them).
 *  - lanes: one call on each of 10 groups of the same members (more groups
 *    than a rank has lanes, so some share one), started in the same order,
 *    waited in reverse.
 * Completion is awaited, never timed: a broken implementation fails by the
 * world's collective timeout, with the error naming the group. */
#ifndef HP_TEST_COMM_CONCUR_H
#define HP_TEST_COMM_CONCUR_H

#include <sched.h>

#include "harness.h"

enum { HC_GROUPS = 10 };

typedef struct {
    hp_comm_world *w;
    int rank;
    hp_comm_group *ga, *gb; /* the two groups of the rank's cycle (NULL: no cycle test) */
    int a_first;            /* this rank issues ga's call first */
    hp_comm_group *world, *same[HC_GROUPS];
} hc_job;

static void *hc_alloc(size_t bytes) {
    void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!p) {
        fprintf(stderr, "concur: out of memory for %zu bytes\n", bytes);
        exit(1);
    }
    return p;
}

/* One all-reduce (sum) or reduce-scatter (avg) per group in flight; values
 * are checked against the sum over each group's members. */
typedef struct {
    hp_comm_group *g;
    int me, n, salt, rs;
    int64_t N;
    void *in, *out;
    hp_comm_tensor t;
    hp_comm_args a;
} hc_call;

static void hc_call_init(hc_call *c, hp_comm_rank *r, hp_comm_group *g, int64_t N, hp_dtype dt, int salt, int rs) {
    c->g = g;
    c->n = hp_comm_group_size(g);
    c->me = hp_comm_group_index(g, hp_comm_rank_id(r));
    c->salt = salt;
    c->rs = rs;
    c->N = N;
    size_t es = hp_dtype_size(dt);
    c->in = hc_alloc((size_t)N * (size_t)c->n * es + 8);
    c->out = hc_alloc((size_t)N * (size_t)c->n * es + 8);
    hx_fill(c->in, dt, rs ? N * c->n : N, c->me, 0, salt, 0);
    memset(c->out, 0xff, (size_t)N * es);
    c->t = (hp_comm_tensor){c->out, c->in, N};
    c->a = (hp_comm_args){rs ? HP_COMM_REDUCE_SCATTER : HP_COMM_ALL_REDUCE, dt, rs ? HP_COMM_AVG : HP_COMM_SUM, 0,
                          &c->t, 1, NULL, NULL, NULL, 0, 0, NULL, NULL};
}

static void hc_call_check(hc_call *c, const hx_cx *x, const char *what) {
    if (c->rs) hx_expect(x, what, c->out, c->N, c->me * c->N, hx_sums(c->n, c->salt, (float)c->n));
    else hx_expect(x, what, c->out, c->N, 0, hx_sums(c->n, c->salt, 0));
    free(c->in);
    free(c->out);
}

/* The cycle: calls on ga and gb in flight at once, issued in this rank's order. */
static void hc_cross(hc_job *j, hp_comm_rank *r) {
    static const int64_t sizes[3] = {7, 4099, (int64_t)1 << 18};
    for (int s = 0; s < 3; s++)
        for (int d = 0; d < 2; d++)
            for (int mode = 0; mode < 2; mode++) {
                hp_dtype dt = d ? HP_BF16 : HP_F32;
                char cell[32];
                snprintf(cell, sizeof cell, "%lld elements", (long long)sizes[s]);
                hx_cx x = {j->rank, dt, cell};
                int salt = 3000 + 100 * s + 10 * d + 4 * mode;
                hc_call ca, cb;
                /* an all-reduce on each group; with mode 1 on the larger sizes
                 * the second group's call is a reduce-scatter instead */
                hc_call_init(&ca, r, j->ga, sizes[s], dt, salt, 0);
                hc_call_init(&cb, r, j->gb, sizes[s], dt, salt + 1, mode && s > 0);
                hc_call *first = j->a_first ? &ca : &cb, *second = j->a_first ? &cb : &ca;
                hp_comm_req *q1 = NULL, *q2 = NULL;
                EXPECT_OK(hp_comm_start(&q1, r, first->g, &first->a));
                if (mode == 0) {
                    EXPECT_OK(hp_comm_start(&q2, r, second->g, &second->a));
                    EXPECT_OK(hp_comm_wait(q2)); /* the reverse of the start order */
                } else {
                    EXPECT_OK(hp_comm_run(r, second->g, &second->a)); /* on this thread, the other in flight */
                }
                EXPECT_OK(hp_comm_wait(q1));
                hc_call_check(&ca, &x, mode ? "cross groups (start + run), first group" : "cross groups, first group");
                hc_call_check(&cb, &x, mode ? "cross groups (start + run), second group" : "cross groups, second group");
            }
}

/* 8 started calls of different kinds on one group, waited in reverse order,
 * and a synchronous all-reduce issued while they are in flight. */
static void hc_many(hc_job *j, hp_comm_rank *r, hp_comm_group *g, int salt) {
    int n = hp_comm_group_size(g), me = hp_comm_group_index(g, j->rank);
    enum { NC = 8 };
    const int64_t N = 4099, C = 1000, M = 777, P = 300, BIG = (int64_t)1 << 18;
    hx_cx x = {j->rank, HP_F32, "8 in flight"};
    float *ar = hc_alloc((size_t)N * 4), *ar_out = hc_alloc((size_t)N * 4);
    float *ag_in = hc_alloc((size_t)C * 4), *ag_out = hc_alloc((size_t)C * (size_t)n * 4);
    float *rs_in = hc_alloc((size_t)C * (size_t)n * 4), *rs_out = hc_alloc((size_t)C * 4);
    float *bc = hc_alloc((size_t)M * 4);
    float *fu_in = hc_alloc((size_t)(BIG + 5) * 4), *fu_out = hc_alloc((size_t)(BIG + 5) * 4);
    float *aa_in = hc_alloc((size_t)P * (size_t)n * 4), *aa_out = hc_alloc((size_t)P * (size_t)n * 4);
    uint16_t *ip = hc_alloc((size_t)N * 2);
    float *sy_in = hc_alloc(333 * 4), *sy_out = hc_alloc(333 * 4);
    hx_fill(ar, HP_F32, N, me, 0, salt, 0);
    hx_fill(ag_in, HP_F32, C, me, 0, salt + 1, 0);
    hx_fill(rs_in, HP_F32, C * n, me, 0, salt + 2, 0);
    if (me == n - 1) hx_fill(bc, HP_F32, M, me, 0, salt + 3, 0);
    else memset(bc, 0xff, (size_t)M * 4);
    hx_fill(fu_in, HP_F32, BIG, me, 0, salt + 4, 0);
    hx_fill(fu_in + BIG, HP_F32, 5, me, 0, salt + 5, 0);
    hx_fill(aa_in, HP_F32, P * n, me, 0, salt + 6, 0);
    hx_fill(ip, HP_BF16, N, me, 0, salt + 7, 0);
    hx_fill(sy_in, HP_F32, 333, me, 0, salt + 8, 0);
    hp_comm_tensor t[NC + 1] = {
        {ar_out, ar, N},  {ag_out, ag_in, C},  {rs_out, rs_in, C}, {bc, NULL, M},
        {fu_out, fu_in, BIG}, {aa_out, aa_in, P}, {ip, ip, N},  {NULL, NULL, 0},
        {fu_out + BIG, fu_in + BIG, 5}, /* the fused call's second tensor */
    };
    hp_comm_tensor fused[2] = {t[4], t[8]};
    hp_comm_args a[NC] = {
        {HP_COMM_ALL_REDUCE, HP_F32, HP_COMM_SUM, 0, &t[0], 1, NULL, NULL, NULL, 0, 0, NULL, NULL},
        {HP_COMM_ALL_GATHER, HP_F32, HP_COMM_SUM, 0, &t[1], 1, NULL, NULL, NULL, 0, 0, NULL, NULL},
        {HP_COMM_REDUCE_SCATTER, HP_F32, HP_COMM_AVG, 0, &t[2], 1, NULL, NULL, NULL, 0, 0, NULL, NULL},
        {HP_COMM_BROADCAST, HP_F32, HP_COMM_SUM, n - 1, &t[3], 1, NULL, NULL, NULL, 0, 0, NULL, NULL},
        {HP_COMM_ALL_REDUCE, HP_F32, HP_COMM_SUM, 0, fused, 2, NULL, NULL, NULL, 0, 0, NULL, NULL},
        {HP_COMM_ALL_TO_ALL, HP_F32, HP_COMM_SUM, 0, &t[5], 1, NULL, NULL, NULL, 0, 0, NULL, NULL},
        {HP_COMM_ALL_REDUCE, HP_BF16, HP_COMM_SUM, 0, &t[6], 1, NULL, NULL, NULL, 0, 0, NULL, NULL},
        {HP_COMM_BARRIER, HP_F32, HP_COMM_SUM, 0, &t[7], 1, NULL, NULL, NULL, 0, 0, NULL, NULL},
    };
    hp_comm_req *q[NC];
    for (int k = 0; k < NC; k++) EXPECT_OK(hp_comm_start(&q[k], r, g, &a[k]));
    /* polling: the first call completes without a wait (its lane runs it) */
    int first_done = 0;
    while (!first_done) {
        EXPECT_OK(hp_comm_test(q[0], &first_done));
        if (!first_done) sched_yield();
    }
    /* issued while 8 are in flight: runs after them (same group, start order) */
    EXPECT_OK(hp_comm_all_reduce(r, g, sy_out, sy_in, 333, HP_F32, HP_COMM_SUM));
    /* the last started call ran before the synchronous one: done */
    int done = 0;
    EXPECT_OK(hp_comm_test(q[NC - 1], &done));
    EXPECT(done == 1, "rank %d: a call started before a synchronous one on the same group is not done after it",
           j->rank);
    for (int k = NC - 1; k >= 0; k--) {
        hp_status st = hp_comm_wait(q[k]);
        EXPECT(st == HP_OK, "rank %d: started call %d on group '%s': %s", j->rank, k, hp_comm_group_name(g),
               hp_status_msg(st));
        hp_status_free(st);
    }
    hx_expect(&x, "8 in flight: all_reduce", ar_out, N, 0, hx_sums(n, salt, 0));
    for (int m = 0; m < n; m++) hx_expect(&x, "8 in flight: all_gather", ag_out + m * C, C, 0, hx_vals(m, salt + 1));
    hx_expect(&x, "8 in flight: reduce_scatter avg", rs_out, C, me * C, hx_sums(n, salt + 2, (float)n));
    hx_expect(&x, "8 in flight: broadcast", bc, M, 0, hx_vals(n - 1, salt + 3));
    hx_expect(&x, "8 in flight: fused all_reduce (1 MiB)", fu_out, BIG, 0, hx_sums(n, salt + 4, 0));
    hx_expect(&x, "8 in flight: fused all_reduce (5)", fu_out + BIG, 5, 0, hx_sums(n, salt + 5, 0));
    for (int m = 0; m < n; m++) hx_expect(&x, "8 in flight: all_to_all", aa_out + m * P, P, me * P, hx_vals(m, salt + 6));
    hx_cx xb = {j->rank, HP_BF16, "8 in flight"};
    hx_expect(&xb, "8 in flight: all_reduce in place", ip, N, 0, hx_sums(n, salt + 7, 0));
    hx_expect(&x, "8 in flight: synchronous all_reduce", sy_out, 333, 0, hx_sums(n, salt + 8, 0));
    void *bufs[] = {ar, ar_out, ag_in, ag_out, rs_in, rs_out, bc, fu_in, fu_out, aa_in, aa_out, ip, sy_in, sy_out};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++) free(bufs[k]);
}

/* One all-reduce on each of HC_GROUPS groups (more than a rank's lanes). */
static void hc_lanes(hc_job *j, hp_comm_rank *r) {
    hc_call c[HC_GROUPS];
    hp_comm_req *q[HC_GROUPS];
    hx_cx x = {j->rank, HP_F32, "10 groups"};
    for (int k = 0; k < HC_GROUPS; k++) {
        hc_call_init(&c[k], r, j->same[k], 1000 + k, HP_F32, 5000 + k, k % 3 == 2);
        EXPECT_OK(hp_comm_start(&q[k], r, c[k].g, &c[k].a));
    }
    for (int k = HC_GROUPS - 1; k >= 0; k--) EXPECT_OK(hp_comm_wait(q[k]));
    for (int k = 0; k < HC_GROUPS; k++) hc_call_check(&c[k], &x, "one call on each of 10 groups");
}

static void *hc_rank_main(void *arg) {
    hc_job *j = arg;
    hp_comm_rank *r = hp_comm_world_rank(j->w, j->rank);
    if (j->ga) hc_cross(j, r);
    hc_many(j, r, j->world, 6000);
    if (j->ga) hc_many(j, r, j->gb, 7000);
    hc_lanes(j, r);
    return NULL;
}

/* Runs the concurrency tests on every hosted rank of w. The cycle needs 2
 * ranks (the world and the reversed world) or 4 (rows {0,1}, {2,3} and
 * columns {0,2}, {1,3} of a 2 x 2 mesh); other sizes run the rest. Returns
 * the number of failures (already counted in hp_test_failures). */
static int hx_concurrency(hp_comm_world *w, const char *config) {
    int first, count;
    hp_comm_hosted_ranks(w, &first, &count);
    int n = hp_comm_world_size(w), fails_before = hp_test_failures;
    long before = atomic_load(&hx_compared);
    hp_comm_group *extra[4] = {NULL, NULL, NULL, NULL}, *same[HC_GROUPS];
    int all[64];
    for (int i = 0; i < n && i < 64; i++) all[i] = i;
    if (n == 2) {
        int rev[2] = {1, 0};
        CHECK_OK(hp_comm_group_create(&extra[0], w, rev, 2, "reversed"));
    } else if (n == 4) {
        int rows[2][2] = {{0, 1}, {2, 3}}, cols[2][2] = {{0, 2}, {1, 3}};
        CHECK_OK(hp_comm_group_create(&extra[0], w, rows[0], 2, "row0"));
        CHECK_OK(hp_comm_group_create(&extra[1], w, rows[1], 2, "row1"));
        CHECK_OK(hp_comm_group_create(&extra[2], w, cols[0], 2, "col0"));
        CHECK_OK(hp_comm_group_create(&extra[3], w, cols[1], 2, "col1"));
    }
    for (int k = 0; k < HC_GROUPS; k++) {
        char name[32];
        snprintf(name, sizeof name, "same%d", k);
        CHECK_OK(hp_comm_group_create(&same[k], w, all, n, name));
    }
    pthread_t th[64];
    hc_job jobs[64];
    for (int i = 0; i < count && i < 64; i++) {
        int rk = first + i;
        hc_job *j = &jobs[i];
        memset(j, 0, sizeof *j);
        j->w = w;
        j->rank = rk;
        j->world = hp_comm_world_group(w);
        memcpy(j->same, same, sizeof same);
        if (n == 2) { /* rank 0: world then reversed; rank 1: reversed then world */
            j->ga = j->world;
            j->gb = extra[0];
            j->a_first = rk == 0;
        } else if (n == 4) { /* (row + column) even: row first; odd: column first */
            int row = rk / 2, col = rk % 2;
            j->ga = extra[row];
            j->gb = extra[2 + col];
            j->a_first = (row + col) % 2 == 0;
        }
        pthread_create(&th[i], NULL, hc_rank_main, j);
    }
    for (int i = 0; i < count && i < 64; i++) pthread_join(th[i], NULL);
    for (int k = 0; k < HC_GROUPS; k++) hp_comm_group_destroy(same[k]);
    for (int k = 0; k < 4; k++) hp_comm_group_destroy(extra[k]);
    int f = hp_test_failures - fails_before;
    printf("comm concurrency: %-28s | %s8 started calls on one group waited in reverse (+1 synchronous), "
           "1 call on each of 10 groups | %ld buffers compared on this process, %d failure(s)\n",
           config,
           n == 4 ? "row + column groups in a cycle (start/start, start/run), "
                  : n == 2 ? "world + reversed world in a cycle (start/start, start/run), " : "",
           atomic_load(&hx_compared) - before, f);
    fflush(stdout);
    return f;
}

#endif
