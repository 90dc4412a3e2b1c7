/* comm/transport_mpi: the MPI transport (comm/internal.h hp_comm_transport):
 * an inter-supernode message between processes is an MPI_Isend/Irecv on the
 * world's duplicated communicator, driven by the thread running the call
 * (the rank's own, or one of its lanes; MPI_THREAD_MULTIPLE, or serialized
 * under the world's lock); and the MPI set-up and ending of a world. */
#include <sched.h>
#include <stdio.h>

#include "comm/internal.h"

/* How long an MPI wait polls before it starts sleeping between polls. */
#define MPI_POLL_NS 2000000LL
/* ... of which the first part polls without yielding (a small message's round trip). */
#define MPI_SPIN_NS 20000LL

static hp_status mpi_post(hp_comm_rank *r, hp_comm_lreq *q, int peer) {
    hp_comm_world *w = r->w;
    int is_send = q->is_send;
    size_t bytes = q->bytes;
    if (bytes > 0x7fffffffu) return hp_errorf("comm: message of %zu bytes exceeds MPI's int count", bytes);
    long tag = ((long)q->gid * w->R + q->src % w->R) * w->R + q->dst % w->R;
    if (tag > w->tag_ub) return hp_errorf("comm: MPI tag %ld above MPI_TAG_UB %d (too many groups)", tag, w->tag_ub);
    if (w->mpi_serialize) pthread_mutex_lock(&w->mpi_mu);
    int rc = is_send ? MPI_Isend(q->buf, (int)bytes, MPI_BYTE, peer / w->R, (int)tag, w->comm, &q->mreq)
                     : MPI_Irecv(q->buf, (int)bytes, MPI_BYTE, peer / w->R, (int)tag, w->comm, &q->mreq);
    if (w->mpi_serialize) pthread_mutex_unlock(&w->mpi_mu);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        return hp_errorf("comm: MPI_%s to supernode %d failed: %s", is_send ? "Isend" : "Irecv", peer / w->R, msg);
    }
    return HP_OK;
}

static int mpi_wait(hp_comm_rank *r, hp_comm_lreq *q, int64_t deadline_ns) {
    hp_comm_world *w = r->w;
    if (atomic_load(&q->done)) return 0;
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
    return 0;
}

/* A receive is cancelled and freed; a send is left to MPI (the job is aborted
 * when the world goes after a failure). */
static void mpi_cancel(hp_comm_rank *r, hp_comm_lreq *q) {
    (void)r;
    if (!q->is_send) {
        MPI_Cancel(&q->mreq);
        MPI_Request_free(&q->mreq);
    }
}

static hp_status mpi_err(int rc, const char *what) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return hp_errorf("comm: %s failed: %s", what, msg);
}

/* MPI initialised (unless it already was) with threads, a duplicated
 * communicator returning errors; the processes are the supernodes. */
static hp_status mpi_open(hp_comm_world *w) {
    int inited = 0;
    MPI_Initialized(&inited);
    int provided = MPI_THREAD_SINGLE;
    if (!inited) {
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
        if (rc != MPI_SUCCESS) return hp_errorf("comm: MPI_Init_thread failed (code %d)", rc);
        w->mpi_inited_here = 1;
    } else {
        MPI_Query_thread(&provided);
    }
    if (provided < MPI_THREAD_SERIALIZED)
        return hp_errorf("comm: MPI grants thread level %d; hyperpar needs MPI_THREAD_SERIALIZED or more", provided);
    w->mpi_serialize = provided < MPI_THREAD_MULTIPLE;
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &w->comm);
    if (rc != MPI_SUCCESS) return mpi_err(rc, "MPI_Comm_dup");
    MPI_Comm_set_errhandler(w->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(w->comm, &w->mpi_rank);
    int size;
    MPI_Comm_size(w->comm, &size);
    w->S = size;
    int *ub = NULL, flag = 0;
    MPI_Comm_get_attr(w->comm, MPI_TAG_UB, &ub, &flag);
    w->tag_ub = flag && ub ? *ub : 32767;
    return HP_OK;
}

static void mpi_close(hp_comm_world *w) {
    if (w->comm != MPI_COMM_NULL && w->comm) MPI_Comm_free(&w->comm);
    if (w->mpi_inited_here) MPI_Finalize();
}

/* A peer stopped answering: MPI_Finalize (and joining threads still waiting
 * on it) would wait for it forever. The caller has printed its error by now
 * (it names the collective, the group and the missing rank); end the job. */
static void mpi_abort(hp_comm_world *w) {
    (void)w;
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

const hp_comm_transport hp_comm_transport_mpi = {"mpi", mpi_open, mpi_close, mpi_abort, mpi_post, mpi_wait,
                                                 mpi_cancel};
