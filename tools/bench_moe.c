/* tools/bench_moe: `hyperpar bench moe` — a Mixture-of-Experts model's step
 * under expert parallelism on rank-threads, one compute thread per rank:
 * moe-tiny and moe-small at EP 1, 2 and 4 in one supernode, and EP 2 and 4
 * over 2 emulated supernodes whose link is throttled (--inter-bw GB/s per
 * rank, --inter-latency us per message); every EP row with the exchanges
 * blocking and overlapped (started before, waited after the shared expert
 * and the router's backward). Per row: tokens/s, tokens/s per rank and its
 * share of EP 1's, step time, the all-to-all's time the step waits for (the
 * slowest rank's, and its share of the step; against the blocking row's: the
 * exposed share) and the experts' load (max / mean tokens per expert). Each row runs in a
 * child process; --repeat K runs the rows K times in turn and prints
 * medians. The library does the timing (hp_bench_moe_row). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hyperpar/hyperpar.h>

#include "args.h"
#include "bench_world.h"
#include "child.h"
#include "commands.h"

typedef struct {
    hp_bench_moe_result r;
    int ok;
    char err[256];
} mrow;

static void child_row(void *result, void *ctx) {
    mrow *r = result;
    hp_status st = hp_bench_moe_row(&r->r, ctx);
    if (st) {
        snprintf(r->err, sizeof r->err, "%s", hp_status_msg(st));
        hp_status_free(st);
        return;
    }
    r->ok = 1;
}

typedef struct {
    const char *model;
    int ep, supernodes, blocking;
} mcase;

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int hp_cmd_bench_moe(int argc, char **argv) {
    char json[512] = "", models[64] = "moe-tiny,moe-small";
    int steps = 10, repeat = 3, B = 8, T = 64, chunks = 1, cross = 0;
    float bw = 1.0f, lat = 20.0f;
    hp_opt tab[] = {
        {"models", HP_OPT_STR, models, sizeof models, "models (comma-separated: moe-tiny, moe-small)"},
        {"batch", HP_OPT_INT, &B, 0, "sequences per step (the same global batch in every row)"},
        {"seq", HP_OPT_INT, &T, 0, "tokens per sequence"},
        {"steps", HP_OPT_INT, &steps, 0, "timed steps per row (after 2 untimed)"},
        {"repeat", HP_OPT_INT, &repeat, 0, "runs of every row, in turn; medians printed"},
        {"inter-bw", HP_OPT_FLOAT, &bw, 0, "emulated link between supernodes, GB/s per rank"},
        {"inter-latency", HP_OPT_FLOAT, &lat, 0, "emulated link's latency per message, us"},
        {"moe-chunks", HP_OPT_INT, &chunks, 0,
         "the overlapped rows' MoE layers in this many token chunks (one chunk's experts under another's exchange; "
         "the blocking rows stay whole)"},
        {"cross-only", HP_OPT_FLAG, &cross, 0, "only EP 1 and the rows across the emulated link"},
        {"json", HP_OPT_STR, json, sizeof json, "also write the rows as a JSON array"},
    };
    int help = 0, ntab = (int)(sizeof tab / sizeof tab[0]);
    hp_status st = hp_args_parse(&help, tab, ntab, argc, argv, 1, "bench moe");
    if (!st && help) {
        hp_args_usage(tab, ntab, "bench moe", "A MoE model's step under expert parallelism: tokens/s, all-to-all, load.");
        return 0;
    }
    if (!st && (steps < 1 || repeat < 1 || repeat > 15 || B < 4 || B % 4 || T < 1 || bw <= 0 || lat < 0 || chunks < 0 || chunks > 64))
        st = hp_errorf("hyperpar bench moe: --steps >= 1, --repeat in 1..15, --batch a multiple of 4, --seq >= 1, "
                       "--inter-bw > 0, --inter-latency >= 0, --moe-chunks in 0..64");
    FILE *jf = NULL;
    if (!st) st = hp_bench_json_open(&jf, json, 1);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    const char *names[4];
    int nm = 0;
    char mb[64];
    snprintf(mb, sizeof mb, "%s", models);
    for (char *save = NULL, *t = strtok_r(mb, ",", &save); t && nm < 4; t = strtok_r(NULL, ",", &save)) names[nm++] = t;
    enum { PER = 9 };
    mcase cases[4 * PER];
    int nc = 0;
    for (int i = 0; i < nm; i++) {
        const int eps[PER][3] = {{1, 1, 1}, {2, 1, 1}, {2, 1, 0}, {4, 1, 1}, {4, 1, 0},
                                 {2, 2, 1}, {2, 2, 0}, {4, 2, 1}, {4, 2, 0}};
        for (int k = 0; k < PER; k++)
            if (!cross || eps[k][0] == 1 || eps[k][1] > 1) cases[nc++] = (mcase){names[i], eps[k][0], eps[k][1], eps[k][2]};
    }
    double v[4 * PER][6][15];
    int ok[4 * PER] = {0};
    int rc = 0;
    for (int rep = 0; rep < repeat; rep++) /* the rows in turn, K times: alternating runs */
        for (int c = 0; c < nc; c++) {
            hp_bench_moe_config cfg = {cases[c].model, B, T, cases[c].ep, cases[c].supernodes,
                                       cases[c].supernodes > 1 ? bw : 0, cases[c].supernodes > 1 ? lat : 0, steps,
                                       cases[c].blocking, cases[c].blocking ? 1 : chunks};
            mrow r;
            memset(&r, 0, sizeof r);
            if (hp_run_in_child(&r, sizeof r, child_row, &cfg) != 0 || !r.ok) {
                fprintf(stderr, "bench moe: %s ep %d: %s\n", cases[c].model, cases[c].ep,
                        r.err[0] ? r.err : "the benchmark process failed");
                rc = 1;
                continue;
            }
            ok[c]++;
            double row[6] = {r.r.tokens_per_s, r.r.step_ms, r.r.a2a_ms, r.r.a2a_exposed_ms, r.r.max_tokens_per_expert,
                             r.r.mean_tokens_per_expert};
            for (int j = 0; j < 6; j++) v[c][j][ok[c] - 1] = row[j];
        }
    char cpu[256];
    hp_cpu_model(cpu, sizeof cpu);
    printf("bench moe: batch %d x %d tokens per step, one compute thread per rank, median of %d run(s) of %d steps; "
           "emulated link %.3g GB/s per rank, %.3g us per message; overlapped rows in %d token chunk%s; CPU %s\n",
           B, T, repeat, steps, bw, lat, chunks > 1 ? chunks : 1, chunks > 1 ? "s" : "", cpu);
    printf("%-10s %3s %-13s %-9s %10s %10s %8s %9s %9s %7s %8s %9s\n", "model", "ep", "supernodes", "exchange",
           "tok/s", "tok/s/rank", "vs EP1", "step ms", "a2a ms", "a2a %", "exposed", "max/mean");
    int nrows = 0;
    double base = 0, blocked = 0;
    for (int c = 0; c < nc; c++) {
        if (!ok[c]) continue;
        double m[6];
        for (int j = 0; j < 6; j++) m[j] = median(v[c][j], ok[c]);
        if (cases[c].ep == 1) base = m[0];
        if (cases[c].blocking) blocked = m[2]; /* the next row is the same setting overlapped */
        double per = m[0] / cases[c].ep, share = base > 0 ? per / base : 0;
        double exposed = cases[c].blocking ? 1.0 : blocked > 0 ? m[2] / blocked : 0;
        char sn[32], ex[16] = "-";
        snprintf(sn, sizeof sn, cases[c].supernodes > 1 ? "2 (emulated)" : "1");
        if (cases[c].ep > 1) snprintf(ex, sizeof ex, "%.1f%%", 100 * exposed);
        printf("%-10s %3d %-13s %-9s %10.0f %10.0f %7.1f%% %9.2f %9.2f %6.1f%% %8s %9.2f\n", cases[c].model,
               cases[c].ep, sn, cases[c].ep == 1 ? "-" : cases[c].blocking ? "blocking" : "overlap", m[0], per,
               100 * share, m[1], m[2], m[1] > 0 ? 100 * m[2] / m[1] : 0, ex, m[5] > 0 ? m[4] / m[5] : 0);
        if (jf)
            fprintf(jf,
                    "%s  {\"model\": \"%s\", \"ep\": %d, \"supernodes\": %d, \"inter_bw_gbps\": %.3g, "
                    "\"inter_latency_us\": %.3g, \"batch\": %d, \"seq\": %d, \"runs\": %d, \"tokens_per_s\": %.1f, "
                    "\"tokens_per_s_per_rank\": %.1f, \"per_rank_vs_ep1\": %.4f, \"step_ms\": %.3f, \"a2a_ms\": %.3f, "
                    "\"a2a_exposed_ms\": %.3f, \"max_tokens_per_expert\": %.1f, \"mean_tokens_per_expert\": %.1f, "
                    "\"blocking\": %d, \"moe_chunks\": %d, \"exposed_vs_blocking\": %.4f}",
                    nrows++ ? ",\n" : "", cases[c].model, cases[c].ep, cases[c].supernodes,
                    cases[c].supernodes > 1 ? bw : 0, cases[c].supernodes > 1 ? lat : 0, B, T, ok[c], m[0], per, share,
                    m[1], m[2], m[3], m[4], m[5], cases[c].ep > 1 && cases[c].blocking,
                    cases[c].blocking || chunks < 1 ? 1 : chunks, exposed);
    }
    hp_bench_json_close(jf);
    return rc;
}
