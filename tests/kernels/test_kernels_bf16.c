/* The bf16 kernels (kernels/bf16.h) against their fp32 counterparts.
 *
 * Inputs are random fp32 values rounded to bf16; the fp32 kernel runs on the
 * same values widened, so the only difference allowed is the bf16 kernel's
 * own rounding of its outputs:
 *  - bf16 outputs: within 2^-8 relative (half a bf16 ulp: bf16 keeps 8
 *    significant bits, so round-to-nearest-even is off by at most 2^-8 of the
 *    value) plus 2^-20 for fp32 order effects, and an absolute 1e-6 of the
 *    output's largest |value| for results that cancel to ~0;
 *  - fp32 outputs (statistics, probabilities, losses, weight gradients):
 *    within 1e-5 relative + 1e-6 of the largest |value|.
 * Forward and backward of every kernel, on a NULL pool and a pool of 2.
 * Then the conversions: AVX512-BF16 (where present) and the portable path
 * give identical bits on 2^19 inputs covering every exponent, ties, NaNs and
 * denormals, both equal to hp_f32_to_bf16 (core/tensor.h); and every kernel
 * run again with the portable path forced (hp_kernels_set_portable) gives the
 * same bits as before. Run under HP_KERNELS_PORTABLE=1 (ctest
 * kernels/bf16_portable_env), the environment switch is checked too. The
 * cpuid features agree with the compiler's own detection. */
#include "core/tensor.h"
#include "kernels/bf16.h"
#include "kernels/isa.h"
#include "kernels/kernels.h"
#include "kref.h"

#define BF_RTOL (1.0 / 256 + 1.0 / 1048576)
#define F32_RTOL 1e-5

static hp_test_rng rng = {20261201};

static uint16_t *hnew(long n) {
    uint16_t *p = calloc((size_t)(n > 0 ? n : 1), sizeof(uint16_t));
    if (!p) abort();
    return p;
}

/* h[n] = bf16 of N(0, sd^2) samples; f[n] = h widened. */
static void rand_bf16(uint16_t *h, float *f, long n, double sd) {
    for (long i = 0; i < n; i++) {
        h[i] = hp_f32_to_bf16((float)(sd * hp_test_normal(&rng)));
        f[i] = hp_bf16_to_f32(h[i]);
    }
}

static double maxabs(const float *x, long n) {
    double m = 0;
    for (long i = 0; i < n; i++) m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

/* A bf16 result got[n] against the fp32 kernel's ref[n]. */
static void check_bf(const char *what, const uint16_t *got, const float *ref, long n) {
    float *g = kr_fnew(n);
    double *r = kr_dnew(n);
    for (long i = 0; i < n; i++) g[i] = hp_bf16_to_f32(got[i]), r[i] = ref[i];
    KR_CHECK_CLOSE(what, g, r, n, 1e-6 * maxabs(ref, n) + 1e-30, BF_RTOL);
    free(g), free(r);
}

/* An fp32 result of a bf16 kernel against the fp32 kernel's. */
static void check_f32(const char *what, const float *got, const float *ref, long n) {
    double *r = kr_dnew(n);
    kr_f2d(r, ref, n);
    KR_CHECK_CLOSE(what, got, r, n, 1e-6 * maxabs(ref, n) + 1e-30, F32_RTOL);
    free(r);
}

/* Every output of one full pass, kept to compare the forced-portable pass bit for bit. */
typedef struct {
    uint16_t *h[16];
    long nh[16];
    float *f[16];
    long nf[16];
    int kh, kf;
} outputs;

static void keep_h(outputs *o, const uint16_t *x, long n) {
    o->h[o->kh] = hnew(n), o->nh[o->kh] = n;
    memcpy(o->h[o->kh++], x, (size_t)n * sizeof(uint16_t));
}
static void keep_f(outputs *o, const float *x, long n) {
    o->f[o->kf] = kr_fnew(n), o->nf[o->kf] = n;
    memcpy(o->f[o->kf++], x, (size_t)n * sizeof(float));
}

static float *scratch;
#define SCRATCH_FLOATS (1L << 22)

static void t_norms(hp_pool *p, outputs *o) {
    long N = 37, C = 320;
    int nt = hp_pool_size(p);
    HP_ASSERT(hp_kb_norm_scratch(C, nt) <= SCRATCH_FLOATS);
    uint16_t *xh = hnew(N * C), *gh = hnew(N * C), *oh = hnew(N * C);
    float *xf = kr_fnew(N * C), *gf = kr_fnew(N * C), *of = kr_fnew(N * C), *w = kr_fnew(C), *b = kr_fnew(C);
    float *m1 = kr_fnew(N), *r1 = kr_fnew(N), *m2 = kr_fnew(N), *r2 = kr_fnew(N);
    float *dw1 = kr_fnew(C), *db1 = kr_fnew(C), *dw2 = kr_fnew(C), *db2 = kr_fnew(C);
    rand_bf16(xh, xf, N * C, 2.0);
    for (long i = 0; i < N * C; i++) { /* a mean offset, as real activations have */
        xh[i] = hp_f32_to_bf16(xf[i] + 0.5f);
        xf[i] = hp_bf16_to_f32(xh[i]);
    }
    rand_bf16(gh, gf, N * C, 1.0);
    kr_randn(&rng, w, C, 1.0), kr_randn(&rng, b, C, 1.0);
    /* LayerNorm */
    hp_k_layernorm_fwd(p, of, m1, r1, xf, w, b, N, C, 1e-5f);
    hp_kb_layernorm_fwd(p, oh, m2, r2, xh, w, b, scratch, N, C, 1e-5f);
    check_bf("layernorm fwd out", oh, of, N * C);
    check_f32("layernorm fwd mean", m2, m1, N);
    check_f32("layernorm fwd rstd", r2, r1, N);
    keep_h(o, oh, N * C), keep_f(o, m2, N), keep_f(o, r2, N);
    hp_k_layernorm_bwd(p, of, dw1, db1, gf, xf, w, m1, r1, NULL, N, C);
    hp_kb_layernorm_bwd(p, oh, dw2, db2, gh, xh, w, m1, r1, scratch, N, C);
    check_bf("layernorm bwd dinp", oh, of, N * C);
    check_f32("layernorm bwd dw", dw2, dw1, C);
    check_f32("layernorm bwd db", db2, db1, C);
    keep_h(o, oh, N * C), keep_f(o, dw2, C), keep_f(o, db2, C);
    /* RMSNorm */
    hp_k_rmsnorm_fwd(p, of, r1, xf, w, N, C, 1e-5f);
    hp_kb_rmsnorm_fwd(p, oh, r2, xh, w, scratch, N, C, 1e-5f);
    check_bf("rmsnorm fwd out", oh, of, N * C);
    check_f32("rmsnorm fwd rstd", r2, r1, N);
    keep_h(o, oh, N * C);
    hp_k_rmsnorm_bwd(p, of, dw1, gf, xf, w, r1, NULL, N, C);
    hp_kb_rmsnorm_bwd(p, oh, dw2, gh, xh, w, r1, scratch, N, C);
    check_bf("rmsnorm bwd dinp", oh, of, N * C);
    check_f32("rmsnorm bwd dw", dw2, dw1, C);
    keep_h(o, oh, N * C), keep_f(o, dw2, C);
    free(xh), free(gh), free(oh), free(xf), free(gf), free(of), free(w), free(b);
    free(m1), free(r1), free(m2), free(r2), free(dw1), free(db1), free(dw2), free(db2);
}

static void t_elementwise(hp_pool *p, outputs *o) {
    long n = 50001, N = 29, H = 384;
    uint16_t *xh = hnew(n), *gh = hnew(n), *oh = hnew(n);
    float *xf = kr_fnew(n), *gf = kr_fnew(n), *of = kr_fnew(n);
    rand_bf16(xh, xf, n, 3.0);
    rand_bf16(gh, gf, n, 1.0);
    hp_k_gelu_fwd(p, of, xf, n);
    hp_kb_gelu_fwd(p, oh, xh, n);
    check_bf("gelu fwd", oh, of, n);
    keep_h(o, oh, n);
    hp_k_gelu_bwd(p, of, gf, xf, n);
    hp_kb_gelu_bwd(p, oh, gh, xh, n);
    check_bf("gelu bwd", oh, of, n);
    keep_h(o, oh, n);
    hp_k_add(p, of, xf, gf, n);
    hp_kb_add(p, oh, xh, gh, n);
    check_bf("add", oh, of, n);
    keep_h(o, oh, n);
    /* SwiGLU on [N, 2H] */
    HP_ASSERT(N * 2 * H <= n && hp_kb_swiglu_scratch(H, hp_pool_size(p)) <= SCRATCH_FLOATS);
    hp_k_swiglu_fwd(p, of, xf, N, H);
    hp_kb_swiglu_fwd(p, oh, xh, scratch, N, H);
    check_bf("swiglu fwd", oh, of, N * H);
    keep_h(o, oh, N * H);
    hp_k_swiglu_bwd(p, of, gf, xf, N, H);
    hp_kb_swiglu_bwd(p, oh, gh, xh, scratch, N, H);
    check_bf("swiglu bwd", oh, of, N * 2 * H);
    keep_h(o, oh, N * 2 * H);
    free(xh), free(gh), free(oh), free(xf), free(gf), free(of);
}

static void t_embedding(hp_pool *p, outputs *o) {
    long N = 150, C = 136, rows = 40, B = 3, T = 50;
    int32_t *ids = malloc((size_t)N * sizeof(int32_t));
    for (long i = 0; i < N; i++) ids[i] = (int32_t)(hp_test_uniform(&rng) * (rows - 5)); /* some rows never hit */
    uint16_t *th = hnew(rows * C), *gh = hnew(N * C), *oh = hnew(N * C), *ph = hnew((T + 3) * C);
    float *tf = kr_fnew(rows * C), *gf = kr_fnew(N * C), *of = kr_fnew(N * C), *pf = kr_fnew((T + 3) * C);
    float *d1 = kr_fnew((T + 3) * C), *d2 = kr_fnew((T + 3) * C); /* >= rows * C */
    rand_bf16(th, tf, rows * C, 1.0), rand_bf16(gh, gf, N * C, 1.0), rand_bf16(ph, pf, (T + 3) * C, 1.0);
    hp_k_embedding_fwd(p, of, ids, tf, N, C);
    hp_kb_embedding_fwd(p, oh, ids, th, N, C);
    check_bf("embedding fwd", oh, of, N * C);
    hp_k_embedding_bwd(p, d1, gf, ids, N, C, rows);
    hp_kb_embedding_bwd(p, d2, gh, ids, N, C, rows);
    check_f32("embedding bwd", d2, d1, rows * C);
    keep_f(o, d2, rows * C);
    hp_k_embedding_bwd_acc(p, d1, gf, ids, N, C);
    hp_kb_embedding_bwd_acc(p, d2, gh, ids, N, C);
    check_f32("embedding bwd acc", d2, d1, rows * C);
    /* positions: B x T = N rows */
    hp_k_add_pos_fwd(p, of, gf, pf, B, T, C);
    hp_kb_add_pos_fwd(p, oh, gh, ph, B, T, C);
    check_bf("add_pos fwd", oh, of, N * C);
    keep_h(o, oh, N * C);
    hp_k_add_pos_bwd(p, d1, gf, B, T, C, T + 3);
    hp_kb_add_pos_bwd(p, d2, gh, B, T, C, T + 3);
    check_f32("add_pos bwd", d2, d1, (T + 3) * C);
    /* the bias gradient against hp_k_matmul_bwd's */
    hp_k_matmul_bwd(p, NULL, NULL, d1, gf, NULL, NULL, N, 0, C);
    hp_kb_colsum(p, d2, gh, N, C);
    check_f32("colsum (dbias)", d2, d1, C);
    free(ids), free(th), free(gh), free(oh), free(ph), free(tf), free(gf), free(of), free(pf), free(d1), free(d2);
}

static void t_attention(hp_pool *p, outputs *o) {
    long B = 2, T = 70, C = 96, NH = 3;
    int nt = hp_pool_size(p);
    HP_ASSERT(hp_kb_attention_scratch(B, T, C, NH, nt) <= SCRATCH_FLOATS);
    uint16_t *qh = hnew(B * T * 3 * C), *gh = hnew(B * T * C), *oh = hnew(B * T * 3 * C);
    float *qf = kr_fnew(B * T * 3 * C), *gf = kr_fnew(B * T * C), *of = kr_fnew(B * T * 3 * C);
    float *a1 = kr_fnew(B * NH * T * T), *a2 = kr_fnew(B * NH * T * T);
    float *s32 = kr_fnew((long)hp_k_attention_scratch(B, T, C, NH, nt));
    rand_bf16(qh, qf, B * T * 3 * C, 1.0), rand_bf16(gh, gf, B * T * C, 1.0);
    hp_k_attention_fwd(p, of, a1, qf, s32, B, T, C, NH);
    hp_kb_attention_fwd(p, oh, a2, qh, scratch, B, T, C, NH);
    check_bf("attention fwd out", oh, of, B * T * C);
    check_f32("attention fwd att", a2, a1, B * NH * T * T);
    keep_h(o, oh, B * T * C), keep_f(o, a2, B * NH * T * T);
    hp_k_attention_bwd(p, of, gf, qf, a1, s32, B, T, C, NH);
    hp_kb_attention_bwd(p, oh, gh, qh, a1, scratch, B, T, C, NH);
    check_bf("attention bwd dqkv", oh, of, B * T * 3 * C);
    keep_h(o, oh, B * T * 3 * C);
    free(qh), free(gh), free(oh), free(qf), free(gf), free(of), free(a1), free(a2), free(s32);
}

static void t_xent(hp_pool *p, outputs *o) {
    long N = 23, V = 1000, Vp = 1024;
    HP_ASSERT(hp_kb_xent_scratch(Vp, hp_pool_size(p)) <= SCRATCH_FLOATS);
    int32_t *tg = malloc((size_t)N * sizeof(int32_t));
    for (long i = 0; i < N; i++) tg[i] = (int32_t)(hp_test_uniform(&rng) * V);
    uint16_t *xh = hnew(N * Vp), *dh = hnew(N * Vp);
    float *xf = kr_fnew(N * Vp), *p1 = kr_fnew(N * Vp), *p2 = kr_fnew(N * Vp), *l1 = kr_fnew(N), *l2 = kr_fnew(N);
    float *d1 = kr_fnew(N * Vp), m1, m2;
    rand_bf16(xh, xf, N * Vp, 3.0);
    hp_k_xent_fwd(p, p1, l1, &m1, xf, tg, N, V, Vp);
    hp_kb_xent_fwd(p, p2, l2, &m2, xh, tg, scratch, N, V, Vp);
    check_f32("xent fwd probs", p2, p1, N * Vp);
    check_f32("xent fwd losses", l2, l1, N);
    check_f32("xent fwd mean", &m2, &m1, 1);
    keep_f(o, p2, N * Vp), keep_f(o, l2, N);
    hp_k_xent_bwd(p, d1, p1, tg, 1.5f, N, V, Vp);
    hp_kb_xent_bwd(p, dh, p1, tg, 1.5f, scratch, N, V, Vp);
    check_bf("xent bwd dlogits", dh, d1, N * Vp);
    keep_h(o, dh, N * Vp);
    free(tg), free(xh), free(dh), free(xf), free(p1), free(p2), free(l1), free(l2), free(d1);
}

static void run_all(hp_pool *p, outputs *o) {
    rng.s = 20261201; /* the same inputs for every pass */
    memset(o, 0, sizeof *o);
    t_norms(p, o);
    t_elementwise(p, o);
    t_embedding(p, o);
    t_attention(p, o);
    t_xent(p, o);
}

static void free_outputs(outputs *o) {
    for (int i = 0; i < o->kh; i++) free(o->h[i]);
    for (int i = 0; i < o->kf; i++) free(o->f[i]);
}

/* Both narrowing paths on inputs covering every exponent: each of the 65536
 * upper halves with low halves 0, 1, 0x7fff, 0x8000 (a tie), 0x8001, 0xffff
 * and two random ones. */
static void t_conversions(hp_pool *p) {
    long n = 65536L * 8;
    float *x = kr_fnew(n), *y = kr_fnew(n);
    uint16_t *h1 = hnew(n), *h2 = hnew(n), *h3 = hnew(n);
    uint32_t lows[6] = {0, 1, 0x7fff, 0x8000, 0x8001, 0xffff};
    for (long hi = 0; hi < 65536; hi++)
        for (int k = 0; k < 8; k++) {
            uint32_t lo = k < 6 ? lows[k] : (uint32_t)(hp_test_uniform(&rng) * 65536.0);
            uint32_t u = ((uint32_t)hi << 16) | lo;
            memcpy(&x[hi * 8 + k], &u, sizeof u);
        }
    hp_kb_narrow_portable(h1, x, n);
    hp_kb_narrow(h2, x, n);
    hp_kb_f32_to_bf16(p, h3, x, n);
    long bad1 = 0, bad2 = 0, bad3 = 0;
    for (long i = 0; i < n; i++) {
        uint16_t want = hp_f32_to_bf16(x[i]);
        bad1 += h1[i] != want, bad2 += h2[i] != want, bad3 += h3[i] != want;
    }
    CHECKF(bad1 == 0 && bad2 == 0 && bad3 == 0, "mismatches: portable %ld, %s %ld, pool %ld", bad1,
           hp_isa_name(hp_kernels_bf16_cvt_isa()), bad2, bad3);
    /* odd lengths: the masked tail writes nothing past n */
    for (long len = 0; len < 40; len++) {
        memset(h2, 0xab, 64 * sizeof(uint16_t));
        hp_kb_narrow(h2, x + 1000, len);
        long over = 0;
        for (long i = len; i < 64; i++) over += h2[i] != 0xabab;
        CHECK(over == 0 && memcmp(h2, h1 + 1000, (size_t)len * sizeof(uint16_t)) == 0);
    }
    /* widening is exact */
    hp_kb_bf16_to_f32(p, y, h1, n);
    long badw = 0;
    for (long i = 0; i < n; i++) {
        float want = hp_bf16_to_f32(h1[i]);
        badw += memcmp(&y[i], &want, sizeof want) != 0;
    }
    CHECK(badw == 0);
    free(x), free(y), free(h1), free(h2), free(h3);
}

static void same_outputs(const outputs *a, const outputs *b) {
    CHECK(a->kh == b->kh && a->kf == b->kf);
    long diff = 0;
    for (int i = 0; i < a->kh; i++) diff += memcmp(a->h[i], b->h[i], (size_t)a->nh[i] * sizeof(uint16_t)) != 0;
    for (int i = 0; i < a->kf; i++) diff += memcmp(a->f[i], b->f[i], (size_t)a->nf[i] * sizeof(float)) != 0;
    CHECKF(diff == 0, "%ld outputs differ between the forced-portable and the default path", diff);
}

int main(void) {
    hp_kernels_init();
    scratch = kr_fnew(SCRATCH_FLOATS);
    const char *env = getenv("HP_KERNELS_PORTABLE");
    int env_on = env && env[0] && strcmp(env, "0") != 0;
    CHECK(hp_kernels_portable() == env_on);
    if (env_on) CHECK(hp_kernels_bf16_cvt_isa() == HP_ISA_PORTABLE);
    hp_cpu_features f;
    hp_cpu_features_get(&f);
    /* cpuid + xgetbv as libgcc's own detection reads them */
    CHECK(f.avx2 == !!__builtin_cpu_supports("avx2") && f.avx512f == !!__builtin_cpu_supports("avx512f"));
    CHECK(f.avx512_bf16 == !!__builtin_cpu_supports("avx512bf16"));
    CHECK(!f.avx512_bf16 || (f.avx512f && f.avx512bw && f.avx512vl));
    CHECK(!f.amx_bf16 || f.amx_tile);
    hp_isa best = hp_cpu_best_isa();
    CHECK(best == (f.amx_bf16 ? HP_ISA_AMX : f.avx512_bf16 ? HP_ISA_AVX512_BF16 : f.avx512bw && f.avx512vl ? HP_ISA_AVX512
                   : f.avx2 && f.fma ? HP_ISA_AVX2 : HP_ISA_PORTABLE));
    CHECK(!strcmp(hp_isa_name(HP_ISA_AVX512_BF16), "avx512-bf16") && !strcmp(hp_isa_name(HP_ISA_PORTABLE), "portable"));
    printf("cpu: avx2 %d avx512f %d avx512-bf16 %d amx-bf16 %d; bf16 conversions: %s\n", f.avx2, f.avx512f,
           f.avx512_bf16, f.amx_bf16, hp_isa_name(hp_kernels_bf16_cvt_isa()));
    hp_pool *p2;
    CHECK_OK(hp_pool_create(&p2, 2));
    hp_pool *pools[2] = {NULL, p2};
    for (int k = 0; k < 2; k++) {
        hp_kernels_set_portable(env_on);
        t_conversions(pools[k]);
        outputs def, port;
        run_all(pools[k], &def);
        hp_kernels_set_portable(1);
        CHECK(hp_kernels_bf16_cvt_isa() == HP_ISA_PORTABLE);
        t_conversions(pools[k]);
        run_all(pools[k], &port);
        same_outputs(&def, &port);
        free_outputs(&def), free_outputs(&port);
    }
    hp_pool_destroy(p2);
    free(scratch);
    return hp_test_finish("test_kernels_bf16");
}
