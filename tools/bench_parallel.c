/* tools/bench_parallel: `hyperpar bench parallel` — the cost of running GPT-2
 * through a sharding plan. Rows: the plain single-process engine, the same
 * model through a 1-rank plan (production mode must cost the same), and data
 * and tensor parallel plans on rank threads. Per row: tokens/s and the step
 * split into compute (kernels), exposed communication (collectives run inside
 * the step), optimizer, and other (everything outside kernels, collectives and
 * the optimizer: dispatch, thread hand-offs, input scatter), from rank 0.
 * Each row runs in a child process. */
#include <stdio.h>
#include <string.h>

#include <hyperpar/hyperpar.h>

#include "args.h"
#include "bench_models.h"
#include "child.h"
#include "commands.h"
#include "output.h"

typedef struct {
    hp_bench_parallel_result r;
    int ok;
    char err[256];
} prow;

typedef struct {
    const char *name;
    int dp, tp; /* 0, 0: the plain engine */
} pconfig;

static const pconfig pconfigs[] = {
    {"engine", 0, 0}, {"plan 1 rank", 1, 1}, {"dp=2", 2, 1}, {"tp=2", 1, 2}, {"dp=2 x tp=2", 2, 2},
};

static void child_row(void *result, void *ctx) {
    const hp_bench_parallel_config *cfg = ctx;
    prow *r = result;
    hp_status st = hp_bench_parallel_row(&r->r, cfg);
    if (st) {
        snprintf(r->err, sizeof r->err, "%s", hp_status_msg(st));
        hp_status_free(st);
        return;
    }
    r->ok = 1;
}

static void run_row(prow *r, const pconfig *pc, const hp_model_config *m, int B, int T, int threads, int steps,
                    int overlap) {
    hp_bench_parallel_config cfg = {*m, B, T, pc->dp, pc->tp, overlap, threads, steps};
    if (hp_run_in_child(r, sizeof *r, child_row, &cfg) != 0) snprintf(r->err, sizeof r->err, "the benchmark process failed");
}

int hp_cmd_bench_parallel(int argc, char **argv) {
    char model[32] = "small", json[512] = "", overlap[8] = "on";
    int threads = 2, steps = 20;
    hp_opt tab[] = {
        {"model", HP_OPT_STR, model, sizeof model, "small | gpt2-124m"},
        {"threads", HP_OPT_INT, &threads, 0, "compute threads in all (shared out among the ranks)"},
        {"steps", HP_OPT_INT, &steps, 0, "timed steps"},
        {"json", HP_OPT_STR, json, sizeof json, "also write the rows as a JSON array"},
        {"overlap", HP_OPT_STR, overlap, sizeof overlap, "on | off: gradient all-reduces overlapped with the backward"},
    };
    int help = 0, ntab = 5;
    hp_status st = hp_args_parse(&help, tab, ntab, argc, argv, 1, "bench parallel");
    if (!st && help) {
        hp_args_usage(tab, ntab, "bench parallel", "Step time of GPT-2 through sharding plans on rank threads.");
        return 0;
    }
    hp_model_config m;
    int B = 0, T = 0;
    if (!st) st = hp_bench_model(&m, &B, &T, model, "bench parallel");
    if (!st && (steps < 1 || threads < 1)) st = hp_errorf("hyperpar bench parallel: --steps and --threads must be >= 1");
    if (!st && strcmp(overlap, "on") && strcmp(overlap, "off"))
        st = hp_errorf("hyperpar bench parallel: --overlap must be on or off, got '%s'", overlap);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    FILE *jf = json[0] ? fopen(json, "w") : NULL;
    if (json[0] && !jf) {
        fprintf(stderr, "hyperpar: %s: cannot open for writing\n", json);
        return 1;
    }
    printf("%s, B=%d T=%d, %d threads in all, median of %d steps, overlap %s\n", model, B, T, threads, steps, overlap);
    printf("%-12s %9s %9s %10s %9s %8s %8s %7s\n", "config", "tok/s", "step ms", "compute ms", "comm ms", "opt ms",
           "other ms", "other%");
    if (jf) fputs("[\n", jf);
    int rc = 0;
    for (size_t i = 0; i < sizeof pconfigs / sizeof pconfigs[0]; i++) {
        prow r;
        run_row(&r, &pconfigs[i], &m, B, T, threads, steps, !strcmp(overlap, "on"));
        if (!r.ok) {
            fprintf(stderr, "hyperpar: bench parallel %s: %s\n", pconfigs[i].name, r.err);
            rc = 1;
            continue;
        }
        printf("%-12s %9.0f %9.2f %10.2f %9.2f %8.2f %8.2f %6.2f%%\n", pconfigs[i].name, r.r.tokens_per_s, r.r.step_ms,
               r.r.compute_ms, r.r.comm_ms, r.r.optimizer_ms, r.r.other_ms, 100 * r.r.other_ms / r.r.step_ms);
        if (jf)
            fprintf(jf,
                    "%s  {\"config\": \"%s\", \"model\": \"%s\", \"dp\": %d, \"tp\": %d, \"threads\": %d, \"tokens_per_s\": %.2f, "
                    "\"step_ms\": %.3f, \"compute_ms\": %.3f, \"comm_ms\": %.3f, \"optimizer_ms\": %.3f, \"other_ms\": %.3f}",
                    i ? ",\n" : "", pconfigs[i].name, model, pconfigs[i].dp, pconfigs[i].tp, threads, r.r.tokens_per_s,
                    r.r.step_ms, r.r.compute_ms, r.r.comm_ms, r.r.optimizer_ms, r.r.other_ms);
    }
    if (jf) {
        fputs("\n]\n", jf);
        if (hp_cli_close_output(jf, json)) rc = 1;
    }
    return rc;
}
