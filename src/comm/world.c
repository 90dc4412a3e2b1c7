/* comm/world: the world (supernodes x ranks) and its set-up: options
 * checked, the inter-supernode transport chosen (MPI when the process runs
 * under mpirun: comm/transport_mpi opens it; the mailbox otherwise), the
 * hosted rank handles with their lanes and traffic counters, the world
 * group; and the world's queries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/internal.h"
#include "comm/launch.h"

static void rank_init(hp_comm_rank *r, hp_comm_world *w, int rank) {
    memset(r, 0, sizeof *r);
    r->w = w;
    r->rank = rank;
    r->sn = rank / w->R;
    r->local = rank % w->R;
    pthread_mutex_init(&r->port_mu, NULL);
    atomic_init(&r->inter_bytes, 0);
    atomic_init(&r->inter_msgs, 0);
    atomic_init(&r->intra_bytes, 0);
    atomic_init(&r->intra_msgs, 0);
    atomic_init(&r->busy_ns, 0);
    atomic_init(&r->wait_ns, 0);
    hp_comm_progress_init(r);
}

static void rank_fini(hp_comm_rank *r) {
    hp_comm_progress_fini(r);
    pthread_mutex_destroy(&r->port_mu);
}

hp_status hp_comm_world_create(hp_comm_world **out, const hp_comm_opts *o) {
    *out = NULL;
    if (o->ranks_per_supernode < 1)
        return hp_errorf("comm options: ranks_per_supernode: %d is not >= 1", o->ranks_per_supernode);
    if (o->supernodes < 0) return hp_errorf("comm options: supernodes: %d is negative", o->supernodes);
    if (!(o->timeout_s > 0)) return hp_errorf("comm options: timeout_s: %g is not positive", o->timeout_s);
    if (o->inter_bw_gbps < 0 || o->inter_latency_us < 0)
        return hp_errorf("comm options: inter_bw_gbps / inter_latency_us must not be negative");
    if (o->a2a_fuse_bytes < 0)
        return hp_errorf("comm options: a2a_fuse_bytes: %lld is negative", (long long)o->a2a_fuse_bytes);
    int launched = hp_launch_mpi_processes() > 0;
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
    w->a2a_fuse_bytes = o->a2a_fuse_bytes;
    pthread_mutex_init(&w->mpi_mu, NULL);
    hp_comm_mbox_init(&w->mbox);
    atomic_init(&w->next_gid, 0);
    atomic_init(&w->failed, 0);
    atomic_init(&w->abandoned, 0);
    w->inter = use_mpi ? &hp_comm_transport_mpi : &hp_comm_transport_mbox;
    if (use_mpi) {
        hp_status st = w->inter->open(w);
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

void hp_comm_world_abandon(hp_comm_world *w) {
    atomic_store(&w->abandoned, 1);
    atomic_store(&w->failed, 1);
}

double hp_comm_timeout_s(const hp_comm_world *w) { return (double)w->timeout_ns / 1e9; }

void hp_comm_world_end_if_failed(hp_comm_world *w) {
    if (!w || !w->inter || !w->inter->abort || !atomic_load(&w->failed)) return;
    w->inter->abort(w);
}

void hp_comm_world_destroy(hp_comm_world *w) {
    if (!w) return;
    hp_comm_world_end_if_failed(w);
    if (atomic_load(&w->abandoned)) return; /* threads left running may still use it */
    hp_comm_group_destroy(w->world_group); /* gives its lanes back to the ranks */
    if (w->ranks)
        for (int i = 0; i < w->nhosted; i++) rank_fini(&w->ranks[i]);
    free(w->ranks);
    if (w->use_mpi && w->inter->close) w->inter->close(w);
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

int64_t hp_comm_rank_wait_ns(const hp_comm_rank *r) {
    return (int64_t)atomic_load_explicit(&((hp_comm_rank *)r)->wait_ns, memory_order_relaxed);
}

int64_t hp_comm_rank_busy_ns(const hp_comm_rank *r) {
    return (int64_t)atomic_load_explicit(&((hp_comm_rank *)r)->busy_ns, memory_order_relaxed);
}

void hp_comm_rank_stats(const hp_comm_rank *r, int64_t *inter_bytes, int64_t *inter_msgs) {
    *inter_bytes = (int64_t)atomic_load_explicit(&r->inter_bytes, memory_order_relaxed);
    *inter_msgs = (int64_t)atomic_load_explicit(&r->inter_msgs, memory_order_relaxed);
}

void hp_comm_rank_tier_stats(const hp_comm_rank *r, int64_t bytes[2], int64_t msgs[2]) {
    bytes[0] = (int64_t)atomic_load_explicit(&r->intra_bytes, memory_order_relaxed);
    msgs[0] = (int64_t)atomic_load_explicit(&r->intra_msgs, memory_order_relaxed);
    bytes[1] = (int64_t)atomic_load_explicit(&r->inter_bytes, memory_order_relaxed);
    msgs[1] = (int64_t)atomic_load_explicit(&r->inter_msgs, memory_order_relaxed);
}

void hp_comm_rank_reset_stats(hp_comm_rank *r) {
    atomic_store_explicit(&r->inter_bytes, 0, memory_order_relaxed);
    atomic_store_explicit(&r->inter_msgs, 0, memory_order_relaxed);
    atomic_store_explicit(&r->intra_bytes, 0, memory_order_relaxed);
    atomic_store_explicit(&r->intra_msgs, 0, memory_order_relaxed);
    atomic_store_explicit(&r->busy_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&r->wait_ns, 0, memory_order_relaxed);
}

hp_comm_group *hp_comm_world_group(hp_comm_world *w) { return w->world_group; }
