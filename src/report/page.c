/* report/page: a run's page (see report/pages.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/fmt.h"
#include "report/jsonfile.h"
#include "report/pages.h"
#include "report/svg.h"

static const char *const known[] = {"loss",    "val_loss",   "lr",      "grad_norm",    "tokens_per_s", "mfu",
                                    "step_ms", "compute_ms", "comm_ms", "optimizer_ms", "other_ms"};

/* The loss chart opens smoothed with TensorBoard's default weight. */
#define SMOOTHING 0.6

static void text_row(hp_sbuf *b, const char *k, const char *v) {
    hp_sb_put(b, "<tr><th>");
    hp_sb_html(b, k);
    hp_sb_put(b, "</th><td>");
    hp_sb_html(b, v);
    hp_sb_put(b, "</td></tr>");
}

/* A JSON scalar as text (numbers rounded, whole numbers as they are). */
static void scalar(char *buf, size_t n, const hp_json *v) {
    switch (v->type) {
    case HP_JSON_STRING: snprintf(buf, n, "%s", v->str); break;
    case HP_JSON_NUMBER: hp_rep_fmt(buf, n, v->number, NULL); break;
    case HP_JSON_BOOL: snprintf(buf, n, "%s", v->boolean ? "true" : "false"); break;
    case HP_JSON_NULL: snprintf(buf, n, "-"); break;
    default: snprintf(buf, n, "(%d items)", v->n); break;
    }
}

/* "R ranks x T threads on C cores" of an oversubscribed run. */
static void oversubscription(char *buf, size_t n, const hp_rep_run *r) {
    snprintf(buf, n, "%d rank%s \u00d7 %d thread%s = %ld threads on %d core%s", r->over_ranks, r->over_ranks == 1 ? "" : "s",
             r->over_threads, r->over_threads == 1 ? "" : "s", (long)r->over_ranks * r->over_threads, r->over_cores,
             r->over_cores == 1 ? "" : "s");
}

static void header(hp_sbuf *b, const hp_rep_run *r, hp_rep_summary *sum) {
    hp_sb_put(b, "<h1>hyperpar run ");
    hp_sb_html(b, r->name);
    hp_sb_put(b, "</h1>\n");
    const hp_series *loss = hp_rep_metrics_get(&r->metrics, "loss");
    long last = loss && loss->n ? (long)loss->x[loss->n - 1] : 0; /* steps are at most 2^53 (report/metrics) */
    const char *status = r->run ? hp_rep_json_str(r->run, "status", "unknown") : NULL;
    sum->finished = status && !strcmp(status, "done");
    hp_sb_put(b, "<table class=\"summary\">");
    char buf[1400];
    if (status) text_row(b, "status", status);
    snprintf(buf, sizeof buf, "%ld (last step %ld)", loss ? (long)loss->n : 0L, last);
    text_row(b, "training steps recorded", buf);
    if (r->run) {
        static const char *const keys[][2] = {
            {"steps", "steps planned"}, {"mesh", "mesh"},          {"ranks", "ranks"},
            {"started", "started"},     {"updated", "updated"},    {"command", "command"},
            {"ckpt_dir", "checkpoints"}, {"metrics", "metrics"},   {"trace", "traces"},
            {"peak_rss_mb", "peak memory (resident, this process)"}, {"error", "error"}};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            const hp_json *v = hp_json_get(r->run, keys[i][0]);
            if (!v || v->type == HP_JSON_NULL) continue;
            if (!strcmp(keys[i][0], "peak_rss_mb") && v->type == HP_JSON_NUMBER) /* MiB, as getrusage counts */
                hp_rep_fmt_bytes(buf, sizeof buf, v->number * 1048576.0);
            else
                scalar(buf, sizeof buf, v);
            text_row(b, keys[i][1], buf);
        }
    } else {
        text_row(b, "metrics", r->metrics_path);
    }
    hp_sb_put(b, "</table>\n");
    if (r->over_ranks > 0) {
        oversubscription(buf, sizeof buf, r);
        hp_sb_put(b, "<p class=\"note warn\" id=\"oversubscribed\"><b>Oversubscribed:</b> ");
        hp_sb_html(b, buf);
        hp_sb_put(b, ". Ranks \u00d7 threads exceed the cores, so a rank waiting in a collective is often waiting for "
                     "another that is descheduled: exposed communication and step time read higher, and throughput "
                     "lower, than the same run on enough cores.</p>\n");
    }
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

/* A simulated step's page head: what the cost model predicted (the split adds up to the step). */
static void sim_header(hp_sbuf *b, const hp_rep_run *r, hp_rep_summary *sum) {
    const hp_json *j = r->sim;
    sum->simulated = 1;
    sum->predicted_ms = hp_rep_json_num(j, "step_ms", 0);
    hp_sb_put(b, "<h1>hyperpar simulated step ");
    hp_sb_html(b, r->name);
    hp_sb_put(b, "</h1>\n<p class=\"note\" id=\"simulated\">Predicted by <code>hyperpar simulate</code> (the cost "
                 "model over the compiled program), not measured: no training ran, so there are no curves. The "
                 "timeline below is the first rank of each pipeline stage.</p>\n<table class=\"summary\" id=\"sim\">");
    char buf[1400];
    static const char *const text[][2] = {{"mesh", "mesh"}, {"cluster", "cluster"}, {"profile", "profile"}};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++) text_row(b, text[i][1], hp_rep_json_str(j, text[i][0], "-"));
    long stages = hp_rep_json_long(j, "stages", 0, 1L << 40, 0);
    snprintf(buf, sizeof buf, "%ld ranks, %ld stage%s (the slowest: %ld)", hp_rep_json_long(j, "ranks", 0, 1L << 40, 0),
             stages, stages == 1 ? "" : "s", hp_rep_json_long(j, "slowest_stage", 0, 1L << 40, 0));
    text_row(b, "ranks", buf);
    static const char *const ms[][2] = {{"step_ms", "predicted step"},         {"compute_ms", "compute"},
                                        {"optimizer_ms", "optimizer"},         {"exposed_intra_ms", "exposed intra"},
                                        {"exposed_inter_ms", "exposed inter"}, {"bubble_ms", "pipeline bubble"},
                                        {"comm_intra_ms", "intra on the links"}, {"comm_inter_ms", "inter on the links"}};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        hp_rep_fmt(buf, sizeof buf, hp_rep_json_num(j, ms[i][0], 0), "ms");
        text_row(b, ms[i][1], buf);
    }
    hp_rep_fmt_bytes(buf, sizeof buf, hp_rep_json_num(j, "bytes_intra", 0));
    text_row(b, "bytes a rank moves, intra", buf);
    hp_rep_fmt_bytes(buf, sizeof buf, hp_rep_json_num(j, "bytes_inter", 0));
    text_row(b, "bytes a rank moves, inter", buf);
    hp_rep_fmt(buf, sizeof buf, hp_rep_json_num(j, "tokens_per_s", 0), NULL);
    text_row(b, "tokens/s", buf);
    snprintf(buf, sizeof buf, "%.1f%%", 100 * hp_rep_json_num(j, "mfu", 0));
    text_row(b, "MFU", buf);
    hp_sb_put(b, "</table>\n");
}

/* The prediction's inputs, as simulate printed them. */
static void sim_assumptions(hp_sbuf *b, const hp_json *j) {
    const hp_json *as = hp_json_get(j, "assumptions");
    if (as && as->type == HP_JSON_ARRAY && as->n) {
        hp_sb_put(b, "<h2>Assumptions</h2><ul id=\"assumptions\">");
        for (int i = 0; i < as->n; i++)
            if (as->items[i].type == HP_JSON_STRING) {
                hp_sb_put(b, "<li>");
                hp_sb_html(b, as->items[i].str);
                hp_sb_put(b, "</li>");
            }
        hp_sb_put(b, "</ul>\n");
    }
}

static void compare(hp_sbuf *b, const hp_rep_run *runs, int n, hp_rep_summary *sum) {
    const hp_series *a = hp_rep_metrics_get(&runs[0].metrics, "loss");
    hp_sb_put(b, "<h2>Comparison of training losses</h2><table id=\"compare\"><tr><th>run</th><th>against</th>"
                 "<th>common steps</th><th>Pearson r</th><th>max |&Delta;loss| (nats per token)</th></tr>");
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
        hp_sb_printf(b, "</td><td class=\"num\">%ld</td><td class=\"num\">", c.n);
        if (isnan(c.pearson)) hp_sb_put(b, "n/a");
        else hp_sb_printf(b, "%.6f", c.pearson);
        if (c.n > 0 && c.max_abs_delta == 0) hp_sb_put(b, "</td><td class=\"num\">0 (identical: the curves coincide)");
        else hp_sb_printf(b, "</td><td class=\"num\">%.3g", c.max_abs_delta);
        hp_sb_put(b, "</td></tr>");
    }
    hp_sb_put(b, "</table>\n");
}

static int same_curve(const hp_series *a, const hp_series *b) {
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++)
        if (a->x[i] != b->x[i] || a->y[i] != b->y[i]) return 0;
    return 1;
}

enum { MAXL = 2 * (HP_REP_MAX_CMP + 1) };

/* One line chart of field `f` over every run that has it (and `f2` dashed).
 * A run's curve identical to one drawn before is dashed over it, and the
 * legend says so; smoothing > 0: the `f` curves are smoothed. */
static void field_chart(hp_sbuf *b, const hp_rep_run *runs, int n, const hp_rep_opts *o, const char *id,
                        const char *title, const char *f, const char *f2, const char *ylabel, int logopt,
                        double smoothing) {
    hp_rep_line l[MAXL];
    char names[MAXL][300], notes[MAXL][320];
    int field[MAXL];
    int m = 0;
    for (int i = 0; i < n && i <= HP_REP_MAX_CMP; i++)
        for (int k = 0; k < 2; k++) {
            const char *fk = k ? f2 : f;
            const hp_series *s = fk ? hp_rep_metrics_get(&runs[i].metrics, fk) : NULL;
            if (!s || s->n == 0) continue;
            if (n > 1) snprintf(names[m], sizeof names[m], "%.250s%s", runs[i].name, f2 ? (k ? " val" : " train") : "");
            else snprintf(names[m], sizeof names[m], "%s", f2 ? (k ? "validation" : "training") : "");
            l[m] = (hp_rep_line){.name = names[m], .s = s, .color = hp_rep_color(n > 1 ? i : k),
                                 .dash = k ? HP_REP_DASHED : HP_REP_SOLID, .smooth = !k};
            field[m] = k;
            int over = 0;
            for (int j = 0; j < m && !l[m].note; j++)
                if (field[j] == k && same_curve(l[j].s, s)) {
                    snprintf(notes[m], sizeof notes[m], "coincides with %.280s: dashed over it", names[j]);
                    l[m].note = notes[m];
                }
            for (int j = 0; j < m; j++) over += l[j].dash >= HP_REP_OVER;
            if (l[m].note) l[m].dash = HP_REP_OVER + over;
            m++;
        }
    if (!m) return;
    hp_rep_chart c = {.id = id, .title = title, .xlabel = "step", .ylabel = ylabel, .width = o->width, .height = 250,
                      .log_option = logopt, .smoothing = smoothing};
    hp_rep_svg_lines(b, &c, l, m);
}

/* The step-time split of one run, stacked. */
static void split_chart(hp_sbuf *b, const hp_rep_run *r, int i, int n, const hp_rep_opts *o) {
    static const char *const parts[] = {"compute_ms", "comm_ms", "optimizer_ms", "other_ms"};
    static const char *const names[] = {"compute", "exposed communication", "optimizer", "other"};
    hp_rep_line l[4];
    int m = 0;
    for (int k = 0; k < 4; k++) {
        const hp_series *s = hp_rep_metrics_get(&r->metrics, parts[k]);
        if (s && s->n)
            l[m++] = (hp_rep_line){.name = names[k], .s = s, .color = hp_rep_color(k),
                                   .note = k == 1 && r->over_ranks > 0 ? "* includes time descheduled" : NULL};
    }
    if (!m) return;
    char id[40], title[400];
    if (i) snprintf(id, sizeof id, "plot-split-%d", i);
    else snprintf(id, sizeof id, "plot-split");
    snprintf(title, sizeof title, "step-time split%s%s (stacked)", n > 1 ? ": " : "", n > 1 ? r->name : "");
    hp_rep_chart c = {.id = id, .title = title, .xlabel = "step", .ylabel = "time per step (ms)", .width = o->width,
                      .height = 250};
    hp_rep_svg_stack(b, &c, l, m);
}

static int is_known(const char *k) {
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(k, known[i])) return 1;
    return 0;
}

static const hp_json *plan_ranks(const hp_rep_run *r) {
    const hp_json *ranks = r->plan ? hp_json_get(r->plan, "ranks") : NULL;
    return ranks && ranks->type == HP_JSON_ARRAY && ranks->n > 0 ? ranks : NULL;
}

/* Memory per rank of every run (groups "RUN: rank K" when there are more). */
static void memory_chart(hp_sbuf *b, const hp_rep_run *runs, int n, const hp_rep_opts *o) {
    static const char *const parts[] = {"params", "grads", "optimizer", "activations", "scratch", "inputs"};
    int ng = 0;
    for (int i = 0; i < n; i++) ng += plan_ranks(&runs[i]) ? plan_ranks(&runs[i])->n : 0;
    if (!ng) return;
    double *v = calloc((size_t)ng * 6, sizeof *v);
    char(*lab)[300] = calloc((size_t)ng, sizeof *lab);
    const char **labels = calloc((size_t)ng, sizeof *labels);
    if (!v || !lab || !labels) {
        b->oom = 1;
        free(v), free(lab), free(labels);
        return;
    }
    double most = 0;
    int g = 0;
    for (int i = 0; i < n; i++) {
        const hp_json *ranks = plan_ranks(&runs[i]);
        for (int k = 0; ranks && k < ranks->n; k++, g++) {
            const hp_json *rk = &ranks->items[k], *mem = hp_json_get(rk, "memory");
            long rank = hp_rep_json_long(rk, "rank", 0, HP_REP_MAX_RANKS - 1, k);
            if (n > 1) snprintf(lab[g], sizeof lab[g], "%.200s: rank %ld", runs[i].name, rank);
            else snprintf(lab[g], sizeof lab[g], "rank %ld", rank);
            labels[g] = lab[g];
            double total = 0;
            for (int p = 0; p < 6; p++) {
                double x = mem ? hp_rep_json_num(mem, parts[p], 0) : 0;
                v[g * 6 + p] = isfinite(x) && x > 0 ? x : 0;
                total += v[g * 6 + p];
            }
            if (total > most) most = total;
        }
    }
    double div;
    const char *unit = hp_rep_bytes_unit(&div, most);
    for (int k = 0; k < ng * 6; k++) v[k] /= div;
    char xl[40];
    snprintf(xl, sizeof xl, "memory (%s)", unit);
    hp_rep_chart c = {.id = "plot-memory", .title = "memory per rank (the compiled program's buffers)", .xlabel = xl,
                      .ylabel = "", .width = o->width, .unit = unit};
    hp_rep_svg_bars(b, &c, ng, labels, 6, parts, v);
    free(v), free(lab), free(labels);
}

static void ms_cell(hp_sbuf *b, double v) {
    char t[40];
    hp_rep_fmt(t, sizeof t, v, NULL);
    hp_sb_printf(b, "<td class=\"num\">%s</td>", t);
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
    long first = r->trace_first;
    if (r->sim)
        hp_sb_printf(b, "<h2>Timeline: the predicted step, %d stage%s (the first rank of each)</h2>\n", r->ntraces,
                     r->ntraces == 1 ? "" : "s");
    else
        hp_sb_printf(b, "<h2>Traces: %d rank%s, traced steps %d to %d of %d (training steps %ld to %ld)</h2>\n", r->ntraces,
                 r->ntraces == 1 ? "" : "s", from + 1, to + 1, nsteps, first + from, first + to);
    hp_rep_svg_timeline(b, "plot-timeline", o->width > 1100 ? o->width : 1100, r->traces, r->ntraces, from, to);
    double comm = 0, hidden = 0;
    const char *mark = r->over_ranks > 0 ? "<sup>*</sup>" : "";
    hp_sb_printf(b, "<table id=\"trace-split\"><tr><th>rank</th><th>steps</th><th>span</th><th>compute</th>"
                    "<th>optimizer</th><th>communication</th><th>hidden behind compute</th>"
                    "<th class=\"exposed\">exposed%s</th><th>other</th><th>hidden share</th><th>dropped events</th></tr>"
                    "<tr class=\"units\"><th></th><th></th><th colspan=\"7\">ms per step</th><th>%%</th><th></th></tr>",
                 mark);
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
        hp_sb_printf(b, "<tr><td>%d</td><td class=\"num\">%d</td>", r->traces[i].rank, k);
        ms_cell(b, s.span / d), ms_cell(b, s.compute / d), ms_cell(b, s.optimizer / d), ms_cell(b, s.comm / d);
        ms_cell(b, s.hidden / d), ms_cell(b, (s.comm - s.hidden) / d), ms_cell(b, s.other / d);
        if (s.comm > 0) hp_sb_printf(b, "<td class=\"num\">%.1f</td>", 100 * s.hidden / s.comm);
        else hp_sb_put(b, "<td class=\"num\">-</td>");
        hp_sb_printf(b, "<td class=\"num\">%lld</td></tr>", (long long)r->traces[i].dropped);
        snprintf(lab[i], sizeof lab[i], "rank %d", r->traces[i].rank);
        labels[i] = lab[i];
        v[i * 4 + 0] = s.compute / d, v[i * 4 + 1] = (s.comm - s.hidden) / d, v[i * 4 + 2] = s.optimizer / d;
        v[i * 4 + 3] = s.other / d;
    }
    hp_sb_put(b, "</table>\n");
    if (r->over_ranks > 0) {
        char buf[200];
        oversubscription(buf, sizeof buf, r);
        hp_sb_put(b, "<p class=\"note\" id=\"exposed-note\"><sup>*</sup> ranks \u00d7 threads exceed the cores (");
        hp_sb_html(b, buf);
        hp_sb_put(b, "): waiting includes time descheduled.</p>\n");
    }
    sum->hidden_share = comm > 0 ? hidden / comm : -1;
    if (comm > 0)
        hp_sb_printf(b, "<p id=\"hidden-share\">Communication hidden behind compute over these steps: <b>%.1f%%</b> "
                        "(%.3f of %.3f ms of collectives, all ranks).</p>\n",
                     100 * hidden / comm, hidden / 1e3, comm / 1e3);
    else
        hp_sb_put(b, "<p id=\"hidden-share\">No collectives in these steps.</p>\n");
    if (v && lab && labels) {
        static const char *const parts[] = {"compute", "exposed communication", "optimizer", "other"};
        hp_rep_chart c = {.id = "plot-trace-split", .title = "step-time split per rank (traced steps)",
                          .xlabel = "time per step (ms)", .ylabel = "", .width = o->width, .unit = "ms"};
        hp_sb_put(b, "<div class=\"grid2\">");
        hp_rep_svg_bars(b, &c, ng, labels, 4, parts, v);
        hp_sb_put(b, "</div>");
    }
    free(v), free(lab), free(labels);
}

/* A setting's value; a decimal fraction rounded to 6 significant digits
 * (a float setting reads back as 0.00100000005). */
static void value_cell(hp_sbuf *b, const char *v) {
    char *end;
    double x = strtod(v, &end);
    if (v[0] && !*end && strspn(v, "0123456789.eE+-") == strlen(v) && strpbrk(v, ".eE") && isfinite(x))
        hp_sb_printf(b, "%.6g", x);
    else
        hp_sb_html(b, v);
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
        value_cell(b, hp_rep_json_str(&s->items[i], "value", ""));
        hp_sb_put(b, "</td><td>");
        hp_sb_html(b, src);
        hp_sb_put(b, "</td></tr>");
    }
    hp_sb_put(b, "</table></div>\n");
}

static void shape(hp_sbuf *b, const hp_json *a) {
    hp_sb_put(b, "[");
    for (int i = 0; a && a->type == HP_JSON_ARRAY && i < a->n; i++) {
        if (a->items[i].type == HP_JSON_NUMBER) hp_sb_printf(b, "%s%.0f", i ? ", " : "", a->items[i].number);
        else hp_sb_printf(b, "%s?", i ? ", " : "");
    }
    hp_sb_put(b, "]");
}

static void collectives_table(hp_sbuf *b, const hp_json *ranks, int nranks) {
    int rows = 0;
    for (int k = 0; k < ranks->n; k++) {
        const hp_json *tot = hp_json_get(&ranks->items[k], "totals");
        if (tot && tot->type == HP_JSON_ARRAY) rows += tot->n;
    }
    hp_sb_put(b, "<h2>Collectives per training step</h2>");
    if (!rows) {
        hp_sb_printf(b, "<p id=\"collectives\">None: %s.</p>\n",
                     nranks == 1 ? "one rank has no one to talk to" : "the plan moves no data between its ranks");
        return;
    }
    hp_sb_put(b, "<table id=\"collectives\"><tr><th>rank</th><th>phase</th><th>kind</th><th>count</th>"
                 "<th>bytes sent</th></tr>");
    for (int k = 0; k < ranks->n; k++) {
        const hp_json *tot = hp_json_get(&ranks->items[k], "totals");
        for (int i = 0; tot && tot->type == HP_JSON_ARRAY && i < tot->n; i++) {
            const hp_json *t = &tot->items[i];
            char cnt[40], bytes[40];
            hp_rep_fmt(cnt, sizeof cnt, hp_rep_json_num(t, "count", 0), NULL);
            hp_rep_fmt_bytes(bytes, sizeof bytes, hp_rep_json_num(t, "bytes", 0));
            hp_sb_printf(b, "<tr><td>%ld</td><td>", hp_rep_json_long(&ranks->items[k], "rank", 0, HP_REP_MAX_RANKS - 1, k));
            hp_sb_html(b, hp_rep_json_str(t, "phase", ""));
            hp_sb_put(b, "</td><td>");
            hp_sb_html(b, hp_rep_json_str(t, "kind", ""));
            hp_sb_printf(b, "</td><td class=\"num\">%s</td><td class=\"num\">%s</td></tr>", cnt, bytes);
        }
    }
    hp_sb_put(b, "</table>\n");
}

static void plan_tables(hp_sbuf *b, const hp_rep_run *r) {
    const hp_json *p = r->plan;
    if (!p) return;
    const char *mesh = hp_rep_json_str(p, "mesh", "?");
    const hp_json *ranks = plan_ranks(r);
    int nranks = r->plan_nranks > 0 ? r->plan_nranks : ranks ? ranks->n : 1;
    hp_sb_put(b, "<h2>Plan as compiled</h2><p id=\"mesh\">mesh <b>");
    hp_sb_html(b, mesh);
    hp_sb_put(b, "</b>");
    if (!strstr(mesh, "rank")) hp_sb_printf(b, ", %d rank%s", nranks, nranks == 1 ? "" : "s");
    hp_sb_put(b, "</p>");
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
    if (!ranks) return;
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
    collectives_table(b, ranks, nranks);
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
    snprintf(title, sizeof title, "hyperpar %s %s", runs[0].sim ? "simulated step" : "run", runs[0].name);
    hp_rep_page_begin(&b, title);
    if (runs[0].sim) { /* a simulated step: its prediction and timeline */
        sim_header(&b, &runs[0], sum);
        timeline(&b, &runs[0], &o, sum);
        sim_assumptions(&b, runs[0].sim);
        hp_rep_page_end(&b);
        return hp_sb_finish(html, len, &b);
    }
    header(&b, &runs[0], sum);
    const hp_series *loss = hp_rep_metrics_get(&runs[0].metrics, "loss");
    sum->steps = loss ? loss->n : 0;
    sum->truncated = runs[0].metrics.truncated;
    if (n > 1) compare(&b, runs, n, sum);
    hp_sb_put(&b, "<h2>Training</h2><div class=\"grid2\">\n");
    field_chart(&b, runs, n, &o, "plot-loss", "loss", "loss", "val_loss", "loss (nats per token)", 1, SMOOTHING);
    field_chart(&b, runs, n, &o, "plot-lr", "learning rate", "lr", NULL, "learning rate", 1, 0);
    field_chart(&b, runs, n, &o, "plot-grad-norm", "gradient norm", "grad_norm", NULL, "gradient norm (global L2)", 1,
                0);
    field_chart(&b, runs, n, &o, "plot-tokens", "throughput", "tokens_per_s", NULL, "throughput (tokens/s)", 0, 0);
    field_chart(&b, runs, n, &o, "plot-mfu", "MFU", "mfu", NULL, "MFU (of the FP32 peak)", 0, 0);
    field_chart(&b, runs, n, &o, "plot-step-ms", "step time", "step_ms", NULL, "step time (ms)", 1, 0);
    for (int i = 0; i < n; i++) split_chart(&b, &runs[i], i, n, &o);
    const hp_rep_metrics *m = &runs[0].metrics;
    for (int i = 0; i < m->n; i++)
        if (!is_known(m->m[i].name)) {
            char id[80], yl[120];
            const char *unit = hp_rep_field_unit(m->m[i].name);
            snprintf(id, sizeof id, "plot-x-%s", m->m[i].name);
            snprintf(yl, sizeof yl, "%s%s%s%s", m->m[i].name, unit[0] ? " (" : "", unit, unit[0] ? ")" : "");
            field_chart(&b, runs, 1, &o, id, m->m[i].name, m->m[i].name, NULL, yl, 0, 0);
        }
    memory_chart(&b, runs, n, &o);
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
