/* models/pangu: PanGu-α's forward graph (see the header). */
#include "models/pangu.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    hp_model_config c;
} presets[] = {
    {"pangu-tiny", {.layers = 4, .heads = 4, .channels = 64, .vocab = 256, .max_seq = 128}},
    {"pangu-2.6b", {.layers = 32, .heads = 32, .channels = 2560, .vocab = 40000, .max_seq = 1024}},
    {"pangu-13b", {.layers = 40, .heads = 40, .channels = 5120, .vocab = 40000, .max_seq = 1024}},
    {"pangu-200b", {.layers = 64, .heads = 128, .channels = 16384, .vocab = 40000, .max_seq = 1024}},
};

hp_status hp_pangu_preset(hp_model_config *out, const char *name) {
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (name && !strcmp(name, presets[i].name)) {
            *out = presets[i].c;
            return HP_OK;
        }
    return hp_errorf("--model %s: not a PanGu-α preset (pangu-tiny, pangu-2.6b, pangu-13b, pangu-200b)",
                     name ? name : "");
}

static int64_t padded(int V) { return ((int64_t)V + 127) / 128 * 128; }

int64_t hp_pangu_num_params(const hp_model_config *c) {
    int64_t C = c->channels, L = c->layers;
    int64_t block = 2 * C + 3 * C * C + 3 * C + C * C + C + 2 * C + 4 * C * C + 4 * C + 4 * C * C + C;
    int64_t query = (int64_t)c->max_seq * C + 2 * C + C * C + C + 2 * C * C + 2 * C + C * C + C + 2 * C + 4 * C * C +
                    4 * C + 4 * C * C + C;
    return padded(c->vocab) * C + (int64_t)c->max_seq * C + (L - 1) * block + 2 * C + query;
}

static hp_status check(const hp_model_config *c, int B, int T) {
    if (c->layers < 2) return hp_errorf("pangu: layers must be >= 2 (the last is the query layer), got %d", c->layers);
    if (c->heads < 1 || c->channels < 1 || c->channels % c->heads)
        return hp_errorf("pangu: channels (%d) must be a positive multiple of heads (%d)", c->channels, c->heads);
    if (c->vocab < 1 || c->vocab > (1 << 24)) return hp_errorf("pangu: vocabulary %d is outside 1..2^24", c->vocab);
    if (c->max_seq < 1 || T < 1 || T > c->max_seq || B < 1)
        return hp_errorf("pangu: batch %d x %d positions needs 1 <= T <= max_seq (%d)", B, T, c->max_seq);
    return HP_OK;
}

hp_status hp_pangu_build(hp_graph *g, const hp_model_config *c, int B, int T) {
    hp_status st = check(c, B, T);
    if (st) return st;
    int C = c->channels, NH = c->heads, L = c->layers;
    int64_t Vp = padded(c->vocab);
    hp_init normal = hp_init_normal(0.02), resid = hp_init_normal(0.02 / sqrt(2.0 * L));
    hp_init zeros = hp_init_zeros(), ones = hp_init_ones();
    char nm[HP_NAME_MAX];
    int tokens = hp_input(g, "tokens", HP_ELEM_I32, hp_dims2(B, T));
    int targets = hp_input(g, "targets", HP_ELEM_I32, hp_dims2(B, T));
    int wte = hp_param_init(g, "wte", hp_dims2(Vp, C), normal);
    int wpe = hp_param_init(g, "wpe", hp_dims2(c->max_seq, C), normal);
    hp_graph_scope(g, "embed");
    int x = hp_add_pos(g, hp_embedding(g, tokens, wte), wpe);
    for (int l = 0; l < L - 1; l++) {
#define P(suffix, dims, init) (snprintf(nm, sizeof nm, "h.%d.%s", l, suffix), hp_param_init(g, nm, dims, init))
        int ln1w = P("ln1.weight", hp_dims1(C), ones), ln1b = P("ln1.bias", hp_dims1(C), zeros);
        int qkvw = P("attn.qkv.weight", hp_dims3(3, C, C), normal), qkvb = P("attn.qkv.bias", hp_dims2(3, C), zeros);
        int prw = P("attn.proj.weight", hp_dims2(C, C), resid), prb = P("attn.proj.bias", hp_dims1(C), zeros);
        int ln2w = P("ln2.weight", hp_dims1(C), ones), ln2b = P("ln2.bias", hp_dims1(C), zeros);
        int fcw = P("mlp.fc.weight", hp_dims2(4 * C, C), normal), fcb = P("mlp.fc.bias", hp_dims1(4 * C), zeros);
        int fpw = P("mlp.proj.weight", hp_dims2(C, 4 * C), resid), fpb = P("mlp.proj.bias", hp_dims1(C), zeros);
#undef P
        hp_graph_scope(g, "h.%d.attn", l);
        int h = hp_attention(g, hp_linear(g, hp_layernorm(g, x, ln1w, ln1b, 1e-5f), qkvw, qkvb), NH);
        x = hp_add(g, x, hp_linear(g, h, prw, prb));
        hp_graph_scope(g, "h.%d.mlp", l);
        h = hp_gelu(g, hp_linear(g, hp_layernorm(g, x, ln2w, ln2b, 1e-5f), fcw, fcb));
        x = hp_add(g, x, hp_linear(g, h, fpw, fpb));
    }
    /* the final norm, then the top query layer */
    int lnfw = hp_param_init(g, "ln_f.weight", hp_dims1(C), ones), lnfb = hp_param_init(g, "ln_f.bias", hp_dims1(C), zeros);
    int tq = hp_param_init(g, "q.top_query", hp_dims2(c->max_seq, C), normal);
    int qln1w = hp_param_init(g, "q.ln1.weight", hp_dims1(C), ones);
    int qln1b = hp_param_init(g, "q.ln1.bias", hp_dims1(C), zeros);
    int qw = hp_param_init(g, "q.attn.q.weight", hp_dims3(1, C, C), normal);
    int qb = hp_param_init(g, "q.attn.q.bias", hp_dims2(1, C), zeros);
    int kvw = hp_param_init(g, "q.attn.kv.weight", hp_dims3(2, C, C), normal);
    int kvb = hp_param_init(g, "q.attn.kv.bias", hp_dims2(2, C), zeros);
    int prw = hp_param_init(g, "q.attn.proj.weight", hp_dims2(C, C), resid);
    int prb = hp_param_init(g, "q.attn.proj.bias", hp_dims1(C), zeros);
    int ln2w = hp_param_init(g, "q.ln2.weight", hp_dims1(C), ones), ln2b = hp_param_init(g, "q.ln2.bias", hp_dims1(C), zeros);
    int fcw = hp_param_init(g, "q.mlp.fc.weight", hp_dims2(4 * C, C), normal);
    int fcb = hp_param_init(g, "q.mlp.fc.bias", hp_dims1(4 * C), zeros);
    int fpw = hp_param_init(g, "q.mlp.proj.weight", hp_dims2(C, 4 * C), resid);
    int fpb = hp_param_init(g, "q.mlp.proj.bias", hp_dims1(C), zeros);
    hp_graph_scope(g, "query");
    x = hp_layernorm(g, x, lnfw, lnfb, 1e-5f);
    int q = hp_linear(g, hp_pos_table(g, tq, B, T), qw, qb);                  /* [B,T,1,C] */
    int kv = hp_linear(g, hp_layernorm(g, x, qln1w, qln1b, 1e-5f), kvw, kvb); /* [B,T,2,C] */
    int h = hp_attention(g, hp_concat(g, q, kv, 2), NH);
    x = hp_add(g, x, hp_linear(g, h, prw, prb));
    h = hp_gelu(g, hp_linear(g, hp_layernorm(g, x, ln2w, ln2b, 1e-5f), fcw, fcb));
    x = hp_add(g, x, hp_linear(g, h, fpw, fpb));
    hp_graph_scope(g, "head");
    int per, loss = hp_xent(g, hp_linear(g, x, wte, -1), targets, c->vocab, &per);
    hp_set_loss(g, loss, per);
    hp_status gs = hp_graph_status(g); /* the graph's own: the caller gets a copy */
    return gs ? hp_errorf("%s", hp_status_msg(gs)) : HP_OK;
}
