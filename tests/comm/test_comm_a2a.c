/* The all-to-all's cross-supernode leg, direct (one message per rank pair)
 * and fused (one message per ordered pair of supernodes): the same bytes in
 * every receive buffer either way, checked element by element against what
 * each sender wrote (2- and 4-byte elements, variable counts with zeros: a
 * member that sends nothing to some peers, a member that receives nothing,
 * a call with no data at all), and nothing written past the data; the
 * messages each rank posts across supernodes counted (hp_comm_rank_stats)
 * against the rule (a pair fuses when its mean message per rank pair is
 * below --a2a-fuse-bytes; lone ranks never), at the threshold and one byte
 * above, with calls that mix fused pairs and direct ones (some of them
 * posted before the barrier, a member's own rows being over the bound); a count mismatch inside a supernode and across one (the total
 * kept, or not) is a one-line error, and the group's next calls are right; a prepare step still fills the
 * receive counts. On the link emulator: 2 supernodes x 2, 2 x 3 with an
 * uneven group (2 + 3 members), 3 supernodes x 2 and an uneven group of
 * them (1 + 2 + 1), 3 x 1 (never fused).
 *   test_comm_a2a                                  emulated supernodes
 *   mpirun -n 2 test_comm_a2a --ranks 2 [--a2a-fuse-bytes N]   across processes */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "testutil.h"

#define MAXR 16

/* Elements member f sends member t at scale s > 0: zeros for member 1 (receives nothing) and for some pairs;
 * s = 0: none; s < 0: -s to every member (the call then passes no counts, only the count). */
static int64_t len_of(int f, int t, int64_t s) {
    if (s < 0) return -s;
    if (t == 1 || (f * 7 + t * 3) % 5 == 0) return 0;
    return (1 + (f * 5 + t * 11) % 9) * s;
}

/* Byte b of element i from f to t. */
static unsigned char byte_of(int f, int t, int64_t i, int b) {
    uint32_t x = (uint32_t)(f * 131 + t * 17) * 0x9E3779B1u ^ (uint32_t)i * 0x85EBCA77u ^ (uint32_t)b * 0xC2B2AE3Du;
    x ^= x >> 15;
    return (unsigned char)(x * 0x2C1B3C6Du >> 24);
}

/* The group's topology as the comm layer orders it (supernode positions by id, members by index). */
typedef struct {
    int n, k, sn[MAXR], lidx[MAXR], L[MAXR];
} topo;

static void topo_of(topo *tp, hp_comm_world *w, const int *ranks, int n) {
    int ids[MAXR], nk = 0;
    tp->n = n;
    for (int m = 0; m < n; m++) {
        int s = hp_comm_supernode_of(w, ranks[m]), p = 0;
        while (p < nk && ids[p] != s) p++;
        if (p == nk) ids[nk++] = s;
    }
    for (int i = 0; i < nk; i++) /* ascending ids */
        for (int j = i + 1; j < nk; j++)
            if (ids[j] < ids[i]) {
                int x = ids[i];
                ids[i] = ids[j], ids[j] = x;
            }
    tp->k = nk;
    memset(tp->L, 0, sizeof tp->L);
    for (int m = 0; m < n; m++) {
        int s = hp_comm_supernode_of(w, ranks[m]), p = 0;
        while (ids[p] != s) p++;
        tp->sn[m] = p;
        tp->lidx[m] = tp->L[p]++;
    }
}

/* Messages member me posts across supernodes under the rule (threshold thr, element size esz). */
static int64_t expected_msgs(const topo *tp, int me, int64_t s, size_t esz, int64_t thr) {
    int shared = 0;
    for (int U = 0; U < tp->k; U++) shared |= tp->L[U] > 1;
    int T = tp->sn[me];
    int64_t msgs = 0;
    for (int U = 0; U < tp->k; U++) {
        if (U == T) continue;
        int64_t bytes = 0, pairs = (int64_t)tp->L[T] * tp->L[U];
        for (int f = 0; f < tp->n; f++)
            for (int t = 0; t < tp->n; t++)
                if (tp->sn[f] == T && tp->sn[t] == U) bytes += len_of(f, t, s) * (int64_t)esz;
        int fused = shared && thr > 0 && pairs > 1 && bytes / pairs < thr;
        msgs += fused ? (U % tp->L[T] == tp->lidx[me]) : tp->L[U];
    }
    return msgs;
}

typedef struct {
    const int64_t *got;
    int64_t *rc;
    int n, calls;
} prep;

static hp_status fill_counts(void *ctx) {
    prep *p = ctx;
    for (int k = 0; k < p->n; k++) p->rc[k] = p->got[k];
    p->calls++;
    return HP_OK;
}

/* One all-to-all at scale s (0: every count 0) in dtype dt, values and posted messages checked; `prepared`:
 * the receive counts come from a counts exchange before it, through the call's prepare step. */
static void a2a(hp_comm_rank *r, hp_comm_group *g, const topo *tp, int64_t s, hp_dtype dt, int64_t thr, int prepared,
                const char *cfg) {
    int n = hp_comm_group_size(g), me = hp_comm_group_index(g, hp_comm_rank_id(r));
    size_t esz = hp_dtype_size(dt);
    int64_t sc[MAXR], rc[MAXR], got[MAXR], so = 0, ro = 0;
    for (int k = 0; k < n; k++) {
        sc[k] = len_of(me, k, s), rc[k] = prepared ? -7 : len_of(k, me, s);
        so += sc[k], ro += len_of(k, me, s);
    }
    unsigned char *sb = malloc((size_t)so * esz + 1), *rb = malloc((size_t)ro * esz + 16);
    for (int k = 0, at = 0; k < n; k++)
        for (int64_t i = 0; i < sc[k]; i++, at++)
            for (size_t b = 0; b < esz; b++) sb[(size_t)at * esz + b] = byte_of(me, k, i, (int)b);
    memset(rb, 0xA5, (size_t)ro * esz + 16);
    if (prepared) {
        hp_comm_tensor tc = {got, sc, 2};
        hp_comm_args ac = {.kind = HP_COMM_ALL_TO_ALL, .dtype = HP_I32, .t = &tc, .nt = 1};
        CHECK_OK(hp_comm_run(r, g, &ac));
    }
    prep p = {got, rc, n, 0};
    hp_comm_tensor t = {rb, sb, 0};
    hp_comm_args a = {.kind = HP_COMM_ALL_TO_ALL, .dtype = dt, .t = &t, .nt = 1, .counts = sc, .recv_counts = rc};
    if (s < 0) t.count = -s, a.counts = a.recv_counts = NULL;
    if (prepared) a.prepare = fill_counts, a.prepare_ctx = &p;
    hp_comm_rank_reset_stats(r);
    CHECK_OK(hp_comm_run(r, g, &a));
    int64_t ib, msgs;
    hp_comm_rank_stats(r, &ib, &msgs);
    int64_t want = expected_msgs(tp, me, s, esz, thr);
    CHECKF(msgs == want, "%s: scale %lld, %zu-byte elements, threshold %lld: member %d posted %lld messages across, "
           "%lld expected", cfg, (long long)s, esz, (long long)thr, me, (long long)msgs, (long long)want);
    int bad = prepared && p.calls != 1;
    for (int k = 0, at = 0; k < n; k++)
        for (int64_t i = 0; i < len_of(k, me, s); i++, at++)
            for (size_t b = 0; b < esz; b++) bad += rb[(size_t)at * esz + b] != byte_of(k, me, i, (int)b);
    for (int b = 0; b < 16; b++) bad += rb[(size_t)ro * esz + (size_t)b] != 0xA5;
    CHECKF(!bad, "%s: scale %lld, %zu-byte elements, threshold %lld%s: member %d: %d wrong bytes of %lld", cfg,
           (long long)s, esz, (long long)thr, prepared ? ", prepared counts" : "", me, bad,
           (long long)ro * (long long)esz);
    free(sb), free(rb);
}

/* A call whose receive counts disagree with the senders': member `wrong` expects one element more from `from`
 * (and, with `keep`, one less from the next cross member, the total kept). Every member returns; the expecting
 * rank's (or, for a fused pair, the receiver's) error names it. */
static hp_status a2a_wrong(hp_comm_rank *r, hp_comm_group *g, int wrong, int from, int keep_with) {
    int n = hp_comm_group_size(g), me = hp_comm_group_index(g, hp_comm_rank_id(r));
    int64_t sc[MAXR], rc[MAXR], so = 0, ro = 0;
    for (int k = 0; k < n; k++) sc[k] = 2 + k + me, rc[k] = 2 + k + me, so += sc[k], ro += rc[k];
    if (me == wrong) rc[from]++, rc[keep_with >= 0 ? keep_with : from] -= keep_with >= 0;
    float *sb = calloc((size_t)so + 1, sizeof(float)), *rb = calloc((size_t)ro + 2, sizeof(float));
    hp_comm_tensor t = {rb, sb, 0};
    hp_comm_args a = {.kind = HP_COMM_ALL_TO_ALL, .dtype = HP_F32, .t = &t, .nt = 1, .counts = sc, .recv_counts = rc};
    hp_status st = hp_comm_run(r, g, &a);
    free(sb), free(rb);
    return st;
}

typedef struct {
    hp_comm_world *w;
    hp_comm_group *g;
    const topo *tp;
    int rank, mode; /* mode 0: values; 1, 2, 3: the mismatches */
    int64_t thr;
    const char *cfg;
    hp_status st;
} job;

static void *rank_main(void *arg) {
    job *j = arg;
    hp_comm_rank *r = hp_comm_world_rank(j->w, j->rank);
    if (hp_comm_group_index(j->g, j->rank) < 0) return NULL;
    if (j->mode == 1) { /* inside a supernode: member 1 expects one more from member 0 */
        j->st = a2a_wrong(r, j->g, 1, 0, -1);
        return NULL;
    }
    if (j->mode == 2) { /* across, the total kept: member 0 expects one more from member 2, one less from 3 */
        j->st = a2a_wrong(r, j->g, 0, 2, 3);
        return NULL;
    }
    if (j->mode == 3) { /* across, the total changed */
        j->st = a2a_wrong(r, j->g, 0, 2, -1);
        return NULL;
    }
    const int64_t scales[] = {1, 0, 4096, -3072};
    for (int i = 0; i < 4; i++) {
        a2a(r, j->g, j->tp, scales[i], HP_F32, j->thr, 0, j->cfg);
        a2a(r, j->g, j->tp, scales[i], HP_BF16, j->thr, 0, j->cfg);
    }
    a2a(r, j->g, j->tp, 3, HP_F32, j->thr, 1, j->cfg);
    CHECK_OK(hp_comm_barrier(r, j->g));
    return NULL;
}

/* Runs `mode` on every hosted rank of g; the statuses in st[rank - first]. */
static void run_all(hp_comm_world *w, hp_comm_group *g, int mode, int64_t thr, const char *cfg, hp_status *st) {
    int first = 0, count = 0, ranks[MAXR], n = hp_comm_group_size(g);
    hp_comm_hosted_ranks(w, &first, &count);
    topo tp;
    for (int m = 0; m < n; m++) {
        ranks[m] = -1;
        for (int x = 0; x < hp_comm_world_size(w); x++)
            if (hp_comm_group_index(g, x) == m) ranks[m] = x;
    }
    topo_of(&tp, w, ranks, n);
    pthread_t th[MAXR];
    job jobs[MAXR];
    for (int i = 0; i < count; i++) {
        jobs[i] = (job){w, g, &tp, first + i, mode, thr, cfg, HP_OK};
        pthread_create(&th[i], NULL, rank_main, &jobs[i]);
    }
    for (int i = 0; i < count; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < count; i++) {
        if (st) st[i] = jobs[i].st;
        else CHECK_OK(jobs[i].st);
    }
}

static hp_comm_world *make(int S, int R, int64_t thr) {
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.supernodes = S;
    o.ranks_per_supernode = R;
    o.mpi = 0;
    o.timeout_s = 60;
    o.a2a_fuse_bytes = thr;
    hp_comm_world *w = NULL;
    CHECK_OK(hp_comm_world_create(&w, &o));
    return w;
}

/* Values and message counts on S x R emulated supernodes, on the group of `ranks` (NULL: the world's), with the
 * cross leg direct, fused, and the threshold at and one byte above the mean of the equal-count call (3072 fp32
 * elements per pair: 12288 bytes). */
static void values(int S, int R, const int *ranks, int n, const char *cfg) {
    const int64_t thr[] = {0, (int64_t)1 << 40, 12288, 12289, HP_COMM_A2A_FUSE_BYTES_DEFAULT};
    for (int i = 0; i < 5; i++) {
        hp_comm_world *w = make(S, R, thr[i]);
        if (!w) return;
        hp_comm_group *g = hp_comm_world_group(w), *own = NULL;
        if (ranks) CHECK_OK(hp_comm_group_create(&own, w, ranks, n, "a2a_uneven"));
        if (ranks && !own) {
            hp_comm_world_destroy(w);
            return;
        }
        run_all(w, own ? own : g, 0, thr[i], cfg, NULL);
        if (own) hp_comm_group_destroy(own);
        hp_comm_world_destroy(w);
    }
    printf("comm a2a: %s: direct and fused, variable counts with zeros, 2- and 4-byte elements, prepared counts, "
           "messages per rank: checked\n", cfg);
}

/* The mismatches on 2 x 2 (members 0, 1 in supernode 0; 2, 3 in supernode 1), direct and fused. */
static void mismatches(void) {
    /* across supernodes a direct message's size tells the mismatch (as before fusion); a fused one's header */
    static const struct {
        int mode;
        const char *want[2]; /* direct, fused */
    } cases[] = {
        {1, {"all_to_all on group 'world' (rank 1): rank 0 sends 3 elements, 4 expected",
             "all_to_all on group 'world' (rank 1): rank 0 sends 3 elements, 4 expected"}},
        {2, {"all_to_all on group 'world' (rank 0): message from rank 2 has a different size than expected",
             "all_to_all on group 'world' (rank 0): rank 2 sends 4 elements, 5 expected"}},
        {3, {"all_to_all on group 'world' (rank 0): message from rank 2 has a different size than expected",
             "message from rank 2 has a different size than expected"}},
    };
    for (int fuse = 0; fuse < 2; fuse++)
        for (int c = 0; c < 3; c++) {
            hp_comm_world *w = make(2, 2, fuse ? (int64_t)1 << 40 : 0);
            if (!w) return;
            hp_status st[4] = {0};
            run_all(w, hp_comm_world_group(w), cases[c].mode, 0, "mismatch", st);
            int found = 0;
            for (int i = 0; i < 4; i++) {
                const char *m = st[i] ? hp_status_msg(st[i]) : "";
                found |= strstr(m, cases[c].want[fuse]) != NULL;
                CHECKF(!strchr(m, '\n'), "a mismatch's error is one line: %s", m);
                hp_status_free(st[i]);
            }
            CHECKF(found, "%s cross leg, mismatch case %d: no rank returned '%s'", fuse ? "fused" : "direct",
                   cases[c].mode, cases[c].want[fuse]);
            /* the group is not broken: the next calls give the right values */
            run_all(w, hp_comm_world_group(w), 0, fuse ? (int64_t)1 << 40 : 0, "after a mismatch", NULL);
            hp_comm_world_destroy(w);
        }
    printf("comm a2a: count mismatches inside and across supernodes, direct and fused: one-line errors, the group "
           "usable after them: checked\n");
}

int main(int argc, char **argv) {
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    for (int i = 1; i < argc; i++) {
        int used = 0;
        hp_status st = hp_comm_opts_parse(&o, argv[i], i + 1 < argc ? argv[i + 1] : NULL, &used);
        if (st || !used) {
            fprintf(stderr, "test_comm_a2a: bad argument '%s': %s\n", argv[i], st ? hp_status_msg(st) : "unknown");
            hp_status_free(st);
            return 2;
        }
        i++;
    }
    if (argc > 1) { /* under mpirun: the processes are the supernodes */
        o.timeout_s = 120;
        hp_comm_world *w = NULL;
        CHECK_OK(hp_comm_world_create(&w, &o));
        if (!w) return hp_test_finish("test_comm_a2a");
        char cfg[96];
        snprintf(cfg, sizeof cfg, "%s %d x %d, threshold %lld", hp_comm_uses_mpi(w) ? "MPI" : "threads",
                 hp_comm_supernodes(w), hp_comm_world_size(w) / hp_comm_supernodes(w), (long long)o.a2a_fuse_bytes);
        run_all(w, hp_comm_world_group(w), 0, o.a2a_fuse_bytes, cfg, NULL);
        printf("comm a2a: %s: variable counts with zeros, 2- and 4-byte elements, prepared counts, messages per "
               "rank: checked\n", cfg);
        hp_comm_world_destroy(w);
        return hp_test_finish("test_comm_a2a");
    }
    values(2, 2, NULL, 0, "emulated 2 x 2");
    const int uneven23[] = {0, 1, 3, 4, 5};
    values(2, 3, uneven23, 5, "emulated 2 x 3, group of 2 + 3");
    values(3, 2, NULL, 0, "emulated 3 x 2");
    const int uneven3[] = {1, 2, 3, 4};
    values(3, 2, uneven3, 4, "emulated 3 x 2, group of 1 + 2 + 1");
    values(3, 1, NULL, 0, "emulated 3 x 1");
    mismatches();
    return hp_test_finish("test_comm_a2a");
}
