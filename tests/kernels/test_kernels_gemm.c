/* kernels/gemm (oneDNN matmul, fp32 and bf16) against a double reference.
 *  - Every product of a linear layer (forward, backward-data with the plain
 *    weight, backward-weight with dout transposed), with bias and with
 *    accumulation, on odd shapes, for fp32 -> fp32, bf16 -> fp32 and
 *    bf16 -> bf16. The reference runs in double on the same (bf16-valued)
 *    inputs. Tolerances: fp32 accumulation, |err| <= 1e-5 (sum_k |a b|);
 *    a bf16 output adds 2^-8 |ref| (its one rounding: bf16 has 8 significant
 *    bits). The fp32 products also match the engine's hp_k_matmul kernels.
 *  - The creation counter: preparing a linear layer creates one primitive
 *    per row block of each of its 3 products (a block per pool thread, >= 16
 *    rows: 3 on one thread, 6 on a 2-thread pool; 0 on the portable
 *    fallback), and 25 steady-state runs create none.
 *  - The thread budget: the calling thread's OpenMP thread count is set to 6
 *    beforehand, yet no context starts an OpenMP worker — 1 thread, or a
 *    2-thread pool whose threads run the blocks (counted in /proc/self/task)
 *    — and the caller's count is 6 again after every call. Two rank-threads with
 *    contexts of their own run at the same time and both get right results.
 *  - The portable fallback (forced through hp_kernels_set_portable, or by
 *    ONEDNN_MAX_CPU_ISA=AVX2 in ctest kernels/gemm_no_avx512, where oneDNN
 *    has no bf16 matmul): same checks, and its ISA reads "portable".
 *  - Bad descs are one-line errors naming the shape. */
#include <dirent.h>
#include <strings.h>
#include <omp.h>
#include <pthread.h>

#include "core/tensor.h"
#include "kernels/bf16.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "kref.h"

static hp_test_rng rng = {4242};

typedef struct {
    float *f;    /* fp32 values (bf16-valued when dt is bf16) */
    uint16_t *h; /* the same in bf16 */
} mat;

static mat mat_new(long n, hp_dtype dt) {
    mat m = {kr_fnew(n), calloc((size_t)n, sizeof(uint16_t))};
    for (long i = 0; i < n; i++) {
        float v = (float)hp_test_normal(&rng);
        if (dt == HP_BF16) v = hp_bf16_to_f32(hp_f32_to_bf16(v));
        m.f[i] = v, m.h[i] = hp_f32_to_bf16(v);
    }
    return m;
}
static void mat_free(mat *m) { free(m->f), free(m->h); }

/* element (i, j) of op(X) for X stored [rows, cols] (trans: stored [cols, rows]) */
static double at(const float *x, long i, long j, long ld_plain, long ld_trans, int trans) {
    return trans ? x[j * ld_trans + i] : x[i * ld_plain + j];
}

/* ref[M,N] = c0 (accumulate) + op(A) op(B) + bias; bound[M,N] = sum_k |a b|. */
static void ref_gemm(double *ref, double *bound, const hp_gemm_desc *d, const float *a, const float *b,
                     const float *bias, const float *c0) {
    for (long i = 0; i < d->M; i++)
        for (long j = 0; j < d->N; j++) {
            double s = 0, bd = 0;
            for (long k = 0; k < d->K; k++) {
                double p = at(a, i, k, d->K, d->M, d->trans_a) * at(b, k, j, d->N, d->K, d->trans_b);
                s += p, bd += fabs(p);
            }
            if (bias) s += bias[j], bd += fabs(bias[j]);
            if (c0) s += c0[i * d->N + j], bd += fabs(c0[i * d->N + j]);
            ref[i * d->N + j] = s, bound[i * d->N + j] = bd;
        }
}

static long check_gemm_result(const char *what, const hp_gemm_desc *d, const void *c, const double *ref,
                              const double *bound) {
    long bad = 0, n = d->M * d->N;
    for (long i = 0; i < n; i++) {
        double v = d->c == HP_BF16 ? hp_bf16_to_f32(((const uint16_t *)c)[i]) : ((const float *)c)[i];
        double tol = 1e-5 * bound[i] + (d->c == HP_BF16 ? fabs(ref[i]) / 256 : 0) + 1e-30;
        if (!(fabs(v - ref[i]) <= tol)) {
            if (!bad)
                fprintf(stderr, "%s %ldx%ldx%ld ta%d tb%d %s->%s bias%d acc%d: element %ld is %.9g, want %.9g\n",
                        what, d->M, d->N, d->K, d->trans_a, d->trans_b, hp_dtype_name(d->a), hp_dtype_name(d->c),
                        d->bias, d->accumulate, i, v, ref[i]);
            bad++;
        }
    }
    return bad;
}

/* One desc: prepare, run twice (the second reuses everything), check. */
static void check_desc(hp_gemm_ctx *ctx, const hp_gemm_desc *d) {
    long na = d->M * d->K, nb = d->K * d->N, nc = d->M * d->N;
    mat a = mat_new(na, d->a), b = mat_new(nb, d->a), bias = mat_new(d->N, HP_F32), c0 = mat_new(nc, d->c);
    double *ref = kr_dnew(nc), *bound = kr_dnew(nc);
    ref_gemm(ref, bound, d, a.f, b.f, d->bias ? bias.f : NULL, d->accumulate ? c0.f : NULL);
    hp_gemm *g = NULL;
    CHECK_OK(hp_gemm_prepare(&g, ctx, d));
    if (!g) goto done;
    size_t es = d->c == HP_BF16 ? 2 : 4;
    void *c = malloc((size_t)nc * es);
    const void *pa = d->a == HP_BF16 ? (const void *)a.h : a.f, *pb = d->a == HP_BF16 ? (const void *)b.h : b.f;
    for (int rep = 0; rep < 2; rep++) {
        memcpy(c, d->c == HP_BF16 ? (void *)c0.h : (void *)c0.f, (size_t)nc * es);
        CHECK_OK(hp_gemm_run(g, c, pa, pb, d->bias ? bias.f : NULL));
        CHECK(check_gemm_result("gemm", d, c, ref, bound) == 0);
    }
    if (hp_kernels_portable() && d->a == HP_BF16) CHECK(hp_gemm_isa(g) == HP_ISA_PORTABLE);
    free(c);
    hp_gemm_free(g);
done:
    mat_free(&a), mat_free(&b), mat_free(&bias), mat_free(&c0);
    free(ref), free(bound);
}

static void t_products(hp_gemm_ctx *ctx) {
    /* N, IC, OC; the last: a weight gradient of 1100 rows, more than 2 threads x PACK_ROWS (512): 3 packed blocks */
    long shapes[][3] = {{37, 19, 45}, {64, 96, 32}, {24, 20, 1100}};
    hp_dtype io[3][2] = {{HP_F32, HP_F32}, {HP_BF16, HP_F32}, {HP_BF16, HP_BF16}};
    for (int s = 0; s < 3; s++)
        for (int p = 0; p < 3; p++)
            for (int t = 0; t < 3; t++)
                for (int v = 0; v < 3; v++) { /* plain, bias, accumulate */
                    hp_gemm_desc d = hp_gemm_linear_desc((hp_linear_product)p, shapes[s][0], shapes[s][1],
                                                         shapes[s][2], io[t][0], io[t][1]);
                    d.bias = v == 1;
                    d.accumulate = v == 2;
                    check_desc(ctx, &d);
                }
}

/* The linear-layer helpers: fp32 against the engine's OpenBLAS kernels;
 * bf16 against the same on widened inputs; creations counted. */
static void t_linear(hp_gemm_ctx *ctx, hp_pool *pool, int packed) {
    long N = 48, IC = 40, OC = 72;
    for (int t = 0; t < 2; t++) {
        hp_dtype dt = t ? HP_BF16 : HP_F32;
        mat x = mat_new(N * IC, dt), w = mat_new(OC * IC, dt), g = mat_new(N * OC, dt), bias = mat_new(OC, HP_F32);
        float *o1 = kr_fnew(N * OC), *o2 = kr_fnew(N * OC), *di1 = kr_fnew(N * IC), *di2 = kr_fnew(N * IC);
        float *dw1 = kr_fnew(OC * IC), *dw2 = kr_fnew(OC * IC);
        hp_k_matmul_fwd(pool, o1, x.f, w.f, bias.f, N, IC, OC);
        hp_k_matmul_bwd(pool, di1, dw1, NULL, g.f, x.f, w.f, N, IC, OC);
        long before = hp_gemm_ctx_creations(ctx);
        hp_gemm_linear l;
        CHECK_OK(hp_gemm_linear_prepare(&l, ctx, N, IC, OC, dt, HP_F32, 1, 0));
        long made = hp_gemm_ctx_creations(ctx) - before;
        int fallback = dt == HP_BF16 && hp_gemm_isa(l.fwd) == HP_ISA_PORTABLE;
        /* every M >= 32 here; a packed product's blocks have a reorder primitive each too */
        int threads = pool ? hp_pool_size(pool) : 1;
        int blocks = fallback ? 0 : 3 * threads + (hp_gemm_packed(l.bwd_weight) ? threads : 0);
        if (!fallback) /* packed: forced; else as AUTO decides (AMX) */
            CHECK(hp_gemm_packed(l.bwd_weight) == (packed || hp_gemm_auto_packs()) && !hp_gemm_packed(l.fwd) &&
                  !hp_gemm_packed(l.bwd_data));
        CHECKF(made == blocks, "%ld primitives created for one linear layer (%d expected)", made, blocks);
        CHECK(hp_gemm_parts(l.fwd) == (fallback ? 0 : threads) && hp_gemm_parts(l.bwd_weight) == (fallback ? 0 : threads));
        /* packed (where oneDNN has AMX, or forced: all_packed), the weight gradient's blocks are dense,
         * so oneDNN runs its brgemm kernels there too (AMX tiles where the CPU has them) */
        if (!fallback && packed && strstr(hp_gemm_impl(l.fwd), "brg"))
            CHECKF(strstr(hp_gemm_impl(l.bwd_weight), "brg") != NULL, "bwd-weight runs '%s'", hp_gemm_impl(l.bwd_weight));
        const void *px = t ? (const void *)x.h : x.f, *pw = t ? (const void *)w.h : w.f, *pg = t ? (const void *)g.h : g.f;
        for (int rep = 0; rep < 25; rep++) {
            CHECK_OK(hp_gemm_linear_fwd(&l, o2, px, pw, bias.f));
            CHECK_OK(hp_gemm_linear_bwd(&l, di2, dw2, pg, px, pw));
        }
        CHECKF(hp_gemm_ctx_creations(ctx) - before == made, "steady-state runs created %ld primitives",
               hp_gemm_ctx_creations(ctx) - before - made);
        double *r = kr_dnew(N * OC + N * IC + OC * IC);
        kr_f2d(r, o1, N * OC);
        KR_CHECK_CLOSE("linear fwd", o2, r, N * OC, 1e-4, 1e-5);
        kr_f2d(r, di1, N * IC);
        KR_CHECK_CLOSE("linear bwd dinp", di2, r, N * IC, 1e-4, 1e-5);
        kr_f2d(r, dw1, OC * IC);
        KR_CHECK_CLOSE("linear bwd dweight", dw2, r, OC * IC, 1e-4, 1e-5);
        hp_gemm_linear_free(&l);
        free(r), free(o1), free(o2), free(di1), free(di2), free(dw1), free(dw2);
        mat_free(&x), mat_free(&w), mat_free(&g), mat_free(&bias);
    }
}

static int task_count(void) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

/* One run of a 64^3 bf16 product on ctx; returns the caller's OpenMP count
 * after; *isa: the ISA that ran. */
static int run_once(hp_isa *isa, hp_gemm_ctx *ctx) {
    hp_gemm_desc d = {.M = 64, .N = 64, .K = 64, .a = HP_BF16, .b = HP_BF16, .c = HP_F32};
    mat a = mat_new(64 * 64, HP_BF16), b = mat_new(64 * 64, HP_BF16);
    float *c = kr_fnew(64 * 64);
    hp_gemm *g = NULL;
    CHECK_OK(hp_gemm_prepare(&g, ctx, &d));
    if (g) {
        *isa = hp_gemm_isa(g);
        for (int i = 0; i < 3; i++) CHECK_OK(hp_gemm_run(g, c, a.h, b.h, NULL));
        hp_gemm_free(g);
    }
    free(c), mat_free(&a), mat_free(&b);
    return omp_get_max_threads();
}

typedef struct {
    int bad;
} rank_arg;

static void *rank_main(void *arg) {
    rank_arg *r = arg;
    hp_gemm_ctx *ctx = NULL;
    hp_status st = hp_gemm_ctx_create(&ctx, NULL);
    if (st) {
        hp_status_free(st);
        r->bad = 1;
        return NULL;
    }
    int before = hp_test_failures;
    for (int i = 0; i < 3; i++) t_linear(ctx, NULL, 0);
    r->bad = hp_test_failures != before;
    hp_gemm_ctx_destroy(ctx);
    return NULL;
}

static void t_threads(void) {
    omp_set_num_threads(6);
    int t0 = task_count();
    hp_gemm_ctx *c1 = NULL, *c2 = NULL;
    CHECK_OK(hp_gemm_ctx_create(&c1, NULL));
    CHECK(hp_gemm_ctx_threads(c1) == 1);
    hp_isa isa = HP_ISA_PORTABLE;
    CHECK(run_once(&isa, c1) == 6);
    CHECKF(task_count() == t0, "a 1-thread context started %d threads", task_count() - t0);
    hp_pool *p2;
    CHECK_OK(hp_pool_create(&p2, 2));
    int t1 = task_count();
    CHECK_OK(hp_gemm_ctx_create(&c2, p2));
    CHECK(hp_gemm_ctx_threads(c2) == 2);
    CHECK(run_once(&isa, c2) == 6);
    int grown = task_count() - t1;
    /* the pool's threads run the row blocks (and the portable fallback): no OpenMP team */
    CHECKF(grown == 0, "a 2-thread context (%s) started %d OpenMP threads", hp_isa_name(isa), grown);
    hp_gemm_ctx_destroy(c1), hp_gemm_ctx_destroy(c2);
    hp_pool_destroy(p2);
    /* two rank-threads, each with a context of its own, at once */
    pthread_t th[2];
    rank_arg ra[2] = {{0}, {0}};
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, rank_main, &ra[i]) == 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CHECK(!ra[0].bad && !ra[1].bad);
}

static void t_errors(hp_gemm_ctx *ctx) {
    hp_gemm *g = NULL;
    hp_gemm_desc d = {.M = 0, .N = 4, .K = 4, .a = HP_F32, .b = HP_F32, .c = HP_F32};
    CHECK_ERR(hp_gemm_prepare(&g, ctx, &d), "gemm 0x4x4");
    hp_gemm_desc e = {.M = 4, .N = 4, .K = 4, .a = HP_BF16, .b = HP_F32, .c = HP_F32};
    CHECK_ERR(hp_gemm_prepare(&g, ctx, &e), "dtypes");
    CHECK(g == NULL);
}

static void t_measure(hp_gemm_ctx *ctx) {
    double sb = 0, sd = 0;
    for (int p = 0; p < 3; p++) {
        CHECK_OK(hp_gemm_f32_measure(&sb, &sd, ctx, (hp_linear_product)p, 64, 48, 80, 2));
        CHECK(sb > 0 && sd > 0);
        hp_gemm_backend b = hp_gemm_f32_choose(sb, sd);
        CHECK(b == (sd < sb ? HP_GEMM_ONEDNN : HP_GEMM_OPENBLAS));
    }
    CHECK(hp_gemm_f32_choose(1.0, 1.0) == HP_GEMM_OPENBLAS);
    CHECK(!strcmp(hp_gemm_backend_name(HP_GEMM_ONEDNN), "oneDNN"));
}

/* pack: the transposed-A products packed dense (always) or left to the ISA (auto) */
static void all(hp_pool *p2, hp_gemm_pack pack) {
    hp_gemm_ctx *ctx = NULL;
    CHECK_OK(hp_gemm_ctx_create(&ctx, p2));
    if (!ctx) return;
    hp_gemm_ctx_set_pack(ctx, pack);
    t_products(ctx);
    t_linear(ctx, p2, pack == HP_GEMM_PACK_ALWAYS);
    t_errors(ctx);
    if (pack == HP_GEMM_PACK_AUTO) t_measure(ctx);
    hp_gemm_ctx_destroy(ctx);
}

int main(void) {
    hp_kernels_init();
    const char *cap = getenv("ONEDNN_MAX_CPU_ISA");
    t_threads(); /* first: counts the OpenMP threads of a fresh process */
    hp_pool *p2;
    CHECK_OK(hp_pool_create(&p2, 2));
    all(p2, HP_GEMM_PACK_AUTO);
    all(p2, HP_GEMM_PACK_ALWAYS);
    hp_gemm_ctx *ctx = NULL;
    CHECK_OK(hp_gemm_ctx_create(&ctx, NULL));
    hp_gemm_desc d = {.M = 8, .N = 8, .K = 8, .a = HP_BF16, .b = HP_BF16, .c = HP_BF16};
    hp_gemm *g = NULL;
    CHECK_OK(hp_gemm_prepare(&g, ctx, &d));
    if (g) printf("bf16 gemm: %s (%s)%s%s\n", hp_gemm_impl(g), hp_isa_name(hp_gemm_isa(g)),
                  cap ? ", ONEDNN_MAX_CPU_ISA=" : "", cap ? cap : "");
    if (g && cap && !strcasecmp(cap, "AVX2")) CHECK(hp_gemm_isa(g) == HP_ISA_PORTABLE);
    hp_gemm_free(g);
    hp_gemm_ctx_destroy(ctx);
    /* the forced portable path */
    hp_kernels_set_portable(1);
    all(p2, HP_GEMM_PACK_AUTO);
    hp_kernels_set_portable(0);
    hp_pool_destroy(p2);
    return hp_test_finish("test_kernels_gemm");
}
