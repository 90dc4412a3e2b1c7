/* tools/bench_fsdp: `hyperpar bench fsdp` — FSDP side by side in one run:
 * plain data parallel (replicated parameters, gradient all-reduce), the
 * fsdp2 style (PyTorch FSDP2's copies and one reduction in flight), and
 * hyperpar's FSDP and HSDP, beside one rank on the same threads, on rank threads in emulated supernodes whose link
 * is throttled (--inter-bw, --inter-latency). Per row: step time, exposed
 * communication (rank 0's compute waiting on collectives), the share of
 * communication hidden behind compute, and rank 0's memory. Each row runs in
 * a child process. */
#include <stdio.h>
#include <string.h>

#include <hyperpar/hyperpar.h>

#include "args.h"
#include "bench_models.h"
#include "child.h"
#include "commands.h"

typedef struct {
    hp_bench_fsdp_result r;
    int ok;
    char err[256];
} frow;

typedef struct {
    const char *name;
    const char *fsdp; /* NULL: DP */
    int hsdp;         /* 1: replicas = supernodes */
    int one;          /* 1: one rank, the same threads (the reference for tokens/s) */
    int bf16_only;    /* 1: a row of --dtype bf16 only (its bf16 collectives) */
} fconfig;

static const fconfig fconfigs[] = {
    {"1 rank", NULL, 0, 1, 0},
    {"dp", NULL, 0, 0, 0},
    {"fsdp2-style fsdp", "level=3 style=fsdp2", 0, 0, 0},
    {"hyperpar fsdp", "level=3", 0, 0, 0},
    {"fsdp2-style hsdp", "level=3 style=fsdp2", 1, 0, 0},
    {"hyperpar hsdp", "level=3", 1, 0, 0},
    {"hyperpar fsdp b16c", "level=3 gather=bf16 reduce=bf16", 0, 0, 1}, /* bf16 gathers and reductions */
    {"hyperpar hsdp b16c", "level=3 gather=bf16 reduce=bf16", 1, 0, 1},
};

static void child_row(void *result, void *ctx) {
    frow *r = result;
    hp_status st = hp_bench_fsdp_row(&r->r, ctx);
    if (st) {
        snprintf(r->err, sizeof r->err, "%s", hp_status_msg(st));
        hp_status_free(st);
        return;
    }
    r->ok = 1;
}

int hp_cmd_bench_fsdp(int argc, char **argv) {
    char model[32] = "small", json[512] = "", dtype[8] = "fp32";
    int threads = 2, steps = 5, ranks = 4, supernodes = 2, layers = 0;
    float bw = 1.0f, lat = 50.0f;
    hp_opt tab[] = {
        {"model", OPT_STR, model, sizeof model, "small | gpt2-124m"},
        {"layers", OPT_INT, &layers, 0, "transformer blocks instead of the model's (0: the model's)"},
        {"ranks", OPT_INT, &ranks, 0, "ranks in all (rank threads)"},
        {"supernodes", OPT_INT, &supernodes, 0, "emulated supernodes (contiguous ranks; HSDP replicas across them)"},
        {"inter-bw", OPT_FLOAT, &bw, 0, "GB/s per rank between supernodes (0: unthrottled)"},
        {"inter-latency", OPT_FLOAT, &lat, 0, "microseconds per message between supernodes"},
        {"threads", OPT_INT, &threads, 0, "compute threads in all (shared out among the ranks)"},
        {"steps", OPT_INT, &steps, 0, "timed steps (after 2 untimed)"},
        {"dtype", OPT_STR, dtype, sizeof dtype, "fp32 | bf16: the compute dtype (bf16 adds rows that gather and reduce in bf16)"},
        {"json", OPT_STR, json, sizeof json, "also write the rows as a JSON array"},
    };
    int help = 0, ntab = (int)(sizeof tab / sizeof tab[0]);
    hp_status st = hp_args_parse(&help, tab, ntab, argc, argv, 1, "bench fsdp");
    if (!st && help) {
        hp_args_usage(tab, ntab, "bench fsdp", "GPT-2's step under DP, the fsdp2 style and hyperpar's FSDP and HSDP.");
        return 0;
    }
    hp_model_config m;
    int B = 0, T = 0;
    if (!st) st = hp_bench_model(&m, &B, &T, model, "bench fsdp");
    if (!st && layers < 0) st = hp_errorf("hyperpar bench fsdp: --layers must be >= 0, got %d", layers);
    if (!st && layers) m.layers = layers;
    if (!st && (steps < 1 || threads < 1 || ranks < 1 || supernodes < 1))
        st = hp_errorf("hyperpar bench fsdp: --steps, --threads, --ranks and --supernodes must be >= 1");
    if (!st && (ranks % supernodes || B % ranks))
        st = hp_errorf("hyperpar bench fsdp: --ranks %d must split into --supernodes %d and divide the batch %d", ranks,
                       supernodes, B);
    if (!st && strcmp(dtype, "fp32") && strcmp(dtype, "bf16"))
        st = hp_errorf("hyperpar bench fsdp: --dtype must be fp32 or bf16, got '%s'", dtype);
    int bf16 = !strcmp(dtype, "bf16");
    if (!st && (!(bw >= 0) || !(lat >= 0))) st = hp_errorf("hyperpar bench fsdp: --inter-bw and --inter-latency must be >= 0");
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    FILE *jf = json[0] ? fopen(json, "w") : NULL;
    if (json[0] && !jf) {
        fprintf(stderr, "hyperpar: %s: cannot open for writing\n", json);
        return 1;
    }
    printf("%s (L=%d) %s, B=%d T=%d, %d ranks in %d supernodes (link %.3g GB/s, %.3g us), %d threads in all, median of %d steps%s\n",
           model, m.layers, dtype, B, T, ranks, supernodes, (double)bw, (double)lat, threads, steps,
           bf16 ? " (b16c: parameters gathered and gradients reduced in bf16)" : "");
    printf("%-18s %9s %7s %9s %10s %10s %8s %9s %10s\n", "config", "tok/s", "vs 1", "step ms", "compute ms", "exposed ms",
           "exposed%", "hidden%", "memory MB");
    double one_tps = 0;
    if (jf) fputs("[\n", jf);
    int rc = 0;
    for (size_t i = 0; i < sizeof fconfigs / sizeof fconfigs[0]; i++) {
        const fconfig *fc = &fconfigs[i];
        if (fc->bf16_only && !bf16) continue;
        hp_bench_fsdp_config cfg = {m, B, T, ranks, fc->hsdp ? supernodes : 1, fc->fsdp, supernodes, bw, lat, threads, steps,
                                    bf16};
        if (fc->one) cfg.ranks = 1, cfg.supernodes = 1;
        frow r;
        memset(&r, 0, sizeof r);
        if (hp_run_in_child(&r, sizeof r, child_row, &cfg) != 0) snprintf(r.err, sizeof r.err, "the benchmark process failed");
        if (!r.ok) {
            fprintf(stderr, "hyperpar: bench fsdp %s: %s\n", fc->name, r.err);
            rc = 1;
            continue;
        }
        if (fc->one) one_tps = r.r.tokens_per_s;
        printf("%-18s %9.0f %6.1f%% %9.2f %10.2f %10.2f %7.2f%% %8.1f%% %10.2f\n", fc->name, r.r.tokens_per_s,
               one_tps > 0 ? 100 * r.r.tokens_per_s / one_tps : 0.0, r.r.step_ms, r.r.compute_ms, r.r.exposed_comm_ms,
               100 * r.r.exposed_comm_ms / r.r.step_ms, r.r.hidden_pct, r.r.memory_mb);
        if (jf)
            fprintf(jf,
                    "%s  {\"config\": \"%s\", \"model\": \"%s\", \"layers\": %d, \"dtype\": \"%s\", \"ranks\": %d, \"supernodes\": %d, \"inter_bw_gbps\": %g, "
                    "\"inter_latency_us\": %g, \"threads\": %d, \"tokens_per_s\": %.2f, \"step_ms\": %.3f, \"compute_ms\": %.3f, "
                    "\"exposed_comm_ms\": %.3f, \"comm_busy_ms\": %.3f, \"hidden_pct\": %.2f, \"memory_mb\": %.3f}",
                    i ? ",\n" : "", fc->name, model, m.layers, dtype, cfg.ranks, cfg.supernodes, (double)bw, (double)lat, threads, r.r.tokens_per_s,
                    r.r.step_ms, r.r.compute_ms, r.r.exposed_comm_ms, r.r.comm_busy_ms, r.r.hidden_pct, r.r.memory_mb);
    }
    if (jf) {
        fputs("\n]\n", jf);
        fclose(jf);
    }
    return rc;
}
