/* report/svg: the report's charts as inline SVG — line charts over curves
 * (decimated to the plot's width, optionally with a log-scale view of the
 * same data), horizontal stacked bar charts, and a per-rank timeline of
 * kernels and collectives. Axes have ticks and labels; every drawn curve is
 * one <path class="series" data-n="POINTS">. */
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
} hp_rep_chart;

typedef struct {
    const char *name; /* legend */
    const hp_series *s;
    const char *color;
    int dashed;
} hp_rep_line;

/* A chart of n curves (each sorted by x). */
void hp_rep_svg_lines(hp_sbuf *b, const hp_rep_chart *c, const hp_rep_line *lines, int n);

/* Horizontal bars, one per group, each a stack of nstack parts:
 * v[g * nstack + k] is group g's part k (>= 0), in the chart's unit. */
void hp_rep_svg_bars(hp_sbuf *b, const hp_rep_chart *c, int ngroups, const char *const *labels, int nstack,
                     const char *const *parts, const double *v);

/* Per rank two lanes (kernels coloured by phase; collectives) over traced
 * steps [from, to] (0-based); time from the range's first event, in ms.
 * Events closer than a pixel are drawn as one. */
void hp_rep_svg_timeline(hp_sbuf *b, const char *id, int width, const hp_rep_trace *t, int ntraces, int from, int to);

#endif
