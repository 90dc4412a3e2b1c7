/* tests/api/test_api_bench: the inference and benchmark part of the public
 * API through <hyperpar/hyperpar.h> alone: hp_infer over a trained
 * checkpoint (finite logits, deterministic, the window padded, one-line
 * errors), hp_sampler (seeded, greedy at temperature 0), the llm.c round trip
 * giving the exported file back byte for byte (fp32 and bf16), and every benchmark returning
 * positive figures on a tiny model (never a speed assertion); the kernels'
 * ISA report (six families with known ISA names), the bf16 peak and one GEMM
 * shape (OpenBLAS / oneDNN fp32 / oneDNN bf16, the fp32 pick the faster). */
#include <hyperpar/hyperpar.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api_check.h"

static const hp_model_config tiny = {.layers = 2, .heads = 4, .channels = 64, .vocab = 256, .max_seq = 32};
static char tmp[256];

/* Trains the tiny model 2 steps with a checkpoint at the end, into dir. */
static int train_ckpt(const char *dir) {
    hp_model *m = NULL;
    hp_train *t = NULL;
    if (!OK(hp_model_gpt2(&m, &tiny, 2, 32))) return 0;
    hp_train_config c;
    hp_train_config_default(&c, m);
    c.threads = 2, c.data = "/usr/share/common-licenses/GPL-3", c.steps = 2, c.warmup_steps = 0, c.val_steps = 0;
    c.ckpt_dir = dir;
    int ok = OK(hp_train_create(&t, &c)) && OK(hp_train_run(t));
    hp_train_free(t);
    hp_model_free(m);
    return ok;
}

static int same_files(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        if (ca != cb) same = 0;
        if (ca == EOF || cb == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

static long file_size(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    fclose(f);
    return n;
}

static void test_infer(const char *ck) {
    hp_infer *inf = NULL;
    char missing[320];
    snprintf(missing, sizeof missing, "%s/nowhere", tmp);
    ERR(hp_infer_create(&inf, missing, 0, 1), "nowhere");
    ERR(hp_infer_create(&inf, ck, 33, 1), "max_seq");
    if (!OK(hp_infer_create(&inf, ck, 0, 2))) return;
    CHECK(hp_infer_vocab(inf) == 256 && hp_infer_padded_vocab(inf) >= 256 && hp_infer_seq(inf) == 32);
    int32_t tok[32] = {'G', 'N', 'U', ' '};
    const float *lg = NULL;
    ERR(hp_infer_logits(inf, &lg, tok, 0, 0), "n must be");
    ERR(hp_infer_logits(inf, &lg, tok, 4, 4), "pos must be");
    tok[5] = 300;
    ERR(hp_infer_logits(inf, &lg, tok, 6, 0), "300");
    tok[5] = 0;
    float first[256];
    if (OK(hp_infer_logits(inf, &lg, tok, 4, 3))) {
        int finite = 1;
        for (int i = 0; i < 256; i++) finite &= isfinite(lg[i]), first[i] = lg[i];
        CHECK(finite);
    }
    /* the same window again; the padding beyond n does not change position 3 (causal) */
    tok[10] = 'x';
    if (OK(hp_infer_logits(inf, &lg, tok, 11, 3))) CHECK(memcmp(first, lg, sizeof first) == 0);
    hp_infer_free(inf);

    hp_sampler a, b;
    hp_sampler_seed(&a, 7), hp_sampler_seed(&b, 7);
    int same = 1, greedy = hp_sampler_pick(&a, first, 256, 0);
    for (int i = 1; i < 256; i++) CHECK(first[i] <= first[greedy]);
    for (int i = 0; i < 50; i++) same &= hp_sampler_pick(&a, first, 256, 1.0f) == hp_sampler_pick(&b, first, 256, 1.0f);
    CHECK(same);
    hp_sampler_seed(&b, 8);
    int differ = 0;
    for (int i = 0; i < 50; i++) differ |= hp_sampler_pick(&a, first, 256, 5.0f) != hp_sampler_pick(&b, first, 256, 5.0f);
    CHECK(differ);
}

static void test_llmc(const char *ck) {
    char a[320], b[320];
    snprintf(a, sizeof a, "%s/a.bin", tmp);
    snprintf(b, sizeof b, "%s/b.bin", tmp);
    hp_llmc_shape s, r;
    if (!OK(hp_ckpt_llmc_shape(&s, ck))) return;
    CHECK(s.layers == 2 && s.heads == 4 && s.channels == 64 && s.vocab == 256 && s.max_seq == 32);
    if (!OK(hp_export_llmc(a, ck, HP_LLMC_FP32))) return;
    if (OK(hp_llmc_reexport(&r, b, a, HP_LLMC_FP32))) CHECK(memcmp(&r, &s, sizeof r) == 0 && same_files(a, b));
    ERR(hp_llmc_reexport(NULL, b, "/nonexistent/x.bin", HP_LLMC_FP32), "x.bin");
    /* bf16 (llm.c version 5): two bytes a parameter, and its round trip exact
     * too (the values themselves: tests/io/test_io_llmc, tests/cli/test_llmc) */
    char c5[320], d5[320];
    snprintf(c5, sizeof c5, "%s/c5.bin", tmp);
    snprintf(d5, sizeof d5, "%s/d5.bin", tmp);
    hp_llmc_dtype dt = HP_LLMC_FP32;
    if (OK(hp_llmc_dtype_parse(&dt, "bf16"))) CHECK(dt == HP_LLMC_BF16);
    if (OK(hp_llmc_dtype_parse(&dt, "fp32"))) CHECK(dt == HP_LLMC_FP32);
    ERR(hp_llmc_dtype_parse(&dt, "fp16"), "unknown llm.c dtype 'fp16' (expected fp32 or bf16)");
    ERR(hp_llmc_dtype_parse(&dt, NULL), "unknown llm.c dtype");
    long fp32_bytes = file_size(a);
    if (OK(hp_export_llmc(c5, ck, HP_LLMC_BF16))) {
        CHECK(fp32_bytes > 1024 && file_size(c5) == 1024 + (fp32_bytes - 1024) / 2);
        if (OK(hp_llmc_reexport(&r, d5, c5, HP_LLMC_BF16))) CHECK(memcmp(&r, &s, sizeof r) == 0 && same_files(c5, d5));
    }
    ERR(hp_export_llmc(d5, ck, (hp_llmc_dtype)7), "d5.bin: unknown llm.c dtype 7");
    ERR(hp_llmc_reexport(NULL, d5, c5, (hp_llmc_dtype)7), "d5.bin: unknown llm.c dtype 7");
    remove(a), remove(b), remove(c5), remove(d5);
}

static void test_bench(void) {
    hp_bench_train_result tr;
    char prefix[320], path[340];
    snprintf(prefix, sizeof prefix, "%s/trace", tmp);
    hp_bench_train_config tc = {tiny, 2, 32, 2, 2, prefix, 0};
    if (OK(hp_bench_train_step(&tr, &tc))) {
        CHECK(tr.tokens_per_s > 0 && tr.step_ms > 0 && tr.forward_ms > 0 && tr.backward_ms > 0);
        CHECK(tr.optimizer_ms > 0 && tr.flops > 0 && tr.gflops > 0);
        CHECK(tr.forward_ms + tr.backward_ms <= tr.step_ms * 1.5 + 1);
        snprintf(path, sizeof path, "%s.rank0.json", prefix);
        CHECK(access(path, R_OK) == 0);
        remove(path);
    }
    /* the same step in bf16: the program's FLOPs are the GEMMs' and kernels' plus the casts */
    hp_bench_train_result tb;
    hp_bench_train_config tc16 = tc;
    tc16.trace = NULL, tc16.bf16 = 1;
    if (OK(hp_bench_train_step(&tb, &tc16))) {
        CHECK(tb.tokens_per_s > 0 && tb.step_ms > 0 && tb.optimizer_ms > 0);
        CHECK(tb.flops > tr.flops && tb.flops < tr.flops * 1.05);
    }
    tc.steps = 0;
    ERR(hp_bench_train_step(&tr, &tc), "steps");

    double peak = 0;
    const char *isa = NULL;
    if (OK(hp_bench_fma_peak(&peak, &isa, 1))) CHECK(peak > 0 && isa && isa[0]);
    ERR(hp_bench_fma_peak(&peak, &isa, 0), "threads");

    /* the kernels' ISA report: six families, each with a known ISA name */
    hp_kernel_isa krows[HP_KERNEL_ISA_MAX];
    int nk = hp_kernels_isa(krows);
    CHECK(nk == 6);
    static const char *isas[] = {"amx", "avx512-bf16", "avx512", "avx2", "portable"};
    for (int i = 0; i < nk && i < HP_KERNEL_ISA_MAX; i++) {
        int known = 0;
        for (int k = 0; k < 5; k++) known |= !strcmp(krows[i].isa, isas[k]);
        CHECK(known && krows[i].family[0] && krows[i].detail[0]);
    }
    CHECK(nk >= 3 && !strcmp(krows[2].family, "gemm bf16 (oneDNN)"));
    /* the bf16 matmul peak and one GEMM shape */
    double p16 = 0;
    const char *i16 = NULL;
    char impl16[64];
    if (OK(hp_bench_bf16_peak(&p16, &i16, impl16, 1))) CHECK(p16 > 0 && i16 && impl16[0] && !strcmp(i16, krows[2].isa));
    ERR(hp_bench_bf16_peak(&p16, &i16, impl16, 0), "threads");
    hp_bench_gemm_result gr;
    hp_bench_gemm_config gc = {64, 48, 80, HP_GEMM_PRODUCT_BWD_WEIGHT, 2, 1};
    if (OK(hp_bench_gemm(&gr, &gc))) {
        CHECK(gr.gflops_openblas > 0 && gr.gflops_onednn_f32 > 0 && gr.gflops_onednn_bf16 > 0);
        CHECK(gr.faster_f32 && (!strcmp(gr.faster_f32, "OpenBLAS") || !strcmp(gr.faster_f32, "oneDNN")));
        CHECK(!strcmp(gr.faster_f32, gr.gflops_onednn_f32 > gr.gflops_openblas ? "oneDNN" : "OpenBLAS"));
        CHECK(gr.impl_f32[0] && gr.impl_bf16[0] && !strcmp(gr.isa_bf16, krows[2].isa));
    }
    gc.N = 0;
    ERR(hp_bench_gemm(&gr, &gc), "N, IC, OC");
    gc.N = 64, gc.product = (hp_gemm_product)3;
    ERR(hp_bench_gemm(&gr, &gc), "product");

    hp_bench_parallel_result pr;
    hp_bench_parallel_config pc = {tiny, 2, 32, 0, 0, 1, 2, 2};
    for (int k = 0; k < 2; k++) {
        if (k) pc.dp = 2, pc.tp = 1;
        if (OK(hp_bench_parallel_row(&pr, &pc)))
            CHECK(pr.tokens_per_s > 0 && pr.step_ms > 0 && pr.compute_ms > 0 && pr.optimizer_ms > 0 && pr.comm_ms >= 0);
    }
    pc.dp = 2, pc.tp = 0;
    ERR(hp_bench_parallel_row(&pr, &pc), "dp and tp");

    hp_bench_comm *bc = NULL;
    ERR(hp_bench_comm_create(&bc, 0, 0, 0), "repeat");
    if (!OK(hp_bench_comm_create(&bc, 2, 0, 0))) return;
    CHECK(hp_bench_comm_memcpy(bc, 1 << 20, 2) > 0);
    hp_world_options o;
    hp_world_options_default(&o);
    o.ranks_per_supernode = 2, o.mpi = 0;
    hp_world *w = NULL;
    if (OK(hp_world_create(&w, &o))) {
        for (int k = 0; k < 3; k++) {
            hp_bench_comm_case c = {(hp_bench_coll)k, 1 << 16, 2, 0, 0, 0};
            double sec = 0, runs[2] = {0, 0};
            if (OK(hp_bench_comm_run(&sec, NULL, runs, bc, w, &c))) CHECK(sec > 0 && runs[0] > 0 && runs[1] > 0);
            c.fused = k == 0 ? 1 : -1, c.shared = k == 1;
            ERR(hp_bench_comm_run(&sec, NULL, NULL, bc, w, &c), "409600");
            c.bytes = 100 * 4096;
            if (OK(hp_bench_comm_run(&sec, NULL, NULL, bc, w, &c))) CHECK(sec > 0);
        }
        hp_bench_comm_case bad = {HP_BENCH_ALL_REDUCE, 0, 1, 0, 0, 0};
        double sec;
        ERR(hp_bench_comm_run(&sec, NULL, NULL, bc, w, &bad), "bytes");
        hp_world_free(w);
    }
    hp_bench_comm_free(bc);
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/hp_test_api_bench_XXXXXX");
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    char ck[320], cmd[400];
    snprintf(ck, sizeof ck, "%s/run", tmp);
    if (train_ckpt(ck)) {
        test_infer(ck);
        test_llmc(ck);
    }
    test_bench();
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
