/* autopar/memory's model against what the ranks' programs hold, for a grid
 * of plans on a tiny GPT-2 (4 blocks, 4 rank-threads): DP, TP, DP x TP,
 * pipelines of 2 stages (GPipe and 1F1B over 2 and 4 micro-batches: the
 * in-flight micro-batches' activation slots), FSDP/ZeRO levels 1 to 3, the
 * fsdp2 style, HSDP, remat none, selective and full (alone and with a
 * pipeline), gradient accumulation, and DP, TP, FSDP, HSDP and a pipeline
 * over 2 and 4 emulated supernodes (the collectives' scratch). Each case
 * sets up the real ranks (runtime/dist) and runs one training step; what
 * the process then holds — live page-aligned buffers (aligned_alloc less
 * free, wrapped here) and the pages committed in reserved buffers
 * (mprotect) — must equal the sum over its ranks of hp_rank_memory_of
 * within 5%; each case is printed (predicted, measured, ratio, rank 0's
 * parts, and what the first step added). The parts also order as the plans
 * say: activations fall with remat (full < selective < none), grow with the
 * micro-batches GPipe keeps in flight, and 1F1B's first stage holds fewer
 * than GPipe's; TP divides the parameters, a pipeline stage holds its own,
 * the ZeRO levels shard state, gradients and parameters in turn; across
 * supernodes the communication buffers grow by the collectives' scratch,
 * and by more over 4 supernodes than over 2. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "autopar/memory.h"
#include "engine/fixture.h"
#include "models/gpt2_plan.h"
#include "runtime/dist.h"

/* ---- what the process holds: live page-aligned buffers (aligned_alloc less free) and committed pages ---- */

#define NTRACK (1 << 16)
static struct {
    void *p;
    size_t n;
} tracked[NTRACK]; /* open addressing; p NULL: empty, (void *)1: removed */
static pthread_mutex_t track_mu = PTHREAD_MUTEX_INITIALIZER;
static long n_live = 0, n_committed = 0;

static size_t slot_of(const void *p) { return ((uintptr_t)p >> 6) * 0x9E3779B97F4A7C15ull % NTRACK; }

void *__real_aligned_alloc(size_t a, size_t n);
void __real_free(void *p);
int __real_mprotect(void *p, size_t n, int prot);
void *__wrap_aligned_alloc(size_t a, size_t n);
void __wrap_free(void *p);
int __wrap_mprotect(void *p, size_t n, int prot);

void *__wrap_aligned_alloc(size_t a, size_t n) {
    void *p = __real_aligned_alloc(a, n);
    if (!p) return p;
    pthread_mutex_lock(&track_mu);
    size_t i = slot_of(p);
    while (tracked[i].p && tracked[i].p != (void *)1) i = (i + 1) % NTRACK;
    tracked[i].p = p, tracked[i].n = n;
    n_live += (long)n;
    pthread_mutex_unlock(&track_mu);
    return p;
}

void __wrap_free(void *p) {
    if (p) {
        pthread_mutex_lock(&track_mu);
        for (size_t i = slot_of(p); tracked[i].p; i = (i + 1) % NTRACK)
            if (tracked[i].p == p) {
                n_live -= (long)tracked[i].n;
                tracked[i].p = (void *)1;
                break;
            }
        pthread_mutex_unlock(&track_mu);
    }
    __real_free(p);
}

/* bytes made readable and writable by mprotect (core/alloc's committed spans) */
int __wrap_mprotect(void *p, size_t n, int prot) {
    if (prot & PROT_WRITE) __atomic_add_fetch(&n_committed, (long)n, __ATOMIC_RELAXED);
    return __real_mprotect(p, n, prot);
}

static double held(void) {
    pthread_mutex_lock(&track_mu);
    long b = n_live;
    pthread_mutex_unlock(&track_mu);
    return (double)b + (double)__atomic_load_n(&n_committed, __ATOMIC_RELAXED);
}

typedef struct {
    const char *name;
    int pp, rep, dp, tp;  /* the mesh (4 ranks) */
    const char *fsdp;     /* the plan's fsdp settings, NULL: none */
    hp_pp_kind sched;     /* with pp > 1 */
    int micro;            /* grad_accum (the pipeline's micro-batches) */
    hp_remat_policy remat;
    int sn;               /* emulated supernodes (contiguous ranks; 0: one) */
} grid_case;

/* one training step of the rank: the schedule's actions (the inputs as set up: zeros) */
static hp_status rank_step(hp_dist_rank *r, void *c) {
    (void)c;
    float loss = 0;
    return hp_program_run_actions(r->prog, &loss, &r->c.sched.step, &(hp_step_io){0});
}

typedef struct {
    double predicted, measured, step; /* step: bytes the first step allocated */
    hp_rank_memory r0; /* rank 0's prediction */
} result;

static result run_case(const gpt2_fixture *f, const grid_case *k) {
    result res;
    memset(&res, 0, sizeof res);
    hp_plan plan;
    CHECK_OK(k->pp > 1 ? hp_plan_gpt2_pp(&plan, k->pp, k->rep, k->dp, k->tp) : hp_plan_gpt2(&plan, k->rep, k->dp, k->tp));
    if (k->fsdp) CHECK_OK(hp_plan_set_fsdp(&plan, k->fsdp, "test"));
    hp_comm_opts co;
    hp_comm_opts_default(&co);
    co.supernodes = k->sn > 1 ? k->sn : 1;
    co.ranks_per_supernode = k->pp * k->rep * k->dp * k->tp / co.supernodes;
    co.mpi = 0;
    hp_comm_world *w = NULL;
    CHECK_OK(hp_comm_world_create(&w, &co));
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_dist_config cfg = {.model = f->g, .plan = &plan, .world = w, .threads_per_rank = 1};
    cfg.compile = (hp_compile_opts){.train = 1, .optim = &oc, .max_norm = 1.0f, .schedule = {.overlap = 1},
                                    .grad_accum = k->micro, .remat = {.policy = k->remat},
                                    .pp = {.kind = k->sched, .chunks = 1}};
    double h0 = held();
    hp_dist *d = NULL;
    CHECK_OK(hp_dist_create(&d, &cfg));
    double h1 = held();
    if (d) CHECK_OK(hp_dist_run(d, rank_step, NULL)); /* the collectives' scratch grows in the first step */
    res.measured = held() - h0;
    res.step = held() - h1;
    for (int i = 0; d && i < hp_dist_nranks(d); i++) {
        hp_rank_memory m;
        hp_rank_memory_of(&m, &hp_dist_rank_at(d, i)->c, 1);
        CHECK(m.total == m.params + m.grads + m.optimizer + m.activations + m.scratch + m.comm + m.inputs);
        res.predicted += m.total;
        if (i == 0) res.r0 = m;
    }
    if (d && k->pp > 1) CHECK(hp_dist_rank_at(d, 0)->c.pp.stages == k->pp);
    hp_dist_destroy(d);
    hp_comm_world_destroy(w);
    hp_plan_free(&plan);
    return res;
}

enum { C_DP, C_TP, C_DPTP, C_PP_G2, C_PP_G4, C_PP_1_2, C_PP_1_4, C_PP_TP, C_Z1, C_Z2, C_Z3, C_HSDP, C_PP_Z3,
       C_SEL, C_FULL, C_ACC, C_PP_SEL, C_PP_FULL, C_DP_SN, C_HSDP_SN, C_Z3_SN, C_PP_SN,
       C_FSDP2, C_TP_SN, C_DP_SN4, C_Z3_SN4, NCASES };

int main(void) {
    gpt2_fixture f;
    fixture_build(&f, (hp_gpt2_config){.L = 4, .NH = 4, .C = 64, .V = 256, .maxT = 32}, 8, 32, -1);
    const grid_case cases[NCASES] = {
        [C_DP] = {"dp=4", 1, 1, 4, 1, NULL, 0, 1, HP_REMAT_NONE},
        [C_TP] = {"tp=4", 1, 1, 1, 4, NULL, 0, 1, HP_REMAT_NONE},
        [C_DPTP] = {"dp=2,tp=2", 1, 1, 2, 2, NULL, 0, 1, HP_REMAT_NONE},
        [C_PP_G2] = {"pp=2,dp=2 gpipe m=2", 2, 1, 2, 1, NULL, HP_PP_GPIPE, 2, HP_REMAT_NONE},
        [C_PP_G4] = {"pp=2,dp=2 gpipe m=4", 2, 1, 2, 1, NULL, HP_PP_GPIPE, 4, HP_REMAT_NONE},
        [C_PP_1_2] = {"pp=2,dp=2 1f1b m=2", 2, 1, 2, 1, NULL, HP_PP_1F1B, 2, HP_REMAT_NONE},
        [C_PP_1_4] = {"pp=2,dp=2 1f1b m=4", 2, 1, 2, 1, NULL, HP_PP_1F1B, 4, HP_REMAT_NONE},
        [C_PP_TP] = {"pp=2,tp=2 1f1b m=4", 2, 1, 1, 2, NULL, HP_PP_1F1B, 4, HP_REMAT_NONE},
        [C_Z1] = {"dp=4 zero-1", 1, 1, 4, 1, "shard=dp level=1", 0, 1, HP_REMAT_NONE},
        [C_Z2] = {"dp=4 zero-2", 1, 1, 4, 1, "shard=dp level=2", 0, 1, HP_REMAT_NONE},
        [C_Z3] = {"dp=4 fsdp (zero-3)", 1, 1, 4, 1, "shard=dp level=3", 0, 1, HP_REMAT_NONE},
        [C_HSDP] = {"rep=2,dp=2 hsdp", 1, 2, 2, 1, "shard=dp replicate=rep level=3", 0, 1, HP_REMAT_NONE},
        [C_PP_Z3] = {"pp=2,dp=2 fsdp 1f1b m=4", 2, 1, 2, 1, "shard=dp level=3", HP_PP_1F1B, 4, HP_REMAT_NONE},
        [C_SEL] = {"dp=4 remat selective", 1, 1, 4, 1, NULL, 0, 1, HP_REMAT_SELECTIVE},
        [C_FULL] = {"dp=4 remat full", 1, 1, 4, 1, NULL, 0, 1, HP_REMAT_FULL},
        [C_ACC] = {"dp=4 grad_accum 2", 1, 1, 4, 1, NULL, 0, 2, HP_REMAT_NONE},
        [C_PP_SEL] = {"pp=2,dp=2 1f1b m=4 selective", 2, 1, 2, 1, NULL, HP_PP_1F1B, 4, HP_REMAT_SELECTIVE},
        [C_PP_FULL] = {"pp=2,dp=2 1f1b m=4 full", 2, 1, 2, 1, NULL, HP_PP_1F1B, 4, HP_REMAT_FULL},
        [C_DP_SN] = {"dp=4 / 2 supernodes", 1, 1, 4, 1, NULL, 0, 1, HP_REMAT_NONE, 2},
        [C_HSDP_SN] = {"rep=2,dp=2 hsdp / 2 supernodes", 1, 2, 2, 1, "shard=dp replicate=rep level=3", 0, 1,
                       HP_REMAT_NONE, 2},
        [C_Z3_SN] = {"dp=4 fsdp / 2 supernodes", 1, 1, 4, 1, "shard=dp level=3", 0, 1, HP_REMAT_NONE, 2},
        [C_PP_SN] = {"pp=2,dp=2 1f1b m=4 / 2 supernodes", 2, 1, 2, 1, NULL, HP_PP_1F1B, 4, HP_REMAT_NONE, 2},
        [C_FSDP2] = {"dp=4 fsdp style=fsdp2", 1, 1, 4, 1, "shard=dp level=3 style=fsdp2", 0, 1, HP_REMAT_NONE},
        [C_TP_SN] = {"tp=4 / 2 supernodes", 1, 1, 1, 4, NULL, 0, 1, HP_REMAT_NONE, 2},
        [C_DP_SN4] = {"dp=4 / 4 supernodes", 1, 1, 4, 1, NULL, 0, 1, HP_REMAT_NONE, 4},
        [C_Z3_SN4] = {"dp=4 fsdp / 4 supernodes", 1, 1, 4, 1, "shard=dp level=3", 0, 1, HP_REMAT_NONE, 4},
    };
    result r[NCASES];
    printf("%-34s %12s %12s %7s | rank 0: %9s %9s %9s %9s %9s %9s %9s\n", "plan (4 ranks)", "predicted", "allocated",
           "ratio", "params", "grads", "optim", "activ", "scratch", "comm", "inputs");
    for (int i = 0; i < NCASES; i++) {
        r[i] = run_case(&f, &cases[i]);
        const hp_rank_memory *m = &r[i].r0;
        double ratio = r[i].measured / r[i].predicted;
        printf("%-34s %12.0f %12.0f %7.4f | %16.0f %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f\n", cases[i].name,
               r[i].predicted, r[i].measured, ratio, m->params, m->grads, m->optimizer, m->activations, m->scratch,
               m->comm, m->inputs);
        printf("  first step: %.0f B\n", r[i].step);
        if (!(ratio >= 0.95 && ratio <= 1.05)) fprintf(stderr, "case '%s': off by more than 5%%\n", cases[i].name);
        CHECK(ratio >= 0.95 && ratio <= 1.05);
    }
    /* the parts order as the plans say */
    CHECK(r[C_FULL].r0.activations < r[C_SEL].r0.activations && r[C_SEL].r0.activations < r[C_DP].r0.activations);
    CHECK(r[C_PP_FULL].r0.activations < r[C_PP_SEL].r0.activations &&
          r[C_PP_SEL].r0.activations < r[C_PP_1_4].r0.activations);
    CHECK(r[C_PP_G4].r0.activations > r[C_PP_G2].r0.activations * 1.5); /* GPipe: every micro-batch in flight */
    CHECK(r[C_PP_1_4].r0.activations < r[C_PP_G4].r0.activations);     /* 1F1B: at most p on the first stage */
    CHECK(r[C_TP].r0.params < r[C_DP].r0.params / 2.5);
    CHECK(r[C_PP_G2].r0.params < r[C_DP].r0.params * 0.8); /* a stage's own blocks */
    CHECK(r[C_Z3].r0.params < r[C_DP].r0.params / 3.5 && r[C_Z1].r0.optimizer < r[C_DP].r0.optimizer / 3.5);
    CHECK(r[C_Z2].r0.grads < r[C_DP].r0.grads / 3.5 && r[C_Z2].r0.params == r[C_DP].r0.params);
    CHECK(r[C_HSDP].r0.params > r[C_Z3].r0.params * 1.5); /* sharded over 2, replicated over 2 */
    CHECK(r[C_DP_SN].r0.comm > r[C_DP].r0.comm + 65536 && r[C_DP_SN4].r0.comm > r[C_DP_SN].r0.comm);
    CHECK(r[C_Z3_SN4].r0.comm > r[C_Z3_SN].r0.comm && r[C_HSDP_SN].r0.comm > r[C_HSDP].r0.comm + 65536);
    CHECK(r[C_PP_SN].r0.comm == r[C_PP_1_4].r0.comm); /* sends and receives stage nothing */
    CHECK(r[C_FSDP2].r0.comm > r[C_Z3].r0.comm + 3 * 4096); /* the staging buffers */
    fixture_free(&f);
    return hp_test_finish("test_memory");
}
