/* tests/cli/train_options_check (ctest cli/test_train_options): walks the one
 * table of `hyperpar train`'s options (tools/hp_train_options) and checks that every
 * option, set to a value other than its default, parses the same from a flag
 * and from a config file, round-trips through a checkpoint's state.json args
 * (the form tools/ckpt_state and the library write, read back as a resume
 * does) unless its group keeps it out, and that each range refuses a value
 * outside it with "--NAME must be". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "api/ckpt_state.h"
#include "ckpt_state.h"
#include "io/json.h"
#include "testutil.h"
#include "train_opts.h"

/* A value of option d other than its default, as a flag gives it. */
static void other_value(char *buf, size_t n, const hp_train_optdef *d) {
    switch (d->type) {
    case HP_OPT_FLAG: snprintf(buf, n, "true"); break;
    case HP_OPT_FLOAT: snprintf(buf, n, "%s", strcmp(d->def, "0.5") ? "0.5" : "0.25"); break;
    case HP_OPT_STR:
        if (d->range) { /* the first choice that is not the default */
            const char *s = d->range;
            for (;;) {
                const char *bar = strchr(s, '|');
                size_t len = bar ? (size_t)(bar - s) : strlen(s);
                if (len != strlen(d->def) || strncmp(s, d->def, len)) {
                    snprintf(buf, n, "%.*s", (int)len, s);
                    return;
                }
                if (!bar) break;
                s = bar + 1;
            }
            snprintf(buf, n, "%s", d->def);
        } else {
            snprintf(buf, n, "x-%s", d->name);
        }
        break;
    default: snprintf(buf, n, "%lld", atoll(d->def) + 1); break;
    }
}

/* A value outside d's range (ranges of numbers: one past the bound). */
static void bad_value(char *buf, size_t n, const hp_train_optdef *d) {
    const char *r = d->range;
    if (d->type == HP_OPT_STR) snprintf(buf, n, "bogus");
    else if (r[0] == '>') snprintf(buf, n, "%g", strtod(r + (r[1] == '=' ? 2 : 1), NULL) - (r[1] == '=' ? 1 : 0));
    else if (r[0] == '[') {
        char *end;
        strtod(r + 1, &end);
        double hi = strtod(end + 1, &end);
        snprintf(buf, n, "%g", *end == ']' ? hi + 1 : hi);
    } else {
        char *end;
        strtol(r, &end, 10);
        snprintf(buf, n, "%ld", strtol(end + 2, NULL, 10) + 1);
    }
}

static int same_field(const hp_train_options *a, const hp_train_options *b, const hp_train_optdef *d) {
    return !memcmp((const char *)a + d->offset, (const char *)b + d->offset, d->size);
}

/* Every field of got equals want's (naming the first that differs). */
static void check_all(const hp_train_options *got, const hp_train_options *want, const char *how, const char *name) {
    const hp_train_optdef *defs;
    int n = hp_train_optdefs(&defs);
    for (int i = 0; i < n; i++)
        CHECKF(same_field(got, want, &defs[i]), "%s of --%s: --%s differs\n", how, name, defs[i].name);
}

static hp_status parse(hp_train_options *o, int argc, char **argv) {
    hp_opt tab[HP_TRAIN_MAX_OPTS];
    hp_train_options_default(o);
    int n = hp_train_opt_table(tab, o), help;
    return hp_args_parse(&help, tab, n, argc, argv, 2, "train");
}

int main(void) {
    const hp_train_optdef *defs;
    int n = hp_train_optdefs(&defs);
    CHECK(n <= HP_TRAIN_MAX_OPTS);
    hp_train_options dflt;
    hp_train_options_default(&dflt);
    CHECK_OK(hp_train_options_check(&dflt)); /* the defaults pass every check */
    hp_model_config mc = {.layers = 1, .heads = 1, .channels = 8, .vocab = 16, .max_seq = 4};
    hp_model *m = NULL;
    CHECK_OK(hp_model_gpt2(&m, &mc, 1, 4));
    char cfg[] = "/tmp/hp_train_options_XXXXXX";
    int fd = mkstemp(cfg);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    for (int i = 0; i < n && m; i++) {
        const hp_train_optdef *d = &defs[i];
        CHECKF(hp_train_optdef_find(d->name) == d, "--%s is defined twice\n", d->name);
        char value[128], flag[160];
        other_value(value, sizeof value, d);
        /* what the value should give: the defaults with this one option set */
        hp_train_options want = dflt;
        hp_opt wtab[HP_TRAIN_MAX_OPTS];
        int nt = hp_train_opt_table(wtab, &want);
        CHECK_OK(hp_args_set(wtab, nt, d->name, value, "test"));
        CHECKF(!same_field(&want, &dflt, d), "--%s %s is its default\n", d->name, value);
        /* a flag (a boolean one alone) */
        hp_train_options got;
        snprintf(flag, sizeof flag, "--%s", d->name);
        char *argv1[] = {"hyperpar", "train", flag, value};
        CHECK_OK(parse(&got, d->type == HP_OPT_FLAG ? 3 : 4, argv1));
        check_all(&got, &want, "the flag", d->name);
        /* a config file */
        FILE *f = fopen(cfg, "w");
        CHECK(f != NULL);
        if (f) {
            fprintf(f, "# one setting\n%s = %s\n", d->name, value);
            fclose(f);
        }
        char *argv2[] = {"hyperpar", "train", "--config", cfg};
        hp_train_options got2;
        CHECK_OK(parse(&got2, 4, argv2));
        check_all(&got2, &want, "the config file", d->name);
        /* state.json's args: written as a checkpoint writes them, read back as a resume reads them */
        hp_opt tab[HP_TRAIN_MAX_OPTS];
        nt = hp_train_opt_table(tab, &got);
        hp_ckpt_args a;
        hp_ckpt_args_fill(&a, tab, nt);
        hp_data_state ds = {0};
        char *json = NULL;
        hp_json *js = NULL;
        CHECK_OK(hp_api_state_json(&json, 3, m, &ds, "adamw", a.n, a.keys, a.values, NULL));
        if (json) CHECK_OK(hp_json_parse(&js, json, strlen(json)));
        const hp_json *args = js ? hp_json_get(js, "args") : NULL;
        CHECK(args && args->type == HP_JSON_OBJECT);
        hp_train_options back;
        hp_train_options_default(&back);
        hp_opt btab[HP_TRAIN_MAX_OPTS];
        nt = hp_train_opt_table(btab, &back);
        int saved = 0;
        for (int k = 0; args && k < args->n; k++) {
            CHECK_OK(hp_args_set(btab, nt, args->keys[k], args->items[k].str, "state.json"));
            saved |= !strcmp(args->keys[k], d->name);
        }
        int unsaved = (d->groups & HP_TRAIN_OPT_UNSAVED) != 0;
        CHECKF(saved == !unsaved, "--%s: in state.json %d, expected %d\n", d->name, saved, !unsaved);
        check_all(&back, unsaved ? &dflt : &want, "state.json", d->name);
        hp_json_free(js);
        free(json);
        /* the range refuses a value outside it, naming the option */
        if (d->range) {
            char bad[64], needle[96];
            bad_value(bad, sizeof bad, d);
            hp_train_options o = dflt;
            hp_opt otab[HP_TRAIN_MAX_OPTS];
            nt = hp_train_opt_table(otab, &o);
            CHECK_OK(hp_args_set(otab, nt, d->name, bad, "test"));
            snprintf(needle, sizeof needle, "--%s must be ", d->name);
            CHECK_ERR(hp_train_options_check(&o), needle);
        }
    }
    /* the groups the resume rules read */
    CHECK(hp_train_opt_in("dp-reduce", HP_TRAIN_OPT_PLAN) && hp_train_opt_in("hsdp", HP_TRAIN_OPT_PLAN));
    CHECK(hp_train_opt_in("seed", HP_TRAIN_OPT_FROZEN) && !hp_train_opt_in("steps", HP_TRAIN_OPT_FROZEN));
    CHECK(hp_train_opt_in("resume", HP_TRAIN_OPT_INVOCATION) && hp_train_opt_in("run-dir", HP_TRAIN_OPT_UNSAVED));
    unlink(cfg);
    hp_model_free(m);
    return hp_test_finish("test_train_options");
}
