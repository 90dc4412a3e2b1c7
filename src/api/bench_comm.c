/* api/bench_comm: the timing behind `hyperpar bench comm` — a collective
 * (comm/comm) on every hosted rank's own thread, Open MPI's own collectives
 * on MPI_COMM_WORLD, memcpy, and pinning threads to CPUs. */
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "core/timing.h"

struct hp_bench_comm {
    int repeat;
    int bind;
    cpu_set_t cpus; /* the CPUs the process may use, read before any pinning */
    int64_t tier_bytes[2], tier_msgs[2]; /* the last run's per call, first hosted rank (hp_bench_comm_tiers) */
};

static const hp_comm_kind kinds[4] = {HP_COMM_REDUCE_SCATTER, HP_COMM_ALL_GATHER, HP_COMM_ALL_REDUCE, HP_COMM_ALL_TO_ALL};

/* Pins the calling thread to the (idx mod n)-th of the n CPUs in allowed
 * (NULL: no pinning). */
static void bc_pin(const cpu_set_t *allowed, int idx) {
    if (!allowed) return;
    int n = CPU_COUNT(allowed);
    if (n < 1) return;
    for (int c = 0, k = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, allowed)) continue;
        if (k++ != idx % n) continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(c, &one);
        pthread_setaffinity_np(pthread_self(), sizeof one, &one);
        return;
    }
}

/* ---- hyperpar: every hosted rank on its own thread ---- */

typedef struct {
    hp_comm_world *w;
    int rank;
    hp_comm_kind kind;
    int64_t bytes; /* nccl-tests size: all-reduce buffer, reduce-scatter input, all-gather output */
    int iters, fused;
    int inplace;   /* all-gather: the shard already sits at its place in the output */
    float *shared; /* all-gather / all-reduce output shared by the supernode, or NULL */
    const cpu_set_t *cpus; /* pin the rank's thread to one of these (--bind cores), or NULL */
    double sec;
    int64_t inter_bytes;
    int64_t tier_bytes[2], tier_msgs[2]; /* per call: [0] intra, [1] inter */
    hp_status st;
} bc_job;

static void *bc_rank(void *arg) {
    bc_job *j = arg;
    bc_pin(j->cpus, j->rank);
    hp_comm_rank *r = hp_comm_world_rank(j->w, j->rank);
    hp_comm_group *g = hp_comm_world_group(j->w);
    int n = hp_comm_world_size(j->w);
    int64_t total = j->bytes / 4, shard = total / n;
    float *a = malloc((size_t)j->bytes + 64), *b = j->shared ? j->shared : malloc((size_t)j->bytes + 64);
    if (!a || !b) {
        j->st = hp_errorf("bench comm: out of memory for %lld bytes", (long long)j->bytes);
        free(a);
        if (!j->shared) free(b);
        return NULL;
    }
    for (int64_t i = 0; i < total; i++) a[i] = 1.0f;
    if (!j->shared)
        for (int64_t i = 0; i < total; i++) b[i] = 1.0f;
    else /* each rank writes only its own part of the shared buffer */
        for (int64_t i = (int64_t)j->rank * shard; i < (int64_t)(j->rank + 1) * shard; i++) b[i] = 1.0f;
    hp_comm_tensor ts[100];
    hp_comm_args args = {.kind = j->kind, .dtype = HP_F32, .op = HP_COMM_SUM, .t = ts, .nt = 1};
    if (j->fused) { /* 100 tensors of 4 KiB */
        int64_t per = j->kind == HP_COMM_ALL_REDUCE ? 1024 : 1024 / n; /* 4 KiB tensors */
        for (int i = 0; i < 100; i++) ts[i] = (hp_comm_tensor){b + 1024 * i, a + 1024 * i, per};
        args.nt = 100;
    } else if (j->kind == HP_COMM_ALL_REDUCE) {
        ts[0] = (hp_comm_tensor){b, a, total};
    } else if (j->kind == HP_COMM_REDUCE_SCATTER || j->kind == HP_COMM_ALL_TO_ALL) {
        ts[0] = (hp_comm_tensor){b, a, shard}; /* all-to-all: shard elements to each member */
    } else {
        ts[0] = (hp_comm_tensor){b, j->inplace ? b + (int64_t)j->rank * shard : a, shard};
    }
    hp_status st = HP_OK;
    for (int it = 0; it < 2 && !st; it++) st = hp_comm_run(r, g, &args);
    if (!st) st = hp_comm_barrier(r, g);
    hp_comm_rank_reset_stats(hp_comm_world_rank(j->w, j->rank));
    double t0 = hp_now();
    for (int it = 0; it < j->iters && !st; it++) {
        if (j->fused < 0) { /* 100 separate calls */
            hp_comm_args one = args;
            one.nt = 1;
            for (int i = 0; i < 100 && !st; i++) {
                one.t = &ts[i];
                st = hp_comm_run(r, g, &one);
            }
        } else {
            st = hp_comm_run(r, g, &args);
        }
    }
    /* the calls' traffic, before the closing barrier's (empty) messages */
    hp_comm_rank_tier_stats(r, j->tier_bytes, j->tier_msgs);
    for (int t = 0; t < 2; t++) j->tier_bytes[t] /= j->iters, j->tier_msgs[t] /= j->iters;
    j->inter_bytes = j->tier_bytes[1];
    if (!st) st = hp_comm_barrier(r, g);
    j->sec = (hp_now() - t0) / j->iters;
    j->st = st;
    free(a);
    if (!j->shared) free(b);
    return NULL;
}

/* Seconds per call on the first hosted rank; the first error of any rank. */
static hp_status bc_hyperpar1(double *sec, int64_t *inter_bytes, hp_bench_comm *b, hp_comm_world *w,
                              const hp_bench_comm_case *cs, const cpu_set_t *cpus) {
    int first, count;
    hp_comm_hosted_ranks(w, &first, &count);
    float *sh = cs->shared ? malloc((size_t)cs->bytes + 64) : NULL;
    bc_job *jobs = calloc((size_t)count, sizeof *jobs);
    pthread_t *th = calloc((size_t)count, sizeof *th);
    if (!jobs || !th || (cs->shared && !sh)) {
        free(jobs), free(th), free(sh);
        return hp_errorf("bench comm: out of memory for %lld bytes", (long long)cs->bytes);
    }
    for (int i = 0; i < count; i++) {
        jobs[i] = (bc_job){w, first + i, kinds[cs->coll], cs->bytes, cs->iters, cs->fused, cs->inplace, sh, cpus, 0, 0,
                           {0, 0}, {0, 0}, HP_OK};
        pthread_create(&th[i], NULL, bc_rank, &jobs[i]);
    }
    for (int i = 0; i < count; i++) pthread_join(th[i], NULL);
    *sec = jobs[0].sec;
    if (inter_bytes) *inter_bytes = jobs[0].inter_bytes;
    memcpy(b->tier_bytes, jobs[0].tier_bytes, sizeof b->tier_bytes);
    memcpy(b->tier_msgs, jobs[0].tier_msgs, sizeof b->tier_msgs);
    hp_status st = HP_OK;
    for (int i = 0; i < count; i++) {
        if (!st) st = jobs[i].st;
        else hp_status_free(jobs[i].st);
    }
    free(jobs);
    free(th);
    free(sh);
    return st;
}

hp_status hp_bench_comm_create(hp_bench_comm **out, int repeat, int bind, int index) {
    *out = NULL;
    if (repeat < 1 || repeat > 64) return hp_errorf("hp_bench_comm_create: repeat must be in 1..64, got %d", repeat);
    hp_bench_comm *b = calloc(1, sizeof *b);
    if (!b) return hp_errorf("hp_bench_comm_create: out of memory");
    b->repeat = repeat;
    b->bind = bind && sched_getaffinity(0, sizeof b->cpus, &b->cpus) == 0;
    bc_pin(b->bind ? &b->cpus : NULL, index);
    *out = b;
    return HP_OK;
}

void hp_bench_comm_free(hp_bench_comm *b) { free(b); }

void hp_bench_comm_tiers(const hp_bench_comm *b, int64_t bytes[2], int64_t msgs[2]) {
    memcpy(bytes, b->tier_bytes, sizeof b->tier_bytes);
    memcpy(msgs, b->tier_msgs, sizeof b->tier_msgs);
}

static const cpu_set_t *bc_cpus(const hp_bench_comm *b) { return b->bind ? &b->cpus : NULL; }

hp_status hp_bench_comm_run(double *sec, int64_t *inter_bytes, double *runs, hp_bench_comm *b, hp_world *w,
                            const hp_bench_comm_case *c) {
    *sec = -1;
    if (c->coll < HP_BENCH_REDUCE_SCATTER || c->coll > HP_BENCH_ALL_TO_ALL)
        return hp_errorf("hp_bench_comm_run: unknown collective %d", (int)c->coll);
    if (c->bytes < 4 || c->iters < 1) return hp_errorf("hp_bench_comm_run: bytes must be >= 4 and iters >= 1");
    if ((c->fused || c->shared) && c->coll == HP_BENCH_ALL_TO_ALL)
        return hp_errorf("hp_bench_comm_run: an all-to-all is one call on private buffers (not fused, not shared)");
    if (c->fused && c->bytes != 100 * 4096)
        return hp_errorf("hp_bench_comm_run: a fused case is 100 tensors of 4 KiB: bytes must be 409600, got %lld",
                         (long long)c->bytes);
    double v[64];
    for (int k = 0; k < b->repeat; k++) {
        HP_TRY(bc_hyperpar1(&v[k], inter_bytes, b, w->w, c, bc_cpus(b)));
        if (runs) runs[k] = v[k];
    }
    *sec = hp_median(v, b->repeat);
    return HP_OK;
}

/* ---- Open MPI's own collectives on MPI_COMM_WORLD ---- */

/* One Open MPI call on `total` elements at a and b (shard per process; the all-to-all as MPI_Alltoallv, the
 * per-pair counts and offsets every user of variable counts passes). */
static void bc_mpi_call(hp_comm_kind kind, float *a, float *b, int64_t total, int64_t shard, int inplace) {
    if (kind == HP_COMM_ALL_TO_ALL) {
        int n, cnt[256], off[256];
        MPI_Comm_size(MPI_COMM_WORLD, &n);
        for (int q = 0; q < n && q < 256; q++) cnt[q] = (int)shard, off[q] = (int)(shard * q);
        MPI_Alltoallv(a, cnt, off, MPI_FLOAT, b, cnt, off, MPI_FLOAT, MPI_COMM_WORLD);
    } else if (kind == HP_COMM_ALL_REDUCE) MPI_Allreduce(a, b, (int)total, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else if (kind == HP_COMM_REDUCE_SCATTER) MPI_Reduce_scatter_block(a, b, (int)shard, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else if (inplace) MPI_Allgather(MPI_IN_PLACE, 0, MPI_FLOAT, b, (int)shard, MPI_FLOAT, MPI_COMM_WORLD);
    else MPI_Allgather(a, (int)shard, MPI_FLOAT, b, (int)shard, MPI_FLOAT, MPI_COMM_WORLD);
}

/* Seconds per call (sep100: per 100 separate calls on 4 KiB tensors). */
static double bc_mpi1(hp_comm_kind kind, int64_t bytes, int iters, int inplace, int sep100) {
    int n, me;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    int64_t total = bytes / 4, shard = total / n;
    float *a = malloc((size_t)bytes + 64), *b = malloc((size_t)bytes + 64);
    for (int64_t i = 0; i < total; i++) a[i] = b[i] = 1.0f;
    double t0 = 0;
    for (int it = -2; it < iters; it++) {
        if (it == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = hp_now();
        }
        if (!sep100) {
            bc_mpi_call(kind, a, b, total, shard, inplace);
            continue;
        }
        int64_t t4 = 1024, s4 = kind == HP_COMM_ALL_REDUCE ? t4 : t4 / n; /* as hyperpar's 4 KiB tensors */
        for (int i = 0; i < 100; i++) bc_mpi_call(kind, a + 1024 * i, b + 1024 * i, t4, s4, 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double sec = (hp_now() - t0) / iters;
    free(a);
    free(b);
    return sec;
}

double hp_bench_comm_mpi(hp_bench_comm *b, hp_bench_coll coll, int64_t bytes, int iters, int inplace, int sep100) {
    double v[64];
    for (int k = 0; k < b->repeat; k++) v[k] = bc_mpi1(kinds[coll], bytes, iters, inplace, sep100);
    return hp_median(v, b->repeat);
}

/* Other processes wait here without spinning while process 0 measures alone. */
void hp_bench_comm_idle_wait(void) {
    MPI_Request q;
    MPI_Ibarrier(MPI_COMM_WORLD, &q);
    int done = 0;
    while (!done) {
        MPI_Test(&q, &done, MPI_STATUS_IGNORE);
        if (!done) {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
    }
}

static double bc_memcpy1(int64_t bytes, int iters) {
    char *a = malloc((size_t)bytes), *b = malloc((size_t)bytes);
    memset(a, 1, (size_t)bytes);
    memset(b, 2, (size_t)bytes);
    memcpy(b, a, (size_t)bytes);
    double t0 = hp_now();
    for (int i = 0; i < iters; i++) {
        memcpy(b, a, (size_t)bytes);
        a[i % bytes] ^= b[(i * 7) % bytes]; /* keeps the copies */
    }
    double sec = (hp_now() - t0) / iters;
    free(a);
    free(b);
    return sec;
}

double hp_bench_comm_memcpy(hp_bench_comm *b, int64_t bytes, int iters) {
    double v[64];
    for (int k = 0; k < b->repeat; k++) v[k] = bc_memcpy1(bytes, iters);
    return hp_median(v, b->repeat);
}
