/* bench_step: where one training step of GPT-2 spends its time, operator by
 * operator. Builds the model for a configuration, compiles it as the trainer
 * does, then runs the nodes of the compiled program one at a time (the same
 * tensors, in the same order as hp_program_run) with a clock around each, and
 * the optimizer (clip + AdamW) after them. Prints per operator kind: calls per
 * step, median ms per step, share of the step and GFLOP/s. Not a test.
 * With a fourth argument "nodes", also every linear node of the first layer
 * and of the head on its own (GFLOP/s per GEMM shape).
 * Usage: bench_step [small|gpt2-124m] [steps] [threads] [nodes] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/autodiff.h"
#include "core/rng.h"
#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "ops/ops.h"
#include "core/timing.h"
#include "optim/optimizer.h"
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
    die(hp_autodiff(g, io.loss, &hp_op_add));
    hp_param_store ps;
    die(hp_param_store_create(&ps, g));
    hp_pool *pool;
    die(hp_pool_create(&pool, threads));
    hp_program *prog;
    die(hp_program_create(&prog, g, &ps, pool));
    float **ptrs = malloc(sizeof(float *) * (size_t)ps.n);
    for (int i = 0; i < ps.n; i++) ptrs[i] = hp_param_ptr(&ps, i);
    die(hp_gpt2_init(ptrs, (const char(*)[HP_NAME_LEN])ps.name, ps.shape, ps.n, &m, 1));
    hp_opt_param *op = calloc((size_t)ps.n, sizeof *op);
    float *grads = hp_program_grads(prog);
    for (int i = 0; i < ps.n; i++)
        op[i] = (hp_opt_param){.name = ps.name[i], .param = ptrs[i], .grad = grads + ps.offset[i],
                               .shape = ps.shape[i], .hidden_matrix = ps.hidden_matrix[i]};
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_optimizer *opt;
    die(hp_optimizer_create(&opt, &oc, op, ps.n, pool));
    int32_t *tok = hp_program_data(prog, io.tokens), *tgt = hp_program_data(prog, io.targets);
    hp_rng rng;
    hp_rng_seed(&rng, 5);
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)m.V);
        tgt[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)m.V);
    }

    /* The executor's steps, rebuilt from the graph and the program's storage. */
    size_t scratch = 0;
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op->scratch) {
            size_t s = g->nodes[i].op->scratch(g, &g->nodes[i], threads);
            if (s > scratch) scratch = s;
        }
    hp_status err = HP_OK;
    hp_kctx k = {pool, calloc(scratch + 1, sizeof(float)), NULL, &err};
    hp_tensor(*tin)[HP_MAX_IN] = calloc((size_t)g->nnodes, sizeof *tin);
    hp_tensor(*tout)[HP_MAX_OUT] = calloc((size_t)g->nnodes, sizeof *tout);
    int *rowof = malloc(sizeof(int) * (size_t)g->nnodes);
    row *rows = calloc((size_t)g->nnodes + 2, sizeof *rows);
    int nrows = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        for (int j = 0; j < n->nin; j++) {
            const hp_value *v = &g->vals[n->in[j]];
            tin[i][j] = (hp_tensor){v->dtype, v->shape, hp_program_data(prog, n->in[j])};
        }
        for (int j = 0; j < n->nout; j++)
            if (n->out[j] >= 0) {
                const hp_value *v = &g->vals[n->out[j]];
                tout[i][j] = (hp_tensor){v->dtype, v->shape, hp_program_data(prog, n->out[j])};
            }
        int r = 0;
        while (r < nrows && !(rows[r].op == n->op && rows[r].phase == (int)n->phase)) r++;
        if (r == nrows) rows[nrows++] = (row){n->op, (int)n->phase, 0, 0, calloc((size_t)steps, sizeof(double))};
        rows[r].calls++;
        rows[r].flops += n->op->flops ? n->op->flops(g, n) : 0;
        rowof[i] = r;
    }
    int r_clip = nrows++, r_adam = nrows++;
    rows[r_clip] = (row){NULL, 2, 1, 0, calloc((size_t)steps, sizeof(double))};
    rows[r_adam] = (row){NULL, 3, 1, 0, calloc((size_t)steps, sizeof(double))};
    double *total = calloc((size_t)steps, sizeof(double));
    double *node_t = calloc((size_t)g->nnodes * (size_t)steps, sizeof(double));
    for (int s = -2; s < steps; s++) {
        double t0 = hp_now();
        for (int ph = 0; ph < 2; ph++)
            for (int i = 0; i < g->nnodes; i++) {
                const hp_node *n = &g->nodes[i];
                if ((int)n->phase != ph) continue;
                double a = hp_now();
                n->op->run(&k, n, tin[i], tout[i]);
                double dt = hp_now() - a;
                if (s >= 0) rows[rowof[i]].t[s] += dt, node_t[(size_t)i * (size_t)steps + (size_t)s] = dt;
            }
        double a = hp_now();
        hp_optimizer_clip_grads(opt, 1.0f);
        double b = hp_now();
        hp_optimizer_step(opt, 1e-4f);
        double c = hp_now();
        if (s >= 0) rows[r_clip].t[s] = b - a, rows[r_adam].t[s] = c - b, total[s] = c - t0;
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
        if (rows[r].op)
            snprintf(nm, sizeof nm, "%s%s", rows[r].op->name, rows[r].phase ? " (bwd)" : "");
        else
            snprintf(nm, sizeof nm, "%s", rows[r].phase == 2 ? "optimizer clip" : "optimizer step");
        printf("%-22s %5d %10.3f %6.1f%% %9.1f\n", nm, rows[r].calls, t * 1e3, 100 * t / step,
               rows[r].flops > 0 ? rows[r].flops / t * 1e-9 : 0.0);
    }
    printf("%-22s %5s %10.3f %6.1f%%\n", "sum of medians", "", sum * 1e3, 100 * sum / step);
    for (int i = 0; per_node && i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        int lin = n->op == &hp_op_linear || n->op == &hp_op_linear_bwd;
        if (!lin || !(strstr(n->name, "h.0.") || strstr(n->name, "head"))) continue;
        double *t = node_t + (size_t)i * (size_t)steps;
        double med = hp_median(t, steps), f = n->op->flops ? n->op->flops(g, n) : 0;
        printf("  %-48s %8.3f ms %7.1f GFLOP/s\n", n->name, med * 1e3, f / med * 1e-9);
    }
    for (int r = 0; r < nrows; r++) free(rows[r].t);
    free(rows), free(rowof), free(node_t), free(tin), free(tout), free(total), free(k.scratch), free(op), free(ptrs);
    hp_optimizer_destroy(opt);
    hp_program_destroy(prog);
    hp_pool_destroy(pool);
    hp_param_store_free(&ps);
    hp_graph_destroy(g);
    return 0;
}
