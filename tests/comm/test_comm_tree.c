/* hp_comm_args.tree (the deterministic mode's order): an all-reduce and a
 * reduce-scatter with tree = 1 give, bit for bit, the binary tree over the
 * group's members ((m0+m1)+(m2+m3))... computed here, on 1 x 2, 1 x 4 and
 * 1 x 8 rank-threads and on 2 x 2, 2 x 4 and 4 x 2 emulated supernodes (where
 * the local trees then the supernode tree must make the same tree), over
 * more than one summation block (BLK) and an uneven shard split; tree = 0
 * keeps the left-to-right order, which differs from the tree on these values
 * (so the check can tell them apart). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "testutil.h"

#define N 2600 /* elements: more than two blocks of the sums */

/* Member m's value at i: wide exponents, so that the order of the sums shows. */
static float val(int m, int64_t i) {
    hp_test_rng r = {0x9e3779b97f4a7c15ULL ^ ((unsigned long long)(m + 1) << 32) ^ (unsigned long long)(i + 7)};
    for (int k = 0; k < 3; k++) hp_test_uniform(&r);
    double u = hp_test_uniform(&r) - 0.5, e = floor(hp_test_uniform(&r) * 20) - 10;
    return (float)ldexp(u, (int)e);
}

/* The tree over members [lo, hi) (hi - lo a power of two). */
static float tree(int lo, int hi, int64_t i) {
    if (hi - lo == 1) return val(lo, i);
    int mid = lo + (hi - lo) / 2;
    return tree(lo, mid, i) + tree(mid, hi, i);
}

static float left_to_right(int n, int64_t i) {
    float s = val(0, i);
    for (int m = 1; m < n; m++) s += val(m, i);
    return s;
}

typedef struct {
    hp_comm_world *w;
    int rank, n, tree;
    float *ar, *rs; /* outputs: all-reduce [N], reduce-scatter shard */
    int64_t counts[16];
} job;

static void *rank_main(void *arg) {
    job *j = arg;
    hp_comm_rank *r = hp_comm_world_rank(j->w, j->rank);
    hp_comm_group *g = hp_comm_world_group(j->w);
    float *in = malloc(sizeof(float) * N);
    for (int64_t i = 0; i < N; i++) in[i] = val(j->rank, i);
    hp_comm_tensor t = {j->ar, in, N};
    hp_comm_args a = {.kind = HP_COMM_ALL_REDUCE, .dtype = HP_F32, .op = HP_COMM_SUM, .t = &t, .nt = 1, .tree = j->tree};
    CHECK_OK(hp_comm_run(r, g, &a));
    hp_comm_tensor ts = {j->rs, in, 0};
    hp_comm_args b = {.kind = HP_COMM_REDUCE_SCATTER, .dtype = HP_F32, .op = HP_COMM_SUM, .t = &ts, .nt = 1,
                      .counts = j->counts, .tree = j->tree};
    CHECK_OK(hp_comm_run(r, g, &b));
    free(in);
    return NULL;
}

/* Runs both collectives on S x R ranks; returns how many elements differ from the tree. */
static long run(int S, int R, int use_tree) {
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.ranks_per_supernode = R, o.supernodes = S, o.mpi = 0, o.timeout_s = 120;
    hp_comm_world *w = NULL;
    CHECK_OK(hp_comm_world_create(&w, &o));
    if (!w) return -1;
    int n = S * R;
    job jobs[16];
    pthread_t th[16];
    int64_t counts[16], off[17] = {0};
    for (int m = 0; m < n; m++) counts[m] = N / n + (m % 3 == 1 ? 5 : m % 3 == 2 ? -5 : 0); /* uneven */
    counts[n - 1] = N;
    for (int m = 0; m < n - 1; m++) counts[n - 1] -= counts[m];
    for (int m = 0; m < n; m++) off[m + 1] = off[m] + counts[m];
    for (int m = 0; m < n; m++) {
        jobs[m] = (job){.w = w, .rank = m, .n = n, .tree = use_tree, .ar = calloc(N, sizeof(float)),
                        .rs = calloc((size_t)counts[m] + 1, sizeof(float))};
        memcpy(jobs[m].counts, counts, sizeof counts);
        pthread_create(&th[m], NULL, rank_main, &jobs[m]);
    }
    for (int m = 0; m < n; m++) pthread_join(th[m], NULL);
    long differ = 0;
    for (int m = 0; m < n; m++) {
        for (int64_t i = 0; i < N; i++) {
            float want = use_tree ? tree(0, n, i) : left_to_right(n, i);
            CHECKF(memcmp(&jobs[m].ar[i], &want, 4) == 0, "%d x %d tree %d: all-reduce rank %d [%lld] %.9g, want %.9g",
                   S, R, use_tree, m, (long long)i, (double)jobs[m].ar[i], (double)want);
            if (tree(0, n, i) != jobs[m].ar[i]) differ++;
        }
        for (int64_t i = 0; i < counts[m]; i++) {
            float want = use_tree ? tree(0, n, off[m] + i) : left_to_right(n, off[m] + i);
            CHECKF(memcmp(&jobs[m].rs[i], &want, 4) == 0, "%d x %d tree %d: reduce-scatter rank %d [%lld] %.9g, want %.9g",
                   S, R, use_tree, m, (long long)i, (double)jobs[m].rs[i], (double)want);
        }
        free(jobs[m].ar), free(jobs[m].rs);
    }
    hp_comm_world_destroy(w);
    printf("%d x %d, tree %d: %ld of %d all-reduce elements differ from the tree\n", S, R, use_tree, differ / n, N);
    return differ;
}

int main(void) {
    int cfg[][2] = {{1, 2}, {1, 4}, {1, 8}, {2, 2}, {2, 4}, {4, 2}};
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) CHECK(run(cfg[c][0], cfg[c][1], 1) == 0);
    /* left to right on one supernode: a different order, seen on these values */
    CHECK(run(1, 4, 0) > 0);
    CHECK(run(1, 8, 0) > 0);
    return hp_test_finish("test_comm_tree");
}
