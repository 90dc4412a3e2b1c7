/* api/export_hf: a checkpoint's weights as a Hugging Face model directory
 * (issue 27): config.json and model.safetensors with the tensor names, shapes
 * and layouts that transformers' GPT2LMHeadModel, LlamaForCausalLM and
 * MixtralForCausalLM load. The model is the checkpoint's (state.json's
 * args.model: gpt2 or a named family's preset); its parameters are read
 * whole and rewritten:
 *   GPT-2: Conv1D weights stored (in, out): the fused qkv [3, C, C], the
 *     projections and the MLP transposed; the padded vocabulary rows cut;
 *   Llama: q/k/v/o and gate/up/down split out of the fused stacks; the query
 *     and key rows of every head permuted from the interleaved RoPE pairs
 *     (2i, 2i + 1) this project rotates to Hugging Face's halves (i, i + hs/2);
 *     the untied head; the padded vocabulary rows cut;
 *   MoE without shared experts: Mixtral's router and per-expert w1/w3/w2.
 * Written in a temporary directory beside the target, then renamed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/ckpt_state.h"
#include "io/fsutil.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "models/gpt2.h"
#include "models/gpt2_config.h"
#include "models/zoo.h"

typedef struct {
    hp_named_tensor *t;
    int n, cap;
    int bf16;
} hf_list;

static void list_free(hf_list *l) {
    for (int i = 0; i < l->n; i++) free((void *)l->t[i].name), free((void *)l->t[i].data);
    free(l->t);
}

/* Takes data (rows x cols fp32, malloc'd), narrowed to bf16 when asked. */
static hp_status add(hf_list *l, const char *name, float *data, int64_t rows, int64_t cols, int ndim) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        hp_named_tensor *t = realloc(l->t, sizeof *t * (size_t)cap);
        if (!t) return free(data), hp_errorf("hf export: out of memory");
        l->t = t, l->cap = cap;
    }
    void *out = data;
    hp_dtype dt = HP_F32;
    if (l->bf16) {
        uint16_t *b = malloc(sizeof(uint16_t) * (size_t)(rows * cols));
        if (!b) return free(data), hp_errorf("hf export: out of memory");
        for (int64_t i = 0; i < rows * cols; i++) b[i] = hp_f32_to_bf16(data[i]);
        free(data);
        out = b, dt = HP_BF16;
    }
    char *nm = strdup(name);
    if (!nm) return free(out), hp_errorf("hf export: out of memory");
    l->t[l->n++] = (hp_named_tensor){nm, dt, ndim == 1 ? hp_shape1(rows * cols) : hp_shape2(rows, cols), out};
    return HP_OK;
}

typedef struct {
    const hp_ckpt *ck;
    const hp_graph *g;
    const char *dir;
    int last;     /* the value whose elements `held` holds (-1: none): a stacked parameter exported in several
                   * pieces (q/k/v, gate/up, the experts) is read once */
    float *held;
    int64_t numel;
} src;

/* Parameter `name` of the model whole (fp32, held by s until another is read); *numel its size. */
static hp_status read_param(const float **out, int64_t *numel, src *s, const char *name) {
    *out = NULL;
    int v = hp_graph_find(s->g, name);
    if (v < 0) return hp_errorf("%s: the model has no parameter '%s'", s->dir, name);
    if (v != s->last) {
        const hp_shape *sh = &s->g->vals[v].shape;
        free(s->held);
        s->last = -1, s->numel = hp_shape_numel(sh);
        s->held = malloc(sizeof(float) * (size_t)s->numel);
        if (!s->held) return hp_errorf("%s: out of memory reading '%s'", s->dir, name);
        HP_TRY(hp_ckpt_read(s->ck, HP_CKPT_GROUP_MODEL, name, HP_F32, sh, s->held));
        s->last = v;
    }
    *out = s->held, *numel = s->numel;
    return HP_OK;
}

/* rows [r0, r0 + rows) x cols of a (cols wide), transposed when asked */
static float *slice(const float *a, int64_t r0, int64_t rows, int64_t cols, int transpose) {
    float *o = malloc(sizeof(float) * (size_t)(rows * cols));
    if (!o) return NULL;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            float x = a[(r0 + r) * cols + c];
            if (transpose) o[c * rows + r] = x;
            else o[r * cols + c] = x;
        }
    return o;
}

/* Hugging Face's RoPE layout: within each head of hs rows, row j < hs/2 is this project's row 2j, row hs/2 + j
 * its row 2j + 1 (in place, rows x cols). */
static hp_status rope_rows(float *w, int64_t rows, int64_t cols, int64_t hs) {
    float *tmp = malloc(sizeof(float) * (size_t)(hs * cols));
    if (!tmp) return hp_errorf("hf export: out of memory");
    for (int64_t h = 0; h < rows / hs; h++) {
        float *head = w + h * hs * cols;
        for (int64_t j = 0; j < hs; j++) {
            int64_t from = j < hs / 2 ? 2 * j : 2 * (j - hs / 2) + 1;
            memcpy(tmp + j * cols, head + from * cols, sizeof(float) * (size_t)cols);
        }
        memcpy(head, tmp, sizeof(float) * (size_t)(hs * cols));
    }
    free(tmp);
    return HP_OK;
}

/* One piece of parameter `name` (its rows [r0, r0 + rows) of cols) under hf name, transposed or RoPE-permuted. */
static hp_status put(hf_list *l, src *s, const char *name, const char *hf, int64_t r0, int64_t rows,
                     int64_t cols, int transpose, int64_t rope_hs, int ndim) {
    const float *p;
    int64_t n;
    HP_TRY(read_param(&p, &n, s, name));
    if ((r0 + rows) * cols > n)
        return hp_errorf("%s: '%s' has %lld elements, fewer than its export reads", s->dir, name, (long long)n);
    float *o = slice(p, r0, rows, cols, transpose);
    if (!o) return hp_errorf("hf export: out of memory");
    if (rope_hs > 0) {
        hp_status st = rope_rows(o, rows, cols, rope_hs);
        if (st) return free(o), st;
    }
    return transpose ? add(l, hf, o, cols, rows, ndim) : add(l, hf, o, rows, cols, ndim);
}

static hp_status gpt2_tensors(hf_list *l, src *s, const hp_model_config *c, char *cfg, size_t cap) {
    int64_t C = c->channels, V = c->vocab;
    char a[96], b[96];
    HP_TRY(put(l, s, "wte", "transformer.wte.weight", 0, V, C, 0, 0, 2));
    HP_TRY(put(l, s, "wpe", "transformer.wpe.weight", 0, c->max_seq, C, 0, 0, 2));
    for (int i = 0; i < c->layers; i++) {
#define P(ours, hf, rows, cols, tr, nd)                                            \
    do {                                                                           \
        snprintf(a, sizeof a, "h.%d.%s", i, ours);                                \
        snprintf(b, sizeof b, "transformer.h.%d.%s", i, hf);                       \
        HP_TRY(put(l, s, a, b, 0, rows, cols, tr, 0, nd));                        \
    } while (0)
        P("ln1.weight", "ln_1.weight", 1, C, 0, 1);
        P("ln1.bias", "ln_1.bias", 1, C, 0, 1);
        P("attn.qkv.weight", "attn.c_attn.weight", 3 * C, C, 1, 2);
        P("attn.qkv.bias", "attn.c_attn.bias", 1, 3 * C, 0, 1);
        P("attn.proj.weight", "attn.c_proj.weight", C, C, 1, 2);
        P("attn.proj.bias", "attn.c_proj.bias", 1, C, 0, 1);
        P("ln2.weight", "ln_2.weight", 1, C, 0, 1);
        P("ln2.bias", "ln_2.bias", 1, C, 0, 1);
        P("mlp.fc.weight", "mlp.c_fc.weight", 4 * C, C, 1, 2);
        P("mlp.fc.bias", "mlp.c_fc.bias", 1, 4 * C, 0, 1);
        P("mlp.proj.weight", "mlp.c_proj.weight", C, 4 * C, 1, 2);
        P("mlp.proj.bias", "mlp.c_proj.bias", 1, C, 0, 1);
#undef P
    }
    HP_TRY(put(l, s, "lnf.weight", "transformer.ln_f.weight", 0, 1, C, 0, 0, 1));
    HP_TRY(put(l, s, "lnf.bias", "transformer.ln_f.bias", 0, 1, C, 0, 0, 1));
    snprintf(cfg, cap,
             "{\"architectures\": [\"GPT2LMHeadModel\"], \"model_type\": \"gpt2\", \"n_embd\": %d, \"n_head\": %d, "
             "\"n_layer\": %d, \"n_positions\": %d, \"n_ctx\": %d, \"vocab_size\": %d, \"layer_norm_epsilon\": 1e-05, "
             "\"activation_function\": \"gelu_new\", \"tie_word_embeddings\": true, \"torch_dtype\": \"%s\"}\n",
             c->channels, c->heads, c->layers, c->max_seq, c->max_seq, c->vocab, l->bf16 ? "bfloat16" : "float32");
    return HP_OK;
}

static hp_status llama_tensors(hf_list *l, src *s, const hp_model_config *c, char *cfg, size_t cap) {
    int64_t C = c->channels, V = c->vocab, NH = c->heads, KV = c->kv_heads > 0 ? c->kv_heads : c->heads;
    int64_t hs = C / NH, Ckv = KV * hs, E = c->experts;
    int64_t F = c->ffn > 0 ? c->ffn : (8 * C / 3 + 255) / 256 * 256, Fe = c->expert_ffn > 0 ? c->expert_ffn : F;
    if (E > 0 && c->shared_experts > 0)
        return hp_errorf("%s: shared experts have no place in Mixtral's layout (Qwen2-MoE's is not written yet)",
                         s->dir);
    char a[96], b[128];
    HP_TRY(put(l, s, "tok_embeddings.weight", "model.embed_tokens.weight", 0, V, C, 0, 0, 2));
    for (int i = 0; i < c->layers; i++) {
#define P(ours, hf, r0, rows, cols, rope, nd)                                      \
    do {                                                                           \
        snprintf(a, sizeof a, "h.%d.%s", i, ours);                                \
        snprintf(b, sizeof b, "model.layers.%d.%s", i, hf);                        \
        HP_TRY(put(l, s, a, b, r0, rows, cols, 0, rope, nd));                     \
    } while (0)
        P("attn_norm.weight", "input_layernorm.weight", 0, 1, C, 0, 1);
        P("attn.q.weight", "self_attn.q_proj.weight", 0, C, C, hs, 2);
        P("attn.kv.weight", "self_attn.k_proj.weight", 0, Ckv, C, hs, 2);
        P("attn.kv.weight", "self_attn.v_proj.weight", Ckv, Ckv, C, 0, 2);
        P("attn.proj.weight", "self_attn.o_proj.weight", 0, C, C, 0, 2);
        P("mlp_norm.weight", "post_attention_layernorm.weight", 0, 1, C, 0, 1);
        if (E == 0) {
            P("mlp.gate_up.weight", "mlp.gate_proj.weight", 0, F, C, 0, 2);
            P("mlp.gate_up.weight", "mlp.up_proj.weight", F, F, C, 0, 2);
            P("mlp.down.weight", "mlp.down_proj.weight", 0, C, F, 0, 2);
        } else {
            P("moe.router.weight", "block_sparse_moe.gate.weight", 0, E, C, 0, 2);
            char w[64];
            for (int64_t e = 0; e < E; e++) { /* each stack's pieces one after the other: it is read once */
                snprintf(w, sizeof w, "block_sparse_moe.experts.%lld.w1.weight", (long long)e);
                P("moe.experts.gate_up.weight", w, 2 * e * Fe, Fe, C, 0, 2);
                snprintf(w, sizeof w, "block_sparse_moe.experts.%lld.w3.weight", (long long)e);
                P("moe.experts.gate_up.weight", w, (2 * e + 1) * Fe, Fe, C, 0, 2);
            }
            for (int64_t e = 0; e < E; e++) {
                snprintf(w, sizeof w, "block_sparse_moe.experts.%lld.w2.weight", (long long)e);
                P("moe.experts.down.weight", w, e * C, C, Fe, 0, 2);
            }
        }
#undef P
    }
    HP_TRY(put(l, s, "norm.weight", "model.norm.weight", 0, 1, C, 0, 0, 1));
    HP_TRY(put(l, s, "output.weight", "lm_head.weight", 0, V, C, 0, 0, 2));
    char moe[256] = "";
    if (E > 0)
        snprintf(moe, sizeof moe, ", \"num_local_experts\": %lld, \"num_experts_per_tok\": %d, "
                 "\"router_aux_loss_coef\": %g, \"output_router_logits\": false", (long long)E, c->top_k,
                 (double)c->aux_coef);
    snprintf(cfg, cap,
             "{\"architectures\": [\"%s\"], \"model_type\": \"%s\", \"hidden_size\": %lld, \"intermediate_size\": %lld, "
             "\"num_hidden_layers\": %d, \"num_attention_heads\": %lld, \"num_key_value_heads\": %lld, "
             "\"rms_norm_eps\": 1e-05, \"rope_theta\": %g, \"max_position_embeddings\": %d, \"vocab_size\": %d, "
             "\"hidden_act\": \"silu\", \"tie_word_embeddings\": false, \"attention_bias\": false, "
             "\"torch_dtype\": \"%s\"%s}\n",
             E ? "MixtralForCausalLM" : "LlamaForCausalLM", E ? "mixtral" : "llama", (long long)C,
             (long long)(E ? Fe : F), c->layers, (long long)NH, (long long)KV,
             (double)(c->rope_theta > 0 ? c->rope_theta : 10000.0f), c->max_seq, c->vocab,
             l->bf16 ? "bfloat16" : "float32", moe);
    return HP_OK;
}

hp_status hp_export_hf(const char *out_dir, const char *ckpt_dir, int bf16) {
    if (!out_dir || !out_dir[0]) return hp_errorf("hp_export_hf: no output directory given");
    if (!ckpt_dir || !ckpt_dir[0]) return hp_errorf("hp_export_hf: no checkpoint directory given");
    if (hp_fs_exists(out_dir)) return hp_errorf("%s: already exists (the export writes a new directory)", out_dir);
    char *dir = NULL;
    hp_ckpt ck;
    HP_TRY(hp_api_ckpt_open(&ck, &dir, ckpt_dir, 0));
    const char *name = "gpt2";
    const hp_json *args = hp_json_get(ck.state, "args");
    if (args && hp_json_get(args, "model")) {
        hp_status e = hp_json_get_string(&name, args, "model");
        if (e) hp_status_free(e), name = "gpt2";
    }
    hp_model_config c;
    memset(&c, 0, sizeof c);
    hp_status st = HP_OK;
    const hp_model_family *fam = NULL;
    if (!strcmp(name, "gpt2")) {
        hp_gpt2_config g2;
        st = hp_api_ckpt_gpt2(&ck, dir, "Hugging Face export");
        if (!st) st = hp_ckpt_model_config(&g2, &ck, dir);
        if (!st) c = (hp_model_config){.layers = g2.L, .heads = g2.NH, .channels = g2.C, .vocab = g2.V, .max_seq = g2.maxT};
    } else {
        fam = hp_model_family_of(name);
        if (!fam || (strcmp(fam->family, "llama") && strcmp(fam->family, "moe")))
            st = hp_errorf("%s: model '%s' has no Hugging Face layout here (gpt2, Llama and MoE presets do)", dir, name);
        else st = fam->preset(&c, name);
    }
    hp_graph *g = NULL;
    if (!st) st = hp_graph_create(&g);
    if (!st && fam) st = fam->build(g, &c, 1, 1);
    if (!st && !fam) {
        hp_gpt2_config g2 = {c.layers, c.heads, c.channels, c.vocab, 0, c.max_seq};
        hp_gpt2_io io;
        st = hp_gpt2_config_check(&g2);
        if (!st) st = hp_gpt2_build(g, &io, &g2, 1, 1);
    }
    hf_list l = {NULL, 0, 0, bf16};
    char *cfg = malloc(4096);
    if (!st && !cfg) st = hp_errorf("hf export: out of memory");
    src s = {&ck, g, dir, -1, NULL, 0};
    if (!st) st = fam ? llama_tensors(&l, &s, &c, cfg, 4096) : gpt2_tensors(&l, &s, &c, cfg, 4096);
    /* a temporary directory beside the target, renamed when complete */
    char *tmp = NULL, *st_path = NULL, *cfg_path = NULL;
    if (!st) {
        size_t n = strlen(out_dir) + 16;
        tmp = malloc(n);
        if (!tmp) st = hp_errorf("hf export: out of memory");
        else snprintf(tmp, n, "%s.tmp", out_dir);
    }
    if (!st && hp_fs_exists(tmp)) st = hp_fs_remove_tree(tmp);
    if (!st) st = hp_fs_mkdir_p(tmp);
    if (!st) {
        st_path = hp_fs_join(tmp, "model.safetensors"), cfg_path = hp_fs_join(tmp, "config.json");
        if (!st_path || !cfg_path) st = hp_errorf("hf export: out of memory");
    }
    if (!st) st = hp_safetensors_write(st_path, l.t, l.n, "{\"format\": \"pt\"}");
    if (!st) st = hp_fs_write_atomic(cfg_path, cfg, strlen(cfg));
    if (!st) st = hp_fs_fsync_dir(tmp);
    if (!st && rename(tmp, out_dir) != 0) st = hp_errorf("%s: cannot rename %s to it", out_dir, tmp);
    if (st && tmp && hp_fs_exists(tmp)) hp_status_free(hp_fs_remove_tree(tmp)); /* nothing half-written stays */
    free(st_path), free(cfg_path), free(tmp), free(cfg);
    list_free(&l);
    free(s.held);
    hp_graph_destroy(g);
    hp_ckpt_close(&ck);
    free(dir);
    return st;
}
