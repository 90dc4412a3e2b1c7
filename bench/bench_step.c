/* bench_step: where one training step of GPT-2 spends its time, operator by
 * operator. Builds the model for a configuration, compiles it with hp_compile
 * as the trainer does (one rank, the optimizer phase included), then runs the
 * program's three phases with a step hook that reads the clock around every
 * step (the same tensors, in the same order as a plain hp_program_run).
 * Prints per operator kind and phase: calls per step, median ms per step,
 * share of the step and GFLOP/s. Not a test. With a fourth argument "nodes",
 * also every linear node of the first layer and of the head on its own
 * (GFLOP/s per GEMM shape).
 * Usage: bench_step [small|gpt2-124m] [steps] [threads] [nodes] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rng.h"
#include "core/timing.h"
#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "ops/ops.h"
#include "optim/phase.h"
#include "parallel/compile.h"
#include "runtime/params.h"
#include "runtime/program.h"

static void die(hp_status st) {
    if (!st) return;
    fprintf(stderr, "bench_step: %s\n", hp_status_msg(st));
    exit(1);
}

/* One row of the report: every node of one operator kind in one phase. */
typedef struct {
    const hp_opdef *op;
    int phase, calls;
    double flops;
    double *t; /* [steps] seconds per step */
} row;

typedef struct {
    const hp_graph *g;
    row *rows;
    int *rowof;
    double *node_t;
    int s, steps;
} timing;

static void time_step(void *ctx, const hp_node *n, double t0, double t1) {
    timing *tm = ctx;
    if (tm->s < 0) return;
    int i = (int)(n - tm->g->nodes);
    tm->rows[tm->rowof[i]].t[tm->s] += t1 - t0;
    tm->node_t[(size_t)i * (size_t)tm->steps + (size_t)tm->s] = t1 - t0;
}

int main(int argc, char **argv) {
    const char *cfg = argc > 1 ? argv[1] : "small";
    int steps = argc > 2 ? atoi(argv[2]) : 10, threads = argc > 3 ? atoi(argv[3]) : 2;
    int per_node = argc > 4 && !strcmp(argv[4], "nodes");
    hp_gpt2_config m = {4, 4, 256, 256, 0, 128};
    int B = 8, T = 128;
    if (!strcmp(cfg, "gpt2-124m")) {
        m = (hp_gpt2_config){12, 12, 768, 50257, 0, 1024};
        B = 4, T = 256;
    } else if (strcmp(cfg, "small")) {
        fprintf(stderr, "bench_step: unknown configuration '%s' (small | gpt2-124m)\n", cfg);
        return 1;
    }
    if (steps < 1 || threads < 1) return 1;
    die(hp_gpt2_config_check(&m));
    hp_kernels_init();
    hp_graph *g;
    hp_gpt2_io io;
    die(hp_graph_create(&g));
    die(hp_gpt2_build(g, &io, &m, B, T));
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_compiled cc;
    hp_compile_opts co = {.train = 1, .optim = &oc, .max_norm = 1.0f};
    die(hp_compile(&cc, g, NULL, 0, &co));
    const hp_graph *lg = cc.rg.g;
    hp_param_store ps;
    die(hp_param_store_create(&ps, lg));
    hp_pool *pool;
    die(hp_pool_create(&pool, threads));
    hp_program *prog;
    die(hp_program_create_ordered(&prog, lg, cc.sched.order, cc.sched.n, &cc.mem, &ps, pool, &cc.rg.ctx));
    float **ptrs = malloc(sizeof(float *) * (size_t)ps.n);
    for (int i = 0; i < ps.n; i++) ptrs[i] = hp_param_ptr(&ps, i);
    die(hp_gpt2_init(ptrs, (const char(*)[HP_NAME_LEN])ps.name, ps.shape, ps.n, &m, 1));
    int32_t *tok = hp_program_data(prog, io.tokens), *tgt = hp_program_data(prog, io.targets);
    hp_rng rng;
    hp_rng_seed(&rng, 5);
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)m.V);
        tgt[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)m.V);
    }
    int *rowof = malloc(sizeof(int) * (size_t)lg->nnodes);
    row *rows = calloc((size_t)lg->nnodes + 2, sizeof *rows);
    int nrows = 0;
    for (int i = 0; i < lg->nnodes; i++) {
        const hp_node *n = &lg->nodes[i];
        int r = 0;
        while (r < nrows && !(rows[r].op == n->op && rows[r].phase == (int)n->phase)) r++;
        if (r == nrows) rows[nrows++] = (row){n->op, (int)n->phase, 0, 0, calloc((size_t)steps, sizeof(double))};
        rows[r].calls++;
        rows[r].flops += n->op->flops ? n->op->flops(lg, n) : 0;
        rowof[i] = r;
    }
    double *total = calloc((size_t)steps, sizeof(double));
    double *node_t = calloc((size_t)lg->nnodes * (size_t)steps, sizeof(double));
    timing tm = {lg, rows, rowof, node_t, -1, steps};
    hp_program_set_hook(prog, time_step, &tm);
    for (int s = -2; s < steps; s++) {
        tm.s = s;
        hp_optim_phase_lrs(hp_program_data(prog, cc.optim.lr), &oc, 1e-4f);
        *(int32_t *)hp_program_data(prog, cc.optim.step) = s + 3;
        double t0 = hp_now();
        for (int ph = 0; ph < HP_NPHASES; ph++) die(hp_program_run(prog, (hp_phase)ph));
        if (s >= 0) total[s] = hp_now() - t0;
    }
    double step = hp_median(total, steps);
    printf("bench_step %s B=%d T=%d threads=%d: median step %.2f ms, %.0f tok/s, loss %.4f\n", cfg, B, T, threads,
           step * 1e3, B * T / step, (double)((float *)hp_program_data(prog, io.loss))[0]);
    printf("%-22s %5s %10s %7s %9s\n", "operator", "calls", "ms/step", "share", "GFLOP/s");
    double sum = 0;
    for (int r = 0; r < nrows; r++) {
        double t = hp_median(rows[r].t, steps);
        sum += t;
        char nm[64];
        snprintf(nm, sizeof nm, "%s%s", rows[r].op->name,
                 rows[r].phase == HP_PHASE_BWD ? " (bwd)" : rows[r].phase == HP_PHASE_OPT ? " (opt)" : "");
        printf("%-22s %5d %10.3f %6.1f%% %9.1f\n", nm, rows[r].calls, t * 1e3, 100 * t / step,
               rows[r].flops > 0 ? rows[r].flops / t * 1e-9 : 0.0);
    }
    printf("%-22s %5s %10.3f %6.1f%%\n", "sum of medians", "", sum * 1e3, 100 * sum / step);
    for (int i = 0; per_node && i < lg->nnodes; i++) {
        const hp_node *n = &lg->nodes[i];
        int lin = n->op == &hp_op_linear || n->op == &hp_op_linear_bwd;
        if (!lin || !(strstr(n->name, "h.0.") || strstr(n->name, "head"))) continue;
        double *t = node_t + (size_t)i * (size_t)steps;
        double med = hp_median(t, steps), f = n->op->flops ? n->op->flops(lg, n) : 0;
        printf("  %-48s %8.3f ms %7.1f GFLOP/s\n", n->name, med * 1e3, f / med * 1e-9);
    }
    for (int r = 0; r < nrows; r++) free(rows[r].t);
    free(rows), free(rowof), free(node_t), free(total), free(ptrs);
    hp_program_destroy(prog);
    hp_compiled_free(&cc);
    hp_pool_destroy(pool);
    hp_param_store_free(&ps);
    hp_graph_destroy(g);
    return 0;
}
