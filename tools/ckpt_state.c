#include "ckpt_state.h"

#include <string.h>

#include "io/json.h"
#include "session.h"

hp_status hp_train_state_json(char **out, long step, const hp_gpt2_config *m, const hp_data_state *ds,
                              const hp_opt *tab, int ntab) {
    hp_jw w;
    hp_jw_init(&w);
    hp_jw_object_begin(&w);
    hp_jw_key(&w, "format"), hp_jw_string(&w, "hyperpar-train-1");
    hp_jw_key(&w, "step"), hp_jw_int(&w, step);
    hp_jw_key(&w, "model"), hp_gpt2_config_to_json(&w, m);
    hp_jw_key(&w, "data"), hp_data_state_to_json(&w, ds);
    hp_jw_key(&w, "args");
    hp_jw_object_begin(&w);
    for (int i = 0; i < ntab; i++) {
        char buf[600];
        if (!strcmp(tab[i].name, "resume") || !strcmp(tab[i].name, "init") || !strcmp(tab[i].name, "stop-at") ||
            !strcmp(tab[i].name, "trace") || !strcmp(tab[i].name, "trace-steps"))
            continue;
        hp_args_format(buf, sizeof buf, &tab[i]);
        hp_jw_key(&w, tab[i].name), hp_jw_string(&w, buf);
    }
    hp_jw_object_end(&w);
    hp_jw_object_end(&w);
    size_t len;
    return hp_jw_finish(out, &len, &w);
}
