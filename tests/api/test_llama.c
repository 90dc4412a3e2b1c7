/* The Llama-style model (models/llama, issue 27):
 *  - every kind of parameter's gradient — the query and the grouped keys and
 *    values (one kv head for two query heads: repeated, RoPE'd, attended),
 *    the output projection, the SwiGLU MLP's gate/up and down, the RMSNorm
 *    weights, the untied embedding and head — matches central finite
 *    differences of the loss in random directions (fp32, 2%);
 *  - the parameter count is the graph's, and the presets have the published
 *    sizes (Llama-3 8B: 8.03B, 70B: 70.55B);
 *  - llama-tiny trains through the public API (hp_model_named, hp_train) on
 *    text and its loss falls; under the named shortcut plan with TP 2 (the
 *    query and kv heads, the MLP and the vocabulary cut) its losses are
 *    1 rank's within 1e-5;
 *  - Llama-3 70B compiles for rank 0's view of 64 ranks (TP 8 x PP 8) without
 *    allocating the model: the stage's blocks only, heads cut 8 ways (a kv head
 *    per rank);
 *  - presets and bad shapes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/kernels.h"
#include "layout/plan.h"
#include "models/gpt2_plan.h"
#include "models/llama.h"
#include "parallel/compile.h"
#include "runtime/params.h"
#include "runtime/program.h"
#include "fd_params.h"
#include "testutil.h"

enum { B = 2, T = 8 };

static void gradients(void) {
    hp_model_config mc = {.layers = 2, .heads = 2, .channels = 16, .vocab = 40, .max_seq = T + 4, .kv_heads = 1, .ffn = 24, .rope_theta = 10000.0f}; /* 2 query heads share 1 kv head */
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    CHECK_OK(hp_llama_build(g, &mc, B, T));
    int64_t counted = 0;
    for (int v = 0; v < g->nvals; v++)
        if (g->vals[v].kind == HP_V_PARAM) counted += hp_val_numel(g, v);
    CHECK(counted == hp_llama_num_params(&mc));
    static const char *const names[] = {"h.0.attn.q.weight",    "h.0.attn.kv.weight",   "h.1.attn.kv.weight",
                                        "h.0.attn.proj.weight", "h.0.mlp.gate_up.weight", "h.1.mlp.down.weight",
                                        "h.0.attn_norm.weight", "h.1.mlp_norm.weight",  "norm.weight",
                                        "tok_embeddings.weight", "output.weight"};
    fd_params(g, B, T, mc.vocab, "norm", 0.15, 2e-3f, 5, names, (int)(sizeof names / sizeof names[0]));
    hp_graph_destroy(g);
}

static void presets(void) {
    hp_model_config m8, m70;
    CHECK_OK(hp_model_config_llama(&m8, "llama3-8b"));
    CHECK_OK(hp_model_config_named(&m70, "llama3-70b"));
    printf("llama3-8b %.2fB, llama3-70b %.2fB parameters\n", (double)hp_llama_num_params(&m8) / 1e9,
           (double)hp_llama_num_params(&m70) / 1e9);
    CHECK(fabs((double)hp_llama_num_params(&m8) / 1e9 - 8.03) < 0.01);
    CHECK(fabs((double)hp_llama_num_params(&m70) / 1e9 - 70.55) < 0.01);
    CHECK(m8.kv_heads == 8 && m8.ffn == 14336 && m8.rope_theta == 500000.0f);
    CHECK(!strcmp(hp_model_family_name("llama-tiny"), "llama") && !strcmp(hp_model_family_name("gpt2"), "gpt2"));
    CHECK(hp_model_family_name("llama-1t") == NULL);
}

/* llama-tiny on text: 1 rank, then the named shortcut plan with TP 2, the same micro-batches */
static void trains(void) {
    hp_model_config mc;
    CHECK_OK(hp_model_config_named(&mc, "llama-tiny"));
    float losses[2][40];
    for (int run = 0; run < 2; run++) {
        hp_model *m;
        CHECK_OK(hp_model_named(&m, "llama-tiny", &mc, 4, 32));
        hp_shard_plan *p = NULL;
        if (run) CHECK_OK(hp_shard_plan_named(&p, "llama-tiny", 1, 1, 1, 2));
        hp_train_config tc;
        hp_train_config_default(&tc, m);
        tc.plan = p;
        tc.data = "/usr/share/common-licenses/GPL-3";
        tc.steps = 40, tc.warmup_steps = 4, tc.lr = 3e-3f, tc.threads = 2, tc.grad_accum = 2;
        tc.val_every = 0, tc.val_steps = 1;
        hp_train *t;
        CHECK_OK(hp_train_create(&t, &tc));
        for (int s = 0; s < 40; s++) CHECK_OK(hp_train_step(t, &losses[run][s], NULL));
        hp_train_free(t);
        hp_shard_plan_free(p);
        hp_model_free(m);
    }
    double most = 0;
    for (int s = 0; s < 40; s++) most = fmax(most, fabs((double)losses[0][s] - losses[1][s]));
    printf("llama-tiny: loss %.4f -> %.4f over 40 steps; TP 2 vs 1 rank max |delta loss| %.3g\n", losses[0][0],
           losses[0][39], most);
    CHECK(isfinite(losses[0][39]) && losses[0][39] < losses[0][0] - 1.0f);
    CHECK(most <= 1e-5);
}

static void plan_70b(void) {
    hp_model_config mc;
    CHECK_OK(hp_llama_preset(&mc, "llama3-70b"));
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    CHECK_OK(hp_llama_build(g, &mc, 1, 1024));
    hp_plan plan;
    CHECK_OK(hp_plan_model_pp(&plan, "llama", 8, 1, 1, 8));
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_compile_opts o = {.train = 1, .optim = &oc, .max_norm = 1.0f, .grad_accum = 8,
                         .schedule = {.overlap = 1, .max_inflight = 4}, .pp = {.kind = HP_PP_1F1B, .chunks = 1},
                         .remat = {.policy = HP_REMAT_FULL}};
    hp_compiled c;
    CHECK_OK(hp_compile(&c, g, &plan, 0, &o));
    CHECK(c.pp.stages == 8 && c.pp.stage == 0);
    int q = hp_graph_find(c.rg.g, "h.0.attn.q.weight"), kv = hp_graph_find(c.rg.g, "h.0.attn.kv.weight");
    int emb = hp_graph_find(c.rg.g, "tok_embeddings.weight"), out = hp_graph_find(c.rg.g, "output.weight");
    CHECK(q >= 0 && kv >= 0 && emb >= 0 && out < 0);
    if (q >= 0) CHECK(c.rg.g->vals[q].shape.d[1] == 8192 / 8);
    if (kv >= 0) CHECK(c.rg.g->vals[kv].shape.d[1] == 128); /* one kv head of 128 per rank */
    double params = 0;
    for (int v = 0; v < c.rg.g->nvals; v++)
        if (c.rg.g->vals[v].kind == HP_V_PARAM) params += (double)hp_val_numel(c.rg.g, v);
    printf("llama3-70b rank 0 (stage 0 of 8, tp 8): %.2fB parameters held, arena %.2f GB planned\n", params / 1e9,
           (double)c.mem.arena_bytes / 1e9);
    CHECK(params > 0.8e9 && params < 1.5e9); /* ~70.6B / 8 stages / 8 */
    hp_compiled_free(&c);
    hp_plan_free(&plan);
    hp_graph_destroy(g);
}

static void bad(void) {
    hp_model_config mc;
    hp_status st = hp_model_config_named(&mc, "llama-1t");
    CHECK(st && strstr(hp_status_msg(st), "llama-tiny") && strstr(hp_status_msg(st), "gpt2"));
    hp_status_free(st);
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    hp_model_config three = {.layers = 2, .heads = 4, .channels = 32, .vocab = 40, .max_seq = 8, .kv_heads = 3};
    st = hp_llama_build(g, &three, 2, 8);
    CHECK(st && strstr(hp_status_msg(st), "kv_heads"));
    hp_status_free(st);
    hp_graph_destroy(g);
}

int main(void) {
    hp_kernels_init();
    gradients();
    presets();
    trains();
    plan_70b();
    bad();
    return hp_test_finish("test_llama");
}
