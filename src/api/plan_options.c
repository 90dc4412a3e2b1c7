/* api/plan_options: the options of `hyperpar train` that change the program,
 * as a plan report config (what `hyperpar plan`, `simulate` and the search
 * compile). */
#include <string.h>

#include "api/api.h"

hp_status hp_plan_report_config_from_options(hp_plan_report_config *c, const hp_train_options *o,
                                             const hp_shard_plan *plan) {
    hp_plan_report_config_default(c);
    c->model = (hp_model_config){.layers = o->layers, .heads = o->heads, .channels = o->channels, .vocab = o->vocab, .max_seq = o->max_seq};
    hp_model_config preset; /* a named model: the rest of its shape (kv heads, MLP width, RoPE base, experts) */
    if (strcmp(o->model, "gpt2") && !hp_model_config_named(&preset, o->model)) {
        preset.layers = o->layers, preset.heads = o->heads, preset.channels = o->channels, preset.vocab = o->vocab;
        preset.max_seq = o->max_seq;
        if (o->capacity_factor > 0) preset.capacity_factor = o->capacity_factor;
        c->model = preset;
    }
    c->init_llmc = o->init[0] ? o->init : NULL;
    HP_TRY(hp_train_micro_batch(&c->batch, &c->grad_accum, o));
    c->grad_accum_comm_last = !strcmp(o->grad_accum_comm, "last");
    c->deterministic = o->deterministic || o->det_slices;
    c->pp_schedule = o->pp_schedule, c->pp_split = o->pp_split, c->pp_chunks = o->pp_chunks;
    c->model_kind = hp_model_family_name(o->model);
    c->remat = o->remat, c->remat_save = o->remat_save;
    c->loss_chunk = o->loss_chunk;
    c->moe_chunks = o->moe_chunks;
    c->seq = o->seq;
    c->plan = plan;
    c->optimizer = o->optimizer;
    c->muon_params = o->muon_params[0] ? o->muon_params : NULL;
    c->adamw_params = o->adamw_params[0] ? o->adamw_params : NULL;
    c->muon_balance = o->muon_balance > 0 ? o->muon_balance : -1.0f;
    c->grad_clip = o->grad_clip;
    c->overlap = strcmp(o->overlap, "off") != 0;
    c->ep_overlap = !strcmp(o->ep_overlap, "always") ? 1 : !strcmp(o->ep_overlap, "off") ? -1 : 0;
    c->bf16 = !strcmp(o->dtype, "bf16");
    c->bf16_params_all = !strcmp(o->bf16_params, "all");
    c->dp_reduce_bf16 = !strcmp(o->dp_reduce, "bf16");
    c->threads = o->threads;
    return HP_OK;
}

