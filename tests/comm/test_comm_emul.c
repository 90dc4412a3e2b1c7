/* Two tiers in one process: 2 emulated supernodes x 1 and x 2 ranks run the
 * whole grid of harness.h (64 MiB included unless HP_TEST_BIG=0), 3 x 2 every
 * cell below 64 MiB; a reordered group, a group with unequal members per
 * supernode, shared outputs and a throttled link give the same values, and
 * so do several calls in flight per rank (concur.h: 2 x 1 and 2 x 2, where
 * the rows are the supernodes and the columns cross them). The
 * link emulator's byte counts match the two-tier formula (2 (S-1)/S * N / R
 * per rank for an all-reduce of N bytes) and its delays are at least the
 * model's. */
#include "comm/sync.h"
#include "concur.h"

static hp_comm_world *make(int S, int R, double bw, double lat) {
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.ranks_per_supernode = R;
    o.supernodes = S;
    o.mpi = 0;
    o.timeout_s = 60;
    o.inter_bw_gbps = bw;
    o.inter_latency_us = lat;
    hp_comm_world *w = NULL;
    CHECK_OK(hp_comm_world_create(&w, &o));
    return w;
}

typedef struct {
    hp_comm_world *w;
    int rank;
    int64_t n;
    int64_t bytes, msgs;
} stat_job;

static void *allreduce_stats(void *arg) {
    stat_job *j = arg;
    hp_comm_rank *r = hp_comm_world_rank(j->w, j->rank);
    float *buf = calloc((size_t)j->n, 4);
    hp_comm_rank_reset_stats(r);
    hp_status st = hp_comm_all_reduce(r, hp_comm_world_group(j->w), buf, buf, j->n, HP_F32, HP_COMM_SUM);
    if (st) {
        fprintf(stderr, "all_reduce: %s\n", hp_status_msg(st));
        hp_status_free(st);
        j->bytes = -1;
    } else {
        hp_comm_rank_stats(r, &j->bytes, &j->msgs);
    }
    free(buf);
    return NULL;
}

/* Inter-supernode bytes each rank sends in one all-reduce of n floats. */
static void check_bytes(int S, int R, int64_t n, double lat_us) {
    hp_comm_world *w = make(S, R, 0, lat_us);
    if (!w) return;
    int size = S * R;
    pthread_t th[16];
    stat_job jobs[16];
    if (size > 16) return;
    int64_t t0 = hp_comm_now_ns();
    for (int i = 0; i < size; i++) {
        jobs[i] = (stat_job){w, i, n, 0, 0};
        pthread_create(&th[i], NULL, allreduce_stats, &jobs[i]);
    }
    for (int i = 0; i < size; i++) pthread_join(th[i], NULL);
    int64_t el = hp_comm_now_ns() - t0;
    int64_t want = 2 * (int64_t)(S - 1) * (n * 4) / ((int64_t)S * R);
    for (int i = 0; i < size; i++) {
        CHECK(jobs[i].bytes == want);
        if (jobs[i].bytes != want)
            fprintf(stderr, "S=%d R=%d rank %d sent %lld inter bytes, want %lld\n", S, R, i, (long long)jobs[i].bytes,
                    (long long)want);
    }
    /* message rounds (one between 2 supernodes, reduce-scatter + all-gather
     * beyond), each delayed by at least the emulated latency */
    if (lat_us > 0) CHECK(el >= (int64_t)((S == 2 ? 1 : 2) * lat_us * 1e3));
    hp_comm_world_destroy(w);
}

int main(void) {
    int cells = hx_big_enabled() ? HX_NCELLS : HX_CELL_64MIB;
    hx_pool pool;
    hx_pool_init(&pool, 6, hx_cap_bytes(cells, 6));
    const int cfg[][3] = {{2, 1, HX_NCELLS}, {2, 2, HX_NCELLS}, {3, 2, HX_CELL_64MIB}};
    for (int k = 0; k < 3; k++) {
        int S = cfg[k][0], R = cfg[k][1], n = S * R;
        hp_comm_world *w = make(S, R, 0, 0);
        if (!w) continue;
        CHECK(hp_comm_world_size(w) == n && hp_comm_supernodes(w) == S);
        CHECK(hp_comm_supernode_of(w, n - 1) == S - 1 && hp_comm_local_index_of(w, n - 1) == R - 1);
        char name[80];
        snprintf(name, sizeof name, "emulated %d x %d, world", S, R);
        int c = cfg[k][2] < cells ? cfg[k][2] : cells;
        hx_grid(w, hp_comm_world_group(w), &pool, c, 1, name);
        snprintf(name, sizeof name, "emulated %d x %d", S, R);
        hx_run_shared(w, 999, name);
        hx_concurrency(w, name);
        if (R == 2) {
            int rev[6];
            for (int i = 0; i < n; i++) rev[i] = n - 1 - i;
            hp_comm_group *g;
            CHECK_OK(hp_comm_group_create(&g, w, rev, n, "reversed"));
            snprintf(name, sizeof name, "emulated %d x %d, reversed", S, R);
            hx_grid(w, g, &pool, HX_CELL_1MIB, 0, name);
            hp_comm_group_destroy(g);
            int uneq[3] = {0, 1, 2}; /* two members in supernode 0, one in supernode 1 */
            CHECK_OK(hp_comm_group_create(&g, w, uneq, 3, "unequal"));
            snprintf(name, sizeof name, "emulated %d x %d, group {0,1,2}", S, R);
            hx_grid(w, g, &pool, HX_CELL_1MIB, 1, name);
            hp_comm_group_destroy(g);
            if (S == 3) { /* three supernodes with 2, 1 and 1 members, out of order */
                int u3[4] = {4, 0, 2, 1};
                CHECK_OK(hp_comm_group_create(&g, w, u3, 4, "unequal3"));
                hx_grid(w, g, &pool, HX_CELL_1MIB, 1, "emulated 3 x 2, group {4,0,2,1}");
                hp_comm_group_destroy(g);
            }
        }
        hp_comm_world_destroy(w);
    }
    if (cells < HX_NCELLS) printf("comm grid: 64MiB cell skipped (HP_TEST_BIG=0)\n");
    check_bytes(2, 1, 1 << 14, 0);
    check_bytes(2, 2, 1 << 14, 0);
    check_bytes(2, 4, 1 << 14, 2000);
    check_bytes(3, 2, 3 << 12, 0);
    check_bytes(3, 1, 3 << 12, 3000);
    /* throttled link still gives the right values */
    hp_comm_world *w = make(2, 2, 1.0, 20);
    if (w) {
        hx_grid(w, hp_comm_world_group(w), &pool, HX_CELL_1MIB, 0, "emulated 2 x 2 at 1 GB/s, 20 us");
        hp_comm_world_destroy(w);
    }
    hx_pool_free(&pool);
    return hp_test_finish("test_comm_emul");
}
