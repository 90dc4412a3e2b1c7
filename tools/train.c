/* tools/train: `hyperpar train` — the single-process training loop: data,
 * forward/backward program, clipping, schedule, optimizer, validation,
 * metrics, checkpoints and bit-exact resume. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "commands.h"
#include "io/ckpt.h"
#include "io/data.h"
#include "optim/schedule.h"
#include "progress.h"
#include "session.h"

#define DEFAULT_DATA "/usr/share/common-licenses/*"

typedef struct {
    int layers, heads, channels, vocab, max_seq;
    char init[512];
    char data[512], val_data[512];
    float val_fraction;
    int shuffle;
    int batch, seq;
    long steps;
    float lr, beta1, beta2, eps, weight_decay, grad_clip, min_lr_frac;
    char schedule[16];
    long warmup;
    char optimizer[16];
    float muon_lr, muon_beta, muon_weight_decay;
    char muon_momentum[16], muon_scale[16], ns[16], muon_params[256], adamw_params[256];
    uint64_t seed;
    int threads;
    char metrics[512];
    long val_every, val_steps, ckpt_every, log_every, stop_at;
    char ckpt_dir[512], resume[512];
} train_opts;

static void defaults(train_opts *o) {
    memset(o, 0, sizeof *o);
    o->layers = 4, o->heads = 4, o->channels = 128, o->vocab = 256, o->max_seq = 128;
    snprintf(o->data, sizeof o->data, "%s", DEFAULT_DATA);
    o->val_fraction = 0.1f;
    o->batch = 8, o->seq = 128, o->steps = 300;
    o->lr = 1e-3f, o->beta1 = 0.9f, o->beta2 = 0.95f, o->eps = 1e-8f, o->weight_decay = 0.0f;
    o->grad_clip = 1.0f, o->min_lr_frac = 0.1f;
    snprintf(o->schedule, sizeof o->schedule, "cosine");
    o->warmup = 20;
    snprintf(o->optimizer, sizeof o->optimizer, "adamw");
    o->muon_lr = 0.02f, o->muon_beta = 0.95f;
    snprintf(o->muon_momentum, sizeof o->muon_momentum, "ema");
    snprintf(o->muon_scale, sizeof o->muon_scale, "keller");
    snprintf(o->ns, sizeof o->ns, "quintic");
    o->seed = 1337;
    o->threads = 2;
    o->val_every = 100, o->val_steps = 10, o->log_every = 10;
}

#define OPT(n, t, f, h) {n, t, &o->f, sizeof o->f, h}
static int opt_table(hp_opt *t, train_opts *o) {
    hp_opt tab[] = {
        OPT("layers", OPT_INT, layers, "transformer blocks (L)"),
        OPT("heads", OPT_INT, heads, "attention heads (NH)"),
        OPT("channels", OPT_INT, channels, "model width (C)"),
        OPT("vocab", OPT_INT, vocab, "vocabulary size V (256 for raw text)"),
        OPT("max-seq", OPT_INT, max_seq, "position table length (maxT)"),
        OPT("init", OPT_STR, init, "start from an llm.c checkpoint (sets the model shape)"),
        OPT("data", OPT_STR, data, "training data: llm.c token shards (file or glob) or text"),
        OPT("val-data", OPT_STR, val_data, "validation data (default: the last --val-fraction of --data)"),
        OPT("val-fraction", OPT_FLOAT, val_fraction, "share of --data held out for validation"),
        OPT("shuffle", OPT_FLAG, shuffle, "visit B*T windows in a seeded random order per epoch"),
        OPT("batch", OPT_INT, batch, "sequences per step (B)"),
        OPT("seq", OPT_INT, seq, "tokens per sequence (T)"),
        OPT("steps", OPT_LONG, steps, "optimizer steps"),
        OPT("lr", OPT_FLOAT, lr, "peak learning rate (AdamW)"),
        OPT("beta1", OPT_FLOAT, beta1, "AdamW beta1"),
        OPT("beta2", OPT_FLOAT, beta2, "AdamW beta2"),
        OPT("eps", OPT_FLOAT, eps, "AdamW epsilon"),
        OPT("weight-decay", OPT_FLOAT, weight_decay, "decoupled weight decay"),
        OPT("grad-clip", OPT_FLOAT, grad_clip, "clip the global gradient norm (0 = off)"),
        OPT("schedule", OPT_STR, schedule, "constant | cosine | linear"),
        OPT("warmup", OPT_LONG, warmup, "linear warmup steps"),
        OPT("min-lr-frac", OPT_FLOAT, min_lr_frac, "final lr as a fraction of the peak"),
        OPT("optimizer", OPT_STR, optimizer, "adamw | muon (hidden matrices by Muon, the rest AdamW)"),
        OPT("muon-lr", OPT_FLOAT, muon_lr, "Muon peak learning rate"),
        OPT("muon-beta", OPT_FLOAT, muon_beta, "Muon momentum"),
        OPT("muon-weight-decay", OPT_FLOAT, muon_weight_decay, "Muon weight decay"),
        OPT("muon-momentum", OPT_STR, muon_momentum, "ema | sum"),
        OPT("muon-scale", OPT_STR, muon_scale, "keller | moonlight"),
        OPT("ns", OPT_STR, ns, "Newton-Schulz coefficients: quintic | perstep | polar"),
        OPT("muon-params", OPT_STR, muon_params, "extra parameters for Muon (comma-separated globs)"),
        OPT("adamw-params", OPT_STR, adamw_params, "parameters kept on AdamW (comma-separated globs)"),
        OPT("seed", OPT_U64, seed, "random seed (initialisation and data order)"),
        OPT("threads", OPT_INT, threads, "compute threads"),
        OPT("metrics", OPT_STR, metrics, "append one JSON object per step to this file"),
        OPT("val-every", OPT_LONG, val_every, "validate every N steps (0 = only at the end)"),
        OPT("val-steps", OPT_LONG, val_steps, "validation batches"),
        OPT("ckpt-every", OPT_LONG, ckpt_every, "checkpoint every N steps (needs --ckpt-dir)"),
        OPT("ckpt-dir", OPT_STR, ckpt_dir, "directory for checkpoints (step_NNNNNN and 'latest')"),
        OPT("resume", OPT_STR, resume, "continue from a checkpoint directory (or a --ckpt-dir with 'latest')"),
        OPT("log-every", OPT_LONG, log_every, "print a line every N steps when not on a terminal"),
        OPT("stop-at", OPT_LONG, stop_at, "stop (with a checkpoint) once this step is done; --resume continues"),
    };
    int n = (int)(sizeof tab / sizeof tab[0]);
    if (t) memcpy(t, tab, sizeof tab);
    return n;
}
#undef OPT

/* Settings that must not change on resume (the rest may, e.g. --steps). */
static const char *const frozen_on_resume[] = {"layers", "heads", "channels", "vocab", "max-seq", "batch", "seq",
                                               "data", "shuffle", "seed", "optimizer"};

static hp_status check_opts(const train_opts *o) {
    if (o->batch < 1) return hp_errorf("hyperpar train: --batch must be >= 1, got %d", o->batch);
    if (o->seq < 1) return hp_errorf("hyperpar train: --seq must be >= 1, got %d", o->seq);
    if (o->steps < 1) return hp_errorf("hyperpar train: --steps must be >= 1, got %ld", o->steps);
    if (o->threads < 1 || o->threads > 256) return hp_errorf("hyperpar train: --threads must be in 1..256, got %d", o->threads);
    if (!(o->lr > 0)) return hp_errorf("hyperpar train: --lr must be > 0, got %g", (double)o->lr);
    if (o->grad_clip < 0) return hp_errorf("hyperpar train: --grad-clip must be >= 0, got %g", (double)o->grad_clip);
    if (o->ckpt_every > 0 && !o->ckpt_dir[0]) return hp_errorf("hyperpar train: --ckpt-every needs --ckpt-dir");
    if (o->val_steps < 1) return hp_errorf("hyperpar train: --val-steps must be >= 1, got %ld", o->val_steps);
    return HP_OK;
}

static hp_status optim_config(hp_optim_config *c, const train_opts *o) {
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

/* The checkpoint's state.json: step, model, data position and every setting. */
static hp_status state_json(char **out, long step, const hp_gpt2_config *m, const hp_data_state *ds,
                            const hp_opt *tab, int ntab) {
    hp_jw w;
    hp_jw_init(&w);
    hp_jw_object_begin(&w);
    hp_jw_key(&w, "format"), hp_jw_string(&w, "hyperpar-train-1");
    hp_jw_key(&w, "step"), hp_jw_int(&w, step);
    hp_jw_key(&w, "model"), hp_gpt2_config_to_json(&w, m);
    hp_jw_key(&w, "data"), hp_data_state_to_json(&w, ds);
    hp_jw_key(&w, "args");
    hp_jw_object_begin(&w);
    for (int i = 0; i < ntab; i++) {
        char buf[600];
        if (!strcmp(tab[i].name, "resume") || !strcmp(tab[i].name, "init") || !strcmp(tab[i].name, "stop-at")) continue;
        hp_args_format(buf, sizeof buf, &tab[i]);
        hp_jw_key(&w, tab[i].name), hp_jw_string(&w, buf);
    }
    hp_jw_object_end(&w);
    hp_jw_object_end(&w);
    size_t len;
    return hp_jw_finish(out, &len, &w);
}

static hp_status open_data(hp_data **d, const train_opts *o, const hp_gpt2_config *m, int val) {
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
    long start_step;
} trainer;

static hp_status setup(trainer *t, int argc, char **argv) {
    train_opts *o = &t->o;
    defaults(o);
    t->ntab = opt_table(t->tab, o);
    int help = 0;
    /* --resume first: the checkpoint's settings are the defaults of a resumed run. */
    HP_TRY(hp_args_parse(&help, t->tab, t->ntab, argc, argv, 2, "train"));
    if (help) {
        hp_args_usage(t->tab, t->ntab, "train", "Trains a GPT-2 style model (with no flags: a small GPT on text every Debian machine has).");
        return hp_errorf("help");
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
        defaults(o);
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
        st = hp_args_parse(&help, t->tab, t->ntab, argc, argv, 2, "train");
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
        free(dir);
    } else if (o->init[0]) {
        HP_TRY(hp_llmc_model_config(&m, o->init));
    }
    HP_TRY(check_opts(o));
    HP_TRY(hp_session_create(&t->s, &m, o->batch, o->seq, o->threads, 1));
    HP_TRY(hp_session_add_eval(&t->s, o->batch, o->seq));
    hp_optim_config oc;
    HP_TRY(optim_config(&oc, o));
    HP_TRY(hp_session_add_optimizer(&t->s, &oc));
    HP_TRY(open_data(&t->train, o, &t->s.model, 0));
    HP_TRY(open_data(&t->val, o, &t->s.model, 1));
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
    HP_TRY(state_json(&js, step, &t->s.model, &ds, t->tab, t->ntab));
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
    if (!st) st = run(t);
    int rc = 0;
    if (st) {
        if (strcmp(hp_status_msg(st), "help") != 0) {
            fprintf(stderr, "hyperpar: %s\n", hp_status_msg(st));
            rc = 1;
        }
        hp_status_free(st);
    }
    if (t->metrics) fclose(t->metrics);
    if (t->have_ck) hp_ckpt_close(&t->ck);
    hp_data_close(t->train);
    hp_data_close(t->val);
    hp_session_destroy(&t->s);
    free(t);
    return rc;
}
