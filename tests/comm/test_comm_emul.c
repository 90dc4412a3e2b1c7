/* Two tiers in one process: 2 emulated supernodes x 1 and x 2 ranks, and
 * 3 x 2, run every collective against the plain reference (world group, a
 * reordered group, and a group with unequal members per supernode). The link
 * emulator's byte counts match the two-tier formula (2 (S-1)/S * N / R per
 * rank for an all-reduce of N bytes) and its delays are at least the model's. */
#include "comm/sync.h"
#include "harness.h"

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
    /* two message rounds, each delayed by at least the latency */
    if (lat_us > 0) CHECK(el >= (int64_t)(2 * lat_us * 1e3));
    hp_comm_world_destroy(w);
}

int main(void) {
    const int cfg[][2] = {{2, 1}, {2, 2}, {3, 2}};
    for (int k = 0; k < 3; k++) {
        int S = cfg[k][0], R = cfg[k][1];
        hp_comm_world *w = make(S, R, 0, 0);
        if (!w) continue;
        CHECK(hp_comm_world_size(w) == S * R && hp_comm_supernodes(w) == S);
        CHECK(hp_comm_supernode_of(w, S * R - 1) == S - 1 && hp_comm_local_index_of(w, S * R - 1) == R - 1);
        int f = hx_run(w, hp_comm_world_group(w), (1 << 20) / 4 / (S * R), k == 2);
        if (f) fprintf(stderr, "S=%d R=%d world: %d failures\n", S, R, f);
        hp_test_failures += f;
        f = hx_run_shared(w, 999);
        if (f) fprintf(stderr, "S=%d R=%d shared output: %d failures\n", S, R, f);
        hp_test_failures += f;
        if (R == 2) {
            int rev[6], n = S * R;
            for (int i = 0; i < n; i++) rev[i] = n - 1 - i;
            hp_comm_group *g;
            CHECK_OK(hp_comm_group_create(&g, w, rev, n, "reversed"));
            hp_test_failures += hx_run(w, g, 999, 1);
            hp_comm_group_destroy(g);
            int uneq[3] = {0, 1, 2}; /* two members in supernode 0, one in supernode 1 */
            CHECK_OK(hp_comm_group_create(&g, w, uneq, 3, "unequal"));
            f = hx_run(w, g, 1001, 0);
            if (f) fprintf(stderr, "S=%d R=%d unequal group: %d failures\n", S, R, f);
            hp_test_failures += f;
            hp_comm_group_destroy(g);
        }
        hp_comm_world_destroy(w);
    }
    /* 64 MiB with 2 emulated supernodes x 1 rank */
    hp_comm_world *w = make(2, 1, 0, 0);
    if (w) {
        hp_test_failures += hx_run(w, hp_comm_world_group(w), (64 << 20) / 4 / 2, 1);
        hp_comm_world_destroy(w);
    }
    check_bytes(2, 1, 1 << 14, 0);
    check_bytes(2, 2, 1 << 14, 0);
    check_bytes(2, 4, 1 << 14, 2000);
    /* throttled link still gives the right values */
    w = make(2, 2, 1.0, 20);
    if (w) {
        hp_test_failures += hx_run(w, hp_comm_world_group(w), 333, 1);
        hp_comm_world_destroy(w);
    }
    return hp_test_finish("test_comm_emul");
}
