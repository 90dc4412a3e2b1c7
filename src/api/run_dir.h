/* api/run_dir: the run directory of hp_train (see hyperpar.h, "run
 * directories and reports") — created before the trainer (every process:
 * traces of any process may go into it), its files written by the process
 * hosting rank 0: config.json, machine.json and plan.json once, run.json at
 * the start, after validations and checkpoints, and at the end. */
#ifndef HP_API_RUN_DIR_H
#define HP_API_RUN_DIR_H

#include <hyperpar/hyperpar.h>

typedef struct hp_api_run hp_api_run;

/* Creates the directory (mkdir -p); nothing else is written yet. */
hp_status hp_api_run_create(hp_api_run **out, const hp_train_config *c);
/* The lead process writes config.json, machine.json, plan.json and run.json
 * (status "running"); metrics: the metrics file's path; ranks and mesh: the
 * world's; start_step: a resumed run's. */
hp_status hp_api_run_start(hp_api_run *r, const hp_train_config *c, const hp_model *m, const char *metrics,
                           int ranks, const char *mesh, long start_step);
/* Records in run.json ("oversubscribed": ranks, threads_per_rank, cores)
 * that the machine's compute threads outnumber its cores. */
void hp_api_run_oversubscribed(hp_api_run *r, int ranks, int threads_per_rank, int cores);
/* A step was done (records the step); refresh: rewrite run.json now. */
hp_status hp_api_run_progress(hp_api_run *r, long step, int refresh);
/* The end: run.json with status "done", or "failed" with st's message. */
hp_status hp_api_run_finish(hp_api_run *r, hp_status st);
void hp_api_run_free(hp_api_run *r);

#endif
