/* Hand-written schedules of one step (core/action, hp_program_create_actions):
 * two micro-batches of a small GPT-2 with gradient accumulation, run as
 * F0 B0 F1 B1, as F0 F1 B0 B1 (two micro-batches in flight, each in its own
 * activation slot), and with backward split into input- and weight-gradient
 * actions (linear_bwd's weight products apart: F0 Bi0 Bw0 F1 Bi1 Bw1 and
 * F0 F1 Bi0 Bw0 Bi1 Bw1), each followed by the optimizer: the losses, the
 * accumulated gradients and the updated parameters are bit for bit those of
 * the schedule pass's own list on a plain program (today's accumulation). The
 * memory plan's activation peak of every order is within 5% of the arena the
 * program allocates, and F0 B0 F1 B1's peak is lower than F0 F1 B0 B1's. */
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
    float loss;
    float *grads; /* every parameter's accumulated gradient, in parameter order */
    size_t ngrads;
} result;

static const hp_gpt2_config mc = {.L = 2, .NH = 4, .C = 32, .V = 200, .Vp = 256, .maxT = 16};

/* Runs list l on c's graph g in order[0..n): on a plain program (planned = 0) or one created for l. */
static void run(result *r, const hp_compiled *c, const hp_graph *g, const int *order, int n, const hp_action_list *l,
                int planned, const int32_t *tok, const int32_t *tgt, const char *tokens, const char *targets) {
    memset(r, 0, sizeof *r);
    CHECK_OK(hp_param_store_create(&r->ps, g));
    float *ptrs[256];
    for (int i = 0; i < r->ps.n && i < 256; i++) ptrs[i] = hp_param_ptr(&r->ps, i);
    CHECK_OK(hp_gpt2_init(ptrs, (const char(*)[HP_NAME_LEN])r->ps.name, r->ps.shape, r->ps.n, &mc, 11));
    CHECK_OK(hp_pool_create(&r->pool, 1));
    if (planned)
        CHECK_OK(hp_program_create_actions(&r->p, g, order, n, l, &r->ps, r->pool, NULL));
    else
        CHECK_OK(hp_program_create_ordered(&r->p, g, order, n, &c->mem, &r->ps, r->pool, NULL));
    r->fd = (feeder){.p = r->p, .tokens = hp_graph_find(g, tokens), .targets = hp_graph_find(g, targets),
                     .micro = c->micro, .tok = tok, .tgt = tgt, .per = B * T, .count = K};
    CHECK(r->fd.tokens >= 0 && r->fd.targets >= 0 && c->micro >= 0);
    float lr[2] = {1e-3f, 1e-3f};
    memcpy(hp_program_data(r->p, c->optim.lr), lr, sizeof lr);
    *(int32_t *)hp_program_data(r->p, c->optim.step) = 1;
    CHECK_OK(hp_program_run_actions(r->p, &r->loss, l, &(hp_step_io){feeder_feed, &r->fd, NULL}));
    for (int v = 0; v < g->nvals; v++)
        if (g->vals[v].kind == HP_V_PARAM && g->vals[v].grad >= 0) r->ngrads += (size_t)hp_val_numel(g, g->vals[v].grad);
    r->grads = malloc(r->ngrads * sizeof(float));
    size_t at = 0;
    for (int v = 0; v < g->nvals; v++) {
        if (g->vals[v].kind != HP_V_PARAM || g->vals[v].grad < 0) continue;
        size_t k = (size_t)hp_val_numel(g, g->vals[v].grad);
        memcpy(r->grads + at, hp_program_data(r->p, g->vals[v].grad), k * sizeof(float));
        at += k;
    }
}

static void same(const result *a, const result *b, const char *what) {
    int ok = !memcmp(&a->loss, &b->loss, sizeof a->loss) && a->ngrads == b->ngrads && a->ngrads > 0 &&
             !memcmp(a->grads, b->grads, a->ngrads * sizeof(float)) && a->ps.total == b->ps.total &&
             !memcmp(a->ps.data, b->ps.data, a->ps.total * sizeof(float));
    if (!ok) fprintf(stderr, "%s: differs from the schedule's accumulation\n", what);
    CHECK(ok);
}

/* The plan's activation peak within 5% of the arena allocated; returns the peak. */
static size_t peak_near_arena(const result *r, const char *what) {
    const hp_program_info *in = hp_program_get_info(r->p);
    fprintf(stderr, "%-22s peak %8zu arena %8zu bytes\n", what, in->peak_bytes, in->arena_bytes);
    CHECK(in->peak_bytes > 0 && in->arena_bytes >= in->peak_bytes);
    CHECK((double)in->arena_bytes <= 1.05 * (double)in->peak_bytes);
    return in->peak_bytes;
}

static void done(result *r) {
    hp_program_destroy(r->p);
    hp_pool_destroy(r->pool);
    hp_param_store_free(&r->ps);
    free(r->grads);
}

#define F(m) {HP_ACT_FWD, m, 0}
#define BW(m) {HP_ACT_BWD, m, 0}
#define BI(m) {HP_ACT_BWD_INPUT, m, 0}
#define BWW(m) {HP_ACT_BWD_WEIGHT, m, 0}
#define OPT {HP_ACT_OPT, -1, 0}

int main(void) {
    hp_graph *model;
    hp_gpt2_io io;
    hp_kernels_init();
    CHECK_OK(hp_graph_create(&model));
    CHECK_OK(hp_gpt2_build(model, &io, &mc, B, T));
    const char *tokens = model->vals[io.tokens].name, *targets = model->vals[io.targets].name;
    int32_t tok[K * B * T], tgt[K * B * T];
    for (int i = 0; i < K * B * T; i++) tok[i] = (i * 37 + 5) % 200, tgt[i] = (i * 53 + 11) % 200;
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_compile_opts o = {.train = 1, .optim = &oc, .max_norm = 1.0f, .grad_accum = K,
                         .schedule = {.overlap = 1, .max_inflight = 4}};
    hp_compiled c, cs;
    CHECK_OK(hp_compile(&c, model, NULL, 0, &o));
    CHECK_OK(hp_compile(&cs, model, NULL, 0, &o));
    const hp_graph *g = c.rg.g;
    int loss = c.rg.loss;

    /* today's accumulation: the schedule pass's list on a plain program */
    result ref;
    run(&ref, &c, g, c.sched.order, c.sched.n, &c.sched.step, 0, tok, tgt, tokens, targets);

    hp_action a1[] = {F(0), BW(0), F(1), BW(1), OPT}, a2[] = {F(0), F(1), BW(0), BW(1), OPT};
    hp_action_list l1 = {a1, 5, K, loss, 0, NULL, 1}, l2 = {a2, 5, K, loss, 0, NULL, 1};
    result r1, r2;
    run(&r1, &c, g, c.sched.order, c.sched.n, &l1, 1, tok, tgt, tokens, targets);
    run(&r2, &c, g, c.sched.order, c.sched.n, &l2, 1, tok, tgt, tokens, targets);
    same(&r1, &ref, "F0 B0 F1 B1");
    same(&r2, &ref, "F0 F1 B0 B1");
    size_t p1 = peak_near_arena(&r1, "F0 B0 F1 B1"), p2 = peak_near_arena(&r2, "F0 F1 B0 B1");
    CHECK(p1 < p2);
    /* a program runs the list it was planned for only */
    hp_status st = hp_program_run_actions(r1.p, NULL, &l2, NULL);
    CHECK(st && strstr(hp_status_msg(st), "another action list"));
    hp_status_free(st);

    /* backward split into input- and weight-gradient actions */
    int cap = cs.sched.n + cs.rg.g->nnodes, n = cs.sched.n, nsplit = 0;
    int *order = malloc(sizeof(int) * (size_t)cap);
    memcpy(order, cs.sched.order, sizeof(int) * (size_t)n);
    CHECK_OK(hp_linear_bwd_split(&nsplit, cs.rg.g, order, &n, cap));
    CHECK(nsplit == 4 * mc.L + 1 && n == cs.sched.n + nsplit); /* qkv, proj, fc, fc_proj per block; the LM head */
    hp_action_kind *part = malloc(sizeof *part * (size_t)cs.rg.g->nnodes);
    CHECK_OK(hp_action_parts(part, cs.rg.g, order, n));
    int nw = 0, nin = 0;
    for (int i = 0; i < n; i++) nw += part[order[i]] == HP_ACT_BWD_WEIGHT, nin += part[order[i]] == HP_ACT_BWD_INPUT;
    fprintf(stderr, "split %d, input part %d, weight part %d nodes\n", nsplit, nin, nw);
    CHECK(nw > nsplit && nin > 0);
    free(part);
    hp_action a3[] = {F(0), BI(0), BWW(0), F(1), BI(1), BWW(1), OPT};
    hp_action a4[] = {F(0), F(1), BI(0), BWW(0), BI(1), BWW(1), OPT};
    hp_action_list l3 = {a3, 7, K, loss, 0, NULL, 1}, l4 = {a4, 7, K, loss, 0, NULL, 1};
    result r3, r4, r5;
    run(&r3, &cs, cs.rg.g, order, n, &l3, 1, tok, tgt, tokens, targets);
    run(&r4, &cs, cs.rg.g, order, n, &l4, 1, tok, tgt, tokens, targets);
    run(&r5, &cs, cs.rg.g, order, n, &l1, 1, tok, tgt, tokens, targets); /* split nodes, whole backward actions */
    same(&r3, &ref, "F0 Bi0 Bw0 F1 Bi1 Bw1");
    same(&r4, &ref, "F0 F1 Bi0 Bw0 Bi1 Bw1");
    same(&r5, &ref, "split, F0 B0 F1 B1");
    size_t p3 = peak_near_arena(&r3, "F0 Bi0 Bw0 F1 Bi1 Bw1"), p4 = peak_near_arena(&r4, "F0 F1 Bi0 Bw0 Bi1 Bw1");
    CHECK(p3 < p4);
    done(&ref), done(&r1), done(&r2), done(&r3), done(&r4), done(&r5);
    free(order);
    hp_compiled_free(&c);
    hp_compiled_free(&cs);
    hp_graph_destroy(model);
    return hp_test_finish("test_schedules");
}
