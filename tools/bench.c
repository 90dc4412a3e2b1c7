/* tools/bench: `hyperpar bench` — training speed of fixed configurations:
 * tokens/s, ms per step split into forward / backward / optimizer, achieved
 * GFLOP/s (operator costs of the compiled program), MFU against the FMA peak
 * measured here (raised to the clock's floor where the clock is known; "n/a",
 * never a figure above 100%, when a row beats it), and peak resident memory.
 * Each configuration runs in a child process so its peak memory is its own.
 * First it prints which ISA each kernel family uses; --dtype bf16 also
 * measures the bf16 matmul peak and runs every configuration twice, fp32 then
 * bf16, MFU against each dtype's peak; --gemm times the models' GEMM shapes
 * through OpenBLAS, oneDNN fp32 and oneDNN bf16 instead of training. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

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
    {"gpt2-124m", {.layers = 12, .heads = 12, .channels = 768, .vocab = 50257, .max_seq = 1024}, 4, 256, 4},
    {"small", {.layers = 4, .heads = 4, .channels = 256, .vocab = 256, .max_seq = 128}, 8, 128, 30},
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
    int bf16;
} child_args;

/* In the child: the step timed, then this process's peak RSS. */
static void child_run(void *result, void *ctx) {
    child_args *a = ctx;
    bench_result *r = result;
    char prefix[700] = "";
    if (a->trace[0]) snprintf(prefix, sizeof prefix, "%s.%s%s", a->trace, a->c->name, a->bf16 ? ".bf16" : "");
    hp_bench_train_config bc = {a->c->m, a->c->B, a->c->T, a->threads, a->steps, prefix, a->bf16};
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
static void run_isolated(bench_result *r, const bench_config *c, int threads, int steps, const char *trace, int bf16) {
    child_args a = {c, threads, steps, trace, bf16};
    if (hp_run_in_child(r, sizeof *r, child_run, &a) != 0)
        snprintf(r->err, sizeof r->err, "the benchmark process failed");
}

/* The linear layers of a configuration at B x T rows: qkv, attention
 * projection, MLP up, MLP down, LM head (padded vocabulary). */
static void gemm_shapes(int shapes[5][3], const bench_config *c) {
    int N = c->B * c->T, C = c->m.channels, Vp = (c->m.vocab + 127) / 128 * 128;
    int s[5][3] = {{N, C, 3 * C}, {N, C, C}, {N, C, 4 * C}, {N, 4 * C, C}, {N, C, Vp}};
    memcpy(shapes, s, sizeof s);
}

/* --gemm: every product of every linear layer of the chosen configurations. */
static int run_gemm_table(const char *which, int threads, int reps) {
    static const char *pname[3] = {"fwd", "bwd-data", "bwd-weight"};
    printf("GEMM GFLOP/s, %d threads (N x OC x IC = M x N x K of the forward; bf16: bf16 in, fp32 accumulation)\n",
           threads);
    printf("%-10s %-18s %-10s %9s %9s %9s %9s  %s\n", "config", "shape", "product", "OpenBLAS", "oneDNN", "bf16",
           "fp32 pick", "bf16 impl");
    int nconf = (int)(sizeof configs / sizeof configs[0]);
    for (int i = 0; i < nconf; i++) {
        if (strcmp(which, "all") && strcmp(which, configs[i].name)) continue;
        int sh[5][3];
        gemm_shapes(sh, &configs[i]);
        for (int k = 0; k < 5; k++)
            for (int p = 0; p < 3; p++) {
                hp_bench_gemm_config gc = {sh[k][0], sh[k][1], sh[k][2], (hp_gemm_product)p, threads, reps};
                hp_bench_gemm_result r;
                hp_status st = hp_bench_gemm(&r, &gc);
                if (st) {
                    hp_cli_error(st);
                    return 1;
                }
                char shape[32];
                snprintf(shape, sizeof shape, "%dx%dx%d", sh[k][0], sh[k][2], sh[k][1]);
                printf("%-10s %-18s %-10s %9.1f %9.1f %9.1f %9s  %s\n", configs[i].name, shape, pname[p],
                       r.gflops_openblas, r.gflops_onednn_f32, r.gflops_onednn_bf16, r.faster_f32, r.impl_bf16);
                fflush(stdout);
            }
    }
    return 0;
}

typedef struct {
    double gflops, insn_gflops; /* oneDNN's bf16 matmul; the instruction throughput */
    char isa[16], impl[64], insn_isa[32], err[256];
    int ok;
} peak16_result;

/* In a child: the bf16 peak runs OpenMP teams, which a later fork (the
 * training configurations' children) would not carry over. */
static void child_peak16(void *result, void *ctx) {
    peak16_result *r = result;
    const char *isa = "";
    hp_status st = hp_bench_bf16_peak(&r->gflops, &isa, r->impl, *(int *)ctx);
    if (st) {
        snprintf(r->err, sizeof r->err, "%s", hp_status_msg(st));
        hp_status_free(st);
        return;
    }
    snprintf(r->isa, sizeof r->isa, "%s", isa);
    st = hp_bench_bf16_insn_peak(&r->insn_gflops, &isa, *(int *)ctx);
    if (st) {
        snprintf(r->err, sizeof r->err, "%s", hp_status_msg(st));
        hp_status_free(st);
        return;
    }
    snprintf(r->insn_isa, sizeof r->insn_isa, "%s", isa);
    r->ok = 1;
}

int hp_cmd_bench(int argc, char **argv) {
    char which[64] = "all", json[512] = "", trace[512] = "", dtype[16] = "fp32";
    int gemm = 0;
    int threads = 2, steps = 0;
    hp_opt tab[] = {
        {"model", HP_OPT_STR, which, sizeof which, "gpt2-124m | small | all"},
        {"threads", HP_OPT_INT, &threads, 0, "compute threads"},
        {"steps", HP_OPT_INT, &steps, 0, "timed steps (0 = the configuration's default; with --gemm: runs per product, 3)"},
        {"json", HP_OPT_STR, json, sizeof json, "also write the rows as a JSON array to this file"},
        {"trace", HP_OPT_STR, trace, sizeof trace, "trace the timed steps: FILE.<config>.rank0.json (Chrome/Perfetto)"},
        {"dtype", HP_OPT_STR, dtype, sizeof dtype, "fp32 | bf16: bf16 also measures the bf16 matmul peak and adds a bf16 row per config"},
        {"gemm", HP_OPT_FLAG, &gemm, 0, "time the configurations' GEMMs (OpenBLAS, oneDNN fp32, oneDNN bf16) instead of training"},
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
    if (!st && strcmp(dtype, "fp32") && strcmp(dtype, "bf16"))
        st = hp_errorf("hyperpar bench: --dtype '%s' is not fp32 or bf16", dtype);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    hp_kernel_isa isarows[HP_KERNEL_ISA_MAX];
    int nrows = hp_kernels_isa(isarows);
    printf("kernels (ISA detected at run time):\n");
    for (int i = 0; i < nrows; i++) printf("  %-22s %-12s %s\n", isarows[i].family, isarows[i].isa, isarows[i].detail);
    if (gemm) return run_gemm_table(which, threads, steps > 0 ? steps : 3);
    const char *isa;
    double measured = 0, peak = 0, peak_bf16 = 0, matmul_bf16 = 0;
    char peak16_isa[32] = "";
    st = hp_bench_fma_peak(&measured, &isa, threads);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    hp_cpu_clock clock;
    hp_cpu_clock_read(&clock, NULL, NULL);
    hp_bench_peak pk32, pk16 = {0};
    hp_bench_peak_settle(&pk32, measured, isa, threads, &clock);
    peak = pk32.peak;
    hp_openblas_kernels ob;
    hp_kernels_openblas(&ob);
    const char *core = ob.coretype_set ? ob.coretype : NULL, *blas = ob.core;
    printf("FP32 FMA peak (%s, %d threads): %.1f GFLOP/s (%s); OpenBLAS kernels: %s (OPENBLAS_CORETYPE=%s)\n", isa,
           threads, peak, pk32.note, blas, core ? core : "(unset)");
    if (!strcmp(dtype, "bf16")) {
        peak16_result p16;
        if (hp_run_in_child(&p16, sizeof p16, child_peak16, &threads) != 0 || !p16.ok) {
            fprintf(stderr, "hyperpar: bench: bf16 peak: %s\n", p16.ok || !p16.err[0] ? "the benchmark process failed" : p16.err);
            return 1;
        }
        /* MFU against the instruction peak where there is one, else oneDNN's matmul */
        if (p16.insn_gflops > 0)
            hp_bench_peak_settle(&pk16, p16.insn_gflops, p16.insn_isa, threads, &clock);
        else
            hp_bench_peak_settle(&pk16, p16.gflops, "onednn matmul", threads, &clock);
        if (p16.insn_gflops > 0)
            printf("BF16 peak (%s, %d threads): %.1f GFLOP/s (%s; %.2fx the FP32 FMA peak)\n", p16.insn_isa, threads,
                   pk16.peak, pk16.note, pk16.peak / peak);
        else
            printf("BF16 peak: no bf16 instruction on this CPU (the bf16 products run widened to fp32)\n");
        printf("BF16 matmul, oneDNN %s (%s), 1024^3, %d threads: %.1f GFLOP/s (%.2fx the FP32 FMA peak)\n", p16.impl,
               p16.isa, threads, p16.gflops, p16.gflops / peak);
        printf("(each configuration: an fp32 row, then a bf16 row (--dtype bf16), each in its own process; MFU against "
               "the peak of the dtype that ran: %s; x fp32: bf16 tok/s over the fp32 row's)\n",
               p16.insn_gflops > 0 ? "the instruction peak" : "the matmul");
        peak_bf16 = pk16.peak;
        matmul_bf16 = p16.gflops;
        snprintf(peak16_isa, sizeof peak16_isa, "%s", p16.insn_gflops > 0 ? p16.insn_isa : "onednn matmul");
    }
    printf("%-15s %9s %9s %8s %8s %8s %8s %6s %8s%s\n", "config", "tok/s", "step ms", "fwd ms", "bwd ms", "opt ms",
           "GFLOP/s", "MFU", "RSS MB", peak_bf16 > 0 ? "  x fp32" : "");
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
        double fp32_tps = 0;
        for (int bf16 = 0; bf16 <= (peak_bf16 > 0); bf16++) {
            bench_result r;
            run_isolated(&r, c, threads, steps > 0 ? steps : c->steps, trace, bf16);
            if (!r.ok) {
                fprintf(stderr, "hyperpar: bench %s%s: %s\n", c->name, bf16 ? " (bf16)" : "", r.err);
                rc = 1;
                continue;
            }
            const hp_bench_train_result *t = &r.r;
            double pk = bf16 ? peak_bf16 : peak;
            hp_bench_mfu mfu;
            hp_bench_mfu_get(&mfu, t->gflops, pk);
            char name[32], ratio[16] = "";
            snprintf(name, sizeof name, "%s%s", c->name, peak_bf16 > 0 ? (bf16 ? " bf16" : " fp32") : "");
            if (bf16 && fp32_tps > 0) snprintf(ratio, sizeof ratio, "  %5.2fx", t->tokens_per_s / fp32_tps);
            if (!bf16) fp32_tps = t->tokens_per_s;
            printf("%-15s %9.0f %9.1f %8.1f %8.1f %8.1f %8.1f %6s %8.0f%s\n", name, t->tokens_per_s, t->step_ms,
                   t->forward_ms, t->backward_ms, t->optimizer_ms, t->gflops, mfu.cell, r.rss_mb, ratio);
            if (!mfu.known) printf("  (%s: MFU %s: %s)\n", name, mfu.cell, mfu.note);
            if (jf)
                fprintf(jf,
                        "%s  {\"config\": \"%s\", \"dtype\": \"%s\", \"threads\": %d, \"B\": %d, \"T\": %d, \"tokens_per_s\": %.2f, \"step_ms\": %.3f, "
                        "\"forward_ms\": %.3f, \"backward_ms\": %.3f, \"optimizer_ms\": %.3f, \"gflops\": %.2f, "
                        "\"peak_gflops\": %.2f, \"peak_measured_gflops\": %.2f, \"peak_floor_gflops\": %.2f, \"peak_isa\": \"%s\", \"matmul_bf16_gflops\": %.2f, %s, \"peak_rss_mb\": %.1f, \"fma_isa\": \"%s\", \"openblas_coretype\": \"%s\", \"openblas_core\": \"%s\"}",
                        rows ? ",\n" : "", c->name, bf16 ? "bf16" : "fp32", threads, c->B, c->T, t->tokens_per_s, t->step_ms,
                        t->forward_ms, t->backward_ms, t->optimizer_ms, t->gflops, pk,
                        bf16 ? pk16.measured : pk32.measured, bf16 ? pk16.floor : pk32.floor, bf16 ? peak16_isa : isa,
                        matmul_bf16, mfu.json, r.rss_mb, isa,
                        core ? core : "", blas);
            rows++;
        }
    }
    if (jf) {
        fputs("\n]\n", jf);
        if (hp_cli_close_output(jf, json)) rc = 1;
    }
    return rc;
}
