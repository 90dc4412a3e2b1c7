/* keep_bytes=auto (api/plan_fit): FSDP 4 over 2 emulated supernodes gathers
 * its units into transient slots, and the memory budget settles how many
 * bytes of units are kept from the forward for the backward (no second
 * gather): every unit when all fit, none when nothing more fits, and in
 * between the most whose programs fit — the need at the bytes chosen is
 * within the budget, the need with every unit kept is not, and some units
 * but not all are kept. The plan's text says "keep_bytes=auto" and parses
 * back to it; a plan without FSDP across supernodes settles nothing. */
#include <string.h>

#include "api/plan_report.h"
#include "engine/fixture.h"
#include "models/gpt2_plan.h"

/* Units rank 0 keeps with keep bytes k, and its unit count. */
static int kept_units(const gpt2_fixture *f, const hp_plan *plan, const hp_compile_opts *co, int64_t k, int *nunits) {
    hp_compile_opts c = *co;
    c.fsdp_keep_auto = k;
    hp_compiled cc;
    *nunits = 0;
    hp_status st = hp_compile(&cc, f->g, plan, 0, &c);
    if (st) {
        CHECK_OK(st);
        return -1;
    }
    int n = 0;
    for (int u = 0; u < cc.fsdp.nunits; u++) n += cc.fsdp.units[u].keep;
    *nunits = cc.fsdp.nunits;
    hp_compiled_free(&cc);
    return n;
}

int main(void) {
    gpt2_fixture f;
    fixture_build(&f, (hp_gpt2_config){.L = 4, .NH = 4, .C = 64, .V = 256, .maxT = 32}, 8, 16, -1);
    hp_plan plan;
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 4, 1));
    CHECK_OK(hp_plan_set_fsdp(&plan, "shard=dp keep_bytes=auto", "test"));
    CHECK(plan.fsdp.keep_bytes == HP_FSDP_KEEP_AUTO);
    char text[4096], text2[4096];
    hp_plan_str(text, sizeof text, &plan);
    CHECK(strstr(text, " keep_bytes=auto\n") != NULL);
    hp_plan back;
    CHECK_OK(hp_plan_parse(&back, text, "round"));
    hp_plan_str(text2, sizeof text2, &back);
    CHECK(!strcmp(text, text2) && back.fsdp.keep_bytes == HP_FSDP_KEEP_AUTO);
    hp_plan_free(&back);
    hp_status bad = hp_plan_parse(&back, "mesh: dp=2\nfsdp: shard=dp keep_bytes=some\n", "k.plan");
    CHECK(bad && strstr(hp_status_msg(bad), "k.plan:2: fsdp keep_bytes=some: expected a byte count >= 1") &&
          strstr(hp_status_msg(bad), "or auto"));
    hp_status_free(bad);

    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_compile_opts co = {.train = 1, .optim = &oc, .max_norm = 1.0f, .schedule = {.overlap = 1},
                          .supernode_ranks = 2};
    double need0 = 0, needall = 0, need = 0;
    int transient = 0, nunits = 0;
    co.fsdp_keep_auto = 0;
    CHECK_OK(hp_api_hosted_need(&need0, &transient, f.g, &plan, &co, 0, 4, 1));
    CHECK(transient);
    co.fsdp_keep_auto = (int64_t)1 << 30;
    CHECK_OK(hp_api_hosted_need(&needall, &transient, f.g, &plan, &co, 0, 4, 1));
    CHECK(needall > need0);
    CHECK(kept_units(&f, &plan, &co, 0, &nunits) == 0 && nunits >= 4);
    CHECK(kept_units(&f, &plan, &co, (int64_t)1 << 30, &nunits) == nunits);
    printf("need: %.0f bytes keeping none, %.0f keeping all %d units\n", need0, needall, nunits);

    int64_t k = -1, params = 0;
    for (int v = 0; v < f.g->nvals; v++)
        if (f.g->vals[v].kind == HP_V_PARAM) params += hp_shape_numel(&f.g->vals[v].shape) * 4;
    /* everything fits: every parameter's bytes (all units kept) */
    CHECK_OK(hp_api_fsdp_keep_auto(&k, f.g, &plan, &co, 0, 4, 1, needall * 1.01));
    CHECK(k == params);
    /* nothing more fits: none */
    CHECK_OK(hp_api_fsdp_keep_auto(&k, f.g, &plan, &co, 0, 4, 1, need0 - 1));
    CHECK(k == 0);
    CHECK_OK(hp_api_fsdp_keep_auto(&k, f.g, &plan, &co, 0, 4, 1, 0));
    CHECK(k == 0);
    /* half-way: the most that fits, some units but not all */
    double mid = (need0 + needall) / 2;
    CHECK_OK(hp_api_fsdp_keep_auto(&k, f.g, &plan, &co, 0, 4, 1, mid));
    co.fsdp_keep_auto = k;
    CHECK_OK(hp_api_hosted_need(&need, &transient, f.g, &plan, &co, 0, 4, 1));
    int nk = kept_units(&f, &plan, &co, k, &nunits);
    printf("budget %.0f: keep %lld bytes, %d of %d units, need %.0f\n", mid, (long long)k, nk, nunits, need);
    CHECK(k > 0 && k < params && need <= mid && nk > 0 && nk < nunits);
    /* one supernode: nothing is gathered twice, nothing to settle */
    co.fsdp_keep_auto = 0;
    co.supernode_ranks = 0;
    CHECK_OK(hp_api_fsdp_keep_auto(&k, f.g, &plan, &co, 0, 4, 1, needall * 4));
    CHECK(k == 0);
    hp_plan_free(&plan);
    fixture_free(&f);
    return hp_test_finish("test_fsdp_keep_auto");
}
