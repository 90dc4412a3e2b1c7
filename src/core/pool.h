/* core/pool: the engine's one thread pool. Every parallel kernel runs through
 * it with an explicit thread count, so several ranks (threads of one process)
 * can each own a share of the cores and nothing spawns threads behind the
 * engine's back. The calling thread takes part as thread 0. */
#ifndef HP_CORE_POOL_H
#define HP_CORE_POOL_H

#include "core/status.h"

typedef struct hp_pool hp_pool;
/* One task: called once per thread with tid in [0, nthreads). */
typedef void (*hp_pool_fn)(void *ctx, int tid, int nthreads);

hp_status hp_pool_create(hp_pool **out, int nthreads);
void hp_pool_destroy(hp_pool *p);
int hp_pool_size(const hp_pool *p);
/* Runs fn on every thread of the pool and returns when all are done.
 * A NULL pool runs fn(ctx, 0, 1) on the caller. Not reentrant. */
void hp_pool_run(hp_pool *p, hp_pool_fn fn, void *ctx);

/* The [begin, end) share of n items for thread tid of nthreads, in blocks of
 * `align` items (the last share takes the remainder). */
void hp_pool_split(long *begin, long *end, long n, long align, int tid, int nthreads);

#endif
