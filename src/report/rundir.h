/* report/rundir: a run directory read back for the report — run.json (the
 * run's record: status, paths, ranks), config.json (every setting and its
 * source), plan.json (layouts, collectives and memory per rank),
 * machine.json, the metrics (metrics.jsonl, or the file run.json names) and,
 * when asked, the per-rank traces. Only the metrics are required; a path
 * that is a file is read as a metrics file alone. A directory without
 * metrics that holds one simulated step (`hyperpar simulate --timeline`:
 * NAME.sim.json and its per-stage traces), or that file named, is read as
 * that step: the prediction in `sim`, the traces, no metrics. The numbers the report
 * turns into integers are range-checked here (an error names the file and
 * the field). */
#ifndef HP_REPORT_RUNDIR_H
#define HP_REPORT_RUNDIR_H

#include "io/json.h"
#include "report/metrics.h"
#include "report/trace.h"

typedef struct {
    char path[1024];    /* as given */
    char name[256];     /* its last component, for legends */
    hp_json *run, *config, *plan, *machine; /* NULL when the file is absent */
    hp_json *sim;       /* a simulated step's NAME.sim.json (then the metrics are empty) */
    char metrics_path[1100];
    hp_rep_metrics metrics;
    hp_rep_trace *traces; /* [ntraces], by rank */
    int ntraces;
    long ranks;           /* run.json "ranks" (0: not recorded) */
    long trace_first;     /* run.json "trace_first_step" (1 when absent) */
    int plan_nranks;      /* plan.json "nranks" (0: no plan or not recorded) */
    /* run.json "oversubscribed": more compute threads than cores (ranks 0: not) */
    int over_ranks, over_threads, over_cores;
} hp_rep_run;

hp_status hp_rep_run_load(hp_rep_run *out, const char *path, int traces);
void hp_rep_run_free(hp_rep_run *r);

#endif
