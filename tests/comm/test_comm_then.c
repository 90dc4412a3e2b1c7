/* hp_comm_start_then (the fused two-step reduction FSDP's HSDP uses) on 2
 * emulated supernodes x 2 rank-threads: a reduce-scatter inside each
 * supernode, then (chained on that group's lane) an all-reduce of the shard
 * across the supernodes. After hp_comm_wait_first the reduce-scatter's
 * shard is final and its input may be overwritten (the test scribbles over
 * it) while the all-reduce goes on; after hp_comm_wait the shard holds the
 * sum over all four ranks, exactly (small integers). A plain request passes
 * hp_comm_wait_first when done, and a failed first call (a member that is
 * not in the group) fails the request without running the second. Several
 * chained requests in flight complete in start order with the right sums.
 * hp_comm_rank_wait_ns counts a blocking call whole. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "testutil.h"

#define N 4096 /* elements per shard */
#define K 3    /* chained requests in flight per rank */

typedef struct {
    hp_comm_world *w;
    hp_comm_group *local, *across; /* this rank's supernode group, its replicas' group */
    hp_comm_group *other;          /* a group without this rank */
    int rank;
} job;

static float val(int rank, int k, int64_t i) { return (float)((rank + 1) * (k + 1) + (i % 13)); }

static void *rank_main(void *arg) {
    job *j = arg;
    hp_comm_rank *r = hp_comm_world_rank(j->w, j->rank);
    int me = j->rank % 2; /* place in the supernode's group */
    float *in[K], *shard[K];
    hp_comm_tensor t1[K], t2[K];
    hp_comm_args a1[K], a2[K];
    hp_comm_req *q[K];
    for (int k = 0; k < K; k++) {
        in[k] = malloc(sizeof(float) * 2 * N);
        shard[k] = malloc(sizeof(float) * N);
        for (int64_t i = 0; i < 2 * N; i++) in[k][i] = val(j->rank, k, i);
        t1[k] = (hp_comm_tensor){shard[k], in[k], N};
        t2[k] = (hp_comm_tensor){shard[k], shard[k], N};
        a1[k] = (hp_comm_args){.kind = HP_COMM_REDUCE_SCATTER, .dtype = HP_F32, .op = HP_COMM_SUM, .t = &t1[k], .nt = 1};
        a2[k] = (hp_comm_args){.kind = HP_COMM_ALL_REDUCE, .dtype = HP_F32, .op = HP_COMM_SUM, .t = &t2[k], .nt = 1};
        CHECK_OK(hp_comm_start_then(&q[k], r, j->local, &a1[k], j->across, &a2[k]));
    }
    for (int k = 0; k < K; k++) {
        hp_comm_wait_first(q[k]);
        /* the reduce-scatter is done: the supernode's sum is in the shard (unless the all-reduce already ran) */
        memset(in[k], 0xff, sizeof(float) * 2 * N); /* the input is free again */
    }
    for (int k = 0; k < K; k++) {
        CHECK_OK(hp_comm_wait(q[k]));
        long bad = 0;
        for (int64_t i = 0; i < N; i++) {
            float want = 0;
            for (int rk = 0; rk < 4; rk++) want += val(rk, k, me * N + i);
            bad += shard[k][i] != want;
        }
        CHECK(bad == 0);
        free(in[k]), free(shard[k]);
    }
    /* the rank's blocked time: a blocking all-reduce across the emulated link counts whole, and lasts at
     * least one half-buffer message on it (the link model completes none earlier: 128 KiB at 0.5 GB/s) */
    enum { M = 1 << 16 };
    float *big = calloc(M, sizeof(float));
    hp_comm_tensor tb = {big, big, M};
    hp_comm_args ab = {.kind = HP_COMM_ALL_REDUCE, .dtype = HP_F32, .op = HP_COMM_SUM, .t = &tb, .nt = 1};
    hp_comm_rank_reset_stats(r);
    CHECK(hp_comm_rank_wait_ns(r) == 0);
    CHECK_OK(hp_comm_run(r, j->across, &ab));
    CHECK(hp_comm_rank_wait_ns(r) >= (int64_t)(M / 2 * 4 / 0.5));
    free(big);
    /* a plain request: wait_first returns once it is done */
    float x = (float)j->rank, y = 0;
    hp_comm_tensor tx = {&y, &x, 1};
    hp_comm_args ax = {.kind = HP_COMM_ALL_REDUCE, .dtype = HP_F32, .op = HP_COMM_SUM, .t = &tx, .nt = 1};
    hp_comm_req *p = NULL;
    CHECK_OK(hp_comm_start(&p, r, j->across, &ax));
    hp_comm_wait_first(p);
    CHECK(y == (float)(j->rank % 2 + j->rank % 2 + 2));
    CHECK_OK(hp_comm_wait(p));
    hp_comm_wait_first(NULL);
    /* the first call fails (not a member): the request fails, the second never runs */
    float z = -1;
    hp_comm_tensor tz = {&z, &x, 1};
    hp_comm_args az = {.kind = HP_COMM_ALL_REDUCE, .dtype = HP_F32, .op = HP_COMM_SUM, .t = &tz, .nt = 1};
    CHECK_OK(hp_comm_start_then(&p, r, j->other, &az, j->across, &ax));
    hp_comm_wait_first(p);
    hp_status st = hp_comm_wait(p);
    CHECK(st != HP_OK && z == -1.0f);
    hp_status_free(st);
    return NULL;
}

int main(void) {
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.ranks_per_supernode = 2, o.supernodes = 2, o.mpi = 0, o.timeout_s = 60;
    o.inter_bw_gbps = 0.5, o.inter_latency_us = 20; /* the all-reduce across is the slow step */
    hp_comm_world *w = NULL;
    CHECK_OK(hp_comm_world_create(&w, &o));
    if (!w) return hp_test_finish("test_comm_then");
    hp_comm_group *sn[2], *rep[2];
    for (int s = 0; s < 2; s++) {
        int a[2] = {2 * s, 2 * s + 1}, b[2] = {s, s + 2};
        CHECK_OK(hp_comm_group_create(&sn[s], w, a, 2, s ? "sn1" : "sn0"));
        CHECK_OK(hp_comm_group_create(&rep[s], w, b, 2, s ? "rep1" : "rep0"));
    }
    job jobs[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (job){w, sn[i / 2], rep[i % 2], sn[1 - i / 2], i};
        pthread_create(&th[i], NULL, rank_main, &jobs[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    for (int s = 0; s < 2; s++) hp_comm_group_destroy(sn[s]), hp_comm_group_destroy(rep[s]);
    hp_comm_world_destroy(w);
    return hp_test_finish("test_comm_then");
}
