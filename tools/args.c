#include "args.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static hp_status set_value(const hp_opt *o, const char *val, const char *where) {
    char *end = NULL;
    errno = 0;
    switch (o->type) {
    case OPT_INT:
    case OPT_LONG: {
        long long v = strtoll(val, &end, 10);
        if (!*val || *end || errno) return hp_errorf("%s: expected an integer, got '%s'", where, val);
        if (o->type == OPT_INT) {
            if (v < -2147483647LL || v > 2147483647LL) return hp_errorf("%s: %s is out of range", where, val);
            *(int *)o->ptr = (int)v;
        } else {
            *(long *)o->ptr = (long)v;
        }
        return HP_OK;
    }
    case OPT_U64: {
        unsigned long long v = strtoull(val, &end, 10);
        if (!*val || *end || errno || val[0] == '-')
            return hp_errorf("%s: expected a non-negative integer, got '%s'", where, val);
        *(uint64_t *)o->ptr = (uint64_t)v;
        return HP_OK;
    }
    case OPT_FLOAT: {
        double v = strtod(val, &end);
        if (!*val || *end || (errno && errno != ERANGE)) return hp_errorf("%s: expected a number, got '%s'", where, val);
        float f = (float)v;
        if (!isfinite(f) || (errno == ERANGE && v != 0)) /* nan, inf, or beyond a float's range */
            return hp_errorf("%s: expected a finite number, got '%s'", where, val);
        *(float *)o->ptr = f;
        return HP_OK;
    }
    case OPT_STR:
        if (strlen(val) >= o->cap) return hp_errorf("%s: value is longer than %zu characters", where, o->cap - 1);
        snprintf((char *)o->ptr, o->cap, "%s", val);
        return HP_OK;
    case OPT_FLAG:
        if (!strcmp(val, "1") || !strcmp(val, "true") || !strcmp(val, "yes") || !strcmp(val, "on")) {
            *(int *)o->ptr = 1;
            return HP_OK;
        }
        if (!strcmp(val, "0") || !strcmp(val, "false") || !strcmp(val, "no") || !strcmp(val, "off")) {
            *(int *)o->ptr = 0;
            return HP_OK;
        }
        return hp_errorf("%s: expected true or false, got '%s'", where, val);
    }
    return hp_errorf("%s: unknown option type", where);
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
        if (!eq && (is_config || o->type != OPT_FLAG || (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0))) i++;
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
        } else if (o->type == OPT_FLAG && (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0)) {
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
    const char *t = o->type == OPT_STR ? " STR" : o->type == OPT_FLOAT ? " X" : o->type == OPT_FLAG ? "" : " N";
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
    if (o->type == OPT_STR && !((const char *)o->ptr)[0]) return;
    if (o->type == OPT_FLAG) {
        if (*(int *)o->ptr) snprintf(buf, n, " (default on)");
        return;
    }
    if (o->type == OPT_INT && *(int *)o->ptr == INT_MIN) return;
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

void hp_args_format_float(char *buf, size_t n, float v) {
    char best[32] = "", t[32];
    for (int p = 1; p <= 9; p++) { /* %.9g always reads back: a float has at most 9 significant digits */
        snprintf(t, sizeof t, "%.*g", p, (double)v);
        if (strtof(t, NULL) == v && (!best[0] || strlen(t) < strlen(best))) memcpy(best, t, sizeof t);
    }
    if (!best[0]) snprintf(best, sizeof best, "%.9g", (double)v); /* nan */
    snprintf(buf, n, "%s", best);
}

void hp_args_format(char *buf, size_t n, const hp_opt *o) {
    switch (o->type) {
    case OPT_INT: snprintf(buf, n, "%d", *(int *)o->ptr); break;
    case OPT_LONG: snprintf(buf, n, "%ld", *(long *)o->ptr); break;
    case OPT_U64: snprintf(buf, n, "%llu", (unsigned long long)*(uint64_t *)o->ptr); break;
    case OPT_FLOAT: hp_args_format_float(buf, n, *(float *)o->ptr); break;
    case OPT_STR: snprintf(buf, n, "%s", (const char *)o->ptr); break;
    case OPT_FLAG: snprintf(buf, n, "%s", *(int *)o->ptr ? "true" : "false"); break;
    }
}

void hp_cli_error(hp_status st) {
    const char *m = hp_status_msg(st);
    fprintf(stderr, "%s%s\n", strncmp(m, "hyperpar ", 9) ? "hyperpar: " : "", m);
    hp_status_free(st);
}

