/* report/rundir: run directories read back (see the header). */
#include "report/rundir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <math.h>
#include <sys/stat.h>

#include "io/fsutil.h"
#include "report/jsonfile.h"

/* DIR/name parsed when present. */
static hp_status optional_json(hp_json **out, const char *dir, const char *name) {
    *out = NULL;
    char *p = hp_fs_join(dir, name);
    if (!p) return hp_errorf("%s/%s: out of memory", dir, name);
    hp_status st = hp_fs_exists(p) ? hp_rep_json_load(out, p) : HP_OK;
    if (!st && *out && (*out)->type != HP_JSON_OBJECT) {
        st = hp_errorf("%s: expected a JSON object, got %s", p, hp_json_type_name((*out)->type));
        hp_json_free(*out), *out = NULL;
    }
    free(p);
    return st;
}

/* 1 when PREFIX.rankK.json exists for a rank K of `ranks` (0: unknown, rank 0). */
static int any_rank(const char *prefix, long ranks) {
    for (long k = 0; k < (ranks > 0 ? ranks : 1); k++) {
        char p[1200];
        snprintf(p, sizeof p, "%s.rank%ld.json", prefix, k);
        if (hp_fs_exists(p)) return 1;
    }
    return 0;
}

/* The traces: the run directory's own (DIR/NAME.rankK.json, NAME the last
 * component of run.json's "trace", default "trace") when it has them, so a
 * copied or moved directory reads its own; else where run.json says (a
 * --trace path outside the directory). */
static hp_status load_traces(hp_rep_run *r) {
    char prefix[1100];
    const char *tp = r->run ? hp_rep_json_str(r->run, "trace", NULL) : NULL;
    const char *base = tp ? strrchr(tp, '/') : NULL;
    snprintf(prefix, sizeof prefix, "%s/%.60s", r->path, base ? base + 1 : tp ? tp : "trace");
    if (tp && !any_rank(prefix, r->ranks)) snprintf(prefix, sizeof prefix, "%s", tp);
    long ranks = r->ranks;
    for (int k = 0; k < HP_REP_MAX_RANKS && (ranks <= 0 || k < ranks); k++) {
        char p[1200];
        snprintf(p, sizeof p, "%s.rank%d.json", prefix, k);
        if (!hp_fs_exists(p)) {
            if (ranks <= 0) break;
            continue; /* another process's ranks, not here */
        }
        hp_rep_trace *nt = realloc(r->traces, sizeof *nt * (size_t)(r->ntraces + 1));
        if (!nt) return hp_errorf("%s: out of memory", p);
        r->traces = nt;
        HP_TRY(hp_rep_trace_load(&r->traces[r->ntraces], p));
        r->ntraces++;
    }
    return HP_OK;
}

/* The numbers of run.json and plan.json the report uses as integers. */
static hp_status check_numbers(hp_rep_run *r) {
    char p[1100];
    snprintf(p, sizeof p, "%s/run.json", r->path);
    HP_TRY(hp_rep_json_int(&r->ranks, r->run, "ranks", 0, HP_REP_MAX_RANKS, 0, p, ""));
    HP_TRY(hp_rep_json_int(&r->trace_first, r->run, "trace_first_step", 1, (long)HP_REP_MAX_INT, 1, p, ""));
    const hp_json *o = r->run ? hp_json_get(r->run, "oversubscribed") : NULL;
    if (o && o->type != HP_JSON_NULL) {
        if (o->type != HP_JSON_OBJECT)
            return hp_errorf("%s: field 'oversubscribed': expected an object, got %s", p, hp_json_type_name(o->type));
        long v[3];
        static const char *const keys[] = {"ranks", "threads_per_rank", "cores"};
        for (int i = 0; i < 3; i++) {
            HP_TRY(hp_rep_json_int(&v[i], o, keys[i], 1, HP_REP_MAX_RANKS, 0, p, "oversubscribed"));
            if (!v[i]) return hp_errorf("%s: field 'oversubscribed.%s': missing", p, keys[i]);
        }
        r->over_ranks = (int)v[0], r->over_threads = (int)v[1], r->over_cores = (int)v[2];
    }
    if (!r->plan) return HP_OK;
    snprintf(p, sizeof p, "%s/plan.json", r->path);
    long n;
    HP_TRY(hp_rep_json_int(&n, r->plan, "nranks", 1, HP_REP_MAX_RANKS, 0, p, ""));
    r->plan_nranks = (int)n;
    const hp_json *ranks = hp_json_get(r->plan, "ranks");
    for (int i = 0; ranks && ranks->type == HP_JSON_ARRAY && i < ranks->n; i++) {
        char where[32];
        snprintf(where, sizeof where, "ranks[%d]", i);
        HP_TRY(hp_rep_json_int(&n, &ranks->items[i], "rank", 0, HP_REP_MAX_RANKS - 1, i, p, where));
    }
    return HP_OK;
}

/* ---- a simulated step (hyperpar simulate --timeline PREFIX: PREFIX.sim.json and PREFIX.rankN.json) ---- */

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && !strcmp(s + n - k, suffix);
}

/* The one NAME.sim.json in dir: *out its path ("" when there is none); two are an error (the page draws one). */
static hp_status find_sim(char *out, size_t n, const char *dir) {
    out[0] = 0;
    DIR *d = opendir(dir);
    if (!d) return HP_OK;
    hp_status st = HP_OK;
    for (struct dirent *e; !st && (e = readdir(d));) {
        if (!ends_with(e->d_name, ".sim.json")) continue;
        if (out[0]) st = hp_errorf("%s: two simulated timelines (%s and %s): give the one to draw, DIR/NAME.sim.json",
                                  dir, strrchr(out, '/') + 1, e->d_name);
        else if (snprintf(out, n, "%s/%s", dir, e->d_name) >= (int)n)
            st = hp_errorf("%s/%s: the path is too long", dir, e->d_name);
    }
    closedir(d);
    return st;
}

/* The simulated step's record, checked: its format, the trace prefix (a file name beside it), the ranks traced,
 * and every number the page prints (finite, >= 0). */
static hp_status check_sim(const hp_json *j, const char *p) {
    const char *f = hp_rep_json_str(j, "format", "");
    if (strcmp(f, "hyperpar-simulated-step"))
        return hp_errorf("%s: field 'format': expected \"hyperpar-simulated-step\", got \"%.80s\"", p, f);
    const char *t = hp_rep_json_str(j, "trace", NULL);
    if (!t || !t[0] || strchr(t, '/') || !strcmp(t, ".") || !strcmp(t, ".."))
        return hp_errorf("%s: field 'trace': expected a file prefix beside it, got %s", p, t ? t : "none");
    const hp_json *rk = hp_json_get(j, "ranks_traced");
    if (!rk || rk->type != HP_JSON_ARRAY || rk->n < 1 || rk->n > 4096)
        return hp_errorf("%s: field 'ranks_traced': expected an array of 1 to 4096 ranks", p);
    for (int i = 0; i < rk->n; i++) {
        const hp_json *v = &rk->items[i];
        if (v->type != HP_JSON_NUMBER || v->number != floor(v->number) || v->number < 0 || v->number >= HP_REP_MAX_RANKS)
            return hp_errorf("%s: field 'ranks_traced[%d]': expected a rank in 0..%d", p, i, HP_REP_MAX_RANKS - 1);
    }
    long n;
    HP_TRY(hp_rep_json_int(&n, j, "ranks", 1, HP_REP_MAX_RANKS, 1, p, ""));
    HP_TRY(hp_rep_json_int(&n, j, "stages", 1, HP_REP_MAX_RANKS, 1, p, ""));
    for (int i = 0; i < j->n; i++) {
        const char *k = j->keys[i];
        const hp_json *v = &j->items[i];
        int numeric = ends_with(k, "_ms") || !strncmp(k, "bytes_", 6) || !strcmp(k, "mfu") ||
                      !strcmp(k, "compute_scale") || !strcmp(k, "tokens_per_s");
        if (numeric && (v->type != HP_JSON_NUMBER || !isfinite(v->number) || v->number < 0))
            return hp_errorf("%s: field '%s': expected a number >= 0", p, k);
    }
    return HP_OK;
}

static hp_status load_sim(hp_rep_run *r, const char *sim_path) {
    HP_TRY(hp_rep_json_load(&r->sim, sim_path));
    if (r->sim->type != HP_JSON_OBJECT)
        return hp_errorf("%s: expected a JSON object, got %s", sim_path, hp_json_type_name(r->sim->type));
    HP_TRY(check_sim(r->sim, sim_path));
    char *dir = hp_fs_dirname(sim_path);
    if (!dir) return hp_errorf("%s: out of memory", sim_path);
    snprintf(r->metrics_path, sizeof r->metrics_path, "%s", sim_path);
    r->ranks = hp_rep_json_long(r->sim, "ranks", 1, HP_REP_MAX_RANKS, 0);
    const hp_json *rk = hp_json_get(r->sim, "ranks_traced");
    hp_status st = HP_OK;
    r->traces = calloc((size_t)rk->n, sizeof *r->traces);
    if (!r->traces) st = hp_errorf("%s: out of memory", sim_path);
    for (int i = 0; !st && i < rk->n; i++) {
        char p[1400];
        snprintf(p, sizeof p, "%s/%.200s.rank%ld.json", dir, hp_rep_json_str(r->sim, "trace", ""), (long)rk->items[i].number);
        st = hp_fs_exists(p) ? hp_rep_trace_load(&r->traces[i], p)
                             : hp_errorf("%s: the timeline of rank %ld is missing (%s names it)", p,
                                         (long)rk->items[i].number, sim_path);
        if (!st) r->ntraces++;
    }
    free(dir);
    return st;
}

static hp_status load(hp_rep_run *r, const char *path, int traces) {
    if (strlen(path) >= sizeof r->path) return hp_errorf("%.200s...: the path is longer than %zu bytes", path, sizeof r->path - 1);
    snprintf(r->path, sizeof r->path, "%s", path);
    r->trace_first = 1;
    size_t n = strlen(r->path);
    while (n > 1 && r->path[n - 1] == '/') r->path[--n] = 0;
    const char *base = strrchr(r->path, '/');
    snprintf(r->name, sizeof r->name, "%.255s", base ? base + 1 : r->path);
    struct stat sb;
    if (stat(r->path, &sb) != 0) return hp_errorf("%s: no such run directory", r->path);
    if (!S_ISDIR(sb.st_mode) && ends_with(r->path, ".sim.json")) { /* a simulated step named */
        snprintf(r->name, sizeof r->name, "%.*s", (int)(strlen(base ? base + 1 : r->path) - 9), base ? base + 1 : r->path);
        return load_sim(r, r->path);
    }
    if (!S_ISDIR(sb.st_mode)) { /* a metrics file alone */
        snprintf(r->metrics_path, sizeof r->metrics_path, "%s", r->path);
        return hp_rep_metrics_load(&r->metrics, r->metrics_path);
    }
    HP_TRY(optional_json(&r->run, r->path, "run.json"));
    HP_TRY(optional_json(&r->config, r->path, "config.json"));
    HP_TRY(optional_json(&r->plan, r->path, "plan.json"));
    HP_TRY(optional_json(&r->machine, r->path, "machine.json"));
    HP_TRY(check_numbers(r));
    snprintf(r->metrics_path, sizeof r->metrics_path, "%s/metrics.jsonl", r->path);
    const char *named = r->run ? hp_rep_json_str(r->run, "metrics", NULL) : NULL;
    if (!hp_fs_exists(r->metrics_path) && named) snprintf(r->metrics_path, sizeof r->metrics_path, "%s", named);
    char sim[1100] = "";
    if (!hp_fs_exists(r->metrics_path) && !named) HP_TRY(find_sim(sim, sizeof sim, r->path));
    if (sim[0]) return load_sim(r, sim); /* no metrics: the directory of a simulated step */
    if (!hp_fs_exists(r->metrics_path))
        return hp_errorf("%s: no metrics.jsonl%s%s%s", r->path, named ? " (run.json names " : "", named ? named : "",
                         named ? ", which is missing)" : ", no run.json naming a metrics file and no simulated step (NAME.sim.json)");
    HP_TRY(hp_rep_metrics_load(&r->metrics, r->metrics_path));
    if (traces) HP_TRY(load_traces(r));
    return HP_OK;
}

hp_status hp_rep_run_load(hp_rep_run *out, const char *path, int traces) {
    memset(out, 0, sizeof *out);
    hp_status st = load(out, path, traces);
    if (st) hp_rep_run_free(out);
    return st;
}

void hp_rep_run_free(hp_rep_run *r) {
    hp_json_free(r->run), hp_json_free(r->config), hp_json_free(r->plan), hp_json_free(r->machine);
    hp_json_free(r->sim);
    hp_rep_metrics_free(&r->metrics);
    for (int i = 0; i < r->ntraces; i++) hp_rep_trace_free(&r->traces[i]);
    free(r->traces);
    memset(r, 0, sizeof *r);
}
