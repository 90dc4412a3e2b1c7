/* api/model: hp_model, GPT-2's forward graph for B x T (models/gpt2) or a
 * graph the caller wrote (hp_model_from_graph), and a
 * whole GPT-2's parameter store for llm.c import and export. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "models/llama.h"
#include "models/pangu.h"
#include "models/zoo.h"

hp_status hp_model_gpt2(hp_model **out, const hp_model_config *cfg, int B, int T) {
    *out = NULL;
    if (!cfg) return hp_errorf("hp_model_gpt2: cfg is NULL");
    if (B < 1 || T < 1) return hp_errorf("hp_model_gpt2: B and T must be >= 1, got B=%d T=%d", B, T);
    hp_model *m = calloc(1, sizeof *m);
    if (!m) return hp_errorf("hp_model_gpt2: out of memory");
    m->cfg = (hp_gpt2_config){cfg->layers, cfg->heads, cfg->channels, cfg->vocab, 0, cfg->max_seq};
    m->B = B, m->T = T;
    hp_status st = hp_gpt2_config_check(&m->cfg);
    if (!st) st = hp_graph_create(&m->g);
    if (!st) st = hp_gpt2_build(m->g, &m->io, &m->cfg, B, T);
    if (st) {
        hp_model_free(m);
        return hp_error_wrap(st, "hp_model_gpt2");
    }
    *out = m;
    return HP_OK;
}

hp_status hp_model_config_pangu(hp_model_config *out, const char *preset) {
    if (!out) return hp_errorf("hp_model_config_pangu: out is NULL");
    return hp_pangu_preset(out, preset);
}

hp_status hp_model_pangu(hp_model **out, const hp_model_config *cfg, int B, int T) {
    *out = NULL;
    if (!cfg) return hp_errorf("hp_model_pangu: cfg is NULL");
    hp_graph *g = NULL;
    HP_TRY(hp_graph_create(&g));
    hp_status st = hp_pangu_build(g, cfg, B, T);
    if (st) {
        hp_graph_destroy(g);
        return hp_error_wrap(st, "hp_model_pangu");
    }
    return hp_model_from_graph(out, g, cfg->vocab);
}

hp_status hp_model_config_llama(hp_model_config *out, const char *preset) {
    if (!out) return hp_errorf("hp_model_config_llama: out is NULL");
    return hp_llama_preset(out, preset);
}

/* A family's model built on cfg's shape (what = the caller's name, for messages). */
static hp_status family_model(hp_model **out, const hp_model_family *f, const hp_model_config *cfg, int B, int T,
                              const char *what) {
    *out = NULL;
    if (!cfg) return hp_errorf("%s: cfg is NULL", what);
    hp_graph *g = NULL;
    HP_TRY(hp_graph_create(&g));
    hp_status st = f->build(g, cfg, B, T);
    if (st) {
        hp_graph_destroy(g);
        return hp_error_wrap(st, what);
    }
    return hp_model_from_graph(out, g, cfg->vocab);
}

hp_status hp_model_llama(hp_model **out, const hp_model_config *cfg, int B, int T) {
    return family_model(out, hp_model_family_named("llama"), cfg, B, T, "hp_model_llama");
}

hp_status hp_model_config_named(hp_model_config *out, const char *name) {
    if (!out) return hp_errorf("hp_model_config_named: out is NULL");
    const hp_model_family *f = hp_model_family_of(name);
    if (!f) return hp_errorf("--model '%s': not a known model (%s)", name ? name : "", hp_model_names());
    return f->preset(out, name);
}

const char *hp_model_family_name(const char *name) {
    if (name && !strcmp(name, "gpt2")) return "gpt2";
    const hp_model_family *f = hp_model_family_of(name);
    return f ? f->family : NULL;
}

hp_status hp_model_named(hp_model **out, const char *name, const hp_model_config *cfg, int B, int T) {
    if (out) *out = NULL;
    if (!out) return hp_errorf("hp_model_named: out is NULL");
    if (name && !strcmp(name, "gpt2")) return hp_model_gpt2(out, cfg, B, T);
    const hp_model_family *f = hp_model_family_of(name);
    if (!f) return hp_errorf("hp_model_named: --model '%s': %s", name ? name : "", hp_model_names());
    return family_model(out, f, cfg, B, T, "hp_model_named");
}

void hp_model_free(hp_model *m) {
    if (!m) return;
    hp_graph_destroy(m->g);
    free(m);
}

hp_status hp_model_from_graph(hp_model **out, hp_graph *g, int vocab) {
    *out = NULL;
    if (!g) return hp_errorf("hp_model_from_graph: g is NULL");
    hp_status st = hp_graph_status(g) ? hp_error_wrap(hp_errorf("%s", hp_status_msg(hp_graph_status(g))), "model")
                                      : HP_OK;
    int io[2] = {hp_graph_find(g, "tokens"), hp_graph_find(g, "targets")};
    const char *io_name[2] = {"tokens", "targets"};
    for (int k = 0; !st && k < 2; k++) {
        const hp_value *v = io[k] < 0 ? NULL : hp_val(g, io[k]);
        if (!v || v->kind != HP_V_INPUT || v->dtype != HP_I32 || v->shape.ndim != 2)
            st = hp_errorf("model: no i32 input '%s' of shape [B, T]", io_name[k]);
    }
    if (!st && !hp_shape_eq(&hp_val(g, io[0])->shape, &hp_val(g, io[1])->shape))
        st = hp_errorf("model: inputs 'tokens' and 'targets' differ in shape");
    if (!st && g->loss < 0) st = hp_errorf("model: no loss set (hp_set_loss)");
    if (!st && vocab < 1) st = hp_errorf("model: vocab must be >= 1, got %d", vocab);
    hp_model *m = st ? NULL : calloc(1, sizeof *m);
    if (!st && !m) st = hp_errorf("model: out of memory");
    if (st) {
        hp_graph_destroy(g);
        return hp_error_wrap(st, "hp_model_from_graph");
    }
    m->g = g;
    m->custom = 1;
    m->B = (int)hp_val(g, io[0])->shape.d[0], m->T = (int)hp_val(g, io[0])->shape.d[1];
    m->cfg = (hp_gpt2_config){.L = 1, .NH = 1, .C = 1, .V = vocab, .Vp = vocab, .maxT = m->T};
    m->io = (hp_gpt2_io){.tokens = io[0], .targets = io[1], .loss = g->loss, .losses = -1, .logits = -1};
    *out = m;
    return HP_OK;
}

long hp_model_num_params(const hp_model *m) {
    if (!m->custom) return (long)hp_gpt2_num_params(&m->cfg);
    long n = 0;
    for (int i = 0; i < m->g->nvals; i++)
        if (m->g->vals[i].kind == HP_V_PARAM) n += (long)hp_val_numel(m->g, i);
    return n;
}
int hp_model_batch(const hp_model *m) { return m->B; }
int hp_model_seq(const hp_model *m) { return m->T; }

hp_status hp_api_store_create(hp_api_store *s, const hp_gpt2_config *c) {
    memset(s, 0, sizeof *s);
    hp_gpt2_io io;
    HP_TRY(hp_graph_create(&s->g));
    hp_status st = hp_gpt2_build(s->g, &io, c, 1, 1);
    if (!st) st = hp_param_store_create(&s->ps, s->g);
    if (!st) {
        s->ptrs = malloc(sizeof(float *) * (size_t)(s->ps.n ? s->ps.n : 1));
        if (!s->ptrs) st = hp_errorf("gpt2: out of memory");
    }
    for (int i = 0; !st && i < s->ps.n; i++) s->ptrs[i] = hp_param_ptr(&s->ps, i);
    if (st) hp_api_store_free(s);
    return st;
}

void hp_api_store_free(hp_api_store *s) {
    free(s->ptrs);
    hp_param_store_free(&s->ps);
    hp_graph_destroy(s->g);
    memset(s, 0, sizeof *s);
}
