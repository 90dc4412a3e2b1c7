/* report/series: a curve (x, y points) and what the report computes on
 * curves — sorting by x with the last point of an x kept (a resumed run
 * appends steps it had done before), decimation to a plot's width that keeps
 * each pixel column's first, lowest, highest and last point, and the
 * comparison of two curves over their common x (Pearson correlation and the
 * largest |difference|), and TensorBoard's smoothing (a debiased exponential
 * moving average). */
#ifndef HP_REPORT_SERIES_H
#define HP_REPORT_SERIES_H

#include "core/status.h"

typedef struct {
    double *x, *y;
    int n, cap;
} hp_series;

hp_status hp_series_push(hp_series *s, double x, double y);
void hp_series_free(hp_series *s);
/* Sorts by x (stable); of points with equal x only the last stays. */
void hp_series_dedupe(hp_series *s);
/* The points to draw in `columns` pixel columns over [x0, x1]: keep[k] is
 * the index of the k-th kept point, in order; returns their count. Every
 * point is kept when there are at most 4 per column on average; otherwise
 * per column its first, lowest, highest and last point (so spikes survive).
 * keep has room for s->n ints. s must be sorted by x. */
int hp_series_decimate(int *keep, const hp_series *s, double x0, double x1, int columns);

/* out[i]: the debiased exponential moving average of the finite y up to
 * point i with weight w in [0, 1): last = w * last + (1 - w) * y, divided by
 * 1 - w^k after k finite points (so the first point is itself; w = 0 gives
 * the curve). A non-finite y is passed through and not counted. */
void hp_series_ema(double *out, const hp_series *s, double w);

typedef struct {
    long n;              /* common x */
    double pearson;      /* NaN when n < 2 or a curve is constant there */
    double max_abs_delta; /* max |a.y - b.y| over the common x (0 when n = 0) */
} hp_series_cmp;

/* Both sorted and deduplicated (hp_series_dedupe). */
void hp_series_compare(hp_series_cmp *out, const hp_series *a, const hp_series *b);

#endif
