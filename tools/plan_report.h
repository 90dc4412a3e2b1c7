/* tools/plan_report: the report of `hyperpar plan` — the options, the compiled
 * plan, and per rank its inserted collectives (with totals per kind and phase)
 * and memory — and the formatting helpers its text and JSON writers share.
 * Built in tools/plan_report.c, printed by tools/plan_text.c, written as JSON
 * by tools/plan_json.c. */
#ifndef HP_TOOLS_PLAN_REPORT_H
#define HP_TOOLS_PLAN_REPORT_H

#include <stddef.h>

#include "core/graph.h"
#include "layout/propagate.h"
#include "layout/redist.h"
#include "parallel/compile.h"
#include "train_opts_internal.h" /* until the plan port: train_opts and the old hp_train_plan/_optim_config/_schedule */

typedef struct {
    train_opts o;
    int rank, all_ranks, all, world;
    char json[512];
} plan_opts;

enum { NKINDS = HP_RD_TO_PARTIAL + 1 };

typedef struct { /* one inserted redistribution or collective */
    hp_phase phase;
    char where[HP_NAME_LEN];
    char steps[600];
    char groups[200];
    double bytes;
    int comm; /* has a step that communicates */
} coll;

typedef struct {
    double params, grads, optim, arena, scratch, inputs, total;
} mem;

typedef struct {
    int rank;
    hp_compiled cc; /* the rank's compile (cc.rg: its local graph) */
    coll *c;
    int nc, capc;
    int count[HP_NPHASES][NKINDS];
    double bytes[HP_NPHASES][NKINDS];
    mem m;
} rank_report;

typedef struct {
    plan_opts po;
    hp_gpt2_config mc;
    hp_plan plan;
    int have_plan;
    hp_graph *model; /* the forward model graph */
    hp_gpt2_io io;
    hp_optim_config oc;
    const hp_graph *g; /* the differentiated global graph (rank report 0's compile) */
    const hp_propagation *prop;
    rank_report *r;
    int nr;
    int *listed; /* the values the reports list, in order: inputs, parameters, (--all) the rest */
    int nlisted;
} planner;

/* Checks p->po, compiles the plan it names and gathers the report of one rank
 * (--rank) or every rank (--all-ranks). p zeroed but for p->po; on error what
 * was built is left for hp_planner_destroy. */
hp_status hp_planner_build(planner *p);
void hp_planner_destroy(planner *p);

/* The report as text on stdout. */
void hp_planner_print_text(const planner *p);
/* The report as JSON, to the file path. */
hp_status hp_planner_write_json(const planner *p, const char *path);

/* ---- formatting shared by the writers ---- */

/* b bytes with a decimal unit: "512 B", "1.5 MB". */
char *hp_planner_bytes_str(char *buf, size_t n, double b);
const char *hp_planner_kind_name(hp_vkind k);
const char *hp_planner_phase_name(hp_phase p);
/* The ranks of rank's group along a mesh axis: "tp[0,1]". */
void hp_planner_group_str(char *buf, size_t n, const hp_mesh *m, int axis, int rank);

#endif
