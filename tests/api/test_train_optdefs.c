/* tests/api/test_train_optdefs: the one table of training options (issue 23
 * item 5) reaches the C API. hp_train_config_default is the table's defaults
 * converted; every option, set to another value, changes the hp_train_config
 * that hp_train_options_config makes, unless it is one of the few that go
 * elsewhere (the model's shape and batch, the plan, what the command resolves
 * itself); and the plan options change the plan hp_train_options_plan makes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hyperpar/hyperpar.h"
#include "testutil.h"

/* The options that do not become an hp_train_config field, and where each goes. */
static const char *const elsewhere[] = {
    "layers", "heads", "channels", "vocab", "max-seq", "batch", "seq", /* the model (hp_model_gpt2) */
    "model",                                                           /* which (hp_model_pangu's presets) */
    "capacity-factor",                                                 /* a MoE model's (hp_model_config) */
    "log-every",                                                       /* the command's progress lines */
    "resume", "trace", "run-dir",                                      /* resolved by the command first */
};

static int goes_elsewhere(const hp_train_optdef *d) {
    if (!strcmp(d->name, "dp-reduce")) return 0; /* a plan setting (for resume) that the config carries */
    if (d->groups & HP_TRAIN_OPT_PLAN) return 1; /* hp_train_options_plan */
    for (size_t i = 0; i < sizeof elsewhere / sizeof elsewhere[0]; i++)
        if (!strcmp(d->name, elsewhere[i])) return 1;
    return 0;
}

/* A value of d other than its default that the checks accept. */
static const char *other_value(char *buf, size_t n, const hp_train_optdef *d) {
    if (!strcmp(d->name, "optimizer")) return "muon";
    if (!strcmp(d->name, "model")) return "pangu-tiny";
    if (!strcmp(d->name, "schedule")) return "linear";
    if (!strcmp(d->name, "det-slices")) return "2";
    if (!strcmp(d->name, "memory")) return "-1";
    if (d->type == HP_OPT_FLAG) return "true";
    if (d->type == HP_OPT_FLOAT) return strcmp(d->def, "0.5") ? "0.5" : "0.25";
    if (d->type == HP_OPT_STR && d->range) { /* the last choice: never the default in this table */
        const char *bar = strrchr(d->range, '|');
        snprintf(buf, n, "%s", bar ? bar + 1 : d->range);
        return buf;
    }
    if (d->type == HP_OPT_STR) {
        snprintf(buf, n, "x-%s", d->name);
        return buf;
    }
    snprintf(buf, n, "%lld", atoll(d->def) + 1);
    return buf;
}

/* The numeric fields of two configs (their strings aside) are the same. */
static int same_numbers(const hp_train_config *a, const hp_train_config *b) {
    hp_train_config x = *a, y = *b;
    const char **xs[] = {&x.muon_momentum, &x.muon_scale, &x.muon_dist, &x.newton_schulz, &x.muon_params, &x.adamw_params,
                         &x.init_llmc, &x.data, &x.val_data, &x.metrics, &x.ckpt_dir, &x.pp_schedule, &x.pp_split, &x.remat, &x.remat_save};
    const char **ys[] = {&y.muon_momentum, &y.muon_scale, &y.muon_dist, &y.newton_schulz, &y.muon_params, &y.adamw_params,
                         &y.init_llmc, &y.data, &y.val_data, &y.metrics, &y.ckpt_dir, &y.pp_schedule, &y.pp_split, &y.remat, &y.remat_save};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) *xs[i] = *ys[i] = NULL;
    x.model = y.model = NULL;
    return !memcmp(&x, &y, sizeof x);
}

/* Two configs differ in a number or in a string's text. */
static int differ(const hp_train_config *a, const hp_train_config *b) {
    if (!same_numbers(a, b)) return 1;
    const char *as[] = {a->muon_momentum, a->muon_scale, a->muon_dist, a->newton_schulz, a->muon_params, a->adamw_params,
                        a->init_llmc, a->data, a->val_data, a->metrics, a->ckpt_dir, a->pp_schedule, a->pp_split, a->remat, a->remat_save};
    const char *bs[] = {b->muon_momentum, b->muon_scale, b->muon_dist, b->newton_schulz, b->muon_params, b->adamw_params,
                        b->init_llmc, b->data, b->val_data, b->metrics, b->ckpt_dir, b->pp_schedule, b->pp_split, b->remat, b->remat_save};
    for (size_t i = 0; i < sizeof as / sizeof as[0]; i++)
        if (strcmp(as[i] ? as[i] : "", bs[i] ? bs[i] : "")) return 1;
    return 0;
}

int main(void) {
    const hp_train_optdef *defs;
    int n = hp_train_optdefs(&defs);
    CHECK(n > 60);

    /* the C API's defaults are the table's */
    static hp_train_options o0;
    hp_train_options_default(&o0);
    CHECK_OK(hp_train_options_check(&o0));
    hp_train_config dflt, conv;
    hp_train_config_default(&dflt, NULL); /* starts from a zeroed config, as conv does */
    memset(&conv, 0, sizeof conv);
    CHECK_OK(hp_train_options_config(&conv, &o0));
    CHECK(same_numbers(&dflt, &conv));
    CHECK(dflt.lr == 1e-3f && dflt.steps == 300 && dflt.seed == 1337 && dflt.warmup_steps == 20);
    CHECK(dflt.comm_timeout_s == 300 && dflt.max_skipped_steps == 10 && dflt.threads == 2 && dflt.overlap == 1);
    CHECK(!dflt.data && !dflt.muon_momentum && !dflt.ckpt_dir); /* strings: NULL, their defaults */
    CHECK(conv.data && !strcmp(conv.data, HP_DEFAULT_DATA));

    /* every option reaches the config, or goes to one of the places named above */
    int reached = 0;
    for (int i = 0; i < n; i++) {
        const hp_train_optdef *d = &defs[i];
        static hp_train_options o;
        o = o0;
        char buf[64];
        const char *v = other_value(buf, sizeof buf, d);
        CHECK_OK(hp_opt_parse((char *)&o + d->offset, d->type, d->size, v, d->name));
        hp_train_config c;
        memset(&c, 0, sizeof c);
        hp_status st = hp_train_options_config(&c, &o);
        if (st) {
            fprintf(stderr, "--%s %s: %s\n", d->name, v, hp_status_msg(st));
            hp_status_free(st);
            CHECK(0);
            continue;
        }
        int changed = differ(&c, &conv);
        if (changed == goes_elsewhere(d)) fprintf(stderr, "--%s %s: config %s\n", d->name, v, changed ? "changed" : "unchanged");
        CHECK(changed != goes_elsewhere(d));
        reached += changed;
    }
    CHECK(reached > 40);

    /* the plan options make the plan: FSDP from fsdp/zero/hsdp with their settings, none for one rank */
    hp_shard_plan *p = NULL;
    CHECK_OK(hp_train_options_plan(&p, &o0, "test"));
    CHECK(p && hp_shard_plan_ranks(p) == 1);
    hp_shard_plan_free(p);
    static hp_train_options o;
    o = o0;
    o.dp = 2, o.tp = 2;
    CHECK_OK(hp_train_options_check(&o));
    CHECK_OK(hp_train_options_plan(&p, &o, "test"));
    CHECK(p && hp_shard_plan_ranks(p) == 4);
    hp_shard_plan_free(p);
    o = o0;
    snprintf(o.hsdp, sizeof o.hsdp, "2,x");
    CHECK_ERR(hp_train_options_plan(&p, &o, "test"), "test: --hsdp must be R,S");
    CHECK(!p);

    /* a range in the table is checked, and named as a flag */
    o = o0;
    o.lr = 0;
    CHECK_ERR(hp_train_options_check(&o), "--lr must be > 0");
    o = o0;
    snprintf(o.dtype, sizeof o.dtype, "fp16");
    CHECK_ERR(hp_train_options_check(&o), "--dtype must be fp32 or bf16, got 'fp16'");
    /* text read as a flag would be */
    float f;
    CHECK_ERR(hp_opt_parse(&f, HP_OPT_FLOAT, 0, "nan", "--lr"), "--lr: expected a finite number");
    char s[4];
    CHECK_ERR(hp_opt_parse(s, HP_OPT_STR, sizeof s, "abcd", "--x"), "longer than 3 characters");
    char t[32];
    hp_opt_format_float(t, sizeof t, 1e-3f);
    CHECK(!strcmp(t, "0.001"));
    return hp_test_finish("test_train_optdefs");
}
