/* tests/comm/harness: the coverage grid of the comm tests. Every hosted rank
 * of a world runs on its own thread and calls every collective (all-gather
 * equal / in place / uneven, reduce-scatter sum / avg / in place / uneven,
 * all-reduce sum / avg / in place, broadcast, all-to-all equal and variable,
 * send/recv, barrier) at every size cell {0, 1, 7 elements, uneven shards,
 * 1 MiB, 64 MiB} in fp32 and bf16, and compares each output buffer with a
 * plain reference computed from deterministic per-member data. Integer-valued
 * data keep fp32 and bf16 sums exact, so outputs are compared bit for bit;
 * random data then check that reductions are bit-identical run to run and
 * close to a double-precision reference.
 *
 * Big buffers are allocated once per process (hx_pool) and reused by every
 * configuration, cell and dtype. HP_TEST_BIG=0 skips the 64 MiB cell (the
 * sanitizer pass sets it); every grid run prints one line that names the
 * configuration, collectives, sizes and dtypes it covered. */
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

static atomic_long hx_compared; /* output buffers compared with the reference */

/* Checks from every rank-thread count into testutil's atomic counter. */
#define EXPECT CHECKF
#define EXPECT_OK CHECK_OK

/* ---- deterministic data ---- */

static inline uint32_t hx_mix(uint32_t m, uint32_t i, uint32_t salt) {
    uint32_t x = i * 0x9E3779B1u ^ (m * 0x85EBCA77u + salt * 0xC2B2AE3Du + 0x27d4eb2fu);
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 13;
    x *= 0x297A2D39u;
    x ^= x >> 16;
    return x;
}
/* A small integer in [-8, 7] for (member, index, salt). */
static inline float hx_val(int m, int64_t i, int salt) {
    return (float)((int)(hx_mix((uint32_t)m, (uint32_t)i, (uint32_t)salt) >> 28) - 8);
}
/* A value in [-1, 1) with a full mantissa (sums depend on their order). */
static inline float hx_rnd(int m, int64_t i, int salt) {
    return (float)(int32_t)hx_mix((uint32_t)m, (uint32_t)i, (uint32_t)salt ^ 0x5bd1e995u) * 0x1p-31f;
}
static inline uint16_t hx_bf(float v) { return hp_f32_to_bf16(v); }
static inline float hx_round(hp_dtype dt, float v) { return dt == HP_F32 ? v : hp_bf16_to_f32(hp_f32_to_bf16(v)); }
static inline float hx_get(const void *buf, hp_dtype dt, int64_t i) {
    return dt == HP_F32 ? ((const float *)buf)[i] : hp_bf16_to_f32(((const uint16_t *)buf)[i]);
}
static inline void *hx_at(void *buf, hp_dtype dt, int64_t i) { return (char *)buf + i * (int64_t)hp_dtype_size(dt); }

/* buf[k] = value of member m at index i0 + k (random values when rnd). */
static void hx_fill(void *buf, hp_dtype dt, int64_t n, int m, int64_t i0, int salt, int rnd) {
    if (dt == HP_F32) {
        float *f = buf;
        if (rnd)
            for (int64_t k = 0; k < n; k++) f[k] = hx_rnd(m, i0 + k, salt);
        else
            for (int64_t k = 0; k < n; k++) f[k] = hx_val(m, i0 + k, salt);
    } else {
        uint16_t *h = buf;
        if (rnd)
            for (int64_t k = 0; k < n; k++) h[k] = hx_bf(hx_rnd(m, i0 + k, salt));
        else
            for (int64_t k = 0; k < n; k++) h[k] = hx_bf(hx_val(m, i0 + k, salt));
    }
}

/* What an output should hold: member m's values, or the sum over members
 * 0..nm-1 (divided by div when div != 0), at indices i0 + k. */
typedef struct {
    int m, nm, salt;
    float div;
} hx_want;

static hx_want hx_vals(int m, int salt) { return (hx_want){m, 0, salt, 0}; }
static hx_want hx_sums(int nm, int salt, float div) { return (hx_want){0, nm, salt, div}; }

enum { HX_BLK = 2048 };

static void hx_gen(float *w, const hx_want *s, int64_t i0, int64_t n) {
    if (!s->nm) {
        for (int64_t k = 0; k < n; k++) w[k] = hx_val(s->m, i0 + k, s->salt);
        return;
    }
    for (int64_t k = 0; k < n; k++) w[k] = 0;
    for (int m = 0; m < s->nm; m++)
        for (int64_t k = 0; k < n; k++) w[k] += hx_val(m, i0 + k, s->salt);
    if (s->div != 0)
        for (int64_t k = 0; k < n; k++) w[k] /= s->div;
}

/* Who is checking what, for messages. */
typedef struct {
    int rank;
    hp_dtype dt;
    const char *cell;
} hx_cx;

/* Compares buf[0..n) with the reference at indices i0..; reports the first mismatch. */
static void hx_expect(const hx_cx *x, const char *what, const void *buf, int64_t n, int64_t i0, hx_want s) {
    float w[HX_BLK];
    uint16_t wb[HX_BLK];
    size_t es = hp_dtype_size(x->dt);
    atomic_fetch_add(&hx_compared, 1);
    for (int64_t b = 0; b < n; b += HX_BLK) {
        int64_t nb = n - b < HX_BLK ? n - b : HX_BLK;
        hx_gen(w, &s, i0 + b, nb);
        const void *want = w;
        if (x->dt == HP_BF16) {
            for (int64_t k = 0; k < nb; k++) wb[k] = hx_bf(w[k]);
            want = wb;
        }
        if (!memcmp((const char *)buf + b * (int64_t)es, want, (size_t)nb * es)) continue;
        for (int64_t k = 0; k < nb; k++) {
            float got = hx_get(buf, x->dt, b + k), exp = hx_get(want, x->dt, k);
            if (got != exp) {
                EXPECT(got == exp, "%s, rank %d, cell %s, %s, %lld elements: [%lld] = %g, want %g", what, x->rank,
                       x->cell, hp_dtype_name(x->dt), (long long)n, (long long)(b + k), got, exp);
                return;
            }
        }
    }
}

/* A digest of a buffer (any change of any word changes it, in practice). */
static uint64_t hx_digest(const void *buf, size_t bytes) {
    const unsigned char *p = buf;
    uint64_t s1 = 0, s2 = 0;
    size_t nw = bytes / 8;
    for (size_t j = 0; j < nw; j++) {
        uint64_t v;
        memcpy(&v, p + 8 * j, 8);
        s1 += v;
        s2 += v * (2 * (uint64_t)j + 1);
    }
    for (size_t j = nw * 8; j < bytes; j++) s1 += (uint64_t)p[j] << (8 * (j % 8));
    return s1 ^ (s2 * 0x9E3779B97F4A7C15ull);
}

/* Random data: the output's digest is the same in two runs, and every
 * element is close to the double-precision sum (avg) of the rounded inputs. */
static void hx_random_ref(const hx_cx *x, const char *what, const void *buf, int64_t n, int64_t i0, int nm, int salt,
                          int avg) {
    double acc[HX_BLK], maxerr = 0, tol = x->dt == HP_F32 ? 1e-5 : 2e-2;
    int64_t worst = -1;
    for (int64_t b = 0; b < n; b += HX_BLK) {
        int64_t nb = n - b < HX_BLK ? n - b : HX_BLK;
        for (int64_t k = 0; k < nb; k++) acc[k] = 0;
        for (int m = 0; m < nm; m++)
            for (int64_t k = 0; k < nb; k++) acc[k] += hx_round(x->dt, hx_rnd(m, i0 + b + k, salt));
        for (int64_t k = 0; k < nb; k++) {
            double ref = avg ? acc[k] / nm : acc[k];
            double e = fabs(hx_get(buf, x->dt, b + k) - ref) / (1.0 + fabs(ref));
            if (!(e <= maxerr)) {
                maxerr = e;
                worst = b + k;
            }
        }
    }
    atomic_fetch_add(&hx_compared, 1);
    EXPECT(maxerr <= tol, "%s random, rank %d, cell %s, %s: max rel error %g > %g at [%lld]", what, x->rank, x->cell,
           hp_dtype_name(x->dt), maxerr, tol, (long long)worst);
}

/* ---- the size cells ---- */

enum { HX_CELL_0, HX_CELL_1, HX_CELL_7, HX_CELL_UNEVEN, HX_CELL_1MIB, HX_CELL_64MIB, HX_NCELLS };
static const char *const hx_cell_names[HX_NCELLS] = {"0", "1", "7", "uneven", "1MiB", "64MiB"};

/* 1 unless HP_TEST_BIG=0 (the sanitizer pass): whether the 64 MiB cell runs. */
static int hx_big_enabled(void) {
    const char *e = getenv("HP_TEST_BIG");
    return !(e && !strcmp(e, "0"));
}

/* Per cell, dtype and group size: shard elements c (all-gather, reduce-scatter,
 * all-to-all per pair), buffer elements N (all-reduce, broadcast, send/recv),
 * and the uneven pattern. */
typedef struct {
    int64_t c, N;
    int pattern; /* 0: counts c + m, every third member empty; 1: irregular counts */
} hx_size;

static hx_size hx_cell_size(int cell, hp_dtype dt, int n) {
    int64_t es = (int64_t)hp_dtype_size(dt);
    switch (cell) {
    case HX_CELL_0: return (hx_size){0, 0, 0};
    case HX_CELL_1: return (hx_size){1, 1, 0};
    case HX_CELL_7: return (hx_size){7, 7, 0};
    case HX_CELL_UNEVEN: return (hx_size){5, 1009, 1};
    case HX_CELL_1MIB: return (hx_size){((int64_t)1 << 20) / es / n, ((int64_t)1 << 20) / es, 0};
    default: return (hx_size){((int64_t)64 << 20) / es / n, ((int64_t)64 << 20) / es, 0};
    }
}

/* Bytes a rank's buffers need for cells up to `cells` with n members. */
static size_t hx_cap_bytes(int cells, int n) {
    size_t big = cells > HX_CELL_1MIB ? (size_t)64 << 20 : cells > HX_CELL_UNEVEN ? (size_t)1 << 20 : 0;
    return big + (size_t)(n * n + 1100 * (n + 1) + 4096) * 4 + 64; /* uneven tails; the fused test */
}

/* Every collective at one size cell and dtype, on the calling rank. */
static void hx_cell(hp_comm_rank *r, hp_comm_group *g, int cell, hp_dtype dt, void *A, void *B) {
    int n = hp_comm_group_size(g), me = hp_comm_group_index(g, hp_comm_rank_id(r));
    hx_size z = hx_cell_size(cell, dt, n);
    int64_t c = z.c, N = z.N;
    size_t es = hp_dtype_size(dt);
    hx_cx x = {hp_comm_rank_id(r), dt, hx_cell_names[cell]};
    int salt = 1000 * (cell + 1) + (dt == HP_BF16 ? 500 : 0);
    int64_t counts[64], offs[65];
    offs[0] = 0;
    for (int m = 0; m < n; m++) {
        counts[m] = z.pattern ? (m * 7 + 3) % 5 * 9 : (m % 3 == 1) ? 0 : c + m;
        offs[m + 1] = offs[m] + counts[m];
    }
    /* all-gather: equal, in place, uneven */
    hx_fill(A, dt, c, me, 0, salt + 1, 0);
    EXPECT_OK(hp_comm_all_gather(r, g, B, A, c, NULL, dt));
    for (int m = 0; m < n; m++) hx_expect(&x, "all_gather", hx_at(B, dt, m * c), c, 0, hx_vals(m, salt + 1));
    hx_fill(hx_at(B, dt, me * c), dt, c, me, 0, salt + 2, 0);
    EXPECT_OK(hp_comm_all_gather(r, g, B, hx_at(B, dt, me * c), c, NULL, dt));
    for (int m = 0; m < n; m++) hx_expect(&x, "all_gather in place", hx_at(B, dt, m * c), c, 0, hx_vals(m, salt + 2));
    hx_fill(A, dt, counts[me], me, 0, salt + 3, 0);
    EXPECT_OK(hp_comm_all_gather(r, g, B, A, 0, counts, dt));
    for (int m = 0; m < n; m++) hx_expect(&x, "all_gather uneven", hx_at(B, dt, offs[m]), counts[m], 0, hx_vals(m, salt + 3));
    /* reduce-scatter: sum, avg, in place (one input), uneven */
    hx_fill(A, dt, c * n, me, 0, salt + 4, 0);
    EXPECT_OK(hp_comm_reduce_scatter(r, g, B, A, c, NULL, dt, HP_COMM_SUM));
    hx_expect(&x, "reduce_scatter sum", B, c, me * c, hx_sums(n, salt + 4, 0));
    EXPECT_OK(hp_comm_reduce_scatter(r, g, B, A, c, NULL, dt, HP_COMM_AVG));
    hx_expect(&x, "reduce_scatter avg", B, c, me * c, hx_sums(n, salt + 4, (float)n));
    EXPECT_OK(hp_comm_reduce_scatter(r, g, hx_at(A, dt, me * c), A, c, NULL, dt, HP_COMM_SUM));
    hx_expect(&x, "reduce_scatter in place", hx_at(A, dt, me * c), c, me * c, hx_sums(n, salt + 4, 0));
    hx_fill(A, dt, offs[n], me, 0, salt + 5, 0);
    EXPECT_OK(hp_comm_reduce_scatter(r, g, B, A, 0, counts, dt, HP_COMM_SUM));
    hx_expect(&x, "reduce_scatter uneven", B, counts[me], offs[me], hx_sums(n, salt + 5, 0));
    /* all-reduce: sum, avg, in place (N is odd or uneven over n where the cell allows) */
    hx_fill(A, dt, N, me, 0, salt + 6, 0);
    EXPECT_OK(hp_comm_all_reduce(r, g, B, A, N, dt, HP_COMM_SUM));
    hx_expect(&x, "all_reduce sum", B, N, 0, hx_sums(n, salt + 6, 0));
    EXPECT_OK(hp_comm_all_reduce(r, g, B, A, N, dt, HP_COMM_AVG));
    hx_expect(&x, "all_reduce avg", B, N, 0, hx_sums(n, salt + 6, (float)n));
    EXPECT_OK(hp_comm_all_reduce(r, g, A, A, N, dt, HP_COMM_SUM));
    hx_expect(&x, "all_reduce in place", A, N, 0, hx_sums(n, salt + 6, 0));
    /* broadcast from the last member (and the first, below 64 MiB) */
    for (int root = n - 1, k = 0; k < (cell == HX_CELL_64MIB || n == 1 ? 1 : 2); root = 0, k++) {
        if (me == root) hx_fill(A, dt, N, root, 0, salt + 7 + k, 0);
        else memset(A, 0xff, (size_t)N * es); /* NaN in both dtypes */
        EXPECT_OK(hp_comm_broadcast(r, g, A, N, dt, root));
        hx_expect(&x, "broadcast", A, N, 0, hx_vals(root, salt + 7 + k));
    }
    /* all-to-all, equal: block j of member m's input goes to member j */
    hx_fill(A, dt, c * n, me, 0, salt + 9, 0);
    EXPECT_OK(hp_comm_all_to_all(r, g, B, A, c, NULL, NULL, dt));
    for (int m = 0; m < n; m++) hx_expect(&x, "all_to_all", hx_at(B, dt, m * c), c, me * c, hx_vals(m, salt + 9));
    /* all-to-all, variable counts (some empty) */
    int64_t sc[64], rc[64], roff[65], so = 0;
    roff[0] = 0;
    for (int k = 0; k < n; k++) {
        sc[k] = z.pattern ? (me * 5 + k * 3) % 4 * 7 : (me + k) % 3 * c / 2 + (k == 0);
        rc[k] = z.pattern ? (k * 5 + me * 3) % 4 * 7 : (k + me) % 3 * c / 2 + (me == 0);
        roff[k + 1] = roff[k] + rc[k];
    }
    for (int k = 0; k < n; k++) {
        hx_fill(hx_at(A, dt, so), dt, sc[k], me * 64 + k, 0, salt + 10, 0);
        so += sc[k];
    }
    EXPECT_OK(hp_comm_all_to_all(r, g, B, A, 0, sc, rc, dt));
    for (int k = 0; k < n; k++)
        hx_expect(&x, "all_to_all variable", hx_at(B, dt, roff[k]), rc[k], 0, hx_vals(k * 64 + me, salt + 10));
    /* send / recv around a ring (even members send first) */
    if (n > 1) {
        int to = (me + 1) % n, from = (me + n - 1) % n;
        hx_fill(A, dt, N, me, 0, salt + 11, 0);
        if (me % 2 == 0) {
            EXPECT_OK(hp_comm_send(r, g, A, N, dt, to));
            EXPECT_OK(hp_comm_recv(r, g, B, N, dt, from));
        } else {
            EXPECT_OK(hp_comm_recv(r, g, B, N, dt, from));
            EXPECT_OK(hp_comm_send(r, g, A, N, dt, to));
        }
        hx_expect(&x, "send/recv", B, N, 0, hx_vals(from, salt + 11));
    }
    EXPECT_OK(hp_comm_barrier(r, g));
    /* random data: reductions are bit-identical run to run and close to a double reference */
    hx_fill(A, dt, N, me, 0, salt + 12, 1);
    EXPECT_OK(hp_comm_all_reduce(r, g, B, A, N, dt, HP_COMM_SUM));
    uint64_t d1 = hx_digest(B, (size_t)N * es);
    hx_random_ref(&x, "all_reduce", B, N, 0, n, salt + 12, 0);
    memset(B, 0xff, (size_t)N * es);
    EXPECT_OK(hp_comm_all_reduce(r, g, B, A, N, dt, HP_COMM_SUM));
    EXPECT(hx_digest(B, (size_t)N * es) == d1, "all_reduce random, rank %d, cell %s, %s: run to run differs", x.rank,
           x.cell, hp_dtype_name(dt));
    hx_fill(A, dt, c * n, me, 0, salt + 13, 1);
    EXPECT_OK(hp_comm_reduce_scatter(r, g, B, A, c, NULL, dt, HP_COMM_AVG));
    d1 = hx_digest(B, (size_t)c * es);
    hx_random_ref(&x, "reduce_scatter avg", B, c, me * c, n, salt + 13, 1);
    memset(B, 0xff, (size_t)c * es);
    EXPECT_OK(hp_comm_reduce_scatter(r, g, B, A, c, NULL, dt, HP_COMM_AVG));
    EXPECT(hx_digest(B, (size_t)c * es) == d1, "reduce_scatter random, rank %d, cell %s, %s: run to run differs",
           x.rank, x.cell, hp_dtype_name(dt));
}

/* Fused multi-tensor calls (one fused all-reduce is bit-identical to separate
 * calls on random data) and asynchronous start/wait, overlapping. */
static void hx_fused(hp_comm_rank *r, hp_comm_group *g, hp_dtype dt, void *A, void *B, int salt) {
    int n = hp_comm_group_size(g), me = hp_comm_group_index(g, hp_comm_rank_id(r));
    hx_cx x = {hp_comm_rank_id(r), dt, "fused"};
    size_t es = hp_dtype_size(dt);
    enum { NT = 6 };
    const int64_t cnt[NT] = {3, 0, 1, 17, 64, 1000};
    hp_comm_tensor t[NT];
    int64_t pa = 0;
    for (int j = 0; j < NT; j++) { /* all-reduce: tensor j has cnt[j] * n + j elements */
        int64_t N = cnt[j] * n + j;
        t[j] = (hp_comm_tensor){hx_at(B, dt, pa), hx_at(A, dt, pa), N};
        hx_fill(hx_at(A, dt, pa), dt, N, me, 0, salt + j, 0);
        pa += N;
    }
    hp_comm_args a = {HP_COMM_ALL_REDUCE, dt, HP_COMM_SUM, 0, t, NT, NULL, NULL, NULL, 0, 0, NULL, NULL};
    EXPECT_OK(hp_comm_run(r, g, &a));
    for (int j = 0; j < NT; j++) hx_expect(&x, "fused all_reduce", t[j].recv, t[j].count, 0, hx_sums(n, salt + j, 0));
    /* random data: fused == separate, bit for bit (the sum order does not depend on fusion) */
    for (int j = 0; j < NT; j++) hx_fill((void *)t[j].send, dt, t[j].count, me, 0, salt + 40 + j, 1);
    a.op = HP_COMM_AVG;
    EXPECT_OK(hp_comm_run(r, g, &a));
    uint64_t fused = hx_digest(B, (size_t)pa * es);
    memset(B, 0xff, (size_t)pa * es);
    for (int j = 0; j < NT; j++)
        EXPECT_OK(hp_comm_all_reduce(r, g, t[j].recv, t[j].send, t[j].count, dt, HP_COMM_AVG));
    EXPECT(hx_digest(B, (size_t)pa * es) == fused, "fused all_reduce differs from separate calls (rank %d, %s)", x.rank,
           hp_dtype_name(dt));
    /* all-gather and reduce-scatter, fused, started asynchronously, overlapping */
    hp_comm_tensor ta[NT], tr[NT];
    int64_t qa = 0, qb = 0;
    for (int j = 0; j < NT; j++) {
        ta[j] = (hp_comm_tensor){hx_at(B, dt, qb), hx_at(A, dt, qa), cnt[j]};
        hx_fill(hx_at(A, dt, qa), dt, cnt[j], me, 0, salt + 20 + j, 0);
        qa += cnt[j];
        qb += cnt[j] * n;
    }
    for (int j = 0; j < NT; j++) {
        tr[j] = (hp_comm_tensor){hx_at(B, dt, qb), hx_at(A, dt, qa), cnt[j]};
        hx_fill(hx_at(A, dt, qa), dt, cnt[j] * n, me, 0, salt + 30 + j, 0);
        qa += cnt[j] * n;
        qb += cnt[j];
    }
    hp_comm_args ag = {HP_COMM_ALL_GATHER, dt, HP_COMM_SUM, 0, ta, NT, NULL, NULL, NULL, 0, 0, NULL, NULL};
    hp_comm_args rs = {HP_COMM_REDUCE_SCATTER, dt, HP_COMM_AVG, 0, tr, NT, NULL, NULL, NULL, 0, 0, NULL, NULL};
    hp_comm_req *q1 = NULL, *q2 = NULL;
    EXPECT_OK(hp_comm_start(&q1, r, g, &ag));
    EXPECT_OK(hp_comm_start(&q2, r, g, &rs));
    EXPECT_OK(hp_comm_wait(q1));
    EXPECT_OK(hp_comm_wait(q2));
    for (int j = 0; j < NT; j++) {
        for (int m = 0; m < n; m++)
            hx_expect(&x, "fused all_gather", hx_at(ta[j].recv, dt, m * cnt[j]), cnt[j], 0, hx_vals(m, salt + 20 + j));
        hx_expect(&x, "fused reduce_scatter avg", tr[j].recv, cnt[j], me * cnt[j], hx_sums(n, salt + 30 + j, (float)n));
    }
}

/* A large all-reduce (from 1 MiB on, two lone ranks run it as reduce-scatter
 * + all-gather) is bit-identical, on random data, to the same tensor fused
 * with a second one (one round), out of place and in place, sum and avg. */
static void hx_big_all_reduce(hp_comm_rank *r, hp_comm_group *g, hp_dtype dt, void *A, void *B, int salt) {
    int n = hp_comm_group_size(g), me = hp_comm_group_index(g, hp_comm_rank_id(r));
    hx_cx x = {hp_comm_rank_id(r), dt, "1MiB+"};
    size_t es = hp_dtype_size(dt);
    int64_t N = (int64_t)(((size_t)1 << 20) / es) + 1; /* odd: the two halves differ */
    for (int avg = 0; avg < 2; avg++) {
        hp_comm_redop op = avg ? HP_COMM_AVG : HP_COMM_SUM;
        hx_fill(A, dt, N + 1, me, 0, salt + avg, 1);
        hp_comm_tensor t[2] = {{B, A, N}, {hx_at(B, dt, N), hx_at(A, dt, N), 1}};
        hp_comm_args a = {HP_COMM_ALL_REDUCE, dt, op, 0, t, 2, NULL, NULL, NULL, 0, 0, NULL, NULL};
        EXPECT_OK(hp_comm_run(r, g, &a));
        uint64_t fused = hx_digest(B, (size_t)N * es);
        hx_random_ref(&x, avg ? "big all_reduce avg" : "big all_reduce", B, N, 0, n, salt + avg, avg);
        memset(B, 0xff, (size_t)N * es);
        EXPECT_OK(hp_comm_all_reduce(r, g, B, A, N, dt, op));
        EXPECT(hx_digest(B, (size_t)N * es) == fused, "big all_reduce differs from the fused call (rank %d, %s, %s)",
               x.rank, hp_dtype_name(dt), avg ? "avg" : "sum");
        memcpy(B, A, (size_t)N * es);
        EXPECT_OK(hp_comm_all_reduce(r, g, B, B, N, dt, op));
        EXPECT(hx_digest(B, (size_t)N * es) == fused, "big all_reduce in place differs (rank %d, %s, %s)", x.rank,
               hp_dtype_name(dt), avg ? "avg" : "sum");
    }
}

/* ---- running the grid on every hosted rank ---- */

/* Per-rank buffers, allocated once per process and reused everywhere. */
typedef struct {
    int n;
    size_t cap;
    void *A[64], *B[64];
} hx_pool;

static void hx_pool_init(hx_pool *p, int nranks, size_t cap) {
    memset(p, 0, sizeof *p);
    p->n = nranks;
    p->cap = cap;
    for (int i = 0; i < nranks; i++) {
        p->A[i] = aligned_alloc(64, (cap + 63) & ~(size_t)63);
        p->B[i] = aligned_alloc(64, (cap + 63) & ~(size_t)63);
        if (!p->A[i] || !p->B[i]) {
            fprintf(stderr, "harness: out of memory for %d x 2 x %zu bytes\n", nranks, cap);
            exit(1);
        }
    }
}

static void hx_pool_free(hx_pool *p) {
    for (int i = 0; i < p->n; i++) {
        free(p->A[i]);
        free(p->B[i]);
    }
}

typedef struct {
    hp_comm_world *w;
    hp_comm_group *g;
    int rank, cells, fused;
    void *A, *B;
} hx_job;

static void *hx_rank_main(void *arg) {
    hx_job *j = arg;
    hp_comm_rank *r = hp_comm_world_rank(j->w, j->rank);
    if (hp_comm_group_index(j->g, j->rank) < 0) return NULL;
    for (int cell = 0; cell < j->cells; cell++)
        for (int d = 0; d < 2; d++) hx_cell(r, j->g, cell, d ? HP_BF16 : HP_F32, j->A, j->B);
    if (j->fused)
        for (int d = 0; d < 2; d++) hx_fused(r, j->g, d ? HP_BF16 : HP_F32, j->A, j->B, 7 + 100 * d);
    if (j->fused && j->cells > HX_CELL_UNEVEN)
        for (int d = 0; d < 2; d++) hx_big_all_reduce(r, j->g, d ? HP_BF16 : HP_F32, j->A, j->B, 70 + 100 * d);
    return NULL;
}

/* Runs the grid (size cells [0, cells), both dtypes, every collective; fused
 * and asynchronous calls when fused) on every hosted member of g, prints the
 * line that says what it covered, and returns the number of failures (which
 * are already counted in hp_test_failures). */
static int hx_grid(hp_comm_world *w, hp_comm_group *g, hx_pool *p, int cells, int fused, const char *config) {
    int first, count;
    hp_comm_hosted_ranks(w, &first, &count);
    if (count > p->n) {
        fprintf(stderr, "harness: %d hosted ranks but a pool of %d\n", count, p->n);
        return 1;
    }
    if (hx_cap_bytes(cells, hp_comm_group_size(g)) > p->cap) {
        fprintf(stderr, "harness: pool buffers of %zu bytes are too small for %s\n", p->cap, config);
        return 1;
    }
    pthread_t th[64];
    hx_job jobs[64];
    long before = atomic_load(&hx_compared);
    int fails_before = hp_test_failures;
    for (int i = 0; i < count; i++) {
        jobs[i] = (hx_job){w, g, first + i, cells, fused, p->A[i], p->B[i]};
        pthread_create(&th[i], NULL, hx_rank_main, &jobs[i]);
    }
    for (int i = 0; i < count; i++) pthread_join(th[i], NULL);
    int f = hp_test_failures - fails_before;
    char sizes[96] = "";
    for (int c = 0; c < cells; c++)
        snprintf(sizes + strlen(sizes), sizeof sizes - strlen(sizes), "%s%s", c ? ", " : "", hx_cell_names[c]);
    int n = hp_comm_group_size(g);
    printf("comm grid: %-34s | %s%s | sizes {%s} | {f32, bf16} | %ld buffers compared on this process, %d failure(s)\n",
           config,
           "all_gather (equal, in place, uneven), reduce_scatter (sum, avg, in place, uneven), all_reduce (sum, avg, "
           "in place), broadcast, all_to_all (equal, variable), ",
           n > 1 ? "send/recv, barrier, random run-to-run" : "barrier, random run-to-run (send/recv: n/a, 1 rank)",
           sizes, atomic_load(&hx_compared) - before, f);
    fflush(stdout);
    return f;
}

/* Supernode-shared outputs: every rank of a supernode passes the same recv
 * buffer to all-gather (out of place, and in place: each shard already sits
 * at its place in the shared buffer, as FSDP's flat parameters do),
 * all-reduce and broadcast. */
typedef struct {
    hp_comm_world *w;
    int rank;
    void *shared; /* this rank's supernode's buffer */
    void *send;
    int64_t c;
} hx_sjob;

static void *hx_shared_main(void *arg) {
    hx_sjob *j = arg;
    hp_comm_rank *r = hp_comm_world_rank(j->w, j->rank);
    hp_comm_group *g = hp_comm_world_group(j->w);
    int n = hp_comm_group_size(g), me = j->rank;
    int64_t c = j->c;
    for (int d = 0; d < 2; d++) {
        hp_dtype dt = d ? HP_BF16 : HP_F32;
        hx_cx x = {me, dt, "shared"};
        void *sh = j->shared;
        for (int rep = 0; rep < 2; rep++) {
            int salt = 50 + 10 * rep + 100 * d;
            hx_fill(j->send, dt, c, me, 0, salt, 0);
            EXPECT_OK(hp_comm_all_gather(r, g, sh, j->send, c, NULL, dt));
            for (int m = 0; m < n; m++) hx_expect(&x, "all_gather shared", hx_at(sh, dt, m * c), c, 0, hx_vals(m, salt));
            EXPECT_OK(hp_comm_barrier(r, g)); /* everyone has checked before the buffer is reused */
            hx_fill(hx_at(sh, dt, me * c), dt, c, me, 0, salt + 1, 0);
            EXPECT_OK(hp_comm_all_gather(r, g, sh, hx_at(sh, dt, me * c), c, NULL, dt));
            for (int m = 0; m < n; m++)
                hx_expect(&x, "all_gather shared in place", hx_at(sh, dt, m * c), c, 0, hx_vals(m, salt + 1));
            EXPECT_OK(hp_comm_barrier(r, g));
            hx_fill(j->send, dt, c * n + 1, me, 0, salt + 2, 0);
            EXPECT_OK(hp_comm_all_reduce(r, g, sh, j->send, c * n + 1, dt, HP_COMM_SUM));
            hx_expect(&x, "all_reduce shared", sh, c * n + 1, 0, hx_sums(n, salt + 2, 0));
            EXPECT_OK(hp_comm_barrier(r, g));
            if (me == n - 1) hx_fill(sh, dt, c + 5, me, 0, salt + 3, 0);
            EXPECT_OK(hp_comm_broadcast(r, g, sh, c + 5, dt, n - 1));
            hx_expect(&x, "broadcast shared", sh, c + 5, 0, hx_vals(n - 1, salt + 3));
            EXPECT_OK(hp_comm_barrier(r, g));
        }
    }
    return NULL;
}

static int hx_run_shared(hp_comm_world *w, int64_t c, const char *config) {
    int first, count;
    hp_comm_hosted_ranks(w, &first, &count);
    int R = hp_comm_ranks_per_supernode(w), n = hp_comm_world_size(w), fails_before = hp_test_failures;
    void *bufs[64], *sends[64];
    pthread_t th[64];
    hx_sjob jobs[64];
    for (int i = 0; i < count; i += R) bufs[i / R] = malloc((size_t)(c * n + 8) * 4);
    for (int i = 0; i < count; i++) {
        sends[i] = malloc((size_t)(c * n + 8) * 4);
        jobs[i] = (hx_sjob){w, first + i, bufs[i / R], sends[i], c};
        pthread_create(&th[i], NULL, hx_shared_main, &jobs[i]);
    }
    for (int i = 0; i < count; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < count; i += R) free(bufs[i / R]);
    for (int i = 0; i < count; i++) free(sends[i]);
    int f = hp_test_failures - fails_before;
    printf("comm grid: %-34s | shared outputs: all_gather (out of place, in place), all_reduce, broadcast | "
           "%lld elements per shard | {f32, bf16} | %d failure(s)\n",
           config, (long long)c, f);
    return f;
}

#endif
