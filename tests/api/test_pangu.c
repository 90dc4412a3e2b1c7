/* PanGu-α (models/pangu, issue 26):
 *  - the top query layer's gradients — its query table (a learned embedding
 *    of the position), the query and key/value projections, the final norm —
 *    match central finite differences of the loss in random directions
 *    (fp32, 2%), as do a block's and the tied word embedding's;
 *  - pangu-tiny trains through the public API (hp_model_pangu, hp_train) on
 *    text and its loss falls; over 2 pipeline stages (ZB-H1; the query layer
 *    on the last stage) its losses are 1 rank's within 1e-5;
 *  - the 200B configuration (64 layers, C 16384, 128 heads) compiles for one
 *    rank's view of the paper's 2,048 ranks — 16 pipeline stages x 16-way
 *    data x 8-way tensor parallel, 32 micro-batches — without allocating the
 *    model: rank 0's stage holds the embeddings and its blocks only, each cut
 *    8 ways, and no query-layer parameter;
 *  - presets and bad shapes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/autodiff.h"
#include "core/rng.h"
#include "kernels/kernels.h"
#include "layout/plan.h"
#include "models/pangu.h"
#include "ops/ops.h"
#include "parallel/compile.h"
#include "runtime/params.h"
#include "runtime/program.h"
#include "fd_params.h"
#include "testutil.h"

enum { B = 2, T = 8 };

static void gradients(void) {
    hp_model_config mc = {.layers = 2, .heads = 2, .channels = 16, .vocab = 40, .max_seq = T + 4};
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    CHECK_OK(hp_pangu_build(g, &mc, B, T));
    static const char *const names[] = {"q.top_query", "q.attn.q.weight", "q.attn.q.bias", "q.attn.kv.weight",
                                        "q.attn.proj.weight", "q.mlp.fc.weight", "ln_f.weight", "q.ln1.weight",
                                        "h.0.attn.qkv.weight", "wte", "wpe"};
    fd_params(g, B, T, mc.vocab, "ln", 0.3, 1e-2f, 3, names, (int)(sizeof names / sizeof names[0]));
    hp_graph_destroy(g);
}

static void trains(void) {
    hp_model_config mc;
    CHECK_OK(hp_model_config_pangu(&mc, "pangu-tiny"));
    CHECK(mc.layers == 4 && mc.channels == 64 && mc.heads == 4 && mc.vocab == 256);
    hp_model *m;
    CHECK_OK(hp_model_pangu(&m, &mc, 4, 32));
    hp_train_config tc;
    hp_train_config_default(&tc, m);
    tc.data = "/usr/share/common-licenses/GPL-3";
    tc.steps = 60, tc.warmup_steps = 5, tc.lr = 3e-3f, tc.threads = 1;
    tc.val_every = 0, tc.val_steps = 1;
    hp_train *t;
    CHECK_OK(hp_train_create(&t, &tc));
    float first = 0, loss = 0;
    for (int s = 0; s < 60; s++) {
        CHECK_OK(hp_train_step(t, &loss, NULL));
        if (!s) first = loss;
    }
    printf("pangu-tiny: loss %.4f -> %.4f over 60 steps\n", first, loss);
    CHECK(isfinite(loss) && loss < first - 1.0f);
    hp_train_free(t);
    hp_model_free(m);
}

/* pangu-tiny over 2 pipeline stages (the query layer on the last) against 1 rank, the same micro-batches */
static void pipelined(void) {
    hp_model_config mc;
    CHECK_OK(hp_model_config_pangu(&mc, "pangu-tiny"));
    float losses[2][20];
    for (int run = 0; run < 2; run++) {
        hp_model *m;
        CHECK_OK(hp_model_pangu(&m, &mc, 4, 32));
        hp_shard_plan *p = NULL;
        if (run) CHECK_OK(hp_shard_plan_parse(&p, "mesh: pp=2\n", "pp2"));
        hp_train_config tc;
        hp_train_config_default(&tc, m);
        tc.plan = p;
        tc.data = "/usr/share/common-licenses/GPL-3";
        tc.steps = 20, tc.warmup_steps = 2, tc.lr = 3e-3f, tc.threads = 2, tc.grad_accum = 4;
        tc.pp_schedule = "zb-h1";
        tc.val_every = 0, tc.val_steps = 1;
        hp_train *t;
        CHECK_OK(hp_train_create(&t, &tc));
        for (int s = 0; s < 20; s++) CHECK_OK(hp_train_step(t, &losses[run][s], NULL));
        hp_train_free(t);
        hp_shard_plan_free(p);
        hp_model_free(m);
    }
    double most = 0;
    for (int s = 0; s < 20; s++) most = fmax(most, fabs((double)losses[0][s] - losses[1][s]));
    printf("pangu-tiny PP 2 (zb-h1, 4 micro-batches) vs 1 rank: 20 steps, max |delta loss| %.3g\n", most);
    CHECK(most <= 1e-5 && losses[1][19] < losses[1][0]);
}

static void plan_200b(void) {
    hp_model_config mc;
    CHECK_OK(hp_pangu_preset(&mc, "pangu-200b"));
    CHECK(mc.layers == 64 && mc.channels == 16384 && mc.heads == 128 && mc.vocab == 40000);
    printf("pangu-200b: %.1fB parameters\n", (double)hp_pangu_num_params(&mc) / 1e9);
    CHECK(hp_pangu_num_params(&mc) > 190e9 && hp_pangu_num_params(&mc) < 215e9);
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    CHECK_OK(hp_pangu_build(g, &mc, 16, 1024)); /* a micro-batch of 16 sequences: one per data-parallel rank */
    static const char plan_text[] =
        "mesh: pp=16,dp=16,tp=8\n"
        "input tokens: S(0)@dp\n"
        "input targets: S(0)@dp\n"
        "param h.*.attn.qkv.weight: S(1)@tp\n"
        "param h.*.attn.qkv.bias: S(1)@tp\n"
        "param h.*.attn.proj.weight: S(1)@tp\n"
        "param h.*.mlp.fc.weight: S(0)@tp\n"
        "param h.*.mlp.fc.bias: S(0)@tp\n"
        "param h.*.mlp.proj.weight: S(1)@tp\n"
        "param q.attn.q.weight: S(1)@tp\n"
        "param q.attn.q.bias: S(1)@tp\n"
        "param q.attn.kv.weight: S(1)@tp\n"
        "param q.attn.kv.bias: S(1)@tp\n"
        "param q.attn.proj.weight: S(1)@tp\n"
        "param q.mlp.fc.weight: S(0)@tp\n"
        "param q.mlp.fc.bias: S(0)@tp\n"
        "param q.mlp.proj.weight: S(1)@tp\n"
        "param wte: S(0)@tp\n";
    hp_plan plan;
    CHECK_OK(hp_plan_parse(&plan, plan_text, "pangu-200b.plan"));
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_compile_opts o = {.train = 1, .optim = &oc, .max_norm = 1.0f, .grad_accum = 32,
                         .schedule = {.overlap = 1, .max_inflight = 4}, .pp = {.kind = HP_PP_1F1B, .chunks = 1},
                         .remat = {.policy = HP_REMAT_FULL}};
    hp_compiled c;
    CHECK_OK(hp_compile(&c, g, &plan, 0, &o));
    CHECK(c.pp.stages == 16 && c.pp.stage == 0);
    int h0 = hp_graph_find(c.rg.g, "h.0.attn.qkv.weight"), q = hp_graph_find(c.rg.g, "q.attn.q.weight");
    int wte = hp_graph_find(c.rg.g, "wte"), last = hp_graph_find(c.rg.g, "h.62.attn.qkv.weight");
    CHECK(h0 >= 0 && q < 0 && wte >= 0 && last < 0);
    if (h0 >= 0) CHECK(c.rg.g->vals[h0].shape.d[1] == 16384 / 8); /* the heads cut 8 ways */
    double params = 0;
    for (int v = 0; v < c.rg.g->nvals; v++)
        if (c.rg.g->vals[v].kind == HP_V_PARAM) params += (double)hp_val_numel(c.rg.g, v);
    printf("pangu-200b rank 0 (stage 0 of 16, tp 8): %.2fB parameters held, arena %.1f GB planned\n", params / 1e9,
           (double)c.mem.arena_bytes / 1e9);
    CHECK(params > 0.5e9 && params < 2.5e9); /* ~200B / 16 stages / 8 */
    hp_compiled_free(&c);
    hp_plan_free(&plan);
    hp_graph_destroy(g);
}

static void bad(void) {
    hp_model_config mc;
    hp_status st = hp_pangu_preset(&mc, "pangu-1t");
    CHECK(st && strstr(hp_status_msg(st), "pangu-tiny"));
    hp_status_free(st);
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    hp_model_config one = {.layers = 1, .heads = 2, .channels = 16, .vocab = 40, .max_seq = 8};
    st = hp_pangu_build(g, &one, 2, 8);
    CHECK(st && strstr(hp_status_msg(st), "query layer"));
    hp_status_free(st);
    hp_graph_destroy(g);
}

int main(void) {
    hp_kernels_init();
    gradients();
    trains();
    pipelined();
    plan_200b();
    bad();
    return hp_test_finish("test_pangu");
}
