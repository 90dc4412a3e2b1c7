/* tools/bench_parallel: `hyperpar bench parallel` — the cost of running GPT-2
 * through a sharding plan. Rows: the plain single-process engine, the same
 * model through a 1-rank plan (production mode must cost the same), and data
 * and tensor parallel plans on rank threads. Per row: tokens/s and the step
 * split into compute (kernels), exposed communication (collectives run inside
 * the step), optimizer, and other (everything outside kernels, collectives and
 * the optimizer: dispatch, thread hand-offs, input scatter), from rank 0.
 * Each row runs in a child process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "core/rng.h"
#include "runtime/dist.h"
#include "progress.h"
#include "child.h"
#include "session.h"
#include "core/timing.h"
#include "models/gpt2_plan.h"

typedef struct {
    double tok_s, step_ms, compute_ms, comm_ms, opt_ms, other_ms;
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

typedef struct {
    hp_dist *d;
    hp_gpt2_io io;
    const hp_optim_config *oc;
    const int32_t *tok, *tgt;
    long step;
    double prof[64][2];
    double opt_s[64];
} pstep;

/* One training step on a rank; the optimizer phase is timed apart. */
static hp_status rank_step(hp_dist_rank *r, void *c_) {
    pstep *c = c_;
    hp_dist_scatter_value(c->d, r, c->io.tokens, hp_dist_value(r, c->io.tokens), c->tok);
    hp_dist_scatter_value(c->d, r, c->io.targets, hp_dist_value(r, c->io.targets), c->tgt);
    hp_optim_phase_lrs(hp_program_data(r->prog, r->c.optim.lr), c->oc, 1e-4f);
    *(int32_t *)hp_program_data(r->prog, r->c.optim.step) = (int32_t)(c->step + 1);
    HP_TRY(hp_program_run(r->prog, HP_PHASE_FWD));
    HP_TRY(hp_program_run(r->prog, HP_PHASE_BWD));
    double *prof = c->prof[r->local_index], saved[2] = {prof[0], prof[1]};
    double t0 = hp_now();
    HP_TRY(hp_program_run(r->prog, HP_PHASE_OPT));
    c->opt_s[r->local_index] += hp_now() - t0;
    prof[0] = saved[0], prof[1] = saved[1]; /* the optimizer is its own column */
    return HP_OK;
}

static void fill_batch(int32_t *tok, int32_t *tgt, int n, int V) {
    hp_rng rng;
    hp_rng_seed(&rng, 5);
    for (int i = 0; i < n; i++) {
        tok[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)V);
        tgt[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)V);
    }
}

/* The GPT-2 step under a plan (NULL: the plain engine, one rank), profiled. */
static hp_status run_plan(prow *r, const hp_gpt2_config *m, int B, int T, int threads, int steps, int dp, int tp,
                          int overlap) {
    hp_plan plan;
    int have_plan = dp > 0;
    if (have_plan) HP_TRY(hp_plan_gpt2_dp_tp(&plan, dp, tp));
    hp_gpt2_config mc = *m;
    hp_graph *g = NULL;
    hp_comm_world *w = NULL;
    hp_dist *d = NULL;
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    pstep *c = calloc(1, sizeof *c);
    int32_t *tok = calloc((size_t)(B * T), sizeof *tok), *tgt = calloc((size_t)(B * T), sizeof *tgt);
    double *t = calloc((size_t)steps * 5, sizeof *t), *k = t + steps, *cm = k + steps, *o = cm + steps, *ot = o + steps;
    hp_status st = c && tok && tgt && t ? hp_gpt2_config_check(&mc) : hp_errorf("out of memory");
    if (!st) st = hp_graph_create(&g);
    if (!st) st = hp_gpt2_build(g, &c->io, &mc, B, T);
    if (!st) st = hp_dist_world_create(&w, have_plan ? &plan : NULL, 300);
    if (!st) {
        hp_dist_config dc = {.model = g, .plan = have_plan ? &plan : NULL, .world = w,
                             .threads_per_rank = hp_dist_threads_per_rank(w, threads)};
        dc.compile = (hp_compile_opts){.train = 1, .optim = &oc, .max_norm = 1.0f, .schedule = {.overlap = overlap}};
        st = hp_dist_create(&d, &dc);
    }
    if (!st) {
        hp_session init; /* GPT-2 initialisation of a whole model, scattered */
        st = hp_session_create(&init, &mc, 1, 1, 1, 0, NULL);
        if (!st) st = hp_session_init_params(&init, 1);
        if (!st) st = hp_dist_scatter_params(d, &init.ps);
        hp_session_destroy(&init);
    }
    int nr = st ? 0 : hp_dist_nranks(d);
    if (!st) {
        fill_batch(tok, tgt, B * T, m->V);
        c->d = d, c->oc = &oc, c->tok = tok, c->tgt = tgt;
        for (int i = 0; i < nr; i++) hp_program_profile(hp_dist_rank_at(d, i)->prog, c->prof[i]);
    }
    for (int i = -2; i < steps && !st; i++) {
        c->prof[0][0] = c->prof[0][1] = c->opt_s[0] = 0;
        c->step = i + 2;
        double t0 = hp_now();
        st = hp_dist_run(d, rank_step, c);
        double dt = hp_now() - t0;
        if (i >= 0) {
            t[i] = dt, k[i] = c->prof[0][0], cm[i] = c->prof[0][1], o[i] = c->opt_s[0];
            ot[i] = dt - k[i] - cm[i] - o[i];
        }
    }
    if (!st) {
        double step = hp_median(t, steps);
        *r = (prow){B * T / step, step * 1e3, hp_median(k, steps) * 1e3, hp_median(cm, steps) * 1e3, hp_median(o, steps) * 1e3,
                    hp_median(ot, steps) * 1e3, 1, ""};
    }
    free(tok), free(tgt), free(t), free(c);
    hp_dist_destroy(d);
    hp_comm_world_destroy(w);
    hp_graph_destroy(g);
    if (have_plan) hp_plan_free(&plan);
    return st;
}

typedef struct {
    const pconfig *pc;
    const hp_gpt2_config *m;
    int B, T, threads, steps, overlap;
} row_args;

static void child_row(void *result, void *ctx) {
    row_args *a = ctx;
    prow *r = result;
    hp_status st = run_plan(r, a->m, a->B, a->T, a->threads, a->steps, a->pc->dp, a->pc->tp, a->overlap);
    if (st) {
        snprintf(r->err, sizeof r->err, "%s", hp_status_msg(st));
        hp_status_free(st);
    }
}

static void run_row(prow *r, const pconfig *pc, const hp_gpt2_config *m, int B, int T, int threads, int steps,
                    int overlap) {
    row_args a = {pc, m, B, T, threads, steps, overlap};
    if (hp_run_in_child(r, sizeof *r, child_row, &a) != 0) snprintf(r->err, sizeof r->err, "the benchmark process failed");
}

int hp_cmd_bench_parallel(int argc, char **argv) {
    char model[32] = "small", json[512] = "", overlap[8] = "on";
    int threads = 2, steps = 20;
    hp_opt tab[] = {
        {"model", OPT_STR, model, sizeof model, "small | gpt2-124m"},
        {"threads", OPT_INT, &threads, 0, "compute threads in all (shared out among the ranks)"},
        {"steps", OPT_INT, &steps, 0, "timed steps"},
        {"json", OPT_STR, json, sizeof json, "also write the rows as a JSON array"},
        {"overlap", OPT_STR, overlap, sizeof overlap, "on | off: gradient all-reduces overlapped with the backward"},
    };
    int help = 0, ntab = 5;
    hp_status st = hp_args_parse(&help, tab, ntab, argc, argv, 1, "bench parallel");
    if (!st && help) {
        hp_args_usage(tab, ntab, "bench parallel", "Step time of GPT-2 through sharding plans on rank threads.");
        return 0;
    }
    hp_gpt2_config m = {4, 4, 256, 256, 0, 128};
    int B = 8, T = 128;
    if (!st && !strcmp(model, "gpt2-124m")) m = (hp_gpt2_config){12, 12, 768, 50257, 0, 1024}, B = 4, T = 256;
    else if (!st && strcmp(model, "small")) st = hp_errorf("hyperpar bench parallel: --model '%s' is not small or gpt2-124m", model);
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
        printf("%-12s %9.0f %9.2f %10.2f %9.2f %8.2f %8.2f %6.2f%%\n", pconfigs[i].name, r.tok_s, r.step_ms, r.compute_ms,
               r.comm_ms, r.opt_ms, r.other_ms, 100 * r.other_ms / r.step_ms);
        if (jf)
            fprintf(jf,
                    "%s  {\"config\": \"%s\", \"model\": \"%s\", \"dp\": %d, \"tp\": %d, \"threads\": %d, \"tokens_per_s\": %.2f, "
                    "\"step_ms\": %.3f, \"compute_ms\": %.3f, \"comm_ms\": %.3f, \"optimizer_ms\": %.3f, \"other_ms\": %.3f}",
                    i ? ",\n" : "", pconfigs[i].name, model, pconfigs[i].dp, pconfigs[i].tp, threads, r.tok_s, r.step_ms,
                    r.compute_ms, r.comm_ms, r.opt_ms, r.other_ms);
    }
    if (jf) {
        fputs("\n]\n", jf);
        fclose(jf);
    }
    return rc;
}
