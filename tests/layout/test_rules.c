/* Sharding rules on hand-made nodes: per operator, the layouts each input is
 * consumed in, the output layouts, the redistribution cost, the penalty that
 * reduces Partial values before non-linear consumers, error messages, and
 * the fallback for an operator without a rule. */
#include "core/autodiff.h"
#include "layout/layout.h"
#include "layout/rules.h"
#include "ops/ops.h"
#include "testutil.h"
#include "layout_check.h"

static int last_node(const hp_graph *g) { return g->nnodes - 1; }

/* Runs the rule of the graph's last node. */
static hp_status rule(hp_strategy *st, const hp_graph *g, const hp_mesh *m, const char *a0, const char *a1,
                      const char *a2) {
    const char *a[3] = {a0, a1, a2};
    hp_layout arr[HP_MAX_IN];
    for (int k = 0; k < 3; k++) arr[k] = a[k] ? L(a[k], m) : hp_layout_replicated(m);
    return hp_sharding_rule(st, g, last_node(g), arr, m, NULL);
}

static void test_linear(void) {
    hp_mesh m = mesh("tp=2");
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    int x = hp_graph_input(g, "x", HP_F32, hp_shape3(2, 4, 16));
    int w = hp_graph_param(g, "w", hp_shape2(64, 16)), b = hp_graph_param(g, "b", hp_shape1(64));
    hp_linear(g, x, w, b);
    hp_strategy st;
    /* batch split */
    CHECK_OK(rule(&st, g, &m, "S(0)@tp", "R@tp", "R@tp"));
    CHECK(is(&st.out[0], "S(0)@tp", &m) && is(&st.in[0], "S(0)@tp", &m) && is(&st.in[1], "R@tp", &m));
    CHECK(st.cost == 0 && st.parallel_xent_axis == -1 && !st.no_rule);
    /* column parallel */
    CHECK_OK(rule(&st, g, &m, "R@tp", "S(0)@tp", "S(0)@tp"));
    CHECK(is(&st.out[0], "S(2)@tp", &m) && is(&st.in[2], "S(0)@tp", &m));
    CHECK(st.cost == 0);
    /* row parallel: the bias becomes Partial locally, the output is Partial */
    CHECK_OK(rule(&st, g, &m, "S(2)@tp", "S(1)@tp", "R@tp"));
    CHECK(is(&st.out[0], "P(sum)@tp", &m) && is(&st.in[2], "P(sum)@tp", &m) && is(&st.in[1], "S(1)@tp", &m));
    CHECK(st.cost == 0);
    /* x split on the contraction, W replicated: W is sliced locally (free) */
    CHECK_OK(rule(&st, g, &m, "S(2)@tp", "R@tp", "R@tp"));
    CHECK(is(&st.in[1], "S(1)@tp", &m) && is(&st.out[0], "P(sum)@tp", &m) && st.cost == 0);
    /* Partial x passes through (no consumer needs it reduced) */
    CHECK_OK(rule(&st, g, &m, "P(sum)@tp", "R@tp", "R@tp"));
    CHECK(is(&st.out[0], "P(sum)@tp", &m) && is(&st.in[0], "P(sum)@tp", &m) && is(&st.in[2], "P(sum)@tp", &m));
    /* batch-split x against a column-split W: gather the cheaper one. x is
     * 2*4*16*4 = 512 bytes (all-gather 256), W 64*16*4 = 4096 (all-gather 2048). */
    CHECK_OK(rule(&st, g, &m, "S(0)@tp", "S(0)@tp", "S(0)@tp"));
    CHECK(is(&st.in[0], "R@tp", &m) && is(&st.in[1], "S(0)@tp", &m) && is(&st.out[0], "S(2)@tp", &m));
    CHECK_NEAR(st.cost, 256, 1e-9);
    /* a Partial max cannot pass through a linear: reduced first (2 * 512 / 2 bytes) */
    CHECK_OK(rule(&st, g, &m, "P(max)@tp", "R@tp", "R@tp"));
    CHECK(is(&st.in[0], "R@tp", &m) && is(&st.out[0], "R@tp", &m));
    CHECK_NEAR(st.cost, 512, 1e-9);
    /* a bad arriving layout is named */
    CHECK_ERR(rule(&st, g, &m, "S(3)@tp", "R@tp", "R@tp"), "linear: input 'x'");
    hp_graph_destroy(g);

    /* 2-D mesh: batch on dp, columns on tp, independently */
    hp_mesh m2 = mesh("dp=2,tp=2");
    CHECK_OK(hp_graph_create(&g));
    x = hp_graph_input(g, "x", HP_F32, hp_shape3(2, 4, 16));
    w = hp_graph_param(g, "w", hp_shape3(3, 16, 16));
    b = hp_graph_param(g, "b", hp_shape2(3, 16));
    hp_linear(g, x, w, b);
    CHECK_OK(rule(&st, g, &m2, "S(0)@dp,R@tp", "R@dp,S(1)@tp", "R@dp,S(1)@tp"));
    CHECK(is(&st.out[0], "S(0)@dp,S(3)@tp", &m2) && st.cost == 0);
    hp_graph_destroy(g);
}

/* Partial outputs are reduced where they are produced when a non-linear
 * consumer would otherwise need them reduced. */
static void test_partial_penalty(void) {
    hp_mesh m = mesh("tp=2");
    hp_graph *g;
    hp_strategy st;
    for (int gelu_consumer = 0; gelu_consumer < 2; gelu_consumer++) {
        CHECK_OK(hp_graph_create(&g));
        int x = hp_graph_input(g, "x", HP_F32, hp_shape3(2, 4, 16));
        int w = hp_graph_param(g, "w", hp_shape2(64, 16));
        int y = hp_linear(g, x, w, -1);
        int lin = last_node(g);
        if (gelu_consumer)
            hp_gelu(g, y);
        else
            hp_add(g, y, y);
        hp_layout arr[2] = {L("S(2)@tp", &m), L("R@tp", &m)};
        CHECK_OK(hp_sharding_rule(&st, g, lin, arr, &m, NULL));
        if (gelu_consumer) {
            /* row parallel would leave y (2048 bytes, all-reduce 2048) for GELU
             * to reduce; gathering x (all-gather 256) is cheaper */
            CHECK(is(&st.in[0], "R@tp", &m) && is(&st.out[0], "R@tp", &m));
            CHECK_NEAR(st.cost, 256, 1e-9);
        } else {
            CHECK(is(&st.in[0], "S(2)@tp", &m) && is(&st.out[0], "P(sum)@tp", &m) && st.cost == 0);
        }
        int blockers[16];
        CHECK(g->nvals <= 16);
        hp_rule_partial_blockers(blockers, g, &m);
        CHECK(blockers[y] == (gelu_consumer ? 1 : 0));
        CHECK(blockers[x] == 0 && blockers[w] == 1); /* linear takes x Partial, never W */
        hp_graph_destroy(g);
    }

    /* add: R + P. With no consumer the Replicate side is made Partial (free);
     * before a GELU the Partial side is reduced (same bytes, no Partial left). */
    for (int gelu_consumer = 0; gelu_consumer < 2; gelu_consumer++) {
        CHECK_OK(hp_graph_create(&g));
        int a = hp_graph_input(g, "a", HP_F32, hp_shape2(4, 16)), c = hp_graph_input(g, "c", HP_F32, hp_shape2(4, 16));
        int s = hp_add(g, a, c);
        int add = last_node(g);
        if (gelu_consumer) hp_gelu(g, s);
        hp_layout arr[2] = {L("R@tp", &m), L("P(sum)@tp", &m)};
        CHECK_OK(hp_sharding_rule(&st, g, add, arr, &m, NULL));
        if (gelu_consumer) {
            CHECK(is(&st.in[0], "R@tp", &m) && is(&st.in[1], "R@tp", &m) && is(&st.out[0], "R@tp", &m));
            CHECK_NEAR(st.cost, 256, 1e-9); /* all-reduce of 256 bytes over 2: 2 * 256 / 2 */
        } else {
            CHECK(is(&st.in[0], "P(sum)@tp", &m) && is(&st.out[0], "P(sum)@tp", &m) && st.cost == 0);
        }
        /* S(0) + R: the Replicate side is sliced */
        hp_layout arr2[2] = {L("S(0)@tp", &m), L("R@tp", &m)};
        CHECK_OK(hp_sharding_rule(&st, g, add, arr2, &m, NULL));
        CHECK(is(&st.in[1], "S(0)@tp", &m) && is(&st.out[0], "S(0)@tp", &m) && st.cost == 0);
        hp_graph_destroy(g);
    }
}

static void test_linear_bwd(void) {
    hp_mesh m = mesh("tp=2");
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    int dy = hp_graph_value(g, HP_V_GRAD, HP_F32, hp_shape3(2, 4, 64), "dy");
    int x = hp_graph_input(g, "x", HP_F32, hp_shape3(2, 4, 16));
    int w = hp_graph_param(g, "w", hp_shape2(64, 16));
    int dx = hp_graph_value(g, HP_V_GRAD, HP_F32, hp_shape3(2, 4, 16), "dx");
    int dw = hp_graph_value(g, HP_V_GRAD, HP_F32, hp_shape2(64, 16), "dw");
    int db = hp_graph_value(g, HP_V_GRAD, HP_F32, hp_shape1(64), "db");
    int in[3] = {dy, x, w}, out[3] = {dx, dw, db};
    hp_graph_node_into(g, &hp_op_linear_bwd, in, 3, out, 3, NULL, HP_PHASE_BWD, -1);
    hp_strategy st;
    CHECK_OK(rule(&st, g, &m, "S(0)@tp", "S(0)@tp", "R@tp")); /* batch */
    CHECK(is(&st.out[0], "S(0)@tp", &m) && is(&st.out[1], "P(sum)@tp", &m) && is(&st.out[2], "P(sum)@tp", &m));
    CHECK(st.cost == 0);
    CHECK_OK(rule(&st, g, &m, "S(2)@tp", "R@tp", "S(0)@tp")); /* column parallel */
    CHECK(is(&st.out[0], "P(sum)@tp", &m) && is(&st.out[1], "S(0)@tp", &m) && is(&st.out[2], "S(0)@tp", &m));
    CHECK(st.cost == 0);
    CHECK_OK(rule(&st, g, &m, "R@tp", "S(2)@tp", "S(1)@tp")); /* row parallel */
    CHECK(is(&st.out[0], "S(2)@tp", &m) && is(&st.out[1], "S(1)@tp", &m) && is(&st.out[2], "R@tp", &m));
    CHECK(st.cost == 0);
    CHECK_OK(rule(&st, g, &m, "R@tp", "R@tp", "R@tp"));
    for (int k = 0; k < 3; k++) CHECK(is(&st.out[k], "R@tp", &m));
    /* a gradient not computed (-1) gets a Replicate placeholder */
    int out2[3] = {-1, dw, db};
    hp_graph_node_into(g, &hp_op_linear_bwd, in, 3, out2, 3, NULL, HP_PHASE_BWD, -1);
    CHECK_OK(rule(&st, g, &m, "S(0)@tp", "S(0)@tp", "R@tp"));
    CHECK(is(&st.out[0], "R@tp", &m) && is(&st.out[1], "P(sum)@tp", &m));
    hp_graph_destroy(g);
}

static void test_norm_pointwise(void) {
    hp_mesh m = mesh("tp=2");
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    int x = hp_graph_input(g, "x", HP_F32, hp_shape3(2, 4, 16));
    int w = hp_graph_param(g, "w", hp_shape1(16)), b = hp_graph_param(g, "b", hp_shape1(16));
    hp_layernorm(g, x, w, b, 1e-5f);
    int ln = last_node(g);
    hp_strategy st;
    CHECK_OK(rule(&st, g, &m, "S(1)@tp", "R@tp", "R@tp"));
    CHECK(is(&st.out[0], "S(1)@tp", &m) && is(&st.out[1], "S(1)@tp", &m) && is(&st.out[2], "S(1)@tp", &m));
    CHECK_OK(rule(&st, g, &m, "S(2)@tp", "R@tp", "R@tp")); /* normalised dim split: gathered */
    CHECK(is(&st.in[0], "R@tp", &m) && is(&st.out[0], "R@tp", &m));
    CHECK_NEAR(st.cost, 256, 1e-9);
    CHECK_OK(rule(&st, g, &m, "P(sum)@tp", "R@tp", "R@tp")); /* Partial: all-reduced */
    CHECK(is(&st.in[0], "R@tp", &m) && is(&st.out[0], "R@tp", &m));
    CHECK_NEAR(st.cost, 512, 1e-9);
    /* the weights must be whole, and a split parameter is never gathered */
    CHECK_ERR(rule(&st, g, &m, "S(0)@tp", "S(0)@tp", "R@tp"),
              "layernorm: parameter 'w' is S(0)@tp where the operator needs R@tp (with input 'x' S(0)@tp): no "
              "strategy on mesh axis 'tp' fits without moving a parameter across ranks");

    /* layernorm_bwd(dy, x, w, mean, rstd) */
    const hp_node *n = &g->nodes[ln];
    int dx = hp_graph_value(g, HP_V_GRAD, HP_F32, hp_shape3(2, 4, 16), "dx");
    int dw = hp_graph_value(g, HP_V_GRAD, HP_F32, hp_shape1(16), "dw");
    int db = hp_graph_value(g, HP_V_GRAD, HP_F32, hp_shape1(16), "db");
    int in[5] = {dx, x, w, n->out[1], n->out[2]}, out[3] = {dx, dw, db};
    hp_graph_node_into(g, &hp_op_layernorm_bwd, in, 5, out, 3, NULL, HP_PHASE_BWD, ln);
    hp_layout arr[5] = {L("S(0)@tp", &m), L("S(0)@tp", &m), L("R@tp", &m), L("S(0)@tp", &m), L("S(0)@tp", &m)};
    CHECK_OK(hp_sharding_rule(&st, g, last_node(g), arr, &m, NULL));
    CHECK(is(&st.out[0], "S(0)@tp", &m) && is(&st.out[1], "P(sum)@tp", &m) && is(&st.out[2], "P(sum)@tp", &m));
    CHECK(st.cost == 0);

    /* gelu: any split passes, Partial is reduced */
    hp_gelu(g, x);
    CHECK_OK(rule(&st, g, &m, "S(2)@tp", NULL, NULL));
    CHECK(is(&st.out[0], "S(2)@tp", &m) && st.cost == 0);
    CHECK_OK(rule(&st, g, &m, "P(sum)@tp", NULL, NULL));
    CHECK(is(&st.in[0], "R@tp", &m) && is(&st.out[0], "R@tp", &m));

    /* swiglu(x[2,4,2,8]) -> [2,4,8]: H passes to the output's last dim; the
     * gate/up dim cannot be split */
    int xs = hp_graph_input(g, "xs", HP_F32, hp_shape4(2, 4, 2, 8));
    hp_swiglu(g, xs);
    CHECK_OK(rule(&st, g, &m, "S(3)@tp", NULL, NULL));
    CHECK(is(&st.out[0], "S(2)@tp", &m));
    CHECK_OK(rule(&st, g, &m, "S(1)@tp", NULL, NULL));
    CHECK(is(&st.out[0], "S(1)@tp", &m));
    CHECK_OK(rule(&st, g, &m, "S(2)@tp", NULL, NULL));
    CHECK(is(&st.in[0], "R@tp", &m) && is(&st.out[0], "R@tp", &m));
    hp_graph_destroy(g);
}

static void test_attention(void) {
    hp_mesh m = mesh("tp=2");
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    int qkv = hp_graph_input(g, "qkv", HP_F32, hp_shape4(2, 4, 3, 32));
    hp_attention(g, qkv, 4); /* head size 8: 2 heads per rank */
    hp_strategy st;
    CHECK_OK(rule(&st, g, &m, "S(3)@tp", NULL, NULL));
    CHECK(is(&st.out[0], "S(2)@tp", &m) && is(&st.out[1], "S(1)@tp", &m) && st.cost == 0);
    CHECK_OK(rule(&st, g, &m, "S(0)@tp", NULL, NULL));
    CHECK(is(&st.out[0], "S(0)@tp", &m) && is(&st.out[1], "S(0)@tp", &m));
    CHECK_OK(rule(&st, g, &m, "S(1)@tp", NULL, NULL)); /* sequence split: gathered */
    CHECK(is(&st.in[0], "R@tp", &m) && is(&st.out[0], "R@tp", &m));
    CHECK_NEAR(st.cost, 2 * 4 * 3 * 32 * 4 / 2.0, 1e-9);
    hp_rope(g, qkv, 4, 10000.0f);
    CHECK_OK(rule(&st, g, &m, "S(3)@tp", NULL, NULL));
    CHECK(is(&st.out[0], "S(3)@tp", &m));

    /* 3 ranks: chunks of ceil(32/3) = 11 columns split the heads of size 8 */
    hp_mesh m3 = mesh("tp=3");
    hp_attention(g, qkv, 4);
    CHECK_ERR(rule(&st, g, &m3, "S(3)@tp", NULL, NULL), "attention: input 'qkv' is S(3)@tp but 4 heads of size 8 cannot be split 3 ways");
    CHECK_OK(rule(&st, g, &m3, "S(0)@tp", NULL, NULL));
    /* two axes splitting heads: 4 heads over 2x2 ranks is fine, over 2x4 not */
    hp_mesh m22 = mesh("dp=2,tp=2"), m24 = mesh("dp=2,tp=4");
    CHECK_OK(rule(&st, g, &m22, "S(3)@dp,S(3)@tp", NULL, NULL));
    CHECK(is(&st.out[0], "S(2)@dp,S(2)@tp", &m22));
    CHECK_ERR(rule(&st, g, &m24, "S(3)@dp,S(3)@tp", NULL, NULL), "splits heads of size 8");

    /* attention_bwd(dy, qkv, att) mirrors the forward */
    int att_fwd = last_node(g) - 2; /* the first attention node */
    const hp_node *n = &g->nodes[att_fwd];
    int dqkv = hp_graph_value(g, HP_V_GRAD, HP_F32, hp_shape4(2, 4, 3, 32), "dqkv");
    int dy = hp_graph_value(g, HP_V_GRAD, HP_F32, hp_shape3(2, 4, 32), "dy");
    int in[3] = {dy, qkv, n->out[1]};
    hp_graph_node_into(g, &hp_op_attention_bwd, in, 3, &dqkv, 1, &n->a, HP_PHASE_BWD, att_fwd);
    CHECK_OK(rule(&st, g, &m, "S(2)@tp", "S(3)@tp", "S(1)@tp"));
    CHECK(is(&st.out[0], "S(3)@tp", &m) && st.cost == 0);
    CHECK_OK(rule(&st, g, &m, "S(0)@tp", "S(0)@tp", "S(0)@tp"));
    CHECK(is(&st.out[0], "S(0)@tp", &m));
    CHECK_ERR(rule(&st, g, &m3, "S(2)@tp", "S(3)@tp", "S(1)@tp"), "cannot be split 3 ways");
    hp_graph_destroy(g);
}

static void test_embedding_xent(void) {
    hp_mesh m = mesh("tp=2");
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    int ids = hp_graph_input(g, "ids", HP_I32, hp_shape2(2, 4));
    int tab = hp_graph_param(g, "tab", hp_shape2(128, 16));
    int e = hp_embedding(g, ids, tab);
    int emb = last_node(g);
    hp_strategy st;
    CHECK_OK(rule(&st, g, &m, "R@tp", "S(0)@tp", NULL)); /* vocabulary parallel */
    CHECK(is(&st.out[0], "P(sum)@tp", &m) && st.cost == 0);
    CHECK_OK(rule(&st, g, &m, "S(0)@tp", "R@tp", NULL));
    CHECK(is(&st.out[0], "S(0)@tp", &m));
    CHECK_OK(rule(&st, g, &m, "R@tp", "S(1)@tp", NULL));
    CHECK(is(&st.out[0], "S(2)@tp", &m));

    /* embedding_bwd: the table gradient follows the table's layout */
    int dt = hp_graph_value(g, HP_V_GRAD, HP_F32, hp_shape2(128, 16), "tab.grad");
    int de = hp_graph_value(g, HP_V_GRAD, HP_F32, hp_shape3(2, 4, 16), "de");
    int in[2] = {de, ids};
    hp_graph_node_into(g, &hp_op_embedding_bwd, in, 2, &dt, 1, NULL, HP_PHASE_BWD, emb);
    hp_layout val[8];
    CHECK(g->nvals <= 8);
    for (int v = 0; v < g->nvals; v++) val[v] = hp_layout_replicated(&m);
    val[tab] = L("S(0)@tp", &m);
    hp_rule_ctx ctx = {.val = val, .partial_blockers = NULL};
    hp_layout arr[2] = {L("R@tp", &m), L("R@tp", &m)};
    CHECK_OK(hp_sharding_rule(&st, g, last_node(g), arr, &m, &ctx));
    CHECK(is(&st.out[0], "S(0)@tp", &m));
    val[tab] = L("R@tp", &m);
    CHECK_OK(hp_sharding_rule(&st, g, last_node(g), arr, &m, &ctx));
    CHECK(is(&st.out[0], "R@tp", &m));
    arr[0] = arr[1] = L("S(1)@tp", &m);
    CHECK_OK(hp_sharding_rule(&st, g, last_node(g), arr, &m, &ctx));
    CHECK(is(&st.out[0], "P(sum)@tp", &m) && st.cost == 0);

    /* add_pos and its backward */
    int pos = hp_graph_param(g, "pos", hp_shape2(8, 16));
    int xp = hp_add_pos(g, e, pos);
    CHECK_OK(rule(&st, g, &m, "S(2)@tp", "S(1)@tp", NULL));
    CHECK(is(&st.out[0], "S(2)@tp", &m));
    CHECK_OK(rule(&st, g, &m, "S(1)@tp", "R@tp", NULL)); /* positions must stay whole */
    CHECK(is(&st.in[0], "R@tp", &m) && is(&st.out[0], "R@tp", &m));
    CHECK_OK(rule(&st, g, &m, "P(sum)@tp", "R@tp", NULL)); /* no consumer: stays Partial */
    CHECK(is(&st.in[1], "P(sum)@tp", &m) && is(&st.out[0], "P(sum)@tp", &m) && st.cost == 0);
    int dpos = hp_graph_value(g, HP_V_GRAD, HP_F32, hp_shape2(8, 16), "pos.grad");
    hp_graph_node_into(g, &hp_op_add_pos_bwd, &de, 1, &dpos, 1, NULL, HP_PHASE_BWD, last_node(g));
    CHECK_OK(rule(&st, g, &m, "S(0)@tp", NULL, NULL));
    CHECK(is(&st.out[0], "P(sum)@tp", &m));
    CHECK_OK(rule(&st, g, &m, "S(2)@tp", NULL, NULL));
    CHECK(is(&st.out[0], "S(1)@tp", &m));
    (void)xp;

    /* cross-entropy */
    int logits = hp_graph_input(g, "logits", HP_F32, hp_shape3(2, 4, 128));
    int tg = hp_graph_input(g, "targets", HP_I32, hp_shape2(2, 4));
    hp_xent(g, logits, tg, 100, NULL);
    int xe = last_node(g);
    CHECK_OK(rule(&st, g, &m, "S(0)@tp", "S(0)@tp", NULL));
    CHECK(is(&st.out[0], "P(sum)@tp", &m) && is(&st.out[1], "S(0)@tp", &m) && is(&st.out[2], "S(0)@tp", &m));
    CHECK(st.parallel_xent_axis == -1);
    CHECK_OK(rule(&st, g, &m, "S(2)@tp", "R@tp", NULL));
    CHECK(is(&st.out[0], "R@tp", &m) && is(&st.out[1], "S(2)@tp", &m) && is(&st.out[2], "R@tp", &m));
    CHECK(st.parallel_xent_axis == 0);
    CHECK_OK(rule(&st, g, &m, "S(0)@tp", "R@tp", NULL)); /* targets sliced locally */
    CHECK(is(&st.in[1], "S(0)@tp", &m) && st.cost == 0);
    hp_mesh m2 = mesh("dp=2,tp=2");
    CHECK_OK(rule(&st, g, &m2, "S(0)@dp,S(2)@tp", "S(0)@dp,R@tp", NULL));
    CHECK(is(&st.out[0], "P(sum)@dp,R@tp", &m2) && is(&st.out[1], "S(0)@dp,S(2)@tp", &m2));
    CHECK(st.parallel_xent_axis == 1);
    CHECK_ERR(rule(&st, g, &m2, "S(2)@dp,S(2)@tp", "R@dp,R@tp", NULL), "more than one axis");

    /* cross_entropy_bwd(dloss, probs, targets) */
    const hp_node *n = &g->nodes[xe];
    int dl = hp_graph_value(g, HP_V_GRAD, HP_F32, hp_shape3(2, 4, 128), "dlogits");
    int seed = hp_graph_value(g, HP_V_CONST, HP_F32, hp_shape1(1), "seed");
    int bin[3] = {seed, n->out[1], tg};
    hp_graph_node_into(g, &hp_op_xent_bwd, bin, 3, &dl, 1, &n->a, HP_PHASE_BWD, xe);
    CHECK_OK(rule(&st, g, &m, "R@tp", "S(2)@tp", "R@tp"));
    CHECK(is(&st.out[0], "S(2)@tp", &m) && st.parallel_xent_axis == 0);
    CHECK_OK(rule(&st, g, &m, "R@tp", "S(1)@tp", "S(1)@tp"));
    CHECK(is(&st.out[0], "S(1)@tp", &m) && st.parallel_xent_axis == -1);
    hp_graph_destroy(g);
}

/* An operator the rules do not know: gathered, run replicated, reported. */

static void test_unknown_op(void) {
    hp_mesh m = mesh("tp=2");
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    int x = hp_graph_input(g, "x", HP_F32, hp_shape2(4, 16));
    hp_graph_node(g, NULL, &mystery, &x, 1, NULL);
    CHECK(!hp_rule_known(&mystery) && hp_rule_known(&hp_op_linear) && hp_rule_known(&hp_op_xent_bwd));
    hp_strategy st;
    CHECK_OK(rule(&st, g, &m, "S(0)@tp", NULL, NULL));
    CHECK(st.no_rule && is(&st.in[0], "R@tp", &m) && is(&st.out[0], "R@tp", &m));
    CHECK_NEAR(st.cost, 128, 1e-9);
    int blockers[4];
    hp_rule_partial_blockers(blockers, g, &m);
    CHECK(blockers[x] == 1);
    hp_graph_destroy(g);
}

/* embedding_bwd_acc(dy, ids, dsofar): the running sum takes the output's
 * placement; a row-split running sum is gathered (no vocabulary-parallel
 * local operator yet). */
static void test_embedding_bwd_acc(void) {
    hp_mesh m = mesh("tp=2");
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    int dy = hp_graph_value(g, HP_V_GRAD, HP_F32, hp_shape3(2, 4, 16), "dy");
    int ids = hp_graph_input(g, "ids", HP_I32, hp_shape2(2, 4));
    int sofar = hp_graph_value(g, HP_V_GRAD, HP_F32, hp_shape2(128, 16), "sofar");
    int dt = hp_graph_value(g, HP_V_GRAD, HP_F32, hp_shape2(128, 16), "dt");
    int in[3] = {dy, ids, sofar};
    hp_graph_node_into(g, &hp_op_embedding_bwd_acc, in, 3, &dt, 1, NULL, HP_PHASE_BWD, -1);
    CHECK(hp_rule_known(&hp_op_embedding_bwd_acc));
    hp_strategy st;
    CHECK_OK(rule(&st, g, &m, "S(0)@tp", "S(0)@tp", "P(sum)@tp")); /* data parallel */
    CHECK(is(&st.out[0], "P(sum)@tp", &m) && is(&st.in[2], "P(sum)@tp", &m) && st.cost == 0);
    CHECK_OK(rule(&st, g, &m, "S(0)@tp", "S(0)@tp", "R@tp")); /* a Replicate sum made Partial locally */
    CHECK(is(&st.in[2], "P(sum)@tp", &m) && st.cost == 0);
    CHECK_OK(rule(&st, g, &m, "S(2)@tp", "R@tp", "S(1)@tp")); /* channels */
    CHECK(is(&st.out[0], "S(1)@tp", &m) && st.cost == 0);
    CHECK_OK(rule(&st, g, &m, "R@tp", "R@tp", "S(0)@tp")); /* rows: gathered */
    CHECK(is(&st.in[2], "R@tp", &m) && is(&st.out[0], "R@tp", &m));
    CHECK_NEAR(st.cost, 128 * 16 * 4 / 2.0, 1e-9);
    hp_graph_destroy(g);
}

/* Parameters never move between ranks: strategies that would gather, reduce
 * or re-split a parameter are not taken; an operator left without one is an
 * error naming the parameters, their layouts and the layouts it needs. */
static void test_param_moves(void) {
    hp_mesh m = mesh("tp=2");
    hp_graph *g;
    hp_strategy st;
    CHECK_OK(hp_graph_create(&g));
    int x = hp_graph_input(g, "x", HP_F32, hp_shape3(2, 4, 16));
    int w = hp_graph_param(g, "w", hp_shape2(64, 16)), b = hp_graph_param(g, "b", hp_shape1(64));
    hp_graph_scope(g, "fc");
    hp_linear(g, x, w, b);
    /* weight on its contraction dim, bias on its rows: the bias would have to
     * be gathered (row parallel) or the weight re-split (column parallel) */
    CHECK_ERR(rule(&st, g, &m, "R@tp", "S(1)@tp", "S(0)@tp"),
              "fc.linear: parameter 'b' is S(0)@tp where the operator needs P(sum)@tp or R@tp (with parameter 'w' "
              "S(1)@tp): no strategy on mesh axis 'tp' fits without moving a parameter across ranks");
    /* the same weight with a Replicate bias: row parallel, bias made Partial locally */
    CHECK_OK(rule(&st, g, &m, "R@tp", "S(1)@tp", "R@tp"));
    CHECK(is(&st.in[0], "S(2)@tp", &m) && is(&st.in[2], "P(sum)@tp", &m) && is(&st.out[0], "P(sum)@tp", &m));
    /* a batch-split input against a contraction-split weight: the input
     * could only be gathered (not re-split), so the weight would have to be */
    CHECK_ERR(rule(&st, g, &m, "S(0)@tp", "S(1)@tp", "R@tp"),
              "fc.linear: parameter 'w' is S(1)@tp where the operator needs R@tp (with input 'x' S(0)@tp): no strategy "
              "on mesh axis 'tp' fits without moving a parameter across ranks");

    hp_graph_destroy(g);

    /* a batch-split input (512 bytes) against a column-split weight (256):
     * gathering the weight would cost less, the input is gathered instead */
    CHECK_OK(hp_graph_create(&g));
    x = hp_graph_input(g, "x", HP_F32, hp_shape3(2, 4, 16));
    w = hp_graph_param(g, "w", hp_shape2(4, 16));
    hp_linear(g, x, w, -1);
    CHECK_OK(rule(&st, g, &m, "S(0)@tp", "S(0)@tp", NULL));
    CHECK(is(&st.in[0], "R@tp", &m) && is(&st.in[1], "S(0)@tp", &m) && is(&st.out[0], "S(2)@tp", &m));
    CHECK_NEAR(st.cost, 256, 1e-9);
    hp_graph_destroy(g);

    /* an operator without a rule cannot gather a split parameter */
    CHECK_OK(hp_graph_create(&g));
    w = hp_graph_param(g, "w", hp_shape2(4, 16));
    hp_graph_node(g, NULL, &mystery, &w, 1, NULL);
    CHECK_ERR(rule(&st, g, &m, "S(1)@tp", NULL, NULL),
              "mystery: operator 'mystery' has no sharding rule and runs on Replicate inputs, but parameter 'w' is "
              "S(1)@tp: parameters never move across ranks");
    CHECK_OK(rule(&st, g, &m, "R@tp", NULL, NULL));
    CHECK(st.no_rule);
    hp_graph_destroy(g);

    /* nested shards: each axis alone converts the weight locally, together
     * they need an all-gather (dp would split inside tp's chunks) */
    hp_mesh m2 = mesh("dp=2,tp=2");
    CHECK_OK(hp_graph_create(&g));
    x = hp_graph_input(g, "x", HP_F32, hp_shape3(2, 4, 16));
    w = hp_graph_param(g, "w", hp_shape2(8, 16));
    hp_linear(g, x, w, -1);
    CHECK_ERR(rule(&st, g, &m2, "S(2)@dp,R@tp", "R@dp,S(1)@tp", NULL),
              "linear: parameter 'w' is R@dp,S(1)@tp where the operator needs S(1)@dp,S(1)@tp, which takes "
              "all-to-all(tp");
    CHECK_ERR(rule(&st, g, &m2, "S(2)@dp,R@tp", "R@dp,S(1)@tp", NULL), "parameters never move across ranks");
    /* the same weight split on dp outside tp slices locally */
    CHECK_OK(rule(&st, g, &m2, "S(2)@dp,R@tp", "R@dp,R@tp", NULL));
    CHECK(is(&st.in[1], "S(1)@dp,R@tp", &m2) && st.cost == 0);
    hp_graph_destroy(g);
}

int main(void) {
    test_param_moves();
    test_embedding_bwd_acc();
    test_linear();
    test_partial_penalty();
    test_linear_bwd();
    test_norm_pointwise();
    test_attention();
    test_embedding_xent();
    test_unknown_op();
    return hp_test_finish("test_rules");
}
