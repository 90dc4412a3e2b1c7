/* Every forward kernel against the double-precision reference in kref.h, on
 * small random shapes with odd sizes, run on the caller alone and on a pool
 * of 2 threads. Tolerance: |kernel - ref| <= atol + rtol |ref| per element,
 * with (atol, rtol) stated at each check (fp32 arithmetic, so ~1e-6). */
#include "kernels/kernels.h"
#include "kref.h"

static hp_test_rng rng = {0x9e3779b97f4a7c15ULL};

static void test_embedding(hp_pool *pool) {
    long N = 5, C = 7, rows = 11, B = 2, T = 3;
    int32_t ids[5] = {3, 0, 10, 3, 7};
    float *tab = kr_fnew(rows * C), *out = kr_fnew(N * C);
    double *dt = kr_dnew(rows * C), *ref = kr_dnew(N * C);
    kr_randn(&rng, tab, rows * C, 1.0);
    kr_f2d(dt, tab, rows * C);
    hp_k_embedding_fwd(pool, out, ids, tab, N, C);
    ref_embedding(ref, ids, dt, N, C);
    KR_CHECK_CLOSE("embedding_fwd", out, ref, N * C, 1e-300, 0.0); /* exact */
    /* positional add: pos has more rows than T */
    float *inp = kr_fnew(B * T * C), *pos = kr_fnew(rows * C), *o2 = kr_fnew(B * T * C);
    double *di = kr_dnew(B * T * C), *dp = kr_dnew(rows * C), *r2 = kr_dnew(B * T * C);
    kr_randn(&rng, inp, B * T * C, 1.0);
    kr_randn(&rng, pos, rows * C, 1.0);
    kr_f2d(di, inp, B * T * C);
    kr_f2d(dp, pos, rows * C);
    hp_k_add_pos_fwd(pool, o2, inp, pos, B, T, C);
    ref_add_pos(r2, di, dp, B, T, C);
    KR_CHECK_CLOSE("add_pos_fwd", o2, r2, B * T * C, 0.0, 1e-7); /* one rounding */
    free(tab), free(out), free(dt), free(ref), free(inp), free(pos), free(o2), free(di), free(dp),
        free(r2);
}

static void test_matmul_one(hp_pool *pool, long N, long IC, long OC, int with_bias) {
    float *x = kr_fnew(N * IC), *w = kr_fnew(OC * IC), *b = kr_fnew(OC), *o = kr_fnew(N * OC);
    double *dx = kr_dnew(N * IC), *dw = kr_dnew(OC * IC), *db = kr_dnew(OC), *r = kr_dnew(N * OC);
    kr_randn(&rng, x, N * IC, 1.0);
    kr_randn(&rng, w, OC * IC, 0.3);
    kr_randn(&rng, b, OC, 1.0);
    kr_f2d(dx, x, N * IC), kr_f2d(dw, w, OC * IC), kr_f2d(db, b, OC);
    for (long i = 0; i < N * OC; i++) o[i] = NAN; /* every output must be written */
    hp_k_matmul_fwd(pool, o, x, w, with_bias ? b : NULL, N, IC, OC);
    ref_matmul(r, dx, dw, with_bias ? db : NULL, N, IC, OC);
    /* sums of IC products of size ~0.3: absolute error ~ IC * 1e-7 */
    KR_CHECK_CLOSE("matmul_fwd", o, r, N * OC, 1e-5, 1e-5);
    free(x), free(w), free(b), free(o), free(dx), free(dw), free(db), free(r);
}

static void test_norms(hp_pool *pool) {
    long N = 5, C = 7;
    float *x = kr_fnew(N * C), *w = kr_fnew(C), *b = kr_fnew(C), *o = kr_fnew(N * C);
    float *mean = kr_fnew(N), *rstd = kr_fnew(N);
    double *dx = kr_dnew(N * C), *dw = kr_dnew(C), *db = kr_dnew(C), *r = kr_dnew(N * C);
    double *rm = kr_dnew(N), *rr = kr_dnew(N);
    kr_randn(&rng, x, N * C, 2.0);
    for (long i = 0; i < N * C; i++) x[i] += 3.0f; /* non-zero mean */
    kr_randn(&rng, w, C, 1.0);
    kr_randn(&rng, b, C, 1.0);
    kr_f2d(dx, x, N * C), kr_f2d(dw, w, C), kr_f2d(db, b, C);
    hp_k_layernorm_fwd(pool, o, mean, rstd, x, w, b, N, C, 1e-5f);
    ref_layernorm(r, rm, rr, dx, dw, db, N, C, 1e-5);
    KR_CHECK_CLOSE("layernorm_fwd out", o, r, N * C, 1e-6, 1e-5);
    KR_CHECK_CLOSE("layernorm_fwd mean", mean, rm, N, 1e-6, 1e-6);
    KR_CHECK_CLOSE("layernorm_fwd rstd", rstd, rr, N, 0.0, 1e-5);
    hp_k_rmsnorm_fwd(pool, o, rstd, x, w, N, C, 1e-5f);
    ref_rmsnorm(r, rr, dx, dw, N, C, 1e-5);
    KR_CHECK_CLOSE("rmsnorm_fwd out", o, r, N * C, 1e-6, 1e-5);
    KR_CHECK_CLOSE("rmsnorm_fwd rstd", rstd, rr, N, 0.0, 1e-5);
    free(x), free(w), free(b), free(o), free(mean), free(rstd), free(dx), free(dw), free(db),
        free(r), free(rm), free(rr);
}

static void test_elementwise(hp_pool *pool) {
    long n = 1003; /* covers wide inputs: tails of tanh and exp */
    float *x = kr_fnew(n), *y = kr_fnew(n), *o = kr_fnew(n);
    double *dx = kr_dnew(n), *r = kr_dnew(n);
    kr_randn(&rng, x, n, 3.0);
    x[0] = 0.0f, x[1] = -20.0f, x[2] = 20.0f, x[3] = 1e-4f, x[4] = -1e-4f;
    kr_f2d(dx, x, n);
    hp_k_gelu_fwd(pool, o, x, n);
    ref_gelu(r, dx, n);
    KR_CHECK_CLOSE("gelu_fwd", o, r, n, 1e-7, 1e-6);
    kr_randn(&rng, y, n, 1.0);
    hp_k_add(pool, o, x, y, n);
    for (long i = 0; i < n; i++) r[i] = (double)x[i] + (double)y[i];
    KR_CHECK_CLOSE("add", o, r, n, 0.0, 1e-7);
    hp_k_add(pool, y, x, y, n); /* out aliases b */
    KR_CHECK_CLOSE("add aliased", y, r, n, 0.0, 1e-7);
    for (long i = 0; i < n; i++) o[i] = x[i], r[i] = (double)x[i] * 0.37;
    hp_k_scale(pool, o, 0.37f, n);
    KR_CHECK_CLOSE("scale", o, r, n, 0.0, 1e-7);
    { /* copy, long enough to be split over the pool, and short */
        long nc = 70001;
        float *cs = kr_fnew(nc), *cd = kr_fnew(nc);
        kr_randn(&rng, cs, nc, 1.0);
        hp_k_copy(pool, cd, cs, nc);
        CHECK(memcmp(cd, cs, (size_t)nc * sizeof(float)) == 0);
        cd[3] = 0.0f, cd[4] = 7.0f;
        hp_k_copy(pool, cd, cs, 3);
        CHECK(memcmp(cd, cs, 3 * sizeof(float)) == 0 && cd[3] == 0.0f && cd[4] == 7.0f);
        free(cs), free(cd);
    }
    /* swiglu N=5, H=7 */
    long N = 5, H = 7;
    hp_k_swiglu_fwd(pool, o, x, N, H);
    ref_swiglu(r, dx, N, H);
    KR_CHECK_CLOSE("swiglu_fwd", o, r, N * H, 1e-7, 1e-6);
    free(x), free(y), free(o), free(dx), free(r);
}

static void test_attention_one(hp_pool *pool, long B, long T, long C, long NH) {
    long nq = B * T * 3 * C, no = B * T * C, na = B * NH * T * T;
    int nt = hp_pool_size(pool);
    float *qkv = kr_fnew(nq), *o = kr_fnew(no), *att = kr_fnew(na);
    float *scr = kr_fnew((long)hp_k_attention_scratch(B, T, C, NH, nt));
    double *dq = kr_dnew(nq), *r = kr_dnew(no), *ra = kr_dnew(na);
    kr_randn(&rng, qkv, nq, 1.0);
    kr_f2d(dq, qkv, nq);
    for (long i = 0; i < na; i++) att[i] = NAN; /* every entry must be written */
    hp_k_attention_fwd(pool, o, att, qkv, scr, B, T, C, NH);
    ref_attention(r, ra, dq, B, T, C, NH);
    KR_CHECK_CLOSE("attention_fwd out", o, r, no, 1e-6, 1e-5);
    KR_CHECK_CLOSE("attention_fwd att", att, ra, na, 1e-7, 1e-5);
    long above = 0;
    for (long p = 0; p < B * NH; p++)
        for (long i = 0; i < T; i++)
            for (long j = i + 1; j < T; j++) above += att[(p * T + i) * T + j] != 0.0f;
    CHECK(above == 0); /* probabilities above the diagonal are exactly 0 */
    free(qkv), free(o), free(att), free(scr), free(dq), free(r), free(ra);
}

static void test_rope(hp_pool *pool) {
    long B = 2, T = 5, C = 12, NH = 3, n = B * T * 3 * C;
    float *x = kr_fnew(n), *o = kr_fnew(n);
    double *dx = kr_dnew(n), *r = kr_dnew(n);
    kr_randn(&rng, x, n, 1.0);
    kr_f2d(dx, x, n);
    hp_k_rope_fwd(pool, o, x, B, T, C, NH, 10000.0f);
    ref_rope(r, dx, B, T, C, NH, 10000.0);
    KR_CHECK_CLOSE("rope_fwd", o, r, n, 1e-6, 1e-6);
    hp_k_rope_fwd(pool, x, x, B, T, C, NH, 10000.0f); /* in place */
    KR_CHECK_CLOSE("rope_fwd in place", x, r, n, 1e-6, 1e-6);
    free(x), free(o), free(dx), free(r);
}

static void test_xent(hp_pool *pool) {
    long N = 5, V = 11, Vp = 16;
    int32_t tg[5] = {0, 10, 4, 4, 7};
    float *lg = kr_fnew(N * Vp), *pr = kr_fnew(N * Vp), *ls = kr_fnew(N), mean = 0;
    double *dl = kr_dnew(N * Vp), *rp = kr_dnew(N * Vp), *rl = kr_dnew(N);
    kr_randn(&rng, lg, N * Vp, 3.0);
    for (long n = 0; n < N; n++)
        for (long v = V; v < Vp; v++) lg[n * Vp + v] = 1e3f; /* padded: must be ignored */
    kr_f2d(dl, lg, N * Vp);
    for (long i = 0; i < N * Vp; i++) pr[i] = NAN; /* every entry must be written */
    hp_k_xent_fwd(pool, pr, ls, &mean, lg, tg, N, V, Vp);
    double rm = ref_xent(rp, rl, dl, tg, N, V, Vp);
    KR_CHECK_CLOSE("xent_fwd probs", pr, rp, N * Vp, 1e-8, 1e-6);
    KR_CHECK_CLOSE("xent_fwd losses", ls, rl, N, 1e-6, 1e-6);
    CHECK_NEAR(mean, rm, 1e-6 * (1 + fabs(rm)));
    for (long n = 0; n < N; n++)
        for (long v = V; v < Vp; v++) CHECK(pr[n * Vp + v] == 0.0f);
    free(lg), free(pr), free(ls), free(dl), free(rp), free(rl);
}

int main(void) {
    hp_kernels_init();
    hp_pool *p2;
    CHECK_OK(hp_pool_create(&p2, 2));
    hp_pool *pools[2] = {NULL, p2};
    for (int k = 0; k < 2; k++) {
        hp_pool *p = pools[k];
        test_embedding(p);
        test_matmul_one(p, 5, 7, 3, 1);
        test_matmul_one(p, 37, 19, 45, 1);
        test_matmul_one(p, 37, 19, 45, 0);
        test_norms(p);
        test_elementwise(p);
        test_attention_one(p, 2, 3, 4, 2);   /* T=3, NH=2, hs=2 */
        test_attention_one(p, 1, 5, 6, 2);   /* odd T, hs=3 */
        test_attention_one(p, 2, 131, 8, 2); /* three row blocks, the last partial */
        test_rope(p);
        test_xent(p);
    }
    hp_pool_destroy(p2);
    return hp_test_finish("test_kernels_fwd");
}
