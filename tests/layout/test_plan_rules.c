/* A plan rule that matches no tensor is an error naming its line, with the
 * closest real name as a hint (issue 11, defect 9: a typo such as
 * h.*.mlp.fc.wieght was silently ignored, leaving the tensor Replicate). */
#include "layout/plan.h"
#include "testutil.h"

static const char *const params[] = {"wte", "wpe", "h.0.ln1.weight", "h.0.mlp.fc.weight", "h.0.mlp.fc.bias",
                                     "h.1.mlp.fc.weight", "h.10.attn.qkv.weight", "lnf.weight"};
static const char *const inputs[] = {"tokens", "targets"};
enum { NP = sizeof params / sizeof params[0], NI = 2 };

static hp_status check_text(const char *text) {
    hp_plan p;
    HP_TRY(hp_plan_parse(&p, text, "my.plan"));
    hp_status st = hp_plan_check_rules(&p, params, NP, inputs, NI);
    hp_plan_free(&p);
    return st;
}

int main(void) {
    CHECK_OK(check_text("mesh: dp=2\ninput tokens: S(0)@dp\nparam h.*.mlp.fc.weight: S(0)@dp\nparam w?e: R\n"));
    CHECK_ERR(check_text("mesh: dp=2\n# a comment\nparam h.*.mlp.fc.weight: S(0)@dp\nparam h.*.mlp.fc.wieght: S(0)@dp\n"),
              "my.plan:4: param 'h.*.mlp.fc.wieght' matches no parameter of the model (closest: 'h.0.mlp.fc.weight')");
    CHECK_ERR(check_text("mesh: dp=2\nparam h.*.attn.qkv.wight: S(1)@dp\n"),
              "my.plan:2: param 'h.*.attn.qkv.wight' matches no parameter of the model (closest: 'h.10.attn.qkv.weight')");
    CHECK_ERR(check_text("mesh: dp=2\nparam wtf: S(0)@dp\n"), "my.plan:2: param 'wtf' matches no parameter of the model (closest: 'wte')");
    CHECK_ERR(check_text("mesh: dp=2\ninput tokenz: S(0)@dp\n"),
              "my.plan:2: input 'tokenz' matches no input of the model (closest: 'tokens')");
    /* an input pattern is not matched against parameters, nor the reverse */
    CHECK_ERR(check_text("mesh: dp=2\ninput wte: R\n"), "my.plan:2: input 'wte' matches no input of the model");
    /* rules added through the API name "api" */
    hp_plan p;
    CHECK_OK(hp_plan_parse(&p, "mesh: dp=2\n", "x"));
    CHECK_OK(hp_plan_add_param_str(&p, "lnf.wieght", "R"));
    CHECK_ERR(hp_plan_check_rules(&p, params, NP, inputs, NI),
              "api: param 'lnf.wieght' matches no parameter of the model (closest: 'lnf.weight')");
    CHECK_ERR(hp_plan_check_rules(&p, params, 0, inputs, NI), "api: param 'lnf.wieght' matches no parameter (the model has none)");
    hp_plan_free(&p);
    return hp_test_finish("test_plan_rules");
}
