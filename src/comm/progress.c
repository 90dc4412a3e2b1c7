/* comm/progress: asynchronous calls. Each rank has HP_COMM_LANES lanes; a
 * group's calls on a rank go to the lane the group was given there
 * (group.c), so calls on one group run one at a time in the order they were
 * started, and calls on groups with lanes of their own progress at once. A
 * lane's thread (started on its first call) runs the calls with the lane's
 * own scratch and drives MPI while the rank computes (Open MPI has no
 * progress thread of its own). hp_comm_run runs a call on the calling thread
 * when its lane has nothing pending, else queues it behind the started calls
 * and waits. Handles are pooled per rank: no allocation per call once warm. */
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "comm/internal.h"

void hp_comm_progress_init(hp_comm_rank *r) {
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->done_cv, NULL);
    for (int i = 0; i < HP_COMM_LANES; i++) {
        r->lanes[i].r = r;
        pthread_cond_init(&r->lanes[i].cv, NULL);
    }
}

void hp_comm_progress_fini(hp_comm_rank *r) {
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    for (int i = 0; i < HP_COMM_LANES; i++) pthread_cond_broadcast(&r->lanes[i].cv);
    pthread_mutex_unlock(&r->mu);
    for (int i = 0; i < HP_COMM_LANES; i++) {
        hp_comm_lane *l = &r->lanes[i];
        if (l->has_thread) pthread_join(l->thread, NULL);
        pthread_cond_destroy(&l->cv);
        hp_comm_scratch_free(&l->s);
    }
    pthread_cond_destroy(&r->done_cv);
    pthread_mutex_destroy(&r->mu);
    while (r->spare) {
        hp_comm_req *q = r->spare;
        r->spare = q->next;
        free(q);
    }
    hp_comm_scratch_free(&r->own);
}

/* The lane of r's calls on g (0 when r is no member: the call then fails). */
static int lane_of(const hp_comm_rank *r, const hp_comm_group *g) {
    if (g->w != r->w) return 0;
    int m = hp_comm_group_index(g, r->rank);
    return m < 0 ? 0 : g->lane[m];
}

static void *lane_main(void *arg);

/* Queues q on lane li, starting the lane's thread on its first call (under r->mu). */
static hp_status enqueue(hp_comm_rank *r, hp_comm_req *q, int li) {
    hp_comm_lane *l = &r->lanes[li];
    q->lane = li;
    q->next = NULL;
    if (l->qtail) l->qtail->next = q;
    else l->qhead = q;
    l->qtail = q;
    l->pending++;
    if (!l->has_thread) {
        if (pthread_create(&l->thread, NULL, lane_main, l)) {
            /* q is the lane's only call (no thread ever ran there): take it back out */
            l->qhead = l->qtail = NULL;
            l->pending--;
            return hp_errorf("comm: rank %d: cannot start a communication thread for group '%s'", r->rank,
                             (q->stage2 ? q->g2 : q->g)->name);
        }
        l->has_thread = 1;
    }
    pthread_cond_signal(&l->cv);
    return HP_OK;
}

static void *lane_main(void *arg) {
    hp_comm_lane *l = arg;
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0); /* its sleeps on the emulated link end on time */
    hp_comm_rank *r = l->r;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!l->qhead && !r->stop) pthread_cond_wait(&l->cv, &r->mu);
        if (!l->qhead) break; /* stopping, and the queue is drained */
        hp_comm_req *q = l->qhead;
        l->qhead = q->next;
        if (!l->qhead) l->qtail = NULL;
        pthread_mutex_unlock(&r->mu);
        int64_t t0 = hp_comm_now_ns();
        hp_status st = q->stage2 ? hp_comm_exec(r, &l->s, q->g2, &q->a2) : hp_comm_exec(r, &l->s, q->g, &q->a);
        atomic_fetch_add_explicit(&r->busy_ns, (long long)(hp_comm_now_ns() - t0), memory_order_relaxed);
        pthread_mutex_lock(&r->mu);
        if (!st && q->g2 && !q->stage2) {
            /* the first call is done: the second goes to its own group's lane, so this lane's next first call
             * (a reduce-scatter inside the supernode) does not wait behind it (an all-reduce across them) */
            q->done1 = 1;
            q->stage2 = 1;
            q->next = NULL;
            l->pending--;
            hp_status e = enqueue(r, q, lane_of(r, q->g2));
            pthread_cond_broadcast(&r->done_cv);
            if (!e) continue;
            q->st = e;
            q->done = 1;
            pthread_cond_broadcast(&r->done_cv);
            continue;
        }
        q->st = st;
        q->done = 1;
        l->pending--;
        pthread_cond_broadcast(&r->done_cv);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

hp_status hp_comm_start(hp_comm_req **req, hp_comm_rank *r, hp_comm_group *g, const hp_comm_args *a) {
    return hp_comm_start_then(req, r, g, a, NULL, NULL);
}

hp_status hp_comm_start_then(hp_comm_req **req, hp_comm_rank *r, hp_comm_group *g, const hp_comm_args *a,
                             hp_comm_group *g2, const hp_comm_args *a2) {
    *req = NULL;
    int li = lane_of(r, g);
    pthread_mutex_lock(&r->mu);
    hp_comm_req *q = r->spare; /* a finished handle if there is one */
    if (q) r->spare = q->next;
    else q = malloc(sizeof *q);
    if (!q) {
        pthread_mutex_unlock(&r->mu);
        return hp_errorf("comm: out of memory");
    }
    memset(q, 0, sizeof *q);
    q->r = r;
    q->g = g;
    q->a = *a;
    q->g2 = a2 ? g2 : NULL;
    if (q->g2) q->a2 = *a2;
    /* a send or recv is posted here, not queued: it never holds a lane (a pipeline's sends and receives on one
     * group, in both directions, would otherwise wait behind each other), and completes when its peer's does */
    q->direct = !a2 && (a->kind == HP_COMM_SEND || a->kind == HP_COMM_RECV);
    hp_status st = q->direct ? hp_comm_p2p_post(r, g, a, &q->lr, &q->deadline) : enqueue(r, q, li);
    if (st) {
        q->next = r->spare;
        r->spare = q;
        pthread_mutex_unlock(&r->mu);
        return st;
    }
    pthread_mutex_unlock(&r->mu);
    *req = q;
    return HP_OK;
}

/* A direct send or recv waited for on the calling thread (once: its status kept for hp_comm_wait). */
static void finish_direct(hp_comm_req *q) {
    if (q->done) return;
    int64_t t0 = hp_comm_now_ns();
    q->st = hp_comm_p2p_finish(q->r, q->g, &q->a, &q->lr, q->deadline);
    atomic_fetch_add_explicit(&q->r->busy_ns, (long long)(hp_comm_now_ns() - t0), memory_order_relaxed);
    q->done = 1;
}

hp_status hp_comm_test(hp_comm_req *q, int *done) {
    if (!q) {
        *done = 1;
        return HP_OK;
    }
    hp_comm_rank *r = q->r;
    if (q->direct && !q->done && hp_comm_link_wait(r, &q->lr, hp_comm_now_ns()) == 0) finish_direct(q);
    pthread_mutex_lock(&r->mu);
    *done = q->done;
    pthread_mutex_unlock(&r->mu);
    return HP_OK;
}

/* Adds the time since t0 to r's blocked time. */
static void waited(hp_comm_rank *r, int64_t t0) {
    atomic_fetch_add_explicit(&r->wait_ns, (long long)(hp_comm_now_ns() - t0), memory_order_relaxed);
}

void hp_comm_wait_first(hp_comm_req *q) {
    if (!q) return;
    hp_comm_rank *r = q->r;
    int64_t t0 = hp_comm_now_ns();
    if (q->direct) finish_direct(q);
    pthread_mutex_lock(&r->mu);
    while (!q->done1 && !q->done) pthread_cond_wait(&r->done_cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    waited(r, t0);
}

hp_status hp_comm_wait(hp_comm_req *q) {
    if (!q) return HP_OK;
    hp_comm_rank *r = q->r;
    int64_t t0 = hp_comm_now_ns();
    if (q->direct) finish_direct(q);
    pthread_mutex_lock(&r->mu);
    while (!q->done) pthread_cond_wait(&r->done_cv, &r->mu);
    hp_status st = q->st;
    q->next = r->spare;
    r->spare = q;
    pthread_mutex_unlock(&r->mu);
    waited(r, t0);
    return st;
}

hp_status hp_comm_run(hp_comm_rank *r, hp_comm_group *g, const hp_comm_args *a) {
    pthread_mutex_lock(&r->mu);
    int busy = r->lanes[lane_of(r, g)].pending > 0;
    pthread_mutex_unlock(&r->mu);
    if (!busy) {
        int64_t t0 = hp_comm_now_ns();
        hp_status st = hp_comm_exec(r, &r->own, g, a);
        atomic_fetch_add_explicit(&r->busy_ns, (long long)(hp_comm_now_ns() - t0), memory_order_relaxed);
        waited(r, t0);
        return st;
    }
    /* started calls of this lane are pending: keep the order */
    hp_comm_req *q;
    HP_TRY(hp_comm_start(&q, r, g, a));
    return hp_comm_wait(q);
}
