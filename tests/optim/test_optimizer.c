/* tests/optim/test_optimizer: the optimizer's settings (optim/optimizer):
 * the defaults pass the check, and each field out of its range is refused
 * naming it. The optimizer's steps are the optimizer phase's nodes
 * (optim/phase*.c), tested through the compiled step (tests/engine). */
#include <math.h>

#include "optim/optimizer.h"
#include "testutil.h"

int main(void) {
    hp_optim_config cfg;
    hp_optim_config_default(&cfg);
    CHECK_OK(hp_optim_config_check(&cfg));
    CHECK(cfg.kind == HP_OPT_ADAMW && cfg.lr == 3e-4f && cfg.beta2 == 0.999f && cfg.muon_lr == 0.02f);
    cfg.kind = HP_OPT_MUON;
    CHECK_OK(hp_optim_config_check(&cfg));
    hp_optim_config c = cfg;
    c.beta2 = 1.0f;
    CHECK_ERR(hp_optim_config_check(&c), "beta2: must be in [0, 1)");
    c = cfg, c.beta1 = -0.5f;
    CHECK_ERR(hp_optim_config_check(&c), "beta1");
    c = cfg, c.eps = 0.0f;
    CHECK_ERR(hp_optim_config_check(&c), "eps: must be a positive number");
    c = cfg, c.lr = NAN;
    CHECK_ERR(hp_optim_config_check(&c), "lr: must be a number >= 0");
    c = cfg, c.weight_decay = -1.0f;
    CHECK_ERR(hp_optim_config_check(&c), "weight_decay");
    c = cfg, c.muon_beta = -0.1f;
    CHECK_ERR(hp_optim_config_check(&c), "muon_beta");
    c = cfg, c.muon_weight_decay = INFINITY;
    CHECK_ERR(hp_optim_config_check(&c), "muon_weight_decay");
    c = cfg, c.muon_batch_floats = -1;
    CHECK_ERR(hp_optim_config_check(&c), "muon_batch_floats");
    c = cfg, c.ns.steps = 99;
    CHECK_ERR(hp_optim_config_check(&c), "ns.steps");
    c = cfg, c.muon_beta = 2.0f, c.kind = HP_OPT_ADAMW; /* Muon's fields are not AdamW's concern */
    CHECK_OK(hp_optim_config_check(&c));
    c = cfg, c.kind = (hp_opt_kind)7;
    CHECK_ERR(hp_optim_config_check(&c), "unknown optimizer kind 7");
    return hp_test_finish("test_optimizer");
}
