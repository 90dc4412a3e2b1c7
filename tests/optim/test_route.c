/* Routing: hidden matrices to Muon by default, everything to AdamW with
 * "adamw", glob overrides both ways, and the errors (non-matrix for Muon,
 * a name in both lists, a pattern that matches nothing). */
#include "optim/route.h"
#include "testutil.h"

static float buf[8];

static hp_opt_param P(const char *name, hp_shape s, int hidden) {
    return (hp_opt_param){name, buf, buf, s, hidden};
}

int main(void) {
    hp_opt_param ps[7] = {
        P("wte", hp_shape2(64, 16), 0),
        P("h.0.attn.qkv.weight", hp_shape2(48, 16), 1),
        P("h.0.attn.qkv.bias", hp_shape1(48), 0),
        P("h.0.mlp.fc.weight", hp_shape2(64, 16), 1),
        P("h.1.mlp.fc.weight", hp_shape2(64, 16), 1),
        P("h.0.ln1.weight", hp_shape1(16), 0),
        P("h.0.moe.experts", hp_shape3(4, 8, 16), 1),
    };
    hp_opt_kind k[7];
    const int A = HP_OPT_ADAMW, M = HP_OPT_MUON;

    /* adamw: everything, overrides ignored */
    CHECK_OK(hp_optim_route(k, HP_OPT_ADAMW, "wte", "h.*", ps, 7));
    for (int i = 0; i < 7; i++) CHECK(k[i] == HP_OPT_ADAMW);

    /* muon, no overrides: hidden matrices (2-D and the 3-D expert stack) */
    const int def[7] = {A, M, A, M, M, A, M};
    CHECK_OK(hp_optim_route(k, HP_OPT_MUON, NULL, "", ps, 7));
    for (int i = 0; i < 7; i++) CHECK((int)k[i] == def[i]);

    /* overrides: the embedding to Muon, layer 0's weights back to AdamW */
    const int ov[7] = {M, A, A, A, M, A, A};
    CHECK_OK(hp_optim_route(k, HP_OPT_MUON, " wte , ,", "h.0.*", ps, 7));
    for (int i = 0; i < 7; i++) CHECK((int)k[i] == ov[i]);

    /* several patterns in one list */
    const int ov2[7] = {A, M, A, A, A, A, M};
    CHECK_OK(hp_optim_route(k, HP_OPT_MUON, NULL, "h.?.mlp.*,wte", ps, 7));
    for (int i = 0; i < 7; i++) CHECK((int)k[i] == ov2[i]);

    /* the default rule: embeddings and the LM head (tied or untied, `output.weight`) are not hidden */
    hp_shape m2 = hp_shape2(64, 16);
    CHECK(!hp_optim_hidden_matrix("wte", &m2) && !hp_optim_hidden_matrix("wpe", &m2));
    CHECK(!hp_optim_hidden_matrix("output.weight", &m2) && !hp_optim_hidden_matrix("lm_head.weight", &m2));
    CHECK(hp_optim_hidden_matrix("h.0.attn.proj.weight", &m2) && hp_optim_hidden_matrix("h.0.moe.router.weight", &m2));
    CHECK(!hp_optim_hidden_matrix("h.0.mlp.fc.bias", &m2));

    /* errors name the field and the parameter */
    CHECK_ERR(hp_optim_route(k, HP_OPT_MUON, "h.0.attn.*", NULL, ps, 7),
              "muon_params: parameter 'h.0.attn.qkv.bias' has shape [48], but Muon needs a matrix [rows, cols]");
    CHECK_ERR(hp_optim_route(k, HP_OPT_MUON, "*.fc.weight", "h.1.*", ps, 7),
              "parameter 'h.1.mlp.fc.weight' matches both lists");
    CHECK_ERR(hp_optim_route(k, HP_OPT_MUON, "h.0.atn.*", NULL, ps, 7),
              "muon_params: pattern 'h.0.atn.*' matches no parameter");
    CHECK_ERR(hp_optim_route(k, HP_OPT_MUON, NULL, "lm_head", ps, 7),
              "adamw_params: pattern 'lm_head' matches no parameter");
    /* a builder bug: hidden_matrix on a vector */
    ps[5].hidden_matrix = 1;
    CHECK_ERR(hp_optim_route(k, HP_OPT_MUON, NULL, NULL, ps, 7),
              "parameter 'h.0.ln1.weight': hidden_matrix is set");
    /* ...unless it is routed to AdamW explicitly */
    CHECK_OK(hp_optim_route(k, HP_OPT_MUON, NULL, "*.ln1.*", ps, 7));
    CHECK(k[5] == HP_OPT_ADAMW);

    hp_opt_kind kind;
    CHECK_OK(hp_opt_kind_parse(&kind, "muon"));
    CHECK(kind == HP_OPT_MUON);
    CHECK_ERR(hp_opt_kind_parse(&kind, "sgd"), "optimizer: unknown optimizer 'sgd'");
    CHECK(!strcmp(hp_opt_kind_name(HP_OPT_ADAMW), "adamw"));
    return hp_test_finish("test_route");
}
