/* report/rundir: a run directory read back for the report — run.json (the
 * run's record: status, paths, ranks), config.json (every setting and its
 * source), plan.json (layouts, collectives and memory per rank),
 * machine.json, the metrics (metrics.jsonl, or the file run.json names) and,
 * when asked, the per-rank traces. Only the metrics are required; a path
 * that is a file is read as a metrics file alone. */
#ifndef HP_REPORT_RUNDIR_H
#define HP_REPORT_RUNDIR_H

#include "io/json.h"
#include "report/metrics.h"
#include "report/trace.h"

typedef struct {
    char path[1024];    /* as given */
    char name[256];     /* its last component, for legends */
    hp_json *run, *config, *plan, *machine; /* NULL when the file is absent */
    char metrics_path[1100];
    hp_rep_metrics metrics;
    hp_rep_trace *traces; /* [ntraces], by rank */
    int ntraces;
} hp_rep_run;

hp_status hp_rep_run_load(hp_rep_run *out, const char *path, int traces);
void hp_rep_run_free(hp_rep_run *r);

#endif
