/* runtime/metrics: the metrics file of a run, JSON lines, every write checked.
 * A fresh run truncates the file; a resumed run first cuts off what a crashed
 * run wrote after the step it resumes from (the records of later steps and a
 * torn last line), so no step is recorded twice, then appends. Each record
 * is written and flushed at once; a failed write or close is an error naming
 * the file and the cause (a full disk: "No space left on device"). Records
 * are built field by field (hp_metrics_rec): JSON has no NaN or infinity, so
 * a figure that is not finite is written as null and the record gets the
 * flag "nonfinite": true; every record is valid JSON. */
#ifndef HP_RUNTIME_METRICS_H
#define HP_RUNTIME_METRICS_H

#include <stddef.h>

#include "core/status.h"

typedef struct hp_metrics hp_metrics;

/* resume_step < 0: a fresh run. Otherwise records with "step" > resume_step
 * are dropped (*dropped: how many lines; only from a regular file). */
hp_status hp_metrics_open(hp_metrics **out, long *dropped, const char *path, long resume_step);
/* One record (a JSON object on one line, without the newline), flushed;
 * the caller formats only finite numbers (hp_metrics_rec does it for it). */
hp_status hp_metrics_write(hp_metrics *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Closes the file (a failed close is an error) and frees m; NULL is fine. */
hp_status hp_metrics_close(hp_metrics *m);
const char *hp_metrics_path(const hp_metrics *m);

/* A record being built: {"step": N, "key": value, ...}; no allocation. */
typedef struct {
    char text[1024];
    size_t len;
    int nonfinite; /* a figure was not finite (written as null) */
    int overflow;  /* the text did not fit: a bug in the caller */
} hp_metrics_rec;

#define HP_METRICS_G (-1) /* digits: 9 significant digits (%.9g), not a fixed count of decimals */

void hp_metrics_rec_begin(hp_metrics_rec *r, long step);
/* "key": v with `digits` decimals (%.*f; HP_METRICS_G: %.9g); null when v
 * is not finite. */
void hp_metrics_rec_num(hp_metrics_rec *r, const char *key, double v, int digits);
/* "key": true */
void hp_metrics_rec_flag(hp_metrics_rec *r, const char *key);
/* Ends the record ("nonfinite": true after the fields when a figure was
 * null) and writes it as hp_metrics_write does. */
hp_status hp_metrics_write_rec(hp_metrics *m, hp_metrics_rec *r);

#endif
