/* tools/bench: `hyperpar bench` — training speed of fixed configurations:
 * tokens/s, ms per step split into forward / backward / optimizer, achieved
 * GFLOP/s (operator costs of the compiled program), MFU against the FMA peak
 * measured here, and peak resident memory. Each configuration runs in a child
 * process so its peak memory is its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

#include "args.h"
#include "commands.h"
#include "core/rng.h"
#include "kernels/kernels.h"
#include "peak.h"
#include "progress.h"
#include "child.h"
#include "runtime/trace_hook.h"
#include "session.h"
#include "core/timing.h"

typedef struct {
    const char *name;
    hp_gpt2_config m;
    int B, T, steps;
} bench_config;

static const bench_config configs[] = {
    {"gpt2-124m", {12, 12, 768, 50257, 0, 1024}, 4, 256, 4},
    {"small", {4, 4, 256, 256, 0, 128}, 8, 128, 30},
};

typedef struct {
    double tok_s, step_ms, fwd_ms, bwd_ms, opt_ms, gflops, rss_mb;
    int ok;
    char err[256];
} bench_result;

/* trace_prefix (--trace, "" for none): every timed step of configuration c
 * recorded, written as PREFIX.<config>.rank0.json. */
static void run_config(bench_result *r, const bench_config *c, int threads, int steps, const char *trace_prefix) {
    hp_session s;
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_status st = hp_session_create(&s, &c->m, c->B, c->T, threads, 1, &oc);
    if (!st) st = hp_session_init_params(&s, 1);
    if (st) {
        snprintf(r->err, sizeof r->err, "%s", hp_status_msg(st));
        hp_status_free(st);
        return;
    }
    hp_rng rng;
    hp_rng_seed(&rng, 5);
    int32_t *tok = hp_session_tokens(&s), *tgt = hp_session_targets(&s);
    for (int i = 0; i < c->B * c->T; i++) {
        tok[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)c->m.V);
        tgt[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)c->m.V);
    }
    double *f = malloc(sizeof(double) * (size_t)steps * 4);
    double *b = f + steps, *o = b + steps, *t = o + steps;
    hp_trace *tr = NULL;
    hp_trace_hook hook;
    if (trace_prefix && trace_prefix[0]) {
        st = hp_trace_create(&tr, 0, 2, (size_t)steps * (size_t)(s.c.sched.n + 4) + 16);
        if (st) {
            snprintf(r->err, sizeof r->err, "%s", hp_status_msg(st));
            hp_status_free(st);
            free(f);
            hp_session_destroy(&s);
            return;
        }
    }
    for (int i = -2; i < steps; i++) { /* two warm-up steps */
        if (tr && i == 0) hp_trace_hook_attach(&hook, s.prog, s.c.rg.g, tr);
        double t0 = hp_now();
        st = hp_program_run(s.prog, HP_PHASE_FWD);
        double t1 = hp_now();
        if (!st) st = hp_program_run(s.prog, HP_PHASE_BWD);
        if (st) {
            snprintf(r->err, sizeof r->err, "%s", hp_status_msg(st));
            hp_status_free(st);
            free(f);
            hp_session_destroy(&s);
            return;
        }
        double t2 = hp_now();
        hp_session_set_step(&s, &oc, 1e-4f, i + 2);
        st = hp_program_run(s.prog, HP_PHASE_OPT);
        double t3 = hp_now();
        if (st) {
            snprintf(r->err, sizeof r->err, "%s", hp_status_msg(st));
            hp_status_free(st);
            free(f);
            hp_session_destroy(&s);
            return;
        }
        if (i >= 0) f[i] = t1 - t0, b[i] = t2 - t1, o[i] = t3 - t2, t[i] = t3 - t0;
    }
    if (tr) {
        char prefix[700];
        snprintf(prefix, sizeof prefix, "%s.%s", trace_prefix, c->name);
        st = hp_trace_write(tr, prefix);
        hp_trace_destroy(tr);
        if (st) {
            snprintf(r->err, sizeof r->err, "%s", hp_status_msg(st));
            hp_status_free(st);
            free(f);
            hp_session_destroy(&s);
            return;
        }
    }
    const hp_program_info *info = hp_program_get_info(s.prog);
    double step = hp_median(t, steps);
    r->fwd_ms = hp_median(f, steps) * 1e3;
    r->bwd_ms = hp_median(b, steps) * 1e3;
    r->opt_ms = hp_median(o, steps) * 1e3;
    r->step_ms = step * 1e3;
    r->tok_s = c->B * c->T / step;
    r->gflops = (info->flops[0] + info->flops[1]) / step / 1e9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    r->rss_mb = (double)ru.ru_maxrss / 1024.0;
    r->ok = 1;
    free(f);
    hp_session_destroy(&s);
}

typedef struct {
    const bench_config *c;
    int threads, steps;
    const char *trace;
} child_args;

static void child_run(void *result, void *ctx) {
    child_args *a = ctx;
    run_config(result, a->c, a->threads, a->steps, a->trace);
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
    hp_pool *pool;
    st = hp_pool_create(&pool, threads);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    /* One measurement lasts milliseconds, so another process on the cores can
     * halve it: the best of several, spread over about a second. */
    const char *isa;
    double peak = 0;
    for (int rep = 0; rep < 8; rep++) {
        double p = hp_measure_fma_peak(pool, &isa);
        if (p > peak) peak = p;
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    hp_pool_destroy(pool);
    const char *core = getenv("OPENBLAS_CORETYPE");
    hp_kernels_init();
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
        printf("%-10s %9.0f %9.1f %8.1f %8.1f %8.1f %8.1f %5.1f%% %8.0f\n", c->name, r.tok_s, r.step_ms, r.fwd_ms, r.bwd_ms,
               r.opt_ms, r.gflops, 100 * r.gflops / peak, r.rss_mb);
        if (jf)
            fprintf(jf,
                    "%s  {\"config\": \"%s\", \"threads\": %d, \"B\": %d, \"T\": %d, \"tokens_per_s\": %.2f, \"step_ms\": %.3f, "
                    "\"forward_ms\": %.3f, \"backward_ms\": %.3f, \"optimizer_ms\": %.3f, \"gflops\": %.2f, "
                    "\"peak_gflops\": %.2f, \"mfu\": %.4f, \"peak_rss_mb\": %.1f, \"fma_isa\": \"%s\", \"openblas_coretype\": \"%s\", \"openblas_core\": \"%s\"}",
                    rows ? ",\n" : "", c->name, threads, c->B, c->T, r.tok_s, r.step_ms, r.fwd_ms, r.bwd_ms, r.opt_ms,
                    r.gflops, peak, r.gflops / peak, r.rss_mb, isa, core ? core : "", blas);
        rows++;
    }
    if (jf) {
        fputs("\n]\n", jf);
        fclose(jf);
    }
    return rc;
}
