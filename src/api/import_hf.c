/* api/import_hf: a Hugging Face model directory as a model's starting
 * weights (`hyperpar train --init-hf DIR`, hp_train_config.init_hf; issue
 * 27): config.json says the architecture and the shape (GPT2LMHeadModel,
 * LlamaForCausalLM, MixtralForCausalLM), model.safetensors — or the shards a
 * model.safetensors.index.json's weight_map names — hold the tensors, F32 or
 * BF16 (widened exactly). Each parameter is made from its tensors by the
 * inverse of the layouts api/hf_map states (api/export_hf writes them):
 * GPT-2's Conv1D weights transposed back; Llama's q/k/v/o and gate/up/down
 * put into the fused stacks, the query and key rows of each head permuted
 * from Hugging Face's RoPE halves back to the interleaved pairs this project
 * rotates; Mixtral's router and w1/w3/w2 into the expert stacks; the padded
 * vocabulary rows zero. A missing tensor, a
 * wrong shape or an unknown dtype is a one-line error naming the directory
 * and the tensor; so is a parameter no tensor fills. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/hf_map.h"
#include "io/fsutil.h"
#include "io/json.h"
#include "io/regfile.h"
#include "io/safetensors.h"

#define HF_MAX_FILES 256

typedef struct {
    const char *dir;
    hp_safetensors *f[HF_MAX_FILES];
    int nf;
    /* the model's parameters */
    float *const *ptrs;
    const char (*names)[HP_NAME_LEN];
    const hp_shape *shapes;
    int n;
    unsigned char *filled;
} hf_in;

static hp_status read_json(hp_json **out, const char *path) {
    char *text = NULL;
    size_t len = 0;
    HP_TRY(hp_regfile_read(&text, &len, path, (size_t)64 << 20, "a Hugging Face JSON file"));
    hp_status st = hp_json_parse(out, text, len);
    free(text);
    return st ? hp_error_wrap(st, "%s", path) : HP_OK;
}

static hp_status open_files(hf_in *s) {
    char *one = hp_fs_join(s->dir, "model.safetensors"), *idx = hp_fs_join(s->dir, "model.safetensors.index.json");
    hp_status st = one && idx ? HP_OK : hp_errorf("--init-hf: out of memory");
    if (!st && hp_fs_exists(one)) {
        st = hp_safetensors_open(&s->f[0], one);
        s->nf = st ? 0 : 1;
    } else if (!st && hp_fs_exists(idx)) {
        hp_json *j = NULL;
        st = read_json(&j, idx);
        const hp_json *wm = j ? hp_json_get(j, "weight_map") : NULL;
        if (!st && (!wm || wm->type != HP_JSON_OBJECT))
            st = hp_errorf("%s: no object 'weight_map'", idx);
        for (int i = 0; !st && i < wm->n; i++) {
            if (wm->items[i].type != HP_JSON_STRING || strchr(wm->items[i].str, '/')) {
                st = hp_errorf("%s: weight_map['%s'] is not a file name in the directory", idx, wm->keys[i]);
                break;
            }
            int seen = 0;
            for (int k = 0; k < s->nf && !seen; k++)
                seen = !strcmp(hp_safetensors_path(s->f[k]) + strlen(s->dir) + 1, wm->items[i].str);
            if (seen) continue;
            if (s->nf == HF_MAX_FILES) {
                st = hp_errorf("%s: more than %d shard files", idx, HF_MAX_FILES);
                break;
            }
            char *p = hp_fs_join(s->dir, wm->items[i].str);
            st = p ? hp_safetensors_open(&s->f[s->nf], p) : hp_errorf("--init-hf: out of memory");
            if (!st) s->nf++;
            free(p);
        }
        hp_json_free(j);
    } else if (!st) {
        st = hp_errorf("%s: no model.safetensors or model.safetensors.index.json", s->dir);
    }
    free(one), free(idx);
    return st;
}

/* Tensor `name` as fp32 rows x cols (malloc'd), its stored shape [rows, cols] (or [rows * cols] when vector). */
static hp_status tensor(float **out, hf_in *s, const char *name, int64_t rows, int64_t cols, int vector) {
    *out = NULL;
    const hp_safetensors_entry *en = NULL;
    const hp_safetensors *f = NULL;
    for (int k = 0; k < s->nf && !en; k++) en = hp_safetensors_find(s->f[k], name), f = s->f[k];
    if (!en) return hp_errorf("%s: missing tensor '%s'", s->dir, name);
    if (!en->has_dtype || (en->dtype != HP_F32 && en->dtype != HP_BF16))
        return hp_errorf("%s: tensor '%s' has dtype %s (F32 and BF16 are read)", s->dir, name, en->dtype_name);
    hp_shape want = vector ? hp_shape1(rows * cols) : hp_shape2(rows, cols);
    if (!hp_shape_eq(&en->shape, &want)) {
        char b1[64], b2[64];
        return hp_errorf("%s: tensor '%s' is %s, expected %s", s->dir, name, hp_shape_str(b1, sizeof b1, &en->shape),
                         hp_shape_str(b2, sizeof b2, &want));
    }
    float *o = malloc(sizeof(float) * (size_t)(rows * cols));
    if (!o) return hp_errorf("%s: out of memory reading '%s'", s->dir, name);
    hp_status st = hp_safetensors_read_into(f, name, en->dtype, &en->shape, o);
    if (!st && en->dtype == HP_BF16) { /* widened in place, from the end */
        const uint16_t *b = (const uint16_t *)o;
        for (int64_t i = rows * cols - 1; i >= 0; i--) o[i] = hp_bf16_to_f32(b[i]);
    }
    if (st) return free(o), st;
    *out = o;
    return HP_OK;
}

/* One piece of the model (api/hf_map) from its tensor: transposed back, each head's rows from Hugging Face's
 * RoPE halves back to our pairs, a vocabulary table's padded rows zero. */
static hp_status take(hf_in *s, const hp_hf_piece *pc) {
    int k = 0;
    while (k < s->n && strcmp(s->names[k], pc->ours)) k++;
    if (k == s->n) return hp_errorf("--init-hf: the model has no parameter '%s' (for '%s')", pc->ours, pc->hf);
    int64_t r0 = pc->r0, rows = pc->rows, cols = pc->cols, hs = pc->rope_hs, numel = hp_shape_numel(&s->shapes[k]);
    if ((r0 + rows) * cols > numel)
        return hp_errorf("--init-hf: '%s' is smaller than '%s' in %s", pc->ours, pc->hf, s->dir);
    float *t;
    HP_TRY(pc->transpose ? tensor(&t, s, pc->hf, cols, rows, pc->vector)
                         : tensor(&t, s, pc->hf, rows, cols, pc->vector));
    float *dst = s->ptrs[k] + r0 * cols;
    for (int64_t j = 0; j < rows; j++) { /* Hugging Face's row j is our row r */
        int64_t r = hs > 0 ? j / hs * hs + hp_hf_rope_row(j % hs, hs) : j;
        for (int64_t c = 0; c < cols; c++) dst[r * cols + c] = pc->transpose ? t[c * rows + j] : t[j * cols + c];
    }
    free(t);
    if (pc->vocab) memset(dst + rows * cols, 0, sizeof(float) * (size_t)(numel - (r0 + rows) * cols));
    s->filled[k] = 1;
    return HP_OK;
}

/* Every piece of the model api/hf_map gives for family and shape c. */
static hp_status take_all(hf_in *s, const char *family, const hp_model_config *c) {
    hp_hf_piece *pcs;
    int n;
    HP_TRY(hp_hf_pieces(&pcs, &n, family, c));
    hp_status st = HP_OK;
    for (int i = 0; !st && i < n; i++) st = take(s, &pcs[i]);
    free(pcs);
    return st;
}

/* config.json's integer field key, or an error naming it. */
static hp_status cfg_int(int *out, const hp_json *j, const char *key, const char *path) {
    int64_t v;
    hp_status st = hp_json_get_int(&v, j, key);
    if (st) return hp_error_wrap(st, "%s", path);
    if (v < 0 || v > (1 << 30)) return hp_errorf("%s: %s = %lld is out of range", path, key, (long long)v);
    *out = (int)v;
    return HP_OK;
}

hp_status hp_hf_model_config(hp_model_config *out, char *family, size_t cap, const char *dir) {
    memset(out, 0, sizeof *out);
    char *path = hp_fs_join(dir, "config.json");
    if (!path) return hp_errorf("--init-hf: out of memory");
    hp_json *j = NULL;
    hp_status st = read_json(&j, path);
    const char *mt = NULL;
    if (!st) {
        st = hp_json_get_string(&mt, j, "model_type");
        if (st) st = hp_error_wrap(st, "%s", path);
    }
    if (!st && !strcmp(mt, "gpt2")) {
        snprintf(family, cap, "gpt2");
        st = cfg_int(&out->layers, j, "n_layer", path);
        if (!st) st = cfg_int(&out->heads, j, "n_head", path);
        if (!st) st = cfg_int(&out->channels, j, "n_embd", path);
        if (!st) st = cfg_int(&out->vocab, j, "vocab_size", path);
        if (!st) st = cfg_int(&out->max_seq, j, "n_positions", path);
    } else if (!st && (!strcmp(mt, "llama") || !strcmp(mt, "mixtral"))) {
        snprintf(family, cap, "%s", !strcmp(mt, "llama") ? "llama" : "moe");
        double theta = 10000;
        st = cfg_int(&out->layers, j, "num_hidden_layers", path);
        if (!st) st = cfg_int(&out->heads, j, "num_attention_heads", path);
        if (!st) st = cfg_int(&out->channels, j, "hidden_size", path);
        if (!st) st = cfg_int(&out->vocab, j, "vocab_size", path);
        if (!st) st = cfg_int(&out->max_seq, j, "max_position_embeddings", path);
        if (!st) st = cfg_int(&out->kv_heads, j, hp_json_get(j, "num_key_value_heads") ? "num_key_value_heads"
                                                                                    : "num_attention_heads", path);
        if (!st) st = cfg_int(!strcmp(mt, "llama") ? &out->ffn : &out->expert_ffn, j, "intermediate_size", path);
        if (!st && hp_json_get(j, "rope_theta")) st = hp_json_get_double(&theta, j, "rope_theta");
        out->rope_theta = (float)theta;
        if (!st && !strcmp(mt, "mixtral")) {
            st = cfg_int(&out->experts, j, "num_local_experts", path);
            if (!st) st = cfg_int(&out->top_k, j, "num_experts_per_tok", path);
        }
        const hp_json *tie = hp_json_get(j, "tie_word_embeddings");
        if (!st && tie && tie->type == HP_JSON_BOOL && tie->boolean)
            st = hp_errorf("%s: tie_word_embeddings is true: the Llama models here have an untied head", path);
    } else if (!st) {
        st = hp_errorf("%s: model_type '%s' is not read here (gpt2, llama, mixtral)", path, mt);
    }
    hp_json_free(j);
    free(path);
    return st;
}

hp_status hp_hf_load(float *const *ptrs, const char (*names)[HP_NAME_LEN], const hp_shape *shapes, int n,
                     const char *dir, const char *family, const hp_model_config *c) {
    hf_in s = {.dir = dir, .ptrs = ptrs, .names = names, .shapes = shapes, .n = n};
    s.filled = calloc((size_t)(n ? n : 1), 1);
    hp_status st = s.filled ? open_files(&s) : hp_errorf("--init-hf: out of memory");
    if (!st) st = take_all(&s, family, c);
    for (int k = 0; !st && k < n; k++)
        if (!s.filled[k])
            st = hp_errorf("%s: no tensor fills the model's parameter '%s' (shared experts have no Mixtral layout)",
                           dir, names[k]);
    for (int k = 0; k < s.nf; k++) hp_safetensors_close(s.f[k]);
    free(s.filled);
    return st;
}
