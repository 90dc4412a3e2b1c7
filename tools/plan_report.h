/* tools/plan_report: `hyperpar plan`'s options and its report — the options
 * checked and turned into the public hp_plan_report_config (the plan loaded
 * from --plan or --dp/--tp), the report the library builds from it and its
 * fit in memory, and the formatting the text and JSON writers share. Built in tools/plan_report.c,
 * printed by tools/plan_text.c, written as JSON by tools/plan_json.c. */
#ifndef HP_TOOLS_PLAN_REPORT_H
#define HP_TOOLS_PLAN_REPORT_H

#include <stddef.h>

#include "hyperpar/hyperpar.h"
#include "train_opts.h"

typedef struct {
    hp_train_options o;
    int rank, all_ranks, all, world, processes;
    char json[512];
    /* --auto: the strategy search (tools/plan_auto.c) */
    int autop, top, max_micro, auto_dtype;
    char cluster[512], profile[512], out[512], links[16];
} plan_opts;


typedef struct {
    plan_opts po;
    hp_shard_plan *plan;
    hp_plan_report *rep;
    hp_plan_fit fit; /* per process against --memory or the memory available (have_fit: --memory >= 0) */
    int have_fit;
} planner;

/* Checks p->po, loads the plan it names and builds the report of one rank
 * (--rank) or every rank (--all-ranks). p zeroed but for p->po; on error what
 * was built is left for hp_planner_destroy. */
hp_status hp_planner_build(planner *p);
/* `hyperpar plan --auto`: the search over p->po's options, its report printed, the best plan written to
 * --out. */
hp_status hp_planner_auto(planner *p);
/* profiles/generic-cpu.json beside the build folder of this executable ("" when unknown). */
void hp_default_profile(char *buf, size_t n);
/* The model's shape resolved (a preset's or --init's) and the options checked. */
hp_status hp_planner_shape(planner *p);
/* The first half of hp_planner_build: the options checked, the plan loaded (p->plan), the report config. */
hp_status hp_planner_config(planner *p, hp_plan_report_config *c);
void hp_planner_destroy(planner *p);

/* The report as text on stdout. */
void hp_planner_print_text(const planner *p);
/* The report as JSON, to the file path. */
hp_status hp_planner_write_json(const planner *p, const char *path);

/* ---- formatting shared by the writers ---- */

/* b bytes with a decimal unit: "512 B", "1.5 MB". */
char *hp_planner_bytes_str(char *buf, size_t n, double b);
/* Where the memory available came from, as the plan prints it: "--memory", "MemAvailable", ... */
const char *hp_planner_fit_source(const hp_plan_fit *f);

#endif
