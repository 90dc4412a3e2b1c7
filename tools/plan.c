/* tools/plan: `hyperpar plan` — what a sharding plan compiles to, without
 * running it. Takes the flags of `hyperpar train` (model shape, batch, --plan
 * FILE or --dp/--tp) and prints: the mesh; per parameter and input (--all:
 * every value) its global shape, layout and local shape on a rank; every
 * collective the compile inserted (where, the redistribution steps, the mesh
 * group, bytes per training step, forward or backward) with totals per kind
 * and phase; memory per rank; and propagation notes. --json FILE writes the
 * same as JSON. Compiling needs no communicator and allocates no tensors: the
 * activation arena comes from the same liveness planner the program uses.
 * Here: the flags; the report is built by the library (hp_plan_report_create,
 * from plan_report.c) and written by plan_text.c and plan_json.c. */
#include <stdio.h>
#include <stdlib.h>

#include "args.h"
#include "commands.h"
#include "plan_report.h"
#include "train_opts.h"

/* ---- the command ---- */

int hp_cmd_plan(int argc, char **argv) {
    planner *p = calloc(1, sizeof *p);
    if (!p) return 1;
    plan_opts *po = &p->po;
    hp_train_options_default(&po->o);
    hp_train_shape_unset(&po->o); /* to tell a shape flag given from its default (--init) */
    int nt = hp_train_opt_table(NULL, &po->o);
    hp_opt *tab = calloc((size_t)nt + 16, sizeof *tab);
    hp_status st = tab ? HP_OK : hp_errorf("out of memory");
    int help = 0;
    if (!st) {
        hp_train_opt_table(tab, &po->o);
        tab[nt++] = (hp_opt){"rank", HP_OPT_INT, &po->rank, sizeof po->rank, "the rank whose local shapes and program are shown"};
        tab[nt++] = (hp_opt){"all-ranks", HP_OPT_FLAG, &po->all_ranks, sizeof po->all_ranks, "show every rank"};
        tab[nt++] = (hp_opt){"all", HP_OPT_FLAG, &po->all, sizeof po->all,
                             "also every activation and gradient, and the local conversions"};
        tab[nt++] = (hp_opt){"json", HP_OPT_STR, po->json, sizeof po->json, "write the report as JSON to this file"};
        tab[nt++] = (hp_opt){"world", HP_OPT_INT, &po->world, sizeof po->world,
                             "ranks the run will have (checked against the mesh; default: the mesh size)"};
        tab[nt++] = (hp_opt){"processes", HP_OPT_INT, &po->processes, sizeof po->processes,
                             "MPI processes the run will have, one supernode each (default 1)"};
        po->top = 5;
        snprintf(po->out, sizeof po->out, "auto.plan");
        snprintf(po->links, sizeof po->links, "auto");
        tab[nt++] = (hp_opt){"auto", HP_OPT_FLAG, &po->autop, sizeof po->autop,
                             "search every plan for --world ranks (cost model), write the best to --out, print the top"};
        tab[nt++] = (hp_opt){"cluster", HP_OPT_STR, po->cluster, sizeof po->cluster,
                             "--auto: a cluster description (default: this machine, --processes supernodes)"};
        tab[nt++] = (hp_opt){"profile", HP_OPT_STR, po->profile, sizeof po->profile,
                             "--auto: a calibration profile (default: profiles/generic-cpu.json)"};
        tab[nt++] = (hp_opt){"links", HP_OPT_STR, po->links, sizeof po->links,
                             "--auto: auto | cluster | profile (as hyperpar simulate)"};
        tab[nt++] = (hp_opt){"out", HP_OPT_STR, po->out, sizeof po->out, "--auto: the best plan's file"};
        tab[nt++] = (hp_opt){"top", HP_OPT_INT, &po->top, sizeof po->top, "--auto: candidates listed"};
        tab[nt++] = (hp_opt){"max-micro", HP_OPT_INT, &po->max_micro, sizeof po->max_micro,
                             "--auto: most micro-batches tried (default 16)"};
        tab[nt++] = (hp_opt){"auto-dtype", HP_OPT_FLAG, &po->auto_dtype, sizeof po->auto_dtype,
                             "--auto: search the compute dtype too (fp32 and bf16; else --dtype's)"};
        st = hp_args_parse(&help, tab, nt, argc, argv, 2, "plan");
    }
    if (!st && help) {
        hp_args_usage(tab, nt, "plan",
                      "Shows what a sharding plan compiles to: layouts, inserted collectives, memory per rank.\n"
                      "Takes the flags of 'hyperpar train' (model shape, --plan FILE or --dp/--tp); training\n"
                      "settings that do not change the program are accepted and ignored.");
    } else if (!st && po->autop) {
        st = hp_planner_auto(p);
    } else if (!st) {
        st = hp_planner_build(p);
        if (!st && po->json[0]) st = hp_planner_write_json(p, po->json);
        if (!st) hp_planner_print_text(p);
    }
    int rc = 0;
    if (st) {
        hp_cli_error(st);
        rc = 1;
    }
    hp_planner_destroy(p);
    free(tab);
    free(p);
    return rc;
}
