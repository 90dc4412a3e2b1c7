/* tests/comm/harness: runs every collective on every hosted rank of a world
 * (one thread per rank) and compares with a plain reference computed from
 * deterministic per-member data. Integer-valued data keep fp32 and bf16 sums
 * exact, so results are compared bit for bit; random data check run-to-run
 * bit identity and closeness to a double-precision reference. */
#ifndef HP_TEST_COMM_HARNESS_H
#define HP_TEST_COMM_HARNESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "testutil.h"

static atomic_int hx_fails;

#define EXPECT(cond, ...)                                                          \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                          \
            fputc('\n', stderr);                                                   \
            atomic_fetch_add(&hx_fails, 1);                                        \
        }                                                                          \
    } while (0)

#define EXPECT_OK(expr)                                                            \
    do {                                                                           \
        hp_status s_ = (expr);                                                     \
        if (s_) {                                                                  \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,    \
                    hp_status_msg(s_));                                            \
            hp_status_free(s_);                                                    \
            atomic_fetch_add(&hx_fails, 1);                                        \
        }                                                                          \
    } while (0)

/* Deterministic small integer in [-8, 8] for (member, index, salt). */
static inline float hx_val(int m, int64_t i, int salt) {
    uint64_t x = (uint64_t)(m + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(i + 7) * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)(salt + 3) * 0x165667B19E3779F9ull;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return (float)((int)(x % 17) - 8);
}

static inline void hx_put(void *buf, hp_dtype dt, int64_t i, float v) {
    if (dt == HP_F32) ((float *)buf)[i] = v;
    else ((uint16_t *)buf)[i] = hp_f32_to_bf16(v);
}
static inline float hx_get(const void *buf, hp_dtype dt, int64_t i) {
    return dt == HP_F32 ? ((const float *)buf)[i] : hp_bf16_to_f32(((const uint16_t *)buf)[i]);
}
static inline float hx_round(hp_dtype dt, float v) { return dt == HP_F32 ? v : hp_bf16_to_f32(hp_f32_to_bf16(v)); }

typedef struct {
    hp_comm_world *w;
    hp_comm_group *g;
    int rank;
    int64_t big; /* largest element count tested (per shard / tensor) */
    int quick;   /* only the fast subset (big sizes) */
} hx_job;

/* Checks buf[i] == want(i) for i < n; reports the first mismatch. */
#define HX_CHECK_RANGE(what, buf, dt, n, want_expr)                                                 \
    do {                                                                                             \
        for (int64_t i_ = 0; i_ < (n); i_++) {                                                       \
            int64_t i = i_;                                                                          \
            float want_ = (want_expr), got_ = hx_get((buf), (dt), i_);                               \
            if (got_ != want_) {                                                                     \
                EXPECT(got_ == want_, "%s rank %d n=%lld dt=%s: [%lld] = %g, want %g", (what), me_rank, \
                       (long long)(n), hp_dtype_name(dt), (long long)i_, got_, want_);               \
                break;                                                                               \
            }                                                                                        \
        }                                                                                            \
    } while (0)

static float hx_sum(int n, int64_t i, int salt) {
    float s = 0;
    for (int m = 0; m < n; m++) s += hx_val(m, i, salt);
    return s;
}

static void hx_suite(hp_comm_rank *r, hp_comm_group *g, int64_t c, hp_dtype dt, void *A, void *B, int salt,
                     int subset) {
    int n = hp_comm_group_size(g), me = hp_comm_group_index(g, hp_comm_rank_id(r));
    int me_rank = hp_comm_rank_id(r);
    size_t es = hp_dtype_size(dt);
    (void)es;
    /* all-gather, equal shards */
    for (int64_t i = 0; i < c; i++) hx_put(A, dt, i, hx_val(me, i, salt));
    EXPECT_OK(hp_comm_all_gather(r, g, B, A, c, NULL, dt));
    HX_CHECK_RANGE("all_gather", B, dt, c * n, hx_val((int)(i / (c ? c : 1)), i % (c ? c : 1), salt));
    /* all-gather in place */
    memset(B, 0, (size_t)(c * n) * es);
    for (int64_t i = 0; i < c; i++) hx_put(B, dt, me * c + i, hx_val(me, i, salt + 1));
    EXPECT_OK(hp_comm_all_gather(r, g, B, (char *)B + (size_t)(me * c) * es, c, NULL, dt));
    HX_CHECK_RANGE("all_gather in place", B, dt, c * n, hx_val((int)(i / (c ? c : 1)), i % (c ? c : 1), salt + 1));
    /* all-gather, uneven shards (some empty) */
    int64_t counts[64], offs[65];
    offs[0] = 0;
    for (int m = 0; m < n; m++) {
        counts[m] = (m % 3 == 1) ? 0 : c + m;
        offs[m + 1] = offs[m] + counts[m];
    }
    for (int64_t i = 0; i < counts[me]; i++) hx_put(A, dt, i, hx_val(me, i, salt + 2));
    EXPECT_OK(hp_comm_all_gather(r, g, B, A, 0, counts, dt));
    for (int m = 0; m < n; m++)
        HX_CHECK_RANGE("all_gather uneven", (char *)B + (size_t)offs[m] * es, dt, counts[m], hx_val(m, i, salt + 2));
    /* reduce-scatter sum and avg, equal shards */
    for (int op = 0; op < 2; op++) {
        for (int64_t i = 0; i < c * n; i++) hx_put(A, dt, i, hx_val(me, i, salt + 3));
        EXPECT_OK(hp_comm_reduce_scatter(r, g, B, A, c, NULL, dt, (hp_comm_redop)op));
        HX_CHECK_RANGE(op ? "reduce_scatter avg" : "reduce_scatter sum", B, dt, c,
                       hx_round(dt, op ? hx_sum(n, me * c + i, salt + 3) / (float)n : hx_sum(n, me * c + i, salt + 3)));
    }
    if (subset) { /* large sizes: all-reduce in place, then stop */
        for (int64_t i = 0; i < c * n; i++) hx_put(A, dt, i, hx_val(me, i, salt + 7));
        EXPECT_OK(hp_comm_all_reduce(r, g, A, A, c * n, dt, HP_COMM_SUM));
        HX_CHECK_RANGE("all_reduce in place", A, dt, c * n, hx_round(dt, hx_sum(n, i, salt + 7)));
        return;
    }
    /* reduce-scatter in place */
    for (int64_t i = 0; i < c * n; i++) hx_put(A, dt, i, hx_val(me, i, salt + 4));
    EXPECT_OK(hp_comm_reduce_scatter(r, g, (char *)A + (size_t)(me * c) * es, A, c, NULL, dt, HP_COMM_SUM));
    HX_CHECK_RANGE("reduce_scatter in place", (char *)A + (size_t)(me * c) * es, dt, c,
                   hx_round(dt, hx_sum(n, me * c + i, salt + 4)));
    /* reduce-scatter uneven */
    for (int64_t i = 0; i < offs[n]; i++) hx_put(A, dt, i, hx_val(me, i, salt + 5));
    EXPECT_OK(hp_comm_reduce_scatter(r, g, B, A, 0, counts, dt, HP_COMM_SUM));
    HX_CHECK_RANGE("reduce_scatter uneven", B, dt, counts[me], hx_round(dt, hx_sum(n, offs[me] + i, salt + 5)));
    /* all-reduce sum / avg, out of place and in place, an odd count */
    int64_t N = c * n + (c ? 3 : 0);
    for (int op = 0; op < 2; op++) {
        for (int64_t i = 0; i < N; i++) hx_put(A, dt, i, hx_val(me, i, salt + 6));
        EXPECT_OK(hp_comm_all_reduce(r, g, B, A, N, dt, (hp_comm_redop)op));
        HX_CHECK_RANGE(op ? "all_reduce avg" : "all_reduce sum", B, dt, N,
                       hx_round(dt, op ? hx_sum(n, i, salt + 6) / (float)n : hx_sum(n, i, salt + 6)));
    }
    for (int64_t i = 0; i < N; i++) hx_put(A, dt, i, hx_val(me, i, salt + 7));
    EXPECT_OK(hp_comm_all_reduce(r, g, A, A, N, dt, HP_COMM_SUM));
    HX_CHECK_RANGE("all_reduce in place", A, dt, N, hx_round(dt, hx_sum(n, i, salt + 7)));
    /* broadcast from the last and the first member */
    for (int root = n - 1; root >= 0; root -= (n > 1 ? n - 1 : 1)) {
        for (int64_t i = 0; i < N; i++) hx_put(A, dt, i, me == root ? hx_val(root, i, salt + 8) : 99.0f);
        EXPECT_OK(hp_comm_broadcast(r, g, A, N, dt, root));
        HX_CHECK_RANGE("broadcast", A, dt, N, hx_val(root, i, salt + 8));
        if (root == 0) break;
    }
    /* all-to-all, equal: block j of my send goes to member j */
    for (int64_t i = 0; i < c * n; i++) hx_put(A, dt, i, hx_val(me, i, salt + 9));
    EXPECT_OK(hp_comm_all_to_all(r, g, B, A, c, NULL, NULL, dt));
    HX_CHECK_RANGE("all_to_all", B, dt, c * n, hx_val((int)(i / (c ? c : 1)), me * c + i % (c ? c : 1), salt + 9));
    /* all-to-all, variable: member j sends (j + k) % 3 * c / 2 + (k == 0) elements to member k */
    int64_t sc[64], rc[64], roff[65];
    int64_t so = 0;
    roff[0] = 0;
    for (int k = 0; k < n; k++) {
        sc[k] = (me + k) % 3 * c / 2 + (k == 0);
        rc[k] = (k + me) % 3 * c / 2 + (me == 0);
        roff[k + 1] = roff[k] + rc[k];
    }
    for (int k = 0; k < n; k++) {
        for (int64_t i = 0; i < sc[k]; i++) hx_put(A, dt, so + i, hx_val(me * 64 + k, i, salt + 10));
        so += sc[k];
    }
    EXPECT_OK(hp_comm_all_to_all(r, g, B, A, 0, sc, rc, dt));
    for (int k = 0; k < n; k++)
        HX_CHECK_RANGE("all_to_all variable", (char *)B + (size_t)roff[k] * es, dt, rc[k], hx_val(k * 64 + me, i, salt + 10));
    /* send / recv around a ring (even members send first) */
    if (n > 1) {
        int to = (me + 1) % n, from = (me + n - 1) % n;
        for (int64_t i = 0; i < c; i++) hx_put(A, dt, i, hx_val(me, i, salt + 11));
        if (me % 2 == 0) {
            EXPECT_OK(hp_comm_send(r, g, A, c, dt, to));
            EXPECT_OK(hp_comm_recv(r, g, B, c, dt, from));
        } else {
            EXPECT_OK(hp_comm_recv(r, g, B, c, dt, from));
            EXPECT_OK(hp_comm_send(r, g, A, c, dt, to));
        }
        HX_CHECK_RANGE("send/recv", B, dt, c, hx_val(from, i, salt + 11));
    }
    EXPECT_OK(hp_comm_barrier(r, g));
}

/* Fused multi-tensor calls and asynchronous start/wait. */
static void hx_fused(hp_comm_rank *r, hp_comm_group *g, hp_dtype dt, void *A, void *B, int salt) {
    int n = hp_comm_group_size(g), me = hp_comm_group_index(g, hp_comm_rank_id(r));
    int me_rank = hp_comm_rank_id(r);
    size_t es = hp_dtype_size(dt);
    enum { NT = 5 };
    int64_t cnt[NT] = {3, 0, 1, 17, 64};
    hp_comm_tensor t[NT];
    int64_t pos_a = 0, pos_b = 0;
    /* all-reduce: tensor j has cnt[j] * n + j elements */
    for (int j = 0; j < NT; j++) {
        int64_t N = cnt[j] * n + j;
        t[j].send = (char *)A + (size_t)pos_a * es;
        t[j].recv = (char *)B + (size_t)pos_b * es;
        t[j].count = N;
        for (int64_t i = 0; i < N; i++) hx_put((void *)t[j].send, dt, i, hx_val(me, i, salt + j));
        pos_a += N;
        pos_b += N;
    }
    hp_comm_args a = {HP_COMM_ALL_REDUCE, dt, HP_COMM_SUM, 0, t, NT, NULL, NULL};
    EXPECT_OK(hp_comm_run(r, g, &a));
    for (int j = 0; j < NT; j++)
        HX_CHECK_RANGE("fused all_reduce", t[j].recv, dt, t[j].count, hx_round(dt, hx_sum(n, i, salt + j)));
    /* all-gather and reduce-scatter, fused, started asynchronously, overlapping */
    hp_comm_tensor ta[NT], tr[NT];
    int64_t pa = 0, pb = 0;
    for (int j = 0; j < NT; j++) {
        ta[j].send = (char *)A + (size_t)pa * es;
        pa += cnt[j];
        ta[j].recv = (char *)B + (size_t)pb * es;
        pb += cnt[j] * n;
        ta[j].count = cnt[j];
        for (int64_t i = 0; i < cnt[j]; i++) hx_put((void *)ta[j].send, dt, i, hx_val(me, i, salt + 20 + j));
    }
    for (int j = 0; j < NT; j++) {
        tr[j].send = (char *)A + (size_t)pa * es;
        pa += cnt[j] * n;
        tr[j].recv = (char *)B + (size_t)pb * es;
        pb += cnt[j];
        tr[j].count = cnt[j];
        for (int64_t i = 0; i < cnt[j] * n; i++) hx_put((void *)tr[j].send, dt, i, hx_val(me, i, salt + 30 + j));
    }
    hp_comm_args ag = {HP_COMM_ALL_GATHER, dt, HP_COMM_SUM, 0, ta, NT, NULL, NULL};
    hp_comm_args rs = {HP_COMM_REDUCE_SCATTER, dt, HP_COMM_AVG, 0, tr, NT, NULL, NULL};
    hp_comm_req *q1 = NULL, *q2 = NULL;
    EXPECT_OK(hp_comm_start(&q1, r, g, &ag));
    EXPECT_OK(hp_comm_start(&q2, r, g, &rs));
    EXPECT_OK(hp_comm_wait(q1));
    EXPECT_OK(hp_comm_wait(q2));
    for (int j = 0; j < NT; j++) {
        int64_t cj = cnt[j] ? cnt[j] : 1;
        HX_CHECK_RANGE("fused all_gather", ta[j].recv, dt, cnt[j] * n, hx_val((int)(i / cj), i % cj, salt + 20 + j));
        HX_CHECK_RANGE("fused reduce_scatter avg", tr[j].recv, dt, cnt[j],
                       hx_round(dt, hx_sum(n, me * cnt[j] + i, salt + 30 + j) / (float)n));
    }
}

/* Random data: two identical runs are bit-identical, and close to a double reference. */
static void hx_random(hp_comm_rank *r, hp_comm_group *g, hp_dtype dt, int64_t N, void *A, void *B, void *C) {
    int n = hp_comm_group_size(g), me = hp_comm_group_index(g, hp_comm_rank_id(r));
    size_t es = hp_dtype_size(dt);
    hp_test_rng rng = {0x1234u + (unsigned)me};
    for (int64_t i = 0; i < N; i++) hx_put(A, dt, i, (float)hp_test_normal(&rng));
    EXPECT_OK(hp_comm_all_reduce(r, g, B, A, N, dt, HP_COMM_SUM));
    EXPECT_OK(hp_comm_all_reduce(r, g, C, A, N, dt, HP_COMM_SUM));
    EXPECT(memcmp(B, C, (size_t)N * es) == 0, "all_reduce run to run differs (rank %d)", hp_comm_rank_id(r));
    /* reference: regenerate every member's data */
    double maxerr = 0, tol = dt == HP_F32 ? 1e-5 : 2e-2;
    double *ref = calloc((size_t)N, sizeof(double));
    for (int m = 0; m < n; m++) {
        hp_test_rng q = {0x1234u + (unsigned)m};
        for (int64_t i = 0; i < N; i++) ref[i] += hx_round(dt, (float)hp_test_normal(&q));
    }
    for (int64_t i = 0; i < N; i++) {
        double e = fabs(hx_get(B, dt, i) - ref[i]) / (1.0 + fabs(ref[i]));
        if (e > maxerr) maxerr = e;
    }
    EXPECT(maxerr <= tol, "all_reduce random: max rel error %g > %g (rank %d)", maxerr, tol, hp_comm_rank_id(r));
    free(ref);
    int64_t c = N / n;
    EXPECT_OK(hp_comm_reduce_scatter(r, g, B, A, c, NULL, dt, HP_COMM_AVG));
    EXPECT_OK(hp_comm_reduce_scatter(r, g, C, A, c, NULL, dt, HP_COMM_AVG));
    EXPECT(memcmp(B, C, (size_t)c * es) == 0, "reduce_scatter run to run differs (rank %d)", hp_comm_rank_id(r));
}

static void *hx_rank_main(void *arg) {
    hx_job *j = arg;
    hp_comm_rank *r = hp_comm_world_rank(j->w, j->rank);
    hp_comm_group *g = j->g;
    if (hp_comm_group_index(g, j->rank) < 0) return NULL;
    int n = hp_comm_group_size(g);
    int64_t cap = j->big * n + 3 * n + 4096;
    if (cap < 3 * 1024 * n) cap = 3 * 1024 * n;
    void *A = malloc((size_t)cap * 4), *B = malloc((size_t)cap * 4), *C = malloc((size_t)cap * 4);
    if (!A || !B || !C) {
        EXPECT(0, "out of memory");
        return NULL;
    }
    const int64_t small[] = {0, 1, 7};
    for (int d = 0; d < 2; d++) {
        hp_dtype dt = d ? HP_BF16 : HP_F32;
        if (!j->quick) {
            for (int s = 0; s < 3; s++) hx_suite(r, g, small[s], dt, A, B, 100 * s + d, 0);
            hx_fused(r, g, dt, A, B, 7 + d);
            hx_random(r, g, dt, 1000 + 3, A, B, C);
        }
        hx_suite(r, g, j->big, dt, A, B, 900 + d, j->big > (1 << 20));
    }
    free(A);
    free(B);
    free(C);
    return NULL;
}

/* Runs the checks on every hosted rank of w for group g; returns failures. */
static int hx_run(hp_comm_world *w, hp_comm_group *g, int64_t big, int quick) {
    int first, count;
    hp_comm_hosted_ranks(w, &first, &count);
    pthread_t th[64];
    hx_job jobs[64];
    for (int i = 0; i < count; i++) {
        jobs[i] = (hx_job){w, g, first + i, big, quick};
        pthread_create(&th[i], NULL, hx_rank_main, &jobs[i]);
    }
    for (int i = 0; i < count; i++) pthread_join(th[i], NULL);
    return atomic_exchange(&hx_fails, 0);
}

/* Supernode-shared outputs: every rank of a supernode passes the same recv
 * buffer to all-gather and all-reduce. */
typedef struct {
    hp_comm_world *w;
    int rank;
    float *shared; /* this rank's supernode's buffer */
    int64_t c;
} hx_sjob;

static void *hx_shared_main(void *arg) {
    hx_sjob *j = arg;
    hp_comm_rank *r = hp_comm_world_rank(j->w, j->rank);
    hp_comm_group *g = hp_comm_world_group(j->w);
    int n = hp_comm_group_size(g), me = j->rank, me_rank = j->rank;
    int64_t c = j->c;
    float *send = malloc((size_t)(c * n + 1) * 4);
    for (int rep = 0; rep < 3; rep++) {
        for (int64_t i = 0; i < c; i++) send[i] = hx_val(me, i, 50 + rep);
        EXPECT_OK(hp_comm_all_gather(r, g, j->shared, send, c, NULL, HP_F32));
        HX_CHECK_RANGE("all_gather shared", j->shared, HP_F32, c * n, hx_val((int)(i / c), i % c, 50 + rep));
        EXPECT_OK(hp_comm_barrier(r, g)); /* everyone has checked before the buffer is reused */
        for (int64_t i = 0; i < c * n + 1; i++) send[i] = hx_val(me, i, 60 + rep);
        EXPECT_OK(hp_comm_all_reduce(r, g, j->shared, send, c * n + 1, HP_F32, HP_COMM_SUM));
        HX_CHECK_RANGE("all_reduce shared", j->shared, HP_F32, c * n + 1, hx_sum(n, i, 60 + rep));
        EXPECT_OK(hp_comm_barrier(r, g));
    }
    free(send);
    return NULL;
}

static int hx_run_shared(hp_comm_world *w, int64_t c) {
    int first, count;
    hp_comm_hosted_ranks(w, &first, &count);
    int R = hp_comm_ranks_per_supernode(w), n = hp_comm_world_size(w);
    float *bufs[64];
    pthread_t th[64];
    hx_sjob jobs[64];
    for (int i = 0; i < count; i += R) bufs[i / R] = malloc((size_t)(c * n + 1) * 4);
    for (int i = 0; i < count; i++) {
        jobs[i] = (hx_sjob){w, first + i, bufs[i / R], c};
        pthread_create(&th[i], NULL, hx_shared_main, &jobs[i]);
    }
    for (int i = 0; i < count; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < count; i += R) free(bufs[i / R]);
    return atomic_exchange(&hx_fails, 0);
}

#endif
