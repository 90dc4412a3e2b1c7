/* tests/api/test_api_options: options checked once — bf16 parameters
 * (bf16_params_all, a plan's fsdp gather=bf16) without bf16 compute are
 * refused at hp_train_create by the compile's precision pass alone (the
 * API's own copy of the check was removed in issue 23). */
#include <string.h>

#include "hyperpar/hyperpar.h"
#include "testutil.h"

static hp_status create(hp_model *m, hp_shard_plan *plan, int bf16_params_all) {
    hp_train_config tc;
    hp_train_config_default(&tc, m);
    tc.data = "/usr/share/common-licenses/GPL-3";
    tc.steps = 1, tc.warmup_steps = 0, tc.threads = 2;
    tc.plan = plan;
    tc.bf16 = 0, tc.bf16_params_all = bf16_params_all;
    hp_train *t = NULL;
    hp_status st = hp_train_create(&t, &tc);
    hp_train_free(t);
    return st;
}

int main(void) {
    hp_model_config mc = {.layers = 1, .heads = 2, .channels = 32, .vocab = 256, .max_seq = 16};
    hp_model *m = NULL;
    CHECK_OK(hp_model_gpt2(&m, &mc, 2, 16));
    if (!m) return hp_test_finish("test_api_options");
    CHECK_ERR(create(m, NULL, 1), "every parameter in bf16 needs --dtype bf16");
    hp_shard_plan *p = NULL;
    CHECK_OK(hp_shard_plan_gpt2(&p, 2, 1));
    hp_fsdp_settings s;
    hp_fsdp_settings_default(&s);
    s.gather_bf16 = 1;
    if (p) CHECK_OK(hp_shard_plan_set_fsdp_settings(p, &s));
    if (p) CHECK_ERR(create(m, p, 0), "gather=bf16 needs bf16 compute");
    /* the settings as values print as the text form would give them */
    if (p) CHECK(strstr(hp_shard_plan_text(p), "gather=bf16") != NULL);
    hp_shard_plan_free(p);
    hp_model_free(m);
    return hp_test_finish("test_api_options");
}
