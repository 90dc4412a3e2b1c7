/* runtime/metrics: the metrics file of a run, JSON lines, every write checked.
 * A fresh run truncates the file; a resumed run first cuts off what a crashed
 * run wrote after the step it resumes from (the records of later steps and a
 * torn last line), so no step is recorded twice, then appends. Each record
 * is written and flushed at once; a failed write or close is an error naming
 * the file and the cause (a full disk: "No space left on device"). */
#ifndef HP_RUNTIME_METRICS_H
#define HP_RUNTIME_METRICS_H

#include "core/status.h"

typedef struct hp_metrics hp_metrics;

/* resume_step < 0: a fresh run. Otherwise records with "step" > resume_step
 * are dropped (*dropped: how many lines; only from a regular file). */
hp_status hp_metrics_open(hp_metrics **out, long *dropped, const char *path, long resume_step);
/* One record (a JSON object on one line, without the newline), flushed. */
hp_status hp_metrics_write(hp_metrics *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Closes the file (a failed close is an error) and frees m; NULL is fine. */
hp_status hp_metrics_close(hp_metrics *m);
const char *hp_metrics_path(const hp_metrics *m);

#endif
