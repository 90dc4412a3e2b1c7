/* hp_compile's passes, each on its own graph, and the pipeline end to end:
 *  - autodiff: the model graph is copied, never changed; the copy gains the
 *    backward; an already differentiated graph is taken as it is;
 *  - propagate: parameters keep the plan's layouts;
 *  - lower: redistributions where the plan needs them, node_of recorded for
 *    every local node (-1 only for inserted ones);
 *  - optimizer: grad_sumsq over every gradient (weights 1 / replicas), the
 *    sum over ranks only with more than one rank, one AdamW node over
 *    (param, grad, m, v) of every tensor, state values tied to their
 *    parameter (state_of) with its shape; Muon one node per matrix shape;
 *    Muon on a sharded matrix refused;
 *  - schedule: a permutation of the nodes, phases in order, every value
 *    produced before it is read, each gradient reduction's start before its
 *    wait, its wait before any reader of the reduced gradient and never more
 *    than max_inflight reductions in flight;
 *  - memory: the program runs exactly the schedule's order, and no step
 *    between a reduction's start and its wait writes bytes of the buffers the
 *    reduction reads or writes (the arena honours the order). */
#include <string.h>

#include "fixture.h"
#include "inflight_check.h"
#include "models/gpt2_plan.h"
#include "optim/muon_dist.h"
#include "optim/phase.h"
#include "parallel/compile.h"
#include "parallel/rank.h"
#include "runtime/program.h"

static int count_op(const hp_graph *g, const hp_opdef *op) {
    int n = 0;
    for (int i = 0; i < g->nnodes; i++) n += g->nodes[i].op == op;
    return n;
}

static int count_kind(const hp_graph *g, hp_vkind k) {
    int n = 0;
    for (int v = 0; v < g->nvals; v++) n += g->vals[v].kind == k;
    return n;
}

static const hp_node *find_op(const hp_graph *g, const hp_opdef *op) {
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == op) return &g->nodes[i];
    return NULL;
}

static int reads(const hp_graph *g, const hp_node *n, int v) {
    for (int k = 0; k < hp_node_nin_all(n); k++)
        if (hp_node_input(g, n, k) == v) return 1;
    return 0;
}

/* The schedule's invariants on a compiled rank. */
static void check_schedule(const hp_compiled *c, int max_inflight) {
    const hp_graph *g = c->rg.g;
    const hp_schedule *s = &c->sched;
    CHECK(s->n == g->nnodes);
    int *pos = malloc(sizeof(int) * (size_t)g->nnodes);
    for (int i = 0; i < g->nnodes; i++) pos[i] = -1;
    for (int k = 0; k < s->n; k++) {
        CHECK(s->order[k] >= 0 && s->order[k] < g->nnodes && pos[s->order[k]] < 0);
        pos[s->order[k]] = k;
    }
    for (int ph = 0; ph < HP_NPHASES; ph++)
        for (int k = s->begin[ph]; k < s->begin[ph + 1]; k++) CHECK((int)g->nodes[s->order[k]].phase == ph);
    /* every input is produced earlier in the order (or is not produced by a node) */
    for (int k = 0; k < s->n; k++) {
        const hp_node *n = &g->nodes[s->order[k]];
        for (int j = 0; j < hp_node_nin_all(n); j++) {
            int v = hp_node_input(g, n, j), p = g->vals[v].producer;
            if (p >= 0) CHECK(pos[p] < k);
        }
    }
    /* start / wait pairs */
    int inflight = 0, most = 0;
    for (int k = 0; k < s->n; k++) {
        const hp_node *n = &g->nodes[s->order[k]];
        if (n->op == &hp_op_redistribute_start) most = ++inflight > most ? inflight : most;
        if (n->op == &hp_op_redistribute_wait) {
            inflight--;
            int dst = n->in[0], start = g->vals[dst].producer;
            CHECK(g->nodes[start].op == &hp_op_redistribute_start && pos[start] < k);
            CHECK(g->nodes[start].a.i[1] == n->a.i[1]); /* the same slot */
            for (int q = pos[start] + 1; q < k; q++) CHECK(!reads(g, &g->nodes[s->order[q]], dst));
        }
    }
    CHECK(inflight == 0 && most <= max_inflight);
    /* the gradients are read only by the optimizer: the window fills */
    if (s->nsplit) CHECK(most == (s->nsplit < max_inflight ? s->nsplit : max_inflight));
    free(pos);
}

/* The program runs the schedule's order, and the arena keeps in-flight buffers apart. */
static void check_program_order(const hp_compiled *c) {
    const hp_graph *g = c->rg.g;
    hp_param_store ps;
    CHECK_OK(hp_param_store_create(&ps, g));
    hp_pool *pool;
    CHECK_OK(hp_pool_create(&pool, 1));
    hp_program *p;
    CHECK_OK(hp_program_create_ordered(&p, g, c->sched.order, c->sched.n, &c->mem, &ps, pool, NULL));
    int k = 0;
    for (int ph = 0; ph < HP_NPHASES; ph++)
        for (int i = 0; i < hp_program_num_steps(p, (hp_phase)ph); i++, k++)
            CHECK(hp_program_step_node(p, (hp_phase)ph, i) - g->nodes == c->sched.order[k]);
    CHECK(k == c->sched.n);
    CHECK(hp_program_get_info(p)->arena_bytes == c->mem.arena_bytes);
    /* between a start and its wait, no step writes into the bytes of its src or dst */
    check_inflight_apart(c, p);
    hp_program_destroy(p);
    hp_pool_destroy(pool);
    hp_param_store_free(&ps);
}

/* Muon's matrices in c's program are distributed Muon's: no whole-matrix muon_update, an owner's muon_orth. */
static void check_distributed_muon(const hp_compiled *c) {
    CHECK(count_op(c->rg.g, &hp_op_muon_update) == 0 && count_op(c->rg.g, &hp_op_muon_orth) >= 1);
}

int main(void) {
    const int B = 4, T = 8;
    hp_gpt2_config mc = {.L = 2, .NH = 4, .C = 32, .V = 200, .Vp = 256, .maxT = 16};
    hp_graph *model;
    hp_gpt2_io io;
    CHECK_OK(hp_graph_create(&model));
    CHECK_OK(hp_gpt2_build(model, &io, &mc, B, T));
    int nfwd = model->nnodes, nparams = hp_graph_params(model, NULL, 0);
    hp_optim_config oc;
    hp_optim_config_default(&oc);

    /* ---- one rank, AdamW ---- */
    hp_compiled c1;
    hp_compile_opts o = {.train = 1, .optim = &oc, .max_norm = 1.0f, .schedule = {.overlap = 1, .max_inflight = 4}};
    CHECK_OK(hp_compile(&c1, model, NULL, 0, &o));
    CHECK(model->nnodes == nfwd && model->loss_seed < 0); /* the model is not changed */
    CHECK(c1.global->nnodes > nfwd && c1.global->loss_seed >= 0);
    CHECK(c1.npasses == 8);
    const char *names[] = {"autodiff", "propagate", "fsdp", "lower", "optimizer", "grad in place", "schedule", "memory"};
    for (int i = 0; i < 8 && i < c1.npasses; i++) CHECK(!strcmp(c1.passes[i].name, names[i]));
    const hp_graph *lg = c1.rg.g;
    CHECK(count_op(lg, &hp_op_grad_sumsq) == 1 && count_op(lg, &hp_op_sumsq_combine) == 0);
    CHECK(count_op(lg, &hp_op_adamw_update) == 1 && count_op(lg, &hp_op_muon_update) == 0);
    CHECK(count_op(lg, &hp_op_redistribute) + count_op(lg, &hp_op_redistribute_start) == 0);
    CHECK(count_kind(lg, HP_V_STATE) == 2 * nparams);
    const hp_node *ad = find_op(lg, &hp_op_adamw_update);
    if (ad) {
        CHECK(ad->nin == 3 && ad->nxin == 4 * nparams && ad->phase == HP_PHASE_OPT);
        for (int k = 0; k < nparams; k++) {
            int p = lg->xin[ad->xin_at + 4 * k], gr = lg->xin[ad->xin_at + 4 * k + 1];
            int m = lg->xin[ad->xin_at + 4 * k + 2], v = lg->xin[ad->xin_at + 4 * k + 3];
            CHECK(lg->vals[p].kind == HP_V_PARAM && lg->vals[p].grad == gr);
            CHECK(lg->vals[m].state_of == p && lg->vals[v].state_of == p);
            CHECK(hp_shape_eq(&lg->vals[m].shape, &lg->vals[p].shape));
            CHECK(!strncmp(lg->vals[m].name, "adamw.m.", 8) && !strcmp(lg->vals[m].name + 8, lg->vals[p].name));
        }
    }
    const hp_node *ss = find_op(lg, &hp_op_grad_sumsq);
    if (ss) {
        CHECK(ss->nxin == nparams);
        const float *w = hp_graph_blob_at(lg, lg->vals[ss->in[0]].init);
        for (int k = 0; k < nparams; k++) CHECK(w[k] == 1.0f);
    }
    for (int i = 0; i < lg->nnodes; i++) CHECK(c1.rg.node_of[i] >= 0 || lg->nodes[i].phase == HP_PHASE_OPT);
    check_schedule(&c1, 4);
    check_program_order(&c1);
    hp_compiled_free(&c1);

    /* ---- one rank, Muon: one node per matrix shape ---- */
    oc.kind = HP_OPT_MUON;
    CHECK_OK(hp_compile(&c1, model, NULL, 0, &o));
    int nmuon = count_op(c1.rg.g, &hp_op_muon_update);
    CHECK(nmuon >= 2 && c1.optim.nmuon_groups == nmuon);
    for (int i = 0; i < c1.rg.g->nnodes; i++) {
        const hp_node *n = &c1.rg.g->nodes[i];
        if (n->op != &hp_op_muon_update) continue;
        const hp_shape *s0 = &c1.rg.g->vals[c1.rg.g->xin[n->xin_at]].shape;
        for (int k = 0; k < n->nxin; k += 3) {
            const hp_shape *s = &c1.rg.g->vals[c1.rg.g->xin[n->xin_at + k]].shape;
            CHECK(s->d[s->ndim - 1] == s0->d[s0->ndim - 1] && s->d[s->ndim - 2] == s0->d[s0->ndim - 2]);
        }
    }
    hp_compiled_free(&c1);
    /* Muon on tensor-parallel cuts (and FSDP x TP, with HSDP's replicas too) is distributed Muon (no
     * whole-matrix update of a block); a matrix cut along two axes is refused (not handled yet), naming it */
    hp_plan tp;
    CHECK_OK(hp_plan_gpt2_dp_tp(&tp, 1, 2));
    CHECK_OK(hp_compile(&c1, model, &tp, 0, &o));
    check_distributed_muon(&c1);
    hp_compiled_free(&c1);
    hp_plan_free(&tp);
    CHECK_OK(hp_plan_gpt2(&tp, 1, 2, 2));
    CHECK_OK(hp_plan_set_fsdp(&tp, "shard=dp", "test"));
    CHECK_OK(hp_compile(&c1, model, &tp, 0, &o));
    hp_compiled_free(&c1);
    hp_plan_free(&tp);
    CHECK_OK(hp_plan_gpt2(&tp, 2, 2, 2)); /* HSDP x TP: three axes, the matrices distributed too */
    CHECK_OK(hp_plan_set_fsdp(&tp, "shard=dp replicate=rep", "test"));
    CHECK_OK(hp_compile(&c1, model, &tp, 0, &o));
    check_distributed_muon(&c1);
    hp_compiled_free(&c1);
    hp_plan_free(&tp);
    /* a matrix cut along two axes (rows on dp, columns on tp) is refused, naming it */
    CHECK_OK(hp_plan_parse(&tp, "mesh: dp=2,tp=2\nparam h.*.mlp.fc.weight: S(0)@dp,S(1)@tp\n", "two.plan"));
    hp_status st = hp_compile(&c1, model, &tp, 0, &o);
    CHECK(st != HP_OK && strstr(hp_status_msg(st), "distributed Muon does not handle matrices cut along two mesh axes") &&
          strstr(hp_status_msg(st), "h.0.mlp.fc.weight"));
    hp_status_free(st);
    hp_plan_free(&tp);
    oc.kind = HP_OPT_ADAMW;

    /* ---- DP=2 x TP=2, rank 1: reductions overlapped, the norm summed over ranks ---- */
    hp_plan plan;
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 2));
    for (int window = 1; window <= 4; window += 3) {
        o.schedule.max_inflight = window;
        hp_compiled c;
        CHECK_OK(hp_compile(&c, model, &plan, 1, &o));
        lg = c.rg.g;
        for (int v = 0; v < c.global->nvals; v++)
            if (c.global->vals[v].kind == HP_V_PARAM) CHECK(hp_layout_eq(&c.prop.val[v], &c.layouts[v]));
        CHECK(count_op(lg, &hp_op_redistribute) > 0);
        CHECK(count_op(lg, &hp_op_sumsq_combine) == 1);
        /* every parameter's gradient is all-reduced over dp: each one a start/wait pair */
        CHECK(c.sched.nsplit == nparams && count_op(lg, &hp_op_redistribute_wait) == nparams);
        CHECK(c.rg.ctx.nslots == window);
        for (int i = 0; i < lg->nnodes; i++) {
            const hp_node *n = &lg->nodes[i];
            int inserted = n->op == &hp_op_redistribute || n->op == &hp_op_redistribute_start ||
                           n->op == &hp_op_redistribute_wait || n->phase == HP_PHASE_OPT;
            CHECK(c.rg.node_of[i] >= 0 || inserted);
            if (c.rg.node_of[i] >= 0) { /* its global node's name (wgrad first's input-gradient half: + ".dgrad") */
                const char *gn = c.global->nodes[c.rg.node_of[i]].name;
                size_t gl = strlen(gn);
                CHECK(!strncmp(gn, n->name, gl) && (!n->name[gl] || !strcmp(n->name + gl, ".dgrad")));
            }
        }
        ss = find_op(lg, &hp_op_grad_sumsq);
        if (ss) { /* replicated pieces count 1 / replicas: 1/2 over tp for a tp-replicated tensor */
            const float *w = hp_graph_blob_at(lg, lg->vals[ss->in[0]].init);
            int halves = 0;
            for (int k = 0; k < ss->nxin; k++) {
                CHECK(w[k] == 0.5f || w[k] == 0.25f);
                halves += w[k] == 0.5f;
            }
            CHECK(halves > 0 && halves < ss->nxin);
        }
        check_schedule(&c, window);
        check_program_order(&c);
        hp_compiled_free(&c);
    }
    /* overlap off: no split */
    o.schedule.overlap = 0;
    hp_compiled c;
    CHECK_OK(hp_compile(&c, model, &plan, 0, &o));
    CHECK(c.sched.nsplit == 0 && count_op(c.rg.g, &hp_op_redistribute_start) == 0);
    check_schedule(&c, 1);
    hp_compiled_free(&c);
    hp_plan_free(&plan);

    /* an already differentiated graph is taken as it is */
    gpt2_fixture f;
    fixture_build(&f, mc, B, T, 3);
    int nb = f.g->nnodes;
    CHECK_OK(hp_compile(&c, f.g, NULL, 0, &o));
    CHECK(c.global->nnodes == nb && strstr(c.passes[0].note, "came differentiated"));
    hp_compiled_free(&c);
    fixture_free(&f);
    hp_graph_destroy(model);
    return hp_test_finish("test_compile");
}
