/* tools/bench: `hyperpar bench` — training speed of fixed configurations:
 * tokens/s, ms per step split into forward / backward / optimizer, achieved
 * GFLOP/s (operator costs of the compiled program), MFU against the FMA peak
 * measured here, and peak resident memory. Each configuration runs in a child
 * process so its peak memory is its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cblas.h>
#include <hyperpar/hyperpar.h>

#include "args.h"
#include "child.h"
#include "commands.h"
#include "output.h"

typedef struct {
    const char *name;
    hp_model_config m;
    int B, T, steps;
} bench_config;

static const bench_config configs[] = {
    {"gpt2-124m", {12, 12, 768, 50257, 1024}, 4, 256, 4},
    {"small", {4, 4, 256, 256, 128}, 8, 128, 30},
};

typedef struct {
    hp_bench_train_result r;
    double rss_mb;
    int ok;
    char err[256];
} bench_result;

typedef struct {
    const bench_config *c;
    int threads, steps;
    const char *trace; /* --trace PREFIX ("": none) */
} child_args;

/* In the child: the step timed, then this process's peak RSS. */
static void child_run(void *result, void *ctx) {
    child_args *a = ctx;
    bench_result *r = result;
    char prefix[700] = "";
    if (a->trace[0]) snprintf(prefix, sizeof prefix, "%s.%s", a->trace, a->c->name);
    hp_bench_train_config bc = {a->c->m, a->c->B, a->c->T, a->threads, a->steps, prefix};
    hp_status st = hp_bench_train_step(&r->r, &bc);
    if (st) {
        snprintf(r->err, sizeof r->err, "%s", hp_status_msg(st));
        hp_status_free(st);
        return;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    r->rss_mb = (double)ru.ru_maxrss / 1024.0;
    r->ok = 1;
}

/* Runs one configuration in a child so that its peak RSS is its own. */
static void run_isolated(bench_result *r, const bench_config *c, int threads, int steps, const char *trace) {
    child_args a = {c, threads, steps, trace};
    if (hp_run_in_child(r, sizeof *r, child_run, &a) != 0)
        snprintf(r->err, sizeof r->err, "the benchmark process failed");
}

int hp_cmd_bench(int argc, char **argv) {
    char which[64] = "all", json[512] = "", trace[512] = "";
    int threads = 2, steps = 0;
    hp_opt tab[] = {
        {"model", OPT_STR, which, sizeof which, "gpt2-124m | small | all"},
        {"threads", OPT_INT, &threads, 0, "compute threads"},
        {"steps", OPT_INT, &steps, 0, "timed steps (0 = the configuration's default)"},
        {"json", OPT_STR, json, sizeof json, "also write the rows as a JSON array to this file"},
        {"trace", OPT_STR, trace, sizeof trace, "trace the timed steps: FILE.<config>.rank0.json (Chrome/Perfetto)"},
    };
    int help = 0, ntab = (int)(sizeof tab / sizeof tab[0]);
    hp_status st = hp_args_parse(&help, tab, ntab, argc, argv, 2, "bench");
    if (!st && help) {
        hp_args_usage(tab, ntab, "bench", "Measures training speed (hyperpar bench comm: collectives).");
        return 0;
    }
    if (!st && (threads < 1 || threads > 256)) st = hp_errorf("hyperpar bench: --threads must be in 1..256");
    int nconf = (int)(sizeof configs / sizeof configs[0]), any = 0;
    for (int i = 0; i < nconf; i++) any |= !strcmp(which, "all") || !strcmp(which, configs[i].name);
    if (!st && !any) st = hp_errorf("hyperpar bench: --model '%s' is not gpt2-124m, small or all", which);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    const char *isa;
    double peak = 0;
    st = hp_bench_fma_peak(&peak, &isa, threads);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    const char *core = getenv("OPENBLAS_CORETYPE");
    const char *blas = openblas_get_corename();
    printf("FP32 FMA peak (%s, %d threads): %.1f GFLOP/s; OpenBLAS kernels: %s (OPENBLAS_CORETYPE=%s)\n", isa,
           threads, peak, blas, core ? core : "(unset)");
    printf("%-10s %9s %9s %8s %8s %8s %8s %6s %8s\n", "config", "tok/s", "step ms", "fwd ms", "bwd ms", "opt ms", "GFLOP/s",
           "MFU", "RSS MB");
    FILE *jf = NULL;
    if (json[0]) {
        jf = fopen(json, "w");
        if (!jf) {
            fprintf(stderr, "hyperpar: %s: cannot open for writing\n", json);
            return 1;
        }
        fputs("[\n", jf);
    }
    int rows = 0, rc = 0;
    for (int i = 0; i < nconf; i++) {
        const bench_config *c = &configs[i];
        if (strcmp(which, "all") && strcmp(which, c->name)) continue;
        bench_result r;
        run_isolated(&r, c, threads, steps > 0 ? steps : c->steps, trace);
        if (!r.ok) {
            fprintf(stderr, "hyperpar: bench %s: %s\n", c->name, r.err);
            rc = 1;
            continue;
        }
        const hp_bench_train_result *t = &r.r;
        printf("%-10s %9.0f %9.1f %8.1f %8.1f %8.1f %8.1f %5.1f%% %8.0f\n", c->name, t->tokens_per_s, t->step_ms,
               t->forward_ms, t->backward_ms, t->optimizer_ms, t->gflops, 100 * t->gflops / peak, r.rss_mb);
        if (jf)
            fprintf(jf,
                    "%s  {\"config\": \"%s\", \"threads\": %d, \"B\": %d, \"T\": %d, \"tokens_per_s\": %.2f, \"step_ms\": %.3f, "
                    "\"forward_ms\": %.3f, \"backward_ms\": %.3f, \"optimizer_ms\": %.3f, \"gflops\": %.2f, "
                    "\"peak_gflops\": %.2f, \"mfu\": %.4f, \"peak_rss_mb\": %.1f, \"fma_isa\": \"%s\", \"openblas_coretype\": \"%s\", \"openblas_core\": \"%s\"}",
                    rows ? ",\n" : "", c->name, threads, c->B, c->T, t->tokens_per_s, t->step_ms, t->forward_ms,
                    t->backward_ms, t->optimizer_ms, t->gflops, peak, t->gflops / peak, r.rss_mb, isa, core ? core : "", blas);
        rows++;
    }
    if (jf) {
        fputs("\n]\n", jf);
        if (hp_cli_close_output(jf, json)) rc = 1;
    }
    return rc;
}
