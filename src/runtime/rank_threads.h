/* runtime/rank_threads: one thread per hosted rank, driven by a caller that
 * runs no rank itself, so that it can stop waiting for a rank-thread that no
 * longer answers. A run starts fn(ctx, i) on thread i for every i and waits
 * for all of them; once one has returned an error, the others get a grace
 * period to return (a rank waiting in a collective of a broken group returns
 * within milliseconds), and those still running after it are abandoned: left
 * running, never joined, and the caller gets the first error at once. After
 * that the set runs nothing more and its destroy frees nothing (an abandoned
 * thread may still read ctx): the process is expected to report and exit. */
#ifndef HP_RUNTIME_RANK_THREADS_H
#define HP_RUNTIME_RANK_THREADS_H

#include "core/status.h"

typedef struct hp_rank_threads hp_rank_threads;
typedef hp_status (*hp_rank_fn)(void *ctx, int i);

hp_status hp_rank_threads_create(hp_rank_threads **out, int n);
/* Runs fn(ctx, i) on thread i for every i in [0, n) and waits. st[n]: each
 * thread's status (HP_OK for an abandoned one). Returns how many threads were
 * abandoned (0: all returned). grace_s: how long the others may take to
 * return after the first error. A set with abandoned threads runs nothing
 * and returns n at once. No allocation. */
int hp_rank_threads_run(hp_rank_threads *rt, hp_status *st, hp_rank_fn fn, void *ctx, double grace_s);
/* 1 when thread i returned from the last run, 0 when it was abandoned. */
int hp_rank_threads_returned(const hp_rank_threads *rt, int i);
/* How many threads were abandoned so far. */
int hp_rank_threads_abandoned(const hp_rank_threads *rt);
/* Stops and joins the threads; with abandoned threads it frees nothing. */
void hp_rank_threads_destroy(hp_rank_threads *rt);

#endif
