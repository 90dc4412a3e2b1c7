/* models/gpt2_plan: GPT-2's data x tensor parallel plan (gpt2_plan.h). */
#include "models/gpt2_plan.h"

#include <stdio.h>
#include <string.h>

hp_status hp_plan_gpt2_dp_tp(hp_plan *out, int dp, int tp) { return hp_plan_gpt2(out, 1, dp, tp); }

hp_status hp_plan_gpt2(hp_plan *out, int replicas, int dp, int tp) { return hp_plan_gpt2_pp(out, 1, replicas, dp, tp); }

hp_status hp_plan_gpt2_pp(hp_plan *out, int pp, int replicas, int dp, int tp) {
    memset(out, 0, sizeof *out);
    if (pp < 1) return hp_errorf("gpt2 plan: pp must be >= 1 (got %d)", pp);
    if (replicas < 1) return hp_errorf("gpt2 plan: replicas must be >= 1 (got %d)", replicas);
    if (dp < 1) return hp_errorf("gpt2 plan: dp must be >= 1 (got %d)", dp);
    if (tp < 1) return hp_errorf("gpt2 plan: tp must be >= 1 (got %d)", tp);
    char text[80], stages[24] = "";
    if (pp > 1) snprintf(stages, sizeof stages, "pp=%d,", pp);
    if (replicas > 1) snprintf(text, sizeof text, "%srep=%d,dp=%d,tp=%d", stages, replicas, dp, tp);
    else snprintf(text, sizeof text, "%sdp=%d,tp=%d", stages, dp, tp);
    const char *batch = replicas > 1 ? "S(0)@rep,S(0)@dp" : "S(0)@dp";
    hp_mesh m;
    HP_TRY(hp_mesh_parse(&m, text));
    hp_plan_init(out, &m);
    const char *const rules[][3] = {
        {"input", "tokens", batch},
        {"input", "targets", batch},
        {"param", "h.*.attn.qkv.weight", "S(1)@tp"},  /* [3, C, C]: heads (column parallel) */
        {"param", "h.*.attn.qkv.bias", "S(1)@tp"},    /* [3, C] */
        {"param", "h.*.attn.proj.weight", "S(1)@tp"}, /* [C, C]: row parallel (bias R) */
        {"param", "h.*.mlp.fc.weight", "S(0)@tp"},    /* [4C, C]: column parallel */
        {"param", "h.*.mlp.fc.bias", "S(0)@tp"},      /* [4C] */
        {"param", "h.*.mlp.proj.weight", "S(1)@tp"},  /* [C, 4C]: row parallel (bias R) */
        {"param", "wte", "S(0)@tp"},                  /* [Vp, C]: vocabulary parallel */
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        hp_status st = rules[i][0][0] == 'i' ? hp_plan_add_input_str(out, rules[i][1], rules[i][2])
                                             : hp_plan_add_param_str(out, rules[i][1], rules[i][2]);
        if (st) {
            hp_plan_free(out);
            return st;
        }
    }
    return HP_OK;
}
