/* api/train: hp_train, the public trainer — converts hp_train_config to the
 * library's one trainer (runtime/trainer), opens the data streams, the
 * checkpoint to resume and the initial weights, and turns the trainer's
 * events into hp_event. */
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "api/ckpt_state.h"
#include "api/plan_report.h"
#include "api/run_dir.h"
#include "api/train.h"
#include "ops/ops.h"
#include "parallel/muon_plan.h"
#include "comm/launch.h"
#include "core/timing.h"
#include "io/fsutil.h"
#include "io/json.h"
#include "io/llmc.h"
#include "models/build.h"
#include "optim/route.h"
#include "optim/schedule.h"
#include "runtime/dist.h"
#include "runtime/trainer.h"

hp_status hp_optimizer_parse(hp_optimizer_type *out, const char *name) {
    hp_opt_kind k;
    HP_TRY(hp_opt_kind_parse(&k, name ? name : "(null)"));
    *out = k == HP_OPT_MUON ? HP_OPTIMIZER_MUON : HP_OPTIMIZER_ADAMW;
    return HP_OK;
}

hp_status hp_schedule_parse(hp_schedule_type *out, const char *name) {
    hp_lr_schedule s = {0};
    HP_TRY(hp_lr_kind_parse(&s, name ? name : "(null)"));
    *out = s.kind == HP_LR_LINEAR ? HP_SCHEDULE_LINEAR : s.kind == HP_LR_CONSTANT ? HP_SCHEDULE_CONSTANT : HP_SCHEDULE_COSINE;
    return HP_OK;
}

hp_status hp_data_kind_parse(hp_train_data_kind *out, const char *name) {
    static const char *const names[] = {"auto", "tokens", "text"};
    for (int i = 0; i < 3; i++)
        if (name && !strcmp(name, names[i])) {
            *out = (hp_train_data_kind)i;
            return HP_OK;
        }
    return hp_errorf("unknown data kind '%s' (expected auto, tokens or text)", name ? name : "(null)");
}

int hp_model_padded_vocab(const hp_model *m) { return m->cfg.Vp; }

static const char *opt_name(hp_optimizer_type k) { return k == HP_OPTIMIZER_MUON ? "muon" : "adamw"; }
const char *hp_api_train_optimizer(const hp_train *t) { return opt_name(t->cfg.optimizer); }
static int set(const char *s) { return s && s[0]; }

static int pow2(long n) { return n >= 1 && (n & (n - 1)) == 0; }

hp_status hp_deterministic_split(int *micro_batch, int *grad_accum, int batch, int ranks, int slices) {
    *micro_batch = *grad_accum = 0;
    if (!pow2(slices) || slices > 4096)
        return hp_errorf("deterministic mode: the slice count must be a power of two in 1..4096, got %d", slices);
    if (ranks < 1 || slices % ranks)
        return hp_errorf("deterministic mode: %d data-parallel ranks do not divide %d slices (use a power of two "
                         "up to %d ranks, or more slices)", ranks, slices, slices);
    if (batch < 1 || batch % slices)
        return hp_errorf("deterministic mode: a batch of %d sequences does not split into %d equal slices", batch,
                         slices);
    *micro_batch = batch / slices * ranks;
    *grad_accum = slices / ranks;
    return HP_OK;
}

/* The deterministic mode's limits: a tree over the ranks needs pure data
 * parallelism over a power-of-two rank count. */
static hp_status check_deterministic(const hp_train_config *c) {
#define BAD(...) return hp_errorf("hp_train_config: deterministic: " __VA_ARGS__)
    if (c->grad_accum > 1 && !pow2(c->grad_accum)) BAD("grad_accum %d is not a power of two", c->grad_accum);
    if (c->grad_accum > 1 && c->grad_accum_comm_last)
        BAD("the slices are reduced every micro-batch (not with grad_accum_comm_last)");
    if (c->dp_reduce_bf16)
        BAD("dp_reduce_bf16 rounds each rank's partial sum to bf16, and where that happens depends on the rank "
            "count (leave dp_reduce_bf16 0)");
    if (!c->plan) return HP_OK;
    const hp_plan *p = &c->plan->plan;
    int ranks = 1, last = -1;
    for (int d = 0; d < p->mesh.ndim; d++) {
        /* expert parallelism's axis right after dp: the ranks in mesh order are the slices' tree order (an
         * expert's gradient adds its sources along ep first, then over dp, as the other gradients' one tree) */
        int ep_after_dp = last >= 0 && !strcmp(p->mesh.name[d], "ep") && !strcmp(p->mesh.name[last], "dp");
        if (p->mesh.size[d] > 1 && ranks > 1 && !ep_after_dp)
            BAD("the mesh %s has more than one axis of size > 1: only data parallelism (--dp, --fsdp, --zero, and "
                "--ep after --dp) sums in one tree", c->plan->mesh);
        if (p->mesh.size[d] > 1) ranks *= p->mesh.size[d], last = d;
    }
    if (!pow2(ranks)) BAD("%d ranks is not a power of two", ranks);
    if (p->fsdp.level && p->fsdp.replicate_axis >= 0) BAD("HSDP (a replicate axis) is not built for it");
    if (p->fsdp.level && p->fsdp.reduce_bf16)
        BAD("the plan's fsdp reduce=bf16 rounds each rank's partial sum to bf16, and where that happens depends "
            "on the rank count (use reduce=fp32)");
    return HP_OK;
#undef BAD
}

static hp_status check(const hp_train_config *c) {
#define BAD(...) return hp_errorf("hp_train_config: " __VA_ARGS__)
    if (!c->model) BAD("model is NULL");
    if (!set(c->data)) BAD("data: no training data given");
    if (c->data_kind != HP_TRAIN_DATA_AUTO && c->data_kind != HP_TRAIN_DATA_TOKENS && c->data_kind != HP_TRAIN_DATA_TEXT)
        BAD("data_kind: %d is not a hp_train_data_kind", (int)c->data_kind);
    if (c->threads < 1 || c->threads > 256) BAD("threads must be in 1..256, got %d", c->threads);
    if (c->steps < 1) BAD("steps must be >= 1, got %ld", c->steps);
    if (c->stop_at < 0) BAD("stop_at must be >= 0, got %ld", c->stop_at);
    if (c->optimizer != HP_OPTIMIZER_ADAMW && c->optimizer != HP_OPTIMIZER_MUON)
        BAD("optimizer: %d is not HP_OPTIMIZER_ADAMW or HP_OPTIMIZER_MUON", (int)c->optimizer);
    if (!(c->lr > 0)) BAD("lr must be > 0, got %g", (double)c->lr);
    if (c->schedule != HP_SCHEDULE_COSINE && c->schedule != HP_SCHEDULE_LINEAR && c->schedule != HP_SCHEDULE_CONSTANT)
        BAD("schedule: %d is not a hp_schedule_type", (int)c->schedule);
    if (!(c->grad_clip >= 0)) BAD("grad_clip must be >= 0, got %g", (double)c->grad_clip);
    if (c->bf16_params_all != 0 && c->bf16_params_all != 1)
        BAD("bf16_params_all must be 0 or 1, got %d", c->bf16_params_all);
    /* bf16_params_all or the plan's gather=bf16 without bf16: compile's precision pass refuses them */
    if (c->fp32_gemm < 0 || c->fp32_gemm > 2) BAD("fp32_gemm must be 0 (OpenBLAS), 1 (oneDNN) or 2 (auto), got %d", c->fp32_gemm);
    if (c->grad_accum < 0 || c->grad_accum > 4096) BAD("grad_accum must be in 0..4096, got %d", c->grad_accum);
    if (c->dp_reduce_bf16 != 0 && c->dp_reduce_bf16 != 1) BAD("dp_reduce_bf16 must be 0 (fp32) or 1 (bf16), got %d", c->dp_reduce_bf16);
    if (c->dp_reduce_bf16 && c->plan && c->plan->plan.fsdp.level)
        BAD("dp_reduce_bf16: FSDP and ZeRO reduce the gradients themselves (for bf16 reductions the plan's fsdp "
            "reduce=bf16)");
    if (c->deterministic) HP_TRY(check_deterministic(c));
    if (c->on_nan != HP_ON_NAN_STOP && c->on_nan != HP_ON_NAN_SKIP) BAD("on_nan must be 0 (stop) or 1 (skip), got %d", c->on_nan);
    if (c->val_steps < 0) BAD("val_steps must be >= 0, got %ld", c->val_steps);
    if (c->val_every < 0) BAD("val_every must be >= 0, got %ld", c->val_every);
    if (!(c->val_fraction >= 0 && c->val_fraction < 1)) BAD("val_fraction must be in [0, 1), got %g", (double)c->val_fraction);
    if (c->ckpt_every < 0) BAD("ckpt_every must be >= 0, got %ld", c->ckpt_every);
    if (c->ckpt_every > 0 && !set(c->ckpt_dir)) BAD("ckpt_every needs ckpt_dir");
    if (c->keep_last < 0) BAD("keep_last must be >= 0, got %d", c->keep_last);
    if (c->keep_last > 0 && !set(c->ckpt_dir)) BAD("keep_last needs ckpt_dir");
    if (c->on_write_error != HP_ON_WRITE_ERROR_FAIL && c->on_write_error != HP_ON_WRITE_ERROR_WARN)
        BAD("on_write_error must be 0 (fail) or 1 (warn), got %d", c->on_write_error);
    if (c->comm_timeout_s < 0) BAD("comm_timeout_s must be >= 0, got %g", c->comm_timeout_s);
    if (!(c->run_refresh_s >= 0)) BAD("run_refresh_s must be >= 0, got %g", c->run_refresh_s);
    if (set(c->trace) && c->trace_steps < 1) BAD("trace_steps must be >= 1, got %ld", c->trace_steps);
    if (c->validate && !c->plan) BAD("validate needs a plan (a 1-rank run has no layouts to check)");
    if (set(c->resume) && set(c->init_llmc)) BAD("give resume or init_llmc, not both");
    if (set(c->resume) && set(c->init_hf)) BAD("give resume or init_hf, not both");
    if (set(c->init_llmc) && set(c->init_hf)) BAD("give init_llmc or init_hf, not both");
    if (c->ckpt_nargs < 0) BAD("ckpt_nargs must be >= 0, got %d", c->ckpt_nargs);
    if (c->ckpt_nargs > 0 && (!c->ckpt_arg_keys || !c->ckpt_arg_values)) BAD("ckpt_nargs %d without ckpt_arg_keys/values", c->ckpt_nargs);
    for (int i = 0; i < c->ckpt_nargs; i++)
        if (!set(c->ckpt_arg_keys[i]) || !c->ckpt_arg_values[i]) BAD("ckpt_arg_keys/values[%d] is empty or NULL", i);
    return HP_OK;
#undef BAD
}

static hp_status optim_config(hp_optim_config *o, const hp_train_config *c) {
    hp_optim_config_default(o);
    o->kind = c->optimizer == HP_OPTIMIZER_MUON ? HP_OPT_MUON : HP_OPT_ADAMW;
    o->lr = c->lr, o->beta1 = c->beta1, o->beta2 = c->beta2, o->eps = c->eps, o->weight_decay = c->weight_decay;
    o->muon_lr = c->muon_lr, o->muon_beta = c->muon_beta, o->muon_weight_decay = c->muon_weight_decay;
    if (c->muon_balance != 0) o->muon_balance = c->muon_balance > 0 ? c->muon_balance : 0.0f;
    o->muon_waves = c->muon_waves;
    if (c->muon_momentum) HP_TRY(hp_muon_momentum_parse(&o->muon_momentum, c->muon_momentum));
    if (c->muon_scale) HP_TRY(hp_muon_scale_parse(&o->muon_scale, c->muon_scale));
    if (c->muon_dist) {
        hp_muon_dist d;
        HP_TRY(hp_muon_dist_parse(&d, c->muon_dist));
        o->muon_dist = (int)d;
    }
    if (c->newton_schulz) HP_TRY(hp_ns_config_named(&o->ns, c->newton_schulz));
    o->muon_params = c->muon_params, o->adamw_params = c->adamw_params;
    hp_status st = hp_optim_config_check(o);
    return st ? hp_error_wrap(st, "hp_train_config") : HP_OK;
}

static hp_status lr_schedule(hp_lr_schedule *s, const hp_train_config *c) {
    hp_lr_kind k = c->schedule == HP_SCHEDULE_LINEAR ? HP_LR_LINEAR
                   : c->schedule == HP_SCHEDULE_CONSTANT ? HP_LR_CONSTANT
                                                         : HP_LR_COSINE;
    *s = (hp_lr_schedule){.kind = k, .lr = c->lr, .warmup_steps = c->warmup_steps, .min_lr_frac = c->min_lr_frac};
    hp_status st = hp_lr_schedule_check(s);
    return st ? hp_error_wrap(st, "hp_train_config") : HP_OK;
}

/* The training (val = 0) or validation (val = 1) stream, as `hyperpar train` opens them. */
static hp_status open_data(hp_data **d, const hp_train *t, int val) {
    const hp_train_config *c = &t->cfg;
    int own_val = set(c->val_data);
    hp_data_config dc = {0};
    dc.path = val && own_val ? c->val_data : c->data;
    dc.split = own_val ? HP_DATA_ALL : val ? HP_DATA_VAL : HP_DATA_TRAIN;
    if (!own_val && c->val_fraction <= 0) dc.split = HP_DATA_ALL;
    dc.kind = c->data_kind == HP_TRAIN_DATA_TOKENS ? HP_DATA_TOKENS
              : c->data_kind == HP_TRAIN_DATA_TEXT ? HP_DATA_TEXT
                                                   : HP_DATA_AUTO;
    dc.vocab = t->m->cfg.V;
    dc.B = t->m->B, dc.T = t->m->T;
    /* deterministic mode: a batch is a whole step (every micro-batch), so the data (the seeded start, the
     * wrap, the shuffled windows) is that of the step's batch whatever the rank count */
    if (c->deterministic && c->grad_accum > 1) dc.B *= c->grad_accum;
    dc.seed = val ? 0 : c->seed;
    dc.order = (!val && c->shuffle) ? HP_DATA_SHUFFLE : HP_DATA_SEQUENTIAL;
    dc.val_fraction = c->val_fraction;
    dc.rank = 0, dc.world = 1;
    return hp_data_open(d, &dc);
}

/* A MoE model's statistics in each step's metrics record, from every moe_aux report the first rank holds (the
 * whole batch's statistics, all-reduced before the balancing loss; in the deterministic mode the rank's slice):
 * routed slots per expert over the layers (min, mean, max, and the mean over layers of max / mean), the balancing
 * and z losses summed over the layers, and the slots the routers' capacity dropped (their count, and their share of
 * the routed slots), of the step's last micro-batch. */
static void moe_metrics(void *ctx, const hp_program *prog, const hp_graph *g, hp_metrics_rec *rec) {
    (void)ctx;
    double mn = 0, mx = 0, sum = 0, aux = 0, imb = 0, z = 0, dropped = 0;
    long cells = 0;
    int layers = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        if (hp_op_moe_role(n->op) != HP_MOE_ROLE_AUX || n->nout < 2 || n->out[1] < 0) continue;
        const float *r = hp_program_data((hp_program *)prog, n->out[1]);
        if (!r) continue;
        long E = (long)(hp_val_numel(g, n->out[1]) - 1) / 3;
        double lmax = 0, lsum = 0;
        for (long e = 0; e < E; e++) {
            double c = r[E + e];
            if (!cells || c < mn) mn = c;
            if (!cells || c > mx) mx = c;
            lmax = c > lmax ? c : lmax, lsum += c, sum += c, cells++;
        }
        z += r[2 * E];
        if (E >= 2) dropped += r[2 * E + 1];
        aux += r[3 * E];
        if (lsum > 0) imb += lmax / (lsum / (double)E);
        layers++;
    }
    if (!layers) return;
    hp_metrics_rec_num(rec, "moe_tokens_min", mn, 1);
    hp_metrics_rec_num(rec, "moe_tokens_mean", sum / (double)cells, 2);
    hp_metrics_rec_num(rec, "moe_tokens_max", mx, 1);
    hp_metrics_rec_num(rec, "moe_imbalance", imb / layers, 4);
    hp_metrics_rec_num(rec, "moe_aux_loss", aux, HP_METRICS_G);
    hp_metrics_rec_num(rec, "moe_z_loss", z, HP_METRICS_G);
    hp_metrics_rec_num(rec, "moe_dropped", dropped, 0);
    hp_metrics_rec_num(rec, "moe_dropped_frac", sum > 0 ? dropped / sum : 0, 4);
}

static hp_status init_weights(void *ctx, float *const *ptrs, const char (*names)[HP_NAME_LEN], const hp_shape *shapes,
                              int n) {
    hp_train *t = ctx;
    const hp_gpt2_config *m = &t->m->cfg;
    if (t->m->custom && t->init_llmc) return hp_errorf("init from llm.c '%s': the model is not GPT-2", t->init_llmc);
    if (t->init_hf) { /* the shape was checked against config.json before the model was made */
        hp_model_config hc;
        char fam[16];
        HP_TRY(hp_hf_model_config(&hc, fam, sizeof fam, t->init_hf));
        return hp_hf_load(ptrs, names, shapes, n, t->init_hf, fam, &hc);
    }
    if (!t->init_llmc) return hp_model_init(ptrs, t->m->g, names, n, t->cfg.seed); /* the inits the model states */
    hp_llmc_header h;
    float *flat = NULL;
    HP_TRY(hp_api_llmc_load(&flat, &h, t->init_llmc, m));
    hp_status st = hp_gpt2_llmc_copy(flat, ptrs, names, shapes, n, m, 0);
    free(flat);
    return st;
}

static hp_status state_json(void *ctx, char **out, long step, const hp_data_state *ds) {
    hp_train *t = ctx;
    const hp_train_config *c = &t->cfg;
    return hp_api_state_json(out, step, t->m, ds, opt_name(c->optimizer), c->ckpt_nargs,
                             (const char *const *)t->arg_keys, (const char *const *)t->arg_values, &t->lineage);
}

static void on_event(void *ctx, const hp_train_event *ie) {
    hp_train *t = ctx;
    static const hp_event_kind kinds[] = {
        [HP_TRAIN_START] = HP_EVENT_START, [HP_TRAIN_VALIDATED] = HP_EVENT_VALIDATED, [HP_TRAIN_STEP] = HP_EVENT_STEP,
        [HP_TRAIN_VAL] = HP_EVENT_VAL,     [HP_TRAIN_CKPT] = HP_EVENT_CKPT,           [HP_TRAIN_STOPPED] = HP_EVENT_STOPPED,
        [HP_TRAIN_DONE] = HP_EVENT_DONE,   [HP_TRAIN_NOTE] = HP_EVENT_NOTE,           [HP_TRAIN_WARNING] = HP_EVENT_WARNING};
    if (ie->kind == HP_TRAIN_STEP) t->done = ie->step;
    if (t->run && !t->run_err) { /* run.json: at validations, checkpoints and stops, and at least every 10 s */
        double now = hp_now();
        int refresh = ie->kind == HP_TRAIN_VAL || ie->kind == HP_TRAIN_CKPT || ie->kind == HP_TRAIN_STOPPED ||
                      now - t->run_refreshed >= t->cfg.run_refresh_s;
        if (refresh) t->run_refreshed = now;
        t->run_err = hp_api_run_progress(t->run, ie->kind == HP_TRAIN_STEP ? ie->step : 0, refresh);
    }
    if (!t->cfg.on_event) return;
    hp_event e = {.kind = kinds[ie->kind], .step = ie->step, .loss = ie->loss, .lr = ie->lr,
                  .grad_norm = ie->grad_norm, .nonfinite = ie->nonfinite, .val_loss = ie->val_loss,
                  .tokens_per_s = ie->tokens_per_s,
                  .step_ms = ie->step_ms, .eta_s = ie->eta_s, .seconds = ie->seconds, .steps_done = ie->steps_done,
                  .dir = ie->dir, .message = ie->message, .nparams = ie->nparams, .ranks = ie->ranks, .ranks_here = ie->ranks_here,
                  .mesh = ie->mesh, .start_step = ie->start_step};
    hp_plan_memory mem;
    char fsdp[sizeof ((hp_plan_fsdp *)0)->summary];
    if (ie->kind == HP_TRAIN_START) {
        hp_dist *d = hp_trainer_dist(t->tr);
        hp_plan_rank_report rr;
        memset(&rr, 0, sizeof rr);
        hp_status st = hp_plan_gather_rank(&rr, &hp_dist_rank_at(d, 0)->c, NULL, 0,
                                           hp_dist_threads_per_rank(hp_dist_world(d), t->cfg.threads));
        if (!st) {
            mem = rr.memory;
            e.memory = &mem;
        }
        if (!st && rr.fsdp.level && t->cfg.plan) {
            hp_api_fsdp_finish(&rr.fsdp, &t->cfg.plan->plan);
            e.fsdp_summary = memcpy(fsdp, rr.fsdp.summary, sizeof fsdp);
        }
        hp_status_free(st);
        hp_plan_rank_report_free(&rr);
    }
    hp_validation v;
    hp_grad_check *grads = NULL, *upd = NULL;
    if (ie->vrep) {
        const hp_validate_report *r = ie->vrep;
        e.checked_ops = r->nops, e.worst_grad_error = r->worst;
        grads = r->ngrads > 0 ? malloc((size_t)r->ngrads * sizeof *grads) : NULL;
        int ng = grads ? r->ngrads : 0;
        for (int i = 0; i < ng; i++)
            grads[i] = (hp_grad_check){.name = r->grads[i].name, .layout = r->grads[i].layout, .rel_err = r->grads[i].rel_err};
        v = (hp_validation){.checked_ops = r->nops, .redistributions = r->nredist, .values = r->nvalues, .own_order = r->nown,
                            .loss = r->loss, .ref_loss = r->ref_loss, .ngrads = ng, .grads = grads,
                            .worst = r->worst, .worst_index = r->worst_index < ng ? r->worst_index : -1};
        upd = r->nupdates > 0 ? malloc((size_t)r->nupdates * sizeof *upd) : NULL;
        int nu = upd ? r->nupdates : 0;
        for (int i = 0; i < nu; i++)
            upd[i] = (hp_grad_check){.name = r->updates[i].name, .layout = r->updates[i].layout,
                                     .rel_err = r->updates[i].rel_err};
        v.nupdates = nu, v.updates = upd, v.worst_update = r->worst_update;
        e.validation = &v;
    }
    t->cfg.on_event(t->cfg.event_ctx, &e);
    free(grads), free(upd);
}

static hp_status copy_strings(hp_train *t) {
    hp_train_config *c = &t->cfg;
    HP_TRY(hp_api_strdup(&t->data, c->data));
    HP_TRY(hp_api_strdup(&t->val_data, set(c->val_data) ? c->val_data : NULL));
    HP_TRY(hp_api_strdup(&t->metrics, set(c->metrics) ? c->metrics : NULL));
    HP_TRY(hp_api_strdup(&t->ckpt_dir, set(c->ckpt_dir) ? c->ckpt_dir : NULL));
    HP_TRY(hp_api_strdup(&t->trace, set(c->trace) ? c->trace : NULL));
    HP_TRY(hp_api_strdup(&t->init_llmc, set(c->init_llmc) ? c->init_llmc : NULL));
    HP_TRY(hp_api_strdup(&t->init_hf, set(c->init_hf) ? c->init_hf : NULL));
    c->data = t->data, c->val_data = t->val_data, c->metrics = t->metrics, c->ckpt_dir = t->ckpt_dir;
    c->trace = t->trace, c->init_llmc = t->init_llmc, c->init_hf = t->init_hf;
    HP_TRY(hp_api_strdup(&t->muon_momentum, c->muon_momentum));
    HP_TRY(hp_api_strdup(&t->muon_scale, c->muon_scale));
    HP_TRY(hp_api_strdup(&t->muon_dist, c->muon_dist));
    HP_TRY(hp_api_strdup(&t->newton_schulz, c->newton_schulz));
    HP_TRY(hp_api_strdup(&t->muon_params, set(c->muon_params) ? c->muon_params : NULL));
    HP_TRY(hp_api_strdup(&t->adamw_params, set(c->adamw_params) ? c->adamw_params : NULL));
    c->muon_momentum = t->muon_momentum, c->muon_scale = t->muon_scale, c->newton_schulz = t->newton_schulz;
    c->muon_dist = t->muon_dist;
    c->muon_params = t->muon_params, c->adamw_params = t->adamw_params;
    int n = c->ckpt_nargs;
    if (n > 0) {
        t->arg_keys = calloc((size_t)n, sizeof *t->arg_keys);
        t->arg_values = calloc((size_t)n, sizeof *t->arg_values);
        if (!t->arg_keys || !t->arg_values) return hp_errorf("hp_train_create: out of memory");
        for (int i = 0; i < n; i++) {
            HP_TRY(hp_api_strdup(&t->arg_keys[i], c->ckpt_arg_keys[i]));
            HP_TRY(hp_api_strdup(&t->arg_values[i], c->ckpt_arg_values[i]));
        }
    }
    c->ckpt_arg_keys = (const char *const *)t->arg_keys, c->ckpt_arg_values = (const char *const *)t->arg_values;
    return HP_OK;
}

/* 1 when this machine's compute threads outnumber its cores: the ranks this
 * process hosts times their threads, times the processes Open MPI started on
 * this machine (OMPI_COMM_WORLD_LOCAL_SIZE). out: ranks on the machine,
 * threads per rank, cores. */
static int oversubscribed(int out[3], const hp_dist *d, int threads) {
    cpu_set_t set;
    int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    long procs = hp_launch_local_processes();
    int here = hp_dist_nranks(d), per = threads / here > 0 ? threads / here : 1;
    out[0] = (int)procs * here, out[1] = per, out[2] = cores;
    return cores > 0 && (long)out[0] * per > cores;
}

/* A run directory that recorded steps past start_step is another run's (or
 * newer than the checkpoint resumed): refused unless overwrite. */
static hp_status check_run_dir(const char *dir, long start_step, int overwrite) {
    char *path = hp_fs_join(dir, "run.json"), *text = NULL;
    if (!path) return hp_errorf("%s: out of memory", dir);
    hp_status st = HP_OK;
    if (hp_fs_exists(path) && !overwrite) {
        size_t n;
        hp_json *js = NULL;
        int64_t last = 0;
        st = hp_fs_read_bounded(&text, &n, path, 1 << 20);
        if (!st) st = hp_json_parse(&js, text, n);
        if (!st && hp_json_get(js, "last_step")) st = hp_json_get_int(&last, js, "last_step");
        if (st) st = hp_error_wrap(st, "%s (the run directory's record; --overwrite replaces it)", path);
        else if (last > start_step)
            st = hp_errorf("%s holds a run recorded up to step %lld, past step %ld this run starts from: its records "
                           "would be overwritten (--overwrite allows it; or another --run-dir)",
                           dir, (long long)last, start_step);
        hp_json_free(js);
    }
    free(text);
    free(path);
    return st;
}

/* --muon-params and --adamw-params against the whole model (each rank's
 * compile routes only the parameters whose pieces it holds). */
static hp_status check_routing(const hp_graph *g, const hp_optim_config *oc) {
    int n = hp_graph_params(g, NULL, 0);
    int *ids = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    hp_opt_param *op = calloc((size_t)(n > 0 ? n : 1), sizeof *op);
    hp_opt_kind *kinds = calloc((size_t)(n > 0 ? n : 1), sizeof *kinds);
    hp_status st = ids && op && kinds ? HP_OK : hp_errorf("hp_train_create: out of memory");
    if (!st) {
        hp_graph_params(g, ids, n);
        for (int i = 0; i < n; i++) {
            const hp_value *v = &g->vals[ids[i]];
            op[i] = (hp_opt_param){v->name, NULL, NULL, v->shape, hp_optim_hidden_matrix(v->name, &v->shape)};
        }
        st = hp_optim_route(kinds, oc->kind, oc->muon_params, oc->adamw_params, op, n);
    }
    free(ids), free(op), free(kinds);
    return st;
}

/* A new run id; resumed, the lineage of the checkpoint continued at its step. */
static hp_status run_lineage(hp_train *t) {
    char id[HP_LINEAGE_ID];
    HP_TRY(hp_ckpt_lineage_new_id(id));
    if (!t->have_ck) {
        hp_ckpt_lineage_child(&t->lineage, NULL, 0, id);
        return HP_OK;
    }
    hp_ckpt_lineage parent;
    hp_status st = hp_ckpt_lineage_from_json(&parent, t->ck.state); /* checked when opened */
    if (st) return hp_error_wrap(st, "%s/state.json", t->ck_dir);
    hp_ckpt_lineage_child(&t->lineage, &parent, t->start_step, id);
    return HP_OK;
}

static hp_status setup(hp_train *t, const hp_train_config *c) {
    HP_TRY(check(c));
    t->cfg = *c;
    t->m = c->model;
    HP_TRY(copy_strings(t));
    c = &t->cfg; /* the copies: the trainer may keep pointers into them */
    hp_trainer_config ic;
    memset(&ic, 0, sizeof ic);
    HP_TRY(optim_config(&ic.optim, c));
    HP_TRY(check_routing(t->m->g, &ic.optim));
    HP_TRY(lr_schedule(&t->lr, c));
    HP_TRY(open_data(&t->train, t, 0));
    if (c->val_steps > 0) HP_TRY(open_data(&t->val, t, 1));
    if (t->val && hp_data_kind_of(t->val) != hp_data_kind_of(t->train)) {
        int text = hp_data_kind_of(t->train) == HP_DATA_TEXT;
        return hp_errorf("%s: the validation data is %s but the training data %s is %s: both must be of one kind",
                         c->val_data, text ? "llm.c token shards" : "text", c->data,
                         text ? "text" : "llm.c token shards");
    }
    if (set(c->resume)) {
        HP_TRY(hp_api_ckpt_open(&t->ck, &t->ck_dir, c->resume, 1));
        t->have_ck = 1;
        HP_TRY(hp_api_ckpt_resume(&t->start_step, &t->ck, t->ck_dir, t->m, opt_name(c->optimizer), c->steps, t->train));
        t->done = t->start_step;
    }
    HP_TRY(run_lineage(t));
    size_t n = (size_t)t->m->B * (size_t)t->m->T * (size_t)(c->grad_accum > 1 ? c->grad_accum : 1);
    t->tokens = malloc(n * sizeof(int32_t));
    t->targets = malloc(n * sizeof(int32_t));
    if (!t->tokens || !t->targets) return hp_errorf("hp_train_create: out of memory");
    ic.model = t->m->g;
    ic.tokens = t->m->io.tokens, ic.targets = t->m->io.targets;
    ic.init = init_weights, ic.init_ctx = t;
    for (int i = 0; i < t->m->g->nnodes && !ic.step_metrics; i++) /* only a model with MoE layers reports them */
        if (hp_op_moe_role(t->m->g->nodes[i].op) == HP_MOE_ROLE_AUX) ic.step_metrics = moe_metrics;
    ic.step_metrics_ctx = t;
    ic.plan = c->plan ? &c->plan->plan : NULL;
    ic.world = c->world ? c->world->w : NULL;
    ic.threads = c->threads;
    ic.comm_timeout = c->comm_timeout_s;
    ic.a2a_fuse_bytes = c->a2a_fuse_bytes;
    ic.validate = c->validate;
    hp_compile_opts *co = &ic.compile; /* filled here, compiled as it is (the trainer adds train and optim) */
    co->dtype = c->bf16 ? HP_BF16 : HP_F32;
    co->fp32_gemm = c->fp32_gemm;
    co->bf16_params_all = c->bf16_params_all;
    co->dp_reduce = c->dp_reduce_bf16 ? HP_BF16 : HP_F32;
    co->schedule = (hp_schedule_opts){.overlap = c->overlap != 0, .ep_overlap = hp_api_ep_overlap(c->overlap,
                                                                                                     c->ep_overlap),
                                      .max_inflight = 4};
    co->max_norm = c->grad_clip;
    co->grad_accum = c->grad_accum;
    co->accum_comm_last = c->grad_accum_comm_last;
    co->deterministic = c->deterministic;
    HP_TRY(hp_api_pp_opts(&co->pp, c->pp_schedule, c->pp_split, c->pp_chunks));
    HP_TRY(hp_api_remat_opts(&co->remat, c->remat, c->remat_save));
    co->loss_chunk = c->loss_chunk;
    co->moe_chunks = c->moe_chunks;
    HP_TRY(hp_api_plan_lines(&co->pp, &co->remat, c->plan ? &c->plan->plan : NULL));
    ic.on_nan = c->on_nan;
    ic.max_skipped = c->max_skipped_steps;
    ic.lr = t->lr;
    ic.steps = c->steps, ic.stop_at = c->stop_at;
    ic.train = t->train, ic.val = t->val;
    ic.val_every = c->val_every, ic.val_steps = c->val_steps;
    ic.metrics = t->metrics;
    ic.ckpt_dir = t->ckpt_dir, ic.ckpt_every = c->ckpt_every, ic.keep_last = c->keep_last;
    ic.lineage = &t->lineage, ic.ckpt_overwrite = c->overwrite != 0;
    ic.on_write_error = c->on_write_error;
    ic.ckpt_sharded = c->ckpt_sharded;
    ic.resume = t->have_ck ? &t->ck : NULL, ic.start_step = t->start_step;
    ic.state_json = state_json, ic.state_ctx = t;
    ic.on_event = on_event, ic.event_ctx = t;
    ic.before_alloc = hp_api_train_fit, ic.before_alloc_ctx = t; /* the memory check (api/plan_fit) */
    ic.trace = t->trace, ic.trace_steps = c->trace_steps;
    if (set(c->run_dir)) {
        HP_TRY(check_run_dir(c->run_dir, t->start_step, c->overwrite));
        HP_TRY(hp_api_run_create(&t->run, c));
        /* the run's report draws MFU against this machine's measured peak (the best of 3 short
         * measurements: tens of milliseconds at start, not the benchmark's second) */
        double peak = 0;
        const char *isa = NULL;
        hp_status ps = hp_api_fma_peak(&peak, c->threads, 3, 10);
        if (!ps) { /* raised to the clock's floor where the clock is known (api/bench_bound) */
            hp_bench_peak settled;
            hp_bench_fma_isa(&isa);
            hp_bench_peak_settle(&settled, peak, isa, c->threads, NULL);
            ic.peak_gflops = settled.peak;
        }
        hp_status_free(ps);
        if (!t->metrics) { /* the metrics go into the run directory */
            t->metrics = hp_fs_join(c->run_dir, "metrics.jsonl");
            if (!t->metrics) return hp_errorf("hp_train_create: out of memory");
            ic.metrics = t->cfg.metrics = t->metrics;
        }
    }
    HP_TRY(hp_trainer_create(&t->tr, &ic));
    hp_dist *d = hp_trainer_dist(t->tr);
    int over[3]; /* ranks, threads per rank, cores */
    if (oversubscribed(over, d, c->threads) && hp_dist_lead(d)) {
        char msg[400];
        snprintf(msg, sizeof msg, "%d rank%s x %d thread%s on %d core%s: the ranks take turns on the cores, so the time "
                 "they wait in collectives includes time descheduled and the exposed communication reads high",
                 over[0], over[0] == 1 ? "" : "s", over[1], over[1] == 1 ? "" : "s", over[2], over[2] == 1 ? "" : "s");
        hp_event e = {.kind = HP_EVENT_WARNING, .message = msg};
        if (t->cfg.on_event) t->cfg.on_event(t->cfg.event_ctx, &e);
        if (t->run) hp_api_run_oversubscribed(t->run, over[0], over[1], over[2]);
    }
    const hp_fsdp_plan *fp = hp_dist_nranks(d) > 0 ? &hp_dist_rank_at(d, 0)->c.fsdp : NULL;
    if (fp && fp->level > 0 && c->plan && c->plan->plan.fsdp.keep_bytes == HP_FSDP_KEEP_AUTO && hp_dist_lead(d)) {
        int nk = 0;
        double kb = 0;
        for (int u = 0; u < fp->nunits; u++)
            if (fp->units[u].keep) nk++, kb += (double)fp->units[u].size * 4;
        char msg[300], b1[32], b2[32];
        snprintf(msg, sizeof msg, "fsdp keep_bytes=auto: %d of %d units (%s) kept from the forward for the backward "
                 "(the memory budget allows %s)%s", nk, fp->nunits, hp_api_bytes_str(b1, sizeof b1, kb),
                 hp_api_bytes_str(b2, sizeof b2, (double)fp->keep_bytes),
                 fp->transient ? "" : "; nothing is gathered twice here (no shard group across supernodes)");
        hp_event e = {.kind = HP_EVENT_NOTE, .message = msg};
        if (t->cfg.on_event) t->cfg.on_event(t->cfg.event_ctx, &e);
    }
    if (t->run && hp_dist_lead(d)) {
        char mesh[128];
        hp_mesh_str(mesh, sizeof mesh, hp_dist_mesh(d));
        HP_TRY(hp_api_run_start(t->run, c, t->m, t->metrics, hp_mesh_size(hp_dist_mesh(d)), mesh, t->start_step));
    }
    /* the caller's strings: recorded, not kept */
    t->cfg.run_dir = NULL, t->cfg.run_settings = NULL, t->cfg.run_nsettings = 0, t->cfg.run_command = NULL;
    return HP_OK;
}

hp_status hp_train_create(hp_train **out, const hp_train_config *c) {
    *out = NULL;
    if (!c) return hp_errorf("hp_train_create: config is NULL");
    hp_train *t = calloc(1, sizeof *t);
    if (!t) return hp_errorf("hp_train_create: out of memory");
    hp_status st = setup(t, c);
    if (st) {
        hp_train_free(t);
        return st;
    }
    *out = t;
    return HP_OK;
}

hp_status hp_train_run(hp_train *t) {
    if (t->loaded)
        return hp_errorf("hp_train_run: hp_train_load loaded a checkpoint for a loop of hp_train_step; a run "
                         "resumes through hp_train_config.resume");
    if (t->stepped) return hp_errorf("hp_train_run: %ld steps were already run with hp_train_step", t->done);
    if (t->ran) return hp_errorf("hp_train_run: the run was already done");
    t->ran = 1;
    hp_status st = hp_trainer_run(t->tr);
    if (t->run) {
        if (!st && t->run_err) st = t->run_err, t->run_err = HP_OK;
        st = hp_api_run_finish(t->run, st);
    }
    HP_TRY(st);
    long end = t->cfg.stop_at > 0 && t->cfg.stop_at < t->cfg.steps ? t->cfg.stop_at : t->cfg.steps;
    if (end > t->done) t->done = end; /* processes without rank 0 get no events */
    return HP_OK;
}

hp_status hp_train_step(hp_train *t, float *loss, float *grad_norm) {
    if (t->ran) return hp_errorf("hp_train_step: the trainer already ran hp_train_run");
    t->stepped = 1;
    /* a step's micro-batches (one read of a whole step in deterministic mode, see open_data) */
    int accum = t->cfg.grad_accum > 1 ? t->cfg.grad_accum : 1, reads = t->cfg.deterministic ? 1 : accum;
    size_t micro_n = (size_t)t->m->B * (size_t)t->m->T;
    for (int m = 0; m < reads; m++)
        HP_TRY(hp_data_next(t->train, t->tokens + micro_n * (size_t)m, t->targets + micro_n * (size_t)m));
    float lr = hp_lr_at(&t->lr, t->done, t->cfg.steps);
    HP_TRY(hp_trainer_step(t->tr, t->tokens, t->targets, t->done, lr, loss, grad_norm));
    t->done++;
    return HP_OK;
}

long hp_train_steps_done(const hp_train *t) { return t->done; }
int hp_train_is_lead(const hp_train *t) { return hp_dist_lead(hp_trainer_dist(t->tr)); }

void hp_train_free(hp_train *t) {
    if (!t) return;
    hp_trainer_destroy(t->tr);
    hp_api_run_free(t->run);
    hp_status_free(t->run_err);
    if (t->have_ck) hp_ckpt_close(&t->ck);
    free(t->ck_dir);
    hp_data_close(t->train);
    hp_data_close(t->val);
    free(t->tokens), free(t->targets);
    free(t->data), free(t->val_data), free(t->metrics), free(t->ckpt_dir), free(t->trace), free(t->init_llmc), free(t->init_hf);
    free(t->muon_momentum), free(t->muon_scale), free(t->muon_dist), free(t->newton_schulz), free(t->muon_params), free(t->adamw_params);
    for (int i = 0; t->arg_keys && i < t->cfg.ckpt_nargs; i++) free(t->arg_keys[i]);
    for (int i = 0; t->arg_values && i < t->cfg.ckpt_nargs; i++) free(t->arg_values[i]);
    free(t->arg_keys), free(t->arg_values);
    free(t);
}
