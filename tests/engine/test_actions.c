/* The step as a list of actions (core/action, parallel/schedule,
 * hp_program_run_actions): the schedule writes F0 B0 F1 B1 Opt for two
 * micro-batches and forwards only for evaluation; running the list in one
 * call gives bit for bit the losses, accumulated gradients and updated
 * parameters of the per-phase loop the trainer ran before (inputs fed per
 * micro-batch, losses in order, divided by K; in the deterministic mode as a
 * tree); an order with two micro-batches in flight (F0 F1 B0 B1) and a split
 * backward are refused with an error, the program still usable. */
#include <string.h>

#include "feeder.h"
#include "fixture.h"
#include "parallel/compile.h"
#include "runtime/program.h"

enum { B = 2, T = 8, K = 2 };

typedef struct {
    hp_param_store ps;
    hp_pool *pool;
    hp_program *p;
    feeder fd;
} runner;

static void runner_make(runner *r, const hp_compiled *c, const hp_gpt2_config *mc, const hp_gpt2_io *io,
                        const hp_graph *model, const int32_t *tok, const int32_t *tgt) {
    const hp_graph *g = c->rg.g;
    CHECK_OK(hp_param_store_create(&r->ps, g));
    float *ptrs[256];
    for (int i = 0; i < r->ps.n && i < 256; i++) ptrs[i] = hp_param_ptr(&r->ps, i);
    CHECK_OK(hp_gpt2_init(ptrs, (const char(*)[HP_NAME_LEN])r->ps.name, r->ps.shape, r->ps.n, mc, 11));
    CHECK_OK(hp_pool_create(&r->pool, 1));
    CHECK_OK(hp_program_create_ordered(&r->p, g, c->sched.order, c->sched.n, &c->mem, &r->ps, r->pool, NULL));
    r->fd = (feeder){.p = r->p, .tokens = hp_graph_find(g, model->vals[io->tokens].name),
                     .targets = hp_graph_find(g, model->vals[io->targets].name), .micro = c->micro, .tok = tok,
                     .tgt = tgt, .per = B * T, .count = K};
    CHECK(r->fd.tokens >= 0 && r->fd.targets >= 0);
    if (c->has_optim) {
        float lr[2] = {1e-3f, 1e-3f};
        memcpy(hp_program_data(r->p, c->optim.lr), lr, sizeof lr);
        *(int32_t *)hp_program_data(r->p, c->optim.step) = 1;
    }
}

static void runner_free(runner *r) {
    hp_program_destroy(r->p);
    hp_pool_destroy(r->pool);
    hp_param_store_free(&r->ps);
}

static float loss_of(const runner *r, const hp_compiled *c) { return ((const float *)hp_program_data(r->p, c->rg.loss))[0]; }

/* Every parameter's accumulated gradient equal bit for bit. */
static int same_grads(const runner *a, const runner *b, const hp_compiled *c) {
    const hp_graph *g = c->rg.g;
    int n = 0;
    for (int v = 0; v < g->nvals; v++) {
        if (g->vals[v].kind != HP_V_PARAM || g->vals[v].grad < 0) continue;
        int gv = g->vals[v].grad;
        size_t bytes = (size_t)hp_val_numel(g, gv) * hp_dtype_size(g->vals[gv].dtype);
        if (memcmp(hp_program_data(a->p, gv), hp_program_data(b->p, gv), bytes)) return 0;
        n++;
    }
    return n > 0;
}

int main(void) {
    hp_gpt2_config mc = {.L = 2, .NH = 4, .C = 32, .V = 200, .Vp = 256, .maxT = 16};
    hp_graph *model;
    hp_gpt2_io io;
    hp_kernels_init();
    CHECK_OK(hp_graph_create(&model));
    CHECK_OK(hp_gpt2_build(model, &io, &mc, B, T));
    int32_t tok[K * B * T], tgt[K * B * T];
    for (int i = 0; i < K * B * T; i++) tok[i] = (i * 37 + 5) % 200, tgt[i] = (i * 53 + 11) % 200;
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_compile_opts o = {.train = 1, .optim = &oc, .max_norm = 1.0f, .grad_accum = K,
                         .schedule = {.overlap = 1, .max_inflight = 4}};
    hp_compiled c;
    CHECK_OK(hp_compile(&c, model, NULL, 0, &o));

    /* the schedule's lists: F0 B0 F1 B1 Opt; evaluation one forward */
    const hp_action_list *s = &c.sched.step;
    CHECK(s->n == 2 * K + 1 && s->nmicro == K && !s->tree && s->loss == c.rg.loss);
    for (int m = 0; m < K && s->n == 2 * K + 1; m++) {
        CHECK(s->act[2 * m].kind == HP_ACT_FWD && s->act[2 * m].micro == m && s->act[2 * m].chunk == 0);
        CHECK(s->act[2 * m + 1].kind == HP_ACT_BWD && s->act[2 * m + 1].micro == m);
    }
    CHECK(s->act[s->n - 1].kind == HP_ACT_OPT && s->act[s->n - 1].micro == -1);
    CHECK(c.sched.eval.n == 1 && c.sched.eval.act[0].kind == HP_ACT_FWD && c.sched.eval.nmicro == 1);

    /* one call against today's per-phase loop: losses, gradients, parameters bit for bit */
    runner a, b;
    runner_make(&a, &c, &mc, &io, model, tok, tgt);
    runner_make(&b, &c, &mc, &io, model, tok, tgt);
    float la = 0, lb = 0;
    double opt_s = 0;
    hp_step_io sio = {feeder_feed, &a.fd, &opt_s};
    CHECK_OK(hp_program_run_actions(a.p, &la, s, &sio));
    CHECK(a.fd.nfed == K && a.fd.fed[0] == 0 && a.fd.fed[1] == 1); /* fed once per micro-batch, in order */
    for (int m = 0; m < K; m++) {
        CHECK_OK(feeder_feed(&b.fd, m));
        CHECK_OK(hp_program_run(b.p, HP_PHASE_FWD));
        lb = m ? lb + loss_of(&b, &c) : loss_of(&b, &c);
        CHECK_OK(hp_program_run(b.p, HP_PHASE_BWD));
    }
    lb /= (float)K;
    CHECK(same_grads(&a, &b, &c));
    CHECK_OK(hp_program_run(b.p, HP_PHASE_OPT));
    CHECK(!memcmp(&la, &lb, sizeof la) && la > 0);
    CHECK(!memcmp(a.ps.data, b.ps.data, a.ps.total * sizeof(float)));
    CHECK(opt_s >= 0);

    /* two micro-batches in flight, and a split backward: refused, nothing run */
    hp_action fb[] = {{HP_ACT_FWD, 0, 0}, {HP_ACT_FWD, 1, 0}, {HP_ACT_BWD, 0, 0}, {HP_ACT_BWD, 1, 0}};
    hp_action_list l2 = {fb, 4, K, c.rg.loss, 0, NULL, 1};
    hp_status st = hp_program_run_actions(a.p, NULL, &l2, &(hp_step_io){feeder_feed, &a.fd, NULL});
    CHECK(st && strstr(hp_status_msg(st), "in flight"));
    hp_status_free(st);
    hp_action sp[] = {{HP_ACT_FWD, 0, 0}, {HP_ACT_BWD_INPUT, 0, 0}, {HP_ACT_BWD_WEIGHT, 0, 0}};
    hp_action_list l3 = {sp, 3, 1, c.rg.loss, 0, NULL, 1};
    st = hp_program_run_actions(a.p, NULL, &l3, NULL);
    CHECK(st && strstr(hp_status_msg(st), "not built"));
    hp_status_free(st);
    /* still usable: the evaluation list's loss is the forward's */
    CHECK_OK(hp_program_run_actions(a.p, &la, &c.sched.eval, &(hp_step_io){feeder_feed, &a.fd, NULL}));
    CHECK(la == loss_of(&a, &c));
    runner_free(&a);
    runner_free(&b);
    hp_compiled_free(&c);

    /* deterministic mode: losses as a tree, evaluation over every micro-batch */
    o.deterministic = 1;
    CHECK_OK(hp_compile(&c, model, NULL, 0, &o));
    CHECK(c.sched.step.tree && c.sched.eval.tree && c.sched.eval.n == K && c.sched.eval.nmicro == K);
    runner_make(&a, &c, &mc, &io, model, tok, tgt);
    CHECK_OK(hp_program_run_actions(a.p, &la, &c.sched.eval, &(hp_step_io){feeder_feed, &a.fd, NULL}));
    float l[K];
    for (int m = 0; m < K; m++) {
        CHECK_OK(feeder_feed(&a.fd, m));
        CHECK_OK(hp_program_run(a.p, HP_PHASE_FWD));
        l[m] = loss_of(&a, &c);
    }
    lb = (l[0] + l[1]) / (float)K;
    CHECK(!memcmp(&la, &lb, sizeof la));
    runner_free(&a);
    hp_compiled_free(&c);
    hp_graph_destroy(model);
    return hp_test_finish("test_actions");
}
