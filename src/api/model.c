/* api/model: hp_model, GPT-2's forward graph for B x T (models/gpt2), and a
 * whole GPT-2's parameter store for llm.c import and export. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

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

void hp_model_free(hp_model *m) {
    if (!m) return;
    hp_graph_destroy(m->g);
    free(m);
}

long hp_model_num_params(const hp_model *m) { return (long)hp_gpt2_num_params(&m->cfg); }
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
