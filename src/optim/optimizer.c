/* optim/optimizer: the optimizer's settings (see the header). */
#include "optim/optimizer.h"

#include <math.h>
#include <string.h>

void hp_optim_config_default(hp_optim_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = HP_OPT_ADAMW;
    cfg->lr = 3e-4f;
    cfg->beta1 = 0.9f;
    cfg->beta2 = 0.999f;
    cfg->eps = 1e-8f;
    cfg->weight_decay = 0.0f;
    cfg->decay_vectors = 1;
    cfg->muon_lr = 0.02f;
    cfg->muon_balance = 1.10f;
    cfg->muon_beta = 0.95f;
    cfg->muon_weight_decay = 0.0f;
    cfg->muon_momentum = HP_MUON_EMA;
    cfg->muon_nesterov = 1;
    cfg->muon_scale = HP_MUON_SCALE_KELLER;
    hp_status st = hp_ns_config_named(&cfg->ns, "quintic");
    HP_ASSERT(st == HP_OK);
}

/* ---- validation ---- */

static int finite_in(float x, float lo, float hi_excl) { return isfinite(x) && x >= lo && x < hi_excl; }

hp_status hp_optim_config_check(const hp_optim_config *c) {
    if (c->kind != HP_OPT_ADAMW && c->kind != HP_OPT_MUON)
        return hp_errorf("optimizer: unknown optimizer kind %d", (int)c->kind);
    if (!finite_in(c->lr, 0.0f, INFINITY))
        return hp_errorf("lr: must be a number >= 0, got %g", (double)c->lr);
    if (!finite_in(c->beta1, 0.0f, 1.0f))
        return hp_errorf("beta1: must be in [0, 1), got %g", (double)c->beta1);
    if (!finite_in(c->beta2, 0.0f, 1.0f))
        return hp_errorf("beta2: must be in [0, 1), got %g", (double)c->beta2);
    if (!(c->eps > 0.0f) || !isfinite(c->eps))
        return hp_errorf("eps: must be a positive number, got %g", (double)c->eps);
    if (!finite_in(c->weight_decay, 0.0f, INFINITY))
        return hp_errorf("weight_decay: must be a number >= 0, got %g", (double)c->weight_decay);
    if (c->kind == HP_OPT_MUON) {
        if (!finite_in(c->muon_lr, 0.0f, INFINITY))
            return hp_errorf("muon_lr: must be a number >= 0, got %g", (double)c->muon_lr);
        if (!finite_in(c->muon_beta, 0.0f, 1.0f))
            return hp_errorf("muon_beta: must be in [0, 1), got %g", (double)c->muon_beta);
        if (!finite_in(c->muon_weight_decay, 0.0f, INFINITY))
            return hp_errorf("muon_weight_decay: must be a number >= 0, got %g",
                             (double)c->muon_weight_decay);
        if (c->muon_momentum != HP_MUON_EMA && c->muon_momentum != HP_MUON_SUM)
            return hp_errorf("muon_momentum: unknown form %d", (int)c->muon_momentum);
        if (!(c->muon_balance == 0.0f || (c->muon_balance >= 1.0f && c->muon_balance < INFINITY)))
            return hp_errorf("muon_balance: must be 0 (never split) or a number >= 1, got %g", (double)c->muon_balance);
        if (c->muon_waves < 0 || c->muon_waves > 64)
            return hp_errorf("muon_waves: must be in 0..64 (0: the default), got %d", c->muon_waves);
        if (c->muon_batch_floats < 0)
            return hp_errorf("muon_batch_floats: must be >= 0, got %ld", c->muon_batch_floats);
        if (c->muon_scale != HP_MUON_SCALE_KELLER && c->muon_scale != HP_MUON_SCALE_MOONLIGHT)
            return hp_errorf("muon_scale: unknown scale %d", (int)c->muon_scale);
        if (c->muon_dist < 0 || c->muon_dist > 4) return hp_errorf("muon_dist: unknown strategy %d", c->muon_dist);
        HP_TRY(hp_ns_config_check(&c->ns));
    }
    return HP_OK;
}
