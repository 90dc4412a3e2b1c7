/* api/plan: hp_shard_plan, a sharding plan (layout/plan) read from a file or
 * text, or GPT-2's own (models/gpt2_plan), with its mesh and file text. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "io/plan_file.h"
#include "models/gpt2_plan.h"

/* Wraps a loaded plan p (taken over) into *out with its mesh and text. */
static hp_status wrap(hp_shard_plan **out, hp_plan *p) {
    hp_shard_plan *sp = calloc(1, sizeof *sp);
    size_t n = hp_plan_str_size(p);
    char *text = malloc(n);
    if (!sp || !text) {
        free(sp), free(text);
        hp_plan_free(p);
        return hp_errorf("hyperpar: out of memory for a plan");
    }
    sp->plan = *p;
    sp->text = hp_plan_str(text, n, p);
    hp_mesh_str(sp->mesh, sizeof sp->mesh, &p->mesh);
    *out = sp;
    return HP_OK;
}

hp_status hp_shard_plan_load(hp_shard_plan **out, const char *path) {
    *out = NULL;
    if (!path) return hp_errorf("hp_shard_plan_load: path is NULL");
    hp_plan p;
    HP_TRY(hp_plan_load(&p, path));
    return wrap(out, &p);
}

hp_status hp_shard_plan_parse(hp_shard_plan **out, const char *text, const char *name) {
    *out = NULL;
    if (!text) return hp_errorf("hp_shard_plan_parse: text is NULL");
    hp_plan p;
    HP_TRY(hp_plan_parse(&p, text, name ? name : "plan"));
    return wrap(out, &p);
}

hp_status hp_shard_plan_gpt2(hp_shard_plan **out, int dp, int tp) {
    *out = NULL;
    if (dp < 1 || tp < 1) return hp_errorf("hp_shard_plan_gpt2: dp and tp must be >= 1, got dp=%d tp=%d", dp, tp);
    hp_plan p;
    HP_TRY(hp_plan_gpt2_dp_tp(&p, dp, tp));
    return wrap(out, &p);
}

hp_status hp_shard_plan_gpt2_replicated(hp_shard_plan **out, int replicas, int dp, int tp) {
    *out = NULL;
    hp_plan p;
    HP_TRY(hp_plan_gpt2(&p, replicas, dp, tp));
    return wrap(out, &p);
}

hp_status hp_shard_plan_gpt2_pipelined(hp_shard_plan **out, int pp, int replicas, int dp, int tp) {
    *out = NULL;
    hp_plan p;
    HP_TRY(hp_plan_gpt2_pp(&p, pp, replicas, dp, tp));
    return wrap(out, &p);
}

hp_status hp_shard_plan_named(hp_shard_plan **out, const char *model, int pp, int replicas, int dp, int tp) {
    return hp_shard_plan_named_ep(out, model, pp, replicas, dp, 1, tp);
}

/* Drops p's parameter rules whose pattern contains `part` (a family's rules for parts the model lacks). */
static void drop_rules(hp_plan *p, const char *part) {
    int w = 0;
    for (int r = 0; r < p->nparams; r++) {
        if (strstr(p->params[r].pattern, part)) {
            free(p->params[r].pattern), free(p->params[r].where);
            continue;
        }
        p->params[w++] = p->params[r];
    }
    p->nparams = w;
}

hp_status hp_shard_plan_named_ep(hp_shard_plan **out, const char *model, int pp, int replicas, int dp, int ep,
                                 int tp) {
    *out = NULL;
    const char *family = hp_model_family_name(model ? model : "gpt2");
    if (!family) return hp_errorf("hp_shard_plan_named: unknown model '%s'", model);
    hp_plan p;
    HP_TRY(hp_plan_model_ep(&p, family, pp, replicas, dp, ep, tp));
    hp_model_config mc;
    hp_status st = model && !strcmp(family, "moe") ? hp_model_config_named(&mc, model) : HP_OK;
    if (st) {
        hp_plan_free(&p);
        return st;
    }
    if (model && !strcmp(family, "moe") && mc.shared_experts == 0) drop_rules(&p, ".moe.shared."); /* mixtral-tiny */
    return wrap(out, &p);
}

/* The plan's text again after its FSDP settings changed. */
static hp_status retext(hp_shard_plan *p) {
    size_t n = hp_plan_str_size(&p->plan);
    char *text = malloc(n);
    if (!text) return hp_errorf("hyperpar: out of memory for a plan");
    free(p->text);
    p->text = hp_plan_str(text, n, &p->plan);
    return HP_OK;
}

hp_status hp_shard_plan_set_fsdp(hp_shard_plan *p, const char *settings) {
    if (!settings) return hp_errorf("hp_shard_plan_set_fsdp: settings is NULL");
    HP_TRY(hp_plan_set_fsdp(&p->plan, settings, "fsdp"));
    return retext(p);
}

void hp_fsdp_settings_default(hp_fsdp_settings *s) {
    *s = (hp_fsdp_settings){.shard = "dp", .level = 3, .prefetch = 1, .reshard = 1};
}

hp_status hp_shard_plan_set_fsdp_settings(hp_shard_plan *p, const hp_fsdp_settings *s) {
    if (!s) return hp_errorf("hp_shard_plan_set_fsdp_settings: settings is NULL");
    hp_fsdp_request r;
    hp_fsdp_request_default(&r);
    r.shard = s->shard, r.replicate = s->replicate, r.level = s->level, r.prefetch = s->prefetch;
    r.reshard_after_forward = s->reshard, r.reduce_bf16 = s->reduce_bf16, r.gather_bf16 = s->gather_bf16;
    r.style = s->style_fsdp2 ? HP_FSDP_STYLE_FSDP2 : HP_FSDP_STYLE_HYPERPAR;
    r.unit_bytes = s->unit_bytes;
    r.keep_bytes = s->keep_bytes;
    HP_TRY(hp_plan_set_fsdp_request(&p->plan, &r, "fsdp"));
    return retext(p);
}

void hp_shard_plan_free(hp_shard_plan *p) {
    if (!p) return;
    hp_plan_free(&p->plan);
    free(p->text);
    free(p);
}

int hp_shard_plan_ranks(const hp_shard_plan *p) { return hp_mesh_size(&p->plan.mesh); }
const char *hp_shard_plan_mesh(const hp_shard_plan *p) { return p->mesh; }
const char *hp_shard_plan_text(const hp_shard_plan *p) { return p->text; }
