/* report/svg: the report's charts as inline SVG — line charts over curves
 * (decimated to the plot's width, optionally with a log-scale view of the
 * same data, and with TensorBoard's smoothing over chosen curves: the
 * smoothed curve drawn over the raw one, faint, and a slider the page's
 * script uses to change the weight), stacked area charts (parts of a whole
 * over steps), horizontal stacked bar charts with each value and its unit,
 * and a per-rank timeline of kernels and collectives. Axes have ticks and
 * labels; every drawn curve is one <path class="series" data-n="POINTS">.
 * Values are drawn clamped to +-1e300 (so no coordinate overflows). */
#ifndef HP_REPORT_SVG_H
#define HP_REPORT_SVG_H

#include "report/sbuf.h"
#include "report/series.h"
#include "report/trace.h"

/* The i-th colour of the palette (ranks, runs, series). */
const char *hp_rep_color(int i);

typedef struct {
    const char *id;     /* the figure's id */
    const char *title;
    const char *xlabel; /* with units: "step", "bytes" */
    const char *ylabel;
    int width, height;  /* CSS pixels (the plot area is smaller by the margins) */
    int log_option;     /* 1: also a log-y view, switched by a checkbox */
    int logx;           /* 1: the x axis is logarithmic (x > 0 only) */
    const char *unit;   /* bars: the values' unit, printed after each value; NULL: none */
    double smoothing;   /* lines: > 0, the smoothing weight the page opens with (lines marked smooth) */
} hp_rep_chart;

enum { HP_REP_SOLID = 0, HP_REP_DASHED = 1, HP_REP_OVER = 2 };

typedef struct {
    const char *name;  /* legend */
    const hp_series *s;
    const char *color;
    int dash;          /* HP_REP_SOLID, HP_REP_DASHED, HP_REP_OVER: long dashes over a curve it coincides with */
    int smooth;        /* on a chart with smoothing: drawn raw (faint) and smoothed ("NAME smoothed") */
    const char *note;  /* legend text after the name, or NULL */
} hp_rep_line;

/* A chart of n curves (each sorted by x). */
void hp_rep_svg_lines(hp_sbuf *b, const hp_rep_chart *c, const hp_rep_line *lines, int n);

/* Stacked areas over x: layer k is layers[k]'s curve on top of the layers
 * below (a point missing from a layer counts 0); each layer's top is a
 * path.series named after it and the hover read-out gives each layer's own
 * value. */
void hp_rep_svg_stack(hp_sbuf *b, const hp_rep_chart *c, const hp_rep_line *layers, int n);

/* Horizontal bars, one per group, each a stack of nstack parts:
 * v[g * nstack + k] is group g's part k (>= 0), in the chart's unit; each
 * bar ends with its total and the unit. */
void hp_rep_svg_bars(hp_sbuf *b, const hp_rep_chart *c, int ngroups, const char *const *labels, int nstack,
                     const char *const *parts, const double *v);

/* Per rank two lanes (kernels coloured by phase; collectives) over traced
 * steps [from, to] (0-based); time from the range's first event, in ms.
 * Events closer than a pixel are drawn as one. */
void hp_rep_svg_timeline(hp_sbuf *b, const char *id, int width, const hp_rep_trace *t, int ntraces, int from, int to);

#endif
