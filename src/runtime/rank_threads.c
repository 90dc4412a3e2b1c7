/* runtime/rank_threads: rank-threads a caller can stop waiting for (see the header). */
#include "runtime/rank_threads.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* The threads spin briefly before they sleep (a run usually follows another
 * within microseconds), as the compute pool's workers do. */
#define SPIN_ITERS 20000

struct hp_rank_threads {
    int n;
    pthread_t *threads;
    int *started; /* [n]: 1 where pthread_create succeeded */
    pthread_mutex_t mu;
    pthread_cond_t wake, done_cv; /* done_cv on the monotonic clock */
    atomic_ulong gen;             /* run number */
    atomic_int remaining;         /* threads of this run still running */
    atomic_llong err_ns;          /* when the first error of this run came back (0: none) */
    atomic_int stop;
    atomic_ulong *fin;            /* [n]: the last run each thread finished */
    hp_status *res;               /* [n]: its status */
    int abandoned;
    hp_rank_fn fn;
    void *ctx;
};

typedef struct {
    hp_rank_threads *rt;
    int i;
} thread_arg;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *thread_main(void *arg_) {
    thread_arg *arg = arg_;
    hp_rank_threads *rt = arg->rt;
    int i = arg->i;
    free(arg);
    unsigned long seen = 0;
    for (;;) {
        unsigned long g;
        int spins = 0;
        while ((g = atomic_load_explicit(&rt->gen, memory_order_acquire)) == seen && !atomic_load(&rt->stop)) {
            if (++spins > SPIN_ITERS) {
                pthread_mutex_lock(&rt->mu);
                while (atomic_load(&rt->gen) == seen && !atomic_load(&rt->stop)) pthread_cond_wait(&rt->wake, &rt->mu);
                pthread_mutex_unlock(&rt->mu);
                spins = 0;
            }
        }
        if (atomic_load(&rt->stop)) return NULL;
        seen = g;
        hp_status s = rt->fn(rt->ctx, i);
        rt->res[i] = s;
        atomic_store_explicit(&rt->fin[i], g, memory_order_release);
        if (s) {
            long long none = 0;
            atomic_compare_exchange_strong(&rt->err_ns, &none, (long long)now_ns());
        }
        int last = atomic_fetch_sub_explicit(&rt->remaining, 1, memory_order_acq_rel) == 1;
        if (last || s) {
            pthread_mutex_lock(&rt->mu);
            pthread_cond_broadcast(&rt->done_cv);
            pthread_mutex_unlock(&rt->mu);
        }
    }
}

hp_status hp_rank_threads_create(hp_rank_threads **out, int n) {
    *out = NULL;
    if (n < 1) return hp_errorf("rank threads: count must be >= 1, got %d", n);
    hp_rank_threads *rt = calloc(1, sizeof *rt);
    if (!rt) return hp_errorf("rank threads: out of memory");
    rt->n = n;
    pthread_mutex_init(&rt->mu, NULL);
    pthread_cond_init(&rt->wake, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&rt->done_cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&rt->gen, 0);
    atomic_init(&rt->remaining, 0);
    atomic_init(&rt->err_ns, 0);
    atomic_init(&rt->stop, 0);
    rt->threads = calloc((size_t)n, sizeof *rt->threads);
    rt->started = calloc((size_t)n, sizeof *rt->started);
    rt->fin = calloc((size_t)n, sizeof *rt->fin);
    rt->res = calloc((size_t)n, sizeof *rt->res);
    if (!rt->threads || !rt->started || !rt->fin || !rt->res) {
        hp_rank_threads_destroy(rt);
        return hp_errorf("rank threads: out of memory");
    }
    for (int i = 0; i < n; i++) atomic_init(&rt->fin[i], 0);
    for (int i = 0; i < n; i++) {
        thread_arg *a = malloc(sizeof *a);
        if (!a) {
            hp_rank_threads_destroy(rt);
            return hp_errorf("rank threads: out of memory");
        }
        a->rt = rt;
        a->i = i;
        if (pthread_create(&rt->threads[i], NULL, thread_main, a) != 0) {
            free(a);
            hp_rank_threads_destroy(rt);
            return hp_errorf("rank threads: cannot start thread %d of %d", i, n);
        }
        rt->started[i] = 1;
    }
    *out = rt;
    return HP_OK;
}

int hp_rank_threads_run(hp_rank_threads *rt, hp_status *st, hp_rank_fn fn, void *ctx, double grace_s) {
    for (int i = 0; i < rt->n; i++) st[i] = HP_OK;
    if (rt->abandoned) return rt->n;
    rt->fn = fn;
    rt->ctx = ctx;
    atomic_store(&rt->err_ns, 0);
    atomic_store_explicit(&rt->remaining, rt->n, memory_order_relaxed);
    pthread_mutex_lock(&rt->mu);
    unsigned long g = atomic_fetch_add_explicit(&rt->gen, 1, memory_order_release) + 1;
    pthread_cond_broadcast(&rt->wake);
    pthread_mutex_unlock(&rt->mu);

    /* the caller sleeps at once: spinning here would take a core from the ranks */
    int64_t grace_ns = (int64_t)(grace_s * 1e9);
    pthread_mutex_lock(&rt->mu);
    while (atomic_load(&rt->remaining) > 0) {
        int64_t e = (int64_t)atomic_load(&rt->err_ns);
        if (!e) {
            pthread_cond_wait(&rt->done_cv, &rt->mu);
            continue;
        }
        int64_t until = e + grace_ns;
        if (now_ns() >= until) break;
        struct timespec ts = {(time_t)(until / 1000000000LL), (long)(until % 1000000000LL)};
        pthread_cond_timedwait(&rt->done_cv, &rt->mu, &ts);
    }
    pthread_mutex_unlock(&rt->mu);
    int gone = 0;
    for (int i = 0; i < rt->n; i++) {
        if (atomic_load_explicit(&rt->fin[i], memory_order_acquire) == g)
            st[i] = rt->res[i];
        else
            gone++;
    }
    rt->abandoned = gone;
    return gone;
}

int hp_rank_threads_returned(const hp_rank_threads *rt, int i) {
    return atomic_load(&rt->fin[i]) == atomic_load(&rt->gen);
}

int hp_rank_threads_abandoned(const hp_rank_threads *rt) { return rt->abandoned; }

void hp_rank_threads_destroy(hp_rank_threads *rt) {
    if (!rt || rt->abandoned) return; /* an abandoned thread may still use rt and its caller's data */
    pthread_mutex_lock(&rt->mu);
    atomic_store(&rt->stop, 1);
    pthread_cond_broadcast(&rt->wake);
    pthread_mutex_unlock(&rt->mu);
    for (int i = 0; i < rt->n; i++)
        if (rt->started && rt->started[i]) pthread_join(rt->threads[i], NULL);
    pthread_mutex_destroy(&rt->mu);
    pthread_cond_destroy(&rt->wake);
    pthread_cond_destroy(&rt->done_cv);
    free(rt->threads);
    free(rt->started);
    free(rt->fin);
    free(rt->res);
    free(rt);
}
