#include "args.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static hp_status set_value(const hp_opt *o, const char *val, const char *where) {
    return hp_opt_parse(o->ptr, o->type, o->cap, val, where);
}

static const hp_opt *find_opt(const hp_opt *opts, int n, const char *name, size_t len) {
    for (int i = 0; i < n; i++)
        if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0) return &opts[i];
    return NULL;
}

/* 1 when --help (or -h) stands among the flags of argv[first..argc) as a flag,
 * not as the value of another (walked as pass 2 walks them). Stops at the
 * first argument pass 2 would refuse, so that its error still comes first. */
static int asks_help(const hp_opt *opts, int nopts, int argc, char **argv, int first) {
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return 1;
        if (strncmp(a, "--", 2) != 0) return 0;
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const hp_opt *o = find_opt(opts, nopts, name, len);
        int is_config = len == 6 && !strncmp(name, "config", 6);
        if (!o && !is_config) return 0;
        if (!eq && (is_config || o->type != HP_OPT_FLAG || (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0))) i++;
    }
    return 0;
}

hp_status hp_args_parse(int *help, const hp_opt *opts, int nopts, int argc, char **argv, int first,
                        const char *cmd) {
    return hp_args_parse_sources(NULL, help, opts, nopts, argc, argv, first, cmd);
}

hp_status hp_args_parse_sources(const char **src, int *help, const hp_opt *opts, int nopts, int argc, char **argv,
                                int first, const char *cmd) {
    *help = 0;
    for (int i = 0; src && i < nopts; i++) src[i] = "default";
    /* --help: nothing applied, so the table still holds the defaults it shows */
    if (asks_help(opts, nopts, argc, argv, first)) {
        *help = 1;
        return HP_OK;
    }
    /* Pass 1: the config file, if any. */
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        const char *path = NULL;
        if (!strcmp(a, "--config")) {
            if (i + 1 >= argc) return hp_errorf("hyperpar %s: --config needs a file", cmd);
            path = argv[i + 1];
        } else if (!strncmp(a, "--config=", 9)) {
            path = a + 9;
        }
        if (!path) continue;
        hp_settings *cfg;
        HP_TRY(hp_settings_load(&cfg, path));
        for (int k = 0; k < hp_settings_count(cfg); k++) {
            const char *key, *value;
            int line;
            hp_settings_entry(cfg, k, &key, &value, &line);
            const hp_opt *o = find_opt(opts, nopts, key, strlen(key));
            char where[600];
            snprintf(where, sizeof where, "%.400s:%d: key '%.100s'", hp_settings_file(cfg), line, key);
            if (!o || !strcmp(key, "config")) {
                hp_status s = hp_errorf("%s: unknown setting", where);
                hp_settings_free(cfg);
                return s;
            }
            hp_status s = set_value(o, value, where);
            if (s) {
                hp_settings_free(cfg);
                return s;
            }
            if (src) src[o - opts] = "config";
        }
        hp_settings_free(cfg);
    }
    /* Pass 2: flags. */
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = 1;
            return HP_OK;
        }
        if (strncmp(a, "--", 2) != 0)
            return hp_errorf("hyperpar %s: unexpected argument '%s' (flags start with --)", cmd, a);
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        if (len == 6 && !strncmp(name, "config", 6)) {
            if (!eq) i++;
            continue;
        }
        const hp_opt *o = find_opt(opts, nopts, name, len);
        if (!o) return hp_errorf("hyperpar %s: unknown flag '--%.*s' (see hyperpar %s --help)", cmd, (int)len, name, cmd);
        const char *val;
        if (eq) {
            val = eq + 1;
        } else if (o->type == HP_OPT_FLAG && (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0)) {
            val = "1";
        } else {
            if (i + 1 >= argc) return hp_errorf("hyperpar %s: --%s needs a value", cmd, o->name);
            val = argv[++i];
        }
        char where[200];
        snprintf(where, sizeof where, "hyperpar %s: --%s", cmd, o->name);
        HP_TRY(set_value(o, val, where));
        if (src) src[o - opts] = "flag";
    }
    return HP_OK;
}

/* The flag column of --help: "--name TYPE". */
static int usage_left(char *buf, size_t n, const hp_opt *o) {
    const char *t = o->type == HP_OPT_STR ? " STR" : o->type == HP_OPT_FLOAT ? " X" : o->type == HP_OPT_FLAG ? "" : " N";
    return snprintf(buf, n, "--%s%s", o->name, t);
}

/* Descriptions start in one column, sized to the longest flag up to
 * USAGE_MAX_LEFT; a longer flag gets a line of its own. */
enum { USAGE_MAX_LEFT = 28 };

/* " (default X)" for option o as its table holds it now, written as a setting
 * is (hp_args_format); "" where there is none to show: an empty string, a
 * flag that is off, an int at INT_MIN (a "not given" marker), or a
 * description that already states its default ("default", "not given"). */
static void usage_default(char *buf, size_t n, const hp_opt *o) {
    buf[0] = 0;
    if (strstr(o->help, "default") || strstr(o->help, "not given")) return;
    if (o->type == HP_OPT_STR && !((const char *)o->ptr)[0]) return;
    if (o->type == HP_OPT_FLAG) {
        if (*(int *)o->ptr) snprintf(buf, n, " (default on)");
        return;
    }
    if (o->type == HP_OPT_INT && *(int *)o->ptr == INT_MIN) return;
    char v[600];
    hp_args_format(v, sizeof v, o);
    snprintf(buf, n, " (default %s)", v);
}

void hp_args_usage(const hp_opt *opts, int nopts, const char *cmd, const char *summary) {
    printf("usage: hyperpar %s [--config FILE] [flags]\n%s\n\nflags (a config file takes the same names as keys; flags override it):\n", cmd, summary);
    char left[128];
    int width = 0;
    for (int i = 0; i < nopts; i++) {
        int w = usage_left(left, sizeof left, &opts[i]);
        if (w > width && w <= USAGE_MAX_LEFT) width = w;
    }
    for (int i = 0; i < nopts; i++) {
        char def[640];
        usage_default(def, sizeof def, &opts[i]);
        if (usage_left(left, sizeof left, &opts[i]) > width)
            printf("  %s\n  %-*s  %s%s\n", left, width, "", opts[i].help, def);
        else
            printf("  %-*s  %s%s\n", width, left, opts[i].help, def);
    }
}

hp_status hp_args_set(const hp_opt *opts, int nopts, const char *name, const char *value, const char *where) {
    const hp_opt *o = find_opt(opts, nopts, name, strlen(name));
    if (!o) return hp_errorf("%s: unknown setting '%s'", where, name);
    return set_value(o, value, where);
}

void hp_args_format(char *buf, size_t n, const hp_opt *o) { hp_opt_format(buf, n, o->ptr, o->type); }

void hp_cli_error(hp_status st) {
    const char *m = hp_status_msg(st);
    fprintf(stderr, "%s%s\n", strncmp(m, "hyperpar ", 9) ? "hyperpar: " : "", m);
    hp_status_free(st);
}

