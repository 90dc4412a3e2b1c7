/* Validation mode on moe-tiny (ranks as threads) under expert parallelism:
 *  - the layout propagation marks the MoE layer's rows in the ranks' own
 *    orders (the dispatched rows, the exchange's rows, the experts' outputs
 *    and their gradients) and nothing after the combine (its output, the
 *    experts' weight gradients);
 *  - EP 2, EP 2 with a capacity factor and DP 2 x EP 2 validate cleanly: every
 *    operator checked, the rows in own orders counted and not compared, the
 *    loss and every gradient within 1e-5 of one rank;
 *  - a wrong expert output on one rank (an own-order value, not compared
 *    itself) is caught where the combine puts the rows back per token, and a
 *    wrong shape of a dispatched buffer is caught at the dispatch;
 *  - a capacity decided over part of the tokens (DP 2 x EP 2: each ep group
 *    holds half the batch) is refused at creation with a one-line reason. */
#include <string.h>

#include "layout/plan.h"
#include "models/build.h"
#include "models/gpt2_plan.h"
#include "models/llama.h"
#include "ops/ops.h"
#include "runtime/dist.h"
#include "runtime/params.h"
#include "runtime/program.h"
#include "runtime/validate.h"
#include "testutil.h"

enum { B = 4, T = 16 };

typedef struct {
    hp_graph *g;
    hp_plan plan;
    hp_comm_world *world;
    hp_dist *d;
} setup;

/* moe-tiny (capacity factor cap) on the dp x ep plan, parameters and one batch scattered. */
static int setup_create(setup *s, int dp, int ep, double cap) {
    memset(s, 0, sizeof *s);
    hp_model_config mc;
    CHECK_OK(hp_moe_preset(&mc, "moe-tiny"));
    mc.capacity_factor = cap;
    CHECK_OK(hp_graph_create(&s->g));
    CHECK_OK(hp_llama_build(s->g, &mc, B, T));
    CHECK_OK(hp_plan_model_ep(&s->plan, "moe", 1, 1, dp, ep, 1));
    hp_comm_opts co;
    hp_comm_opts_default(&co);
    co.ranks_per_supernode = dp * ep;
    co.mpi = 0;
    co.timeout_s = 60;
    CHECK_OK(hp_comm_world_create(&s->world, &co));
    hp_dist_config dc = {.model = s->g, .plan = &s->plan, .world = s->world, .threads_per_rank = 1,
                         .compile = {.train = 1}};
    CHECK_OK(hp_dist_create(&s->d, &dc));
    if (!s->d) return 0;
    hp_param_store ps;
    CHECK_OK(hp_param_store_create(&ps, s->g));
    float *ptrs[128];
    CHECK(ps.n <= 128);
    for (int i = 0; i < ps.n && i < 128; i++) ptrs[i] = hp_param_ptr(&ps, i);
    CHECK_OK(hp_model_init(ptrs, s->g, (const char(*)[HP_NAME_LEN])ps.name, ps.n, 7));
    CHECK_OK(hp_dist_scatter_params(s->d, &ps));
    hp_param_store_free(&ps);
    int32_t tok[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) tok[i] = (int32_t)((i * 37 + 11) % 97), tgt[i] = (int32_t)((i * 53 + 5) % 89);
    const hp_graph *gg = hp_dist_global(s->d);
    int vt = hp_graph_find(gg, "tokens"), vg = hp_graph_find(gg, "targets");
    CHECK(vt >= 0 && vg >= 0);
    for (int i = 0; i < hp_dist_nranks(s->d); i++) {
        hp_dist_rank *r = hp_dist_rank_at(s->d, i);
        hp_dist_scatter_value(s->d, r, vt, hp_program_data(r->prog, r->c.rg.map[vt]), tok);
        hp_dist_scatter_value(s->d, r, vg, hp_program_data(r->prog, r->c.rg.map[vg]), tgt);
    }
    return 1;
}

static void setup_free(setup *s) {
    hp_dist_destroy(s->d);
    hp_comm_world_destroy(s->world);
    hp_plan_free(&s->plan);
    hp_graph_destroy(s->g);
}

/* The first node of layer 0 with this MoE role in the phase, -1. */
static int first_of(const hp_graph *g, hp_moe_role role, hp_phase ph) {
    for (int i = 0; i < g->nnodes; i++)
        if (hp_op_moe_role(g->nodes[i].op) == role && g->nodes[i].phase == ph && !strncmp(g->nodes[i].name, "h.0.", 4))
            return i;
    return -1;
}

/* Which values the propagation says are in the ranks' own row orders. */
static void check_orders(const hp_dist *d) {
    const hp_graph *g = hp_dist_global(d);
    const hp_propagation *p = hp_dist_propagation(d);
    int disp = first_of(g, HP_MOE_ROLE_DISPATCH, HP_PHASE_FWD), send = first_of(g, HP_MOE_ROLE_SEND, HP_PHASE_FWD);
    int ret = first_of(g, HP_MOE_ROLE_RETURN, HP_PHASE_FWD), exp = first_of(g, HP_MOE_ROLE_EXPERTS, HP_PHASE_FWD);
    int route = first_of(g, HP_MOE_ROLE_ROUTE, HP_PHASE_FWD);
    CHECK(disp >= 0 && send >= 0 && ret >= 0 && exp >= 0 && route >= 0);
    if (disp < 0 || send < 0 || ret < 0 || exp < 0 || route < 0) return;
    for (int k = 0; k < 3; k++) CHECK(p->own_order[g->nodes[disp].out[k]] && p->own_order[g->nodes[send].out[k]]);
    CHECK(p->own_order[g->nodes[exp].out[0]] && p->own_order[g->nodes[ret].out[0]]);
    CHECK(!p->own_order[g->nodes[route].out[0]] && !p->own_order[g->nodes[route].out[1]]);
    int yp = g->nodes[ret].out[0], combine = -1;
    for (int i = 0; i < g->nnodes && combine < 0; i++)
        for (int k = 0; k < g->nodes[i].nin; k++)
            if (g->nodes[i].in[k] == yp && g->nodes[i].phase == HP_PHASE_FWD) combine = i;
    CHECK(combine >= 0 && !p->own_order[g->nodes[combine].out[0]]);
    /* the experts' weight gradients are whole tensors again; the experts' input gradients follow the rows */
    int wg = hp_graph_find(g, "h.0.moe.experts.down.weight");
    CHECK(wg >= 0 && g->vals[wg].grad >= 0 && !p->own_order[g->vals[wg].grad]);
    int nown_bwd = 0;
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].phase == HP_PHASE_BWD && g->nodes[i].op == &hp_op_grouped_linear_bwd)
            nown_bwd += p->own_order[g->nodes[i].out[0]] && !p->own_order[g->nodes[i].out[1]];
    CHECK(nown_bwd > 0);
    CHECK(p->differs_node < 0);
}

/* returns the reference's loss */
static float test_clean(int dp, int ep, double cap) {
    setup s;
    if (!setup_create(&s, dp, ep, cap)) {
        setup_free(&s);
        return 0;
    }
    check_orders(s.d);
    hp_validator *v = NULL;
    hp_validate_config vc = {.g = hp_dist_global(s.d), .d = s.d};
    CHECK_OK(hp_validate_create(&v, &vc));
    if (!v) {
        setup_free(&s);
        return 0;
    }
    hp_validate_report rep = {0};
    CHECK_OK(hp_validate_step(v, &rep));
    CHECK_OK(hp_validate_gradients(v, &rep));
    CHECK(rep.nunchecked == 0);
    CHECK(rep.nown >= 8 * 4); /* per layer at least the dispatch's 3, the exchange's 3, the experts' outputs */
    CHECK(rep.nvalues > rep.nown);
    CHECK_NEAR(rep.loss, rep.ref_loss, 1e-6 * fabs(rep.ref_loss));
    CHECK(rep.ref_loss > 4.0f);
    CHECK(rep.ngrads > 0 && rep.worst_index >= 0 && rep.worst <= 1e-5 && rep.worst > 0);
    printf("dp=%d ep=%d capacity %g: %d operators, %d values compared, %d in own row orders; worst gradient error "
           "%.3g (%s)\n",
           dp, ep, cap, rep.nops, rep.nvalues, rep.nown, rep.worst,
           rep.worst_index >= 0 ? rep.grads[rep.worst_index].name : "-");
    float loss = rep.ref_loss;
    hp_validate_report_free(&rep);
    hp_validate_destroy(v);
    setup_free(&s);
    return loss;
}

typedef struct {
    int fault; /* 1: rank 1's first expert output row 0 off by 1; 2: rank 1's dispatched rows one row short */
    int done;
} fault;

static void hook(void *user, hp_validate_view *w) {
    fault *f = user;
    if (f->done || w->rank != 1 || w->node->phase != HP_PHASE_FWD) return;
    hp_moe_role role = hp_op_moe_role(w->node->op);
    if (f->fault == 1 && role == HP_MOE_ROLE_EXPERTS && w->out[0].dtype == HP_F32) {
        ((float *)w->out[0].data)[0] += 1.0f;
        f->done = 1;
    }
    if (f->fault == 2 && role == HP_MOE_ROLE_DISPATCH) {
        w->out[0].shape.d[0]--;
        f->done = 1;
    }
}

static void test_fault(int which, const char *want1, const char *want2) {
    setup s;
    if (!setup_create(&s, 1, 2, 0)) return setup_free(&s);
    hp_validator *v = NULL;
    hp_validate_config vc = {.g = hp_dist_global(s.d), .d = s.d};
    CHECK_OK(hp_validate_create(&v, &vc));
    if (!v) return setup_free(&s);
    fault f = {which, 0};
    hp_validate_set_hook(v, hook, &f);
    hp_validate_report rep = {0};
    hp_status st = hp_validate_step(v, &rep);
    CHECK(f.done);
    CHECK(st != HP_OK);
    if (st) {
        const char *msg = hp_status_msg(st);
        printf("fault %d: %s\n", which, msg);
        CHECK(!strncmp(msg, "validation: h.0.", 16));
        CHECKF(strstr(msg, want1) && strstr(msg, want2), "message lacks '%s' / '%s': %s", want1, want2, msg);
        CHECK(!strchr(msg, '\n'));
        hp_status_free(st);
    }
    hp_validate_report_free(&rep);
    hp_validate_destroy(v);
    setup_free(&s);
}

static void test_refused(void) {
    setup s;
    if (!setup_create(&s, 2, 2, 1.0)) return setup_free(&s);
    hp_validator *v = NULL;
    hp_validate_config vc = {.g = hp_dist_global(s.d), .d = s.d};
    hp_status st = hp_validate_create(&v, &vc);
    CHECK(st != HP_OK && !v);
    if (st) {
        const char *msg = hp_status_msg(st);
        printf("refused: %s\n", msg);
        CHECK(strstr(msg, "cannot be checked against one rank") && strstr(msg, "capacity factor") &&
              strstr(msg, "('dp' of 2 ranks)") && strstr(msg, "ep_send"));
        hp_status_free(st);
    }
    hp_validate_destroy(v);
    setup_free(&s);
}

int main(void) {
    float dropless = test_clean(1, 2, 0), capped = test_clean(1, 2, 1.0);
    CHECK(dropless != capped); /* the capacity dropped rows (the reference's and the owners' alike) */
    test_clean(2, 2, 0);
    test_fault(1, "moe_combine", "one rank computes");
    test_fault(2, "moe_dispatch", "holds local shape");
    test_refused();
    return hp_test_finish("test_validate_moe");
}
