/* api/export_hf: a checkpoint's weights as a Hugging Face model directory
 * (issue 27): config.json and the weights (api/hf_shards: model.safetensors,
 * or shards by size and model.safetensors.index.json past the shard limit)
 * with the tensor names, shapes and layouts that transformers'
 * GPT2LMHeadModel, LlamaForCausalLM and MixtralForCausalLM load. The model is
 * the checkpoint's (state.json's args.model: gpt2 or a named family's
 * preset); its parameters are read whole and each piece api/hf_map names is
 * cut out of them and stored as the map says:
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
#include "api/hf_map.h"
#include "api/hf_shards.h"
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

/* Hugging Face's RoPE layout (api/hf_map): within each head of hs rows, row j holds our row hp_hf_rope_row(j, hs)
 * (in place, rows x cols). */
static hp_status rope_rows(float *w, int64_t rows, int64_t cols, int64_t hs) {
    float *tmp = malloc(sizeof(float) * (size_t)(hs * cols));
    if (!tmp) return hp_errorf("hf export: out of memory");
    for (int64_t h = 0; h < rows / hs; h++) {
        float *head = w + h * hs * cols;
        for (int64_t j = 0; j < hs; j++)
            memcpy(tmp + j * cols, head + hp_hf_rope_row(j, hs) * cols, sizeof(float) * (size_t)cols);
        memcpy(head, tmp, sizeof(float) * (size_t)(hs * cols));
    }
    free(tmp);
    return HP_OK;
}

/* One piece of the model (api/hf_map): its block of our parameter, transposed or RoPE-permuted as stored. */
static hp_status put(hf_list *l, src *s, const hp_hf_piece *pc) {
    const float *p = NULL;
    int64_t n = 0;
    HP_TRY(read_param(&p, &n, s, pc->ours));
    if ((pc->r0 + pc->rows) * pc->cols > n)
        return hp_errorf("%s: '%s' has %lld elements, fewer than its export reads", s->dir, pc->ours, (long long)n);
    float *o = slice(p, pc->r0, pc->rows, pc->cols, pc->transpose);
    if (!o) return hp_errorf("hf export: out of memory");
    if (pc->rope_hs > 0) {
        hp_status st = rope_rows(o, pc->rows, pc->cols, pc->rope_hs);
        if (st) return free(o), st;
    }
    int nd = pc->vector ? 1 : 2;
    return pc->transpose ? add(l, pc->hf, o, pc->cols, pc->rows, nd) : add(l, pc->hf, o, pc->rows, pc->cols, nd);
}

/* Every tensor of the model, in the order api/hf_map gives. */
static hp_status tensors(hf_list *l, src *s, const char *family, const hp_model_config *c) {
    hp_hf_piece *pcs;
    int n;
    HP_TRY(hp_hf_pieces(&pcs, &n, family, c));
    hp_status st = HP_OK;
    for (int i = 0; !st && i < n; i++) st = put(l, s, &pcs[i]);
    free(pcs);
    return st;
}

static void gpt2_config(char *cfg, size_t cap, const hp_model_config *c, int bf16) {
    snprintf(cfg, cap,
             "{\"architectures\": [\"GPT2LMHeadModel\"], \"model_type\": \"gpt2\", \"n_embd\": %d, \"n_head\": %d, "
             "\"n_layer\": %d, \"n_positions\": %d, \"n_ctx\": %d, \"vocab_size\": %d, \"layer_norm_epsilon\": 1e-05, "
             "\"activation_function\": \"gelu_new\", \"tie_word_embeddings\": true, \"torch_dtype\": \"%s\"}\n",
             c->channels, c->heads, c->layers, c->max_seq, c->max_seq, c->vocab, bf16 ? "bfloat16" : "float32");
}

static void llama_config(char *cfg, size_t cap, const hp_model_config *c, int bf16) {
    int64_t C = c->channels, NH = c->heads, KV = c->kv_heads > 0 ? c->kv_heads : c->heads, E = c->experts;
    int64_t F, Fe;
    hp_hf_ffn_widths(&F, &Fe, c);
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
             bf16 ? "bfloat16" : "float32", moe);
}

hp_status hp_export_hf(const char *out_dir, const char *ckpt_dir, int bf16, int64_t max_shard_bytes) {
    if (!out_dir || !out_dir[0]) return hp_errorf("hp_export_hf: no output directory given");
    if (!ckpt_dir || !ckpt_dir[0]) return hp_errorf("hp_export_hf: no checkpoint directory given");
    if (max_shard_bytes < 0)
        return hp_errorf("hp_export_hf: max_shard_bytes is %lld (0: the default, 5 GB)", (long long)max_shard_bytes);
    if (max_shard_bytes == 0) max_shard_bytes = HP_HF_MAX_SHARD_DEFAULT;
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
        if (!st && c.experts > 0 && c.shared_experts > 0)
            st = hp_errorf("%s: shared experts have no place in Mixtral's layout (Qwen2-MoE's is not written yet)",
                           dir);
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
    if (!st) st = tensors(&l, &s, fam ? fam->family : "gpt2", &c);
    if (!st) (fam ? llama_config : gpt2_config)(cfg, 4096, &c, bf16);
    /* a temporary directory beside the target, renamed when complete */
    char *tmp = NULL, *cfg_path = NULL;
    if (!st) {
        size_t n = strlen(out_dir) + 16;
        tmp = malloc(n);
        if (!tmp) st = hp_errorf("hf export: out of memory");
        else snprintf(tmp, n, "%s.tmp", out_dir);
    }
    if (!st && hp_fs_exists(tmp)) st = hp_fs_remove_tree(tmp);
    if (!st) st = hp_fs_mkdir_p(tmp);
    if (!st) {
        cfg_path = hp_fs_join(tmp, "config.json");
        if (!cfg_path) st = hp_errorf("hf export: out of memory");
    }
    int files = 0;
    if (!st) st = hp_hf_write_weights(&files, tmp, l.t, l.n, max_shard_bytes, "{\"format\": \"pt\"}");
    (void)files;
    if (!st) st = hp_fs_write_atomic(cfg_path, cfg, strlen(cfg));
    if (!st) st = hp_fs_fsync_dir(tmp);
    if (!st && rename(tmp, out_dir) != 0) st = hp_errorf("%s: cannot rename %s to it", out_dir, tmp);
    if (st && tmp && hp_fs_exists(tmp)) hp_status_free(hp_fs_remove_tree(tmp)); /* nothing half-written stays */
    free(cfg_path), free(tmp), free(cfg);
    list_free(&l);
    free(s.held);
    hp_graph_destroy(g);
    hp_ckpt_close(&ck);
    free(dir);
    return st;
}
