/* api/hf_map: the table of our parameters against Hugging Face's tensors
 * (GPT-2, Llama, Mixtral) and its expansion for one model's shape. */
#include "api/hf_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

/* The sizes a rule is written in. */
typedef enum { D_ONE, D_C, D_3C, D_4C, D_V, D_MAXT, D_CKV, D_F, D_FE, D_E, D_COUNT } dim;

/* Where a rule applies: once (before the layers when it comes before them in the table, after when after),
 * in every layer, in a layer of a dense Llama, in a layer of a Mixtral, per layer and expert. */
typedef enum { ONCE, LAYER, DENSE, MOE, EXPERT } scope;

enum { T = 1, ROPE = 2, VEC = 4, VOCAB = 8 }; /* stored transposed, RoPE halves per head, 1-D, vocabulary rows */

typedef struct {
    scope where;
    const char *ours, *hf; /* {L}: the layer, {E}: the expert */
    dim rows, cols;
    dim unit;              /* the block's first row: (k + stride * expert) * unit */
    int k, stride;
    unsigned how;
} rule;

/* GPT2LMHeadModel: Conv1D weights stored (in, out); the head tied to wte (no tensor of its own). */
static const rule gpt2[] = {
    {ONCE, "wte", "transformer.wte.weight", D_V, D_C, D_ONE, 0, 0, VOCAB},
    {ONCE, "wpe", "transformer.wpe.weight", D_MAXT, D_C, D_ONE, 0, 0, 0},
    {LAYER, "h.{L}.ln1.weight", "transformer.h.{L}.ln_1.weight", D_ONE, D_C, D_ONE, 0, 0, VEC},
    {LAYER, "h.{L}.ln1.bias", "transformer.h.{L}.ln_1.bias", D_ONE, D_C, D_ONE, 0, 0, VEC},
    {LAYER, "h.{L}.attn.qkv.weight", "transformer.h.{L}.attn.c_attn.weight", D_3C, D_C, D_ONE, 0, 0, T},
    {LAYER, "h.{L}.attn.qkv.bias", "transformer.h.{L}.attn.c_attn.bias", D_ONE, D_3C, D_ONE, 0, 0, VEC},
    {LAYER, "h.{L}.attn.proj.weight", "transformer.h.{L}.attn.c_proj.weight", D_C, D_C, D_ONE, 0, 0, T},
    {LAYER, "h.{L}.attn.proj.bias", "transformer.h.{L}.attn.c_proj.bias", D_ONE, D_C, D_ONE, 0, 0, VEC},
    {LAYER, "h.{L}.ln2.weight", "transformer.h.{L}.ln_2.weight", D_ONE, D_C, D_ONE, 0, 0, VEC},
    {LAYER, "h.{L}.ln2.bias", "transformer.h.{L}.ln_2.bias", D_ONE, D_C, D_ONE, 0, 0, VEC},
    {LAYER, "h.{L}.mlp.fc.weight", "transformer.h.{L}.mlp.c_fc.weight", D_4C, D_C, D_ONE, 0, 0, T},
    {LAYER, "h.{L}.mlp.fc.bias", "transformer.h.{L}.mlp.c_fc.bias", D_ONE, D_4C, D_ONE, 0, 0, VEC},
    {LAYER, "h.{L}.mlp.proj.weight", "transformer.h.{L}.mlp.c_proj.weight", D_C, D_4C, D_ONE, 0, 0, T},
    {LAYER, "h.{L}.mlp.proj.bias", "transformer.h.{L}.mlp.c_proj.bias", D_ONE, D_C, D_ONE, 0, 0, VEC},
    {ONCE, "lnf.weight", "transformer.ln_f.weight", D_ONE, D_C, D_ONE, 0, 0, VEC},
    {ONCE, "lnf.bias", "transformer.ln_f.bias", D_ONE, D_C, D_ONE, 0, 0, VEC},
};

/* LlamaForCausalLM / MixtralForCausalLM: q and k rows in RoPE halves; kv = [k; v], gate_up = [gate; up]; the
 * expert stacks gate_up [E, 2, Fe, C] (w1 = gate, w3 = up) and down [E, C, Fe] (w2); the head untied. The rules
 * of one expert stack, one after the other, are expanded expert by expert (the export reads a stack once). */
static const rule llama[] = {
    {ONCE, "tok_embeddings.weight", "model.embed_tokens.weight", D_V, D_C, D_ONE, 0, 0, VOCAB},
    {LAYER, "h.{L}.attn_norm.weight", "model.layers.{L}.input_layernorm.weight", D_ONE, D_C, D_ONE, 0, 0, VEC},
    {LAYER, "h.{L}.attn.q.weight", "model.layers.{L}.self_attn.q_proj.weight", D_C, D_C, D_ONE, 0, 0, ROPE},
    {LAYER, "h.{L}.attn.kv.weight", "model.layers.{L}.self_attn.k_proj.weight", D_CKV, D_C, D_ONE, 0, 0, ROPE},
    {LAYER, "h.{L}.attn.kv.weight", "model.layers.{L}.self_attn.v_proj.weight", D_CKV, D_C, D_CKV, 1, 0, 0},
    {LAYER, "h.{L}.attn.proj.weight", "model.layers.{L}.self_attn.o_proj.weight", D_C, D_C, D_ONE, 0, 0, 0},
    {LAYER, "h.{L}.mlp_norm.weight", "model.layers.{L}.post_attention_layernorm.weight", D_ONE, D_C, D_ONE, 0, 0,
     VEC},
    {DENSE, "h.{L}.mlp.gate_up.weight", "model.layers.{L}.mlp.gate_proj.weight", D_F, D_C, D_ONE, 0, 0, 0},
    {DENSE, "h.{L}.mlp.gate_up.weight", "model.layers.{L}.mlp.up_proj.weight", D_F, D_C, D_F, 1, 0, 0},
    {DENSE, "h.{L}.mlp.down.weight", "model.layers.{L}.mlp.down_proj.weight", D_C, D_F, D_ONE, 0, 0, 0},
    {MOE, "h.{L}.moe.router.weight", "model.layers.{L}.block_sparse_moe.gate.weight", D_E, D_C, D_ONE, 0, 0, 0},
    {EXPERT, "h.{L}.moe.experts.gate_up.weight", "model.layers.{L}.block_sparse_moe.experts.{E}.w1.weight", D_FE,
     D_C, D_FE, 0, 2, 0},
    {EXPERT, "h.{L}.moe.experts.gate_up.weight", "model.layers.{L}.block_sparse_moe.experts.{E}.w3.weight", D_FE,
     D_C, D_FE, 1, 2, 0},
    {EXPERT, "h.{L}.moe.experts.down.weight", "model.layers.{L}.block_sparse_moe.experts.{E}.w2.weight", D_C, D_FE,
     D_C, 0, 1, 0},
    {ONCE, "norm.weight", "model.norm.weight", D_ONE, D_C, D_ONE, 0, 0, VEC},
    {ONCE, "output.weight", "lm_head.weight", D_V, D_C, D_ONE, 0, 0, VOCAB},
};

void hp_hf_ffn_widths(int64_t *ffn, int64_t *expert_ffn, const hp_model_config *c) {
    int64_t C = c->channels;
    *ffn = c->ffn > 0 ? c->ffn : (8 * C / 3 + 255) / 256 * 256;
    *expert_ffn = c->expert_ffn > 0 ? c->expert_ffn : *ffn;
}

int64_t hp_hf_rope_row(int64_t j, int64_t hs) { return j < hs / 2 ? 2 * j : 2 * (j - hs / 2) + 1; }

/* pattern with {L} and {E} replaced; 0 when it does not fit in cap */
static int expand(char *out, size_t cap, const char *pattern, int layer, int64_t expert) {
    size_t n = 0;
    for (const char *p = pattern; *p;) {
        char num[24] = "";
        if (!strncmp(p, "{L}", 3)) snprintf(num, sizeof num, "%d", layer), p += 3;
        else if (!strncmp(p, "{E}", 3)) snprintf(num, sizeof num, "%lld", (long long)expert), p += 3;
        else num[0] = *p++, num[1] = 0;
        size_t k = strlen(num);
        if (n + k + 1 > cap) return 0;
        memcpy(out + n, num, k + 1);
        n += k;
    }
    return 1;
}

typedef struct {
    hp_hf_piece *p;
    int n, cap;
    int64_t d[D_COUNT];
    int64_t hs;
} list;

static hp_status emit(list *l, const rule *r, int layer, int64_t expert) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        hp_hf_piece *p = realloc(l->p, sizeof *p * (size_t)cap);
        if (!p) return hp_errorf("hf map: out of memory");
        l->p = p, l->cap = cap;
    }
    hp_hf_piece *p = &l->p[l->n];
    memset(p, 0, sizeof *p);
    if (!expand(p->ours, sizeof p->ours, r->ours, layer, expert) || !expand(p->hf, sizeof p->hf, r->hf, layer, expert))
        return hp_errorf("hf map: the name '%s' for layer %d is too long", r->hf, layer);
    p->r0 = (r->k + r->stride * expert) * l->d[r->unit];
    p->rows = l->d[r->rows], p->cols = l->d[r->cols];
    p->transpose = (r->how & T) != 0, p->vector = (r->how & VEC) != 0, p->vocab = (r->how & VOCAB) != 0;
    p->rope_hs = r->how & ROPE ? l->hs : 0;
    l->n++;
    return HP_OK;
}

static int applies(scope s, int64_t experts) {
    return s == LAYER || (s == DENSE && experts == 0) || (s == MOE && experts > 0);
}

/* One layer's rules [i, j). */
static hp_status layer_pieces(list *l, const rule *t, int i, int j, int layer) {
    int64_t E = l->d[D_E];
    for (int k = i; k < j;) {
        if (t[k].where != EXPERT) {
            if (applies(t[k].where, E)) HP_TRY(emit(l, &t[k], layer, 0));
            k++;
            continue;
        }
        int m = k; /* the rules of one stack */
        while (m < j && t[m].where == EXPERT && !strcmp(t[m].ours, t[k].ours)) m++;
        for (int64_t e = 0; e < E; e++)
            for (int q = k; q < m; q++) HP_TRY(emit(l, &t[q], layer, e));
        k = m;
    }
    return HP_OK;
}

hp_status hp_hf_pieces(hp_hf_piece **out, int *n, const char *family, const hp_model_config *c) {
    *out = NULL, *n = 0;
    int g2 = !strcmp(family, "gpt2");
    const rule *t = g2 ? gpt2 : llama;
    int nt = g2 ? (int)(sizeof gpt2 / sizeof *gpt2) : (int)(sizeof llama / sizeof *llama);
    if (c->heads <= 0 || c->channels % c->heads)
        return hp_errorf("hf map: %d channels do not split into %d heads", c->channels, c->heads);
    int64_t C = c->channels, KV = c->kv_heads > 0 ? c->kv_heads : c->heads;
    int64_t F, Fe;
    hp_hf_ffn_widths(&F, &Fe, c);
    list l = {.hs = C / c->heads};
    int64_t d[D_COUNT] = {[D_ONE] = 1, [D_C] = C, [D_3C] = 3 * C, [D_4C] = 4 * C, [D_V] = c->vocab,
                          [D_MAXT] = c->max_seq, [D_CKV] = KV * (C / c->heads), [D_F] = F,
                          [D_FE] = Fe, [D_E] = g2 ? 0 : c->experts};
    memcpy(l.d, d, sizeof d);
    hp_status st = HP_OK;
    for (int i = 0; !st && i < nt;) {
        if (t[i].where == ONCE) {
            st = emit(&l, &t[i], 0, 0);
            i++;
            continue;
        }
        int j = i;
        while (j < nt && t[j].where != ONCE) j++;
        for (int layer = 0; !st && layer < c->layers; layer++) st = layer_pieces(&l, t, i, j, layer);
        i = j;
    }
    if (st) return free(l.p), st;
    *out = l.p, *n = l.n;
    return HP_OK;
}
