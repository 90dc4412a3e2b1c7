/* Validation mode on a small GPT-2 (ranks as threads): the DP=2, TP=2 and
 * DP=2xTP=2 plans validate cleanly (every operator checked, gradients within
 * 1e-5 of one rank, and the ranks left exactly as a production step leaves
 * them); and each kind of violation stops the run with its one-line message:
 * a Replicate parameter that diverges, Partial terms that do not add up, a
 * buffer of the wrong shape, an input consumed in the wrong shape. */
#include "core/autodiff.h"
#include "core/rng.h"
#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "models/gpt2_plan.h"
#include "ops/ops.h"
#include "runtime/dist.h"
#include "runtime/program.h"
#include "runtime/validate.h"
#include "testutil.h"
#include "validate_model.h"

enum { B = 4, T = 8 };


typedef struct {
    hp_plan plan;
    hp_layout *layouts;
    unsigned char *fixed;
    hp_comm_world *world;
    hp_dist *d;
} setup;


/* The plan's dist with the model's parameters and batch scattered to every rank. */
static int setup_create(setup *s, const model *m, int dp, int tp) {
    memset(s, 0, sizeof *s);
    CHECK_OK(hp_plan_gpt2_dp_tp(&s->plan, dp, tp));
    hp_comm_opts co;
    hp_comm_opts_default(&co);
    co.ranks_per_supernode = dp * tp;
    co.mpi = 0;
    co.timeout_s = 60;
    CHECK_OK(hp_comm_world_create(&s->world, &co));
    hp_dist_config dc = {.model = m->g, .plan = &s->plan, .world = s->world, .threads_per_rank = 1,
                         .compile = {.train = 1}};
    CHECK_OK(hp_dist_create(&s->d, &dc));
    if (!s->d) return 0;
    CHECK_OK(hp_dist_scatter_params(s->d, &m->ps));
    for (int i = 0; i < hp_dist_nranks(s->d); i++) {
        hp_dist_rank *r = hp_dist_rank_at(s->d, i);
        hp_dist_scatter_value(s->d, r, m->io.tokens, hp_program_data(r->prog, r->c.rg.map[m->io.tokens]), m->tokens);
        hp_dist_scatter_value(s->d, r, m->io.targets, hp_program_data(r->prog, r->c.rg.map[m->io.targets]), m->targets);
    }
    return 1;
}

static void setup_free(setup *s) {
    hp_dist_destroy(s->d);
    hp_comm_world_destroy(s->world);
    free(s->layouts), free(s->fixed);
    hp_plan_free(&s->plan);
}

static hp_status run_prod(hp_dist_rank *r, void *c) {
    (void)c;
    HP_TRY(hp_program_run(r->prog, HP_PHASE_FWD));
    return hp_program_run(r->prog, HP_PHASE_BWD);
}

/* (a) clean plans */
static void test_clean(const model *m, int dp, int tp) {
    setup s;
    if (!setup_create(&s, m, dp, tp)) return;
    hp_validator *v = NULL;
    hp_validate_config vc = {.g = m->g, .d = s.d};
    CHECK_OK(hp_validate_create(&v, &vc));
    if (!v) return setup_free(&s);
    hp_validate_report rep = {0};
    CHECK_OK(hp_validate_step(v, &rep));
    CHECK_OK(hp_validate_gradients(v, &rep));
    /* a split gradient's rows (parallel/grad_rows) are added by inserted steps after the reduction: the global
     * grad_rows node has no local step to check */
    int nsplit = 0;
    for (int i = 0; i < hp_dist_global(s.d)->nnodes; i++) nsplit += hp_dist_global(s.d)->nodes[i].op == &hp_op_grad_rows;
    CHECK(nsplit == (dp > 1 && tp == 1));
    CHECK(rep.nops == m->g->nnodes - nsplit);
    CHECK(rep.nunchecked == nsplit);
    CHECK(rep.nredist > 0);
    CHECK(rep.nvalues >= rep.nops);
    CHECK_NEAR(rep.loss, rep.ref_loss, 1e-6 * fabs(rep.ref_loss));
    CHECK(rep.ref_loss > 4.0f); /* ~ln(200): the reference really ran */
    CHECK(rep.ngrads == m->ps.n);
    CHECK(rep.worst_index >= 0);
    CHECK(rep.worst <= 1e-5);
    CHECK(rep.worst > 0 || dp * tp == 1); /* a real comparison: summation orders differ */
    for (int i = 0; i < rep.ngrads; i++) CHECK(rep.grads[i].rel_err <= 1e-5 && rep.grads[i].layout[0]);
    printf("dp=%d tp=%d: %d operators, %d redistributions, %d values checked; worst gradient error %.3g (%s, %s)\n",
           dp, tp, rep.nops, rep.nredist, rep.nvalues, rep.worst, rep.grads[rep.worst_index].name,
           rep.grads[rep.worst_index].layout);

    /* the ranks hold what a production step leaves: the same step again gives bit-identical gradients */
    int nr = hp_dist_nranks(s.d);
    float **saved = calloc((size_t)nr, sizeof *saved);
    for (int i = 0; i < nr; i++) {
        hp_dist_rank *r = hp_dist_rank_at(s.d, i);
        saved[i] = malloc(r->ps.total * sizeof(float));
        memcpy(saved[i], hp_program_grads(r->prog), r->ps.total * sizeof(float));
    }
    CHECK_OK(hp_dist_run(s.d, run_prod, NULL));
    for (int i = 0; i < nr; i++) {
        hp_dist_rank *r = hp_dist_rank_at(s.d, i);
        CHECK(!memcmp(saved[i], hp_program_grads(r->prog), r->ps.total * sizeof(float)));
        free(saved[i]);
    }
    free(saved);
    /* a second validated step on the same state agrees too */
    CHECK_OK(hp_validate_step(v, &rep));
    CHECK(rep.nops == m->g->nnodes - nsplit);
    hp_validate_report_free(&rep);
    hp_validate_destroy(v);
    setup_free(&s);
}

/* (b) a Replicate parameter whose copies diverge */
static void test_diverged_replica(const model *m) {
    setup s;
    if (!setup_create(&s, m, 2, 1)) return;
    hp_dist_rank *r1 = hp_dist_rank_at(s.d, 1);
    int k = hp_param_store_find(&r1->ps, "h.0.ln1.weight");
    CHECK(k >= 0);
    hp_param_ptr(&r1->ps, k)[0] += 1e-3f;
    hp_validator *v = NULL;
    hp_validate_config vc = {.g = m->g, .d = s.d};
    CHECK_OK(hp_validate_create(&v, &vc));
    hp_validate_report rep = {0};
    hp_status st = v ? hp_validate_step(v, &rep) : hp_errorf("no validator");
    const char *msg = hp_status_msg(st);
    printf("diverged replica: %s\n", msg);
    CHECK(st != HP_OK);
    CHECK(strstr(msg, "validation: h.0.attn") == msg); /* the operator that first consumes it */
    CHECK(strstr(msg, "'h.0.ln1.weight' should be R@dp"));
    CHECK(strstr(msg, "ranks 0 and 1 differ at element 0 (1 vs 1.001)"));
    CHECK(!strchr(msg, '\n'));
    hp_status_free(st);
    hp_validate_report_free(&rep);
    hp_validate_destroy(v);
    setup_free(&s);
}

/* Hooks for (c), (d), (e): act on one rank after one global node's step. */
typedef struct {
    int node;   /* global node */
    int rank;
    int action; /* 0: add to a Partial term, 1: shrink an output's shape, 2: shrink an input's shape */
    int fired;
} hook_ctx;

static void hook(void *user, hp_validate_view *w) {
    hook_ctx *h = user;
    if (w->global_node != h->node || w->rank != h->rank || w->node->op == &hp_op_redistribute) return;
    h->fired++;
    if (h->action == 0) ((float *)w->out[0].data)[3] += 0.25f;
    if (h->action == 1) w->out[0].shape.d[0] -= 1;
    if (h->action == 2) w->in[0].shape.d[w->in[0].shape.ndim - 1] += 1;
}

/* The first node of a phase whose first output is Partial. */
static int first_partial_node(const model *m, hp_dist *d, hp_phase ph) {
    const hp_propagation *p = hp_dist_propagation(d);
    for (int i = 0; i < m->g->nnodes; i++) {
        const hp_node *n = &m->g->nodes[i];
        if (n->phase == ph && n->out[0] >= 0 && hp_layout_has_partial(&p->val[n->out[0]])) return i;
    }
    return -1;
}

static void test_hooked(const model *m, int dp, int tp, int action) {
    setup s;
    if (!setup_create(&s, m, dp, tp)) return;
    hook_ctx h = {.rank = 1, .action = action};
    if (action == 0) {
        /* tensor parallel: a forward contraction; data parallel: a weight gradient */
        h.node = first_partial_node(m, s.d, tp > 1 ? HP_PHASE_FWD : HP_PHASE_BWD);
        CHECK(h.node >= 0);
    } else {
        /* the fused QKV linear of the first block */
        h.node = -1;
        for (int i = 0; i < m->g->nnodes && h.node < 0; i++)
            if (!strcmp(m->g->nodes[i].name, "h.0.attn.linear")) h.node = i;
        CHECK(h.node >= 0);
    }
    if (h.node < 0) return setup_free(&s);
    hp_validator *v = NULL;
    hp_validate_config vc = {.g = m->g, .d = s.d};
    CHECK_OK(hp_validate_create(&v, &vc));
    if (!v) return setup_free(&s);
    hp_validate_set_hook(v, hook, &h);
    hp_validate_report rep = {0};
    hp_status st = hp_validate_step(v, &rep);
    const char *msg = hp_status_msg(st);
    printf("dp=%d tp=%d action %d at '%s': %s\n", dp, tp, action, m->g->nodes[h.node].name, msg);
    CHECK(st != HP_OK);
    CHECK(h.fired == 1);
    CHECK(!strchr(msg, '\n'));
    char want[160];
    snprintf(want, sizeof want, "validation: %s: ", m->g->nodes[h.node].name);
    CHECK(strstr(msg, want) == msg);
    if (action == 0) {
        CHECK(strstr(msg, tp > 1 ? "P(sum)@tp" : "P(sum)@dp"));
        CHECK(strstr(msg, "Partial terms of ranks 0,1 add up to"));
        CHECK(strstr(msg, "where one rank computes"));
    } else if (action == 1) {
        CHECK(strstr(msg, "rank 1 holds local shape"));
        CHECK(strstr(msg, "where the layout gives"));
    } else {
        CHECK(strstr(msg, "input '"));
        CHECK(strstr(msg, "should be consumed as"));
        CHECK(strstr(msg, "rank 1 holds local shape"));
    }
    hp_status_free(st);
    /* without the hook, the same state validates (the earlier run stopped cleanly between steps) */
    if (action != 0) {
        hp_validate_set_hook(v, NULL, NULL);
        CHECK_OK(hp_validate_step(v, &rep));
    }
    hp_validate_report_free(&rep);
    hp_validate_destroy(v);
    setup_free(&s);
}

int main(void) {
    hp_kernels_init();
    model m;
    memset(&m, 0, sizeof m);
    model_build(&m, B, T);
    test_clean(&m, 2, 1);
    test_clean(&m, 1, 2);
    test_clean(&m, 2, 2);
    test_diverged_replica(&m);
    test_hooked(&m, 1, 2, 0);
    test_hooked(&m, 2, 2, 0);
    test_hooked(&m, 2, 1, 0);
    test_hooked(&m, 2, 1, 1);
    test_hooked(&m, 2, 2, 2);
    /* the gradient table needs a step first */
    {
        setup s;
        if (setup_create(&s, &m, 2, 1)) {
            hp_validator *v = NULL;
            hp_validate_config vc = {.g = m.g, .d = s.d};
            CHECK_OK(hp_validate_create(&v, &vc));
            hp_validate_report rep = {0};
            if (v) CHECK_ERR(hp_validate_gradients(v, &rep), "needs a checked step first");
            hp_validate_report_free(&rep);
            hp_validate_destroy(v);
            setup_free(&s);
        }
    }
    model_free(&m);
    return hp_test_finish("test_validate");
}
