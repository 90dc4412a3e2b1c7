/* api/model: hp_model, GPT-2's forward graph for B x T (models/gpt2). */
#include <stdlib.h>

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
