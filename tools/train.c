/* tools/train: `hyperpar train` — the options (flags, config file, a
 * checkpoint's settings on --resume), the model, then the public trainer
 * (hp_train: one rank, rank-threads or MPI processes) with this file printing
 * its events. Uses include/hyperpar/hyperpar.h alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "ckpt_state.h"
#include "commands.h"
#include "hyperpar/hyperpar.h"
#include "progress.h"
#include "train_opts.h"

typedef struct {
    hp_train_options o;
    hp_opt tab[HP_TRAIN_MAX_OPTS];
    int ntab;
    hp_model_config m;
    hp_model *model;
    hp_shard_plan *plan; /* NULL: one rank */
    int micro_batch, grad_accum; /* the model's batch, the micro-batches per step (hp_train_micro_batch) */
    hp_ckpt_info *ck;    /* the checkpoint resumed from, or NULL */
    hp_ckpt_args args;   /* the settings each checkpoint keeps */
    int finished;        /* setup did all there was to do (--help) */
    hp_progress pg;
    hp_train *tr;
    /* the run directory: where each setting came from, the values as text */
    char run_dir[600], trace[640];
    const char *src[HP_TRAIN_MAX_OPTS];
    char text[HP_TRAIN_MAX_OPTS][600];
    hp_run_setting settings[HP_TRAIN_MAX_OPTS];
    char command[4096];
    const char *prog; /* argv[0] */
    char saved_plan[256], resumed[1600]; /* --resume: the checkpoint's plan; the line that says what resumed */
} trainer;

/* Sets option i of t back to its default. */
static hp_status set_default(trainer *t, int i) {
    const hp_train_optdef *d = hp_train_optdef_find(t->tab[i].name);
    return hp_args_set(t->tab, t->ntab, t->tab[i].name, d->def, "hyperpar train: defaults");
}

/* After a checkpoint's settings were applied: the outputs of one invocation
 * back to their defaults, and with plan (a plan setting given now) every plan
 * setting too. */
static hp_status reset_to_defaults(trainer *t, int plan) {
    for (int i = 0; i < t->ntab; i++)
        if (hp_train_opt_in(t->tab[i].name, HP_TRAIN_OPT_INVOCATION | (plan ? HP_TRAIN_OPT_PLAN : 0)))
            HP_TRY(set_default(t, i));
    return HP_OK;
}

/* --init-hf: the shape config.json gives (GPT-2: it sets the shape flags, as --init does; a named preset: it
 * must be the preset's, field by field). */
static hp_status hf_shape(hp_model_config *m, hp_train_options *o) {
    hp_model_config h;
    char fam[16];
    HP_TRY(hp_hf_model_config(&h, fam, sizeof fam, o->init_hf));
    const char *mf = hp_model_family_name(o->model);
    if (!mf || strcmp(fam, mf))
        return hp_errorf("hyperpar train: --init-hf %s holds a %s model; --model %s is %s (give a --model of that "
                         "family)", o->init_hf, fam, o->model, mf ? mf : "unknown");
    if (!strcmp(fam, "gpt2")) {
        *m = h;
        return hp_train_shape_resolve(o, m, o->init_hf, "train");
    }
    HP_TRY(hp_model_config_named(m, o->model));
    int C = m->channels, F = m->ffn > 0 ? m->ffn : (8 * C / 3 + 255) / 256 * 256;
    int Fe = m->expert_ffn > 0 ? m->expert_ffn : F;
    const struct {
        const char *key;
        int hf, ours;
    } f[] = {{"num_hidden_layers", h.layers, m->layers},
             {"num_attention_heads", h.heads, m->heads},
             {"hidden_size", h.channels, C},
             {"vocab_size", h.vocab, m->vocab},
             {"max_position_embeddings", h.max_seq, m->max_seq},
             {"num_key_value_heads", h.kv_heads, m->kv_heads > 0 ? m->kv_heads : m->heads},
             {"intermediate_size", m->experts ? h.expert_ffn : h.ffn, m->experts ? Fe : F},
             {"num_local_experts", h.experts, m->experts},
             {"num_experts_per_tok", h.top_k, m->experts ? m->top_k : 0}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].hf != f[i].ours)
            return hp_errorf("hyperpar train: %s/config.json: %s is %d, --model %s has %d", o->init_hf, f[i].key,
                             f[i].hf, o->model, f[i].ours);
    float th = m->rope_theta > 0 ? m->rope_theta : 10000.0f;
    if (h.rope_theta != th)
        return hp_errorf("hyperpar train: %s/config.json: rope_theta is %g, --model %s has %g", o->init_hf,
                         (double)h.rope_theta, o->model, (double)th);
    if (m->shared_experts > 0)
        return hp_errorf("hyperpar train: --model %s has shared experts, which Mixtral's layout has no place for",
                         o->model);
    char what[48];
    snprintf(what, sizeof what, "--model %s", o->model);
    return hp_train_shape_resolve(o, m, what, "train");
}

/* The checkpoint directory a resumed checkpoint lives in: the parent of a
 * step_N, else (a checkpoint on its own) none. */
static hp_status resumed_from_dir(char *out, size_t n, const char *ckpt) {
    const char *slash = strrchr(ckpt, '/');
    const char *base = slash ? slash + 1 : ckpt;
    out[0] = 0;
    size_t digits = strncmp(base, "step_", 5) ? 0 : strspn(base + 5, "0123456789");
    const char *rest = base + 5 + digits;
    /* step_N, or step_N.old-X (a save that crashed between its renames: recovery moves it back) */
    if (!digits || (*rest && strncmp(rest, ".old-", 5))) return HP_OK;
    int len = slash ? (int)(slash - ckpt) : 1;
    if (snprintf(out, n, "%.*s", len, slash ? ckpt : ".") >= (int)n)
        return hp_errorf("hyperpar train: %s: the checkpoint directory's path is too long", ckpt);
    return HP_OK;
}

/* The run directory (--run-dir; by default runs/<time> unless --metrics is
 * given; "none": none) and --trace on (the run directory's trace prefix). */
static hp_status resolve_run_dir(trainer *t) {
    const hp_train_options *o = &t->o;
    if (!strcmp(o->run_dir, "none")) t->run_dir[0] = 0;
    else if (o->run_dir[0]) snprintf(t->run_dir, sizeof t->run_dir, "%s", o->run_dir);
    else if (!o->metrics[0]) HP_TRY(hp_run_dir_default(t->run_dir, (int)sizeof t->run_dir, "runs"));
    snprintf(t->trace, sizeof t->trace, "%s", o->trace);
    if (!strcmp(o->trace, "on")) {
        if (!t->run_dir[0]) return hp_errorf("hyperpar train: --trace on puts the traces in the run directory, and there is none (--run-dir DIR)");
        snprintf(t->trace, sizeof t->trace, "%s/trace", t->run_dir);
    }
    return HP_OK;
}

/* The index of option `name` in t's table. */
static int opt_index(const trainer *t, const char *name) {
    for (int i = 0; i < t->ntab; i++)
        if (!strcmp(t->tab[i].name, name)) return i;
    return -1;
}

/* A fresh run's warmup, when not given: a tenth of --steps, at most 20 (a
 * short run is not all warmup). A warmup covering every step is said once. */
static void default_warmup(trainer *t) {
    hp_train_options *o = &t->o;
    int i = opt_index(t, "warmup");
    if (!t->ck && i >= 0 && !strcmp(t->src[i], "default")) o->warmup = o->steps / 10 < 20 ? o->steps / 10 : 20;
    if (o->warmup >= o->steps && o->steps > 1 && strcmp(o->schedule, "constant"))
        fprintf(stderr, "hyperpar: warning: --warmup %ld covers all %ld steps: the learning rate never decays\n",
                o->warmup, o->steps);
}

/* --ckpt-dir none: no checkpoints; not given: a run with a run directory
 * keeps its checkpoints (by default only the last) in RUN_DIR/ckpt, so that
 * `hyperpar sample --ckpt RUN_DIR` works on any run. */
static hp_status default_ckpt_dir(trainer *t) {
    hp_train_options *o = &t->o;
    if (!strcmp(o->ckpt_dir, "none")) {
        o->ckpt_dir[0] = 0;
    } else if (!o->ckpt_dir[0] && t->run_dir[0]) {
        if (snprintf(o->ckpt_dir, sizeof o->ckpt_dir, "%s/ckpt", t->run_dir) >= (int)sizeof o->ckpt_dir)
            return hp_errorf("hyperpar train: --run-dir %s: the path is too long", t->run_dir);
    }
    /* resumed from a checkpoint on its own, with nowhere to write: the inherited saving settings lapse */
    for (int i = 0; i < t->ntab && t->ck && !o->ckpt_dir[0]; i++)
        if (!strcmp(t->src[i], "default") && (!strcmp(t->tab[i].name, "ckpt-every") || !strcmp(t->tab[i].name, "keep-last")))
            HP_TRY(set_default(t, i));
    return HP_OK;
}

/* Every setting's value and source (flag, config file, checkpoint or default), and the command line. */
static hp_status record_settings(trainer *t, int argc, char **argv) {
    for (int i = 0; i < t->ntab; i++) {
        if (t->ck && !strcmp(t->src[i], "default"))
            for (int k = 0; k < hp_ckpt_info_nargs(t->ck); k++) {
                const char *key, *value;
                hp_ckpt_info_arg(t->ck, k, &key, &value);
                if (!strcmp(key, t->tab[i].name)) t->src[i] = "checkpoint";
            }
        hp_args_format(t->text[i], sizeof t->text[i], &t->tab[i]);
        t->settings[i] = (hp_run_setting){t->tab[i].name, t->text[i], t->src[i]};
    }
    size_t used = 0;
    for (int i = 0; i < argc && used + 2 < sizeof t->command; i++) {
        int w = snprintf(t->command + used, sizeof t->command - used, "%s%s", i ? " " : "", argv[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    if (used >= sizeof t->command) used = sizeof t->command - 1;
    return HP_OK;
}

static hp_status setup(trainer *t, int argc, char **argv) {
    hp_train_options *o = &t->o;
    hp_train_options_default(o);
    hp_train_shape_unset(o); /* to tell a shape flag given from its default (--init) */
    if (hp_train_opt_table(NULL, o) > HP_TRAIN_MAX_OPTS)
        return hp_errorf("hyperpar train: %d options, room for %d (HP_TRAIN_MAX_OPTS)", hp_train_opt_table(NULL, o),
                         HP_TRAIN_MAX_OPTS);
    t->ntab = hp_train_opt_table(t->tab, o);
    int help = 0;
    /* --resume first: the checkpoint's settings are the defaults of a resumed run. */
    HP_TRY(hp_args_parse_sources(t->src, &help, t->tab, t->ntab, argc, argv, 2, "train"));
    int given[HP_TRAIN_MAX_OPTS]; /* set now, by a flag or the config file */
    for (int i = 0; i < t->ntab; i++) given[i] = strcmp(t->src[i], "default") != 0;
    if (help) {
        hp_train_options_default(o); /* the real defaults in place of the shape markers (the table points into o) */
        hp_args_usage(t->tab, t->ntab, "train", "Trains a GPT-2 style model (with no flags: a small GPT on text every Debian machine has).");
        t->finished = 1;
        return HP_OK;
    }
    hp_model_config m;
    if (o->resume[0]) {
        HP_TRY(hp_ckpt_info_open(&t->ck, o->resume));
        const char *dir = hp_ckpt_info_dir(t->ck);
        int nargs = hp_ckpt_info_nargs(t->ck);
        if (nargs < 0) return hp_errorf("%s/state.json: missing object 'args'", dir);
        char where[1200];
        snprintf(where, sizeof where, "%s/state.json: args", dir);
        hp_train_options_default(o);
        for (int i = 0; i < nargs; i++) {
            const char *key, *value;
            hp_ckpt_info_arg(t->ck, i, &key, &value);
            HP_TRY(hp_args_set(t->tab, t->ntab, key, value, where));
        }
        /* flags given now win, except the frozen ones, which must agree; plan settings given now replace the
         * checkpoint's plan as a whole */
        char saved[HP_TRAIN_MAX_OPTS][600];
        for (int i = 0; i < t->ntab; i++)
            if (hp_train_opt_in(t->tab[i].name, HP_TRAIN_OPT_FROZEN)) hp_args_format(saved[i], sizeof saved[i], &t->tab[i]);
        hp_train_plan_describe(t->saved_plan, sizeof t->saved_plan, o);
        int new_plan = 0;
        for (int i = 0; i < t->ntab; i++) new_plan |= given[i] && hp_train_opt_in(t->tab[i].name, HP_TRAIN_OPT_PLAN);
        HP_TRY(reset_to_defaults(t, new_plan));
        hp_status st = hp_args_parse_sources(t->src, &help, t->tab, t->ntab, argc, argv, 2, "train");
        for (int i = 0; i < t->ntab && !st; i++) {
            char now[600];
            if (!hp_train_opt_in(t->tab[i].name, HP_TRAIN_OPT_FROZEN)) continue;
            hp_args_format(now, sizeof now, &t->tab[i]);
            if (strcmp(now, saved[i]))
                st = hp_errorf("hyperpar train: --%s %s differs from the checkpoint's %s (%s)", t->tab[i].name, now,
                               saved[i], dir);
        }
        if (st) return st;
        char plan_now[256];
        hp_train_plan_describe(plan_now, sizeof plan_now, o);
        snprintf(t->resumed, sizeof t->resumed, "resumed at step %ld from %s (saved under %s), now under %s%s",
                 hp_ckpt_info_step(t->ck), dir, t->saved_plan, plan_now,
                 new_plan ? " (the plan given now)" : " (the checkpoint's plan)");
        /* checkpoints go where this run resumed from unless --ckpt-dir says otherwise */
        if (!o->ckpt_dir[0]) HP_TRY(resumed_from_dir(o->ckpt_dir, sizeof o->ckpt_dir, dir));
        if (strcmp(o->model, "gpt2")) { /* a named model: its preset (and the shape flags saved in args) */
            HP_TRY(hp_model_config_named(&m, o->model));
            char what[48];
            snprintf(what, sizeof what, "--model %s", o->model);
            HP_TRY(hp_train_shape_resolve(o, &m, what, "train"));
        } else {
            hp_ckpt_info_model(t->ck, &m);
        }
    } else if (o->init[0]) {
        HP_TRY(hp_model_config_llmc(&m, o->init));
        HP_TRY(hp_train_shape_resolve(o, &m, o->init, "train"));
    } else if (o->init_hf[0]) {
        HP_TRY(hf_shape(&m, o));
    } else if (strcmp(o->model, "gpt2")) { /* a named model's preset sets the shape, as --init does */
        HP_TRY(hp_model_config_named(&m, o->model));
        char what[48];
        snprintf(what, sizeof what, "--model %s", o->model);
        HP_TRY(hp_train_shape_resolve(o, &m, what, "train"));
    } else {
        HP_TRY(hp_train_shape_resolve(o, NULL, NULL, "train"));
        m = (hp_model_config){.layers = o->layers, .heads = o->heads, .channels = o->channels, .vocab = o->vocab, .max_seq = o->max_seq};
    }
    HP_TRY(resolve_run_dir(t));
    HP_TRY(default_ckpt_dir(t));
    default_warmup(t);
    HP_TRY(hp_train_options_check(o));
    t->m = m;
    if (hp_train_is_distributed(o)) {
        HP_TRY(hp_train_options_plan(&t->plan, o, "hyperpar train"));
    } else if (o->validate) {
        printf("validation: nothing to validate: a 1-rank run has no layouts (use --plan or --dp/--tp)\n");
    }
    HP_TRY(hp_train_micro_batch(&t->micro_batch, &t->grad_accum, o));
    if (o->capacity_factor > 0) t->m.capacity_factor = o->capacity_factor;
    HP_TRY(hp_model_named(&t->model, o->model, &t->m, t->micro_batch, o->seq));
    hp_ckpt_args_fill(&t->args, t->tab, t->ntab);
    return record_settings(t, argc, argv);
}

/* The kernel families the run's dtype uses and the ISA each runs on. */
static void print_kernels(hp_progress *pg, int bf16) {
    static const char *const f32_families[] = {"gemm fp32 (OpenBLAS)", "hand-written fp32"};
    static const char *const bf16_families[] = {"gemm bf16 (oneDNN)", "bf16 conversions", "hand-written bf16"};
    const char *const *want = bf16 ? bf16_families : f32_families;
    int nwant = bf16 ? 3 : 2;
    hp_kernel_isa rows[HP_KERNEL_ISA_MAX];
    int n = hp_kernels_isa(rows);
    char line[512] = "";
    size_t at = 0;
    for (int w = 0; w < nwant; w++)
        for (int i = 0; i < n; i++)
            if (!strcmp(rows[i].family, want[w]) && at < sizeof line)
                at += (size_t)snprintf(line + at, sizeof line - at, "%s%s %s", at ? ", " : "", rows[i].family,
                                       rows[i].isa);
    hp_progress_note(pg, "kernels: %s", line);
    for (int i = 0; bf16 && i < n; i++)
        if (!strcmp(rows[i].family, "gemm bf16 (oneDNN)") && !strstr(rows[i].isa, "amx") && !strstr(rows[i].isa, "bf16"))
            hp_progress_note(pg, "note: this CPU has neither AVX512-BF16 nor AMX: bf16 is emulated (%s) and slower than "
                                 "fp32 here",
                             rows[i].isa);
}

static void on_event(void *ctx, const hp_event *e) {
    trainer *t = ctx;
    const hp_train_options *o = &t->o;
    const hp_model_config *m = &t->m;
    hp_progress *pg = &t->pg;
    switch (e->kind) {
    case HP_EVENT_START:
        if (!t->plan)
            hp_progress_note(pg, "model: L=%d NH=%d C=%d V=%d (Vp %d) maxT=%d, %.2fM parameters; B=%d T=%d, %d threads, %s",
                             m->layers, m->heads, m->channels, m->vocab, hp_model_padded_vocab(t->model), m->max_seq,
                             e->nparams / 1e6, o->batch, o->seq, o->threads, o->optimizer);
        else
            hp_progress_note(pg, "model: L=%d NH=%d C=%d V=%d, %.2fM parameters; B=%d T=%d; mesh %s (%d ranks, %d here), %s",
                             m->layers, m->heads, m->channels, m->vocab, e->nparams / 1e6, o->batch, o->seq, e->mesh,
                             e->ranks, e->ranks_here, o->optimizer);
        if (e->fsdp_summary) hp_progress_note(pg, "fsdp: %s", e->fsdp_summary);
        if (e->memory) {
            const hp_plan_memory *mm = e->memory;
            hp_progress_note(pg, "memory of rank 0: %.2f MB (parameters %.2f, gradients %.2f, optimizer state %.2f, "
                                 "activations %.2f, scratch and inputs %.2f)",
                             mm->total / 1e6, mm->params / 1e6, mm->grads / 1e6, mm->optimizer / 1e6,
                             mm->activations / 1e6, (mm->scratch + mm->inputs) / 1e6);
        }
        print_kernels(pg, !strcmp(o->dtype, "bf16"));
        if (e->start_step) hp_progress_note(pg, "%s", t->resumed);
        if (t->run_dir[0]) hp_progress_note(pg, "run directory: %s", t->run_dir);
        break;
    case HP_EVENT_VALIDATED: {
        const hp_validation *rep = e->validation;
        if (!rep) break;
        char own[96] = "";
        if (rep->own_order)
            snprintf(own, sizeof own, ", %d in the ranks' own row orders not compared", rep->own_order);
        hp_progress_note(pg, "validation: %d operators checked, every layout and value agrees (%d redistributions, %d "
                             "values%s; loss %.6f, 1 rank %.6f)",
                         rep->checked_ops, rep->redistributions, rep->values, own, (double)rep->loss,
                         (double)rep->ref_loss);
        hp_progress_note(pg, "validation: gradient equivalence against 1 rank (max relative error per parameter):");
        for (int i = 0; i < rep->ngrads; i++)
            hp_progress_note(pg, "  %-28s %-20s %.3g", rep->grads[i].name, rep->grads[i].layout, rep->grads[i].rel_err);
        hp_progress_note(pg, "validation: worst gradient relative error %.3g (%s)", rep->worst,
                         rep->worst_index >= 0 ? rep->grads[rep->worst_index].name : "-");
        if (rep->nupdates) {
            hp_progress_note(pg, "validation: Muon update equivalence against 1 rank (max error over the update's "
                                 "size, per matrix; count x rows x cols):");
            for (int i = 0; i < rep->nupdates; i++)
                hp_progress_note(pg, "  %-28s %-20s %.3g", rep->updates[i].name, rep->updates[i].layout,
                                 rep->updates[i].rel_err);
            hp_progress_note(pg, "validation: worst Muon update error %.3g", rep->worst_update);
        }
        break;
    }
    case HP_EVENT_STEP:
        hp_progress_step(pg, e->step, e->loss, e->tokens_per_s, e->step_ms, e->lr, e->eta_s);
        if (e->nonfinite && !strcmp(o->on_nan, "skip-step"))
            hp_progress_note(pg, "step %ld: loss %g, gradient norm %g: not finite, the step was skipped (--on-nan "
                                 "skip-step)",
                             e->step, (double)e->loss, (double)e->grad_norm);
        break;
    case HP_EVENT_VAL: hp_progress_note(pg, "step %ld: val loss %.4f", e->step, (double)e->val_loss); break;
    case HP_EVENT_CKPT: hp_progress_note(pg, "checkpoint: %s", e->dir); break;
    case HP_EVENT_STOPPED: hp_progress_note(pg, "stopped at step %ld of %ld (--stop-at)", e->step, o->steps); break;
    case HP_EVENT_NOTE: hp_progress_note(pg, "%s", e->message); break;
    case HP_EVENT_WARNING:
        hp_progress_done(pg);
        fprintf(stderr, "hyperpar: warning: %s\n", e->message);
        break;
    case HP_EVENT_DONE:
        hp_progress_done(pg);
        if (e->steps_done)
            printf("trained %ld steps in %.1f s (%.0f tok/s)\n", e->steps_done, e->seconds, e->tokens_per_s);
        break;
    }
}

static hp_status run(trainer *t) {
    const hp_train_options *o = &t->o;
    hp_train_config c;
    hp_train_config_default(&c, t->model);
    c.plan = t->plan;
    HP_TRY(hp_train_options_config(&c, o)); /* every option's field; then what this command resolved itself */
    c.validate = o->validate && t->plan;
    c.init_llmc = t->ck ? NULL : c.init_llmc;
    c.ckpt_nargs = t->args.n, c.ckpt_arg_keys = t->args.keys, c.ckpt_arg_values = t->args.values;
    c.resume = t->ck ? hp_ckpt_info_dir(t->ck) : NULL;
    c.trace = t->trace;
    c.run_dir = t->run_dir[0] ? t->run_dir : NULL;
    c.run_nsettings = t->ntab, c.run_settings = t->settings, c.run_command = t->command;
    c.on_event = on_event, c.event_ctx = t;
    hp_progress_init(&t->pg, stdout, o->steps, (int)(o->log_every > 0 ? o->log_every : 1));
    HP_TRY(hp_train_create(&t->tr, &c));
    HP_TRY(hp_train_run(t->tr));
    if (o->ckpt_dir[0] && hp_train_is_lead(t->tr)) { /* how to use what was trained */
        size_t rn = strlen(t->run_dir);
        int in_run = rn && !strncmp(o->ckpt_dir, t->run_dir, rn) && !strcmp(o->ckpt_dir + rn, "/ckpt");
        const char *where = in_run ? t->run_dir : o->ckpt_dir;
        if (!strcmp(o->model, "gpt2")) /* sampling runs GPT-2; other models' weights go out to Hugging Face */
            printf("sample from it: %s sample --ckpt %s%s\n", t->prog, where,
                   o->vocab == 256 ? " --prompt \"The \"" : " --tokenizer DIR --prompt \"...\"");
        else if (strncmp(o->model, "pangu-", 6) && t->m.shared_experts == 0) /* Llama, Mixtral-style MoE */
            printf("export it: %s export --ckpt %s --hf DIR\n", t->prog, where);
    }
    return HP_OK;
}

int hp_cmd_train(int argc, char **argv) {
    trainer *t = calloc(1, sizeof *t);
    if (!t) return 1;
    t->prog = argv[0];
    hp_status st = setup(t, argc, argv);
    if (!st && !t->finished) st = run(t);
    int rc = 0;
    if (st) {
        hp_progress_done(&t->pg);
        hp_cli_error(st);
        rc = 1;
    }
    hp_train_free(t->tr);
    hp_ckpt_info_free(t->ck);
    hp_model_free(t->model);
    hp_shard_plan_free(t->plan);
    free(t);
    return rc;
}
