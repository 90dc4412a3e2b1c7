/* report/metrics: a run's metrics file (JSON lines, one object per line with
 * an integer "step") read into one curve per numeric field (x = step).
 * Known fields (loss, val_loss, lr, grad_norm, tokens_per_s, mfu, step_ms and
 * the step-time split compute_ms, comm_ms, optimizer_ms, other_ms) must be
 * numbers or null (a non-finite value); other numeric fields become curves of
 * their own; booleans and other fields' strings are skipped; an array or an
 * object is an error. Errors are one line, "FILE:LINE: problem". A last line
 * that is cut short (no newline, not valid JSON: a run killed while writing)
 * is left out and noted, not an error. */
#ifndef HP_REPORT_METRICS_H
#define HP_REPORT_METRICS_H

#include "report/series.h"

#define HP_METRIC_NAME 48

typedef struct {
    char name[HP_METRIC_NAME];
    hp_series s; /* sorted by step, one point per step (the last written) */
} hp_rep_metric;

typedef struct {
    hp_rep_metric *m;
    int n;
    long lines;     /* lines read (the truncated one not counted) */
    long nonfinite; /* null values of known fields */
    int truncated;  /* the last line was cut short */
    char note[600]; /* what was left out, when truncated */
} hp_rep_metrics;

hp_status hp_rep_metrics_load(hp_rep_metrics *out, const char *path);
/* The curve of field name, or NULL. */
const hp_series *hp_rep_metrics_get(const hp_rep_metrics *m, const char *name);
void hp_rep_metrics_free(hp_rep_metrics *m);

#endif
