/* tools/train: `hyperpar train` — the single-process training loop: data,
 * forward/backward program, clipping, schedule, optimizer, validation,
 * metrics, checkpoints and bit-exact resume. */
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
#include "session.h"
#include "dist_train.h"
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

static float evaluate(hp_session *s, hp_data *val, long nsteps, hp_status *err) {
    hp_data_rewind(val);
    double sum = 0;
    int32_t *tok = hp_program_data(s->eval_prog, s->eval_io.tokens);
    int32_t *tgt = hp_program_data(s->eval_prog, s->eval_io.targets);
    for (long i = 0; i < nsteps; i++) {
        hp_status st = hp_data_next(val, tok, tgt);
        if (!st) st = hp_program_run(s->eval_prog, HP_PHASE_FWD);
        if (st) {
            *err = st;
            return 0;
        }
        sum += ((float *)hp_program_data(s->eval_prog, s->eval_io.loss))[0];
    }
    return (float)(sum / (double)nsteps);
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
    hp_opt tab[64];
    int ntab;
    hp_session s;
    hp_data *train, *val;
    FILE *metrics;
    hp_ckpt ck;
    int have_ck;
    char *ck_dir; /* the checkpoint directory resumed from */
    long start_step;
    int finished; /* setup did all there was to do (--help, a distributed run) */
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
    if (hp_train_is_distributed(o)) {
        t->finished = 1;
        hp_dist_train_ctx ctx = {t->tab, t->ntab, t->have_ck ? &t->ck : NULL, t->ck_dir, t->start_step,
                                 t->have_ck ? &m : NULL};
        return hp_train_distributed(o, &ctx);
    }
    if (o->validate) printf("validation: nothing to validate: a 1-rank run has no layouts (use --plan or --dp/--tp)\n");
    HP_TRY(hp_session_create(&t->s, &m, o->batch, o->seq, o->threads, 1));
    HP_TRY(hp_session_add_eval(&t->s, o->batch, o->seq));
    hp_optim_config oc;
    HP_TRY(hp_train_optim_config(&oc, o));
    HP_TRY(hp_session_add_optimizer(&t->s, &oc));
    HP_TRY(hp_train_open_data(&t->train, o, &t->s.model, 0));
    HP_TRY(hp_train_open_data(&t->val, o, &t->s.model, 1));
    if (t->have_ck) {
        HP_TRY(hp_session_load(&t->s, &t->ck, 1));
        hp_optimizer_set_step(t->s.opt, t->start_step);
        const hp_json *dj = hp_json_get(t->ck.state, "data");
        hp_data_state ds;
        hp_status e = dj ? hp_data_state_from_json(&ds, dj) : hp_errorf("missing key 'data'");
        if (!e) e = hp_data_set_state(t->train, &ds);
        if (e) return hp_error_wrap(e, "%s/state.json: data", o->resume);
    } else if (o->init[0]) {
        HP_TRY(hp_session_import_llmc(&t->s, o->init));
    } else {
        HP_TRY(hp_session_init_params(&t->s, o->seed));
    }
    if (o->metrics[0]) {
        t->metrics = fopen(o->metrics, t->have_ck ? "a" : "w");
        if (!t->metrics) return hp_errorf("%s: cannot open the metrics file for writing", o->metrics);
    }
    return HP_OK;
}

static hp_status save_checkpoint(trainer *t, long step, hp_progress *pg) {
    char dir[1100], *js = NULL;
    snprintf(dir, sizeof dir, "%s/step_%06ld", t->o.ckpt_dir, step);
    hp_data_state ds;
    hp_data_get_state(t->train, &ds);
    HP_TRY(hp_train_state_json(&js, step, &t->s.model, &ds, t->tab, t->ntab));
    hp_status st = hp_session_save(&t->s, dir, js);
    free(js);
    if (!st) hp_progress_note(pg, "checkpoint: %s", dir);
    return st;
}

static hp_status run(trainer *t) {
    train_opts *o = &t->o;
    hp_session *s = &t->s;
    hp_lr_schedule sched = {.lr = o->lr, .warmup_steps = o->warmup, .min_lr_frac = o->min_lr_frac};
    HP_TRY(hp_lr_kind_parse(&sched, o->schedule));
    HP_TRY(hp_lr_schedule_check(&sched));
    hp_progress pg;
    hp_progress_init(&pg, stdout, o->steps, (int)(o->log_every > 0 ? o->log_every : 1));
    long nparams = (long)hp_gpt2_num_params(&s->model);
    hp_progress_note(&pg, "model: L=%d NH=%d C=%d V=%d (Vp %d) maxT=%d, %.2fM parameters; B=%d T=%d, %d threads, %s",
                     s->model.L, s->model.NH, s->model.C, s->model.V, s->model.Vp, s->model.maxT, nparams / 1e6,
                     o->batch, o->seq, o->threads, o->optimizer);
    if (t->start_step) hp_progress_note(&pg, "resumed at step %ld", t->start_step);
    double tokens = (double)o->batch * o->seq, t_start = hp_now(), done_time = 0;
    long done = 0;
    for (long step = t->start_step; step < o->steps; step++) {
        double t0 = hp_now();
        HP_TRY(hp_data_next(t->train, hp_session_tokens(s), hp_session_targets(s)));
        HP_TRY(hp_program_run(s->prog, HP_PHASE_FWD));
        HP_TRY(hp_program_run(s->prog, HP_PHASE_BWD));
        float norm = hp_optimizer_clip_grads(s->opt, o->grad_clip);
        float lr = hp_lr_at(&sched, step, o->steps);
        hp_optimizer_step(s->opt, lr);
        double dt = hp_now() - t0;
        float loss = hp_session_loss(s);
        done++;
        done_time += dt;
        double eta = (double)(o->steps - step - 1) * done_time / (double)done;
        hp_progress_step(&pg, step + 1, loss, tokens / dt, dt * 1e3, lr, eta);
        if (t->metrics) {
            fprintf(t->metrics, "{\"step\": %ld, \"loss\": %.9g, \"lr\": %.9g, \"grad_norm\": %.9g, \"tokens_per_s\": %.1f, \"step_ms\": %.3f}\n",
                    step + 1, (double)loss, (double)lr, (double)norm, tokens / dt, dt * 1e3);
            fflush(t->metrics);
        }
        int last = step + 1 == o->steps, stop = o->stop_at > 0 && step + 1 >= o->stop_at;
        if ((o->val_every > 0 && (step + 1) % o->val_every == 0) || last) {
            hp_status err = HP_OK;
            float vl = evaluate(s, t->val, o->val_steps, &err);
            if (err) return err;
            hp_progress_note(&pg, "step %ld: val loss %.4f", step + 1, (double)vl);
            if (t->metrics) {
                fprintf(t->metrics, "{\"step\": %ld, \"val_loss\": %.9g}\n", step + 1, (double)vl);
                fflush(t->metrics);
            }
        }
        if (o->ckpt_dir[0] && ((o->ckpt_every > 0 && (step + 1) % o->ckpt_every == 0) || last || stop))
            HP_TRY(save_checkpoint(t, step + 1, &pg));
        if (stop) {
            hp_progress_note(&pg, "stopped at step %ld of %ld (--stop-at)", step + 1, o->steps);
            break;
        }
    }
    hp_progress_done(&pg);
    if (done) printf("trained %ld steps in %.1f s (%.0f tok/s)\n", done, hp_now() - t_start, tokens * (double)done / done_time);
    return HP_OK;
}

int hp_cmd_train(int argc, char **argv) {
    trainer *t = calloc(1, sizeof *t);
    if (!t) return 1;
    hp_status st = setup(t, argc, argv);
    if (!st && !t->finished) st = run(t);
    int rc = 0;
    if (st) {
        hp_cli_error(st);
        rc = 1;
    }
    if (t->metrics) fclose(t->metrics);
    if (t->have_ck) hp_ckpt_close(&t->ck);
    free(t->ck_dir);
    hp_data_close(t->train);
    hp_data_close(t->val);
    hp_session_destroy(&t->s);
    free(t);
    return rc;
}
