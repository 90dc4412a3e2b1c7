/* tools/bench_pipeline: `hyperpar bench pipeline` (issue 26) — pipeline
 * schedules and rematerialisation measured in one run, each row in a child
 * process on rank threads (one core per stage with --threads 2 at 2 stages):
 *   schedules  PP 2 on the small config widened to 8 blocks, per schedule
 *              (GPipe, 1F1B, ZB-H1) and micro-batch count: step time,
 *              tokens/s, the measured bubble (the stages' idle share of the
 *              step) beside (p-1)/(m+p-1) and the schedule's simulation, each
 *              stage's activation arena (allocated, and as planned);
 *   baseline   DP 2 on the same global batch (half the micro-batches per
 *              rank): PP's tokens/s against it;
 *   remat      one rank, GPT-2 124M at B4 T256 (or --remat-model small):
 *              activation arena and step time under none, selective, full.
 * A table and --json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hyperpar/hyperpar.h>

#include "args.h"
#include "bench_models.h"
#include "bench_world.h"
#include "child.h"
#include "commands.h"

typedef struct {
    hp_bench_pipeline_result r;
    int ok;
    char err[256];
} prow;

static void child_row(void *result, void *ctx) {
    prow *r = result;
    hp_status st = hp_bench_pipeline_row(&r->r, ctx);
    if (st) {
        snprintf(r->err, sizeof r->err, "%s", hp_status_msg(st));
        hp_status_free(st);
        return;
    }
    r->ok = 1;
}

static int run_row(prow *r, const hp_bench_pipeline_config *c, const char *what) {
    memset(r, 0, sizeof *r);
    if (hp_run_in_child(r, sizeof *r, child_row, (void *)c) != 0) snprintf(r->err, sizeof r->err, "the benchmark process failed");
    if (!r->ok) fprintf(stderr, "hyperpar: bench pipeline %s: %s\n", what, r->err);
    return r->ok ? 0 : 1;
}

static void json_row(FILE *jf, int *nrows, const char *kind, const hp_bench_pipeline_config *c,
                     const hp_bench_pipeline_result *x) {
    if (!jf) return;
    fprintf(jf,
            "%s  {\"kind\": \"%s\", \"layers\": %d, \"channels\": %d, \"batch\": %d, \"seq\": %d, \"pp\": %d, "
            "\"dp\": %d, \"micro\": %d, \"schedule\": \"%s\", \"remat\": \"%s\", \"loss_chunk\": %d, \"threads\": %d, \"step_ms\": %.3f, "
            "\"tokens_per_s\": %.1f, \"bubble\": %.4f, \"bubble_wait\": %.4f, \"bubble_formula\": %.4f, "
            "\"bubble_sim\": %.4f, "
            "\"arena_mb\": [",
            (*nrows)++ ? ",\n" : "", kind, c->model.layers, c->model.channels, c->batch, c->seq, c->pp, c->dp,
            c->micro, c->schedule ? c->schedule : "1f1b", c->remat ? c->remat : "none", c->loss_chunk, c->threads, x->step_ms,
            x->tokens_per_s, x->bubble, x->bubble_wait, x->bubble_formula, x->bubble_sim);
    for (int i = 0; i < x->ranks && i < 64; i++) fprintf(jf, "%s%.3f", i ? ", " : "", x->arena_mb[i]);
    fprintf(jf, "], \"planned_mb\": [");
    for (int i = 0; i < x->ranks && i < 64; i++) fprintf(jf, "%s%.3f", i ? ", " : "", x->planned_mb[i]);
    fprintf(jf, "], \"busy_ms\": [");
    for (int i = 0; i < x->ranks && i < 64; i++) fprintf(jf, "%s%.3f", i ? ", " : "", x->busy_ms[i]);
    fprintf(jf, "], \"idle\": [");
    for (int i = 0; i < x->ranks && i < 64; i++) fprintf(jf, "%s%.4f", i ? ", " : "", x->idle[i]);
    fprintf(jf, "]}");
}

int hp_cmd_bench_pipeline(int argc, char **argv) {
    char json[512] = "", micro[64] = "4,8", scheds[64] = "gpipe,1f1b,zb-h1,interleaved", rmodel[32] = "gpt2-124m";
    int threads = 2, steps = 3, layers = 8, baseline = 1, loss_chunk = 0;
    hp_opt tab[] = {
        {"micro", HP_OPT_STR, micro, sizeof micro, "micro-batch counts (comma-separated)"},
        {"schedules", HP_OPT_STR, scheds, sizeof scheds, "schedules (comma-separated: gpipe, 1f1b, zb-h1)"},
        {"layers", HP_OPT_INT, &layers, 0, "blocks of the small config in the schedule rows"},
        {"threads", HP_OPT_INT, &threads, 0, "compute threads in all (shared out among the ranks)"},
        {"steps", HP_OPT_INT, &steps, 0, "timed steps per row (after 2 untimed)"},
        {"baseline", HP_OPT_INT, &baseline, 0, "1: the DP 2 rows on the same global batch"},
        {"remat-model", HP_OPT_STR, rmodel, sizeof rmodel, "the remat rows' model: gpt2-124m, small or none"},
        {"loss-chunk", HP_OPT_INT, &loss_chunk, 0,
         "the remat rows: the head and the loss fused over this many vocabulary columns (0: off)"},
        {"json", HP_OPT_STR, json, sizeof json, "also write the rows as a JSON array"},
    };
    int help = 0, ntab = (int)(sizeof tab / sizeof tab[0]);
    hp_status st = hp_args_parse(&help, tab, ntab, argc, argv, 1, "bench pipeline");
    if (!st && help) {
        hp_args_usage(tab, ntab, "bench pipeline", "Pipeline schedules (bubble, memory, tokens/s) and remat policies.");
        return 0;
    }
    if (!st && (threads < 1 || steps < 1 || layers < 2 || loss_chunk < 0))
        st = hp_errorf("hyperpar bench pipeline: --threads and --steps must be >= 1, --layers >= 2, --loss-chunk >= 0");
    int ms[8], nm = 0;
    char *names[4]; /* at most 4 schedules */
    int ns = 0;
    char sbuf[64];
    snprintf(sbuf, sizeof sbuf, "%s", scheds);
    for (char *save = NULL, *t = strtok_r(sbuf, ",", &save); t && !st; t = strtok_r(NULL, ",", &save)) {
        if (strcmp(t, "gpipe") && strcmp(t, "1f1b") && strcmp(t, "zb-h1") && strcmp(t, "interleaved"))
            st = hp_errorf("hyperpar bench pipeline: --schedules: '%s' is not gpipe, 1f1b, zb-h1 or interleaved", t);
        else if (ns < 4) names[ns++] = t;
    }
    for (char *p = micro; *p && !st;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 64 || nm == 8 || (*end && *end != ','))
            st = hp_errorf("hyperpar bench pipeline: --micro '%s': counts in 1..64, comma-separated", micro);
        else ms[nm++] = (int)v;
        p = *end ? end + 1 : end;
    }
    FILE *jf = NULL;
    if (!st) st = hp_bench_json_open(&jf, json, 1);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    hp_model_config small;
    int B, T, rc = 0, nrows = 0;
    hp_bench_model(&small, &B, &T, "small", "bench pipeline");
    small.layers = layers;
    char cpu[256];
    hp_cpu_model(cpu, sizeof cpu);
    printf("pipeline 2 stages, small config with %d blocks, micro-batch %d x %d, %d threads in all, median of %d steps; "
           "CPU %s\n%-11s %5s %8s %10s %7s %7s %8s %7s %12s %12s\n",
           layers, B, T, threads, steps, cpu, "sched", "m", "step ms", "tok/s", "idle", "waits", "formula", "sim",
           "arena MB s0", "arena MB s1");
    double pp_tok[4][8] = {{0}};
    for (int i = 0; i < ns; i++)
        for (int k = 0; k < nm; k++) {
            hp_bench_pipeline_config c = {small, B, T, 2, 1, ms[k], names[i], 0, NULL, 0, threads, steps};
            prow r;
            char what[48];
            snprintf(what, sizeof what, "%s m=%d", names[i], ms[k]);
            if (run_row(&r, &c, what)) {
                rc = 1;
                continue;
            }
            const hp_bench_pipeline_result *x = &r.r;
            pp_tok[i][k] = x->tokens_per_s;
            printf("%-11s %5d %8.1f %10.0f %7.3f %7.3f %8.3f %7.3f %5.1f (%5.1f) %5.1f (%5.1f)\n", names[i], ms[k],
                   x->step_ms, x->tokens_per_s, x->bubble, x->bubble_wait, x->bubble_formula, x->bubble_sim,
                   x->arena_mb[0], x->planned_mb[0],
                   x->arena_mb[1], x->planned_mb[1]);
            json_row(jf, &nrows, "schedule", &c, x);
        }
    for (int k = 0; baseline && k < nm; k++) {
        hp_bench_pipeline_config c = {small, 2 * B, T, 1, 2, ms[k] / 2 > 0 ? ms[k] / 2 : 1, NULL, 0, NULL, 0, threads, steps};
        prow r;
        if (run_row(&r, &c, "dp 2")) {
            rc = 1;
            continue;
        }
        printf("dp 2        %5d %8.1f %10.0f   (the same global batch: %d micro-batches of %d x %d per rank);", ms[k],
               r.r.step_ms, r.r.tokens_per_s, c.micro, B, T);
        for (int i = 0; i < ns; i++)
            if (pp_tok[i][k] > 0)
                printf(" %s %.1f%%", names[i], 100 * pp_tok[i][k] / r.r.tokens_per_s);
        printf(" of DP's tokens/s\n");
        json_row(jf, &nrows, "dp-baseline", &c, &r.r);
    }
    if (strcmp(rmodel, "none")) {
        hp_model_config m;
        int rb, rt;
        st = hp_bench_model(&m, &rb, &rt, rmodel, "bench pipeline");
        if (st) {
            hp_cli_error(st);
            rc = 1;
        }
        static const char *const pol[3] = {"none", "selective", "full"};
        double base_ms = 0, base_mb = 0;
        if (!st)
            printf("remat, 1 rank, %s B%d T%d%s:\n%-10s %8s %12s %10s %10s\n", rmodel, rb, rt,
                   loss_chunk ? ", head and loss fused over vocabulary chunks" : "", "policy", "step ms", "arena MB", "time",
                   "memory");
        for (int i = 0; i < 3 && !st; i++) {
            hp_bench_pipeline_config c = {m, rb, rt, 1, 1, 1, NULL, 0, pol[i], loss_chunk, threads, steps};
            prow r;
            if (run_row(&r, &c, pol[i])) {
                rc = 1;
                continue;
            }
            if (!i) base_ms = r.r.step_ms, base_mb = r.r.arena_mb[0];
            printf("%-10s %8.1f %12.1f %9.2fx %9.2fx\n", pol[i], r.r.step_ms, r.r.arena_mb[0],
                   base_ms > 0 ? r.r.step_ms / base_ms : 0, r.r.arena_mb[0] > 0 ? base_mb / r.r.arena_mb[0] : 0);
            json_row(jf, &nrows, "remat", &c, &r.r);
        }
    }
    hp_bench_json_close(jf);
    return rc;
}
