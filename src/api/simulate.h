/* api/simulate: one plan's predicted step from a loaded profile and cluster
 * (hp_simulate's core), shared with the search of `plan --auto`
 * (api/plan_auto). */
#ifndef HP_API_SIMULATE_H
#define HP_API_SIMULATE_H

#include <hyperpar/hyperpar.h>

#include "autopar/cluster.h"
#include "autopar/cost.h"
#include "autopar/profile.h"

/* Compiles c's plan (the first rank of each stage) and fills r's prediction, its memory per stage (r->memory
 * allocated here: r zeroed before) and names; cl NULL: this machine (c->processes supernodes, links and peaks
 * from the profile). */
hp_status hp_api_sim_predict(hp_sim_report *r, const hp_plan_report_config *c, const hp_sim_config *sc,
                             const hp_profile *prof, const hp_cluster *cl);

/* The ranks one process hosts (processes > 1 and not one_process: the ranks spread over them; >= 1), and the
 * kernel threads each of them gets of the process's threads (>= 1). */
int hp_api_ranks_here(int ranks, int processes, int one_process);
int hp_api_rank_threads(int threads, int here);

/* The profile of a comma-separated list of files measured at the kernel threads a rank runs with (else the one
 * with the most threads below, else the fewest above). */
hp_status hp_api_profile_pick(hp_profile *out, const char *list, int threads);

/* Trains tc for warmup + steps steps (steps >= 1), each timed: *med, *lo, *hi of the timed ones; *lead: this
 * process hosts rank 0 (api/simulate_check). */
hp_status hp_api_train_time(double *med, double *lo, double *hi, int *lead, const hp_train_config *tc, int warmup,
                            int steps);

/* The first rank of pipeline stage s (the pp coordinate s, the others 0; axis -1: no pipeline). */
int hp_api_stage_rank(const hp_mesh *m, int axis, int s);

/* `--timeline PREFIX` (api/simulate_out): the predicted timeline, PREFIX.rankN.json per stage (N its first rank),
 * and PREFIX.sim.json, the prediction they belong to (read by `hyperpar report`); the directory made if missing. */
hp_status hp_api_sim_write_trace(const hp_cost *k, const char *prefix, const hp_mesh *m, int axis);
hp_status hp_api_sim_write_summary(const hp_sim_report *r, const hp_mesh *m, const char *prefix);

#endif
