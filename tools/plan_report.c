/* tools/plan_report: builds the report of `hyperpar plan` through the public
 * API — checks the options, loads the plan (--plan FILE, else GPT-2's
 * --dp x --tp), checks it against --world and --rank, and turns the options
 * into an hp_plan_report_config for hp_plan_report_create and
 * hp_plan_fit_check (whether it fits in --memory or the memory available) —
 * and the formatting the text and JSON writers share. */
#include <stdio.h>
#include <string.h>

#include "plan_report.h"

char *hp_planner_bytes_str(char *buf, size_t n, double b) {
    const char *unit[] = {"B", "KB", "MB", "GB", "TB"};
    int u = 0;
    while (b >= 1000 && u < 4) b /= 1000, u++;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

const char *hp_planner_fit_source(const hp_plan_fit *f) { return strcmp(f->source, "given") ? f->source : "--memory"; }

static hp_status check_opts(const plan_opts *po) {
    const hp_train_options *o = &po->o;
    if (o->dp < 1 || o->tp < 1) return hp_errorf("hyperpar plan: --dp and --tp must be >= 1");
    if (o->plan[0] && (o->dp > 1 || o->tp > 1)) return hp_errorf("hyperpar plan: give --plan or --dp/--tp, not both");
    if (o->plan[0] && o->ep > 1) return hp_errorf("hyperpar plan: give --plan or --ep, not both");
    if (o->batch < 1 || o->seq < 1) return hp_errorf("hyperpar plan: --batch and --seq must be >= 1");
    if (o->threads < 1) return hp_errorf("hyperpar plan: --threads must be >= 1, got %d", o->threads);
    if (po->world < 0) return hp_errorf("hyperpar plan: --world must be >= 1 (or 0: the mesh's size), got %d", po->world);
    if (strcmp(o->dp_reduce, "fp32") && strcmp(o->dp_reduce, "bf16"))
        return hp_errorf("hyperpar plan: --dp-reduce must be fp32 or bf16, got '%s'", o->dp_reduce);
    if (!strcmp(o->dp_reduce, "bf16") && (o->fsdp > 1 || o->hsdp[0] || o->zero))
        return hp_errorf("hyperpar plan: --dp-reduce bf16: FSDP and ZeRO reduce the gradients themselves (use "
                         "--fsdp-reduce bf16)");
    return HP_OK;
}

static hp_status check_mesh(plan_opts *po, const hp_shard_plan *plan) {
    int n = hp_shard_plan_ranks(plan);
    const char *mesh = hp_shard_plan_mesh(plan);
    if (po->world == 0) po->world = n;
    if (po->world != n)
        return hp_errorf("hyperpar plan: mesh '%s' has %d ranks but the world has %d", mesh, n, po->world);
    if (po->processes < 0 || (po->processes > 1 && n % po->processes))
        return hp_errorf("hyperpar plan: --processes %d: the mesh '%s''s %d ranks cannot be spread evenly over them",
                         po->processes, mesh, n);
    if (po->rank < 0 || po->rank >= n)
        return hp_errorf("hyperpar plan: --rank %d is not a rank of mesh '%s' (0..%d)", po->rank, mesh, n - 1);
    return HP_OK;
}

hp_status hp_planner_shape(planner *p) {
    plan_opts *po = &p->po;
    const hp_train_options *o = &po->o;
    if (o->init[0]) {
        hp_model_config m;
        HP_TRY(hp_model_config_llmc(&m, o->init));
        HP_TRY(hp_train_shape_resolve(&po->o, &m, o->init, "plan"));
    } else if (strcmp(o->model, "gpt2")) { /* a named model's preset sets the shape */
        hp_model_config m;
        HP_TRY(hp_model_config_named(&m, o->model));
        char what[48];
        snprintf(what, sizeof what, "--model %s", o->model);
        HP_TRY(hp_train_shape_resolve(&po->o, &m, what, "plan"));
    } else {
        HP_TRY(hp_train_shape_resolve(&po->o, NULL, NULL, "plan"));
    }
    return check_opts(po);
}

hp_status hp_planner_config(planner *p, hp_plan_report_config *c) {
    plan_opts *po = &p->po;
    const hp_train_options *o = &po->o;
    HP_TRY(hp_planner_shape(p));
    HP_TRY(hp_train_options_plan(&p->plan, o, "hyperpar plan"));
    HP_TRY(check_mesh(po, p->plan));
    HP_TRY(hp_plan_report_config_from_options(c, &po->o, p->plan));
    c->world = po->world, c->rank = po->rank, c->processes = po->processes;
    c->all_ranks = po->all_ranks, c->all_values = po->all;
    return HP_OK;
}

hp_status hp_planner_build(planner *p) {
    const hp_train_options *o = &p->po.o;
    hp_plan_report_config c;
    HP_TRY(hp_planner_config(p, &c));
    HP_TRY(hp_plan_report_create(&p->rep, &c));
    if (o->memory < 0) return HP_OK; /* --memory < 0: no check */
    if (p->rep->muon.refused) c.optimizer = "adamw"; /* the report's programs: AdamW's (its muon section says why) */
    p->have_fit = 1;
    return hp_plan_fit_check(&p->fit, &c, (double)o->memory * 1e9);
}

void hp_planner_destroy(planner *p) {
    hp_plan_report_free(p->rep);
    hp_shard_plan_free(p->plan);
}
