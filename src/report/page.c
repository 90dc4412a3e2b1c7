/* report/page: a run's page (see report/report.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/jsonfile.h"
#include "report/report.h"
#include "report/svg.h"

static const char *const known[] = {"loss",    "val_loss",   "lr",      "grad_norm",    "tokens_per_s", "mfu",
                                    "step_ms", "compute_ms", "comm_ms", "optimizer_ms", "other_ms"};

static void text_row(hp_sbuf *b, const char *k, const char *v) {
    hp_sb_put(b, "<tr><th>");
    hp_sb_html(b, k);
    hp_sb_put(b, "</th><td>");
    hp_sb_html(b, v);
    hp_sb_put(b, "</td></tr>");
}

/* A JSON scalar as text. */
static void scalar(char *buf, size_t n, const hp_json *v) {
    switch (v->type) {
    case HP_JSON_STRING: snprintf(buf, n, "%s", v->str); break;
    case HP_JSON_NUMBER: snprintf(buf, n, "%.10g", v->number); break;
    case HP_JSON_BOOL: snprintf(buf, n, "%s", v->boolean ? "true" : "false"); break;
    case HP_JSON_NULL: snprintf(buf, n, "-"); break;
    default: snprintf(buf, n, "(%d items)", v->n); break;
    }
}

static void header(hp_sbuf *b, const hp_rep_run *r, hp_rep_summary *sum) {
    hp_sb_put(b, "<h1>hyperpar run ");
    hp_sb_html(b, r->name);
    hp_sb_put(b, "</h1>\n");
    const hp_series *loss = hp_rep_metrics_get(&r->metrics, "loss");
    long last = loss && loss->n ? (long)loss->x[loss->n - 1] : 0;
    const char *status = r->run ? hp_rep_json_str(r->run, "status", "unknown") : NULL;
    sum->finished = status && !strcmp(status, "done");
    hp_sb_put(b, "<table class=\"summary\">");
    char buf[1400];
    if (status) text_row(b, "status", status);
    snprintf(buf, sizeof buf, "%ld (last step %ld)", loss ? (long)loss->n : 0L, last);
    text_row(b, "training steps recorded", buf);
    if (r->run) {
        static const char *const keys[] = {"steps", "mesh", "ranks", "started", "updated", "command", "ckpt_dir",
                                           "metrics", "trace", "peak_rss_mb", "error"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            const hp_json *v = hp_json_get(r->run, keys[i]);
            if (!v || v->type == HP_JSON_NULL) continue;
            scalar(buf, sizeof buf, v);
            text_row(b, keys[i], buf);
        }
    } else {
        text_row(b, "metrics", r->metrics_path);
    }
    hp_sb_put(b, "</table>\n");
    if (status && !sum->finished) {
        hp_sb_printf(b, "<p class=\"note\">The run did not finish (status '");
        hp_sb_html(b, status);
        hp_sb_printf(b, "'%s): shown up to its last completed step, %ld.</p>\n",
                     !strcmp(status, "running") ? ": it was killed, or is still going" : "", last);
    }
    if (r->metrics.truncated) {
        hp_sb_put(b, "<p class=\"note\" id=\"truncated\">");
        hp_sb_html(b, r->metrics.note);
        hp_sb_put(b, "</p>\n");
    }
    if (r->metrics.nonfinite)
        hp_sb_printf(b, "<p class=\"note\">%ld values were not finite (null in the metrics) and are not drawn.</p>\n",
                     r->metrics.nonfinite);
}

static void compare(hp_sbuf *b, const hp_rep_run *runs, int n, hp_rep_summary *sum) {
    const hp_series *a = hp_rep_metrics_get(&runs[0].metrics, "loss");
    hp_sb_put(b, "<h2>Comparison of training losses</h2><table id=\"compare\"><tr><th>run</th><th>against</th>"
                 "<th>common steps</th><th>Pearson r</th><th>max |&Delta;loss|</th></tr>");
    static const hp_series none;
    for (int i = 1; i < n && sum->ncmp < HP_REP_MAX_CMP; i++) {
        const hp_series *o = hp_rep_metrics_get(&runs[i].metrics, "loss");
        hp_series_cmp c;
        hp_series_compare(&c, a ? a : &none, o ? o : &none);
        hp_rep_cmp *rc = &sum->cmp[sum->ncmp++];
        snprintf(rc->name, sizeof rc->name, "%.255s", runs[i].path);
        rc->n = c.n, rc->pearson = c.pearson, rc->max_abs_delta = c.max_abs_delta;
        hp_sb_put(b, "<tr><td>");
        hp_sb_html(b, runs[i].name);
        hp_sb_put(b, "</td><td>");
        hp_sb_html(b, runs[0].name);
        if (isnan(c.pearson))
            hp_sb_printf(b, "</td><td class=\"num\">%ld</td><td class=\"num\">n/a</td><td class=\"num\">%.9g</td></tr>", c.n,
                         c.max_abs_delta);
        else
            hp_sb_printf(b, "</td><td class=\"num\">%ld</td><td class=\"num\">%.9f</td><td class=\"num\">%.9g</td></tr>",
                         c.n, c.pearson, c.max_abs_delta);
    }
    hp_sb_put(b, "</table>\n");
}

/* One line chart of field `f` over every run that has it (and `f2` dashed). */
static void field_chart(hp_sbuf *b, const hp_rep_run *runs, int n, const hp_rep_opts *o, const char *id,
                        const char *title, const char *f, const char *f2, const char *ylabel, int logopt) {
    hp_rep_line l[2 * 17];
    char names[2 * 17][300];
    int m = 0;
    for (int i = 0; i < n && i < 17; i++)
        for (int k = 0; k < 2; k++) {
            const char *field = k ? f2 : f;
            const hp_series *s = field ? hp_rep_metrics_get(&runs[i].metrics, field) : NULL;
            if (!s || s->n == 0) continue;
            if (n > 1) snprintf(names[m], sizeof names[m], "%s%s", runs[i].name, f2 ? (k ? " val" : " train") : "");
            else snprintf(names[m], sizeof names[m], "%s", f2 ? (k ? "validation" : "training") : "");
            l[m] = (hp_rep_line){names[m], s, hp_rep_color(n > 1 ? i : k), k};
            m++;
        }
    if (!m) return;
    hp_rep_chart c = {id, title, "step", ylabel, o->width, 250, logopt, 0};
    hp_rep_svg_lines(b, &c, l, m);
}

static void split_chart(hp_sbuf *b, const hp_rep_run *r, const hp_rep_opts *o) {
    static const char *const parts[] = {"compute_ms", "comm_ms", "optimizer_ms", "other_ms"};
    hp_rep_line l[4];
    int m = 0;
    for (int k = 0; k < 4; k++) {
        const hp_series *s = hp_rep_metrics_get(&r->metrics, parts[k]);
        if (s && s->n) l[m] = (hp_rep_line){parts[k], s, hp_rep_color(k), 0}, m++;
    }
    if (!m) return;
    hp_rep_chart c = {"plot-split", "step-time split (compute / exposed communication / optimizer / other)", "step",
                      "time per step (ms)", o->width, 250, 0, 0};
    hp_rep_svg_lines(b, &c, l, m);
}

static int is_known(const char *k) {
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(k, known[i])) return 1;
    return 0;
}

static void memory_chart(hp_sbuf *b, const hp_rep_run *r, const hp_rep_opts *o) {
    const hp_json *ranks = r->plan ? hp_json_get(r->plan, "ranks") : NULL;
    if (!ranks || ranks->type != HP_JSON_ARRAY || ranks->n == 0) return;
    static const char *const parts[] = {"params", "grads", "optimizer", "activations", "scratch", "inputs"};
    int ng = ranks->n;
    double *v = calloc((size_t)ng * 6, sizeof *v);
    char(*lab)[32] = calloc((size_t)ng, sizeof *lab);
    const char **labels = calloc((size_t)ng, sizeof *labels);
    if (!v || !lab || !labels) {
        b->oom = 1;
        free(v), free(lab), free(labels);
        return;
    }
    for (int g = 0; g < ng; g++) {
        const hp_json *rk = &ranks->items[g], *mem = hp_json_get(rk, "memory");
        snprintf(lab[g], sizeof lab[g], "rank %d", (int)hp_rep_json_num(rk, "rank", g));
        labels[g] = lab[g];
        for (int k = 0; k < 6; k++) v[g * 6 + k] = mem ? hp_rep_json_num(mem, parts[k], 0) / 1e6 : 0;
    }
    hp_rep_chart c = {"plot-memory", "memory per rank (the compiled program's buffers)", "MB", "", o->width, 0, 0, 0};
    hp_rep_svg_bars(b, &c, ng, labels, 6, parts, v);
    free(v), free(lab), free(labels);
}

static void timeline(hp_sbuf *b, const hp_rep_run *r, const hp_rep_opts *o, hp_rep_summary *sum) {
    sum->ntraces = r->ntraces;
    sum->hidden_share = -1;
    if (!r->ntraces) return;
    int nsteps = 0;
    for (int i = 0; i < r->ntraces; i++)
        if (r->traces[i].nsteps > nsteps) nsteps = r->traces[i].nsteps;
    int from = o->trace_from > 0 ? o->trace_from - 1 : 0, to = o->trace_to > 0 ? o->trace_to - 1 : nsteps - 1;
    if (to >= nsteps) to = nsteps - 1;
    if (from > to) from = to;
    long first = r->run ? (long)hp_rep_json_num(r->run, "trace_first_step", 1) : 1;
    hp_sb_printf(b, "<h2>Traces: %d ranks, traced steps %d to %d of %d (training steps %ld to %ld)</h2>\n", r->ntraces,
                 from + 1, to + 1, nsteps, first + from, first + to);
    hp_rep_svg_timeline(b, "plot-timeline", o->width > 1100 ? o->width : 1100, r->traces, r->ntraces, from, to);
    double comm = 0, hidden = 0;
    hp_sb_put(b, "<table id=\"trace-split\"><tr><th>rank</th><th>steps</th><th>span ms/step</th><th>compute</th>"
                 "<th>optimizer</th><th>communication</th><th>hidden behind compute</th><th>exposed</th>"
                 "<th>other</th><th>hidden share</th><th>dropped events</th></tr>");
    int ng = r->ntraces;
    double *v = calloc((size_t)ng * 4, sizeof *v);
    char(*lab)[32] = calloc((size_t)ng, sizeof *lab);
    const char **labels = calloc((size_t)ng, sizeof *labels);
    if (!v || !lab || !labels) b->oom = 1;
    for (int i = 0; i < ng && v && lab && labels; i++) {
        hp_rep_split s;
        if (hp_rep_trace_split(&s, &r->traces[i], from, to)) {
            b->oom = 1;
            break;
        }
        int k = to - from + 1;
        double d = k > 0 ? k * 1e3 : 1;
        comm += s.comm, hidden += s.hidden;
        hp_sb_printf(b, "<tr><td>%d</td><td class=\"num\">%d</td><td class=\"num\">%.3f</td><td class=\"num\">%.3f</td>"
                        "<td class=\"num\">%.3f</td><td class=\"num\">%.3f</td><td class=\"num\">%.3f</td>"
                        "<td class=\"num\">%.3f</td><td class=\"num\">%.3f</td><td class=\"num\">",
                     r->traces[i].rank, k, s.span / d, s.compute / d, s.optimizer / d, s.comm / d, s.hidden / d,
                     (s.comm - s.hidden) / d, s.other / d);
        if (s.comm > 0) hp_sb_printf(b, "%.1f%%", 100 * s.hidden / s.comm);
        else hp_sb_put(b, "-");
        hp_sb_printf(b, "</td><td class=\"num\">%lld</td></tr>", (long long)r->traces[i].dropped);
        snprintf(lab[i], sizeof lab[i], "rank %d", r->traces[i].rank);
        labels[i] = lab[i];
        v[i * 4 + 0] = s.compute / d, v[i * 4 + 1] = (s.comm - s.hidden) / d, v[i * 4 + 2] = s.optimizer / d;
        v[i * 4 + 3] = s.other / d;
    }
    hp_sb_put(b, "</table>\n");
    sum->hidden_share = comm > 0 ? hidden / comm : -1;
    if (comm > 0)
        hp_sb_printf(b, "<p id=\"hidden-share\">Communication hidden behind compute over these steps: <b>%.1f%%</b> "
                        "(%.3f of %.3f ms of collectives, all ranks).</p>\n",
                     100 * hidden / comm, hidden / 1e3, comm / 1e3);
    else
        hp_sb_put(b, "<p id=\"hidden-share\">No collectives in these steps.</p>\n");
    if (v && lab && labels) {
        static const char *const parts[] = {"compute", "exposed communication", "optimizer", "other"};
        hp_rep_chart c = {"plot-trace-split", "step-time split per rank (traced steps)", "ms per step", "", o->width,
                          0, 0, 0};
        hp_sb_put(b, "<div class=\"grid2\">");
        hp_rep_svg_bars(b, &c, ng, labels, 4, parts, v);
        hp_sb_put(b, "</div>");
    }
    free(v), free(lab), free(labels);
}

static void config_table(hp_sbuf *b, const hp_rep_run *r) {
    const hp_json *s = r->config ? hp_json_get(r->config, "settings") : NULL;
    if (!s || s->type != HP_JSON_ARRAY) return;
    hp_sb_put(b, "<h2>Resolved configuration</h2><div class=\"scroll\"><table id=\"config\"><tr><th>setting</th>"
                 "<th>value</th><th>source</th></tr>");
    for (int i = 0; i < s->n; i++) {
        const char *src = hp_rep_json_str(&s->items[i], "source", "");
        hp_sb_printf(b, "<tr class=\"src-%s\"><td>", !strcmp(src, "default") ? "default" : "set");
        hp_sb_html(b, hp_rep_json_str(&s->items[i], "key", ""));
        hp_sb_put(b, "</td><td>");
        hp_sb_html(b, hp_rep_json_str(&s->items[i], "value", ""));
        hp_sb_put(b, "</td><td>");
        hp_sb_html(b, src);
        hp_sb_put(b, "</td></tr>");
    }
    hp_sb_put(b, "</table></div>\n");
}

static void shape(hp_sbuf *b, const hp_json *a) {
    hp_sb_put(b, "[");
    for (int i = 0; a && a->type == HP_JSON_ARRAY && i < a->n; i++) hp_sb_printf(b, "%s%.0f", i ? ", " : "", a->items[i].number);
    hp_sb_put(b, "]");
}

static void plan_tables(hp_sbuf *b, const hp_rep_run *r) {
    const hp_json *p = r->plan;
    if (!p) return;
    hp_sb_put(b, "<h2>Plan as compiled</h2><p>mesh <b>");
    hp_sb_html(b, hp_rep_json_str(p, "mesh", "?"));
    hp_sb_printf(b, "</b>, %d ranks</p>", (int)hp_rep_json_num(p, "nranks", 1));
    const hp_json *passes = hp_json_get(p, "passes");
    if (passes && passes->type == HP_JSON_ARRAY) {
        hp_sb_put(b, "<table id=\"passes\"><tr><th>pass</th><th>what it did (rank 0)</th></tr>");
        for (int i = 0; i < passes->n; i++) {
            hp_sb_put(b, "<tr><td>");
            hp_sb_html(b, hp_rep_json_str(&passes->items[i], "name", ""));
            hp_sb_put(b, "</td><td>");
            hp_sb_html(b, hp_rep_json_str(&passes->items[i], "note", ""));
            hp_sb_put(b, "</td></tr>");
        }
        hp_sb_put(b, "</table>");
    }
    const hp_json *ranks = hp_json_get(p, "ranks");
    if (!ranks || ranks->type != HP_JSON_ARRAY || !ranks->n) return;
    const hp_json *r0 = &ranks->items[0], *ts = hp_json_get(r0, "tensors");
    if (ts && ts->type == HP_JSON_ARRAY) {
        hp_sb_put(b, "<h2>Layouts (inputs and parameters; local shapes on rank 0)</h2><div class=\"scroll\">"
                     "<table id=\"layouts\"><tr><th>kind</th><th>name</th><th>global shape</th><th>layout</th>"
                     "<th>local shape</th></tr>");
        for (int i = 0; i < ts->n; i++) {
            const hp_json *t = &ts->items[i];
            hp_sb_put(b, "<tr><td>");
            hp_sb_html(b, hp_rep_json_str(t, "kind", ""));
            hp_sb_put(b, "</td><td>");
            hp_sb_html(b, hp_rep_json_str(t, "name", ""));
            hp_sb_put(b, "</td><td>");
            shape(b, hp_json_get(t, "shape"));
            hp_sb_put(b, "</td><td>");
            hp_sb_html(b, hp_rep_json_str(t, "layout", ""));
            hp_sb_put(b, "</td><td>");
            shape(b, hp_json_get(t, "local_shape"));
            hp_sb_put(b, "</td></tr>");
        }
        hp_sb_put(b, "</table></div>\n");
    }
    hp_sb_put(b, "<h2>Collectives per training step</h2><table id=\"collectives\"><tr><th>rank</th><th>phase</th>"
                 "<th>kind</th><th>count</th><th>bytes sent</th></tr>");
    for (int k = 0; k < ranks->n; k++) {
        const hp_json *tot = hp_json_get(&ranks->items[k], "totals");
        for (int i = 0; tot && tot->type == HP_JSON_ARRAY && i < tot->n; i++) {
            const hp_json *t = &tot->items[i];
            hp_sb_printf(b, "<tr><td>%d</td><td>", (int)hp_rep_json_num(&ranks->items[k], "rank", k));
            hp_sb_html(b, hp_rep_json_str(t, "phase", ""));
            hp_sb_put(b, "</td><td>");
            hp_sb_html(b, hp_rep_json_str(t, "kind", ""));
            hp_sb_printf(b, "</td><td class=\"num\">%.0f</td><td class=\"num\">%.0f</td></tr>",
                         hp_rep_json_num(t, "count", 0), hp_rep_json_num(t, "bytes", 0));
        }
    }
    hp_sb_put(b, "</table>\n");
}

static void machine_table(hp_sbuf *b, const hp_rep_run *r) {
    if (!r->machine) return;
    hp_sb_put(b, "<h2>Machine</h2><table id=\"machine\">");
    char buf[1000];
    for (int i = 0; i < r->machine->n; i++) {
        scalar(buf, sizeof buf, &r->machine->items[i]);
        text_row(b, r->machine->keys[i], buf);
    }
    hp_sb_put(b, "</table>\n");
}

hp_status hp_rep_run_page(char **html, size_t *len, hp_rep_summary *sum, const hp_rep_run *runs, int n,
                          const hp_rep_opts *o_) {
    memset(sum, 0, sizeof *sum);
    hp_rep_opts o = *o_;
    if (o.width <= 0) o.width = 760;
    hp_sbuf b;
    hp_sb_init(&b);
    char title[300];
    snprintf(title, sizeof title, "hyperpar run %s", runs[0].name);
    hp_rep_page_begin(&b, title);
    header(&b, &runs[0], sum);
    const hp_series *loss = hp_rep_metrics_get(&runs[0].metrics, "loss");
    sum->steps = loss ? loss->n : 0;
    sum->truncated = runs[0].metrics.truncated;
    if (n > 1) compare(&b, runs, n, sum);
    hp_sb_put(&b, "<h2>Training</h2><div class=\"grid2\">\n");
    field_chart(&b, runs, n, &o, "plot-loss", "loss", "loss", "val_loss", "loss (nats per token)", 1);
    field_chart(&b, runs, n, &o, "plot-lr", "learning rate", "lr", NULL, "learning rate", 1);
    field_chart(&b, runs, n, &o, "plot-grad-norm", "gradient norm", "grad_norm", NULL, "global L2 norm", 1);
    field_chart(&b, runs, n, &o, "plot-tokens", "throughput", "tokens_per_s", NULL, "tokens / s", 0);
    field_chart(&b, runs, n, &o, "plot-mfu", "MFU", "mfu", NULL, "fraction of FP32 peak", 0);
    field_chart(&b, runs, n, &o, "plot-step-ms", "step time", "step_ms", NULL, "ms per step", 1);
    split_chart(&b, &runs[0], &o);
    const hp_rep_metrics *m = &runs[0].metrics;
    for (int i = 0; i < m->n; i++)
        if (!is_known(m->m[i].name)) {
            char id[80];
            snprintf(id, sizeof id, "plot-x-%s", m->m[i].name);
            field_chart(&b, runs, 1, &o, id, m->m[i].name, m->m[i].name, NULL, m->m[i].name, 0);
        }
    memory_chart(&b, &runs[0], &o);
    hp_sb_put(&b, "</div>\n");
    if (!hp_rep_metrics_get(m, "mfu"))
        hp_sb_put(&b, "<p class=\"missing\">MFU and the step-time split are drawn when the metrics record them "
                      "(fields mfu, compute_ms, comm_ms, optimizer_ms, other_ms); a traced run's split is below.</p>\n");
    timeline(&b, &runs[0], &o, sum);
    config_table(&b, &runs[0]);
    plan_tables(&b, &runs[0]);
    machine_table(&b, &runs[0]);
    hp_rep_page_end(&b);
    return hp_sb_finish(html, len, &b);
}
