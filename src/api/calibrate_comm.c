/* api/calibrate_comm: the collective half of `hyperpar calibrate` — every
 * kind (all_reduce, all_gather, reduce_scatter, all_to_all, send/recv) timed
 * in a group of 2 ranks at each buffer size, on the intra tier (2
 * rank-threads of one supernode) and the inter tier (2 emulated supernodes of
 * 1 rank over the link emulator, comm/comm's hp_comm_opts supernodes = 2 and
 * inter_bw_gbps / inter_latency_us), each rank on its own thread as a
 * trainer's ranks are: per run two warm-up calls, a barrier, `iters` calls,
 * a barrier; the time per call is rank 0's; the median of `repeats` runs. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/calibrate.h"
#include "comm/comm.h"
#include "core/timing.h"

typedef struct {
    hp_comm_world *w;
    int rank;
    hp_prof_kind kind;
    int64_t bytes; /* N: the call's whole buffer */
    int iters;
    float *a, *b;  /* the rank's buffers, N bytes each */
    double sec;
    hp_status st;
} cc_job;

/* One call of j's kind: N the whole buffer (all_reduce's, all_gather's
 * output, reduce_scatter's input, all_to_all's send buffer, send's message). */
static hp_status cc_call(cc_job *j, hp_comm_rank *r, hp_comm_group *g) {
    int64_t total = j->bytes / 4, half = total / 2;
    switch (j->kind) {
    case HP_PROF_ALL_REDUCE: return hp_comm_all_reduce(r, g, j->b, j->a, total, HP_F32, HP_COMM_SUM);
    case HP_PROF_ALL_GATHER: return hp_comm_all_gather(r, g, j->b, j->a, half, NULL, HP_F32);
    case HP_PROF_REDUCE_SCATTER: return hp_comm_reduce_scatter(r, g, j->b, j->a, half, NULL, HP_F32, HP_COMM_SUM);
    case HP_PROF_ALL_TO_ALL: return hp_comm_all_to_all(r, g, j->b, j->a, half, NULL, NULL, HP_F32);
    case HP_PROF_SEND:
        return j->rank == 0 ? hp_comm_send(r, g, j->a, total, HP_F32, 1) : hp_comm_recv(r, g, j->b, total, HP_F32, 0);
    case HP_PROF_NKINDS: break;
    }
    return hp_errorf("calibrate: unknown collective kind %d", (int)j->kind);
}

static void *cc_rank(void *arg) {
    cc_job *j = arg;
    hp_comm_rank *r = hp_comm_world_rank(j->w, j->rank);
    hp_comm_group *g = hp_comm_world_group(j->w);
    hp_status st = HP_OK;
    for (int it = 0; it < 2 && !st; it++) st = cc_call(j, r, g);
    if (!st) st = hp_comm_barrier(r, g);
    double t0 = hp_now();
    for (int it = 0; it < j->iters && !st; it++) st = cc_call(j, r, g);
    if (!st) st = hp_comm_barrier(r, g);
    j->sec = (hp_now() - t0) / j->iters;
    j->st = st;
    return NULL;
}

/* Seconds per call of kind at bytes on w's 2 ranks, one run. */
static hp_status cc_run(double *sec, hp_comm_world *w, hp_prof_kind kind, int64_t bytes, int iters, float *bufs[4]) {
    cc_job jobs[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        jobs[i] = (cc_job){w, i, kind, bytes, iters, bufs[2 * i], bufs[2 * i + 1], 0, HP_OK};
        if (pthread_create(&th[i], NULL, cc_rank, &jobs[i])) {
            if (i == 1) { /* rank 0 waits in its warm-up for a peer that never comes: end it by the timeout */
                pthread_join(th[0], NULL);
                hp_status_free(jobs[0].st);
            }
            return hp_errorf("calibrate: cannot start a rank thread");
        }
    }
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    *sec = jobs[0].sec;
    hp_status st = jobs[0].st;
    if (st) hp_status_free(jobs[1].st);
    else st = jobs[1].st;
    return st;
}

/* Calls per run: enough that small buffers are not all clock and overhead. */
static int cc_iters(int64_t bytes, int quick) {
    if (bytes <= 64 << 10) return quick ? 20 : 50;
    if (bytes <= 1 << 20) return quick ? 5 : 10;
    return quick ? 2 : 4;
}

static hp_status cc_tier(hp_calib_data *d, hp_prof_tier tier, const int64_t *sizes, int nsizes, float *bufs[4]) {
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.mpi = 0;
    o.timeout_s = 60;
    o.ranks_per_supernode = tier == HP_PROF_INTRA ? 2 : 1;
    o.supernodes = tier == HP_PROF_INTRA ? 1 : 2;
    if (tier == HP_PROF_INTER) o.inter_bw_gbps = d->inter_bw_gbps, o.inter_latency_us = d->inter_latency_us;
    hp_comm_world *w;
    HP_TRY(hp_comm_world_create(&w, &o));
    int reps = d->quick ? 3 : 5;
    hp_status st = HP_OK;
    for (int k = 0; k < HP_PROF_NKINDS && !st; k++) {
        hp_calib_coll *c = &d->coll[tier][k];
        c->n = 0, c->ranks = 2;
        for (int i = 0; i < nsizes && !st; i++) {
            double v[16];
            for (int r = 0; r < reps && !st; r++)
                st = cc_run(&v[r], w, (hp_prof_kind)k, sizes[i], cc_iters(sizes[i], d->quick), bufs);
            if (st) break;
            c->bytes[c->n] = (double)sizes[i];
            c->seconds[c->n++] = hp_median(v, reps);
        }
        if (st)
            st = hp_error_wrap(st, "calibrate: %s %s", hp_profile_tier_name(tier),
                               hp_profile_kind_name((hp_prof_kind)k));
    }
    if (st) hp_comm_world_end_if_failed(w);
    hp_comm_world_destroy(w);
    return st;
}

hp_status hp_api_calib_sizes_check(const int64_t *sizes, int nsizes) {
    if (nsizes < 2 || nsizes > HP_CALIB_MAX_SIZES)
        return hp_errorf("calibrate: %d collective sizes given (2..%d for a fit)", nsizes, HP_CALIB_MAX_SIZES);
    for (int i = 0; i < nsizes; i++) {
        if (sizes[i] < 8 || sizes[i] % 8 || sizes[i] > ((int64_t)1 << 32))
            return hp_errorf("calibrate: collective size %lld bytes: must be a multiple of 8 in 8..4 GiB (2 ranks "
                             "x fp32)",
                             (long long)sizes[i]);
        for (int k = 0; k < i; k++)
            if (sizes[k] == sizes[i]) return hp_errorf("calibrate: collective size %lld given twice", (long long)sizes[i]);
    }
    return HP_OK;
}

hp_status hp_api_calib_comm(hp_calib_data *d, const int64_t *sizes, int nsizes) {
    HP_TRY(hp_api_calib_sizes_check(sizes, nsizes));
    int64_t big = 0;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > big) big = sizes[i];
    float *bufs[4] = {0};
    hp_status st = HP_OK;
    for (int i = 0; i < 4 && !st; i++) {
        bufs[i] = malloc((size_t)big);
        if (!bufs[i]) st = hp_errorf("calibrate: out of memory for 4 buffers of %lld bytes", (long long)big);
        else
            for (int64_t e = 0; e < big / 4; e++) bufs[i][e] = 1.0f;
    }
    for (int t = 0; t < HP_PROF_NTIERS && !st; t++) st = cc_tier(d, (hp_prof_tier)t, sizes, nsizes, bufs);
    for (int i = 0; i < 4; i++) free(bufs[i]);
    return st;
}
