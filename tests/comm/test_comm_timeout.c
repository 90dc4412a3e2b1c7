/* A rank that stops answering does not hang the others: with a short timeout
 * every surviving rank gets an error naming the collective, the group and the
 * missing rank, and the group then refuses further calls at once. Covers the
 * thread tier (a missing peer at the supernode barrier) and the emulated
 * inter-supernode tier (a missing peer in another supernode), for calls run
 * on the rank's thread and for calls started on its lanes. */
#include <pthread.h>

#include "comm/comm.h"
#include "testutil.h"

typedef struct {
    hp_comm_world *w;
    int rank, absent;
    hp_comm_kind kind;
    int async; /* the call is started (hp_comm_start) and waited */
    char msg[512], msg2[512];
    int ok;
} job;

static void *rank_main(void *arg) {
    job *j = arg;
    if (j->rank == j->absent || (j->absent < 0 && j->rank >= -j->absent)) return NULL; /* never shows up */
    hp_comm_rank *r = hp_comm_world_rank(j->w, j->rank);
    hp_comm_group *g = hp_comm_world_group(j->w);
    float buf[64] = {0}, out[64 * 8];
    hp_comm_tensor t = {out, buf, 8};
    hp_comm_args a = {.kind = j->kind, .dtype = HP_F32, .op = HP_COMM_SUM, .t = &t, .nt = 1};
    if (j->kind == HP_COMM_ALL_REDUCE) t.recv = buf;
    hp_status st;
    if (j->async) {
        hp_comm_req *q = NULL;
        st = hp_comm_start(&q, r, g, &a);
        if (!st) st = hp_comm_wait(q);
    } else {
        st = hp_comm_run(r, g, &a);
    }
    j->ok = st == HP_OK;
    snprintf(j->msg, sizeof j->msg, "%s", hp_status_msg(st));
    hp_status_free(st);
    st = hp_comm_barrier(r, g);
    snprintf(j->msg2, sizeof j->msg2, "%s", hp_status_msg(st));
    hp_status_free(st);
    return NULL;
}

static void scenario(int S, int R, int absent, hp_comm_kind kind, const char *kname, int async) {
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.ranks_per_supernode = R;
    o.supernodes = S;
    o.mpi = 0;
    o.timeout_s = 1.0;
    hp_comm_world *w;
    CHECK_OK(hp_comm_world_create(&w, &o));
    if (!w) return;
    int n = S * R;
    pthread_t th[8];
    job jobs[8];
    char want[64];
    snprintf(want, sizeof want, "rank %d", absent);
    for (int i = 0; i < n; i++) {
        jobs[i] = (job){w, i, absent, kind, async, "", "", 0};
        pthread_create(&th[i], NULL, rank_main, &jobs[i]);
    }
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < n; i++) {
        if (i == absent) continue;
        job *j = &jobs[i];
        CHECK(!j->ok);
        CHECK(strstr(j->msg, kname) != NULL);
        CHECK(strstr(j->msg, "group 'world'") != NULL);
        CHECK(strstr(j->msg, "timed out") != NULL);
        CHECK(strstr(j->msg, want) != NULL);
        CHECK(strstr(j->msg2, "broken") != NULL);
        if (!strstr(j->msg, want) || !strstr(j->msg, kname))
            fprintf(stderr, "S=%d R=%d rank %d%s: unexpected error: %s\n", S, R, i, async ? " (started)" : "", j->msg);
    }
    hp_comm_world_destroy(w);
}

/* A whole supernode missing (as a process stopped with kill -STOP): every
 * survivor's error names one of its ranks and the supernode, never a rank of
 * the survivor's own supernode that waits on it across the link (issue 22,
 * item 7: the supernode barrier's waiter used to time out first, naming the
 * leader stuck in its link wait). */
static void supernode_gone(hp_comm_kind kind, const char *kname) {
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.ranks_per_supernode = 2;
    o.supernodes = 2;
    o.mpi = 0;
    o.timeout_s = 1.0;
    hp_comm_world *w;
    CHECK_OK(hp_comm_world_create(&w, &o));
    if (!w) return;
    pthread_t th[4];
    job jobs[4];
    for (int i = 0; i < 2; i++) {
        jobs[i] = (job){w, i, -2, kind, 0, "", "", 0};
        pthread_create(&th[i], NULL, rank_main, &jobs[i]);
    }
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        job *j = &jobs[i];
        int named = strstr(j->msg, "waiting for rank 2 (supernode 1)") || strstr(j->msg, "waiting for rank 3 (supernode 1)");
        CHECK(!j->ok);
        CHECK(strstr(j->msg, kname) != NULL);
        CHECK(named);
        if (!named) fprintf(stderr, "%s, supernode 1 gone, rank %d: %s\n", kname, i, j->msg);
    }
    hp_comm_world_destroy(w);
}

int main(void) {
    supernode_gone(HP_COMM_BARRIER, "barrier");
    supernode_gone(HP_COMM_ALL_REDUCE, "all_reduce");
    supernode_gone(HP_COMM_ALL_GATHER, "all_gather");
    supernode_gone(HP_COMM_REDUCE_SCATTER, "reduce_scatter");
    scenario(1, 3, 2, HP_COMM_ALL_REDUCE, "all_reduce", 0);       /* thread tier */
    scenario(1, 2, 0, HP_COMM_ALL_GATHER, "all_gather", 0);
    scenario(2, 1, 1, HP_COMM_ALL_GATHER, "all_gather", 0);       /* across supernodes */
    scenario(2, 2, 3, HP_COMM_REDUCE_SCATTER, "reduce_scatter", 0); /* both tiers */
    scenario(2, 2, 3, HP_COMM_ALL_REDUCE, "all_reduce", 0);
    /* started calls (run on the rank's lanes) report the same */
    scenario(1, 3, 2, HP_COMM_ALL_REDUCE, "all_reduce", 1);
    scenario(2, 1, 1, HP_COMM_ALL_GATHER, "all_gather", 1);
    scenario(2, 2, 3, HP_COMM_REDUCE_SCATTER, "reduce_scatter", 1);
    return hp_test_finish("test_comm_timeout");
}
