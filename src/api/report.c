/* api/report: hp_report_write — reads a run directory (and the runs to
 * compare) or benchmark files through the report room, builds the page and
 * writes it atomically (io/fsutil), filling the public summary. */
#include <hyperpar/hyperpar.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/fsutil.h"
#include "report/pages.h"

static hp_status check(const hp_report_config *c) {
#define BAD(...) return hp_errorf("hp_report_config: " __VA_ARGS__)
    if ((c->run_dir != NULL) == (c->nbench > 0)) BAD("give run_dir or bench files, one of the two");
    if (c->nbench < 0 || c->ncompare < 0) BAD("nbench and ncompare must be >= 0");
    if (c->nbench > 0 && !c->bench) BAD("nbench %d without bench", c->nbench);
    if (c->ncompare > 0 && !c->compare) BAD("ncompare %d without compare", c->ncompare);
    if (c->ncompare > HP_REPORT_MAX_COMPARE) BAD("at most %d runs to compare, got %d", HP_REPORT_MAX_COMPARE, c->ncompare);
    if (c->nbench > 0 && c->ncompare > 0) BAD("compare needs a run, not bench files");
    if (c->width < 0 || (c->width > 0 && c->width < 200) || c->width > 10000) BAD("width must be 0 or 200..10000, got %d", c->width);
    if (c->trace_from < 0 || c->trace_to < 0 || (c->trace_to > 0 && c->trace_from > c->trace_to))
        BAD("trace steps %ld..%ld: expected 1 <= from <= to (0: all)", c->trace_from, c->trace_to);
    if (c->trace_to > INT_MAX || c->trace_from > INT_MAX) /* the report counts traced steps in an int */
        BAD("trace steps %ld..%ld: at most %d", c->trace_from, c->trace_to, INT_MAX);
    return HP_OK;
#undef BAD
}

/* The page's name: c->out, RUN_DIR/report.html, or the metrics or first
 * benchmark file's name with .html for its extension. */
static void out_path(char *buf, size_t n, const hp_report_config *c) {
    if (c->out && c->out[0]) {
        snprintf(buf, n, "%s", c->out);
        return;
    }
    const char *f = c->run_dir ? c->run_dir : c->bench[0];
    size_t l = strlen(f);
    struct stat sb;
    if (c->run_dir && stat(f, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        while (l > 1 && f[l - 1] == '/') l--;
        snprintf(buf, n, "%.*s/report.html", (int)l, f);
        return;
    }
    const char *ext = !c->run_dir ? ".json" : l > 9 && !strcmp(f + l - 9, ".sim.json") ? ".json" : ".jsonl";
    size_t el = strlen(ext);
    if (l > el && !strcmp(f + l - el, ext)) l -= el;
    snprintf(buf, n, "%.*s.html", (int)l, f);
}

static hp_status runs_page(char **html, size_t *len, hp_rep_summary *rs, const hp_report_config *c,
                           const hp_rep_opts *o) {
    int n = 1 + c->ncompare;
    hp_rep_run *runs = calloc((size_t)n, sizeof *runs);
    if (!runs) return hp_errorf("hp_report_write: out of memory");
    hp_status st = HP_OK;
    for (int i = 0; i < n && !st; i++) st = hp_rep_run_load(&runs[i], i ? c->compare[i - 1] : c->run_dir, i == 0);
    if (!st) st = hp_rep_run_page(html, len, rs, runs, n, o);
    for (int i = 0; i < n; i++) hp_rep_run_free(&runs[i]);
    free(runs);
    return st;
}

hp_status hp_report_write(hp_report_summary *sum, const hp_report_config *c) {
    if (!c) return hp_errorf("hp_report_write: config is NULL");
    HP_TRY(check(c));
    hp_rep_opts o = {.width = c->width, .trace_from = (int)c->trace_from, .trace_to = (int)c->trace_to};
    char *html = NULL;
    size_t len = 0;
    hp_rep_summary rs;
    memset(&rs, 0, sizeof rs);
    rs.hidden_share = -1;
    char out[1024];
    out_path(out, sizeof out, c);
    if (c->run_dir) HP_TRY(runs_page(&html, &len, &rs, c, &o));
    else HP_TRY(hp_rep_bench_page(&html, &len, c->bench, c->nbench, &o));
    hp_status st = hp_fs_write_atomic(out, html, len);
    free(html);
    HP_TRY(st);
    if (sum) {
        memset(sum, 0, sizeof *sum);
        snprintf(sum->out, sizeof sum->out, "%s", out);
        sum->bytes = (long)len;
        sum->steps = rs.steps, sum->truncated = rs.truncated, sum->finished = rs.finished;
        sum->ncompare = rs.ncmp;
        for (int i = 0; i < rs.ncmp; i++) {
            snprintf(sum->compare[i].run, sizeof sum->compare[i].run, "%s", rs.cmp[i].name);
            sum->compare[i].steps = rs.cmp[i].n;
            sum->compare[i].pearson = rs.cmp[i].pearson;
            sum->compare[i].max_abs_delta = rs.cmp[i].max_abs_delta;
        }
        sum->traced_ranks = rs.ntraces;
        sum->hidden_share = rs.hidden_share;
        sum->simulated = rs.simulated, sum->predicted_ms = rs.predicted_ms;
    }
    return HP_OK;
}
