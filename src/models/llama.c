/* models/llama: a Llama-style decoder's forward graph (see the header). */
#include "models/llama.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    hp_model_config c;
} presets[] = {
    {"llama-tiny", {.layers = 4, .heads = 4, .channels = 64, .vocab = 256, .max_seq = 128, .kv_heads = 2, .ffn = 192, .rope_theta = 10000.0f}},
    {"llama3-8b", {.layers = 32, .heads = 32, .channels = 4096, .vocab = 128256, .max_seq = 8192, .kv_heads = 8, .ffn = 14336, .rope_theta = 500000.0f}},
    {"llama3-70b", {.layers = 80, .heads = 64, .channels = 8192, .vocab = 128256, .max_seq = 8192, .kv_heads = 8, .ffn = 28672, .rope_theta = 500000.0f}},
    /* Mixture-of-Experts: a tiny one that trains here (8 experts, top-2, renormalised softmax, one shared); DeepSeek-V3's
     * shape (its attention as grouped-query attention: MLA is not built; 256 routed experts of 2048, top-8 by
     * sigmoid, one shared; the first 3 dense layers are routed here too); a ~500B one of the seed's scale */
    {"moe-tiny", {.layers = 4, .heads = 4, .channels = 64, .vocab = 256, .max_seq = 128, .kv_heads = 2, .ffn = 128,
                  .rope_theta = 10000.0f, .experts = 8, .top_k = 2, .expert_ffn = 64, .shared_experts = 1,
                  .moe_flags = HP_MOE_RENORM,
                  .aux_coef = 0.01f, .z_coef = 0.001f}},
    /* moe-tiny without the shared expert: Mixtral's layout (Hugging Face export and import) */
    {"mixtral-tiny", {.layers = 4, .heads = 4, .channels = 64, .vocab = 256, .max_seq = 128, .kv_heads = 2, .ffn = 128,
                      .rope_theta = 10000.0f, .experts = 8, .top_k = 2, .expert_ffn = 64, .moe_flags = HP_MOE_RENORM,
                      .aux_coef = 0.01f, .z_coef = 0.001f}},
    /* a small one for `hyperpar bench moe`: experts 4x the width of the tiny one's */
    {"moe-small", {.layers = 4, .heads = 8, .channels = 256, .vocab = 256, .max_seq = 256, .kv_heads = 4, .ffn = 512,
                   .rope_theta = 10000.0f, .experts = 8, .top_k = 2, .expert_ffn = 512, .shared_experts = 1,
                   .moe_flags = HP_MOE_RENORM, .aux_coef = 0.01f, .z_coef = 0.001f}},
    {"moe-deepseek-v3", {.layers = 61, .heads = 128, .channels = 7168, .vocab = 129280, .max_seq = 4096, .kv_heads = 128,
                         .ffn = 18432, .rope_theta = 10000.0f, .experts = 256, .top_k = 8, .expert_ffn = 2048,
                         .shared_experts = 1, .moe_flags = HP_MOE_SIGMOID | HP_MOE_RENORM, .aux_coef = 0.0001f}},
    {"moe-500b", {.layers = 60, .heads = 64, .channels = 7168, .vocab = 151936, .max_seq = 4096, .kv_heads = 8,
                  .ffn = 18432, .rope_theta = 1000000.0f, .experts = 128, .top_k = 8, .expert_ffn = 3072,
                  .shared_experts = 1, .moe_flags = HP_MOE_RENORM, .aux_coef = 0.001f}},
};

static hp_status preset_of(hp_model_config *out, const char *name, int moe) {
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (name && !strcmp(name, presets[i].name) && (presets[i].c.experts > 0) == moe) {
            *out = presets[i].c;
            return HP_OK;
        }
    return moe ? hp_errorf("--model %s: not a MoE preset (moe-tiny, mixtral-tiny, moe-small, moe-deepseek-v3, moe-500b)", name ? name : "")
               : hp_errorf("--model %s: not a Llama preset (llama-tiny, llama3-8b, llama3-70b)", name ? name : "");
}

hp_status hp_llama_preset(hp_model_config *out, const char *name) { return preset_of(out, name, 0); }
hp_status hp_moe_preset(hp_model_config *out, const char *name) { return preset_of(out, name, 1); }

static int64_t padded(int V) { return ((int64_t)V + 127) / 128 * 128; }
static int kv_heads(const hp_model_config *c) { return c->kv_heads > 0 ? c->kv_heads : c->heads; }
static int ffn(const hp_model_config *c) {
    return c->ffn > 0 ? c->ffn : (int)((8 * (int64_t)c->channels / 3 + 255) / 256 * 256);
}

static int expert_ffn(const hp_model_config *c) { return c->expert_ffn > 0 ? c->expert_ffn : ffn(c); }

int64_t hp_llama_num_params(const hp_model_config *c) {
    int64_t C = c->channels, F = ffn(c), Ckv = C / c->heads * kv_heads(c), Fe = expert_ffn(c);
    int64_t mlp = c->experts > 0 ? (int64_t)c->experts * C + (int64_t)(c->experts + c->shared_experts) * 3 * Fe * C
                                 : 3 * F * C;
    int64_t block = C + C * C + 2 * Ckv * C + C * C + C + mlp;
    return 2 * padded(c->vocab) * C + (int64_t)c->layers * block + C;
}

static hp_status check(const hp_model_config *c, int B, int T) {
    if (c->layers < 1) return hp_errorf("llama: layers must be >= 1, got %d", c->layers);
    if (c->heads < 1 || c->channels < 1 || c->channels % c->heads || (c->channels / c->heads) % 2)
        return hp_errorf("llama: channels (%d) must be a multiple of heads (%d) with an even head size (RoPE)",
                         c->channels, c->heads);
    if (kv_heads(c) < 1 || c->heads % kv_heads(c))
        return hp_errorf("llama: kv_heads (%d) must divide heads (%d)", kv_heads(c), c->heads);
    if (c->vocab < 1 || c->vocab > (1 << 24)) return hp_errorf("llama: vocabulary %d is outside 1..2^24", c->vocab);
    if (c->max_seq < 1 || T < 1 || T > c->max_seq || B < 1)
        return hp_errorf("llama: batch %d x %d positions needs 1 <= T <= max_seq (%d)", B, T, c->max_seq);
    if (!(c->rope_theta >= 0) || !isfinite(c->rope_theta))
        return hp_errorf("llama: rope_theta %g must be finite and >= 0 (0: 10000)", (double)c->rope_theta);
    if (c->experts < 0 || (c->experts > 0 && (c->top_k < 1 || c->top_k > c->experts)) || c->shared_experts < 0)
        return hp_errorf("moe: top_k (%d) must be in 1..experts (%d), shared experts (%d) >= 0", c->top_k, c->experts,
                         c->shared_experts);
    if (!(c->capacity_factor >= 0) || !(c->aux_coef >= 0) || !(c->z_coef >= 0))
        return hp_errorf("moe: capacity factor, aux and z coefficients must be >= 0");
    return HP_OK;
}

hp_status hp_llama_build(hp_graph *g, const hp_model_config *c, int B, int T) {
    hp_status st = check(c, B, T);
    if (st) return st;
    int C = c->channels, NH = c->heads, KV = kv_heads(c), L = c->layers, F = ffn(c), hs = C / NH;
    int64_t Vp = padded(c->vocab);
    float theta = c->rope_theta > 0 ? c->rope_theta : 10000.0f, eps = 1e-5f;
    hp_init normal = hp_init_normal(0.02), resid = hp_init_normal(0.02 / sqrt(2.0 * L)), ones = hp_init_ones();
    char nm[HP_NAME_MAX];
    int tokens = hp_input(g, "tokens", HP_ELEM_I32, hp_dims2(B, T));
    int targets = hp_input(g, "targets", HP_ELEM_I32, hp_dims2(B, T));
    int emb = hp_param_init(g, "tok_embeddings.weight", hp_dims2(Vp, C), normal);
    hp_graph_scope(g, "embed");
    int x = hp_embedding(g, tokens, emb), aux_sum = -1;
    for (int l = 0; l < L; l++) {
#define P(suffix, dims, init) (snprintf(nm, sizeof nm, "h.%d.%s", l, suffix), hp_param_init(g, nm, dims, init))
        int an = P("attn_norm.weight", hp_dims1(C), ones);
        int qw = P("attn.q.weight", hp_dims3(1, C, C), normal);
        int kvw = P("attn.kv.weight", hp_dims3(2, KV * hs, C), normal);
        int ow = P("attn.proj.weight", hp_dims2(C, C), resid);
        int mn = P("mlp_norm.weight", hp_dims1(C), ones);
        int E = c->experts, Fe = expert_ffn(c), S = c->shared_experts;
        int guw = E ? -1 : P("mlp.gate_up.weight", hp_dims3(2, F, C), normal);
        int dw = E ? -1 : P("mlp.down.weight", hp_dims2(C, F), resid);
        int rw = E ? P("moe.router.weight", hp_dims2(E, C), normal) : -1;
        int egu = E ? P("moe.experts.gate_up.weight", hp_dims4(E, 2, Fe, C), normal) : -1;
        int edw = E ? P("moe.experts.down.weight", hp_dims3(E, C, Fe), resid) : -1;
        int sgu = E && S ? P("moe.shared.gate_up.weight", hp_dims3(2, S * Fe, C), normal) : -1;
        int sdw = E && S ? P("moe.shared.down.weight", hp_dims2(C, S * Fe), resid) : -1;
#undef P
        hp_graph_scope(g, "h.%d.attn", l);
        int h = hp_rmsnorm(g, x, an, eps);
        int kv = hp_linear(g, h, kvw, -1); /* [B, T, 2, KV hs] */
        if (KV < NH) kv = hp_repeat_heads(g, kv, hs, NH / KV);
        int qkv = hp_rope(g, hp_concat(g, hp_linear(g, h, qw, -1), kv, 2), NH, theta);
        x = hp_add(g, x, hp_linear(g, hp_attention(g, qkv, NH), ow, -1));
        hp_graph_scope(g, "h.%d.mlp", l);
        h = hp_rmsnorm(g, x, mn, eps);
        if (E) {
            int aux, y = hp_moe(g, &aux, h, rw, egu, edw, c->top_k, c->moe_flags, c->capacity_factor, c->aux_coef,
                                c->z_coef);
            if (S) y = hp_add(g, y, hp_linear(g, hp_swiglu(g, hp_linear(g, h, sgu, -1)), sdw, -1));
            x = hp_add(g, x, y);
            aux_sum = aux_sum < 0 ? aux : hp_add(g, aux_sum, aux);
        } else {
            x = hp_add(g, x, hp_linear(g, hp_swiglu(g, hp_linear(g, h, guw, -1)), dw, -1));
        }
    }
    int nw = hp_param_init(g, "norm.weight", hp_dims1(C), ones);
    int out = hp_param_init(g, "output.weight", hp_dims2(Vp, C), normal);
    hp_graph_scope(g, "head");
    int per, loss = hp_xent(g, hp_linear(g, hp_rmsnorm(g, x, nw, eps), out, -1), targets, c->vocab, &per);
    if (aux_sum >= 0) loss = hp_add(g, loss, aux_sum); /* the layers' balancing and z losses */
    hp_set_loss(g, loss, per);
    hp_status gs = hp_graph_status(g); /* the graph's own: the caller gets a copy */
    return gs ? hp_errorf("%s", hp_status_msg(gs)) : HP_OK;
}
