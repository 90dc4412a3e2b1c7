/* report/series: curves, decimation and comparison (see the header). */
#include "report/series.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

hp_status hp_series_push(hp_series *s, double x, double y) {
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 256;
        double *nx = realloc(s->x, sizeof(double) * (size_t)cap);
        if (!nx) return hp_errorf("report: out of memory for a curve");
        s->x = nx;
        double *ny = realloc(s->y, sizeof(double) * (size_t)cap);
        if (!ny) return hp_errorf("report: out of memory for a curve");
        s->y = ny, s->cap = cap;
    }
    s->x[s->n] = x, s->y[s->n] = y, s->n++;
    return HP_OK;
}

void hp_series_free(hp_series *s) {
    free(s->x), free(s->y);
    memset(s, 0, sizeof *s);
}

static int sorted(const hp_series *s) {
    for (int i = 1; i < s->n; i++)
        if (!(s->x[i] > s->x[i - 1])) return 0;
    return 1;
}

/* Insertion-free stable sort: merge sort of indices by x. */
static void msort(int *idx, int *tmp, const double *x, int n) {
    if (n < 2) return;
    int h = n / 2;
    msort(idx, tmp, x, h);
    msort(idx + h, tmp, x, n - h);
    int i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = x[idx[j]] < x[idx[i]] ? idx[j++] : idx[i++];
    while (i < h) tmp[k++] = idx[i++];
    while (j < n) tmp[k++] = idx[j++];
    memcpy(idx, tmp, sizeof(int) * (size_t)n);
}

void hp_series_dedupe(hp_series *s) {
    if (sorted(s)) return;
    int *idx = malloc(sizeof(int) * (size_t)s->n), *tmp = malloc(sizeof(int) * (size_t)s->n);
    double *nx = malloc(sizeof(double) * (size_t)s->n), *ny = malloc(sizeof(double) * (size_t)s->n);
    if (!idx || !tmp || !nx || !ny) { /* leave it as it is: drawn unsorted but nothing lost */
        free(idx), free(tmp), free(nx), free(ny);
        return;
    }
    for (int i = 0; i < s->n; i++) idx[i] = i;
    msort(idx, tmp, s->x, s->n);
    int m = 0;
    for (int i = 0; i < s->n; i++) {
        if (i + 1 < s->n && s->x[idx[i + 1]] == s->x[idx[i]]) continue; /* a later one of this x follows */
        nx[m] = s->x[idx[i]], ny[m] = s->y[idx[i]], m++;
    }
    memcpy(s->x, nx, sizeof(double) * (size_t)m);
    memcpy(s->y, ny, sizeof(double) * (size_t)m);
    s->n = m;
    free(idx), free(tmp), free(nx), free(ny);
}

/* x's pixel column, range-checked before the cast (-1 and columns: outside). */
static long column(double x, double x0, double x1, int columns) {
    double c = floor((x - x0) / (x1 - x0) * columns);
    return c >= 0 && c < columns ? (long)c : c >= columns ? columns : -1;
}

int hp_series_decimate(int *keep, const hp_series *s, double x0, double x1, int columns) {
    if (columns < 1) columns = 1;
    if ((long)s->n <= 4L * columns || !(x1 > x0)) {
        for (int i = 0; i < s->n; i++) keep[i] = i;
        return s->n;
    }
    int m = 0;
    for (int i = 0; i < s->n;) {
        long col = column(s->x[i], x0, x1, columns);
        int first = i, lo = i, hi = i, last = i;
        for (; i < s->n && column(s->x[i], x0, x1, columns) == col; i++) {
            if (s->y[i] < s->y[lo]) lo = i;
            if (s->y[i] > s->y[hi]) hi = i;
            last = i;
        }
        int c[4] = {first, lo < hi ? lo : hi, lo < hi ? hi : lo, last};
        for (int k = 0; k < 4; k++)
            if (m == 0 || keep[m - 1] < c[k]) keep[m++] = c[k];
    }
    return m;
}

void hp_series_compare(hp_series_cmp *out, const hp_series *a, const hp_series *b) {
    /* two passes over the common x: means, then moments about them */
    double sa = 0, sb = 0, dmax = 0;
    long n = 0;
    for (int i = 0, j = 0; i < a->n && j < b->n;) {
        if (a->x[i] < b->x[j]) i++;
        else if (b->x[j] < a->x[i]) j++;
        else {
            sa += a->y[i], sb += b->y[j], n++;
            double d = fabs(a->y[i] - b->y[j]);
            if (d > dmax) dmax = d;
            i++, j++;
        }
    }
    out->n = n, out->max_abs_delta = dmax, out->pearson = NAN;
    if (n < 2) return;
    double ma = sa / (double)n, mb = sb / (double)n, cab = 0, caa = 0, cbb = 0;
    for (int i = 0, j = 0; i < a->n && j < b->n;) {
        if (a->x[i] < b->x[j]) i++;
        else if (b->x[j] < a->x[i]) j++;
        else {
            double da = a->y[i] - ma, db = b->y[j] - mb;
            cab += da * db, caa += da * da, cbb += db * db;
            i++, j++;
        }
    }
    if (caa > 0 && cbb > 0) {
        double r = cab / sqrt(caa * cbb);
        out->pearson = r > 1 ? 1 : r < -1 ? -1 : r;
    }
}

void hp_series_ema(double *out, const hp_series *s, double w) {
    double last = 0;
    int k = 0;
    for (int i = 0; i < s->n; i++) {
        double y = s->y[i];
        if (!isfinite(y)) {
            out[i] = y;
            continue;
        }
        last = last * w + (1 - w) * y;
        k++;
        out[i] = w > 0 ? last / (1 - pow(w, k)) : last;
    }
}
