/* Pool-size independence and run-to-run determinism. Every kernel runs on
 * pools of 1, 2 and 3 threads (and the NULL pool) on shapes large enough that
 * each thread gets work, and twice on each pool.
 *  - Two runs on the same pool are bit-identical, for every kernel.
 *  - Across pool sizes, results are bit-identical for every kernel whose
 *    partition does not change the arithmetic: all of them except hp_k_sumsq
 *    (per-thread double partials: within 1e-13 relative) and the matmuls, whose
 *    row/channel blocks go to OpenBLAS as separate calls of different sizes,
 *    and OpenBLAS may sum a row differently for another block height: every
 *    element within 1e-6 of the largest |element| (the test prints which pool
 *    sizes came out bit-identical). With a pool grain (hp_pool_set_grain, the
 *    deterministic mode) the matmuls' calls have fixed shapes, and their
 *    results are bit-identical across pool sizes too. */
#include "kernels/kernels.h"
#include "kref.h"

#define KBUF 800000 /* floats in each output buffer */

/* Shapes and inputs shared by every runner. */
typedef struct {
    long N, C, rows, B, T, NH, IC, OC, n, V, Vp, H;
    int32_t *ids, *tg;
    float *a, *b, *c, *w, *bias; /* random inputs, large enough for every runner */
    uint16_t *h;
    float *scratch;
} inputs;

typedef long (*runner)(hp_pool *pool, const inputs *in, float *out); /* returns floats written */

static long r_embedding(hp_pool *p, const inputs *in, float *out) {
    hp_k_embedding_fwd(p, out, in->ids, in->a, in->N, in->C);
    float *dt = out + in->N * in->C, *acc = dt + in->rows * in->C;
    hp_k_embedding_bwd(p, dt, in->b, in->ids, in->N, in->C, in->rows);
    memcpy(acc, in->c, (size_t)(in->rows * in->C) * sizeof(float));
    hp_k_embedding_bwd_acc(p, acc, in->b, in->ids, in->N, in->C);
    return in->N * in->C + 2 * in->rows * in->C;
}
static long r_add_pos(hp_pool *p, const inputs *in, float *out) {
    long m = in->B * in->T * in->C;
    hp_k_add_pos_fwd(p, out, in->a, in->b, in->B, in->T, in->C);
    hp_k_add_pos_bwd(p, out + m, in->c, in->B, in->T, in->C, in->T + 20);
    return m + (in->T + 20) * in->C;
}
static long r_matmul_fwd(hp_pool *p, const inputs *in, float *out) {
    hp_k_matmul_fwd(p, out, in->a, in->w, in->bias, in->N, in->IC, in->OC);
    return in->N * in->OC;
}
static long r_matmul_bwd(hp_pool *p, const inputs *in, float *out) {
    long N = in->N, IC = in->IC, OC = in->OC;
    hp_k_matmul_bwd(p, out, out + N * IC, out + N * IC + OC * IC, in->b, in->a, in->w, N, IC, OC);
    return N * IC + OC * IC + OC;
}
static long r_layernorm(hp_pool *p, const inputs *in, float *out) {
    long N = in->N, C = in->C, m = N * C;
    float *mean = out + m, *rstd = mean + N;
    hp_k_layernorm_fwd(p, out, mean, rstd, in->a, in->w, in->bias, N, C, 1e-5f);
    float *dx = rstd + N, *dw = dx + m, *db = dw + C;
    hp_k_layernorm_bwd(p, dx, dw, db, in->b, in->a, in->w, mean, rstd, in->scratch, N, C);
    return 2 * m + 2 * N + 2 * C;
}
static long r_rmsnorm(hp_pool *p, const inputs *in, float *out) {
    long N = in->N, C = in->C, m = N * C;
    float *rstd = out + m, *dx = rstd + N, *dw = dx + m;
    hp_k_rmsnorm_fwd(p, out, rstd, in->a, in->w, N, C, 1e-5f);
    hp_k_rmsnorm_bwd(p, dx, dw, in->b, in->a, in->w, rstd, in->scratch, N, C);
    return 2 * m + N + C;
}
static long r_elementwise(hp_pool *p, const inputs *in, float *out) {
    long n = in->n;
    hp_k_gelu_fwd(p, out, in->a, n);
    hp_k_gelu_bwd(p, out + n, in->b, in->a, n);
    hp_k_add(p, out + 2 * n, in->a, in->b, n);
    memcpy(out + 3 * n, in->c, (size_t)n * sizeof(float));
    hp_k_scale(p, out + 3 * n, 0.3f, n);
    hp_k_swiglu_fwd(p, out + 4 * n, in->a, in->N, in->H);
    hp_k_swiglu_bwd(p, out + 4 * n + in->N * in->H, in->b, in->a, in->N, in->H);
    return 4 * n + 3 * in->N * in->H;
}
static long r_attention(hp_pool *p, const inputs *in, float *out) {
    long B = in->B, T = in->T, C = in->C, NH = in->NH;
    float *att = out + B * T * C, *dqkv = att + B * NH * T * T;
    hp_k_attention_fwd(p, out, att, in->a, in->scratch, B, T, C, NH);
    hp_k_attention_bwd(p, dqkv, in->b, in->a, att, in->scratch, B, T, C, NH);
    return B * T * C + B * NH * T * T + B * T * 3 * C;
}
static long r_rope(hp_pool *p, const inputs *in, float *out) {
    long m = in->B * in->T * 3 * in->C;
    hp_k_rope_fwd(p, out, in->a, in->B, in->T, in->C, in->NH, 10000.0f);
    hp_k_rope_bwd(p, out + m, in->b, in->B, in->T, in->C, in->NH, 10000.0f);
    return 2 * m;
}
static long r_xent(hp_pool *p, const inputs *in, float *out) {
    long N = in->N, Vp = in->Vp;
    float *losses = out + N * Vp, *mean = losses + N, *dl = mean + 1;
    hp_k_xent_fwd(p, out, losses, mean, in->a, in->tg, N, in->V, Vp);
    hp_k_xent_bwd(p, dl, out, in->tg, 1.0f, N, in->V, Vp);
    return 2 * N * Vp + N + 1;
}
static long r_bf16(hp_pool *p, const inputs *in, float *out) {
    long n = in->n;
    hp_k_f32_to_bf16(p, (uint16_t *)out, in->a, n); /* n/2 floats of room */
    hp_k_bf16_to_f32(p, out + n, in->h, n);
    return 2 * n;
}
static long r_sumsq(hp_pool *p, const inputs *in, float *out) {
    double s = hp_k_sumsq(p, in->a, in->n);
    memcpy(out, &s, sizeof s);
    return 2;
}

/* 0 = bit-identical across pools, else the relative tolerance. */
static void check(const char *name, runner f, const inputs *in, hp_pool **pools, int np, float *ref,
                  float *got, double tol, int is_double) {
    memset(ref, 0xff, (size_t)KBUF * sizeof(float));
    long n = f(NULL, in, ref);
    for (int k = 0; k < np; k++) {
        memset(got, 0xff, (size_t)KBUF * sizeof(float));
        CHECK(f(pools[k], in, got) == n);
        if (tol == 0.0) {
            if (memcmp(ref, got, (size_t)n * sizeof(float)) != 0) {
                fprintf(stderr, "%s: pool of %d threads differs from 1 thread\n", name,
                        hp_pool_size(pools[k]));
                hp_test_failures++;
            }
        } else if (is_double) {
            double a, b;
            memcpy(&a, ref, sizeof a), memcpy(&b, got, sizeof b);
            CHECK_NEAR(b, a, tol * fabs(a));
        } else {
            int bits = memcmp(ref, got, (size_t)n * sizeof(float)) != 0;
            double m = 0, big = 1e-30;
            for (long i = 0; i < n; i++)
                if (fabs((double)ref[i]) > big) big = fabs((double)ref[i]);
            for (long i = 0; i < n; i++) {
                double e = fabs((double)got[i] - ref[i]) / big;
                if (!(e <= m)) m = e;
            }
            if (!(m <= tol)) {
                fprintf(stderr, "%s: pool of %d: relative difference %g > %g\n", name,
                        hp_pool_size(pools[k]), m, tol);
                hp_test_failures++;
            }
            printf("%s: pool of %d threads %s\n", name, hp_pool_size(pools[k]),
                   bits ? "within tolerance" : "bit-identical");
        }
    }
}

/* With a grain every pool (1, 2, 3 threads) gives the bits of the 1-thread pool. */
static void check_grain(const char *name, runner f, const inputs *in, hp_pool **pools, float *ref, float *got) {
    memset(ref, 0xff, (size_t)KBUF * sizeof(float));
    long n = f(pools[0], in, ref);
    for (int k = 1; k < 3; k++) {
        memset(got, 0xff, (size_t)KBUF * sizeof(float));
        CHECK(f(pools[k], in, got) == n);
        CHECKF(memcmp(ref, got, (size_t)n * sizeof(float)) == 0, "%s: pool of %d threads differs from 1 thread", name,
               hp_pool_size(pools[k]));
    }
    printf("%s: pools of 1, 2 and 3 threads checked bit for bit\n", name);
}

/* Two runs on the same pool are bit-identical (for every kernel). */
static void check_repeat(const char *name, runner f, const inputs *in, hp_pool *pool, float *a,
                         float *b) {
    memset(a, 0xff, (size_t)KBUF * sizeof(float));
    memset(b, 0xff, (size_t)KBUF * sizeof(float));
    long n = f(pool, in, a);
    f(pool, in, b);
    if (memcmp(a, b, (size_t)n * sizeof(float)) != 0) {
        fprintf(stderr, "%s: two runs on %d threads differ\n", name, hp_pool_size(pool));
        hp_test_failures++;
    }
}

int main(void) {
    hp_kernels_init();
    hp_test_rng rng = {12345};
    inputs in = {.N = 67,
                 .C = 260,
                 .rows = 50,
                 .B = 2,
                 .T = 100,
                 .NH = 3,
                 .IC = 45,
                 .OC = 70,
                 .n = 40007,
                 .V = 1000,
                 .Vp = 1024,
                 .H = 130};
    long big = 200000;
    in.a = kr_fnew(big), in.b = kr_fnew(big), in.c = kr_fnew(big), in.w = kr_fnew(big);
    in.bias = kr_fnew(big);
    kr_randn(&rng, in.a, big, 1.0), kr_randn(&rng, in.b, big, 1.0), kr_randn(&rng, in.c, big, 1.0);
    kr_randn(&rng, in.w, big, 0.3), kr_randn(&rng, in.bias, big, 1.0);
    in.ids = malloc(400 * sizeof(int32_t)), in.tg = malloc((size_t)in.N * sizeof(int32_t));
    in.h = malloc((size_t)in.n * sizeof(uint16_t));
    for (long i = 0; i < 400; i++) in.ids[i] = (int32_t)(hp_test_uniform(&rng) * in.rows);
    for (long i = 0; i < in.N; i++) in.tg[i] = (int32_t)(hp_test_uniform(&rng) * in.V);
    for (long i = 0; i < in.n; i++) in.h[i] = (uint16_t)(hp_test_uniform(&rng) * 65536);
    in.scratch = kr_fnew(3 * in.T * in.T + 4 * in.N * in.C);
    float *ref = kr_fnew(KBUF), *got = kr_fnew(KBUF);

    hp_pool *pools[3];
    for (int k = 0; k < 3; k++) CHECK_OK(hp_pool_create(&pools[k], k + 1));

    inputs emb = in;
    emb.C = 70, emb.N = 400; /* 5 column blocks of 16 for the backward */
    check("embedding", r_embedding, &emb, pools, 3, ref, got, 0, 0);
    inputs pos = in;
    pos.C = 150;
    check("add_pos", r_add_pos, &pos, pools, 3, ref, got, 0, 0);
    check("matmul_fwd", r_matmul_fwd, &in, pools, 3, ref, got, 1e-6, 0);
    check("matmul_bwd", r_matmul_bwd, &in, pools, 3, ref, got, 1e-6, 0);
    /* with a grain (the deterministic mode) the matmuls' calls have fixed shapes: bit-identical */
    for (int k = 0; k < 3; k++) hp_pool_set_grain(pools[k], 16);
    check_grain("matmul_fwd grain 16", r_matmul_fwd, &in, pools, ref, got);
    check_grain("matmul_bwd grain 16", r_matmul_bwd, &in, pools, ref, got);
    inputs mg = in;
    mg.N = 300, mg.IC = 150, mg.OC = 200; /* dweight's longer side is OC here, IC above */
    check_grain("matmul_fwd grain 16, 300 rows", r_matmul_fwd, &mg, pools, ref, got);
    check_grain("matmul_bwd grain 16, 300 rows", r_matmul_bwd, &mg, pools, ref, got);
    for (int k = 0; k < 3; k++) {
        CHECK(hp_pool_grain(pools[k]) == 16);
        hp_pool_set_grain(pools[k], 0);
    }
    CHECK(hp_pool_grain(NULL) == 0);
    check("layernorm", r_layernorm, &in, pools, 3, ref, got, 0, 0);
    check("rmsnorm", r_rmsnorm, &in, pools, 3, ref, got, 0, 0);
    check("elementwise", r_elementwise, &in, pools, 3, ref, got, 0, 0);
    inputs at = in;
    at.C = 24; /* hs = 8, 6 (b, h) pairs */
    check("attention", r_attention, &at, pools, 3, ref, got, 0, 0);
    inputs ro = in;
    ro.C = 48; /* hs = 16 */
    check("rope", r_rope, &ro, pools, 3, ref, got, 0, 0);
    inputs xe = in;
    xe.N = 13;
    check("xent", r_xent, &xe, pools, 3, ref, got, 0, 0);
    check("bf16", r_bf16, &in, pools, 3, ref, got, 0, 0);
    check("sumsq", r_sumsq, &in, pools, 3, ref, got, 1e-13, 1);

    struct {
        const char *name;
        runner f;
        const inputs *in;
    } all[] = {{"embedding", r_embedding, &emb},
               {"add_pos", r_add_pos, &pos},
               {"matmul_fwd", r_matmul_fwd, &in},
               {"matmul_bwd", r_matmul_bwd, &in},
               {"layernorm", r_layernorm, &in},
               {"rmsnorm", r_rmsnorm, &in},
               {"elementwise", r_elementwise, &in},
               {"attention", r_attention, &at},
               {"rope", r_rope, &ro},
               {"xent", r_xent, &xe},
               {"bf16", r_bf16, &in},
               {"sumsq", r_sumsq, &in}};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        for (int k = 0; k < 3; k++)
            check_repeat(all[i].name, all[i].f, all[i].in, pools[k], ref, got);

    for (int k = 0; k < 3; k++) hp_pool_destroy(pools[k]);
    free(in.a), free(in.b), free(in.c), free(in.w), free(in.bias), free(in.ids), free(in.tg),
        free(in.h), free(in.scratch), free(ref), free(got);
    return hp_test_finish("test_kernels_pool");
}
