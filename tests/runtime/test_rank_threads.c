/* runtime/rank_threads: every thread runs every run exactly once; errors come
 * back per thread; a thread that does not return after another's error is
 * abandoned (the run returns without it, naming it), the set then runs
 * nothing, and destroy leaves it alone. The blocked thread waits on a
 * condition the test controls (no sleeps, no timed checks). */
#include <pthread.h>

#include "runtime/rank_threads.h"
#include "testutil.h"

enum { N = 4, RUNS = 2000 };

typedef struct {
    long count[N];
    int fail_on; /* thread that returns an error (-1: none) */
    int block_on; /* thread that blocks until released (-1: none) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int released, blocked_entered;
} job;

static hp_status work(void *ctx, int i) {
    job *j = ctx;
    j->count[i]++;
    if (i == j->block_on) {
        pthread_mutex_lock(&j->mu);
        j->blocked_entered = 1;
        while (!j->released) pthread_cond_wait(&j->cv, &j->mu);
        pthread_mutex_unlock(&j->mu);
        return HP_OK;
    }
    if (i == j->fail_on) return hp_errorf("thread %d failed", i);
    return HP_OK;
}

int main(void) {
    hp_rank_threads *rt;
    CHECK_OK(hp_rank_threads_create(&rt, N));
    static job j = {.fail_on = -1, .block_on = -1}; /* static: the abandoned thread outlives main's frame */
    pthread_mutex_init(&j.mu, NULL);
    pthread_cond_init(&j.cv, NULL);
    hp_status st[N];

    /* every run reaches every thread exactly once */
    int gone = 0;
    for (int r = 0; r < RUNS; r++) gone += hp_rank_threads_run(rt, st, work, &j, 60);
    CHECK(gone == 0);
    for (int i = 0; i < N; i++) CHECKF(j.count[i] == RUNS, "thread %d ran %ld of %d runs", i, j.count[i], RUNS);

    /* an error comes back on its thread; the others return and nothing is abandoned (the run
     * ends when they have: the long grace period costs nothing) */
    j.fail_on = 2;
    CHECK(hp_rank_threads_run(rt, st, work, &j, 60) == 0);
    for (int i = 0; i < N; i++) {
        CHECK((st[i] != HP_OK) == (i == 2));
        if (st[i]) CHECK(strstr(hp_status_msg(st[i]), "thread 2 failed") != NULL);
        hp_status_free(st[i]);
    }
    CHECK(hp_rank_threads_abandoned(rt) == 0);

    /* thread 1 does not return after thread 2's error: abandoned after the grace period */
    j.block_on = 1;
    CHECK(hp_rank_threads_run(rt, st, work, &j, 0.05) == 1);
    CHECK(j.blocked_entered);
    CHECK(hp_rank_threads_abandoned(rt) == 1);
    for (int i = 0; i < N; i++) {
        CHECK(hp_rank_threads_returned(rt, i) == (i != 1));
        CHECK((st[i] != HP_OK) == (i == 2));
        hp_status_free(st[i]);
    }
    /* the set runs nothing more */
    long before = j.count[0];
    CHECK(hp_rank_threads_run(rt, st, work, &j, 0.05) == N);
    CHECK(j.count[0] == before);
    hp_rank_threads_destroy(rt); /* frees nothing: thread 1 still uses rt and j */

    /* released, the abandoned thread finishes its call and stays idle */
    pthread_mutex_lock(&j.mu);
    j.released = 1;
    pthread_cond_broadcast(&j.cv);
    pthread_mutex_unlock(&j.mu);
    return hp_test_finish("test_rank_threads");
}
