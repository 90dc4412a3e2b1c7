/* report/bench: the benchmark page (see report/pages.h). Each file is an
 * array of flat objects. Rows of `bench comm` (collective, bytes,
 * busbw_GBps) become bandwidth-over-size lines, one per collective,
 * implementation, tier and rank count; any other rows are labelled by their
 * string fields and drawn as one bar chart per numeric field, plus the
 * step-time split when its fields are present (forward/backward/optimizer,
 * or compute/comm/optimizer/other) and the optimizer's (gather, Newton-Schulz,
 * return, update, rest: bench muon). Rows of different fields (bench muon's
 * runs and its plan-only balance rows) are drawn apart, each kind with its
 * own fields. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/fmt.h"
#include "report/jsonfile.h"
#include "report/pages.h"
#include "report/svg.h"

static hp_status check_rows(const hp_json *a, const char *path) {
    if (a->type != HP_JSON_ARRAY) return hp_errorf("%s: expected a JSON array of rows, got %s", path, hp_json_type_name(a->type));
    for (int i = 0; i < a->n; i++) {
        const hp_json *r = &a->items[i];
        if (r->type != HP_JSON_OBJECT)
            return hp_errorf("%s: row %d: expected an object, got %s", path, i, hp_json_type_name(r->type));
        for (int k = 0; k < r->n; k++)
            if (r->items[k].type == HP_JSON_ARRAY || r->items[k].type == HP_JSON_OBJECT)
                return hp_errorf("%s: row %d: field '%s': %s is not a benchmark value (expected a number, string, "
                                 "true/false or null)",
                                 path, i, r->keys[k], r->items[k].type == HP_JSON_ARRAY ? "an array" : "an object");
    }
    return HP_OK;
}

static void comm_lines(hp_sbuf *b, const hp_json *a, const hp_rep_opts *o, int fi) {
    enum { MAXS = 32 };
    char keys[MAXS][160];
    hp_series s[MAXS];
    memset(s, 0, sizeof s);
    int ns = 0;
    for (int i = 0; i < a->n; i++) {
        const hp_json *r = &a->items[i];
        char k[160];
        snprintf(k, sizeof k, "%s %s %s x%.0f", hp_rep_json_str(r, "collective", "?"), hp_rep_json_str(r, "impl", ""),
                 hp_rep_json_str(r, "tier", ""), hp_rep_json_num(r, "ranks", 0));
        int j = 0;
        while (j < ns && strcmp(keys[j], k)) j++;
        if (j == ns) {
            if (ns == MAXS) continue;
            snprintf(keys[ns++], sizeof keys[0], "%s", k);
        }
        double x = hp_rep_json_num(r, "bytes", 0), y = hp_rep_json_num(r, "busbw_GBps", 0);
        hp_status st = x > 0 ? hp_series_push(&s[j], x, y) : HP_OK;
        if (st) b->oom = 1;
        hp_status_free(st);
    }
    hp_rep_line l[MAXS];
    for (int j = 0; j < ns; j++) {
        hp_series_dedupe(&s[j]);
        l[j] = (hp_rep_line){.name = keys[j], .s = &s[j], .color = hp_rep_color(j)};
    }
    char id[40];
    snprintf(id, sizeof id, "bench%d-busbw", fi);
    hp_rep_chart c = {.id = id, .title = "collectives: bus bandwidth by size", .xlabel = "message size (bytes)",
                      .ylabel = "bus bandwidth (GB/s)", .width = o->width, .height = 280, .log_option = 1, .logx = 1};
    hp_rep_svg_lines(b, &c, l, ns);
    for (int j = 0; j < ns; j++) hp_series_free(&s[j]);
}

static int skip_field(const char *k) {
    static const char *const skip[] = {"B",      "T",        "threads",    "dp",         "tp",          "ranks",
                                       "load_avg_1min", "mpi", "balance_only", "layers", "replicas", "supernodes", "waves"};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (!strcmp(k, skip[i])) return 1;
    return 0;
}

static void row_label(char *buf, size_t n, const hp_json *r, int i) {
    buf[0] = 0;
    size_t used = 0;
    for (int k = 0; k < r->n && used + 2 < n; k++)
        if (r->items[k].type == HP_JSON_STRING && r->items[k].str[0] && strncmp(r->keys[k], "openblas", 8) &&
            strcmp(r->keys[k], "fma_isa"))
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? " " : "", r->items[k].str);
    /* the rank count and MPI processes, when the rows say (bench muon's rows differ by them) */
    const hp_json *rk = hp_json_get(r, "ranks"), *mpi = hp_json_get(r, "mpi");
    if (rk && rk->type == HP_JSON_NUMBER && used + 2 < n)
        used += (size_t)snprintf(buf + used, n - used, "%sx%g", used ? " " : "", rk->number);
    if (mpi && mpi->type == HP_JSON_NUMBER && mpi->number > 0 && used + 2 < n)
        used += (size_t)snprintf(buf + used, n - used, "%sMPI", used ? " " : "");
    if (!buf[0]) snprintf(buf, n, "row %d", i);
}

static void split(hp_sbuf *b, const hp_json *a, const char **labels, const hp_rep_opts *o, const char *id,
                  const char *const *parts, int np) {
    const char *title = np == 5 ? "optimizer split" : "step-time split";
    for (int k = 0; k < np; k++)
        if (!hp_json_get(&a->items[0], parts[k])) return;
    double *v = calloc((size_t)a->n * (size_t)np, sizeof *v);
    if (!v) {
        b->oom = 1;
        return;
    }
    for (int i = 0; i < a->n; i++)
        for (int k = 0; k < np; k++) v[i * np + k] = hp_rep_json_num(&a->items[i], parts[k], 0);
    hp_rep_chart c = {.id = id, .title = title, .xlabel = "time per step (ms)", .ylabel = "",
                      .width = o->width, .unit = "ms"};
    hp_rep_svg_bars(b, &c, a->n, labels, np, parts, v);
    free(v);
}

static void bars(hp_sbuf *b, const hp_json *a, const hp_rep_opts *o, int fi) {
    char(*lab)[200] = calloc((size_t)a->n, sizeof *lab);
    const char **labels = calloc((size_t)a->n, sizeof *labels);
    double *v = calloc((size_t)a->n, sizeof *v);
    if (!lab || !labels || !v) {
        b->oom = 1;
        free(lab), free(labels), free(v);
        return;
    }
    for (int i = 0; i < a->n; i++) row_label(lab[i], sizeof lab[i], &a->items[i], i), labels[i] = lab[i];
    char id[80];
    static const char *const fb[] = {"forward_ms", "backward_ms", "optimizer_ms"};
    static const char *const cc[] = {"compute_ms", "comm_ms", "optimizer_ms", "other_ms"};
    static const char *const op[] = {"gather_ms", "ns_ms", "return_ms", "update_ms", "rest_ms"};
    snprintf(id, sizeof id, "bench%d-split", fi);
    split(b, a, labels, o, id, fb, 3);
    split(b, a, labels, o, id, cc, 4);
    snprintf(id, sizeof id, "bench%d-optsplit", fi);
    split(b, a, labels, o, id, op, 5);
    const hp_json *r0 = &a->items[0];
    for (int k = 0; k < r0->n; k++) {
        const char *key = r0->keys[k];
        if (r0->items[k].type != HP_JSON_NUMBER || skip_field(key)) continue;
        for (int i = 0; i < a->n; i++) v[i] = hp_rep_json_num(&a->items[i], key, 0);
        snprintf(id, sizeof id, "bench%d-%s", fi, key);
        const char *unit = hp_rep_field_unit(key);
        char xl[200];
        snprintf(xl, sizeof xl, "%.150s%s%s%s", key, unit[0] ? " (" : "", unit, unit[0] ? ")" : "");
        hp_rep_chart c = {.id = id, .title = key, .xlabel = xl, .ylabel = "", .width = o->width, .unit = unit};
        hp_rep_svg_bars(b, &c, a->n, labels, 1, &key, v);
    }
    free(lab), free(labels), free(v);
}

/* 1 if rows x and y have the same fields in the same order. */
static int same_fields(const hp_json *x, const hp_json *y) {
    if (x->n != y->n) return 0;
    for (int k = 0; k < x->n; k++)
        if (strcmp(x->keys[k], y->keys[k])) return 0;
    return 1;
}

/* The rows by kind (their fields), each kind's bars apart (a shallow array of its rows). */
static void kinds(hp_sbuf *b, const hp_json *a, const hp_rep_opts *o, int fi) {
    hp_json *rows = calloc((size_t)a->n, sizeof *rows);
    unsigned char *done = calloc((size_t)a->n, 1);
    if (!rows || !done) {
        b->oom = 1;
        free(rows), free(done);
        return;
    }
    for (int i = 0, kind = 0; i < a->n; i++) {
        if (done[i]) continue;
        int n = 0;
        for (int j = i; j < a->n; j++)
            if (!done[j] && same_fields(&a->items[i], &a->items[j])) rows[n++] = a->items[j], done[j] = 1;
        hp_json sub = {.type = HP_JSON_ARRAY, .n = n, .items = rows};
        bars(b, &sub, o, fi * 16 + kind++);
    }
    free(rows), free(done);
}

hp_status hp_rep_bench_page(char **html, size_t *len, const char *const *files, int nfiles, const hp_rep_opts *o_) {
    hp_rep_opts o = *o_;
    if (o.width <= 0) o.width = 760;
    hp_json **docs = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *docs);
    if (!docs) return hp_errorf("report: out of memory");
    hp_status st = HP_OK;
    for (int i = 0; i < nfiles && !st; i++) {
        st = hp_rep_json_load(&docs[i], files[i]);
        if (!st) st = check_rows(docs[i], files[i]);
        if (!st && docs[i]->n == 0) st = hp_errorf("%s: no rows", files[i]);
    }
    hp_sbuf b;
    hp_sb_init(&b);
    if (!st) {
        hp_rep_page_begin(&b, "hyperpar benchmarks");
        hp_sb_put(&b, "<h1>hyperpar benchmarks</h1>\n");
        for (int i = 0; i < nfiles; i++) {
            const hp_json *a = docs[i];
            hp_sb_put(&b, "<h2>");
            hp_sb_html(&b, files[i]);
            hp_sb_printf(&b, " (%d rows)</h2><div class=\"grid2\">\n", a->n);
            if (hp_json_get(&a->items[0], "busbw_GBps") && hp_json_get(&a->items[0], "bytes")) comm_lines(&b, a, &o, i);
            else kinds(&b, a, &o, i);
            hp_sb_put(&b, "</div>\n");
        }
        hp_rep_page_end(&b);
        st = hp_sb_finish(html, len, &b);
    }
    hp_sb_free(&b);
    for (int i = 0; i < nfiles; i++) hp_json_free(docs[i]);
    free(docs);
    return st;
}
