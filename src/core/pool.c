#include "core/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Workers spin briefly on the generation counter (a kernel usually follows
 * another within microseconds) and then sleep on a condition variable, so an
 * idle pool costs no CPU when ranks share cores. */
#define SPIN_ITERS 20000

struct hp_pool {
    int n;
    long grain; /* hp_pool_set_grain */
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t wake, done_cv;
    atomic_ulong gen;
    atomic_int remaining;
    atomic_int stop;
    hp_pool_fn fn;
    void *ctx;
};

typedef struct {
    hp_pool *p;
    int tid;
} worker_arg;

static void *worker(void *arg_) {
    worker_arg *arg = arg_;
    hp_pool *p = arg->p;
    int tid = arg->tid;
    free(arg);
    unsigned long seen = 0;
    for (;;) {
        unsigned long g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen &&
               !atomic_load(&p->stop)) {
            if (++spins > SPIN_ITERS) {
                pthread_mutex_lock(&p->mu);
                while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop))
                    pthread_cond_wait(&p->wake, &p->mu);
                pthread_mutex_unlock(&p->mu);
                spins = 0;
            }
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = g;
        p->fn(p->ctx, tid, p->n);
        if (atomic_fetch_sub_explicit(&p->remaining, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done_cv);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

hp_status hp_pool_create(hp_pool **out, int nthreads) {
    *out = NULL;
    if (nthreads < 1) return hp_errorf("thread pool: thread count must be >= 1, got %d", nthreads);
    hp_pool *p = calloc(1, sizeof *p);
    if (!p) return hp_errorf("thread pool: out of memory");
    p->n = nthreads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    atomic_init(&p->gen, 0);
    atomic_init(&p->remaining, 0);
    atomic_init(&p->stop, 0);
    p->threads = calloc((size_t)nthreads, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return hp_errorf("thread pool: out of memory");
    }
    for (int i = 1; i < nthreads; i++) {
        worker_arg *a = malloc(sizeof *a);
        if (!a) {
            p->n = i;
            hp_pool_destroy(p);
            return hp_errorf("thread pool: out of memory");
        }
        a->p = p;
        a->tid = i;
        if (pthread_create(&p->threads[i], NULL, worker, a) != 0) {
            free(a);
            p->n = i;
            hp_pool_destroy(p);
            return hp_errorf("thread pool: cannot start thread %d of %d", i, nthreads);
        }
    }
    *out = p;
    return HP_OK;
}

void hp_pool_destroy(hp_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done_cv);
    free(p->threads);
    free(p);
}

int hp_pool_size(const hp_pool *p) { return p ? p->n : 1; }

void hp_pool_set_grain(hp_pool *p, long grain) {
    if (p) p->grain = grain > 0 ? grain : 0;
}

long hp_pool_grain(const hp_pool *p) { return p ? p->grain : 0; }

void hp_pool_run(hp_pool *p, hp_pool_fn fn, void *ctx) {
    if (!p || p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->remaining, p->n - 1, memory_order_relaxed);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    fn(ctx, 0, p->n);
    int spins = 0;
    while (atomic_load_explicit(&p->remaining, memory_order_acquire) != 0) {
        if (++spins > SPIN_ITERS) {
            pthread_mutex_lock(&p->mu);
            while (atomic_load(&p->remaining) != 0) pthread_cond_wait(&p->done_cv, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

void hp_pool_split(long *begin, long *end, long n, long align, int tid, int nthreads) {
    if (align < 1) align = 1;
    long blocks = (n + align - 1) / align;
    long per = blocks / nthreads, extra = blocks % nthreads;
    long b0 = tid * per + (tid < extra ? tid : extra);
    long nb = per + (tid < extra ? 1 : 0);
    long b = b0 * align, e = (b0 + nb) * align;
    if (b > n) b = n;
    if (e > n) e = n;
    *begin = b;
    *end = e;
}
