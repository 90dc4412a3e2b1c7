/* comm/link: point-to-point messages between ranks. Inside a supernode and on
 * the emulated inter-supernode tier a mailbox matches sends with receives and
 * moves the data with one copy; between MPI processes the thread running the
 * call (the rank's own, or one of its lanes) drives MPI_Isend/Irecv
 * (MPI_THREAD_MULTIPLE). Inter-supernode messages pass
 * a link model (bandwidth and latency per rank port) that delays completion. */
#include <sched.h>
#include <string.h>

#include "comm/internal.h"

/* How long an MPI wait polls before it starts sleeping between polls. */
#define MPI_POLL_NS 2000000LL
/* ... of which the first part polls without yielding (a small message's round trip). */
#define MPI_SPIN_NS 20000LL

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
    if (cross) {
        throttle(r, q, is_send ? &r->tx_free_ns : &r->rx_free_ns);
        if (is_send) {
            atomic_fetch_add_explicit(&r->inter_bytes, (long long)bytes, memory_order_relaxed);
            atomic_fetch_add_explicit(&r->inter_msgs, 1, memory_order_relaxed);
        }
    }
    if (!(cross && w->use_mpi)) {
        mbox_post(&w->mbox, q);
        return HP_OK;
    }
    if (bytes > 0x7fffffffu) return hp_errorf("comm: message of %zu bytes exceeds MPI's int count", bytes);
    long tag = ((long)gid * w->R + q->src % w->R) * w->R + q->dst % w->R;
    if (tag > w->tag_ub) return hp_errorf("comm: MPI tag %ld above MPI_TAG_UB %d (too many groups)", tag, w->tag_ub);
    if (w->mpi_serialize) pthread_mutex_lock(&w->mpi_mu);
    int rc = is_send ? MPI_Isend(buf, (int)bytes, MPI_BYTE, peer / w->R, (int)tag, w->comm, &q->mreq)
                     : MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer / w->R, (int)tag, w->comm, &q->mreq);
    if (w->mpi_serialize) pthread_mutex_unlock(&w->mpi_mu);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        return hp_errorf("comm: MPI_%s to supernode %d failed: %s", is_send ? "Isend" : "Irecv", peer / w->R, msg);
    }
    q->via_mpi = 1;
    return HP_OK;
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
    hp_comm_world *w = r->w;
    if (q->via_mpi && !atomic_load(&q->done)) {
        /* Open MPI moves data only inside MPI calls: poll, yielding the core,
         * for up to MPI_POLL_NS (a large message's copy), then sleep between polls */
        int64_t t0 = hp_comm_now_ns(), spin_end = t0 + MPI_SPIN_NS, poll_end = t0 + MPI_POLL_NS;
        for (;;) {
            int flag = 0;
            if (w->mpi_serialize) pthread_mutex_lock(&w->mpi_mu);
            MPI_Test(&q->mreq, &flag, MPI_STATUS_IGNORE);
            if (w->mpi_serialize) pthread_mutex_unlock(&w->mpi_mu);
            if (flag) break;
            int64_t now = hp_comm_now_ns();
            if (now >= deadline_ns) return -1;
            if (now < spin_end) continue;
            if (now < poll_end) sched_yield();
            else hp_comm_sleep_until(now + 20000);
        }
        atomic_store(&q->done, 1);
    } else if (!q->via_mpi) {
        hp_comm_spin_until_changed(&q->done, 0);
        while (!atomic_load_explicit(&q->done, memory_order_acquire)) {
            if (hp_comm_now_ns() >= deadline_ns) return -1;
            hp_comm_word_wait(&q->done, 0, deadline_ns);
        }
    }
    if (q->ready_ns) hp_comm_wait_until(q->ready_ns);
    return 0;
}

void hp_comm_link_cancel(hp_comm_rank *r, hp_comm_lreq *q) {
    hp_comm_world *w = r->w;
    if (atomic_load(&q->done)) return;
    if (q->via_mpi) {
        if (!q->is_send) {
            MPI_Cancel(&q->mreq);
            MPI_Request_free(&q->mreq);
        }
        return;
    }
    hp_comm_mbox *m = &w->mbox;
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
