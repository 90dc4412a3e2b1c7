/* runtime/metrics: the metrics file of a run (see the header). */
#include "runtime/metrics.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/json.h"

struct hp_metrics {
    FILE *f;
    char *path;
};

/* 1 when a line (without its newline) is a record of a step after `step`. */
static int after_step(const char *line, size_t n, long step) {
    hp_json *j;
    hp_status e = hp_json_parse(&j, line, n);
    if (e) {
        hp_status_free(e);
        return 0; /* not one of ours: kept */
    }
    int64_t s = 0;
    int later = 0;
    if (j->type == HP_JSON_OBJECT && hp_json_get(j, "step")) {
        hp_status ge = hp_json_get_int(&s, j, "step");
        later = !ge && s > step;
        hp_status_free(ge);
    }
    hp_json_free(j);
    return later;
}

/* Cuts path after the last whole record of a step <= step. */
static hp_status truncate_after(long *dropped, const char *path, long step) {
    FILE *f = fopen(path, "r+");
    if (!f) {
        if (errno == ENOENT) return HP_OK;
        return hp_errorf("%s: cannot open the metrics file to resume it: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) { /* a device or a pipe: nothing to cut */
        fclose(f);
        return HP_OK;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    off_t keep = 0, pos = 0;
    int cut = 0;
    long lines = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        int whole = line[n - 1] == '\n';
        if (!cut && (!whole || after_step(line, (size_t)n - 1, step))) cut = 1;
        pos += n;
        if (cut) lines++;
        else keep = pos;
    }
    int rerr = ferror(f);
    free(line);
    hp_status e = HP_OK;
    if (rerr)
        e = hp_errorf("%s: cannot read the metrics file to resume it", path);
    else if (keep < st.st_size && ftruncate(fileno(f), keep) != 0)
        e = hp_errorf("%s: cannot cut the metrics file back to step %ld: %s", path, step, strerror(errno));
    if (fclose(f) != 0 && !e) e = hp_errorf("%s: cannot close the metrics file: %s", path, strerror(errno));
    if (!e) *dropped = lines;
    return e;
}

hp_status hp_metrics_open(hp_metrics **out, long *dropped, const char *path, long resume_step) {
    *out = NULL;
    long d = 0;
    if (resume_step >= 0) HP_TRY(truncate_after(&d, path, resume_step));
    if (dropped) *dropped = d;
    FILE *f = fopen(path, resume_step >= 0 ? "a" : "w");
    if (!f) return hp_errorf("%s: cannot open the metrics file for writing: %s", path, strerror(errno));
    hp_metrics *m = calloc(1, sizeof *m);
    if (m) m->path = strdup(path);
    if (!m || !m->path) {
        fclose(f);
        free(m);
        return hp_errorf("%s: out of memory", path);
    }
    m->f = f;
    *out = m;
    return HP_OK;
}

hp_status hp_metrics_write(hp_metrics *m, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    errno = 0;
    int n = vfprintf(m->f, fmt, ap);
    va_end(ap);
    if (n < 0 || fputc('\n', m->f) == EOF || fflush(m->f) != 0 || ferror(m->f))
        return hp_errorf("%s: cannot write the metrics: %s", m->path, errno ? strerror(errno) : "write failed");
    return HP_OK;
}

hp_status hp_metrics_close(hp_metrics *m) {
    if (!m) return HP_OK;
    errno = 0;
    int bad = ferror(m->f);
    int rc = fclose(m->f);
    hp_status e = HP_OK;
    if (bad || rc != 0)
        e = hp_errorf("%s: cannot write the metrics: %s", m->path, errno ? strerror(errno) : "write failed");
    free(m->path);
    free(m);
    return e;
}

const char *hp_metrics_path(const hp_metrics *m) { return m->path; }

/* Appends to the record's text; a record that does not fit is marked. */
static void rec_put(hp_metrics_rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rec_put(hp_metrics_rec *r, const char *fmt, ...) {
    if (r->overflow) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->text + r->len, sizeof r->text - r->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof r->text - r->len) r->overflow = 1;
    else r->len += (size_t)n;
}

void hp_metrics_rec_begin(hp_metrics_rec *r, long step) {
    r->len = 0, r->nonfinite = 0, r->overflow = 0;
    r->text[0] = 0;
    rec_put(r, "{\"step\": %ld", step);
}

void hp_metrics_rec_num(hp_metrics_rec *r, const char *key, double v, int digits) {
    if (!isfinite(v)) {
        r->nonfinite = 1;
        rec_put(r, ", \"%s\": null", key);
    } else if (digits < 0) {
        rec_put(r, ", \"%s\": %.9g", key, v);
    } else {
        rec_put(r, ", \"%s\": %.*f", key, digits, v);
    }
}

void hp_metrics_rec_flag(hp_metrics_rec *r, const char *key) { rec_put(r, ", \"%s\": true", key); }

hp_status hp_metrics_write_rec(hp_metrics *m, hp_metrics_rec *r) {
    if (r->nonfinite) rec_put(r, ", \"nonfinite\": true");
    rec_put(r, "}");
    if (r->overflow) return hp_errorf("%s: a metrics record longer than %zu bytes (a bug)", m->path, sizeof r->text);
    return hp_metrics_write(m, "%s", r->text);
}
