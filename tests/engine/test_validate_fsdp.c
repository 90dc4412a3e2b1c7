/* Validation mode under FSDP (ranks as threads): FSDP 2, HSDP 2x2 and FSDP 2 x
 * TP 2 validate cleanly (every gather's parameters bit for bit the
 * reference's, every reduced shard and every managed gradient within 1e-5);
 * a gathered shard that is wrong on one rank and a reduction that one rank
 * skipped each stop the run with their one-line message naming the step, the
 * rank and what went wrong. FSDP 4 over 2 emulated supernodes (the units
 * gathered into transient slots) validates the same way, and catches the same
 * two faults. In bf16 with gather=bf16 (level 2: a store and
 * its bf16 mirror per rank) the gathered copies validate bit for bit against
 * the reference's parameters rounded to bf16, and a wrong element in one
 * rank's mirror is caught the same way. */
#include "core/autodiff.h"
#include "core/rng.h"
#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "models/gpt2_plan.h"
#include "ops/ops.h"
#include "parallel/fsdp.h"
#include "runtime/dist.h"
#include "runtime/program.h"
#include "runtime/validate.h"
#include "testutil.h"
#include "validate_model.h"

enum { B = 8, T = 8 };



typedef struct {
    hp_plan plan;
    hp_comm_world *world;
    hp_dist *d;
} setup;

/* sn: emulated supernodes the ranks are spread over (contiguous ranks) */
static int setup_create(setup *s, const model *m, int reps, int dp, int tp, const char *fsdp, hp_dtype dt, int sn) {
    memset(s, 0, sizeof *s);
    CHECK_OK(hp_plan_gpt2(&s->plan, reps, dp, tp));
    CHECK_OK(hp_plan_set_fsdp(&s->plan, fsdp ? fsdp : reps > 1 ? "shard=dp replicate=rep" : "shard=dp", "test"));
    hp_comm_opts co;
    hp_comm_opts_default(&co);
    co.supernodes = sn;
    co.ranks_per_supernode = reps * dp * tp / sn;
    co.mpi = 0;
    co.timeout_s = 60;
    CHECK_OK(hp_comm_world_create(&s->world, &co));
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_dist_config dc = {.model = m->g, .plan = &s->plan, .world = s->world, .threads_per_rank = 1,
                         .compile = {.train = 1, .optim = &oc, .max_norm = 1.0f, .dtype = dt}};
    CHECK_OK(hp_dist_create(&s->d, &dc));
    if (!s->d) return 0;
    model_scatter(s->d, m);
    return 1;
}

static void setup_free(setup *s) {
    hp_dist_destroy(s->d);
    hp_comm_world_destroy(s->world);
    hp_plan_free(&s->plan);
}

static void clean(const model *m, int reps, int dp, int tp, int sn) {
    setup s;
    if (!setup_create(&s, m, reps, dp, tp, NULL, HP_F32, sn)) return;
    /* a shard group across supernodes gathers into transient slots (parallel/fsdp_slots) */
    CHECK(hp_dist_rank_at(s.d, 0)->c.fsdp.transient == (sn > 1 && reps == 1));
    hp_validate_report rep = {0};
    if (model_validate_clean(s.d, m, &rep)) {
        int shards = 0;
        for (int i = 0; i < rep.ngrads; i++) shards += !strcmp(rep.grads[i].layout, "fsdp shards");
        CHECK(shards == m->ps.n); /* every GPT-2 parameter is managed */
        printf("fsdp rep=%d dp=%d tp=%d in %d supernode(s): %d operators checked, worst gradient error %.3g\n", reps,
               dp, tp, sn, rep.nops, rep.worst);
    }
    hp_validate_report_free(&rep);
    setup_free(&s);
}

/* gather=bf16 (level 2 and 3): every gather validates bit for bit, gradients within bf16's tolerance */
static void bf16_clean(const model *m) {
    for (int level = 2; level <= 3; level++) {
        setup s;
        if (!setup_create(&s, m, 1, 2, 1, level == 2 ? "shard=dp level=2 gather=bf16" : "shard=dp gather=bf16",
                          HP_BF16, 1))
            return;
        hp_validator *v = NULL;
        hp_validate_config vc = {.g = hp_dist_global(s.d), .d = s.d};
        CHECK_OK(hp_validate_create(&v, &vc));
        hp_validate_report rep = {0};
        if (v) {
            CHECK_OK(hp_validate_step(v, &rep));
            CHECK(rep.nops > 0);
            printf("fsdp level %d gather=bf16: %d operators checked\n", level, rep.nops);
        }
        hp_validate_report_free(&rep);
        hp_validate_destroy(v);
        setup_free(&s);
    }
}

/* ---- faults, simulated through the hook's view descriptors ---- */

typedef struct {
    const hp_opdef *op;
    int unit, rank, done;
    hp_dist *d;
    float buf[1 << 16];
} fault;

/* gather=bf16: one element of member 0's shard in rank 1's bf16 mirror flipped */
static void wrong_mirror(void *user, hp_validate_view *w) {
    fault *f = user;
    if (w->node->op != f->op || w->node->a.i[0] != f->unit || w->rank != f->rank || f->done) return;
    hp_dist_rank *r = hp_dist_rank_at(f->d, f->rank);
    const hp_fsdp_unit *un = &r->c.fsdp.units[f->unit];
    r->ps.data16[un->offset + un->shard / 2] ^= 0x40;
    f->done = 1;
}

static void wrong_gather(void *user, hp_validate_view *w) {
    fault *f = user;
    if (w->node->op != f->op || w->node->a.i[0] != f->unit || w->rank != f->rank) return;
    int64_t n = hp_shape_numel(&w->xin[1].shape);
    memcpy(f->buf, w->xin[1].data, sizeof(float) * (size_t)n);
    f->buf[n / 2] += 0.5f; /* one element of the unit's second parameter */
    w->xin[1].data = f->buf;
    f->done = 1;
}

static void skipped_reduction(void *user, hp_validate_view *w) {
    fault *f = user;
    if (w->node->op != f->op || w->node->a.i[0] != f->unit || w->rank != f->rank) return;
    /* the shard as if the reduce-scatter never ran: the rank's own partial slice */
    int64_t n = hp_shape_numel(&w->in[1].shape), me = f->rank % hp_dist_nranks(f->d);
    memcpy(f->buf, (const float *)w->in[0].data + me * n, sizeof(float) * (size_t)n);
    w->in[1].data = f->buf;
    f->done = 1;
}

static void faulty(const model *m, hp_validate_hook hook, const hp_opdef *op, const char *needle, const char *fsdp,
                   hp_dtype dt, int dp, int sn) {
    setup s;
    if (!setup_create(&s, m, 1, dp, 1, fsdp, dt, sn)) return;
    hp_validator *v = NULL;
    hp_validate_config vc = {.g = hp_dist_global(s.d), .d = s.d};
    CHECK_OK(hp_validate_create(&v, &vc));
    static fault f;
    memset(&f, 0, sizeof f);
    f.op = op, f.unit = 1, f.rank = 1, f.d = s.d;
    if (v) {
        hp_validate_set_hook(v, hook, &f);
        hp_validate_report rep = {0};
        hp_status st = hp_validate_step(v, &rep);
        CHECK(f.done);
        CHECK(st != HP_OK);
        if (st) {
            printf("caught: %s\n", hp_status_msg(st));
            CHECK(strstr(hp_status_msg(st), needle) != NULL);
            CHECK(strstr(hp_status_msg(st), "rank 1") != NULL);
            CHECK(strchr(hp_status_msg(st), '\n') == NULL);
        }
        hp_status_free(st);
        hp_validate_report_free(&rep);
    }
    hp_validate_destroy(v);
    setup_free(&s);
}

int main(void) {
    hp_kernels_init();
    model m;
    model_build(&m, B, T);
    clean(&m, 1, 2, 1, 1);
    clean(&m, 2, 2, 1, 1);
    clean(&m, 1, 2, 2, 1);
    clean(&m, 1, 4, 1, 2); /* FSDP 4 over 2 supernodes: the units in transient slots */
    faulty(&m, wrong_gather, &hp_op_fsdp_gather_wait, "a wrong gathered shard (member ", NULL, HP_F32, 2, 1);
    faulty(&m, skipped_reduction, &hp_op_fsdp_reduce_wait, "a missing or wrong reduction", NULL, HP_F32, 2, 1);
    faulty(&m, wrong_gather, &hp_op_fsdp_gather_wait, "a wrong gathered shard (member ", NULL, HP_F32, 4, 2);
    faulty(&m, skipped_reduction, &hp_op_fsdp_reduce_wait, "a missing or wrong reduction", NULL, HP_F32, 4, 2);
    model m16;
    model_build_graph(&m16, B, T, 0);
    bf16_clean(&m16);
    faulty(&m16, wrong_mirror, &hp_op_fsdp_gather_wait, "(bf16) unlike the reference", "shard=dp level=2 gather=bf16",
           HP_BF16, 2, 1);
    model_free(&m16);
    model_free(&m);
    return hp_test_finish("test_validate_fsdp");
}
