/* tests/api/test_plan_report_desc: the plan report's collectives and totals
 * read from the operators' descriptors (core/coll_desc.h), for the kinds the
 * GPT-2 plans do not have: a rank's compile of DP=2 x TP=2 with a send, a
 * recv and an all-to-all with uneven counts added along tp (the operators of
 * parallel/rank.h, as tests/parallel/test_p2p_ops.c builds them) lists each
 * transfer once (its start; the wait adds nothing) with its group, peer and
 * bytes, and tallies calls and bytes per phase and kind beside the
 * all-reduces the plan has; and the deterministic mode's exact gradient
 * norm is listed over the world on 2 ranks, not at all on one (nothing
 * moves). */
#include <stdio.h>
#include <string.h>

#include "api/plan_report.h"
#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "models/gpt2_plan.h"
#include "optim/sumsq_exact.h"
#include "parallel/compile.h"
#include "parallel/rank.h"
#include "testutil.h"

static const hp_plan_total *total(const hp_plan_rank_report *r, const char *phase, const char *kind) {
    for (int i = 0; i < r->ntotals; i++)
        if (!strcmp(r->totals[i].phase, phase) && !strcmp(r->totals[i].kind, kind)) return &r->totals[i];
    return NULL;
}

/* The collectives of phase whose steps begin with `steps`: how many, the last one in *out. */
static int colls(const hp_plan_rank_report *r, const char *phase, const char *steps, const hp_plan_collective **out) {
    int n = 0;
    for (int i = 0; i < r->ncollectives; i++)
        if (!strcmp(r->collectives[i].phase, phase) && !strncmp(r->collectives[i].steps, steps, strlen(steps)))
            n++, *out = &r->collectives[i];
    return n;
}

static int axis_of(const hp_mesh *m, const char *name) {
    for (int a = 0; a < m->ndim; a++)
        if (!strcmp(m->name[a], name)) return a;
    return -1;
}

static hp_graph *model_of(void) {
    hp_gpt2_config mc = {.L = 1, .NH = 2, .C = 16, .V = 50, .Vp = 64, .maxT = 8};
    hp_graph *g = NULL;
    hp_gpt2_io io;
    CHECK_OK(hp_graph_create(&g));
    CHECK_OK(hp_gpt2_build(g, &io, &mc, 4, 8));
    return g;
}

static void test_p2p(const hp_graph *model, const hp_compile_opts *o) {
    hp_plan plan;
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 2));
    hp_compiled cc;
    CHECK_OK(hp_compile(&cc, model, &plan, 1, o));
    int tp = axis_of(&cc.mesh, "tp");
    CHECK(tp >= 0);
    if (tp < 0) return;
    /* rank 1 is member 1 of its tp group: it sends 10 floats to member 0 in forward, receives 7 from
     * it in backward, and exchanges uneven pieces with the group in forward (3 to member 0, 0 to itself) */
    hp_graph *g = cc.rg.g;
    int x = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(10), "p2p.x");
    int y = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(7), "p2p.y");
    int ax = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(3), "a2a.x");
    int ay = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(5), "a2a.y");
    int64_t sc[2] = {3, 0}, rc[2] = {4, 1};
    CHECK(hp_comm_op_send(g, x, tp, 0, 0, HP_PHASE_FWD) >= 0);
    CHECK(hp_comm_op_recv(g, y, tp, 0, 1, HP_PHASE_BWD) >= 0);
    CHECK(hp_comm_op_all_to_all_v(g, ay, ax, tp, sc, rc, 2, 2, HP_PHASE_FWD) >= 0);
    CHECK_OK(hp_graph_status(g));

    hp_plan_rank_report r;
    memset(&r, 0, sizeof r);
    CHECK_OK(hp_plan_gather_rank(&r, &cc, NULL, 0, 1));
    const hp_plan_collective *c = NULL;
    CHECK(colls(&r, "fwd", "send(tp)", &c) == 1);
    if (c) CHECKF(c->communicates && c->bytes == 40 && !strcmp(c->groups, "tp[0,1]") && strstr(c->steps, "to member 0"),
                  "%s %s %g", c->steps, c->groups, c->bytes);
    c = NULL;
    CHECK(colls(&r, "bwd", "recv(tp)", &c) == 1);
    if (c) CHECKF(c->communicates && c->bytes == 28 && strstr(c->steps, "from member 0"), "%s %g", c->steps, c->bytes);
    c = NULL;
    CHECK(colls(&r, "fwd", "all-to-all(tp)", &c) == 1);
    if (c) CHECKF(c->bytes == 12 && !strcmp(c->groups, "tp[0,1]"), "%s %g", c->steps, c->bytes);
    const hp_plan_total *t = total(&r, "fwd", "send");
    CHECK(t && t->count == 1 && t->bytes == 40 && t->communicates);
    t = total(&r, "bwd", "recv");
    CHECK(t && t->count == 1 && t->bytes == 28 && t->communicates);
    t = total(&r, "fwd", "all-to-all");
    CHECK(t && t->count == 1 && t->bytes == 12 && t->communicates);
    CHECK(!total(&r, "fwd", "recv") && !total(&r, "bwd", "send") && !total(&r, "fwd", "broadcast"));
    /* the plan's own kinds still tallied: Megatron's all-reduces and the gradients' over dp */
    t = total(&r, "fwd", "all-reduce");
    CHECK(t && t->count > 0);
    t = total(&r, "bwd", "all-reduce");
    CHECK(t && t->count > 0);
    /* every total's count and bytes are the sums of its listed collectives of that kind
     * (the p2p kinds: one listed collective per call) */
    for (int i = 0; i < r.ntotals; i++) {
        const hp_plan_total *o = &r.totals[i];
        if (strcmp(o->kind, "send") && strcmp(o->kind, "recv") && strcmp(o->kind, "all-to-all")) continue;
        char pre[32];
        snprintf(pre, sizeof pre, "%s(", o->kind);
        double b = 0;
        int n = 0;
        for (int k = 0; k < r.ncollectives; k++)
            if (!strcmp(r.collectives[k].phase, o->phase) && !strncmp(r.collectives[k].steps, pre, strlen(pre)))
                n++, b += r.collectives[k].bytes;
        CHECKF(n == o->count && b == o->bytes, "%s %s: %d calls %g B listed, total %d %g", o->phase, o->kind, n, b,
               o->count, o->bytes);
    }
    hp_plan_rank_report_free(&r);
    hp_compiled_free(&cc);
    hp_plan_free(&plan);
}

/* The exact norm's all-gather: listed over the world on 2 ranks (its words to the other rank), absent on one. */
static void test_exact_norm(const hp_graph *model, const hp_compile_opts *o) {
    hp_compile_opts d = *o;
    d.deterministic = 1;
    for (int dp = 1; dp <= 2; dp++) {
        hp_plan plan;
        CHECK_OK(hp_plan_gpt2_dp_tp(&plan, dp, 1));
        hp_compiled cc;
        CHECK_OK(hp_compile(&cc, model, dp > 1 ? &plan : NULL, 0, &d));
        hp_plan_rank_report r;
        memset(&r, 0, sizeof r);
        CHECK_OK(hp_plan_gather_rank(&r, &cc, NULL, 0, 1));
        const hp_plan_collective *c = NULL;
        int n = colls(&r, "opt", "all-gather(world)", &c);
        if (dp == 1) {
            CHECK(n == 0 && !total(&r, "opt", "all-gather"));
        } else {
            CHECK(n == 1);
            if (c) CHECKF(c->bytes == 8.0 * HP_SUMSQ_EXACT_WORDS && strstr(c->steps, "gradient norm") &&
                              !strcmp(c->groups, "world[0..1]"),
                          "%s %s %g", c->steps, c->groups, c->bytes);
            const hp_plan_total *t = total(&r, "opt", "all-gather");
            CHECK(t && t->count == 1 && t->bytes == 8.0 * HP_SUMSQ_EXACT_WORDS);
        }
        hp_plan_rank_report_free(&r);
        hp_compiled_free(&cc);
        hp_plan_free(&plan);
    }
}

int main(void) {
    hp_kernels_init();
    hp_graph *model = model_of();
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_compile_opts o = {.train = 1, .optim = &oc, .max_norm = 1.0f};
    test_p2p(model, &o);
    test_exact_norm(model, &o);
    hp_graph_destroy(model);
    return hp_test_finish("test_plan_report_desc");
}
