/* report/metrics: metrics JSON lines into curves (see the header). */
#include "report/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/fsutil.h"
#include "io/json.h"

static const char *const known[] = {"loss",     "val_loss", "lr",           "grad_norm", "tokens_per_s", "mfu",
                                    "step_ms", "compute_ms", "comm_ms", "optimizer_ms", "other_ms"};

static int is_known(const char *k) {
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(k, known[i])) return 1;
    return 0;
}

static hp_series *curve(hp_rep_metrics *m, const char *name, hp_status *st) {
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->m[i].name, name)) return &m->m[i].s;
    hp_rep_metric *nm = realloc(m->m, sizeof *nm * (size_t)(m->n + 1));
    if (!nm) {
        *st = hp_errorf("report: out of memory for the metrics");
        return NULL;
    }
    m->m = nm;
    memset(&m->m[m->n], 0, sizeof m->m[m->n]);
    snprintf(m->m[m->n].name, sizeof m->m[m->n].name, "%s", name);
    return &m->m[m->n++].s;
}

static hp_status line_values(hp_rep_metrics *m, const hp_json *v, const char *path, long line) {
    if (v->type != HP_JSON_OBJECT)
        return hp_errorf("%s:%ld: expected a JSON object, got %s", path, line, hp_json_type_name(v->type));
    const hp_json *sv = hp_json_get(v, "step");
    if (!sv) return hp_errorf("%s:%ld: missing field 'step'", path, line);
    if (sv->type != HP_JSON_NUMBER || !sv->is_int || sv->ival < 0)
        return hp_errorf("%s:%ld: field 'step': expected a non-negative integer, got %s", path, line,
                         sv->type == HP_JSON_NUMBER ? "a fraction or a negative number" : hp_json_type_name(sv->type));
    if (sv->ival > (int64_t)1 << 53) /* beyond it a step is not exact as a curve's x */
        return hp_errorf("%s:%ld: field 'step': %lld is more than 2^53", path, line, (long long)sv->ival);
    double step = (double)sv->ival;
    for (int i = 0; i < v->n; i++) {
        const char *k = v->keys[i];
        const hp_json *x = &v->items[i];
        if (!strcmp(k, "step")) continue;
        if (x->type == HP_JSON_ARRAY || x->type == HP_JSON_OBJECT)
            return hp_errorf("%s:%ld: field '%s': %s is not a metrics value (expected a number, null or true/false)",
                             path, line, k, x->type == HP_JSON_ARRAY ? "an array" : "an object");
        if (is_known(k) && x->type != HP_JSON_NUMBER && x->type != HP_JSON_NULL)
            return hp_errorf("%s:%ld: field '%s': expected a number or null, got %s", path, line, k,
                             hp_json_type_name(x->type));
        if (x->type == HP_JSON_NULL) {
            if (is_known(k)) m->nonfinite++;
            continue;
        }
        if (x->type != HP_JSON_NUMBER) continue;
        if (strlen(k) >= HP_METRIC_NAME) return hp_errorf("%s:%ld: field name '%.60s...' is too long", path, line, k);
        hp_status st = HP_OK;
        hp_series *s = curve(m, k, &st);
        if (!s) return st;
        HP_TRY(hp_series_push(s, step, x->number));
    }
    return HP_OK;
}

static hp_status parse_error(hp_status st, const char *path, long line) {
    hp_status e = hp_errorf("%s:%ld: not valid JSON (%s)", path, line, hp_status_msg(st));
    hp_status_free(st);
    return e;
}

static hp_status load(hp_rep_metrics *m, const char *text, size_t len, const char *path) {
    long line = 0;
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        line++;
        size_t a = pos, b = end;
        while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r')) a++;
        while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\r')) b--;
        pos = end + 1;
        if (a == b) continue;
        hp_json *v = NULL;
        hp_status st = hp_json_parse(&v, text + a, b - a);
        if (st) {
            if (!nl) { /* the last line, cut short */
                m->truncated = 1;
                snprintf(m->note, sizeof m->note,
                         "%.400s:%ld: the last line is cut short (%zu bytes, no newline): the run stopped while writing "
                         "it; shown up to the line before",
                         path, line, b - a);
                hp_status_free(st);
                return HP_OK;
            }
            return parse_error(st, path, line);
        }
        st = line_values(m, v, path, line);
        hp_json_free(v);
        HP_TRY(st);
        m->lines++;
    }
    return HP_OK;
}

hp_status hp_rep_metrics_load(hp_rep_metrics *out, const char *path) {
    memset(out, 0, sizeof *out);
    char *text = NULL;
    size_t len = 0;
    HP_TRY(hp_fs_read_all(&text, &len, path));
    hp_status st = load(out, text, len, path);
    free(text);
    if (st) {
        hp_rep_metrics_free(out);
        return st;
    }
    for (int i = 0; i < out->n; i++) hp_series_dedupe(&out->m[i].s);
    return HP_OK;
}

const hp_series *hp_rep_metrics_get(const hp_rep_metrics *m, const char *name) {
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->m[i].name, name)) return &m->m[i].s;
    return NULL;
}

void hp_rep_metrics_free(hp_rep_metrics *m) {
    for (int i = 0; i < m->n; i++) hp_series_free(&m->m[i].s);
    free(m->m);
    memset(m, 0, sizeof *m);
}
