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
/* The grain of kernels whose rounding could follow the shape of their
 * per-thread calls (GEMMs through BLAS, kernels/matmul): 0 (the default)
 * lets them cut the work into one block per thread; g > 0 has them cut it
 * into fixed blocks of g rows (or columns), one call each, dealt to the
 * threads, so every result is the same bits whatever the thread count (the
 * deterministic mode; more, smaller calls). A NULL pool's grain is 0. */
void hp_pool_set_grain(hp_pool *p, long grain);
long hp_pool_grain(const hp_pool *p);
/* Runs fn on every thread of the pool and returns when all are done.
 * A NULL pool runs fn(ctx, 0, 1) on the caller. Not reentrant. */
void hp_pool_run(hp_pool *p, hp_pool_fn fn, void *ctx);

/* The [begin, end) share of n items for thread tid of nthreads, in blocks of
 * `align` items (the last share takes the remainder). */
void hp_pool_split(long *begin, long *end, long n, long align, int tid, int nthreads);

#endif
