/* parallel/holdings across processes: the compile's table of who holds
 * what, built where the ranks run. Under mpirun (tests.cmake: 2 processes x
 * 1 rank and x 2 ranks) each process compiles only the ranks it hosts, with
 * the supernode size the runtime gives the compile (runtime/dist), so FSDP
 * over ranks of two processes takes its transient units; the ranks' pieces
 * are then exchanged (an all-gather over the world: the comm room's
 * rank-threads and MPI) and every process checks the whole world's tables
 * for each plan of its world size (a small GPT-2, AdamW):
 *  - every rank of the world listed pieces;
 *  - for every parameter and state tensor, the distinct current pieces tile
 *    it exactly once, and so do the distinct loaded ones; each element is
 *    held by as many ranks as its piece names replicas (once per replica);
 *  - each piece's replicas are exactly the ranks that list the same piece,
 *    in ascending order, the rank itself among them.
 * Plans: 2 ranks: DP, TP, ZeRO-1, ZeRO-2, FSDP, FSDP2 style, FSDP with a
 * bf16 gather; 4 ranks: DP, DP x TP, ZeRO-1, ZeRO-2, FSDP, HSDP, FSDP x TP,
 * ZeRO-2 x TP. Run plainly it hosts every rank in one process: --ranks 1
 * (the default) checks one rank.
 *   test_holdings_mpi [--ranks R] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "models/gpt2_plan.h"
#include "parallel/compile.h"
#include "testutil.h"

enum { MAXW = 8 };

/* One piece as it travels: a fixed record, sent as floats. */
typedef struct {
    char name[HP_NAME_LEN];
    int32_t rank, ndim, current, loaded, nreplicas, pad;
    int32_t replicas[MAXW];
    int64_t shape[HP_MAX_DIMS], box[HP_MAX_DIMS], start[HP_MAX_DIMS], lo, hi;
} rec;
_Static_assert(sizeof(rec) % sizeof(float) == 0, "records travel as floats");
enum { REC_FLOATS = sizeof(rec) / sizeof(float) };

typedef struct {
    const char *what;
    int replicas, dp, tp;
    const char *settings; /* FSDP's, or NULL */
    int bf16;
} plan_case;

static const plan_case cases[] = {
    {"one rank", 1, 1, 1, NULL, 0},
    {"dp 2", 1, 2, 1, NULL, 0},
    {"tp 2", 1, 1, 2, NULL, 0},
    {"zero-1 over dp 2", 1, 2, 1, "shard=dp level=1", 0},
    {"zero-2 over dp 2", 1, 2, 1, "shard=dp level=2", 0},
    {"fsdp over dp 2", 1, 2, 1, "shard=dp level=3", 0},
    {"fsdp2 style over dp 2", 1, 2, 1, "shard=dp level=3 style=fsdp2", 0},
    {"bf16, fsdp gather=bf16 over dp 2", 1, 2, 1, "shard=dp level=3 gather=bf16", 1},
    {"dp 4", 1, 4, 1, NULL, 0},
    {"dp 2 x tp 2", 1, 2, 2, NULL, 0},
    {"zero-1 over dp 4", 1, 4, 1, "shard=dp level=1", 0},
    {"zero-2 over dp 4", 1, 4, 1, "shard=dp level=2", 0},
    {"fsdp over dp 4", 1, 4, 1, "shard=dp level=3", 0},
    {"hsdp 2 x 2", 2, 2, 1, "shard=dp replicate=rep", 0},
    {"fsdp 2 x tp 2", 1, 2, 2, "shard=dp level=3", 0},
    {"zero-2 2 x tp 2", 1, 2, 2, "shard=dp level=2", 0},
};

/* ---- the exchange: every hosted rank's records to every rank ---- */

typedef struct {
    hp_comm_world *w;
    int rank, n;
    const float *send;
    int64_t nsend;
    float *recv; /* out: every rank's records in rank order (malloc'd) */
    int64_t nrecv;
    hp_status st;
} gather_job;

static void *gather_main(void *arg) {
    gather_job *j = arg;
    hp_comm_rank *r = hp_comm_world_rank(j->w, j->rank);
    hp_comm_group *g = hp_comm_world_group(j->w);
    float mine = (float)j->nsend, all[MAXW];
    int64_t counts[MAXW];
    j->st = hp_comm_all_gather(r, g, all, &mine, 1, NULL, HP_F32);
    if (j->st) return NULL;
    j->nrecv = 0;
    for (int q = 0; q < j->n; q++) counts[q] = (int64_t)all[q], j->nrecv += counts[q];
    j->recv = malloc(sizeof(float) * (size_t)(j->nrecv ? j->nrecv : 1));
    if (!j->recv) {
        j->st = hp_errorf("rank %d: out of memory", j->rank);
        return NULL;
    }
    j->st = hp_comm_all_gather(r, g, j->recv, j->send, j->nsend, counts, HP_F32);
    return NULL;
}

/* ---- the checks, over the whole world's records ---- */

static int64_t global_index(const rec *p, int64_t e) {
    int64_t idx = 0, rest = e, coord[HP_MAX_DIMS];
    for (int d = p->ndim - 1; d >= 0; d--) coord[d] = rest % p->box[d], rest /= p->box[d];
    for (int d = 0; d < p->ndim; d++) idx = idx * p->shape[d] + p->start[d] + coord[d];
    return idx;
}

static int same_piece(const rec *a, const rec *b) {
    if (strcmp(a->name, b->name) || a->ndim != b->ndim || a->lo != b->lo || a->hi != b->hi ||
        a->current != b->current || a->loaded != b->loaded)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->box[d] != b->box[d] || a->start[d] != b->start[d]) return 0;
    return 1;
}

/* Tensor t's (the records' first of its name) pieces of one kind (which 0: current, 1: loaded). */
static void check_tiles(const rec *all, int64_t nall, const rec *t, int which) {
    int64_t numel = 1;
    for (int d = 0; d < t->ndim; d++) numel *= t->shape[d];
    unsigned char *once = calloc((size_t)numel, 1), *held = calloc((size_t)numel, 1), *want = calloc((size_t)numel, 1);
    CHECK(once && held && want);
    if (!once || !held || !want) return;
    for (int64_t i = 0; i < nall; i++) {
        const rec *p = &all[i];
        if (strcmp(p->name, t->name) || !(which ? p->loaded : p->current)) continue;
        CHECK(p->ndim == t->ndim && !memcmp(p->shape, t->shape, sizeof p->shape));
        int first = p->replicas[0] == p->rank; /* a distinct piece: counted at its first replica */
        for (int64_t e = p->lo; e < p->hi; e++) {
            int64_t x = global_index(p, e);
            once[x] += first;
            held[x]++;
            want[x] = (unsigned char)p->nreplicas;
        }
    }
    int64_t bad = 0, badrep = 0;
    for (int64_t e = 0; e < numel; e++) bad += once[e] != 1, badrep += held[e] != want[e];
    if (bad || badrep)
        printf("  '%s' (%s): %lld of %lld elements not held exactly once, %lld not once per replica\n", t->name,
               which ? "loaded" : "current", (long long)bad, (long long)numel, (long long)badrep);
    CHECK(bad == 0 && badrep == 0);
    free(once), free(held), free(want);
}

static void check_world(const rec *all, int64_t nall, int n) {
    int listed[MAXW] = {0};
    for (int64_t i = 0; i < nall; i++) {
        const rec *p = &all[i];
        CHECK(p->rank >= 0 && p->rank < n && p->nreplicas >= 1 && p->nreplicas <= n);
        if (p->rank < 0 || p->rank >= n || p->nreplicas < 1 || p->nreplicas > n) return;
        listed[p->rank]++;
        /* the replicas: ascending, this rank among them, each listing the same piece with the same replicas */
        int mine = 0;
        for (int j = 0; j < p->nreplicas; j++) {
            int q = p->replicas[j];
            CHECK(q >= 0 && q < n && (j == 0 || q > p->replicas[j - 1]));
            mine += q == p->rank;
        }
        CHECK(mine == 1);
        for (int q = 0; q < n; q++) {
            int in_list = 0, found = 0;
            for (int j = 0; j < p->nreplicas; j++) in_list |= p->replicas[j] == q;
            for (int64_t k = 0; k < nall; k++) {
                const rec *x = &all[k];
                if (x->rank != q || !same_piece(x, p)) continue;
                found++;
                CHECK(x->nreplicas == p->nreplicas &&
                      !memcmp(x->replicas, p->replicas, sizeof(int32_t) * (size_t)p->nreplicas));
            }
            CHECKF(found == in_list, "'%s' of rank %d: rank %d lists it %d times, replica %d", p->name, p->rank, q,
                   found, in_list);
        }
    }
    for (int q = 0; q < n; q++) CHECKF(listed[q] > 0, "rank %d listed no piece", q);
    /* each tensor once: at its first record */
    for (int64_t i = 0; i < nall; i++) {
        int first = 1;
        for (int64_t k = 0; k < i && first; k++) first = strcmp(all[k].name, all[i].name) != 0;
        if (!first) continue;
        check_tiles(all, nall, &all[i], 0);
        check_tiles(all, nall, &all[i], 1);
    }
}

/* ---- one plan ---- */

/* Rank r's records (malloc'd) from its compile. */
static rec *records_of(int64_t *nrec, const hp_compiled *c, int r) {
    const hp_holdings *h = &c->hold;
    rec *out = calloc((size_t)(h->npieces ? h->npieces : 1), sizeof *out);
    CHECK(out);
    if (!out) return NULL;
    for (int i = 0; i < h->npieces; i++) {
        const hp_holding *p = &h->pieces[i];
        const hp_held_tensor *t = &h->tensors[p->tensor];
        rec *o = &out[i];
        snprintf(o->name, sizeof o->name, "%s", t->name);
        o->rank = r, o->ndim = t->shape.ndim, o->current = p->current, o->loaded = p->loaded;
        o->nreplicas = p->nreplicas;
        CHECK(p->nreplicas <= MAXW);
        for (int j = 0; j < p->nreplicas && j < MAXW; j++) o->replicas[j] = h->replicas[p->first_replica + j];
        CHECK(p->box.ndim == t->shape.ndim);
        for (int d = 0; d < t->shape.ndim; d++)
            o->shape[d] = t->shape.d[d], o->box[d] = p->box.d[d], o->start[d] = p->start[d];
        o->lo = p->lo, o->hi = p->hi;
    }
    *nrec = h->npieces;
    return out;
}

static void check_case(hp_comm_world *w, const plan_case *pc, const hp_graph *model, const hp_compile_opts *base,
                       int print) {
    int n = hp_comm_world_size(w), first, count;
    hp_comm_hosted_ranks(w, &first, &count);
    hp_plan plan;
    int have_plan = n > 1;
    if (have_plan) {
        CHECK_OK(pc->replicas > 1 ? hp_plan_gpt2(&plan, pc->replicas, pc->dp, pc->tp)
                                  : hp_plan_gpt2_dp_tp(&plan, pc->dp, pc->tp));
        if (pc->settings) CHECK_OK(hp_plan_set_fsdp(&plan, pc->settings, "test"));
    }
    hp_compile_opts o = *base;
    if (pc->bf16) o.dtype = HP_BF16;
    /* as runtime/dist: the compile knows where the supernodes (processes) end */
    o.supernode_ranks = hp_comm_supernodes(w) > 1 ? hp_comm_ranks_per_supernode(w) : 0;
    gather_job jobs[MAXW];
    rec *mine[MAXW];
    pthread_t th[MAXW];
    memset(jobs, 0, sizeof jobs);
    int level = -1;
    for (int i = 0; i < count; i++) {
        hp_compiled c;
        hp_status cs = hp_compile(&c, model, have_plan ? &plan : NULL, first + i, &o);
        CHECK_OK(cs);
        mine[i] = NULL, jobs[i].nsend = 0;
        if (!cs) {
            level = c.fsdp.level;
            mine[i] = records_of(&jobs[i].nsend, &c, first + i);
            hp_compiled_free(&c);
        }
        jobs[i] = (gather_job){w, first + i, n, (const float *)mine[i], jobs[i].nsend * REC_FLOATS, NULL, 0, HP_OK};
    }
    for (int i = 0; i < count; i++) CHECK(pthread_create(&th[i], NULL, gather_main, &jobs[i]) == 0);
    for (int i = 0; i < count; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < count; i++) CHECK_OK(jobs[i].st);
    if (!jobs[0].st && jobs[0].recv) {
        int64_t nall = jobs[0].nrecv / REC_FLOATS;
        if (print) printf("%s (FSDP level %d): %lld pieces over %d ranks\n", pc->what, level, (long long)nall, n);
        check_world((const rec *)(void *)jobs[0].recv, nall, n);
        /* every hosted rank received the same */
        for (int i = 1; i < count; i++)
            CHECK(jobs[i].nrecv == jobs[0].nrecv &&
                  !memcmp(jobs[i].recv, jobs[0].recv, sizeof(float) * (size_t)jobs[0].nrecv));
    }
    for (int i = 0; i < count; i++) free(mine[i]), free(jobs[i].recv);
    if (have_plan) hp_plan_free(&plan);
}

int main(int argc, char **argv) {
    hp_comm_opts co;
    hp_comm_opts_default(&co);
    co.timeout_s = 120;
    for (int i = 1; i < argc; i++) {
        int used = 0;
        hp_status st = hp_comm_opts_parse(&co, argv[i], i + 1 < argc ? argv[i + 1] : NULL, &used);
        if (st || !used) {
            fprintf(stderr, "test_holdings_mpi: bad argument '%s': %s\n", argv[i], st ? hp_status_msg(st) : "unknown");
            hp_status_free(st);
            return 2;
        }
        i++;
    }
    hp_kernels_init();
    hp_comm_world *w;
    hp_status st = hp_comm_world_create(&w, &co);
    if (st) {
        fprintf(stderr, "test_holdings_mpi: %s\n", hp_status_msg(st));
        hp_status_free(st);
        return 1;
    }
    int n = hp_comm_world_size(w), first, count;
    hp_comm_hosted_ranks(w, &first, &count);
    if (n > MAXW) {
        fprintf(stderr, "test_holdings_mpi: a world of %d ranks (at most %d)\n", n, MAXW);
        hp_comm_world_destroy(w);
        return 2;
    }
    const int B = 8, T = 8;
    hp_gpt2_config mc = {.L = 2, .NH = 4, .C = 32, .V = 200, .Vp = 256, .maxT = 16};
    hp_graph *model;
    hp_gpt2_io io;
    CHECK_OK(hp_graph_create(&model));
    CHECK_OK(hp_gpt2_build(model, &io, &mc, B, T));
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    oc.decay_vectors = 0;
    hp_compile_opts o = {.train = 1, .optim = &oc, .max_norm = 1.0f, .schedule = {.overlap = 1, .max_inflight = 4}};
    int plans = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        if (cases[k].replicas * cases[k].dp * cases[k].tp != n) continue;
        check_case(w, &cases[k], model, &o, first == 0);
        plans++;
    }
    CHECK(plans > 0);
    hp_graph_destroy(model);
    int failed = hp_test_failures > 0;
    if (!failed && first == 0)
        printf("holdings across processes: %s %d x %d: %d plans tiled\n", hp_comm_uses_mpi(w) ? "MPI" : "threads",
               hp_comm_supernodes(w), count, plans);
    hp_comm_world_destroy(w);
    return hp_test_finish("test_holdings_mpi");
}
