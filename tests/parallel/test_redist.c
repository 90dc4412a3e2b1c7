/* Redistribution round trips on a threads-only comm world (one thread per
 * rank): every pair of layouts built from per-axis placements {R, S(0), S(1),
 * P(sum), P(avg), P(max)} on meshes of 2 and 3 ranks and 2 x 2 (both axes may
 * shard the same dim), for global shapes [5, 7] (uneven, empty shards on 3
 * ranks) and [4, 6]; and {R, S(0), S(1), S(2), P(sum)} for [3, 5, 4] on 2 x 2
 * and [5, 3] on 2 x 3 and (a quarter of the pairs) 2 x 2 x 2; a scalar with {R, P(sum), P(avg), P(max)}. Each rank builds its piece of `from` from an
 * integer-valued reference (Partial: per-rank terms that combine exactly), runs
 * the plan, and rank 0 checks every rank's piece of `to`: shards and replicas
 * equal the reference, Partial terms combine to it exactly. Also the mesh comm
 * groups and the error messages. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "layout/redist.h"
#include "parallel/mesh_comm.h"
#include "parallel/redistribute.h"
#include "testutil.h"

#define MAX_RANKS 8
#define MAX_LAYOUTS 64
#define SENTINEL 777.0f
#define GUARD 8

typedef struct {
    hp_mesh m;
    hp_comm_world *w;
    hp_mesh_comm *mc;
    hp_shape shape;
    hp_layout lay[MAX_LAYOUTS];
    int nlay;
    int stride; /* every stride-th target layout (keeps the 8-rank case fast) */
    float *dst[MAX_RANKS]; /* each rank's output piece, read by rank 0 after a barrier */
    atomic_int fails;
    atomic_int pairs;
} suite;

typedef struct {
    suite *s;
    int rank;
} job;

static float ref_val(int64_t i) { return (float)((i * 7 + 3) % 19) - 9.0f; }

/* Rank `me` of n's term of value x for a Partial(op) on axis a (element idx):
 * the n terms sum / average / max to x exactly and depend only on (idx, a, me)
 * beyond x, so nested splits keep every intermediate reduction an integer. */
static float split(float x, hp_partial_op op, int n, int me, int64_t idx, int a) {
    switch (op) {
    case HP_PARTIAL_SUM: {
        if (me != 0) return (float)((idx * 3 + a * 5 + me) % 5) - 2.0f;
        float rest = 0;
        for (int j = 1; j < n; j++) rest += (float)((idx * 3 + a * 5 + j) % 5) - 2.0f;
        return x - rest;
    }
    case HP_PARTIAL_AVG: return x + (float)((2 * me - (n - 1)) * (1 + (idx + a) % 3));
    case HP_PARTIAL_MAX: return me == (int)((idx + a) % n) ? x : x - (float)(1 + idx % 4);
    }
    return x;
}

static int64_t linear(const hp_shape *s, const int64_t *ix) {
    int64_t l = 0;
    for (int d = 0; d < s->ndim; d++) l = l * s->d[d] + ix[d];
    return l;
}

/* Local multi-index from a flat local position. */
static void unflatten(int64_t *ix, const hp_shape *s, int64_t p) {
    for (int d = s->ndim - 1; d >= 0; d--) {
        ix[d] = s->d[d] ? p % s->d[d] : 0;
        p = s->d[d] ? p / s->d[d] : 0;
    }
}

static void build_piece(float *out, const hp_shape *g, const hp_layout *l, const hp_mesh *m, int rank) {
    hp_shape ls;
    int64_t off[HP_MAX_DIMS];
    hp_local_shape(&ls, off, g, l, m, rank);
    int coord[HP_MESH_MAX_DIMS];
    hp_mesh_coords(coord, m, rank);
    int64_t n = hp_shape_numel(&ls);
    for (int64_t p = 0; p < n; p++) {
        int64_t ix[HP_MAX_DIMS];
        unflatten(ix, &ls, p);
        for (int d = 0; d < g->ndim; d++) ix[d] += off[d];
        int64_t gi = linear(g, ix);
        float x = ref_val(gi);
        for (int a = 0; a < m->ndim; a++)
            if (l->p[a].kind == HP_PARTIAL) x = split(x, l->p[a].op, m->size[a], coord[a], gi, a);
        out[p] = x;
    }
}

/* Rank 0: checks every rank's piece of `to` against the reference. */
static int check_all(suite *s, const hp_layout *to, const char *what) {
    const hp_mesh *m = &s->m;
    int R = hp_mesh_size(m), npart = 1, avg_div = 1, is_max = 0;
    for (int a = 0; a < m->ndim; a++)
        if (to->p[a].kind == HP_PARTIAL) {
            npart *= m->size[a];
            if (to->p[a].op == HP_PARTIAL_AVG) avg_div *= m->size[a];
            if (to->p[a].op == HP_PARTIAL_MAX) is_max = 1;
        }
    hp_shape ls[MAX_RANKS];
    int64_t off[MAX_RANKS][HP_MAX_DIMS];
    for (int r = 0; r < R; r++) {
        hp_local_shape(&ls[r], off[r], &s->shape, to, m, r);
        int64_t n = hp_shape_numel(&ls[r]);
        for (int k = 0; k < GUARD; k++)
            if (s->dst[r][n + k] != SENTINEL) {
                fprintf(stderr, "%s: rank %d wrote past its piece of %lld\n", what, r, (long long)n);
                return 1;
            }
    }
    int64_t N = hp_shape_numel(&s->shape);
    for (int64_t gi = 0; gi < N; gi++) {
        int64_t ix[HP_MAX_DIMS];
        unflatten(ix, &s->shape, gi);
        float term[MAX_RANKS];
        int seen[MAX_RANKS] = {0};
        for (int r = 0; r < R; r++) {
            int64_t lx[HP_MAX_DIMS];
            int inside = 1;
            for (int d = 0; d < s->shape.ndim; d++) {
                lx[d] = ix[d] - off[r][d];
                if (lx[d] < 0 || lx[d] >= ls[r].d[d]) inside = 0;
            }
            if (!inside) continue;
            float v = s->dst[r][linear(&ls[r], lx)];
            int coord[HP_MESH_MAX_DIMS], key = 0;
            hp_mesh_coords(coord, m, r);
            for (int a = 0; a < m->ndim; a++)
                if (to->p[a].kind == HP_PARTIAL) key = key * m->size[a] + coord[a];
            if (seen[key] && term[key] != v) {
                fprintf(stderr, "%s: element %lld: replicas differ (rank %d has %g, another %g)\n", what,
                        (long long)gi, r, v, term[key]);
                return 1;
            }
            seen[key] = 1;
            term[key] = v;
        }
        float acc = 0;
        for (int k = 0; k < npart; k++) {
            if (!seen[k]) {
                fprintf(stderr, "%s: element %lld held by no rank of partial group %d\n", what, (long long)gi, k);
                return 1;
            }
            acc = is_max ? (k == 0 || term[k] > acc ? term[k] : acc) : acc + term[k];
        }
        float want = ref_val(gi) * (float)(is_max ? 1 : avg_div);
        if (acc != want) {
            fprintf(stderr, "%s: element %lld combines to %g, want %g\n", what, (long long)gi, acc, want);
            return 1;
        }
    }
    return 0;
}

static void *rank_main(void *arg) {
    job *j = arg;
    suite *s = j->s;
    const hp_mesh *m = &s->m;
    hp_comm_world *w = s->w;
    hp_comm_rank *r = hp_comm_world_rank(w, j->rank);
    hp_comm_group *world = hp_comm_world_group(w);
    int64_t N = hp_shape_numel(&s->shape);
    /* buffers sized once for the largest case (a full tensor) */
    size_t scratch_n = 0;
    for (int f = 0; f < s->nlay; f++)
        for (int t = 0; t < s->nlay; t++) {
            hp_redist p;
            hp_status st = hp_redist_plan(&p, &s->shape, &s->lay[f], &s->lay[t], m);
            if (st) {
                hp_status_free(st);
                continue;
            }
            size_t k = hp_redistribute_scratch(&p, m);
            if (k > scratch_n) scratch_n = k;
        }
    float *src = malloc((size_t)N * sizeof(float)), *scratch = malloc((scratch_n + 1) * sizeof(float));
    float *dst = s->dst[j->rank];
    for (int f = 0; f < s->nlay; f++) {
        for (int t = f % s->stride; t < s->nlay; t += s->stride) {
            const hp_layout *from = &s->lay[f], *to = &s->lay[t];
            char a[96], b[96], what[256], steps[512];
            snprintf(what, sizeof what, "[%s] %s -> %s", hp_mesh_str(steps, sizeof steps, m),
                     hp_layout_str(a, sizeof a, from, m), hp_layout_str(b, sizeof b, to, m));
            hp_redist p;
            hp_status st = hp_redist_plan(&p, &s->shape, from, to, m);
            if (st) {
                fprintf(stderr, "%s: plan failed: %s\n", what, hp_status_msg(st));
                hp_status_free(st);
                atomic_fetch_add(&s->fails, 1);
                continue; /* every rank fails the same way */
            }
            build_piece(src, &s->shape, from, m, j->rank);
            for (int64_t i = 0; i < N + GUARD; i++) dst[i] = SENTINEL;
            st = hp_redistribute(r, s->mc, &p, dst, src, scratch, j->rank);
            if (st) {
                fprintf(stderr, "%s: rank %d: %s\n", what, j->rank, hp_status_msg(st));
                hp_status_free(st);
                atomic_fetch_add(&s->fails, 1);
            }
            hp_status b1 = hp_comm_barrier(r, world);
            if (j->rank == 0 && check_all(s, to, what)) {
                fprintf(stderr, "  plan: %s\n", hp_redist_str(steps, sizeof steps, &p));
                atomic_fetch_add(&s->fails, 1);
            }
            if (j->rank == 0) atomic_fetch_add(&s->pairs, 1);
            hp_status b2 = hp_comm_barrier(r, world);
            if (b1 || b2) {
                atomic_fetch_add(&s->fails, 1);
                hp_status_free(b1);
                hp_status_free(b2);
            }
        }
    }
    free(src);
    free(scratch);
    return NULL;
}

/* All layouts with per-axis placements from pl[0..npl) (no P(max) mixed with
 * P(sum)/P(avg), which the planner rejects). */
static int enumerate(hp_layout *out, const hp_mesh *m, const hp_placement *pl, int npl) {
    int total = 1, n = 0;
    for (int a = 0; a < m->ndim; a++) total *= npl;
    for (int c = 0; c < total; c++) {
        hp_layout l = hp_layout_replicated(m);
        int x = c, mx = 0, lin = 0;
        for (int a = 0; a < m->ndim; a++) {
            l.p[a] = pl[x % npl];
            x /= npl;
            if (l.p[a].kind == HP_PARTIAL) {
                if (l.p[a].op == HP_PARTIAL_MAX) mx = 1;
                else lin = 1;
            }
        }
        if (mx && lin) continue;
        HP_ASSERT(n < MAX_LAYOUTS);
        out[n++] = l;
    }
    return n;
}

static void run_suite(const char *mesh, const hp_shape *shape, const hp_placement *pl, int npl, int stride) {
    suite *s = calloc(1, sizeof *s);
    CHECK_OK(hp_mesh_parse(&s->m, mesh));
    int R = hp_mesh_size(&s->m);
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.ranks_per_supernode = R;
    o.mpi = 0;
    o.timeout_s = 60;
    CHECK_OK(hp_comm_world_create(&s->w, &o));
    if (!s->w) {
        free(s);
        return;
    }
    CHECK_OK(hp_mesh_comm_create(&s->mc, s->w, &s->m));
    s->shape = *shape;
    s->nlay = enumerate(s->lay, &s->m, pl, npl);
    s->stride = stride;
    int64_t N = hp_shape_numel(shape);
    for (int r = 0; r < R; r++) s->dst[r] = malloc((size_t)(N + GUARD) * sizeof(float));
    pthread_t th[MAX_RANKS];
    job jobs[MAX_RANKS];
    for (int r = 0; r < R; r++) {
        jobs[r] = (job){s, r};
        pthread_create(&th[r], NULL, rank_main, &jobs[r]);
    }
    for (int r = 0; r < R; r++) pthread_join(th[r], NULL);
    int f = atomic_load(&s->fails), np = atomic_load(&s->pairs);
    char sh[64];
    if (f) fprintf(stderr, "mesh %s shape %s: %d failures\n", mesh, hp_shape_str(sh, sizeof sh, shape), f);
    hp_test_failures += f;
    int want = 0;
    for (int fi = 0; fi < s->nlay; fi++)
        for (int t = fi % stride; t < s->nlay; t += stride) want++;
    CHECK(np == want);
    for (int r = 0; r < R; r++) free(s->dst[r]);
    hp_mesh_comm_destroy(s->mc);
    hp_comm_world_destroy(s->w);
    free(s);
}

/* The mesh comm groups of a 2 x 3 mesh, and the errors. */
static void test_mesh_comm(void) {
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.ranks_per_supernode = 3;
    o.mpi = 0;
    o.timeout_s = 60;
    hp_comm_world *w = NULL;
    CHECK_OK(hp_comm_world_create(&w, &o));
    if (!w) return;
    hp_mesh m;
    CHECK_OK(hp_mesh_parse(&m, "dp=2,tp=2"));
    hp_mesh_comm *mc = NULL;
    hp_status st = hp_mesh_comm_create(&mc, w, &m);
    CHECK(st && !strcmp(hp_status_msg(st), "mesh 'dp=2,tp=2' has 4 ranks but the world has 3"));
    hp_status_free(st);
    CHECK(mc == NULL);
    CHECK_OK(hp_mesh_parse(&m, "a=1,b=3"));
    CHECK_OK(hp_mesh_comm_create(&mc, w, &m));
    if (mc) {
        for (int r = 0; r < 3; r++) {
            hp_comm_group *ga = hp_mesh_comm_group(mc, 0, r), *gb = hp_mesh_comm_group(mc, 1, r);
            CHECK(ga && hp_comm_group_size(ga) == 1 && hp_comm_group_index(ga, r) == 0);
            CHECK(gb && hp_comm_group_size(gb) == 3 && hp_comm_group_index(gb, r) == r);
        }
        CHECK(!strcmp(hp_comm_group_name(hp_mesh_comm_group(mc, 1, 2)), "b[0,1,2]"));
        CHECK(!strcmp(hp_comm_group_name(hp_mesh_comm_group(mc, 0, 2)), "a[2]"));
        CHECK(hp_mesh_comm_group(mc, 2, 0) == NULL && hp_mesh_comm_group(mc, 0, 3) == NULL);
        /* a plan for another mesh, and a rank that is not the handle's */
        hp_mesh other;
        CHECK_OK(hp_mesh_parse(&other, "x=3"));
        hp_layout l = hp_layout_replicated(&other);
        hp_shape sh = hp_shape1(4);
        hp_redist p;
        CHECK_OK(hp_redist_plan(&p, &sh, &l, &l, &other));
        float a[4] = {0}, b[4] = {0}, scr[64];
        CHECK_ERR(hp_redistribute(hp_comm_world_rank(w, 0), mc, &p, a, b, scr, 0), "plan is for mesh 'x=3'");
        hp_layout lm = hp_layout_replicated(&m);
        CHECK_OK(hp_redist_plan(&p, &sh, &lm, &lm, &m));
        CHECK_ERR(hp_redistribute(hp_comm_world_rank(w, 0), mc, &p, a, b, scr, 1), "rank argument 1");
        hp_mesh_comm_destroy(mc);
    }
    /* groups of a 2 x 3 mesh on 6 ranks */
    hp_comm_world_destroy(w);
    o.ranks_per_supernode = 6;
    CHECK_OK(hp_comm_world_create(&w, &o));
    if (!w) return;
    CHECK_OK(hp_mesh_parse(&m, "dp=2,tp=3"));
    CHECK_OK(hp_mesh_comm_create(&mc, w, &m));
    if (mc) {
        CHECK(!strcmp(hp_comm_group_name(hp_mesh_comm_group(mc, 0, 4)), "dp[1,4]"));
        CHECK(!strcmp(hp_comm_group_name(hp_mesh_comm_group(mc, 1, 4)), "tp[3,4,5]"));
        CHECK(hp_mesh_comm_group(mc, 1, 4) == hp_mesh_comm_group(mc, 1, 5));
        CHECK(hp_mesh_comm_group(mc, 1, 4) != hp_mesh_comm_group(mc, 1, 0));
        CHECK(hp_comm_group_index(hp_mesh_comm_group(mc, 0, 4), 4) == 1);
        hp_mesh_comm_destroy(mc);
    }
    hp_comm_world_destroy(w);
}

int main(void) {
    test_mesh_comm();
    const hp_placement six[] = {hp_replicate(),           hp_shard(0), hp_shard(1), hp_partial(HP_PARTIAL_SUM),
                                hp_partial(HP_PARTIAL_AVG), hp_partial(HP_PARTIAL_MAX)};
    const hp_placement five3[] = {hp_replicate(), hp_shard(0), hp_shard(1), hp_shard(2),
                                  hp_partial(HP_PARTIAL_SUM)};
    const hp_placement four[] = {hp_replicate(), hp_shard(0), hp_shard(1), hp_partial(HP_PARTIAL_SUM)};
    const hp_shape shapes[] = {hp_shape2(5, 7), hp_shape2(4, 6)};
    const char *meshes[] = {"x=2", "x=3", "dp=2,tp=2"};
    for (int mi = 0; mi < 3; mi++)
        for (int si = 0; si < 2; si++) run_suite(meshes[mi], &shapes[si], six, 6, 1);
    hp_shape s3 = hp_shape3(3, 5, 4);
    run_suite("dp=2,tp=2", &s3, five3, 5, 1);
    hp_shape s2 = hp_shape2(5, 3); /* 3 rows split 2 then 3: empty pieces at both levels */
    run_suite("dp=2,tp=3", &s2, four, 4, 1);
    hp_shape s53 = hp_shape2(5, 3); /* three axes: nesting three deep */
    run_suite("a=2,b=2,c=2", &s53, four, 4, 4); /* a quarter of the pairs */
    hp_shape s0; /* a scalar: only Replicate and Partial */
    memset(&s0, 0, sizeof s0);
    const hp_placement rp[] = {hp_replicate(), hp_partial(HP_PARTIAL_SUM), hp_partial(HP_PARTIAL_AVG),
                               hp_partial(HP_PARTIAL_MAX)};
    run_suite("dp=2,tp=2", &s0, rp, 4, 1);
    return hp_test_finish("test_redist");
}
