/* report/svg: inline SVG charts (see the header). */
#include "report/svg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/fmt.h"

enum { ML = 70, MR = 24, MT = 10, MB = 42 };

/* Values beyond this are drawn at it: differences of drawn values stay finite. */
#define BIG 1e300
static double clampv(double v) { return v > BIG ? BIG : v < -BIG ? -BIG : v; }

const char *hp_rep_color(int i) {
    static const char *const pal[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                      "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"};
    return pal[(unsigned)i % (sizeof pal / sizeof pal[0])];
}

/* Tick values: a step of 1, 2 or 5 times a power of ten giving about n
 * ticks (whole: at least 1, for counts such as steps). */
static int ticks(double *out, int max, double lo, double hi, int n, int whole) {
    if (!(hi > lo)) {
        out[0] = lo;
        return 1;
    }
    double raw = (hi - lo) / n, p = pow(10, floor(log10(raw))), f = raw / p;
    double step = (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
    if (whole && step < 1) step = 1;
    int k = 0;
    for (double v = ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9 && k < max; v += step)
        out[k++] = fabs(v) < step * 1e-9 ? 0 : v;
    return k;
}

static void num(char *buf, size_t n, double v) {
    double a = fabs(v);
    if (a != 0 && (a >= 1e6 || a < 1e-3)) snprintf(buf, n, "%.3g", v);
    else snprintf(buf, n, "%.6g", v);
}

typedef struct {
    double x0, x1, y0, y1; /* data range (log10 values on log axes) */
    int logx, logy;
    double px0, px1, py0, py1; /* plot area */
} frame;

static double fx(const frame *f, double x) {
    double v = f->logx ? log10(x) : clampv(x);
    return f->px0 + (f->x1 > f->x0 ? (v - f->x0) / (f->x1 - f->x0) : 0.5) * (f->px1 - f->px0);
}
static double fy(const frame *f, double y) {
    double v = f->logy ? log10(y) : clampv(y);
    return f->py1 - (f->y1 > f->y0 ? (v - f->y0) / (f->y1 - f->y0) : 0.5) * (f->py1 - f->py0);
}

static void axes(hp_sbuf *b, const frame *f, const hp_rep_chart *c) {
    char t[40];
    hp_sb_printf(b, "<rect class=\"area\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>", f->px0, f->py0,
                 f->px1 - f->px0, f->py1 - f->py0);
    double tv[64];
    for (int axis = 0; axis < 2; axis++) {
        int lg = axis ? f->logy : f->logx;
        double lo = axis ? f->y0 : f->x0, hi = axis ? f->y1 : f->x1;
        int nt;
        if (lg) {
            nt = 0;
            for (double e = ceil(lo - 1e-9); e <= hi + 1e-9 && nt < 64; e++) tv[nt++] = e;
            if (nt < 2 && hi - lo < 1.5) /* within a decade or two: 1, 2, 5 marks */
                for (double e = floor(lo); e <= hi && nt < 60; e++)
                    for (int m = 2; m <= 5; m += 3)
                        if (e + log10(m) >= lo && e + log10(m) <= hi) tv[nt++] = e + log10(m);
        } else {
            nt = ticks(tv, 64, lo, hi, axis ? 5 : 7, !axis && !strcmp(c->xlabel, "step"));
        }
        for (int i = 0; i < nt; i++) {
            double v = lg ? pow(10, tv[i]) : tv[i];
            if (!isfinite(v)) continue; /* a mark past the largest double */
            if (lg && !axis) { /* sizes: 64K, 1M, 2G */
                double r = v >= 1e9 ? v / 1e9 : v >= 1e6 ? v / 1e6 : v >= 1e3 ? v / 1e3 : v;
                snprintf(t, sizeof t, "%.3g%s", r, v >= 1e9 ? "G" : v >= 1e6 ? "M" : v >= 1e3 ? "k" : "");
            } else {
                num(t, sizeof t, v);
            }
            if (axis) {
                double y = fy(f, v);
                hp_sb_printf(b, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                                "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
                             f->px0, f->px1, y, y, f->px0 - 4, y + 4, t);
            } else {
                double x = fx(f, v);
                hp_sb_printf(b, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                                "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
                             x, x, f->py0, f->py1, x, f->py1 + 14, t);
            }
        }
    }
    hp_sb_printf(b, "<text class=\"axis-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (f->px0 + f->px1) / 2,
                 f->py1 + 32);
    hp_sb_html(b, c->xlabel);
    hp_sb_printf(b, "</text><text class=\"axis-label\" transform=\"translate(14 %.1f) rotate(-90)\" "
                    "text-anchor=\"middle\">",
                 (f->py0 + f->py1) / 2);
    hp_sb_html(b, c->ylabel);
    hp_sb_put(b, "</text>");
}

static void legend(hp_sbuf *b, const hp_rep_line *l, int n) {
    if (n < 2 && !(n == 1 && l[0].name && l[0].name[0])) return;
    hp_sb_put(b, "<span class=\"legend\">");
    for (int i = 0; i < n; i++) {
        hp_sb_printf(b, "<span><i style=\"background:%s\"></i>", l[i].color);
        hp_sb_html(b, l[i].name ? l[i].name : "");
        if (l[i].note) {
            hp_sb_put(b, " <small>(");
            hp_sb_html(b, l[i].note);
            hp_sb_put(b, ")</small>");
        }
        hp_sb_put(b, "</span>");
    }
    hp_sb_put(b, "</span>");
}

static void figure_open(hp_sbuf *b, const hp_rep_chart *c) {
    hp_sb_put(b, "<figure class=\"plot\" id=\"");
    hp_sb_html(b, c->id);
    hp_sb_put(b, "\"><figcaption><b>");
    hp_sb_html(b, c->title);
    hp_sb_put(b, "</b>");
}

/* The frame of a chart over the placeable points of n curves. */
static void fit(frame *f, const hp_rep_line *l, int n, int logy) {
    int any = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < l[i].s->n; k++) {
            double x = l[i].s->x[k], y = l[i].s->y[k];
            if ((f->logx && !(x > 0)) || (logy && !(y > 0)) || !isfinite(x) || !isfinite(y)) continue;
            double vx = f->logx ? log10(x) : clampv(x), vy = logy ? log10(y) : clampv(y);
            if (!any) f->x0 = f->x1 = vx, f->y0 = f->y1 = vy, any = 1;
            if (vx < f->x0) f->x0 = vx;
            if (vx > f->x1) f->x1 = vx;
            if (vy < f->y0) f->y0 = vy;
            if (vy > f->y1) f->y1 = vy;
        }
    if (!any) f->x0 = 0, f->x1 = 1, f->y0 = 0, f->y1 = 1;
    if (!(f->y1 > f->y0)) {
        double d = logy ? 0.5 : fabs(f->y0) > 0 ? fabs(f->y0) * 0.1 : 1;
        f->y0 -= d, f->y1 += d;
    } else if (!logy) {
        double pad = (f->y1 - f->y0) * 0.04;
        f->y0 -= pad, f->y1 += pad;
    }
    if (!(f->x1 > f->x0)) f->x0 -= 0.5, f->x1 += 0.5;
}

/* The frame as the page's script reads it: data range, plot area, log axes. */
static void group_open(hp_sbuf *b, const frame *f, const char *cls, int hidden, int stacked) {
    hp_sb_printf(b, "<g class=\"%s\"%s%s data-f=\"%.17g %.17g %.17g %.17g %.1f %.1f %.1f %.1f %d %d\">", cls,
                 hidden ? " style=\"display:none\"" : "", stacked ? " data-stacked=\"1\"" : "", f->x0, f->x1, f->y0,
                 f->y1, f->px0, f->px1, f->py0, f->py1, f->logx, f->logy);
}

/* 1 when memory ran out (the error dropped: the page reports it once). */
static int push(hp_series *s, double x, double y) {
    hp_status st = hp_series_push(s, x, y);
    int bad = st != HP_OK;
    hp_status_free(st);
    return bad;
}

/* The points of (x, ys or s->y) the frame can place; 1 when memory ran out. */
static int placeable(hp_series *v, const frame *f, const hp_series *s, const double *ys) {
    for (int k = 0; k < s->n; k++) {
        double x = s->x[k], y = ys ? ys[k] : s->y[k];
        if (isfinite(x) && isfinite(y) && !(f->logx && !(x > 0)) && !(f->logy && !(y > 0)) && push(v, x, y)) return 1;
    }
    return 0;
}

/* One curve: <path class="CLS" data-series="NAME[ SUFFIX]" data-n=...>;
 * dots: mark few points (2: faintly, under a smoothed curve). */
static void curve(hp_sbuf *b, const frame *f, const hp_series *v, int *keep, const char *cls, const hp_rep_line *l,
                  const char *suffix, int dots) {
    double x0 = f->logx ? pow(10, f->x0) : f->x0, x1 = f->logx ? pow(10, f->x1) : f->x1;
    int m = hp_series_decimate(keep, v, x0, x1, f->logx ? 1 << 30 : (int)(f->px1 - f->px0));
    hp_sb_printf(b, "<path class=\"%s\" data-series=\"", cls);
    hp_sb_html(b, l->name ? l->name : "");
    hp_sb_printf(b, "%s\" data-n=\"%d\" stroke=\"%s\"", suffix, m, l->color);
    if (l->dash == HP_REP_DASHED) hp_sb_put(b, " stroke-dasharray=\"5 3\"");
    else if (l->dash >= HP_REP_OVER) /* over a curve it coincides with: both colours show */
        hp_sb_printf(b, " stroke-dasharray=\"6 6\" stroke-dashoffset=\"%d\"", 3 * ((l->dash - HP_REP_OVER) % 4));
    hp_sb_put(b, " d=\"");
    for (int k = 0; k < m; k++) hp_sb_printf(b, "%c%.1f %.1f", k ? 'L' : 'M', fx(f, v->x[keep[k]]), fy(f, v->y[keep[k]]));
    if (m == 1) hp_sb_put(b, "h0.1");
    hp_sb_put(b, "\"/>");
    if (dots && v->n > 0 && v->n <= 40) /* few points: mark them */
        for (int k = 0; k < m; k++)
            hp_sb_printf(b, "<circle class=\"dot%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>",
                         dots > 1 ? " raw" : "", fx(f, v->x[keep[k]]), fy(f, v->y[keep[k]]), l->color);
}

static void view(hp_sbuf *b, const hp_rep_chart *c, const hp_rep_line *l, int n, int logy, int *keep,
                 double *const *smoothed) {
    frame f = {.logx = c->logx, .logy = logy, .px0 = ML, .px1 = c->width - MR, .py0 = MT, .py1 = c->height - MB};
    fit(&f, l, n, logy);
    group_open(b, &f, logy ? "view-log" : "view-lin", logy, 0);
    axes(b, &f, c);
    for (int i = 0; i < n; i++) {
        int sm = smoothed && smoothed[i];
        hp_series v = {0};
        if (placeable(&v, &f, l[i].s, NULL)) b->oom = 1;
        curve(b, &f, &v, keep, sm ? "series raw" : "series", &l[i], "", sm ? 2 : 1);
        hp_series_free(&v);
        if (!sm) continue;
        if (placeable(&v, &f, l[i].s, smoothed[i])) b->oom = 1;
        curve(b, &f, &v, keep, "series smooth", &l[i], " smoothed", 0);
        hp_series_free(&v);
    }
    hp_sb_put(b, "</g>");
}

/* The smoothing control (shown by the page's script) and what is drawn without it. */
static void smoothing_control(hp_sbuf *b, double w) {
    hp_sb_printf(b, "<label class=\"smoothing\" hidden>smoothing <input type=\"range\" min=\"0\" max=\"0.99\" "
                    "step=\"0.01\" value=\"%.2f\"> <output>%.2f</output></label>"
                    "<span class=\"smooth-static\">smoothed (weight %.2f), raw curve faint</span>",
                 w, w, w);
}

/* The raw points of a smoothed curve, for the page's script to smooth again. */
static void smooth_source(hp_sbuf *b, const hp_rep_line *l) {
    hp_sb_put(b, "<g class=\"smooth-src\" data-series=\"");
    hp_sb_html(b, l->name ? l->name : "");
    hp_sb_put(b, "\" data-xy=\"");
    for (int k = 0, any = 0; k < l->s->n; k++)
        if (isfinite(l->s->x[k]) && isfinite(l->s->y[k]))
            hp_sb_printf(b, "%s%.15g %.9g", any++ ? " " : "", l->s->x[k], l->s->y[k]);
    hp_sb_put(b, "\"></g>");
}

void hp_rep_svg_lines(hp_sbuf *b, const hp_rep_chart *c, const hp_rep_line *l, int n) {
    int most = 1;
    for (int i = 0; i < n; i++)
        if (l[i].s->n > most) most = l[i].s->n;
    int *keep = malloc(sizeof(int) * (size_t)most);
    double **sm = c->smoothing > 0 && n > 0 ? calloc((size_t)n, sizeof *sm) : NULL;
    int oom = !keep || (c->smoothing > 0 && n > 0 && !sm);
    for (int i = 0; sm && i < n && !oom; i++)
        if (l[i].smooth) {
            sm[i] = malloc(sizeof(double) * (size_t)(l[i].s->n > 0 ? l[i].s->n : 1));
            if (!sm[i]) oom = 1;
            else hp_series_ema(sm[i], l[i].s, c->smoothing);
        }
    if (!oom) {
        figure_open(b, c);
        legend(b, l, n);
        if (c->log_option) hp_sb_put(b, "<label class=\"logtoggle\"><input type=\"checkbox\"> log scale</label>");
        if (sm) smoothing_control(b, c->smoothing);
        hp_sb_put(b, "<span class=\"hover\"></span>");
        hp_sb_printf(b, "</figcaption><svg class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">",
                     c->width, c->height, c->width, c->height);
        for (int i = 0; sm && i < n; i++)
            if (sm[i]) smooth_source(b, &l[i]);
        view(b, c, l, n, 0, keep, sm);
        if (c->log_option) view(b, c, l, n, 1, keep, sm);
        hp_sb_put(b, "</svg></figure>\n");
    } else {
        b->oom = 1;
    }
    for (int i = 0; sm && i < n; i++) free(sm[i]);
    free(sm);
    free(keep);
}

/* Layer values on the union of the layers' x: v[k * m + j] (>= 0, missing: 0). */
static int stack_values(hp_series *xs, double **v, const hp_rep_line *l, int n) {
    for (int k = 0; k < n; k++)
        for (int j = 0; j < l[k].s->n; j++)
            if (isfinite(l[k].s->x[j]) && push(xs, l[k].s->x[j], 0)) return 1;
    hp_series_dedupe(xs);
    int m = xs->n;
    *v = calloc((size_t)(n * m > 0 ? n * m : 1), sizeof **v);
    if (!*v) return 1;
    for (int k = 0; k < n; k++)
        for (int j = 0, i = 0; j < l[k].s->n; j++) { /* both sorted by x */
            while (i < m && xs->x[i] < l[k].s->x[j]) i++;
            if (i < m && xs->x[i] == l[k].s->x[j]) {
                double y = l[k].s->y[j];
                (*v)[k * m + i] = isfinite(y) && y > 0 ? (y < BIG / 16 ? y : BIG / 16) : 0;
            }
        }
    return 0;
}

void hp_rep_svg_stack(hp_sbuf *b, const hp_rep_chart *c, const hp_rep_line *l, int n) {
    hp_series xs = {0}, top = {0};
    double *v = NULL;
    int *keep = NULL;
    if (stack_values(&xs, &v, l, n) || !(keep = malloc(sizeof(int) * (size_t)(xs.n > 0 ? xs.n : 1)))) {
        b->oom = 1;
        hp_series_free(&xs), free(v), free(keep);
        return;
    }
    int m = xs.n;
    for (int k = 1; k < n; k++) /* the tops: cumulative */
        for (int j = 0; j < m; j++) v[k * m + j] += v[(k - 1) * m + j];
    frame f = {.px0 = ML, .px1 = c->width - MR, .py0 = MT, .py1 = c->height - MB};
    f.x0 = m ? xs.x[0] : 0, f.x1 = m ? xs.x[m - 1] : 1, f.y0 = 0, f.y1 = 0;
    for (int j = 0; n > 0 && j < m; j++)
        if (v[(n - 1) * m + j] > f.y1) f.y1 = v[(n - 1) * m + j];
    f.y1 = f.y1 > 0 ? f.y1 * 1.04 : 1;
    if (!(f.x1 > f.x0)) f.x0 -= 0.5, f.x1 += 0.5;
    /* one set of points for every layer: those of the total's decimation */
    top.x = xs.x, top.y = n > 0 ? v + (n - 1) * m : v, top.n = n > 0 ? m : 0;
    int nk = hp_series_decimate(keep, &top, f.x0, f.x1, (int)(f.px1 - f.px0));
    figure_open(b, c);
    legend(b, l, n);
    hp_sb_put(b, "<span class=\"hover\"></span>");
    hp_sb_printf(b, "</figcaption><svg class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">",
                 c->width, c->height, c->width, c->height);
    group_open(b, &f, "view-lin", 0, 1);
    axes(b, &f, c);
    for (int k = 0; k < n && nk > 0; k++) { /* the layer: its top forward, the one below back */
        hp_sb_printf(b, "<path class=\"layer\" fill=\"%s\" d=\"", l[k].color);
        for (int i = 0; i < nk; i++) hp_sb_printf(b, "%c%.1f %.1f", i ? 'L' : 'M', fx(&f, xs.x[keep[i]]), fy(&f, v[k * m + keep[i]]));
        for (int i = nk - 1; i >= 0; i--)
            hp_sb_printf(b, "L%.1f %.1f", fx(&f, xs.x[keep[i]]), fy(&f, k ? v[(k - 1) * m + keep[i]] : 0));
        hp_sb_put(b, "Z\"/>");
    }
    for (int k = 0; k < n && nk > 0; k++) {
        hp_sb_put(b, "<path class=\"series top\" data-series=\"");
        hp_sb_html(b, l[k].name ? l[k].name : "");
        hp_sb_printf(b, "\" data-n=\"%d\" stroke=\"%s\" d=\"", nk, l[k].color);
        for (int i = 0; i < nk; i++) hp_sb_printf(b, "%c%.1f %.1f", i ? 'L' : 'M', fx(&f, xs.x[keep[i]]), fy(&f, v[k * m + keep[i]]));
        if (nk == 1) hp_sb_put(b, "h0.1");
        hp_sb_put(b, "\"/>");
    }
    hp_sb_put(b, "</g></svg></figure>\n");
    hp_series_free(&xs), free(v), free(keep);
}

/* A part as drawn: >= 0, finite, small enough that a bar's parts add up finitely. */
static double bar_value(double v, int nstack) {
    double most = BIG / (nstack > 0 ? nstack : 1);
    return isfinite(v) && v > 0 ? (v < most ? v : most) : 0;
}

void hp_rep_svg_bars(hp_sbuf *b, const hp_rep_chart *c, int ng, const char *const *labels, int nstack,
                     const char *const *parts, const double *v) {
    enum { ROW = 22, LABEL = 170 };
    int h = MT + ng * ROW + MB;
    figure_open(b, c);
    if (nstack > 1) {
        hp_sb_put(b, "<span class=\"legend\">");
        for (int k = 0; k < nstack; k++) {
            hp_sb_printf(b, "<span><i style=\"background:%s\"></i>", hp_rep_color(k));
            hp_sb_html(b, parts[k]);
            hp_sb_put(b, "</span>");
        }
        hp_sb_put(b, "</span>");
    }
    hp_sb_printf(b, "</figcaption><svg class=\"chart bars\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">",
                 c->width, h, c->width, h);
    double most = 0;
    for (int g = 0; g < ng; g++) {
        double s = 0;
        for (int k = 0; k < nstack; k++) s += bar_value(v[g * nstack + k], nstack);
        if (s > most) most = s;
    }
    frame f = {.x0 = 0, .x1 = most > 0 ? most * 1.18 : 1, .y0 = 0, .y1 = 1, .px0 = LABEL, .px1 = c->width - MR,
               .py0 = MT, .py1 = MT + ng * ROW};
    /* x ticks and label only */
    double tv[64];
    char t[40];
    hp_sb_printf(b, "<rect class=\"area\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>", f.px0, f.py0,
                 f.px1 - f.px0, f.py1 - f.py0);
    int nt = ticks(tv, 64, f.x0, f.x1, 6, 0);
    for (int i = 0; i < nt; i++) {
        double x = fx(&f, tv[i]);
        num(t, sizeof t, tv[i]);
        hp_sb_printf(b, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                        "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
                     x, x, f.py0, f.py1, x, f.py1 + 14, t);
    }
    hp_sb_printf(b, "<text class=\"axis-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (f.px0 + f.px1) / 2,
                 f.py1 + 32);
    hp_sb_html(b, c->xlabel);
    hp_sb_put(b, "</text>");
    for (int g = 0; g < ng; g++) {
        double y = MT + g * ROW + 4, x = f.px0, sum = 0;
        hp_sb_printf(b, "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", LABEL - 6, y + 11);
        hp_sb_html(b, labels[g]);
        hp_sb_put(b, "</text>");
        for (int k = 0; k < nstack; k++) {
            double val = bar_value(v[g * nstack + k], nstack), w = fx(&f, sum + val) - fx(&f, sum);
            hp_rep_fmt(t, sizeof t, val, c->unit);
            hp_sb_printf(b, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"14\" fill=\"%s\">"
                            "<title>",
                         x, y, w, hp_rep_color(nstack > 1 ? k : g));
            hp_sb_html(b, labels[g]);
            if (nstack > 1) {
                hp_sb_put(b, ": ");
                hp_sb_html(b, parts[k]);
            }
            hp_sb_printf(b, " %s</title></rect>", t);
            x += w, sum += val;
        }
        hp_rep_fmt(t, sizeof t, sum, c->unit);
        hp_sb_printf(b, "<text class=\"val\" x=\"%.1f\" y=\"%.1f\">%s</text>", x + 3, y + 11, t);
    }
    hp_sb_put(b, "</svg></figure>\n");
}

static const char *kind_color(int k) {
    static const char *const c[] = {"#1f77b4", "#2ca02c", "#ff7f0e", "#d62728"};
    return c[k & 3];
}

/* One lane: events [lo, hi) of t with kinds in kmask and steps in range, as
 * rectangles merged when the gap is under a pixel. */
static void lane(hp_sbuf *b, const hp_rep_trace *t, int kmask, int from, int to, double t0, double scale, double x0,
                 double y, double h) {
    double cx0 = 0, cx1 = -1;
    int ck = -1;
    for (int i = 0; i <= t->n; i++) {
        const hp_rep_event *e = i < t->n ? &t->ev[i] : NULL;
        if (e && (!(kmask >> e->kind & 1) || e->step < from || e->step > to)) continue;
        double a = e ? x0 + (e->t0 - t0) * scale : 0, z = e ? x0 + (e->t1 - t0) * scale : 0;
        if (e && ck == e->kind && a <= cx1 + 1.0) {
            if (z > cx1) cx1 = z;
            continue;
        }
        if (ck >= 0)
            hp_sb_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"/>", cx0, y,
                         cx1 - cx0 > 0.3 ? cx1 - cx0 : 0.3, h, kind_color(ck));
        if (!e) break;
        ck = e->kind, cx0 = a, cx1 = z;
    }
}

void hp_rep_svg_timeline(hp_sbuf *b, const char *id, int width, const hp_rep_trace *t, int nt, int from, int to) {
    enum { LABEL = 90, LANE = 12, GAP = 8 };
    double t0 = 0, t1 = 0;
    int any = 0;
    for (int r = 0; r < nt; r++) {
        double a, z;
        if (!hp_rep_trace_range(&a, &z, &t[r], from, to)) continue;
        if (!any || a < t0) t0 = a;
        if (!any || z > t1) t1 = z;
        any = 1;
    }
    if (!(t1 > t0)) t1 = t0 + 1;
    int h = MT + nt * (2 * LANE + GAP) + MB + 10;
    double px0 = LABEL, px1 = width - MR, scale = (px1 - px0) / (t1 - t0);
    hp_sb_put(b, "<figure class=\"plot\" id=\"");
    hp_sb_html(b, id);
    hp_sb_put(b, "\"><figcaption><b>per-rank timeline</b><span class=\"legend\">");
    static const char *const names[] = {"forward", "backward", "optimizer", "collective"};
    for (int k = 0; k < 4; k++) hp_sb_printf(b, "<span><i style=\"background:%s\"></i>%s</span>", kind_color(k), names[k]);
    hp_sb_printf(b, "</span></figcaption><svg class=\"chart timeline\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
                    "role=\"img\">",
                 width, h, width, h);
    double tv[64];
    char tt[40];
    double ms0 = 0, ms1 = (t1 - t0) / 1e3;
    int nticks = ticks(tv, 64, ms0, ms1, 8, 0);
    double ybot = MT + nt * (2 * LANE + GAP);
    for (int i = 0; i < nticks; i++) {
        double x = px0 + tv[i] * 1e3 * scale;
        num(tt, sizeof tt, tv[i]);
        hp_sb_printf(b, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.1f\"/>"
                        "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
                     x, x, MT, ybot, x, ybot + 14, tt);
    }
    hp_sb_printf(b, "<text class=\"axis-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time (ms)</text>",
                 (px0 + px1) / 2, ybot + 42);
    /* where each step starts on the first rank */
    double labelled = -1e9;
    for (int st = from; nt > 0 && st <= to; st++) {
        double a, z;
        if (!hp_rep_trace_range(&a, &z, &t[0], st, st)) continue;
        double x = px0 + (a - t0) * scale;
        if (x - labelled < 44) continue; /* no room for its label */
        labelled = x;
        hp_sb_printf(b, "<line class=\"step\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.1f\" stroke=\"#888\" "
                        "stroke-dasharray=\"2 2\"/><text class=\"tick\" x=\"%.1f\" y=\"%.1f\">step %d</text>",
                     x, x, MT, ybot, x + 2, ybot + 26, st + 1);
    }
    for (int r = 0; r < nt; r++) {
        double y = MT + r * (2 * LANE + GAP);
        hp_sb_printf(b, "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"%s\">rank %d kernels</text>"
                        "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"%s\">comm</text>",
                     LABEL - 6, y + 10, hp_rep_color(r), t[r].rank, LABEL - 6, y + LANE + 10, hp_rep_color(r));
        hp_sb_printf(b, "<rect class=\"lane\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" stroke=\"%s\"/>", px0,
                     y, px1 - px0, 2 * LANE, hp_rep_color(r));
        lane(b, &t[r], 1 << HP_REP_FWD | 1 << HP_REP_BWD | 1 << HP_REP_OPT, from, to, t0, scale, px0, y + 1, LANE - 2);
        lane(b, &t[r], 1 << HP_REP_COMM, from, to, t0, scale, px0, y + LANE + 1, LANE - 2);
    }
    hp_sb_put(b, "</svg></figure>\n");
}
