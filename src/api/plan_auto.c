/* api/plan_auto: hp_plan_auto — the strategy search (autopar/search) with
 * each candidate turned into `hyperpar train`'s options (the base run's with
 * the candidate's mesh, form, micro-batches, schedule and remat), checked as
 * train checks them, its plan built as train builds it, compiled and priced
 * as `hyperpar simulate` prices a plan (api/simulate), and held to the memory
 * per rank. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/simulate.h"
#include "autopar/search.h"

_Static_assert((int)HP_AUTO_NO_PP == (int)HP_SEARCH_NO_PP && (int)HP_AUTO_NO_TP == (int)HP_SEARCH_NO_TP &&
                   (int)HP_AUTO_NO_EP == (int)HP_SEARCH_NO_EP && (int)HP_AUTO_NO_SHARD == (int)HP_SEARCH_NO_SHARD &&
                   (int)HP_AUTO_NO_REMAT == (int)HP_SEARCH_NO_REMAT && (int)HP_AUTO_NO_HSDP == (int)HP_SEARCH_NO_HSDP && (int)HP_AUTO_DTYPE == (int)HP_SEARCH_DTYPE,
               "hyperpar.h's HP_AUTO_NO_* are autopar/search.h's HP_SEARCH_NO_*");

typedef struct {
    const hp_train_options *base;
    const hp_auto_config *cfg;
    const hp_profile *prof;
    const hp_cluster *cl; /* NULL: this machine */
    double limit;         /* bytes per rank */
} auto_ctx;

/* The base options with candidate c's settings (every parallel setting the base had replaced). */
static void apply(hp_train_options *o, const hp_train_options *base, const hp_search_cand *c) {
    *o = *base;
    o->plan[0] = 0;
    o->batch = c->batch;
    o->grad_accum = c->micro > 1 ? c->micro : 0, o->micro_batches = 0;
    o->pp = c->pp, o->tp = c->tp, o->ep = c->ep;
    o->dp = c->form == HP_DPF_FSDP || c->form == HP_DPF_HSDP ? 1 : c->dp;
    o->fsdp = c->form == HP_DPF_FSDP ? c->dp : 0;
    o->zero = c->form == HP_DPF_ZERO1 ? 1 : c->form == HP_DPF_ZERO2 ? 2 : 0;
    o->hsdp[0] = 0;
    if (c->form == HP_DPF_HSDP) snprintf(o->hsdp, sizeof o->hsdp, "%d,%d", c->dp / c->shard, c->shard);
    if (c->pp > 1) snprintf(o->pp_schedule, sizeof o->pp_schedule, "%s", hp_pp_kind_name((hp_pp_kind)c->sched));
    snprintf(o->remat, sizeof o->remat, "%s", c->remat == 2 ? "full" : c->remat == 1 ? "selective" : "none");
    snprintf(o->grad_accum_comm, sizeof o->grad_accum_comm, "%s", c->comm_last ? "last" : "every");
    snprintf(o->dtype, sizeof o->dtype, "%s", c->bf16 ? "bf16" : "fp32");
}

static void refuse(hp_search_eval *e, hp_status st) {
    e->ok = 0;
    snprintf(e->why, sizeof e->why, "%s", hp_status_msg(st));
    hp_status_free(st);
}

static hp_status evaluate(hp_search_eval *e, const hp_search_cand *c, void *vctx) {
    auto_ctx *x = vctx;
    hp_train_options o;
    apply(&o, x->base, c);
    hp_status st = hp_train_options_check(&o);
    if (st && c->pp * c->dp * c->tp * c->ep > 4096 && strstr(hp_status_msg(st), "above the limit")) {
        hp_status_free(st); /* a simulated cluster may be larger than what one training run here may have */
        st = HP_OK;
    }
    if (st) {
        refuse(e, st);
        return HP_OK;
    }
    hp_shard_plan *plan = NULL;
    st = hp_train_options_plan(&plan, &o, "hyperpar plan --auto");
    hp_plan_report_config rc;
    if (!st) st = hp_plan_report_config_from_options(&rc, &o, plan);
    hp_sim_report r;
    memset(&r, 0, sizeof r);
    if (!st) {
        rc.processes = x->cfg->processes;
        st = hp_api_sim_predict(&r, &rc, &x->cfg->sim, x->prof, x->cl);
    }
    if (st) {
        refuse(e, st);
    } else {
        for (int s = 0; s < r.stages; s++)
            if (r.memory[s].total > e->memory_bytes) e->memory_bytes = r.memory[s].total;
        e->step_s = r.step_s;
        e->part[HP_SEARCH_COMPUTE] = r.compute_s;
        e->part[HP_SEARCH_EXPOSED_INTRA] = r.exposed_intra_s;
        e->part[HP_SEARCH_EXPOSED_INTER] = r.exposed_inter_s;
        e->part[HP_SEARCH_BUBBLE] = r.bubble_s;
        e->part[HP_SEARCH_OPTIMIZER] = r.optimizer_s;
        e->fits = e->memory_bytes <= x->limit;
        if (!isfinite(e->step_s) || e->step_s <= 0) {
            e->fits = 0;
            snprintf(e->why, sizeof e->why, "the cost model gave no finite step time (%g s)", e->step_s);
        } else if (!e->fits) {
            snprintf(e->why, sizeof e->why, "needs %.3g GB per rank, above %.3g GB", e->memory_bytes * 1e-9,
                     x->limit * 1e-9);
        }
        e->ok = e->fits;
    }
    free(r.memory);
    hp_shard_plan_free(plan);
    return HP_OK;
}

void hp_auto_report_free(hp_auto_report *r) {
    if (!r) return;
    free(r->rows);
    hp_shard_plan_free(r->best);
    free(r);
}

/* The memory a rank may use: given, the cluster's, or this machine's available memory shared by the ranks one
 * process hosts. */
static double limit_of(const hp_auto_config *c, const hp_cluster *cl) {
    if (c->memory_bytes > 0) return c->memory_bytes;
    if (cl) return cl->memory_GB * 1e9;
    double avail = 0;
    char src[64];
    hp_memory_available(&avail, src, sizeof src);
    return avail > 0 ? avail / hp_api_ranks_here(c->world, c->processes, c->sim.one_process) : 1e18;
}

static hp_status search(hp_auto_report *r, const hp_train_options *base, const hp_auto_config *c,
                        const hp_profile *prof, const hp_cluster *cl) {
    hp_model_config m;
    if (strcmp(base->model, "gpt2")) HP_TRY(hp_model_config_named(&m, base->model));
    else m = (hp_model_config){.layers = base->layers, .heads = base->heads};
    int micro = base->micro_batches > 0 ? base->micro_batches : base->grad_accum > 1 ? base->grad_accum : 1;
    hp_search_space sp = {.world = c->world, .layers = base->layers, .heads = base->heads,
                          .kv_heads = m.kv_heads, .experts = m.experts, .batch = base->batch * micro,
                          .max_micro = c->max_micro, .skip = c->skip, .bf16 = !strcmp(base->dtype, "bf16")};
    auto_ctx x = {.base = base, .cfg = c, .prof = prof, .cl = cl, .limit = limit_of(c, cl)};
    r->memory_limit = x.limit;
    hp_search_result res;
    HP_TRY(hp_search_run(&res, &sp, evaluate, &x));
    r->rows = calloc((size_t)(res.nrows ? res.nrows : 1), sizeof *r->rows);
    if (!r->rows) {
        hp_search_free(&res);
        return hp_errorf("hp_plan_auto: out of memory");
    }
    r->nrows = res.nrows, r->nok = res.nok, r->nmeshes = res.nmeshes, r->nskipped = res.nskipped;
    for (int i = 0; i < res.nrows; i++) {
        const hp_search_row *s = &res.rows[i];
        hp_auto_row *a = &r->rows[i];
        hp_search_cand_flags(a->flags, sizeof a->flags, &s->c, 1);
        a->pp = s->c.pp, a->dp = s->c.dp, a->ep = s->c.ep, a->tp = s->c.tp, a->micro = s->c.micro;
        a->remat = s->c.remat;
        snprintf(a->form, sizeof a->form, "%s", hp_dp_form_name(s->c.form));
        snprintf(a->sched, sizeof a->sched, "%s", s->c.pp > 1 ? hp_pp_kind_name((hp_pp_kind)s->c.sched) : "");
        a->ok = s->e.ok, a->fits = s->e.fits;
        a->step_s = s->e.step_s, a->memory_bytes = s->e.memory_bytes;
        a->tokens_per_s = s->e.step_s > 0 ? (double)sp.batch * base->seq / s->e.step_s : 0;
        a->compute_s = s->e.part[HP_SEARCH_COMPUTE];
        a->exposed_intra_s = s->e.part[HP_SEARCH_EXPOSED_INTRA];
        a->exposed_inter_s = s->e.part[HP_SEARCH_EXPOSED_INTER];
        a->bubble_s = s->e.part[HP_SEARCH_BUBBLE];
        a->optimizer_s = s->e.part[HP_SEARCH_OPTIMIZER];
        snprintf(a->why, sizeof a->why, "%s", s->e.why);
    }
    snprintf(r->method, sizeof r->method,
             "exhaustive: %d mesh factorisations of %d ranks (pp x dp x ep x tp) x data-parallel forms x pipeline "
             "schedules and micro-batches x remat; %d candidates evaluated (%d fit and priced), %d not evaluated "
             "(more remat or micro-batches than the first that fits: never faster in the model); the pipeline's "
             "stages at the min-max split of the blocks' FLOPs",
             res.nmeshes, c->world, res.nrows, res.nok, res.nskipped);
    hp_status st = HP_OK;
    if (res.nok) { /* the winner's plan and the flags train needs beside it */
        const hp_search_cand *w = &res.rows[0].c;
        hp_train_options o;
        apply(&o, base, w);
        st = hp_train_options_plan(&r->best, &o, "hyperpar plan --auto");
        hp_search_cand_flags(r->best_flags, sizeof r->best_flags, w, 0);
    }
    hp_search_free(&res);
    return st;
}

hp_status hp_plan_auto(hp_auto_report **out, const hp_train_options *base, const hp_auto_config *c) {
    *out = NULL;
    if (!base || !c) return hp_errorf("hp_plan_auto: needs the base options and a config");
    if (c->world < 1) return hp_errorf("hyperpar plan --auto: --world must be >= 1, got %d", c->world);
    if (!c->sim.profile) return hp_errorf("hyperpar plan --auto: no calibration profile given (--profile FILE)");
    hp_auto_report *r = calloc(1, sizeof *r);
    if (!r) return hp_errorf("hp_plan_auto: out of memory");
    hp_profile prof;
    hp_cluster cl;
    int have_cl = 0;
    int here = hp_api_ranks_here(c->world, c->processes, c->sim.one_process);
    hp_status st = hp_api_profile_pick(&prof, c->sim.profile, hp_api_rank_threads(base->threads, here));
    if (st) {
        free(r);
        return st;
    }
    if (c->sim.cluster) {
        st = hp_cluster_load(&cl, c->sim.cluster);
        have_cl = !st;
        if (!st && c->world > cl.world)
            st = hp_errorf("hyperpar plan --auto: --world %d is more than the cluster '%s''s %d ranks", c->world,
                           cl.name, cl.world);
    }
    if (!st) {
        snprintf(r->cluster, sizeof r->cluster, "%s", have_cl ? cl.name : "this-machine");
        snprintf(r->profile, sizeof r->profile, "%s", prof.machine);
        st = search(r, base, c, &prof, have_cl ? &cl : NULL);
    }
    if (have_cl) hp_cluster_free(&cl);
    hp_profile_free(&prof);
    if (st) {
        hp_auto_report_free(r);
        return st;
    }
    *out = r;
    return HP_OK;
}
