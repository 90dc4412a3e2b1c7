/* Every backward kernel against central finite differences of the double
 * reference forward (kref.h): for a random projection r of the outputs,
 * L(x) = sum r . f(x); each input element is perturbed by +-h (h = 1e-4) and
 * (L(x+h) - L(x-h)) / 2h is compared with the kernel's gradient for dout = r.
 * The finite differences are accurate to ~1e-8; the kernels run in fp32, so
 * the tolerance is |kernel - fd| <= GA + GR |fd| with GA = 1e-5 and GR = 5e-5
 * unless a check states otherwise. Runs on the caller alone and on 3 threads. */
#include "kernels/kernels.h"
#include "kref.h"

#define FD_H 1e-4
#define GA 1e-5
#define GR 5e-5

static hp_test_rng rng = {0x243f6a8885a308d3ULL};

typedef double (*loss_fn)(void *ctx);

/* g[n] = central differences of f with respect to x[n] (x is restored). */
static void fd_grad(double *g, double *x, long n, loss_fn f, void *ctx) {
    for (long i = 0; i < n; i++) {
        double xi = x[i];
        x[i] = xi + FD_H;
        double fp = f(ctx);
        x[i] = xi - FD_H;
        double fm = f(ctx);
        x[i] = xi;
        g[i] = (fp - fm) / (2 * FD_H);
    }
}

static double dot(const double *a, const double *b, long n) {
    double s = 0;
    for (long i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Random floats in f and the same values in d. */
static void rand_both(float *f, double *d, long n, double sd) {
    kr_randn(&rng, f, n, sd);
    kr_f2d(d, f, n);
}

/* ---- embedding and positions ---- */
typedef struct {
    long N, C, rows, B, T;
    const int32_t *ids;
    double *table, *inp, *r, *out;
} emb_p;
static double emb_loss(void *c_) {
    emb_p *c = c_;
    ref_embedding(c->out, c->ids, c->table, c->N, c->C);
    return dot(c->out, c->r, c->N * c->C);
}
static double pos_loss(void *c_) {
    emb_p *c = c_;
    ref_add_pos(c->out, c->inp, c->table, c->B, c->T, c->C);
    return dot(c->out, c->r, c->B * c->T * c->C);
}
static void test_embedding(hp_pool *pool) {
    long N = 6, C = 7, rows = 11;
    int32_t ids[6] = {3, 0, 10, 3, 7, 3}; /* repeats sum; rows never hit get 0 */
    emb_p c = {.N = N,
               .C = C,
               .rows = rows,
               .ids = ids,
               .table = kr_dnew(rows * C),
               .r = kr_dnew(N * C),
               .out = kr_dnew(N * C)};
    float *tab = kr_fnew(rows * C), *r = kr_fnew(N * C), *dt = kr_fnew(rows * C);
    double *g = kr_dnew(rows * C);
    rand_both(tab, c.table, rows * C, 1.0);
    rand_both(r, c.r, N * C, 1.0);
    for (long i = 0; i < rows * C; i++) dt[i] = NAN; /* overwritten, not accumulated */
    hp_k_embedding_bwd(pool, dt, r, ids, N, C, rows);
    fd_grad(g, c.table, rows * C, emb_loss, &c);
    KR_CHECK_CLOSE("embedding_bwd dtable", dt, g, rows * C, GA, GR);
    /* _acc adds the same sums to what is there; rows never hit are untouched */
    float *acc = kr_fnew(rows * C);
    double *want = kr_dnew(rows * C);
    kr_randn(&rng, acc, rows * C, 1.0);
    for (long i = 0; i < rows * C; i++) want[i] = (double)acc[i] + g[i];
    hp_k_embedding_bwd_acc(pool, acc, r, ids, N, C);
    KR_CHECK_CLOSE("embedding_bwd_acc dtable", acc, want, rows * C, GA, GR);
    for (long i = C; i < 2 * C; i++) CHECK((double)acc[i] == want[i]); /* row 1: never hit */
    free(acc), free(want);
    free(c.table), free(c.r), free(c.out), free(tab), free(r), free(dt), free(g);

    /* add_pos: B=2, T=3, pos has 5 rows (rows >= T get 0) */
    long B = 2, T = 3, prow = 5;
    emb_p p = {.B = B,
               .T = T,
               .C = C,
               .inp = kr_dnew(B * T * C),
               .table = kr_dnew(prow * C),
               .r = kr_dnew(B * T * C),
               .out = kr_dnew(B * T * C)};
    float *pr = kr_fnew(B * T * C), *dp = kr_fnew(prow * C), *junk = kr_fnew(B * T * C + prow * C);
    double *gp = kr_dnew(prow * C);
    rand_both(junk, p.inp, B * T * C, 1.0);
    rand_both(junk, p.table, prow * C, 1.0);
    rand_both(pr, p.r, B * T * C, 1.0);
    for (long i = 0; i < prow * C; i++) dp[i] = NAN;
    hp_k_add_pos_bwd(pool, dp, pr, B, T, C, prow);
    fd_grad(gp, p.table, prow * C, pos_loss, &p);
    KR_CHECK_CLOSE("add_pos_bwd dpos", dp, gp, prow * C, GA, GR);
    for (long i = T * C; i < prow * C; i++) CHECK(dp[i] == 0.0f);
    free(p.inp), free(p.table), free(p.r), free(p.out), free(pr), free(dp), free(junk), free(gp);
}

/* ---- matmul ---- */
typedef struct {
    long N, IC, OC;
    double *x, *w, *b, *r, *out;
} mm_p;
static double mm_loss(void *c_) {
    mm_p *c = c_;
    ref_matmul(c->out, c->x, c->w, c->b, c->N, c->IC, c->OC);
    return dot(c->out, c->r, c->N * c->OC);
}
static void test_matmul(hp_pool *pool, long N, long IC, long OC) {
    mm_p c = {.N = N,
              .IC = IC,
              .OC = OC,
              .x = kr_dnew(N * IC),
              .w = kr_dnew(OC * IC),
              .b = kr_dnew(OC),
              .r = kr_dnew(N * OC),
              .out = kr_dnew(N * OC)};
    float *x = kr_fnew(N * IC), *w = kr_fnew(OC * IC), *r = kr_fnew(N * OC);
    float *dx = kr_fnew(N * IC), *dw = kr_fnew(OC * IC), *db = kr_fnew(OC), *junk = kr_fnew(OC);
    double *gx = kr_dnew(N * IC), *gw = kr_dnew(OC * IC), *gb = kr_dnew(OC);
    rand_both(x, c.x, N * IC, 1.0);
    rand_both(w, c.w, OC * IC, 0.5);
    rand_both(junk, c.b, OC, 1.0);
    rand_both(r, c.r, N * OC, 1.0);
    for (long i = 0; i < N * IC; i++) dx[i] = NAN;
    for (long i = 0; i < OC * IC; i++) dw[i] = NAN;
    for (long i = 0; i < OC; i++) db[i] = NAN;
    hp_k_matmul_bwd(pool, dx, dw, db, r, x, w, N, IC, OC);
    fd_grad(gx, c.x, N * IC, mm_loss, &c);
    fd_grad(gw, c.w, OC * IC, mm_loss, &c);
    fd_grad(gb, c.b, OC, mm_loss, &c);
    KR_CHECK_CLOSE("matmul_bwd dinp", dx, gx, N * IC, GA, GR);
    KR_CHECK_CLOSE("matmul_bwd dweight", dw, gw, OC * IC, GA, GR);
    KR_CHECK_CLOSE("matmul_bwd dbias", db, gb, OC, GA, GR);
    /* NULL outputs are skipped and the others are unchanged */
    float *dw2 = kr_fnew(OC * IC);
    hp_k_matmul_bwd(pool, NULL, dw2, NULL, r, x, w, N, IC, OC);
    CHECK(memcmp(dw, dw2, (size_t)(OC * IC) * sizeof(float)) == 0);
    free(c.x), free(c.w), free(c.b), free(c.r), free(c.out), free(x), free(w), free(r), free(dx),
        free(dw), free(db), free(junk), free(gx), free(gw), free(gb), free(dw2);
}

/* ---- norms ---- */
typedef struct {
    long N, C;
    double *x, *w, *b, *r, *out;
} nm_p;
static double ln_loss(void *c_) {
    nm_p *c = c_;
    ref_layernorm(c->out, NULL, NULL, c->x, c->w, c->b, c->N, c->C, 1e-5);
    return dot(c->out, c->r, c->N * c->C);
}
static double rms_loss(void *c_) {
    nm_p *c = c_;
    ref_rmsnorm(c->out, NULL, c->x, c->w, c->N, c->C, 1e-5);
    return dot(c->out, c->r, c->N * c->C);
}
static void test_norms(hp_pool *pool, long N, long C) {
    nm_p c = {.N = N,
              .C = C,
              .x = kr_dnew(N * C),
              .w = kr_dnew(C),
              .b = kr_dnew(C),
              .r = kr_dnew(N * C),
              .out = kr_dnew(N * C)};
    float *x = kr_fnew(N * C), *w = kr_fnew(C), *b = kr_fnew(C), *r = kr_fnew(N * C);
    float *o = kr_fnew(N * C), *mean = kr_fnew(N), *rstd = kr_fnew(N);
    float *dx = kr_fnew(N * C), *dw = kr_fnew(C), *db = kr_fnew(C);
    double *gx = kr_dnew(N * C), *gw = kr_dnew(C), *gb = kr_dnew(C);
    int nt = hp_pool_size(pool);
    float *scr = kr_fnew((long)hp_k_layernorm_bwd_scratch(N, C, nt) +
                         (long)hp_k_rmsnorm_bwd_scratch(N, C, nt));
    rand_both(x, c.x, N * C, 1.5);
    rand_both(w, c.w, C, 1.0);
    rand_both(b, c.b, C, 1.0);
    rand_both(r, c.r, N * C, 1.0);
    hp_k_layernorm_fwd(pool, o, mean, rstd, x, w, b, N, C, 1e-5f);
    hp_k_layernorm_bwd(pool, dx, dw, db, r, x, w, mean, rstd, scr, N, C);
    fd_grad(gx, c.x, N * C, ln_loss, &c);
    fd_grad(gw, c.w, C, ln_loss, &c);
    fd_grad(gb, c.b, C, ln_loss, &c);
    KR_CHECK_CLOSE("layernorm_bwd dinp", dx, gx, N * C, GA, GR);
    KR_CHECK_CLOSE("layernorm_bwd dw", dw, gw, C, GA, GR);
    KR_CHECK_CLOSE("layernorm_bwd db", db, gb, C, GA, GR);
    hp_k_rmsnorm_fwd(pool, o, rstd, x, w, N, C, 1e-5f);
    hp_k_rmsnorm_bwd(pool, dx, dw, r, x, w, rstd, scr, N, C);
    fd_grad(gx, c.x, N * C, rms_loss, &c);
    fd_grad(gw, c.w, C, rms_loss, &c);
    KR_CHECK_CLOSE("rmsnorm_bwd dinp", dx, gx, N * C, GA, GR);
    KR_CHECK_CLOSE("rmsnorm_bwd dw", dw, gw, C, GA, GR);
    free(c.x), free(c.w), free(c.b), free(c.r), free(c.out), free(x), free(w), free(b), free(r),
        free(o), free(mean), free(rstd), free(dx), free(dw), free(db), free(gx), free(gw), free(gb),
        free(scr);
}

/* ---- gelu, swiglu ---- */
typedef struct {
    long N, H;
    double *x, *r, *out;
} ew_p;
static double gelu_loss(void *c_) {
    ew_p *c = c_;
    ref_gelu(c->out, c->x, c->N);
    return dot(c->out, c->r, c->N);
}
static double swiglu_loss(void *c_) {
    ew_p *c = c_;
    ref_swiglu(c->out, c->x, c->N, c->H);
    return dot(c->out, c->r, c->N * c->H);
}
static void test_activations(hp_pool *pool) {
    long n = 301;
    ew_p c = {.N = n, .x = kr_dnew(n), .r = kr_dnew(n), .out = kr_dnew(n)};
    float *x = kr_fnew(n), *r = kr_fnew(n), *dx = kr_fnew(n);
    double *g = kr_dnew(n);
    rand_both(x, c.x, n, 3.0);
    x[0] = 0.0f, x[1] = -12.0f, x[2] = 12.0f, x[3] = -4.0f;
    kr_f2d(c.x, x, n);
    rand_both(r, c.r, n, 1.0);
    hp_k_gelu_bwd(pool, dx, r, x, n);
    fd_grad(g, c.x, n, gelu_loss, &c);
    KR_CHECK_CLOSE("gelu_bwd", dx, g, n, GA, GR);
    long N = 5, H = 7;
    ew_p s = {.N = N, .H = H, .x = c.x, .r = c.r, .out = c.out};
    hp_k_swiglu_bwd(pool, dx, r, x, N, H);
    fd_grad(g, c.x, N * 2 * H, swiglu_loss, &s);
    KR_CHECK_CLOSE("swiglu_bwd", dx, g, N * 2 * H, GA, GR);
    free(c.x), free(c.r), free(c.out), free(x), free(r), free(dx), free(g);
}

/* ---- attention, rope ---- */
typedef struct {
    long B, T, C, NH;
    double *qkv, *r, *out;
} at_p;
static double att_loss(void *c_) {
    at_p *c = c_;
    ref_attention(c->out, NULL, c->qkv, c->B, c->T, c->C, c->NH);
    return dot(c->out, c->r, c->B * c->T * c->C);
}
static double rope_loss(void *c_) {
    at_p *c = c_;
    ref_rope(c->out, c->qkv, c->B, c->T, c->C, c->NH, 500.0);
    return dot(c->out, c->r, c->B * c->T * 3 * c->C);
}
static void test_attention(hp_pool *pool, long B, long T, long C, long NH) {
    long nq = B * T * 3 * C, no = B * T * C;
    at_p c = {
        .B = B, .T = T, .C = C, .NH = NH, .qkv = kr_dnew(nq), .r = kr_dnew(no), .out = kr_dnew(no)};
    float *qkv = kr_fnew(nq), *r = kr_fnew(no), *o = kr_fnew(no), *att = kr_fnew(B * NH * T * T);
    float *dq = kr_fnew(nq);
    float *scr = kr_fnew((long)hp_k_attention_scratch(B, T, C, NH, hp_pool_size(pool)));
    double *g = kr_dnew(nq);
    rand_both(qkv, c.qkv, nq, 1.0);
    rand_both(r, c.r, no, 1.0);
    for (long i = 0; i < nq; i++) dq[i] = NAN;
    hp_k_attention_fwd(pool, o, att, qkv, scr, B, T, C, NH);
    hp_k_attention_bwd(pool, dq, r, qkv, att, scr, B, T, C, NH);
    fd_grad(g, c.qkv, nq, att_loss, &c);
    KR_CHECK_CLOSE("attention_bwd dqkv", dq, g, nq, GA, GR);
    free(c.qkv), free(c.r), free(c.out), free(qkv), free(r), free(o), free(att), free(dq),
        free(scr), free(g);
}
static void test_rope(hp_pool *pool) {
    long B = 2, T = 5, C = 12, NH = 3, n = B * T * 3 * C;
    at_p c = {
        .B = B, .T = T, .C = C, .NH = NH, .qkv = kr_dnew(n), .r = kr_dnew(n), .out = kr_dnew(n)};
    float *x = kr_fnew(n), *r = kr_fnew(n), *dx = kr_fnew(n);
    double *g = kr_dnew(n);
    rand_both(x, c.qkv, n, 1.0);
    rand_both(r, c.r, n, 1.0);
    hp_k_rope_bwd(pool, dx, r, B, T, C, NH, 500.0f);
    fd_grad(g, c.qkv, n, rope_loss, &c);
    KR_CHECK_CLOSE("rope_bwd", dx, g, n, GA, GR);
    hp_k_rope_bwd(pool, r, r, B, T, C, NH, 500.0f); /* in place */
    CHECK(memcmp(r, dx, (size_t)n * sizeof(float)) == 0);
    free(c.qkv), free(c.r), free(c.out), free(x), free(r), free(dx), free(g);
}

/* ---- cross-entropy: L = dloss * mean loss ---- */
typedef struct {
    long N, V, Vp;
    const int32_t *tg;
    double *logits, dloss;
} xe_p;
static double xent_loss(void *c_) {
    xe_p *c = c_;
    return c->dloss * ref_xent(NULL, NULL, c->logits, c->tg, c->N, c->V, c->Vp);
}
static void test_xent(hp_pool *pool) {
    long N = 5, V = 11, Vp = 16;
    int32_t tg[5] = {0, 10, 4, 4, 7};
    xe_p c = {.N = N, .V = V, .Vp = Vp, .tg = tg, .logits = kr_dnew(N * Vp), .dloss = 1.7};
    float *lg = kr_fnew(N * Vp), *pr = kr_fnew(N * Vp), *ls = kr_fnew(N), *dl = kr_fnew(N * Vp);
    float mean;
    double *g = kr_dnew(N * Vp);
    rand_both(lg, c.logits, N * Vp, 2.0);
    hp_k_xent_fwd(pool, pr, ls, &mean, lg, tg, N, V, Vp);
    for (long i = 0; i < N * Vp; i++) dl[i] = NAN; /* every entry must be written */
    hp_k_xent_bwd(pool, dl, pr, tg, 1.7f, N, V, Vp);
    fd_grad(g, c.logits, N * Vp, xent_loss, &c);
    KR_CHECK_CLOSE("xent_bwd dlogits", dl, g, N * Vp, GA, GR);
    for (long n = 0; n < N; n++)
        for (long v = V; v < Vp; v++) CHECK(dl[n * Vp + v] == 0.0f); /* padded: exactly 0 */
    hp_k_xent_bwd(pool, pr, pr, tg, 1.7f, N, V, Vp);                 /* dlogits aliases probs */
    CHECK(memcmp(pr, dl, (size_t)(N * Vp) * sizeof(float)) == 0);
    free(c.logits), free(lg), free(pr), free(ls), free(dl), free(g);
}

int main(void) {
    hp_kernels_init();
    hp_pool *p3;
    CHECK_OK(hp_pool_create(&p3, 3));
    hp_pool *pools[2] = {NULL, p3};
    for (int k = 0; k < 2; k++) {
        hp_pool *p = pools[k];
        test_embedding(p);
        test_matmul(p, 5, 7, 3);
        test_matmul(p, 37, 9, 20); /* several row blocks per thread split */
        test_norms(p, 5, 7);
        test_norms(p, 4, 37);
        test_activations(p);
        test_attention(p, 2, 5, 6, 2);  /* odd T, hs = 3 */
        test_attention(p, 1, 70, 4, 2); /* two row blocks, the second partial */
        test_rope(p);
        test_xent(p);
    }
    hp_pool_destroy(p3);
    return hp_test_finish("test_kernels_grad");
}
