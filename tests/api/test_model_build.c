/* tests/api/test_model_build: writing a model through <hyperpar/hyperpar.h>
 * alone: the graph's first error sticks and comes back once, from
 * hp_model_from_graph, naming what is wrong (bad dims, missing inputs, no
 * loss); a small model written by hand trains (finite losses), its
 * parameters are listed in the order written, start by name (norm weights 1,
 * biases 0) or as the init stated where they are declared says
 * (hp_param_init), and count as declared; a checkpoint of it resumes bit for
 * bit, and inference and llm.c export refuse it in one line. One rank, one
 * thread. */
#include <hyperpar/hyperpar.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_check.h"

#define TEXT "/usr/share/common-licenses/GPL-3"
enum { B = 2, T = 8, C = 16, V = 256 };

/* tokens -> embedding -> layernorm -> linear head (+ bias) -> xent; with_targets /
 * with_loss leave those out to provoke errors. */
static hp_graph *small(int with_targets, int with_loss) {
    hp_graph *g = NULL;
    if (!OK(hp_graph_create(&g))) return NULL;
    int tok = hp_input(g, "tokens", HP_ELEM_I32, hp_dims2(B, T));
    int tgt = with_targets ? hp_input(g, "targets", HP_ELEM_I32, hp_dims2(B, T)) : -1;
    int x = hp_embedding(g, tok, hp_param(g, "embed.weight", hp_dims2(V, C)));
    hp_graph_scope(g, "head");
    int lnw = hp_param(g, "ln.weight", hp_dims1(C)), lnb = hp_param(g, "ln.bias", hp_dims1(C));
    int hw = hp_param(g, "head.weight", hp_dims2(V, C)), hb = hp_param(g, "head.bias", hp_dims1(V));
    x = hp_layernorm(g, x, lnw, lnb, 1e-5f);
    int logits = hp_linear(g, x, hw, hb);
    if (with_targets) {
        int per_position, loss = hp_xent(g, logits, tgt, V, &per_position);
        if (with_loss) hp_set_loss(g, loss, per_position);
    }
    hp_graph_scope(g, NULL);
    return g;
}

static void errors(void) {
    hp_model *m = NULL;
    /* a sticky error: every later call returns -1, the first error comes back */
    hp_graph *g = NULL;
    if (!OK(hp_graph_create(&g))) return;
    hp_dims bad = {5, {1, 1, 1, 1}};
    CHECK(hp_param(g, "too.many.dims", bad) == -1);
    CHECK(hp_graph_status(g) != HP_OK);
    CHECK(hp_input(g, "tokens", HP_ELEM_I32, hp_dims2(B, T)) == -1);
    CHECK(hp_gelu(g, 0) == -1);
    ERR(hp_model_from_graph(&m, g, V), "too.many.dims");
    CHECK(m == NULL);
    /* an element type that is not one */
    if (!OK(hp_graph_create(&g))) return;
    CHECK(hp_input(g, "tokens", (hp_elem)7, hp_dims2(B, T)) == -1);
    ERR(hp_model_from_graph(&m, g, V), "element type 7");
    /* a loss that is not a scalar */
    if (!OK(hp_graph_create(&g))) return;
    hp_set_loss(g, hp_param(g, "w", hp_dims1(3)), -1);
    ERR(hp_model_from_graph(&m, g, V), "not a scalar");
    ERR(hp_model_from_graph(&m, small(0, 0), V), "no i32 input 'targets'");
    ERR(hp_model_from_graph(&m, small(1, 0), V), "no loss set");
    ERR(hp_model_from_graph(&m, small(1, 1), 0), "vocab must be >= 1");
    ERR(hp_model_from_graph(&m, NULL, V), "g is NULL");
}

static void trains(void) {
    hp_model *m = NULL;
    if (!OK(hp_model_from_graph(&m, small(1, 1), V))) return;
    CHECK(hp_model_batch(m) == B && hp_model_seq(m) == T);
    CHECK(hp_model_num_params(m) == (long)V * C + 2 * C + (long)V * C + V);
    hp_train_config tc;
    hp_train_config_default(&tc, m);
    tc.threads = 1;
    tc.data = TEXT;
    tc.steps = 3;
    tc.warmup_steps = 0;
    tc.val_steps = 0;
    tc.init_llmc = "no.bin";
    hp_train *t = NULL;
    ERR(hp_train_create(&t, &tc), "not GPT-2");
    tc.init_llmc = NULL;
    if (OK(hp_train_create(&t, &tc))) {
        const char *want[] = {"embed.weight", "ln.weight", "ln.bias", "head.weight", "head.bias"};
        CHECK(hp_train_param_count(t) == 5);
        for (int i = 0; i < 5 && i < hp_train_param_count(t); i++) CHECK(!strcmp(hp_train_param_name(t, i), want[i]));
        float w[C], b[C], e[V * C];
        if (OK(hp_train_get_weight(t, "ln.weight", w, C)) && OK(hp_train_get_weight(t, "ln.bias", b, C)))
            for (int i = 0; i < C; i++) CHECK(w[i] == 1.0f && b[i] == 0.0f);
        if (OK(hp_train_get_weight(t, "embed.weight", e, V * C))) {
            double sq = 0;
            for (int i = 0; i < V * C; i++) sq += (double)e[i] * e[i];
            double sd = sqrt(sq / (V * C));
            CHECK(sd > 0.015 && sd < 0.025); /* N(0, 0.02) */
        }
        for (int s = 0; s < 3; s++) {
            float loss = NAN;
            if (OK(hp_train_step(t, &loss, NULL))) CHECK(isfinite(loss) && loss > 0);
        }
    }
    hp_train_free(t);
    hp_model_free(m);
}

static hp_status make(hp_train **t, const hp_model *m) {
    hp_train_config tc;
    hp_train_config_default(&tc, m);
    tc.threads = 1;
    tc.data = TEXT;
    tc.steps = 4;
    tc.warmup_steps = 0;
    tc.val_steps = 0;
    return hp_train_create(t, &tc);
}

/* GPT-2-only calls given a checkpoint of a model written by hand refuse it
 * with a one-line error naming the kind (no crash): inference (`hyperpar
 * sample`), llm.c export, and a GPT-2 trainer's load. */
static void refused(const char *dir) {
    hp_infer *inf = NULL;
    ERR(hp_infer_create(&inf, dir, 0, 1), "not GPT-2: inference reads GPT-2 checkpoints only");
    CHECK(inf == NULL);
    char out[400];
    snprintf(out, sizeof out, "%s/model.bin", dir);
    ERR(hp_export_llmc(out, dir, HP_LLMC_FP32), "not GPT-2: llm.c export reads GPT-2 checkpoints only");
    FILE *f = fopen(out, "rb");
    CHECK(f == NULL); /* nothing written */
    if (f) fclose(f);
    /* a GPT-2 run does not load it either (the kind is told before any shape) */
    hp_model_config mc = {.layers = 1, .heads = 2, .channels = 32, .vocab = V, .max_seq = T};
    hp_model *g2 = NULL;
    hp_train *t = NULL;
    if (OK(hp_model_gpt2(&g2, &mc, B, T)) && OK(make(&t, g2)))
        ERR(hp_train_load(t, dir), "the checkpoint's model is one written with the model-building API, the run's GPT-2");
    hp_train_free(t);
    hp_model_free(g2);
}

/* Inits stated where the parameters are declared, as the trainer starts
 * them: a uniform embedding within its bounds, a constant head bias, ones
 * and zeros for the norm; the same seed gives the same weights. */
static hp_graph *stated_graph(void) {
    hp_graph *g = NULL;
    if (!OK(hp_graph_create(&g))) return NULL;
    int tok = hp_input(g, "tokens", HP_ELEM_I32, hp_dims2(B, T));
    int tgt = hp_input(g, "targets", HP_ELEM_I32, hp_dims2(B, T));
    int emb = hp_param_init(g, "embed", hp_dims2(V, C), hp_init_uniform(-0.1, 0.1));
    int lnw = hp_param_init(g, "scale", hp_dims1(C), hp_init_ones());
    int lnb = hp_param_init(g, "shift", hp_dims1(C), hp_init_zeros());
    int hw = hp_param_init(g, "head", hp_dims2(V, C), hp_init_normal(0.05));
    int hb = hp_param_init(g, "head_bias", hp_dims1(V), hp_init_constant(0.25));
    int x = hp_layernorm(g, hp_embedding(g, tok, emb), lnw, lnb, 1e-5f);
    int per_position, loss = hp_xent(g, hp_linear(g, x, hw, hb), tgt, V, &per_position);
    hp_set_loss(g, loss, per_position);
    return g;
}

static void stated(void) {
    hp_model *m = NULL;
    hp_train *a = NULL, *b = NULL;
    static float e1[V * C], e2[V * C], h[V * C];
    float w[C], sh[C], hb[V];
    if (OK(hp_model_from_graph(&m, stated_graph(), V)) && OK(make(&a, m)) && OK(make(&b, m))) {
        if (OK(hp_train_get_weight(a, "embed", e1, V * C)) && OK(hp_train_get_weight(b, "embed", e2, V * C))) {
            CHECK(!memcmp(e1, e2, sizeof e1));
            float lo = 1, hi = -1;
            for (int i = 0; i < V * C; i++) lo = fminf(lo, e1[i]), hi = fmaxf(hi, e1[i]);
            CHECK(lo >= (float)-0.1 && hi <= (float)0.1 && lo < -0.09f && hi > 0.09f);
        }
        if (OK(hp_train_get_weight(a, "scale", w, C)) && OK(hp_train_get_weight(a, "shift", sh, C)))
            for (int i = 0; i < C; i++) CHECK(w[i] == 1.0f && sh[i] == 0.0f);
        if (OK(hp_train_get_weight(a, "head_bias", hb, V)))
            for (int i = 0; i < V; i++) CHECK(hb[i] == 0.25f);
        if (OK(hp_train_get_weight(a, "head", h, V * C))) {
            double sq = 0;
            for (int i = 0; i < V * C; i++) sq += (double)h[i] * h[i];
            double sd = sqrt(sq / (V * C));
            CHECK(sd > 0.045 && sd < 0.055); /* N(0, 0.05) on 4096 samples */
        }
        float loss = NAN;
        if (OK(hp_train_step(a, &loss, NULL))) CHECK(isfinite(loss) && loss > 0);
    }
    hp_train_free(a);
    hp_train_free(b);
    hp_model_free(m);
    /* a bad init: the graph's error, naming the parameter, from hp_model_from_graph */
    hp_graph *g = NULL;
    if (!OK(hp_graph_create(&g))) return;
    CHECK(hp_param_init(g, "w.weight", hp_dims2(4, 4), hp_init_normal(-1)) == -1);
    ERR(hp_model_from_graph(&m, g, V), "parameter 'w.weight': normal init's std -1");
    CHECK(m == NULL);
}

/* A checkpoint of a model written by hand: a second trainer loading it
 * continues bit for bit (state.json's model shape is accepted back). */
static void resumes(void) {
    char dir[] = "/tmp/test_model_build_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    hp_model *m = NULL;
    hp_train *a = NULL, *b = NULL;
    float la[4] = {0}, lb = 0;
    if (OK(hp_model_from_graph(&m, small(1, 1), V)) && OK(make(&a, m))) {
        for (int s = 0; s < 4; s++) {
            OK(hp_train_step(a, &la[s], NULL));
            if (s == 1) OK(hp_train_save(a, dir));
        }
        if (OK(make(&b, m)) && OK(hp_train_load(b, dir)))
            for (int s = 2; s < 4; s++)
                if (OK(hp_train_step(b, &lb, NULL))) CHECK(lb == la[s]);
    }
    hp_train_free(a);
    hp_train_free(b);
    hp_model_free(m);
    refused(dir);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

int main(void) {
    errors();
    trains();
    stated();
    resumes();
    if (failures) {
        fprintf(stderr, "test_model_build: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_model_build: ok\n");
    return 0;
}
