/* api/plan_report: between the two files of hp_plan_report — plan_report.c
 * checks the config, compiles each reported rank and owns the report;
 * plan_report_gather.c fills one rank's report from its compile. */
#ifndef HP_API_PLAN_REPORT_H
#define HP_API_PLAN_REPORT_H

#include <hyperpar/hyperpar.h>

#include "parallel/compile.h"

/* Fills r from the rank's compile cc: the values listed[nlisted] of the
 * global graph with their layouts and local shapes, the collectives and
 * totals, and the memory of its program (threads: the rank's, for the
 * operators' scratch). r->rank is set here; on error what was allocated is
 * left for hp_plan_rank_report_free. */
hp_status hp_plan_gather_rank(hp_plan_rank_report *r, const hp_compiled *cc, const int *listed, int nlisted,
                              int threads);
void hp_plan_rank_report_free(hp_plan_rank_report *r);

/* The ranks of rank's group along a mesh axis: "tp[0,1]". */
void hp_plan_group_str(char *buf, size_t n, const hp_mesh *m, int axis, int rank);

#endif
