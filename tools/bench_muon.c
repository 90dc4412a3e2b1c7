/* tools/bench_muon: `hyperpar bench muon` — distributed Muon's strategies side
 * by side in one run: GPT-2's whole step under FSDP and HSDP (rank threads in
 * emulated supernodes whose link is throttled; under mpirun the processes are
 * the supernodes) with AdamW and with Muon under every --muon-dist strategy.
 * Per row: step time, the optimizer phase split (gather, Newton-Schulz,
 * return, update, the rest), its communication (exposed: the phase follows
 * the backward), rank 0's memory, and from the plan each strategy's
 * Newton-Schulz GFLOP on the busiest rank and max/mean over the ranks; then
 * the layout-driven row against the best competitor and against gather-all,
 * Muon's optimizer against AdamW's plus the Newton-Schulz FLOPs at the
 * measured GEMM rate, and the FLOP balance of GPT-2 124M at 4, 8 and 64 ranks
 * (from the plan, no run). Each row runs in a child process (its memory its
 * own). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hyperpar/hyperpar.h>

#include "args.h"
#include "bench_models.h"
#include "bench_world.h"
#include "child.h"
#include "commands.h"

static const char *const strategies[] = {"layout", "round-robin", "zero1-gather", "all-to-all", "gather-all"};
enum { NSTRAT = 5, NROWS = NSTRAT + 1 }; /* row 0: AdamW */

typedef struct {
    hp_bench_muon_result r;
    int ok;
    char err[256];
} mrow;

typedef struct {
    int threads, steps, ranks, supernodes, layers, waves;
    float bw, lat;
    const char *plans; /* "fsdp,hsdp" */
    hp_world *world;
    int lead;
} mopts;

static void child_row(void *result, void *ctx) {
    mrow *r = result;
    hp_status st = hp_bench_muon_row(&r->r, ctx);
    if (st) {
        snprintf(r->err, sizeof r->err, "%s", hp_status_msg(st));
        hp_status_free(st);
        return;
    }
    r->ok = 1;
}

static hp_status model_of(hp_model_config *m, int *B, int *T, const char *name, const mopts *o) {
    HP_TRY(hp_bench_model(m, B, T, name, "bench muon"));
    if (o->layers) m->layers = o->layers;
    if (o->ranks % o->supernodes || *B % o->ranks)
        return hp_errorf("hyperpar bench muon: --ranks %d must split into --supernodes %d and divide %s's batch %d",
                         o->ranks, o->supernodes, name, *B);
    return HP_OK;
}

/* The shard plan of a layout: FSDP over every rank, or HSDP (replicas = supernodes). */
static hp_status shard_plan(hp_shard_plan **p, int ranks, int replicas) {
    if (replicas > 1) {
        HP_TRY(hp_shard_plan_gpt2_replicated(p, replicas, ranks / replicas, 1));
        return hp_shard_plan_set_fsdp(*p, "shard=dp replicate=rep level=3");
    }
    HP_TRY(hp_shard_plan_gpt2(p, ranks, 1));
    return hp_shard_plan_set_fsdp(*p, "shard=dp level=3");
}

/* Every strategy's Newton-Schulz GFLOP on the busiest rank and max/mean, from the plan. */
static hp_status plan_flops(double *max_gf, double *imb, double *total_gf, const hp_model_config *m, int B, int T,
                            int ranks, int replicas) {
    hp_shard_plan *p = NULL;
    hp_plan_report *r = NULL;
    hp_status st = shard_plan(&p, ranks, replicas);
    if (!st) {
        hp_plan_report_config c;
        hp_plan_report_config_default(&c);
        c.model = *m, c.batch = B, c.seq = T, c.plan = p, c.optimizer = "muon";
        st = hp_plan_report_create(&r, &c);
    }
    for (int i = 0; !st && i < NSTRAT; i++) {
        if (i >= r->muon.nstrategies || strcmp(r->muon.strategies[i].name, strategies[i])) {
            st = hp_errorf("hyperpar bench muon: the plan has no strategy '%s'", strategies[i]);
            break;
        }
        max_gf[i] = r->muon.strategies[i].max_gflops, imb[i] = r->muon.strategies[i].imbalance;
        if (total_gf) total_gf[i] = r->muon.strategies[i].total_gflops;
    }
    hp_plan_report_free(r);
    hp_shard_plan_free(p);
    return st;
}

/* One layout's rows (AdamW, then every strategy); JSON rows to jf. */
static int run_layout(const char *model, const hp_model_config *m, int B, int T, int hsdp, double gemm_gflops,
                      const mopts *o, FILE *jf, int *nrows) {
    int replicas = hsdp ? o->supernodes : 1;
    const char *lname = hsdp ? "hsdp" : "fsdp";
    double max_gf[NSTRAT] = {0}, imb[NSTRAT] = {0};
    hp_status st = plan_flops(max_gf, imb, NULL, m, B, T, o->ranks, replicas);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    char fs[64];
    snprintf(fs, sizeof fs, "level=3");
    mrow rows[NROWS];
    memset(rows, 0, sizeof rows);
    int rc = 0;
    if (o->lead)
        printf("%s %s (%d replica%s x %d shards): NS GEMM rate %.1f GFLOP/s\n%-14s %8s %7s %8s %7s %7s %7s %7s %7s %8s "
               "%8s %7s %8s\n",
               model, hsdp ? "HSDP" : "FSDP", replicas, replicas > 1 ? "s" : "", o->ranks / replicas, gemm_gflops,
               "row", "step ms", "vs best", "opt ms", "gather", "NS", "return", "update", "rest", "opt comm",
               "NS GF", "max/mean", "memory MB");
    for (int i = 0; i < NROWS; i++) {
        hp_bench_muon_config cfg = {{*m, B, T, o->ranks, replicas, fs, o->supernodes, o->bw, o->lat, o->threads,
                                     o->steps, 0, o->world},
                                    i ? strategies[i - 1] : NULL, o->waves};
        mrow *r = &rows[i];
        if (o->world) {
            child_row(r, &cfg);
        } else if (hp_run_in_child(r, sizeof *r, child_row, &cfg) != 0) {
            snprintf(r->err, sizeof r->err, "the benchmark process failed");
        }
        if (!r->ok) {
            fprintf(stderr, "hyperpar: bench muon %s %s %s: %s\n", model, lname, i ? strategies[i - 1] : "adamw", r->err);
            rc = 1;
        }
    }
    if (!o->lead || rc) return rc;
    double best_other = 0, best_other_opt = 0;
    for (int i = 2; i < NROWS; i++) {
        if (!best_other || rows[i].r.step_ms < best_other) best_other = rows[i].r.step_ms;
        if (!best_other_opt || rows[i].r.optimizer_ms < best_other_opt) best_other_opt = rows[i].r.optimizer_ms;
    }
    for (int i = 0; i < NROWS; i++) {
        const hp_bench_muon_result *x = &rows[i].r;
        double gf = i ? max_gf[i - 1] : 0, im = i ? imb[i - 1] : 0;
        printf("%-14s %8.1f %6.1f%% %8.1f %7.1f %7.1f %7.1f %7.1f %7.1f %8.1f %8.2f %7.3f %8.1f\n",
               i ? strategies[i - 1] : "adamw", x->step_ms, i ? 100 * (x->step_ms / best_other - 1) : 0.0, x->optimizer_ms,
               x->gather_ms, x->ns_ms, x->return_ms, x->update_ms, x->rest_ms, x->opt_comm_ms, gf, im, x->memory_mb);
        if (jf)
            fprintf(jf,
                    "%s  {\"model\": \"%s\", \"layers\": %d, \"layout\": \"%s\", \"ranks\": %d, \"replicas\": %d, "
                    "\"supernodes\": %d, \"inter_bw_gbps\": %g, \"inter_latency_us\": %g, \"threads\": %d, "
                    "\"mpi\": %d, \"waves\": %d, \"optimizer\": \"%s\", \"muon_dist\": %s%s%s, \"step_ms\": %.3f, \"compute_ms\": %.3f, "
                    "\"exposed_comm_ms\": %.3f, \"optimizer_ms\": %.3f, \"gather_ms\": %.3f, \"ns_ms\": %.3f, "
                    "\"return_ms\": %.3f, \"update_ms\": %.3f, \"rest_ms\": %.3f, \"opt_comm_ms\": %.3f, "
                    "\"ns_gflop_max\": %.4f, \"ns_imbalance\": %.4f, \"gemm_gflops\": %.2f, \"memory_mb\": %.3f}",
                    (*nrows)++ ? ",\n" : "", model, m->layers, lname, o->ranks, replicas, o->supernodes, (double)o->bw,
                    (double)o->lat, o->threads, o->world != NULL, o->waves, i ? "muon" : "adamw", i ? "\"" : "",
                    i ? strategies[i - 1] : "null", i ? "\"" : "", x->step_ms, x->compute_ms, x->exposed_comm_ms,
                    x->optimizer_ms, x->gather_ms, x->ns_ms, x->return_ms, x->update_ms, x->rest_ms, x->opt_comm_ms, gf,
                    im, gemm_gflops, x->memory_mb);
    }
    const hp_bench_muon_result *lay = &rows[1].r, *ga = &rows[NSTRAT].r, *adam = &rows[0].r;
    double bound = 1.5 * (adam->optimizer_ms + (gemm_gflops > 0 ? max_gf[0] / gemm_gflops * 1e3 : 0));
    printf("layout vs the best competitor: step %+.1f%%, optimizer %+.1f%%; optimizer vs gather-all %+.1f%%; Muon's "
           "optimizer %.1f ms vs 1.5 x (AdamW's %.1f ms + NS %.2f GFLOP at %.1f GFLOP/s) = %.1f ms\n",
           100 * (lay->step_ms / best_other - 1), 100 * (lay->optimizer_ms / best_other_opt - 1),
           100 * (lay->optimizer_ms / ga->optimizer_ms - 1), lay->optimizer_ms, adam->optimizer_ms, max_gf[0],
           gemm_gflops, bound);
    return 0;
}

/* GPT-2 124M's Newton-Schulz balance under FSDP at 4, 8 and 64 ranks, from the plan. */
static int print_balance(FILE *jf, int *nrows) {
    hp_model_config m;
    int B, T;
    hp_status st = hp_bench_model(&m, &B, &T, "gpt2-124m", "bench muon");
    printf("gpt2-124m FSDP, Newton-Schulz GFLOP per step from the plan: busiest rank (max/mean)\n%-6s", "ranks");
    for (int i = 0; i < NSTRAT; i++) printf(" %22s", strategies[i]);
    printf("\n");
    const int counts[3] = {4, 8, 64};
    for (int k = 0; !st && k < 3; k++) {
        double gf[NSTRAT], imb[NSTRAT], tot[NSTRAT];
        int b = counts[k] > B ? counts[k] : B; /* the batch must split over the ranks */
        st = plan_flops(gf, imb, tot, &m, b, T, counts[k], 1);
        if (st) break;
        printf("%-6d", counts[k]);
        for (int i = 0; i < NSTRAT; i++) printf(" %14.1f (%5.3f)", gf[i], imb[i]);
        printf("\n");
        for (int i = 0; jf && i < NSTRAT; i++)
            fprintf(jf,
                    "%s  {\"model\": \"gpt2-124m\", \"layout\": \"fsdp\", \"ranks\": %d, \"balance_only\": 1, "
                    "\"muon_dist\": \"%s\", \"ns_gflop_max\": %.4f, \"ns_gflop_total\": %.4f, \"ns_imbalance\": %.4f}",
                    (*nrows)++ ? ",\n" : "", counts[k], strategies[i], gf[i], tot[i], imb[i]);
    }
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    return 0;
}

int hp_cmd_bench_muon(int argc, char **argv) {
    char model[32] = "small", json[512] = "", plans[32] = "fsdp,hsdp";
    mopts o = {.threads = 2, .steps = 5, .ranks = 2, .supernodes = 2, .bw = 1.0f, .lat = 50.0f};
    int balance = 1;
    hp_opt tab[] = {
        {"model", HP_OPT_STR, model, sizeof model, "small | gpt2-124m | all (both, one after the other)"},
        {"layers", HP_OPT_INT, &o.layers, 0, "transformer blocks instead of the model's (0: the model's)"},
        {"ranks", HP_OPT_INT, &o.ranks, 0, "ranks in all (rank threads)"},
        {"supernodes", HP_OPT_INT, &o.supernodes, 0, "emulated supernodes (contiguous ranks; HSDP replicas across them)"},
        {"inter-bw", HP_OPT_FLOAT, &o.bw, 0, "GB/s per rank between supernodes (0: unthrottled)"},
        {"inter-latency", HP_OPT_FLOAT, &o.lat, 0, "microseconds per message between supernodes"},
        {"threads", HP_OPT_INT, &o.threads, 0, "compute threads in all (shared out among the ranks)"},
        {"steps", HP_OPT_INT, &o.steps, 0, "timed steps (after 2 untimed)"},
        {"layouts", HP_OPT_STR, plans, sizeof plans, "fsdp, hsdp or both (comma-separated)"},
        {"waves", HP_OPT_INT, &o.waves, 0, "distributed Muon's exchange waves per group (train's --muon-waves; 0: its default)"},
        {"balance", HP_OPT_INT, &balance, 0, "1: also GPT-2 124M's Newton-Schulz balance at 4, 8 and 64 ranks (plan only)"},
        {"json", HP_OPT_STR, json, sizeof json, "also write the rows as a JSON array"},
    };
    int help = 0, ntab = (int)(sizeof tab / sizeof tab[0]);
    hp_status st = hp_args_parse(&help, tab, ntab, argc, argv, 1, "bench muon");
    if (!st && help) {
        hp_args_usage(tab, ntab, "bench muon",
                      "GPT-2's step with AdamW and with Muon under every distributed Muon strategy, FSDP and HSDP.");
        return 0;
    }
    const char *models[2] = {model, NULL};
    if (!strcmp(model, "all")) models[0] = "small", models[1] = "gpt2-124m";
    if (!st && o.layers < 0) st = hp_errorf("hyperpar bench muon: --layers must be >= 0, got %d", o.layers);
    if (!st && (o.waves < 0 || o.waves > 64)) st = hp_errorf("hyperpar bench muon: --waves must be in 0..64, got %d", o.waves);
    if (!st && (o.steps < 1 || o.threads < 1 || o.ranks < 1 || o.supernodes < 1))
        st = hp_errorf("hyperpar bench muon: --steps, --threads, --ranks and --supernodes must be >= 1");
    if (!st && (!(o.bw >= 0) || !(o.lat >= 0)))
        st = hp_errorf("hyperpar bench muon: --inter-bw and --inter-latency must be >= 0");
    int want_fsdp = 0, want_hsdp = 0;
    if (!st) {
        char buf[32];
        snprintf(buf, sizeof buf, "%s", plans);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && !st; t = strtok_r(NULL, ",", &save)) {
            if (!strcmp(t, "fsdp")) want_fsdp = 1;
            else if (!strcmp(t, "hsdp")) want_hsdp = 1;
            else st = hp_errorf("hyperpar bench muon: --layouts: '%s' is not fsdp or hsdp", t);
        }
        if (!st && !want_fsdp && !want_hsdp) st = hp_errorf("hyperpar bench muon: --layouts names no layout");
    }
    for (int i = 0; i < 2 && models[i] && !st; i++) {
        hp_model_config m;
        int B, T;
        st = model_of(&m, &B, &T, models[i], &o);
    }
    if (!st && want_hsdp && o.supernodes < 2)
        st = hp_errorf("hyperpar bench muon: HSDP's replicas are the supernodes: --supernodes must be >= 2 (or --layouts fsdp)");
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    FILE *jf = NULL;
    st = hp_bench_world(&o.world, &o.lead, &o.supernodes, o.ranks, o.bw, o.lat, "bench muon");
    if (!st) st = hp_bench_json_open(&jf, json, o.lead);
    if (st) {
        hp_cli_error(st);
        hp_world_free(o.world);
        return 1;
    }
    int rc = 0, nrows = 0;
    if (o.lead) {
        char cpu[256];
        hp_cpu_model(cpu, sizeof cpu);
        printf("%d ranks in %d supernodes%s (link %.3g GB/s, %.3g us), %d threads %s, median of %d steps; CPU %s\n",
               o.ranks, o.supernodes, o.world ? " = MPI processes" : "", (double)o.bw, (double)o.lat, o.threads,
               o.world ? "per process" : "in all", o.steps, cpu);
    }
    for (int i = 0; i < 2 && models[i]; i++) {
        hp_model_config m;
        int B = 0, T = 0;
        st = model_of(&m, &B, &T, models[i], &o);
        if (st) {
            hp_cli_error(st);
            rc = 1;
            break;
        }
        /* the GEMM rate of Newton-Schulz's dominant product (C x 4C times 4C x C) on one rank's threads */
        double gemm = 0;
        int tpr = o.world ? o.threads / (o.ranks / o.supernodes) : o.threads / o.ranks;
        hp_bench_gemm_config gc = {m.channels, 4 * m.channels, m.channels, HP_GEMM_PRODUCT_FWD, tpr > 0 ? tpr : 1, 5};
        hp_bench_gemm_result gr;
        if (o.lead) {
            st = hp_bench_gemm(&gr, &gc);
            if (st) {
                hp_cli_error(st);
                rc = 1;
                break;
            }
            gemm = gr.gflops_openblas;
        }
        if (want_fsdp) rc |= run_layout(models[i], &m, B, T, 0, gemm, &o, jf, &nrows);
        if (want_hsdp) rc |= run_layout(models[i], &m, B, T, 1, gemm, &o, jf, &nrows);
    }
    if (balance && o.lead) rc |= print_balance(jf, &nrows);
    hp_bench_json_close(jf);
    hp_world_free(o.world);
    return rc;
}
