/* tools/train: `hyperpar train` — the options (flags, config file, a
 * checkpoint's settings on --resume), the model and its initialisation, then
 * the library's one trainer (runtime/trainer: one rank, rank-threads or MPI
 * processes) with this file printing its events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "ckpt_state.h"
#include "commands.h"
#include "io/ckpt.h"
#include "io/data.h"
#include "optim/schedule.h"
#include "progress.h"
#include "io/llmc.h"
#include "runtime/trainer.h"
#include "session.h"
#include "train_opts.h"

/* Settings that must not change on resume (the rest may, e.g. --steps, and
 * the plan: checkpoints hold whole tensors, so any plan or world size resumes
 * them). */
static const char *const frozen_on_resume[] = {"layers", "heads", "channels", "vocab", "max-seq", "batch", "seq",
                                               "data", "shuffle", "seed", "optimizer"};

/* A resumed run inherits the checkpoint's plan; a plan given now replaces it:
 * --dp/--tp drop an inherited --plan file, and --plan drops inherited --dp/--tp. */
static void replace_inherited_plan(train_opts *o, const char *saved_plan, int saved_dp, int saved_tp) {
    int plan_now = strcmp(o->plan, saved_plan) != 0, dp_tp_now = o->dp != saved_dp || o->tp != saved_tp;
    if (saved_plan[0] && !plan_now && dp_tp_now) o->plan[0] = 0;
    if (o->plan[0] && plan_now && !dp_tp_now) o->dp = 1, o->tp = 1;
}

/* Resolves --resume: a checkpoint directory, or a run directory with 'latest'. */
static hp_status resume_dir(char **out, const char *path) {
    char probe[1100];
    struct stat st;
    snprintf(probe, sizeof probe, "%s/%s", path, HP_CKPT_STATE);
    if (stat(probe, &st) == 0) {
        *out = strdup(path);
        return *out ? HP_OK : hp_errorf("out of memory");
    }
    return hp_ckpt_get_latest(out, path);
}

typedef struct {
    train_opts o;
    hp_opt tab[72];
    int ntab;
    hp_gpt2_config m;
    hp_graph *g;
    hp_gpt2_io io;
    hp_plan plan;
    int have_plan;
    hp_data *train, *val;
    hp_ckpt ck;
    int have_ck;
    char *ck_dir; /* the checkpoint directory resumed from */
    long start_step;
    int finished; /* setup did all there was to do (--help) */
    hp_progress pg;
    hp_trainer *tr;
} trainer;

static hp_status setup(trainer *t, int argc, char **argv) {
    train_opts *o = &t->o;
    hp_train_defaults(o);
    t->ntab = hp_train_opt_table(t->tab, o);
    int help = 0;
    /* --resume first: the checkpoint's settings are the defaults of a resumed run. */
    HP_TRY(hp_args_parse(&help, t->tab, t->ntab, argc, argv, 2, "train"));
    if (help) {
        hp_args_usage(t->tab, t->ntab, "train", "Trains a GPT-2 style model (with no flags: a small GPT on text every Debian machine has).");
        t->finished = 1;
        return HP_OK;
    }
    hp_gpt2_config m = {o->layers, o->heads, o->channels, o->vocab, 0, o->max_seq};
    if (o->resume[0]) {
        char *dir = NULL;
        HP_TRY(resume_dir(&dir, o->resume));
        hp_status st = hp_ckpt_open(&t->ck, dir);
        if (st) {
            free(dir);
            return st;
        }
        t->have_ck = 1;
        const hp_json *args = hp_json_get(t->ck.state, "args");
        if (!args || args->type != HP_JSON_OBJECT) {
            st = hp_errorf("%s/state.json: missing object 'args'", dir);
            free(dir);
            return st;
        }
        char where[1200];
        snprintf(where, sizeof where, "%s/state.json: args", dir);
        hp_train_defaults(o);
        for (int i = 0; i < args->n; i++) {
            if (args->items[i].type != HP_JSON_STRING) continue;
            st = hp_args_set(t->tab, t->ntab, args->keys[i], args->items[i].str, where);
            if (st) {
                free(dir);
                return st;
            }
        }
        /* flags given now win, except the frozen ones, which must agree */
        enum { NFROZEN = sizeof frozen_on_resume / sizeof frozen_on_resume[0] };
        char saved[NFROZEN][600];
        for (int k = 0; k < NFROZEN; k++)
            for (int i = 0; i < t->ntab; i++)
                if (!strcmp(t->tab[i].name, frozen_on_resume[k])) hp_args_format(saved[k], sizeof saved[k], &t->tab[i]);
        char saved_plan[sizeof o->plan];
        int saved_dp = o->dp, saved_tp = o->tp;
        memcpy(saved_plan, o->plan, sizeof saved_plan);
        st = hp_args_parse(&help, t->tab, t->ntab, argc, argv, 2, "train");
        if (!st) replace_inherited_plan(o, saved_plan, saved_dp, saved_tp);
        for (int k = 0; k < NFROZEN && !st; k++)
            for (int i = 0; i < t->ntab; i++) {
                char now[600];
                if (strcmp(t->tab[i].name, frozen_on_resume[k])) continue;
                hp_args_format(now, sizeof now, &t->tab[i]);
                if (strcmp(now, saved[k]))
                    st = hp_errorf("hyperpar train: --%s %s differs from the checkpoint's %s (%s)", t->tab[i].name,
                                   now, saved[k], dir);
            }
        if (st) {
            free(dir);
            return st;
        }
        st = hp_ckpt_model_config(&m, &t->ck, dir);
        int64_t step = 0;
        if (!st) st = hp_json_get_int(&step, t->ck.state, "step");
        if (st) {
            st = hp_error_wrap(st, "%s/state.json", dir);
            free(dir);
            return st;
        }
        t->start_step = (long)step;
        t->ck_dir = dir;
    } else if (o->init[0]) {
        HP_TRY(hp_llmc_model_config(&m, o->init));
    }
    HP_TRY(hp_train_check(o));
    HP_TRY(hp_gpt2_config_check(&m));
    t->m = m;
    if (hp_train_is_distributed(o)) {
        HP_TRY(hp_train_plan(&t->plan, o));
        t->have_plan = 1;
    } else if (o->validate) {
        printf("validation: nothing to validate: a 1-rank run has no layouts (use --plan or --dp/--tp)\n");
    }
    HP_TRY(hp_graph_create(&t->g));
    HP_TRY(hp_gpt2_build(t->g, &t->io, &t->m, o->batch, o->seq));
    HP_TRY(hp_train_open_data(&t->train, o, &t->m, 0));
    HP_TRY(hp_train_open_data(&t->val, o, &t->m, 1));
    if (t->have_ck) {
        const hp_json *dj = hp_json_get(t->ck.state, "data");
        hp_data_state ds;
        hp_status e = dj ? hp_data_state_from_json(&ds, dj) : hp_errorf("missing key 'data'");
        if (!e) e = hp_data_set_state(t->train, &ds);
        if (e) return hp_error_wrap(e, "%s/state.json: data", t->ck_dir);
    }
    return HP_OK;
}

/* The initial weights of a fresh run: GPT-2's initialisation, or an llm.c file. */
static hp_status init_weights(void *ctx, float *const *ptrs, const char (*names)[HP_NAME_LEN], const hp_shape *shapes,
                              int n) {
    trainer *t = ctx;
    if (!t->o.init[0]) return hp_gpt2_init(ptrs, names, shapes, n, &t->m, t->o.seed);
    hp_llmc_header h;
    float *flat = NULL;
    HP_TRY(hp_llmc_read(&h, &flat, t->o.init));
    hp_llmc_header want = {t->m.maxT, t->m.V, t->m.L, t->m.NH, t->m.C, t->m.Vp};
    hp_status st = memcmp(&h, &want, sizeof h) == 0
                       ? hp_gpt2_llmc_copy(flat, ptrs, names, shapes, n, &t->m, 0)
                       : hp_errorf("%s: model shape (L=%d NH=%d C=%d V=%d Vp=%d maxT=%d) differs from the run's",
                                   t->o.init, h.L, h.NH, h.C, h.V, h.Vp, h.maxT);
    free(flat);
    return st;
}

static hp_status state_json(void *ctx, char **out, long step, const hp_data_state *ds) {
    trainer *t = ctx;
    return hp_train_state_json(out, step, &t->m, ds, t->tab, t->ntab);
}

static void on_event(void *ctx, const hp_train_event *e) {
    trainer *t = ctx;
    const train_opts *o = &t->o;
    hp_progress *pg = &t->pg;
    switch (e->kind) {
    case HP_TRAIN_START:
        if (!t->have_plan)
            hp_progress_note(pg, "model: L=%d NH=%d C=%d V=%d (Vp %d) maxT=%d, %.2fM parameters; B=%d T=%d, %d threads, %s",
                             t->m.L, t->m.NH, t->m.C, t->m.V, t->m.Vp, t->m.maxT, e->nparams / 1e6, o->batch, o->seq,
                             o->threads, o->optimizer);
        else
            hp_progress_note(pg, "model: L=%d NH=%d C=%d V=%d, %.2fM parameters; B=%d T=%d; mesh %s (%d ranks, %d here), %s",
                             t->m.L, t->m.NH, t->m.C, t->m.V, e->nparams / 1e6, o->batch, o->seq, e->mesh, e->ranks,
                             e->ranks_here, o->optimizer);
        if (e->start_step) hp_progress_note(pg, "resumed at step %ld", e->start_step);
        break;
    case HP_TRAIN_VALIDATED: {
        const hp_validate_report *rep = e->vrep;
        hp_progress_note(pg, "validation: %d operators checked, every layout and value agrees (%d redistributions, %d "
                             "values; loss %.6f, 1 rank %.6f)",
                         rep->nops, rep->nredist, rep->nvalues, (double)rep->loss, (double)rep->ref_loss);
        hp_progress_note(pg, "validation: gradient equivalence against 1 rank (max relative error per parameter):");
        for (int i = 0; i < rep->ngrads; i++)
            hp_progress_note(pg, "  %-28s %-20s %.3g", rep->grads[i].name, rep->grads[i].layout, rep->grads[i].rel_err);
        hp_progress_note(pg, "validation: worst gradient relative error %.3g (%s)", rep->worst,
                         rep->worst_index >= 0 ? rep->grads[rep->worst_index].name : "-");
        break;
    }
    case HP_TRAIN_STEP:
        hp_progress_step(pg, e->step, e->loss, e->tokens_per_s, e->step_ms, e->lr, e->eta_s);
        break;
    case HP_TRAIN_VAL: hp_progress_note(pg, "step %ld: val loss %.4f", e->step, (double)e->val_loss); break;
    case HP_TRAIN_CKPT: hp_progress_note(pg, "checkpoint: %s", e->dir); break;
    case HP_TRAIN_STOPPED: hp_progress_note(pg, "stopped at step %ld of %ld (--stop-at)", e->step, o->steps); break;
    case HP_TRAIN_DONE:
        hp_progress_done(pg);
        if (e->steps_done)
            printf("trained %ld steps in %.1f s (%.0f tok/s)\n", e->steps_done, e->seconds, e->tokens_per_s);
        break;
    }
}

static hp_status run(trainer *t) {
    train_opts *o = &t->o;
    hp_trainer_config c;
    memset(&c, 0, sizeof c);
    c.model = t->g;
    c.tokens = t->io.tokens, c.targets = t->io.targets;
    c.init = init_weights, c.init_ctx = t;
    c.plan = t->have_plan ? &t->plan : NULL;
    c.threads = o->threads;
    c.comm_timeout = o->comm_timeout;
    c.validate = o->validate && t->have_plan;
    c.schedule = hp_train_schedule(o);
    HP_TRY(hp_train_optim_config(&c.optim, o));
    c.grad_clip = o->grad_clip;
    c.lr = (hp_lr_schedule){.lr = o->lr, .warmup_steps = o->warmup, .min_lr_frac = o->min_lr_frac};
    HP_TRY(hp_lr_kind_parse(&c.lr, o->schedule));
    HP_TRY(hp_lr_schedule_check(&c.lr));
    c.steps = o->steps, c.stop_at = o->stop_at;
    c.train = t->train, c.val = t->val;
    c.val_every = o->val_every, c.val_steps = o->val_steps;
    c.metrics = o->metrics;
    c.ckpt_dir = o->ckpt_dir, c.ckpt_every = o->ckpt_every;
    c.resume = t->have_ck ? &t->ck : NULL, c.start_step = t->start_step;
    c.state_json = state_json, c.state_ctx = t;
    c.on_event = on_event, c.event_ctx = t;
    c.trace = o->trace, c.trace_steps = o->trace_steps;
    hp_progress_init(&t->pg, stdout, o->steps, (int)(o->log_every > 0 ? o->log_every : 1));
    HP_TRY(hp_trainer_create(&t->tr, &c));
    return hp_trainer_run(t->tr);
}

int hp_cmd_train(int argc, char **argv) {
    trainer *t = calloc(1, sizeof *t);
    if (!t) return 1;
    hp_status st = setup(t, argc, argv);
    if (!st && !t->finished) st = run(t);
    int rc = 0;
    if (st) {
        hp_progress_done(&t->pg);
        hp_cli_error(st);
        rc = 1;
    }
    hp_trainer_destroy(t->tr);
    if (t->have_ck) hp_ckpt_close(&t->ck);
    free(t->ck_dir);
    hp_data_close(t->train);
    hp_data_close(t->val);
    hp_graph_destroy(t->g);
    if (t->have_plan) hp_plan_free(&t->plan);
    free(t);
    return rc;
}
