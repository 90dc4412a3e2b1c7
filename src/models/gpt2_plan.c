/* models/gpt2_plan: GPT-2's data x tensor parallel plan (gpt2_plan.h). */
#include "models/gpt2_plan.h"

#include <stdio.h>
#include <string.h>

hp_status hp_plan_gpt2_dp_tp(hp_plan *out, int dp, int tp) { return hp_plan_gpt2(out, 1, dp, tp); }

hp_status hp_plan_gpt2(hp_plan *out, int replicas, int dp, int tp) { return hp_plan_gpt2_pp(out, 1, replicas, dp, tp); }

/* GPT-2's tensor-parallel rules (PanGu-α's blocks share them: its query layer stays replicated). */
static const char *const gpt2_rules[][2] = {
    {"h.*.attn.qkv.weight", "S(1)@tp"},  /* [3, C, C]: heads (column parallel) */
    {"h.*.attn.qkv.bias", "S(1)@tp"},    /* [3, C] */
    {"h.*.attn.proj.weight", "S(1)@tp"}, /* [C, C]: row parallel (bias R) */
    {"h.*.mlp.fc.weight", "S(0)@tp"},    /* [4C, C]: column parallel */
    {"h.*.mlp.fc.bias", "S(0)@tp"},      /* [4C] */
    {"h.*.mlp.proj.weight", "S(1)@tp"},  /* [C, 4C]: row parallel (bias R) */
    {"wte", "S(0)@tp"},                  /* [Vp, C]: vocabulary parallel */
};

/* Llama's (models/llama): heads of the query and of the keys and values, the MLP's hidden width, the
 * vocabulary of the untied embedding and head. */
static const char *const llama_rules[][2] = {
    {"h.*.attn.q.weight", "S(1)@tp"},       /* [1, C, C]: query heads (column parallel) */
    {"h.*.attn.kv.weight", "S(1)@tp"},      /* [2, Ckv, C]: kv heads (whole heads per rank: tp | kv_heads) */
    {"h.*.attn.proj.weight", "S(1)@tp"},    /* [C, C]: row parallel */
    {"h.*.mlp.gate_up.weight", "S(1)@tp"},  /* [2, F, C]: column parallel */
    {"h.*.mlp.down.weight", "S(1)@tp"},     /* [C, F]: row parallel */
    {"tok_embeddings.weight", "S(0)@tp"},   /* [Vp, C]: vocabulary-parallel embedding */
    {"output.weight", "S(0)@tp"},           /* [Vp, C]: vocabulary-parallel head and loss */
};

/* Mixture-of-Experts (models/llama's moe presets): Llama's attention and vocabulary; the routed experts whole on
 * every rank, or split by expert along ep (hp_plan_model_ep), the shared experts' MLP Megatron-style. */
static const char *const moe_rules[][2] = {
    {"h.*.attn.q.weight", "S(1)@tp"},
    {"h.*.attn.kv.weight", "S(1)@tp"},
    {"h.*.attn.proj.weight", "S(1)@tp"},
    {"h.*.moe.shared.gate_up.weight", "S(1)@tp"},
    {"h.*.moe.shared.down.weight", "S(1)@tp"},
    {"tok_embeddings.weight", "S(0)@tp"},
    {"output.weight", "S(0)@tp"},
};

hp_status hp_plan_model_pp(hp_plan *out, const char *family, int pp, int replicas, int dp, int tp) {
    return hp_plan_model_ep(out, family, pp, replicas, dp, 1, tp);
}

hp_status hp_plan_model_ep(hp_plan *out, const char *family, int pp, int replicas, int dp, int ep, int tp) {
    memset(out, 0, sizeof *out);
    const char *f = family ? family : "gpt2";
    if (pp < 1) return hp_errorf("%s plan: pp must be >= 1 (got %d)", f, pp);
    if (replicas < 1) return hp_errorf("%s plan: replicas must be >= 1 (got %d)", f, replicas);
    if (dp < 1) return hp_errorf("%s plan: dp must be >= 1 (got %d)", f, dp);
    if (tp < 1) return hp_errorf("%s plan: tp must be >= 1 (got %d)", f, tp);
    int llama = family && !strcmp(family, "llama"), moe = family && !strcmp(family, "moe");
    if (ep < 1 || (ep > 1 && !moe))
        return hp_errorf("%s plan: ep must be >= 1, and above 1 only for a Mixture-of-Experts model (got %d)", f, ep);
    const char *const(*rules)[2] = llama ? llama_rules : moe ? moe_rules : gpt2_rules;
    size_t nrules = llama ? sizeof llama_rules / sizeof llama_rules[0]
                    : moe ? sizeof moe_rules / sizeof moe_rules[0] : sizeof gpt2_rules / sizeof gpt2_rules[0];
    char text[160], stages[24] = "", reps[24] = "", eps[24] = "", batch[64];
    if (pp > 1) snprintf(stages, sizeof stages, "pp=%d,", pp);
    if (replicas > 1) snprintf(reps, sizeof reps, "rep=%d,", replicas);
    if (ep > 1) snprintf(eps, sizeof eps, "ep=%d,", ep);
    snprintf(text, sizeof text, "%s%sdp=%d,%stp=%d", stages, reps, dp, eps, tp);
    snprintf(batch, sizeof batch, "%sS(0)@dp%s", replicas > 1 ? "S(0)@rep," : "", ep > 1 ? ",S(0)@ep" : "");
    hp_mesh m;
    HP_TRY(hp_mesh_parse(&m, text));
    hp_plan_init(out, &m);
    hp_status st = hp_plan_add_input_str(out, "tokens", batch);
    if (!st) st = hp_plan_add_input_str(out, "targets", batch);
    for (size_t i = 0; i < nrules && !st; i++) st = hp_plan_add_param_str(out, rules[i][0], rules[i][1]);
    if (!st && ep > 1) st = hp_plan_add_param_str(out, "h.*.moe.experts.*", "S(0)@ep");
    if (st) hp_plan_free(out);
    return st;
}

hp_status hp_plan_gpt2_pp(hp_plan *out, int pp, int replicas, int dp, int tp) {
    return hp_plan_model_pp(out, "gpt2", pp, replicas, dp, tp);
}
