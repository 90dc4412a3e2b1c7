/* tools/bench_fsdp: `hyperpar bench fsdp` — FSDP side by side in one run:
 * plain data parallel (replicated parameters, gradient all-reduce), the
 * fsdp2 style (PyTorch FSDP2's copies and one reduction in flight), and
 * hyperpar's FSDP and HSDP, beside one rank on the same threads, on rank threads in emulated supernodes whose link
 * is throttled (--inter-bw, --inter-latency). Per row: step time, exposed
 * communication (rank 0's thread blocked on collectives in the forward and
 * backward), the time in its communicating steps (that, plus starting calls
 * and the copies those steps make), the share of
 * communication hidden behind compute, and rank 0's memory. Each row runs in
 * a child process; under mpirun the processes are the supernodes and every
 * row runs in them (rank 0's process prints). */
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
    hp_bench_fsdp_result r;
    int ok;
    char err[256];
} frow;

typedef struct {
    const char *name;
    const char *key;  /* --rows */
    const char *fsdp; /* NULL: DP */
    int hsdp;         /* 1: replicas = supernodes */
    int one;          /* 1: one rank, the same threads (the reference for tokens/s) */
    int bf16_only;    /* 1: a row of --dtype bf16 only (its bf16 collectives) */
} fconfig;

static const fconfig fconfigs[] = {
    {"1 rank", "one", NULL, 0, 1, 0},
    {"dp", "dp", NULL, 0, 0, 0},
    {"fsdp2-style fsdp", "fsdp2-fsdp", "level=3 style=fsdp2", 0, 0, 0},
    {"hyperpar fsdp", "fsdp", "level=3", 0, 0, 0},
    {"fsdp2-style hsdp", "fsdp2-hsdp", "level=3 style=fsdp2", 1, 0, 0},
    {"hyperpar hsdp", "hsdp", "level=3", 1, 0, 0},
    {"hyperpar fsdp b16c", "fsdp-b16c", "level=3 gather=bf16 reduce=bf16", 0, 0, 1}, /* bf16 gathers and reductions */
    {"hyperpar hsdp b16c", "hsdp-b16c", "level=3 gather=bf16 reduce=bf16", 1, 0, 1},
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

typedef struct {
    int threads, steps, ranks, supernodes, layers, bf16;
    float bw, lat;
    const char *dtype;
    const char *unit_bytes; /* hyperpar's rows: units by bytes ("" : one per block plus the root) */
    const char *keep_bytes; /* hyperpar's rows across supernodes: units kept for the backward ("": none) */
    const char *fsdp2_reshard; /* the fsdp2 style's reshard: "on" (FSDP2's default) or "off" */
    const char *rows;       /* comma-separated row keys to run ("": all) */
    hp_world *world; /* under mpirun: the processes' world (rows run in this process), else NULL */
    int lead;        /* 1: this process prints (rank 0's) */
} fopts;

/* A model's shape and batch, checked against the options (the layers override applied). */
static hp_status model_of(hp_model_config *m, int *B, int *T, const char *name, const fopts *o) {
    HP_TRY(hp_bench_model(m, B, T, name, "bench fsdp"));
    if (o->layers) m->layers = o->layers;
    if (o->ranks % o->supernodes || *B % o->ranks)
        return hp_errorf("hyperpar bench fsdp: --ranks %d must split into --supernodes %d and divide %s's batch %d",
                         o->ranks, o->supernodes, name, *B);
    return HP_OK;
}

/* Every row of one model; JSON rows go to jf (*nrows: rows written so far). */
static int run_model(const char *model, const fopts *o, FILE *jf, int *nrows) {
    hp_model_config m;
    int B = 0, T = 0;
    hp_status st = model_of(&m, &B, &T, model, o);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    if (o->lead) {
        printf("%s (L=%d) %s, B=%d T=%d, %d ranks in %d supernodes%s (link %.3g GB/s, %.3g us), %d threads %s, median of "
               "%d steps%s\n",
               model, m.layers, o->dtype, B, T, o->ranks, o->supernodes, o->world ? " = MPI processes" : "", (double)o->bw,
               (double)o->lat, o->threads, o->world ? "per process" : "in all", o->steps,
               o->bf16 ? " (b16c: parameters gathered and gradients reduced in bf16)" : "");
        printf("hyperpar's units: %s%s%s%s; the fsdp2 style: one unit per block plus the root, reshard %s%s\n",
               o->unit_bytes[0] ? "by bytes, unit_bytes=" : "one per block plus the root", o->unit_bytes,
               o->keep_bytes[0] ? ", keep_bytes=" : "", o->keep_bytes, o->fsdp2_reshard,
               !strcmp(o->fsdp2_reshard, "on") ? " (FSDP2's default reshard_after_forward=True)" : "");
        printf("%-18s %9s %7s %9s %10s %10s %8s %9s %9s %10s\n", "config", "tok/s", "vs 1", "step ms", "compute ms",
               "exposed ms", "exposed%", "commstep", "hidden%", "memory MB");
    }
    double one_tps = 0;
    int rc = 0;
    for (size_t i = 0; i < sizeof fconfigs / sizeof fconfigs[0]; i++) {
        const fconfig *fc = &fconfigs[i];
        if (fc->bf16_only && !o->bf16) continue;
        if (o->rows[0]) { /* only the rows named */
            char want[96];
            snprintf(want, sizeof want, ",%s,", fc->key);
            char have[160];
            snprintf(have, sizeof have, ",%s,", o->rows);
            if (!strstr(have, want)) continue;
        }
        char set[200];
        const char *fs = fc->fsdp;
        if (fs && !strstr(fs, "fsdp2")) { /* hyperpar's rows: units by bytes, units kept */
            snprintf(set, sizeof set, "%s%s%s%s%s", fs, o->unit_bytes[0] ? " unit_bytes=" : "", o->unit_bytes,
                     o->keep_bytes[0] ? " keep_bytes=" : "", o->keep_bytes);
            fs = set;
        } else if (fs) { /* the fsdp2 style's reshard */
            snprintf(set, sizeof set, "%s reshard=%s", fs, o->fsdp2_reshard);
            fs = set;
        }
        hp_bench_fsdp_config cfg = {m, B, T, o->ranks, fc->hsdp ? o->supernodes : 1, fs, o->supernodes, o->bw,
                                    o->lat, o->threads, o->steps, o->bf16, o->world};
        if (fc->one) cfg.ranks = 1, cfg.supernodes = 1;
        if (fc->one && o->world) cfg.threads = o->threads * o->supernodes; /* the cores of all the processes */
        frow r;
        memset(&r, 0, sizeof r);
        if (o->world) { /* under mpirun: every process runs the row here (the 1-rank row: the lead alone) */
            if (fc->one && !o->lead) continue;
            child_row(&r, &cfg);
            if (!o->lead) {
                if (!r.ok) fprintf(stderr, "hyperpar: bench fsdp %s %s: %s\n", model, fc->name, r.err), rc = 1;
                continue;
            }
        } else if (hp_run_in_child(&r, sizeof r, child_row, &cfg) != 0) {
            snprintf(r.err, sizeof r.err, "the benchmark process failed");
        }
        if (!r.ok) {
            fprintf(stderr, "hyperpar: bench fsdp %s %s: %s\n", model, fc->name, r.err);
            rc = 1;
            continue;
        }
        if (fc->one) one_tps = r.r.tokens_per_s;
        printf("%-18s %9.0f %6.1f%% %9.2f %10.2f %10.2f %7.2f%% %9.2f %8.1f%% %10.2f\n", fc->name, r.r.tokens_per_s,
               one_tps > 0 ? 100 * r.r.tokens_per_s / one_tps : 0.0, r.r.step_ms, r.r.compute_ms, r.r.exposed_comm_ms,
               100 * r.r.exposed_comm_ms / r.r.step_ms, r.r.comm_steps_ms, r.r.hidden_pct, r.r.memory_mb);
        if (jf)
            fprintf(jf,
                    "%s  {\"config\": \"%s\", \"model\": \"%s\", \"layers\": %d, \"dtype\": \"%s\", \"ranks\": %d, \"supernodes\": %d, \"inter_bw_gbps\": %g, "
                    "\"inter_latency_us\": %g, \"unit_bytes\": \"%s\", \"keep_bytes\": \"%s\", \"fsdp2_reshard\": \"%s\", \"threads\": %d, \"tokens_per_s\": %.2f, \"step_ms\": %.3f, \"compute_ms\": %.3f, "
                    "\"exposed_comm_ms\": %.3f, \"comm_steps_ms\": %.3f, \"comm_busy_ms\": %.3f, \"hidden_pct\": %.2f, \"memory_mb\": %.3f}",
                    (*nrows)++ ? ",\n" : "", fc->name, model, m.layers, o->dtype, cfg.ranks, cfg.supernodes, (double)o->bw,
                    (double)o->lat, fs && !strstr(fs, "fsdp2") ? o->unit_bytes : "",
                    fs && !strstr(fs, "fsdp2") ? o->keep_bytes : "", fs && strstr(fs, "fsdp2") ? o->fsdp2_reshard : "", cfg.threads, r.r.tokens_per_s, r.r.step_ms, r.r.compute_ms, r.r.exposed_comm_ms,
                    r.r.comm_steps_ms, r.r.comm_busy_ms, r.r.hidden_pct, r.r.memory_mb);
    }
    return rc;
}

int hp_cmd_bench_fsdp(int argc, char **argv) {
    char model[32] = "small", json[512] = "", dtype[8] = "fp32", unit_bytes[24] = "", keep_bytes[24] = "",
         reshard[8] = "on", rows[128] = "";
    fopts o = {.threads = 2, .steps = 5, .ranks = 4, .supernodes = 2, .bw = 1.0f, .lat = 50.0f};
    hp_opt tab[] = {
        {"model", HP_OPT_STR, model, sizeof model, "small | gpt2-124m | all (both, one after the other)"},
        {"layers", HP_OPT_INT, &o.layers, 0, "transformer blocks instead of the model's (0: the model's)"},
        {"ranks", HP_OPT_INT, &o.ranks, 0, "ranks in all (rank threads)"},
        {"supernodes", HP_OPT_INT, &o.supernodes, 0, "emulated supernodes (contiguous ranks; HSDP replicas across them)"},
        {"inter-bw", HP_OPT_FLOAT, &o.bw, 0, "GB/s per rank between supernodes (0: unthrottled)"},
        {"inter-latency", HP_OPT_FLOAT, &o.lat, 0, "microseconds per message between supernodes"},
        {"threads", HP_OPT_INT, &o.threads, 0, "compute threads in all (shared out among the ranks)"},
        {"steps", HP_OPT_INT, &o.steps, 0, "timed steps (after 2 untimed)"},
        {"dtype", HP_OPT_STR, dtype, sizeof dtype, "fp32 | bf16: the compute dtype (bf16 adds rows that gather and reduce in bf16)"},
        {"unit-bytes", HP_OPT_STR, unit_bytes, sizeof unit_bytes,
         "hyperpar's rows: FSDP units by bytes (e.g. 8M; the plan's unit_bytes=); empty: one per block plus the root"},
        {"keep-bytes", HP_OPT_STR, keep_bytes, sizeof keep_bytes,
         "hyperpar's rows across supernodes: gathered units kept for the backward, up to this size (the plan's "
         "keep_bytes=); empty: none"},
        {"fsdp2-reshard", HP_OPT_STR, reshard, sizeof reshard,
         "on | off: the fsdp2 style's reshard after forward (on: FSDP2's default)"},
        {"rows", HP_OPT_STR, rows, sizeof rows,
         "only these rows, comma-separated: one, dp, fsdp2-fsdp, fsdp, fsdp2-hsdp, hsdp, fsdp-b16c, hsdp-b16c"},
        {"json", HP_OPT_STR, json, sizeof json, "also write the rows as a JSON array"},
    };
    int help = 0, ntab = (int)(sizeof tab / sizeof tab[0]);
    hp_status st = hp_args_parse(&help, tab, ntab, argc, argv, 1, "bench fsdp");
    if (!st && help) {
        hp_args_usage(tab, ntab, "bench fsdp", "GPT-2's step under DP, the fsdp2 style and hyperpar's FSDP and HSDP.");
        return 0;
    }
    const char *models[2] = {model, NULL};
    if (!strcmp(model, "all")) models[0] = "small", models[1] = "gpt2-124m";
    if (!st && o.layers < 0) st = hp_errorf("hyperpar bench fsdp: --layers must be >= 0, got %d", o.layers);
    if (!st && (o.steps < 1 || o.threads < 1 || o.ranks < 1 || o.supernodes < 1))
        st = hp_errorf("hyperpar bench fsdp: --steps, --threads, --ranks and --supernodes must be >= 1");
    for (int i = 0; i < 2 && models[i] && !st; i++) { /* every model checked before any runs */
        hp_model_config m;
        int B, T;
        st = model_of(&m, &B, &T, models[i], &o);
    }
    if (!st && strcmp(dtype, "fp32") && strcmp(dtype, "bf16"))
        st = hp_errorf("hyperpar bench fsdp: --dtype must be fp32 or bf16, got '%s'", dtype);
    o.bf16 = !strcmp(dtype, "bf16");
    o.dtype = dtype;
    o.unit_bytes = unit_bytes, o.keep_bytes = keep_bytes, o.fsdp2_reshard = reshard, o.rows = rows;
    if (!st && strcmp(reshard, "on") && strcmp(reshard, "off"))
        st = hp_errorf("hyperpar bench fsdp: --fsdp2-reshard must be on or off, got '%s'", reshard);
    if (!st && (!(o.bw >= 0) || !(o.lat >= 0))) st = hp_errorf("hyperpar bench fsdp: --inter-bw and --inter-latency must be >= 0");
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    FILE *jf = NULL;
    st = hp_bench_world(&o.world, &o.lead, &o.supernodes, o.ranks, o.bw, o.lat, "bench fsdp");
    if (!st) st = hp_bench_json_open(&jf, json, o.lead);
    if (st) {
        hp_cli_error(st);
        hp_world_free(o.world);
        return 1;
    }
    int rc = 0, nrows = 0;
    for (int i = 0; i < 2 && models[i]; i++) {
        if (i && o.lead) printf("\n");
        rc |= run_model(models[i], &o, jf, &nrows);
    }
    hp_bench_json_close(jf);
    hp_world_free(o.world);
    return rc;
}
