/* models/gpt2_config: the GPT-2 model shape in state.json and llm.c headers (see the header). */
#include "models/gpt2_config.h"

#include "io/llmc.h"

void hp_gpt2_config_to_json(hp_jw *w, const hp_gpt2_config *c) {
    hp_jw_object_begin(w);
    hp_jw_key(w, "L"), hp_jw_int(w, c->L);
    hp_jw_key(w, "NH"), hp_jw_int(w, c->NH);
    hp_jw_key(w, "C"), hp_jw_int(w, c->C);
    hp_jw_key(w, "V"), hp_jw_int(w, c->V);
    hp_jw_key(w, "Vp"), hp_jw_int(w, c->Vp);
    hp_jw_key(w, "maxT"), hp_jw_int(w, c->maxT);
    hp_jw_object_end(w);
}

hp_status hp_gpt2_config_from_json(hp_gpt2_config *c, const hp_json *obj) {
    int64_t v[6];
    const char *keys[6] = {"L", "NH", "C", "V", "Vp", "maxT"};
    for (int i = 0; i < 6; i++) {
        HP_TRY(hp_json_get_int(&v[i], obj, keys[i]));
        if (v[i] < 1 || v[i] > (1 << 30)) return hp_errorf("key '%s': %lld is out of range", keys[i], (long long)v[i]);
    }
    *c = (hp_gpt2_config){(int)v[0], (int)v[1], (int)v[2], (int)v[3], (int)v[4], (int)v[5]};
    return hp_gpt2_config_check(c);
}

hp_status hp_ckpt_model_config(hp_gpt2_config *c, const hp_ckpt *ck, const char *dir) {
    const hp_json *m = hp_json_get(ck->state, "model");
    if (!m) return hp_errorf("%s/state.json: missing key 'model'", dir);
    hp_status st = hp_gpt2_config_from_json(c, m);
    if (st) return hp_error_wrap(st, "%s/state.json: model", dir);
    return HP_OK;
}

hp_status hp_llmc_model_config(hp_gpt2_config *c, const char *path) {
    hp_llmc_header h;
    HP_TRY(hp_llmc_read_header(&h, path));
    *c = (hp_gpt2_config){h.L, h.NH, h.C, h.V, h.Vp, h.maxT};
    return hp_gpt2_config_check(c);
}

