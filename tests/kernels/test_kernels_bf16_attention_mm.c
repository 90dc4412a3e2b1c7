/* kernels/bf16_attention_mm: causal attention in bf16 with its products on
 * oneDNN's bf16 matmul, against a double-precision reference of the same
 * math on the same (bf16-valued) inputs.
 *
 * The kernel rounds the probabilities (forward) and dS (backward) to bf16
 * before the products that read them, and each output once; so an output
 * element that is the sum of a product may be off by half a bf16 ulp of
 * every term it sums plus half an ulp of itself:
 *   |got - ref| <= 2^-8 (|ref| + sum |a_j b_j|) (1 + 1%) + 1e-5 sum |a_j b_j|
 *                  + 1e-6 max |ref|
 * (the 1% and 1e-5 cover fp32 accumulation). att (fp32) within 2e-4
 * relative + 1e-6. Shapes whose T is not a multiple of the tiles (70) and
 * two head sizes (32, 64); pools of 1, 2 and 3 threads give the same bits;
 * runs create no primitive; where the CPU has AMX the products run on it;
 * with the portable path forced (or without oneDNN bf16) prepare leaves the
 * state NULL so the widened kernel runs. */
#include <math.h>
#include <string.h>

#include "core/tensor.h"
#include "kernels/bf16.h"
#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kref.h"

static hp_test_rng rng = {20261202};

typedef struct {
    long B, T, C, NH;
} shape;

typedef struct {
    uint16_t *y, *dqkv;
    float *att;
} outputs;

static double bf(uint16_t h) { return (double)hp_bf16_to_f32(h); }

/* Checks got[n] (bf16) against ref[n] with the magnitudes mag[n] (sum |a b|). */
static void check_sum(const char *what, const uint16_t *got, const double *ref, const double *mag, long n) {
    double mx = 0;
    for (long i = 0; i < n; i++) mx = fabs(ref[i]) > mx ? fabs(ref[i]) : mx;
    long bad = -1;
    double worst = 0;
    for (long i = 0; i < n; i++) {
        double tol = ldexp(fabs(ref[i]) + mag[i], -8) * 1.01 + 1e-5 * mag[i] + 1e-6 * mx;
        double e = fabs(bf(got[i]) - ref[i]) / tol;
        if (!(e <= worst)) worst = e, bad = i;
    }
    if (!(worst <= 1.0)) {
        fprintf(stderr, "%s: element %ld is %.9g, expected %.9g (err %.3g x tol)\n", what, bad, bf(got[bad]), ref[bad],
                worst);
        hp_test_failures++;
    }
}

/* Runs forward and backward on pool p and checks them; fills o with the outputs. */
static void run_shape(hp_pool *p, const shape *s, outputs *o) {
    long B = s->B, T = s->T, C = s->C, NH = s->NH, hs = C / NH, N = B * T;
    int nt = hp_pool_size(p);
    hp_gemm_ctx *ctx = NULL;
    CHECK_OK(hp_gemm_ctx_create(&ctx, p));
    hp_kb_att_mm *mm = NULL;
    CHECK_OK(hp_kb_att_mm_prepare(&mm, ctx, T, hs));
    hp_cpu_features f;
    hp_cpu_features_get(&f);
    if (!mm) { /* oneDNN 2.6 has bf16 matmul from AVX-512 (core) on */
        CHECKF(!(f.avx512f && f.avx512bw && f.avx512vl), "no matmul state on a CPU with AVX-512");
        hp_gemm_ctx_destroy(ctx);
        return;
    }
    if (f.amx_bf16) CHECKF(strstr(hp_kb_att_mm_impl(mm), "amx") != NULL, "impl %s on an AMX CPU", hp_kb_att_mm_impl(mm));
    long created = hp_gemm_ctx_creations(ctx);
    CHECK(created == 3L * nt);

    uint16_t *qkv = calloc((size_t)N * 3 * C, 2), *dy = calloc((size_t)N * C, 2);
    o->y = calloc((size_t)N * C, 2), o->dqkv = calloc((size_t)N * 3 * C, 2);
    o->att = calloc((size_t)(B * NH * T * T), sizeof(float));
    float *scratch = calloc(hp_kb_att_mm_scratch(T, hs, nt), sizeof(float));
    float *af = calloc((size_t)(B * NH * T * T), sizeof(float));
    double *x = kr_dnew(N * 3 * C), *g = kr_dnew(N * C), *y = kr_dnew(N * C), *att = kr_dnew(B * NH * T * T);
    double *ym = kr_dnew(N * C), *dx = kr_dnew(N * 3 * C), *dxm = kr_dnew(N * 3 * C);
    double *ds = kr_dnew(T * T);
    if (!qkv || !dy || !o->y || !o->dqkv || !o->att || !scratch || !af) abort();
    for (long i = 0; i < N * 3 * C; i++) qkv[i] = hp_f32_to_bf16((float)hp_test_normal(&rng)), x[i] = bf(qkv[i]);
    for (long i = 0; i < N * C; i++) dy[i] = hp_f32_to_bf16((float)hp_test_normal(&rng)), g[i] = bf(dy[i]);

    /* forward */
    CHECK_OK(hp_kb_attention_mm_fwd(mm, p, o->y, o->att, qkv, scratch, B, T, C, NH));
    ref_attention(y, att, x, B, T, C, NH);
    for (long b = 0; b < B; b++)
        for (long h = 0; h < NH; h++)
            for (long i = 0; i < T; i++)
                for (long e = 0; e < hs; e++) {
                    double m = 0;
                    for (long j = 0; j <= i; j++) m += att[((b * NH + h) * T + i) * T + j] * fabs(x[(b * T + j) * 3 * C + 2 * C + h * hs + e]);
                    ym[(b * T + i) * C + h * hs + e] = m;
                }
    check_sum("attention mm fwd y", o->y, y, ym, N * C);
    KR_CHECK_CLOSE("attention mm fwd att", o->att, att, B * NH * T * T, 1e-6, 2e-4);

    /* backward on the reference probabilities (as fp32), so only the backward is measured */
    for (long i = 0; i < B * NH * T * T; i++) af[i] = (float)att[i];
    CHECK_OK(hp_kb_attention_mm_bwd(mm, p, o->dqkv, dy, qkv, af, scratch, B, T, C, NH));
    double scale = 1.0 / sqrt((double)hs);
    memset(dx, 0, sizeof(double) * (size_t)(N * 3 * C));
    memset(dxm, 0, sizeof(double) * (size_t)(N * 3 * C));
    for (long b = 0; b < B; b++)
        for (long h = 0; h < NH; h++) {
            const float *P = af + (b * NH + h) * T * T;
#define Q(t, e) x[(b * T + (t)) * 3 * C + h * hs + (e)]
#define K(t, e) x[(b * T + (t)) * 3 * C + C + h * hs + (e)]
#define V(t, e) x[(b * T + (t)) * 3 * C + 2 * C + h * hs + (e)]
#define G(t, e) g[(b * T + (t)) * C + h * hs + (e)]
#define DX(t, part, e) dx[(b * T + (t)) * 3 * C + (part) * C + h * hs + (e)]
#define DXM(t, part, e) dxm[(b * T + (t)) * 3 * C + (part) * C + h * hs + (e)]
            for (long i = 0; i < T; i++) {
                double sum = 0;
                for (long j = 0; j <= i; j++) {
                    double dp = 0;
                    for (long e = 0; e < hs; e++) dp += G(i, e) * V(j, e);
                    ds[i * T + j] = dp;
                    sum += P[i * T + j] * dp;
                }
                for (long j = 0; j <= i; j++) ds[i * T + j] = P[i * T + j] * (ds[i * T + j] - sum) * scale;
            }
            for (long i = 0; i < T; i++)
                for (long j = 0; j <= i; j++)
                    for (long e = 0; e < hs; e++) {
                        double pij = P[i * T + j], d = ds[i * T + j];
                        DX(j, 2, e) += pij * G(i, e), DXM(j, 2, e) += pij * fabs(G(i, e));
                        DX(i, 0, e) += d * K(j, e), DXM(i, 0, e) += fabs(d * K(j, e));
                        DX(j, 1, e) += d * Q(i, e), DXM(j, 1, e) += fabs(d * Q(i, e));
                    }
#undef Q
#undef K
#undef V
#undef G
#undef DX
#undef DXM
        }
    check_sum("attention mm bwd dqkv", o->dqkv, dx, dxm, N * 3 * C);
    CHECK(hp_gemm_ctx_creations(ctx) == created); /* runs create nothing */

    hp_kb_att_mm_free(mm);
    hp_gemm_ctx_destroy(ctx);
    free(qkv), free(dy), free(scratch), free(af);
    free(x), free(g), free(y), free(att), free(ym), free(dx), free(dxm), free(ds);
}

static void free_outputs(outputs *o) {
    free(o->y), free(o->dqkv), free(o->att);
    memset(o, 0, sizeof *o);
}

int main(void) {
    shape shapes[] = {{2, 70, 96, 3}, {1, 64, 128, 2}};
    for (int k = 0; k < 2; k++) {
        const shape *s = &shapes[k];
        long N = s->B * s->T, C = s->C;
        outputs first = {0};
        for (int nt = 1; nt <= 3; nt++) {
            hp_pool *p;
            CHECK_OK(hp_pool_create(&p, nt));
            rng.s = 20261202 + (unsigned long long)k; /* the same inputs at every pool size */
            outputs o = {0};
            run_shape(p, s, &o);
            if (nt == 1)
                first = o;
            else {
                if (first.y && o.y) {
                    CHECKF(!memcmp(first.y, o.y, (size_t)N * C * 2), "fwd y differs at %d threads", nt);
                    CHECKF(!memcmp(first.dqkv, o.dqkv, (size_t)N * 3 * C * 2), "bwd dqkv differs at %d threads", nt);
                    CHECKF(!memcmp(first.att, o.att, sizeof(float) * (size_t)(s->B * s->NH * s->T * s->T)),
                           "fwd att differs at %d threads", nt);
                }
                free_outputs(&o);
            }
            hp_pool_destroy(p);
        }
        free_outputs(&first);
    }
    /* forced portable: no matmul state, the widened kernel runs */
    hp_pool *p;
    CHECK_OK(hp_pool_create(&p, 2));
    hp_gemm_ctx *ctx;
    CHECK_OK(hp_gemm_ctx_create(&ctx, p));
    hp_kernels_set_portable(1);
    hp_kb_att_mm *mm = (hp_kb_att_mm *)&mm;
    CHECK_OK(hp_kb_att_mm_prepare(&mm, ctx, 64, 32));
    CHECK(mm == NULL);
    hp_kernels_set_portable(0);
    CHECK(hp_gemm_ctx_creations(ctx) == 0);
    hp_gemm_ctx_destroy(ctx);
    hp_pool_destroy(p);
    return hp_test_finish("kernels/bf16_attention_mm");
}
