#include "models/gpt2.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/rng.h"
#include "ops/ops.h"

hp_status hp_gpt2_config_check(hp_gpt2_config *c) {
    /* the limits first: Vp and the parameter count are computed from them */
#define LIMIT(v, name, max)                                                                                    \
    if ((v) > (max)) return hp_errorf("gpt2: %s = %d is above the limit of %d", name, (int)(v), (int)(max))
    LIMIT(c->L, "layers (L)", HP_GPT2_MAX_LAYERS);
    LIMIT(c->NH, "heads (NH)", HP_GPT2_MAX_HEADS);
    LIMIT(c->C, "channels (C)", HP_GPT2_MAX_CHANNELS);
    LIMIT(c->V, "vocabulary (V)", HP_GPT2_MAX_VOCAB);
    LIMIT(c->Vp, "padded vocabulary (Vp)", HP_GPT2_MAX_VOCAB);
    LIMIT(c->maxT, "max sequence length (maxT)", HP_GPT2_MAX_SEQ);
#undef LIMIT
    if (c->Vp == 0 && c->V > 0) c->Vp = (c->V + 127) / 128 * 128;
    if (c->L < 1) return hp_errorf("gpt2: layers (L) must be >= 1, got %d", c->L);
    if (c->NH < 1) return hp_errorf("gpt2: heads (NH) must be >= 1, got %d", c->NH);
    if (c->C < 1 || c->C % c->NH)
        return hp_errorf("gpt2: channels (C = %d) must be a positive multiple of heads (NH = %d)", c->C, c->NH);
    if (c->V < 1) return hp_errorf("gpt2: vocabulary (V) must be >= 1, got %d", c->V);
    if (c->Vp < c->V) return hp_errorf("gpt2: padded vocabulary Vp = %d is below V = %d", c->Vp, c->V);
    if (c->maxT < 1) return hp_errorf("gpt2: max sequence length (maxT) must be >= 1, got %d", c->maxT);
    size_t n = hp_gpt2_num_params(c); /* fits: every factor is within its limit */
    if ((int64_t)n > HP_GPT2_MAX_PARAMS)
        return hp_errorf("gpt2: %zu parameters (L=%d C=%d Vp=%d maxT=%d) are above the limit of %lld", n, c->L, c->C,
                         c->Vp, c->maxT, (long long)HP_GPT2_MAX_PARAMS);
    return HP_OK;
}

size_t hp_gpt2_num_params(const hp_gpt2_config *c) {
    size_t C = (size_t)c->C, L = (size_t)c->L;
    return (size_t)c->Vp * C + (size_t)c->maxT * C + L * (2 * C + 3 * C * C + 3 * C + C * C + C + 2 * C +
                                                         4 * C * C + 4 * C + 4 * C * C + C) + 2 * C;
}

hp_status hp_gpt2_build(hp_graph *g, hp_gpt2_io *io, const hp_gpt2_config *c, int B, int T) {
    if (B < 1 || T < 1) return hp_errorf("gpt2: batch (%d) and sequence length (%d) must be >= 1", B, T);
    if (T > c->maxT) return hp_errorf("gpt2: sequence length %d exceeds the model's maxT %d", T, c->maxT);
    int64_t C = c->C;
    char nm[HP_NAME_LEN];
    io->tokens = hp_graph_input(g, "tokens", HP_I32, hp_shape2(B, T));
    io->targets = hp_graph_input(g, "targets", HP_I32, hp_shape2(B, T));
    int wte = hp_graph_param(g, "wte", hp_shape2(c->Vp, C));
    int wpe = hp_graph_param(g, "wpe", hp_shape2(c->maxT, C));
    hp_graph_scope(g, "embed");
    int x = hp_embedding(g, io->tokens, wte);
    x = hp_add_pos(g, x, wpe);
    for (int l = 0; l < c->L; l++) {
#define P(suffix, shape) (snprintf(nm, sizeof nm, "h.%d.%s", l, suffix), hp_graph_param(g, nm, shape))
        int ln1w = P("ln1.weight", hp_shape1(C)), ln1b = P("ln1.bias", hp_shape1(C));
        /* fused QKV as [3, C, C]: q, k, v each shardable by heads (dim 1) */
        int qkvw = P("attn.qkv.weight", hp_shape3(3, C, C)), qkvb = P("attn.qkv.bias", hp_shape2(3, C));
        int prw = P("attn.proj.weight", hp_shape2(C, C)), prb = P("attn.proj.bias", hp_shape1(C));
        int ln2w = P("ln2.weight", hp_shape1(C)), ln2b = P("ln2.bias", hp_shape1(C));
        int fcw = P("mlp.fc.weight", hp_shape2(4 * C, C)), fcb = P("mlp.fc.bias", hp_shape1(4 * C));
        int fpw = P("mlp.proj.weight", hp_shape2(C, 4 * C)), fpb = P("mlp.proj.bias", hp_shape1(C));
#undef P
        hp_graph_scope(g, "h.%d.attn", l);
        int h = hp_layernorm(g, x, ln1w, ln1b, 1e-5f);
        h = hp_linear(g, h, qkvw, qkvb);
        h = hp_attention(g, h, c->NH);
        h = hp_linear(g, h, prw, prb);
        x = hp_add(g, x, h);
        hp_graph_scope(g, "h.%d.mlp", l);
        h = hp_layernorm(g, x, ln2w, ln2b, 1e-5f);
        h = hp_linear(g, h, fcw, fcb);
        h = hp_gelu(g, h);
        h = hp_linear(g, h, fpw, fpb);
        x = hp_add(g, x, h);
    }
    int lnfw = hp_graph_param(g, "lnf.weight", hp_shape1(C));
    int lnfb = hp_graph_param(g, "lnf.bias", hp_shape1(C));
    hp_graph_scope(g, "head");
    x = hp_layernorm(g, x, lnfw, lnfb, 1e-5f);
    io->logits = hp_linear(g, x, wte, -1);
    io->loss = hp_xent(g, io->logits, io->targets, c->V, &io->losses);
    hp_graph_scope(g, NULL);
    if (hp_graph_status(g)) return hp_errorf("gpt2: %s", hp_status_msg(hp_graph_status(g)));
    g->vals[io->loss].persistent = 1;
    g->vals[io->losses].persistent = 1;
    g->loss = io->loss; /* what training differentiates */
    return HP_OK;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

hp_status hp_gpt2_init(float *const *params, const char (*names)[HP_NAME_LEN], const hp_shape *shapes,
                       int n, const hp_gpt2_config *c, uint64_t seed) {
    hp_rng rng;
    hp_rng_seed(&rng, seed);
    double resid_std = 0.02 / sqrt(2.0 * c->L);
    for (int i = 0; i < n; i++) {
        const char *nm = names[i];
        size_t numel = (size_t)hp_shape_numel(&shapes[i]);
        float *p = params[i];
        if (ends_with(nm, ".bias")) {
            memset(p, 0, numel * sizeof(float));
        } else if (strstr(nm, "ln") && ends_with(nm, ".weight")) {
            for (size_t k = 0; k < numel; k++) p[k] = 1.0f;
        } else {
            double std = (ends_with(nm, "attn.proj.weight") || ends_with(nm, "mlp.proj.weight")) ? resid_std : 0.02;
            size_t real = numel;
            if (strcmp(nm, "wte") == 0) real = (size_t)c->V * (size_t)c->C; /* padded rows stay 0 */
            for (size_t k = 0; k < numel; k++) p[k] = k < real ? (float)(std * hp_rng_normal(&rng)) : 0.0f;
        }
    }
    return HP_OK;
}

/* The llm.c tensor order: name pattern (with %d for the layer), size per layer, stacked over L? */
typedef struct {
    const char *pattern;
    int per_layer;
} llmc_entry;

static const llmc_entry llmc_order[16] = {
    {"wte", 0},           {"wpe", 0},              {"h.%d.ln1.weight", 1},      {"h.%d.ln1.bias", 1},
    {"h.%d.attn.qkv.weight", 1}, {"h.%d.attn.qkv.bias", 1}, {"h.%d.attn.proj.weight", 1},
    {"h.%d.attn.proj.bias", 1},  {"h.%d.ln2.weight", 1},    {"h.%d.ln2.bias", 1},
    {"h.%d.mlp.fc.weight", 1},   {"h.%d.mlp.fc.bias", 1},   {"h.%d.mlp.proj.weight", 1},
    {"h.%d.mlp.proj.bias", 1},   {"lnf.weight", 0},         {"lnf.bias", 0},
};

static int find_name(const char (*names)[HP_NAME_LEN], int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

hp_status hp_gpt2_llmc_copy(float *flat, float *const *params, const char (*names)[HP_NAME_LEN],
                            const hp_shape *shapes, int n, const hp_gpt2_config *c, int to_llmc) {
    size_t at = 0, total = hp_gpt2_num_params(c);
    char nm[HP_NAME_LEN];
    for (int e = 0; e < 16; e++) {
        int layers = llmc_order[e].per_layer ? c->L : 1;
        for (int l = 0; l < layers; l++) {
            snprintf(nm, sizeof nm, llmc_order[e].pattern, l);
            int i = find_name(names, n, nm);
            if (i < 0) return hp_errorf("gpt2: llm.c layout: parameter '%s' is missing", nm);
            size_t numel = (size_t)hp_shape_numel(&shapes[i]);
            if (at + numel > total)
                return hp_errorf("gpt2: llm.c layout: parameter '%s' overruns the %zu-float buffer", nm, total);
            if (to_llmc)
                memcpy(flat + at, params[i], numel * sizeof(float));
            else
                memcpy(params[i], flat + at, numel * sizeof(float));
            at += numel;
        }
    }
    if (at != total) return hp_errorf("gpt2: llm.c layout: %zu floats copied, the model has %zu", at, total);
    return HP_OK;
}
