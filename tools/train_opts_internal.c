/* tools/train_opts_internal: the run's settings as the library's internal
 * types (optimizer config, data streams, sharding plan, schedule options) —
 * what tools/plan_report used before the port to the public API; kept until
 * the plan command is ported, then to be removed. */
#include "train_opts_internal.h"

#include <stdio.h>
#include <string.h>

#include "models/gpt2_plan.h"

hp_status hp_train_optim_config(hp_optim_config *c, const train_opts *o) {
    hp_optim_config_default(c);
    HP_TRY(hp_opt_kind_parse(&c->kind, o->optimizer));
    c->lr = o->lr, c->beta1 = o->beta1, c->beta2 = o->beta2, c->eps = o->eps, c->weight_decay = o->weight_decay;
    c->muon_lr = o->muon_lr, c->muon_beta = o->muon_beta, c->muon_weight_decay = o->muon_weight_decay;
    HP_TRY(hp_muon_momentum_parse(&c->muon_momentum, o->muon_momentum));
    HP_TRY(hp_muon_scale_parse(&c->muon_scale, o->muon_scale));
    HP_TRY(hp_ns_config_named(&c->ns, o->ns));
    c->muon_params = o->muon_params[0] ? o->muon_params : NULL;
    c->adamw_params = o->adamw_params[0] ? o->adamw_params : NULL;
    return HP_OK;
}

hp_status hp_train_open_data(hp_data **d, const train_opts *o, const hp_gpt2_config *m, int val) {
    hp_data_config dc = {0};
    int own_val_file = o->val_data[0] != 0;
    dc.path = val && own_val_file ? o->val_data : o->data;
    dc.split = own_val_file ? HP_DATA_ALL : val ? HP_DATA_VAL : HP_DATA_TRAIN;
    if (!own_val_file && o->val_fraction <= 0) dc.split = HP_DATA_ALL; /* validate on the training data */
    dc.kind = HP_DATA_AUTO;
    dc.vocab = m->V;
    dc.B = o->batch, dc.T = o->seq;
    dc.seed = val ? 0 : o->seed;
    dc.order = (!val && o->shuffle) ? HP_DATA_SHUFFLE : HP_DATA_SEQUENTIAL;
    dc.val_fraction = o->val_fraction;
    dc.rank = 0, dc.world = 1;
    return hp_data_open(d, &dc);
}

hp_status hp_train_plan(hp_plan *out, const train_opts *o) {
    if (o->plan[0]) return hp_plan_load(out, o->plan);
    return hp_plan_gpt2_dp_tp(out, o->dp, o->tp);
}

hp_schedule_opts hp_train_schedule(const train_opts *o) {
    hp_schedule_opts s = {.overlap = strcmp(o->overlap, "off") != 0, .max_inflight = 4};
    return s;
}
