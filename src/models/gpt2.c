/* models/gpt2: GPT-2's shape check, parameter count and forward graph with
 * each parameter's init, written on the public model-writing calls of
 * include/hyperpar/hyperpar.h alone (as a model of one's own is); the init
 * over a parameter list and the llm.c order are in gpt2_params.c. */
#include "models/gpt2_model.h"

#include <math.h>
#include <stdio.h>

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
    char nm[HP_NAME_MAX];
    io->tokens = hp_input(g, "tokens", HP_ELEM_I32, hp_dims2(B, T));
    io->targets = hp_input(g, "targets", HP_ELEM_I32, hp_dims2(B, T));
    /* GPT-2's init (as llm.c's and nanoGPT's): weights N(0, 0.02), the residual projections N(0, 0.02 / sqrt(2L)),
     * biases 0, layernorm weights 1; wte's padded rows (V .. Vp-1) stay 0 and draw nothing */
    hp_init normal = hp_init_normal(0.02), resid = hp_init_normal(0.02 / sqrt(2.0 * c->L));
    hp_init zeros = hp_init_zeros(), ones = hp_init_ones(), embed = normal;
    embed.rows = c->V;
    int wte = hp_param_init(g, "wte", hp_dims2(c->Vp, C), embed);
    int wpe = hp_param_init(g, "wpe", hp_dims2(c->maxT, C), normal);
    hp_graph_scope(g, "embed");
    int x = hp_embedding(g, io->tokens, wte);
    x = hp_add_pos(g, x, wpe);
    for (int l = 0; l < c->L; l++) {
#define P(suffix, shape, init) (snprintf(nm, sizeof nm, "h.%d.%s", l, suffix), hp_param_init(g, nm, shape, init))
        int ln1w = P("ln1.weight", hp_dims1(C), ones);
        int ln1b = P("ln1.bias", hp_dims1(C), zeros);
        /* fused QKV as [3, C, C]: q, k, v each shardable by heads (dim 1) */
        int qkvw = P("attn.qkv.weight", hp_dims3(3, C, C), normal);
        int qkvb = P("attn.qkv.bias", hp_dims2(3, C), zeros);
        int prw = P("attn.proj.weight", hp_dims2(C, C), resid);
        int prb = P("attn.proj.bias", hp_dims1(C), zeros);
        int ln2w = P("ln2.weight", hp_dims1(C), ones);
        int ln2b = P("ln2.bias", hp_dims1(C), zeros);
        int fcw = P("mlp.fc.weight", hp_dims2(4 * C, C), normal);
        int fcb = P("mlp.fc.bias", hp_dims1(4 * C), zeros);
        int fpw = P("mlp.proj.weight", hp_dims2(C, 4 * C), resid);
        int fpb = P("mlp.proj.bias", hp_dims1(C), zeros);
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
    int lnfw = hp_param_init(g, "lnf.weight", hp_dims1(C), ones);
    int lnfb = hp_param_init(g, "lnf.bias", hp_dims1(C), zeros);
    hp_graph_scope(g, "head");
    x = hp_layernorm(g, x, lnfw, lnfb, 1e-5f);
    io->logits = hp_linear(g, x, wte, -1);
    io->loss = hp_xent(g, io->logits, io->targets, c->V, &io->losses);
    hp_graph_scope(g, NULL);
    hp_set_loss(g, io->loss, io->losses);
    if (hp_graph_status(g)) return hp_errorf("gpt2: %s", hp_status_msg(hp_graph_status(g)));
    return HP_OK;
}
