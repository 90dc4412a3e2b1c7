/* comm/link: point-to-point messages between ranks. Inside a supernode and on
 * the emulated inter-supernode tier a mailbox matches sends with receives and
 * moves the data with one copy (the mailbox transport, here); between MPI
 * processes the world's inter-supernode transport (comm/transport_mpi.c).
 * Inter-supernode messages pass a link model (bandwidth and latency per rank
 * port) that delays completion. Every message is counted when it is posted,
 * on its sender's rank and tier (hp_comm_rank_tier_stats). */
#include <sched.h>
#include <string.h>

#include "comm/internal.h"

void hp_comm_mbox_init(hp_comm_mbox *m) {
    pthread_mutex_init(&m->mu, NULL);
    m->head = m->tail = NULL;
}

void hp_comm_mbox_destroy(hp_comm_mbox *m) { pthread_mutex_destroy(&m->mu); }

static void finish(hp_comm_lreq *q) {
    atomic_store(&q->done, 1);
    hp_comm_word_wake(&q->done);
}

static void mbox_post(hp_comm_mbox *m, hp_comm_lreq *q) {
    pthread_mutex_lock(&m->mu);
    hp_comm_lreq *prev = NULL, *p = m->head;
    while (p && !(p->is_send != q->is_send && p->src == q->src && p->dst == q->dst && p->gid == q->gid)) {
        prev = p;
        p = p->next;
    }
    if (!p) {
        q->next = NULL;
        if (m->tail) m->tail->next = q;
        else m->head = q;
        m->tail = q;
        pthread_mutex_unlock(&m->mu);
        return;
    }
    if (prev) prev->next = p->next;
    else m->head = p->next;
    if (m->tail == p) m->tail = prev;
    pthread_mutex_unlock(&m->mu);
    hp_comm_lreq *s = q->is_send ? q : p, *rv = q->is_send ? p : q;
    size_t n = s->bytes < rv->bytes ? s->bytes : rv->bytes;
    if (s->bytes != rv->bytes) rv->size_mismatch = 1;
    if (n) memcpy(rv->buf, s->buf, n);
    finish(s);
    finish(rv);
}

/* Applies the link model to an inter-supernode message on this rank's port
 * (shared by the rank's lanes, so taken under its lock). */
static void throttle(hp_comm_rank *r, hp_comm_lreq *q, int64_t *port_free) {
    hp_comm_world *w = r->w;
    if (w->bw_bytes_per_ns <= 0 && w->lat_ns <= 0) return;
    int64_t xfer = w->bw_bytes_per_ns > 0 ? (int64_t)((double)q->bytes / w->bw_bytes_per_ns) : 0;
    pthread_mutex_lock(&r->port_mu);
    int64_t now = hp_comm_now_ns();
    int64_t start = *port_free > now ? *port_free : now;
    *port_free = start + xfer;
    pthread_mutex_unlock(&r->port_mu);
    q->ready_ns = start + xfer + (int64_t)w->lat_ns;
}

static hp_status post(hp_comm_rank *r, hp_comm_lreq *q, int is_send, int peer, int gid, void *buf,
                      size_t bytes) {
    hp_comm_world *w = r->w;
    memset(q, 0, sizeof *q);
    q->is_send = is_send;
    q->src = is_send ? r->rank : peer;
    q->dst = is_send ? peer : r->rank;
    q->gid = gid;
    q->buf = buf;
    q->bytes = bytes;
    atomic_init(&q->done, 0);
    int cross = peer / w->R != r->sn;
    if (cross) throttle(r, q, is_send ? &r->tx_free_ns : &r->rx_free_ns);
    if (is_send) { /* the sender counts the message, on its tier */
        atomic_fetch_add_explicit(cross ? &r->inter_bytes : &r->intra_bytes, (long long)bytes, memory_order_relaxed);
        atomic_fetch_add_explicit(cross ? &r->inter_msgs : &r->intra_msgs, 1, memory_order_relaxed);
    }
    q->tp = cross ? w->inter : &hp_comm_transport_mbox;
    return q->tp->post(r, q, peer);
}

hp_status hp_comm_link_isend(hp_comm_rank *r, hp_comm_lreq *q, int dst, int gid, const void *buf,
                             size_t bytes) {
    return post(r, q, 1, dst, gid, (void *)buf, bytes);
}

hp_status hp_comm_link_irecv(hp_comm_rank *r, hp_comm_lreq *q, int src, int gid, void *buf,
                             size_t bytes) {
    return post(r, q, 0, src, gid, buf, bytes);
}

int hp_comm_link_wait(hp_comm_rank *r, hp_comm_lreq *q, int64_t deadline_ns) {
    if (q->tp->wait(r, q, deadline_ns)) return -1;
    if (q->ready_ns) hp_comm_wait_until(q->ready_ns);
    return 0;
}

void hp_comm_link_cancel(hp_comm_rank *r, hp_comm_lreq *q) {
    if (atomic_load(&q->done)) return;
    q->tp->cancel(r, q);
}

/* ---- the mailbox transport ---- */

static hp_status mbox_send(hp_comm_rank *r, hp_comm_lreq *q, int peer) {
    (void)peer;
    mbox_post(&r->w->mbox, q);
    return HP_OK;
}

static int mbox_wait(hp_comm_rank *r, hp_comm_lreq *q, int64_t deadline_ns) {
    (void)r;
    hp_comm_spin_until_changed(&q->done, 0);
    while (!atomic_load_explicit(&q->done, memory_order_acquire)) {
        if (hp_comm_now_ns() >= deadline_ns) return -1;
        hp_comm_word_wait(&q->done, 0, deadline_ns);
    }
    return 0;
}

static void mbox_cancel(hp_comm_rank *r, hp_comm_lreq *q) {
    hp_comm_mbox *m = &r->w->mbox;
    pthread_mutex_lock(&m->mu);
    hp_comm_lreq *prev = NULL, *p = m->head;
    while (p && p != q) {
        prev = p;
        p = p->next;
    }
    if (p) {
        if (prev) prev->next = p->next;
        else m->head = p->next;
        if (m->tail == p) m->tail = prev;
    }
    pthread_mutex_unlock(&m->mu);
    if (!p)
        while (!atomic_load(&q->done)) sched_yield(); /* matched: the copy is finishing */
}

const hp_comm_transport hp_comm_transport_mbox = {"mailbox", NULL, NULL, NULL, mbox_send, mbox_wait, mbox_cancel};
