/* comm/world: the world (supernodes x ranks, MPI or not), rank handles,
 * groups and their per-supernode shared state, the per-rank communication
 * thread behind hp_comm_start, and the single-tensor shorthands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/internal.h"

void hp_comm_opts_default(hp_comm_opts *o) {
    memset(o, 0, sizeof *o);
    o->ranks_per_supernode = 1;
    o->supernodes = 0;
    o->mpi = -1;
    o->timeout_s = 300;
}

static hp_status parse_num(double *out, const char *flag, const char *v, double lo, double hi) {
    if (!v) return hp_errorf("comm options: %s needs a value", flag);
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !(d >= lo && d <= hi))
        return hp_errorf("comm options: %s: '%s' is not a number in [%g, %g]", flag, v, lo, hi);
    *out = d;
    return HP_OK;
}

hp_status hp_comm_opts_parse(hp_comm_opts *o, const char *flag, const char *value, int *used) {
    double d = 0;
    *used = 1;
    if (!strcmp(flag, "--ranks")) {
        HP_TRY(parse_num(&d, flag, value, 1, 4096));
        o->ranks_per_supernode = (int)d;
    } else if (!strcmp(flag, "--supernodes")) {
        HP_TRY(parse_num(&d, flag, value, 1, 4096));
        o->supernodes = (int)d;
    } else if (!strcmp(flag, "--comm-timeout")) {
        HP_TRY(parse_num(&d, flag, value, 1e-3, 1e7));
        o->timeout_s = d;
    } else if (!strcmp(flag, "--inter-bw")) {
        HP_TRY(parse_num(&d, flag, value, 0, 1e6));
        o->inter_bw_gbps = d;
    } else if (!strcmp(flag, "--inter-latency")) {
        HP_TRY(parse_num(&d, flag, value, 0, 1e9));
        o->inter_latency_us = d;
    } else {
        *used = 0;
    }
    return HP_OK;
}

static void rank_init(hp_comm_rank *r, hp_comm_world *w, int rank) {
    memset(r, 0, sizeof *r);
    r->w = w;
    r->rank = rank;
    r->sn = rank / w->R;
    r->local = rank % w->R;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
}

static void rank_fini(hp_comm_rank *r) {
    if (r->has_thread) {
        pthread_mutex_lock(&r->mu);
        r->stop = 1;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->thread, NULL);
    }
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    while (r->spare) {
        hp_comm_req *q = r->spare;
        r->spare = q->next;
        free(q);
    }
    free(r->scratch);
    free(r->ptrs);
    free(r->ptrs2);
    free(r->lreqs);
}

static hp_status mpi_err(int rc, const char *what) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return hp_errorf("comm: %s failed: %s", what, msg);
}

static hp_status setup_mpi(hp_comm_world *w) {
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

hp_status hp_comm_world_create(hp_comm_world **out, const hp_comm_opts *o) {
    *out = NULL;
    if (o->ranks_per_supernode < 1)
        return hp_errorf("comm options: ranks_per_supernode: %d is not >= 1", o->ranks_per_supernode);
    if (o->supernodes < 0) return hp_errorf("comm options: supernodes: %d is negative", o->supernodes);
    if (!(o->timeout_s > 0)) return hp_errorf("comm options: timeout_s: %g is not positive", o->timeout_s);
    if (o->inter_bw_gbps < 0 || o->inter_latency_us < 0)
        return hp_errorf("comm options: inter_bw_gbps / inter_latency_us must not be negative");
    int launched = getenv("OMPI_COMM_WORLD_SIZE") != NULL;
    int use_mpi = o->mpi < 0 ? launched : o->mpi;
    if (o->mpi == 1 && !launched)
        return hp_errorf("comm options: mpi: required, but the process was not started by mpirun");
    hp_comm_world *w = calloc(1, sizeof *w);
    if (!w) return hp_errorf("comm: out of memory");
    w->R = o->ranks_per_supernode;
    w->S = o->supernodes > 0 ? o->supernodes : 1;
    w->timeout_ns = (int64_t)(o->timeout_s * 1e9);
    w->bw_bytes_per_ns = o->inter_bw_gbps; /* 1 GB/s = 1 byte/ns */
    w->lat_ns = o->inter_latency_us * 1e3;
    pthread_mutex_init(&w->mpi_mu, NULL);
    hp_comm_mbox_init(&w->mbox);
    atomic_init(&w->next_gid, 0);
    if (use_mpi) {
        hp_status st = setup_mpi(w);
        if (!st && o->supernodes > 0 && o->supernodes != w->S)
            st = hp_errorf("comm options: supernodes: %d given, but mpirun started %d processes", o->supernodes, w->S);
        if (st) {
            w->use_mpi = 1;
            hp_comm_world_destroy(w);
            return st;
        }
        w->use_mpi = 1;
        w->first = w->mpi_rank * w->R;
        w->nhosted = w->R;
    } else {
        w->first = 0;
        w->nhosted = w->S * w->R;
    }
    w->ranks = calloc((size_t)w->nhosted, sizeof *w->ranks);
    if (!w->ranks) {
        hp_comm_world_destroy(w);
        return hp_errorf("comm: out of memory");
    }
    for (int i = 0; i < w->nhosted; i++) rank_init(&w->ranks[i], w, w->first + i);
    int n = w->S * w->R;
    int *all = malloc((size_t)n * sizeof *all);
    if (!all) {
        hp_comm_world_destroy(w);
        return hp_errorf("comm: out of memory");
    }
    for (int i = 0; i < n; i++) all[i] = i;
    hp_status st = hp_comm_group_create(&w->world_group, w, all, n, "world");
    free(all);
    if (st) {
        hp_comm_world_destroy(w);
        return st;
    }
    *out = w;
    return HP_OK;
}

void hp_comm_world_destroy(hp_comm_world *w) {
    if (!w) return;
    if (w->ranks)
        for (int i = 0; i < w->nhosted; i++) rank_fini(&w->ranks[i]);
    free(w->ranks);
    hp_comm_group_destroy(w->world_group);
    if (w->use_mpi) {
        if (w->comm != MPI_COMM_NULL && w->comm) MPI_Comm_free(&w->comm);
        if (w->mpi_inited_here) MPI_Finalize();
    }
    hp_comm_mbox_destroy(&w->mbox);
    pthread_mutex_destroy(&w->mpi_mu);
    free(w);
}

int hp_comm_world_size(const hp_comm_world *w) { return w->S * w->R; }
int hp_comm_supernodes(const hp_comm_world *w) { return w->S; }
int hp_comm_ranks_per_supernode(const hp_comm_world *w) { return w->R; }
int hp_comm_uses_mpi(const hp_comm_world *w) { return w->use_mpi; }
int hp_comm_supernode_of(const hp_comm_world *w, int rank) { return rank / w->R; }
int hp_comm_local_index_of(const hp_comm_world *w, int rank) { return rank % w->R; }

void hp_comm_hosted_ranks(const hp_comm_world *w, int *first, int *count) {
    *first = w->first;
    *count = w->nhosted;
}

hp_comm_rank *hp_comm_world_rank(hp_comm_world *w, int rank) {
    if (rank < w->first || rank >= w->first + w->nhosted) return NULL;
    return &w->ranks[rank - w->first];
}

int hp_comm_rank_id(const hp_comm_rank *r) { return r->rank; }

void hp_comm_rank_stats(const hp_comm_rank *r, int64_t *inter_bytes, int64_t *inter_msgs) {
    *inter_bytes = r->inter_bytes;
    *inter_msgs = r->inter_msgs;
}

void hp_comm_rank_reset_stats(hp_comm_rank *r) { r->inter_bytes = r->inter_msgs = 0; }

hp_comm_group *hp_comm_world_group(hp_comm_world *w) { return w->world_group; }

hp_status hp_comm_group_create(hp_comm_group **out, hp_comm_world *w, const int *ranks, int n,
                               const char *name) {
    *out = NULL;
    int size = w->S * w->R;
    if (n < 1) return hp_errorf("comm group '%s': needs at least one rank, got %d", name ? name : "?", n);
    hp_comm_group *g = calloc(1, sizeof *g);
    if (!g) return hp_errorf("comm: out of memory");
    g->w = w;
    g->n = n;
    g->gid = atomic_fetch_add(&w->next_gid, 1);
    if (name) snprintf(g->name, sizeof g->name, "%s", name);
    else snprintf(g->name, sizeof g->name, "group%d", g->gid);
    pthread_mutex_init(&g->fail_mu, NULL);
    atomic_init(&g->failed, 0);
    g->ranks = malloc((size_t)n * sizeof(int));
    g->member_of = malloc((size_t)size * sizeof(int));
    g->sn = malloc((size_t)n * sizeof(int));
    g->lidx = malloc((size_t)n * sizeof(int));
    int *cnt = calloc((size_t)w->S, sizeof(int));
    hp_status st = HP_OK;
    if (!g->ranks || !g->member_of || !g->sn || !g->lidx || !cnt) {
        st = hp_errorf("comm: out of memory");
        goto fail;
    }
    for (int i = 0; i < size; i++) g->member_of[i] = -1;
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= size) {
            st = hp_errorf("comm group '%s': ranks[%d] = %d is outside the world of %d ranks", g->name, i, ranks[i], size);
            goto fail;
        }
        if (g->member_of[ranks[i]] >= 0) {
            st = hp_errorf("comm group '%s': rank %d appears twice", g->name, ranks[i]);
            goto fail;
        }
        g->ranks[i] = ranks[i];
        g->member_of[ranks[i]] = i;
        g->lidx[i] = cnt[ranks[i] / w->R]++;
    }
    for (int s = 0; s < w->S; s++) g->k += cnt[s] > 0;
    g->sn_list = malloc((size_t)g->k * sizeof(int));
    g->sn_n = malloc((size_t)g->k * sizeof(int));
    g->sn_members = calloc((size_t)g->k, sizeof(int *));
    g->sng = calloc((size_t)g->k, sizeof *g->sng);
    if (!g->sn_list || !g->sn_n || !g->sn_members || !g->sng) {
        st = hp_errorf("comm: out of memory");
        goto fail;
    }
    int pos = 0;
    for (int s = 0; s < w->S; s++) {
        if (!cnt[s]) continue;
        g->sn_list[pos] = s;
        g->sn_n[pos] = cnt[s];
        g->sn_members[pos] = malloc((size_t)cnt[s] * sizeof(int));
        if (!g->sn_members[pos]) {
            st = hp_errorf("comm: out of memory");
            goto fail;
        }
        int j = 0;
        for (int i = 0; i < n; i++)
            if (ranks[i] / w->R == s) {
                g->sn[i] = pos;
                g->sn_members[pos][j++] = i;
            }
        int hosted = s * w->R >= w->first && s * w->R < w->first + w->nhosted;
        hp_comm_fence_init(&g->sng[pos].bar, cnt[s]);
        if (hosted) {
            g->sng[pos].slots = aligned_alloc(64, sizeof(hp_comm_slot) * (size_t)cnt[s]);
            if (!g->sng[pos].slots) {
                st = hp_errorf("comm: out of memory");
                goto fail;
            }
            memset(g->sng[pos].slots, 0, sizeof(hp_comm_slot) * (size_t)cnt[s]);
            for (j = 0; j < cnt[s]; j++) atomic_init(&g->sng[pos].slots[j].phase, 0);
        }
        pos++;
    }
    free(cnt);
    *out = g;
    return HP_OK;
fail:
    free(cnt);
    hp_comm_group_destroy(g);
    return st;
}

void hp_comm_group_destroy(hp_comm_group *g) {
    if (!g) return;
    for (int p = 0; g->sng && p < g->k; p++) free(g->sng[p].slots);
    for (int p = 0; g->sn_members && p < g->k; p++) free(g->sn_members[p]);
    free(g->sng);
    free(g->sn_members);
    free(g->sn_list);
    free(g->sn_n);
    free(g->ranks);
    free(g->member_of);
    free(g->sn);
    free(g->lidx);
    pthread_mutex_destroy(&g->fail_mu);
    free(g);
}

int hp_comm_group_size(const hp_comm_group *g) { return g->n; }
int hp_comm_group_index(const hp_comm_group *g, int rank) {
    return rank >= 0 && rank < g->w->S * g->w->R ? g->member_of[rank] : -1;
}
const char *hp_comm_group_name(const hp_comm_group *g) { return g->name; }

/* ---- asynchronous calls: one communication thread per rank ---- */

static void *comm_thread(void *arg) {
    hp_comm_rank *r = arg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->qhead && !r->stop) pthread_cond_wait(&r->cv, &r->mu);
        if (!r->qhead) break;
        hp_comm_req *q = r->qhead;
        r->qhead = q->next;
        if (!r->qhead) r->qtail = NULL;
        pthread_mutex_unlock(&r->mu);
        hp_status st = hp_comm_exec(r, q->g, &q->a);
        pthread_mutex_lock(&r->mu);
        q->st = st;
        q->done = 1;
        r->inflight--;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

hp_status hp_comm_start(hp_comm_req **req, hp_comm_rank *r, hp_comm_group *g, const hp_comm_args *a) {
    *req = NULL;
    pthread_mutex_lock(&r->mu);
    hp_comm_req *q = r->spare; /* a finished handle if there is one: no allocation per call */
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
    if (!r->has_thread) {
        if (pthread_create(&r->thread, NULL, comm_thread, r)) {
            q->next = r->spare;
            r->spare = q;
            pthread_mutex_unlock(&r->mu);
            return hp_errorf("comm: rank %d: cannot start its communication thread", r->rank);
        }
        r->has_thread = 1;
    }
    if (r->qtail) r->qtail->next = q;
    else r->qhead = q;
    r->qtail = q;
    r->inflight++;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    *req = q;
    return HP_OK;
}

hp_status hp_comm_wait(hp_comm_req *q) {
    if (!q) return HP_OK;
    hp_comm_rank *r = q->r;
    pthread_mutex_lock(&r->mu);
    while (!q->done) pthread_cond_wait(&r->cv, &r->mu);
    hp_status st = q->st;
    q->next = r->spare;
    r->spare = q;
    pthread_mutex_unlock(&r->mu);
    return st;
}

hp_status hp_comm_run(hp_comm_rank *r, hp_comm_group *g, const hp_comm_args *a) {
    pthread_mutex_lock(&r->mu);
    int busy = r->inflight > 0;
    pthread_mutex_unlock(&r->mu);
    if (!busy) return hp_comm_exec(r, g, a);
    /* earlier started calls are still queued: keep the order */
    hp_comm_req *q;
    HP_TRY(hp_comm_start(&q, r, g, a));
    return hp_comm_wait(q);
}

static hp_status run1(hp_comm_rank *r, hp_comm_group *g, hp_comm_kind kind, void *recv, const void *send,
                      int64_t count, const int64_t *counts, const int64_t *rcounts, hp_dtype dt,
                      hp_comm_redop op, int peer) {
    hp_comm_tensor t = {recv, send, count};
    hp_comm_args a = {kind, dt, op, peer, &t, 1, counts, rcounts};
    return hp_comm_run(r, g, &a);
}

hp_status hp_comm_all_gather(hp_comm_rank *r, hp_comm_group *g, void *recv, const void *send,
                             int64_t count, const int64_t *counts, hp_dtype dt) {
    return run1(r, g, HP_COMM_ALL_GATHER, recv, send, count, counts, NULL, dt, HP_COMM_SUM, 0);
}
hp_status hp_comm_reduce_scatter(hp_comm_rank *r, hp_comm_group *g, void *recv, const void *send,
                                 int64_t count, const int64_t *counts, hp_dtype dt, hp_comm_redop op) {
    return run1(r, g, HP_COMM_REDUCE_SCATTER, recv, send, count, counts, NULL, dt, op, 0);
}
hp_status hp_comm_all_reduce(hp_comm_rank *r, hp_comm_group *g, void *recv, const void *send,
                             int64_t count, hp_dtype dt, hp_comm_redop op) {
    return run1(r, g, HP_COMM_ALL_REDUCE, recv, send, count, NULL, NULL, dt, op, 0);
}
hp_status hp_comm_broadcast(hp_comm_rank *r, hp_comm_group *g, void *buf, int64_t count, hp_dtype dt,
                            int root) {
    return run1(r, g, HP_COMM_BROADCAST, buf, NULL, count, NULL, NULL, dt, HP_COMM_SUM, root);
}
hp_status hp_comm_all_to_all(hp_comm_rank *r, hp_comm_group *g, void *recv, const void *send,
                             int64_t count, const int64_t *send_counts, const int64_t *recv_counts,
                             hp_dtype dt) {
    return run1(r, g, HP_COMM_ALL_TO_ALL, recv, send, count, send_counts, recv_counts, dt, HP_COMM_SUM, 0);
}
hp_status hp_comm_send(hp_comm_rank *r, hp_comm_group *g, const void *buf, int64_t count, hp_dtype dt,
                       int dst) {
    return run1(r, g, HP_COMM_SEND, NULL, buf, count, NULL, NULL, dt, HP_COMM_SUM, dst);
}
hp_status hp_comm_recv(hp_comm_rank *r, hp_comm_group *g, void *buf, int64_t count, hp_dtype dt,
                       int src) {
    return run1(r, g, HP_COMM_RECV, buf, NULL, count, NULL, NULL, dt, HP_COMM_SUM, src);
}
hp_status hp_comm_barrier(hp_comm_rank *r, hp_comm_group *g) {
    return run1(r, g, HP_COMM_BARRIER, NULL, NULL, 0, NULL, NULL, HP_F32, HP_COMM_SUM, 0);
}
