#include "optim/newton_schulz.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "optim/sumsq.h"

/* ---- presets ---- */

static const float quintic[3] = {3.4445f, -4.7750f, 2.0315f};
static const float perstep[5][3] = {
    {4.0848f, -6.8946f, 2.9270f},
    {3.9505f, -6.3029f, 2.6377f},
    {3.7418f, -5.5913f, 2.3037f},
    {2.8769f, -3.1427f, 1.2046f},
    {2.8366f, -3.0525f, 1.2012f},
};
static const float polar[5][3] = {
    {8.156554524902461f, -22.48329292557795f, 15.878769915207462f},
    {4.042929935166739f, -2.808917465908714f, 0.5000178451051316f},
    {3.8916678022926607f, -2.772484153217685f, 0.5060648178503393f},
    {3.285753657755655f, -2.3681294933425376f, 0.46449024233003106f},
    {2.3465413258596377f, -1.7097828382687081f, 0.42323551169305323f},
};

hp_status hp_ns_config_named(hp_ns_config *out, const char *name) {
    memset(out, 0, sizeof *out);
    out->steps = 5;
    out->norm_scale = 1.0f;
    out->eps = 1e-7f;
    if (!name) name = "(null)";
    if (!strcmp(name, "quintic") || !strcmp(name, "fixed")) {
        out->name = "quintic";
        for (int s = 0; s < 5; s++) memcpy(out->coeffs[s], quintic, sizeof quintic);
    } else if (!strcmp(name, "perstep") || !strcmp(name, "hyper")) {
        out->name = "perstep";
        memcpy(out->coeffs, perstep, sizeof perstep);
    } else if (!strcmp(name, "polar") || !strcmp(name, "polar_express")) {
        out->name = "polar";
        memcpy(out->coeffs, polar, sizeof polar);
        out->norm_scale = 1.02f;
        out->eps = 1e-6f;
    } else {
        return hp_errorf("ns: unknown Newton-Schulz coefficients '%s' (expected quintic, perstep "
                         "or polar)",
                         name);
    }
    return HP_OK;
}

hp_status hp_ns_config_check(const hp_ns_config *cfg) {
    if (cfg->steps < 1 || cfg->steps > HP_NS_MAX_STEPS)
        return hp_errorf("ns.steps: must be in [1, %d], got %d", HP_NS_MAX_STEPS, cfg->steps);
    if (!(cfg->norm_scale > 0.0f) || !isfinite(cfg->norm_scale))
        return hp_errorf("ns.norm_scale: must be a positive number, got %g",
                         (double)cfg->norm_scale);
    if (!(cfg->eps > 0.0f) || !isfinite(cfg->eps))
        return hp_errorf("ns.eps: must be a positive number, got %g", (double)cfg->eps);
    for (int s = 0; s < cfg->steps; s++)
        for (int j = 0; j < 3; j++)
            if (!isfinite(cfg->coeffs[s][j]))
                return hp_errorf("ns.coeffs: step %d coefficient %d is not finite", s, j);
    return HP_OK;
}

/* ---- scratch layout: X, Y [count,r,c]; A, B [count,r,r]; partials [count,nb] doubles ---- */

static long nblocks(long r) { return (r + HP_NS_ROW_BLOCK - 1) / HP_NS_ROW_BLOCK; }

size_t hp_newton_schulz_batched_scratch(long count, long rows, long cols) {
    long r = rows < cols ? rows : cols, c = rows < cols ? cols : rows;
    size_t per = 2 * (size_t)r * (size_t)c + 2 * (size_t)r * (size_t)r;
    size_t partial_floats = 2 * (size_t)nblocks(r); /* one double = two floats */
    return (size_t)count * (per + partial_floats);
}

size_t hp_newton_schulz_scratch(long rows, long cols) {
    return hp_newton_schulz_batched_scratch(1, rows, cols);
}

/* ---- the parallel phases ---- */

typedef enum { PH_LOAD, PH_SCALE, PH_GRAM, PH_POLY, PH_APPLY, PH_STORE } phase_t;

typedef struct {
    phase_t phase;
    float *out;
    const float *in;
    float *X, *Y, *A, *B;
    float *partials; /* count*nb doubles, stored through memcpy */
    long count, r, c, nb;
    int transposed;
    float a, b, cc;
    double norm_scale, eps;
} ns_ctx;

static void put_double(float *base, long i, double v) { memcpy(base + 2 * i, &v, sizeof v); }
static double get_double(const float *base, long i) {
    double v;
    memcpy(&v, base + 2 * i, sizeof v);
    return v;
}

static long block_rows(long *i0, long r, long blk) {
    *i0 = blk * HP_NS_ROW_BLOCK;
    return *i0 + HP_NS_ROW_BLOCK < r ? HP_NS_ROW_BLOCK : r - *i0;
}

void hp_ns_block_gram(float *Arows, const float *X, long r, long c, long blk) {
    long i0, mb = block_rows(&i0, r, blk);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)mb, (int)r, (int)c, 1.0f, X + i0 * c, (int)c, X, (int)c,
                0.0f, Arows, (int)r);
}

static void block_poly(float *Brows, const float *Arows, const float *A, long r, long mb, float b, float cc) {
    memcpy(Brows, Arows, (size_t)(mb * r) * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mb, (int)r, (int)r, cc, Arows, (int)r, A, (int)r, b,
                Brows, (int)r);
}

static void block_apply(float *Yrows, const float *Brows, const float *X, long r, long c, long i0, long mb, float a) {
    memcpy(Yrows, X + i0 * c, (size_t)(mb * c) * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mb, (int)c, (int)r, 1.0f, Brows, (int)r, X, (int)c, a,
                Yrows, (int)c);
}

void hp_ns_block_step(float *Yrows, float *Brows, const float *Arows, const float *A, const float *X, long r, long c,
                      long blk, const float coef[3]) {
    long i0, mb = block_rows(&i0, r, blk);
    block_poly(Brows, Arows, A, r, mb, coef[1], coef[2]);
    block_apply(Yrows, Brows, X, r, c, i0, mb, coef[0]);
}

static void run_block(ns_ctx *t, long k, long blk) {
    long r = t->r, c = t->c;
    long i0, mb = block_rows(&i0, r, blk), i1 = i0 + mb;
    float *X = t->X + k * r * c, *Y = t->Y + k * r * c;
    float *A = t->A + k * r * r, *B = t->B + k * r * r;
    switch (t->phase) {
    case PH_LOAD: {
        /* X rows [i0, i1) from the input (columns of it when transposed). */
        const float *in = t->in + k * r * c;
        if (!t->transposed) {
            memcpy(X + i0 * c, in + i0 * c, (size_t)(mb * c) * sizeof(float));
        } else {
            for (long j = 0; j < c; j++) /* in is [c, r] */
                for (long i = i0; i < i1; i++) X[i * c + j] = in[j * r + i];
        }
        put_double(t->partials, k * t->nb + blk, hp_sumsq_span(X + i0 * c, mb * c));
        break;
    }
    case PH_SCALE: {
        double ss = 0.0;
        for (long j = 0; j < t->nb; j++) ss += get_double(t->partials, k * t->nb + j);
        float s = (float)(1.0 / (t->norm_scale * sqrt(ss) + t->eps));
        float *x = X + i0 * c;
        for (long i = 0; i < mb * c; i++) x[i] *= s;
        break;
    }
    case PH_GRAM: /* A[i0:i1, :] = X[i0:i1, :] X^T */
        hp_ns_block_gram(A + i0 * r, X, r, c, blk);
        break;
    case PH_POLY: /* B[i0:i1, :] = b A[i0:i1, :] + cc A[i0:i1, :] A */
        block_poly(B + i0 * r, A + i0 * r, A, r, mb, t->b, t->cc);
        break;
    case PH_APPLY: /* Y[i0:i1, :] = a X[i0:i1, :] + B[i0:i1, :] X */
        block_apply(Y + i0 * c, B + i0 * r, X, r, c, i0, mb, t->a);
        break;
    case PH_STORE: {
        float *out = t->out + k * r * c;
        if (!t->transposed) {
            memcpy(out + i0 * c, X + i0 * c, (size_t)(mb * c) * sizeof(float));
        } else {
            for (long j = 0; j < c; j++) /* out is [c, r] */
                for (long i = i0; i < i1; i++) out[j * r + i] = X[i * c + j];
        }
        break;
    }
    }
}

static void ns_task(void *ctx, int tid, int nthreads) {
    ns_ctx *t = ctx;
    long b, e;
    hp_pool_split(&b, &e, t->count * t->nb, 1, tid, nthreads);
    for (long it = b; it < e; it++) run_block(t, it / t->nb, it % t->nb);
}

static void run_phase(hp_pool *pool, ns_ctx *t, phase_t ph) {
    t->phase = ph;
    hp_pool_run(pool, ns_task, t);
}

static void ctx_init(ns_ctx *t, float *out, const float *in, long count, long rows, long cols, const hp_ns_config *cfg) {
    memset(t, 0, sizeof *t);
    t->out = out;
    t->in = in;
    t->count = count;
    t->transposed = rows > cols;
    t->r = t->transposed ? cols : rows;
    t->c = t->transposed ? rows : cols;
    t->nb = nblocks(t->r);
    t->norm_scale = cfg ? cfg->norm_scale : 1.0;
    t->eps = cfg ? cfg->eps : 0.0;
}

void hp_newton_schulz_batched(hp_pool *pool, float *out, const float *in, float *scratch,
                              long count, long rows, long cols, const hp_ns_config *cfg) {
    HP_ASSERT(count >= 0 && rows > 0 && cols > 0 && rows < INT_MAX && cols < INT_MAX);
    HP_ASSERT(cfg->steps >= 1 && cfg->steps <= HP_NS_MAX_STEPS);
    if (count == 0) return;
    ns_ctx t;
    ctx_init(&t, out, in, count, rows, cols, cfg);
    size_t rc = (size_t)count * (size_t)t.r * (size_t)t.c;
    size_t rr = (size_t)count * (size_t)t.r * (size_t)t.r;
    t.X = scratch;
    t.Y = t.X + rc;
    t.A = t.Y + rc;
    t.B = t.A + rr;
    t.partials = t.B + rr;

    run_phase(pool, &t, PH_LOAD);
    run_phase(pool, &t, PH_SCALE);
    for (int s = 0; s < cfg->steps; s++) {
        t.a = cfg->coeffs[s][0];
        t.b = cfg->coeffs[s][1];
        t.cc = cfg->coeffs[s][2];
        run_phase(pool, &t, PH_GRAM);
        run_phase(pool, &t, PH_POLY);
        run_phase(pool, &t, PH_APPLY);
        float *tmp = t.X;
        t.X = t.Y;
        t.Y = tmp;
    }
    run_phase(pool, &t, PH_STORE);
}

long hp_ns_blocks(long rows, long cols) { return nblocks(rows < cols ? rows : cols); }

void hp_ns_prepare(hp_pool *pool, float *X, const float *in, float *partials, long rows, long cols,
                   const hp_ns_config *cfg) {
    HP_ASSERT(rows > 0 && cols > 0 && rows < INT_MAX && cols < INT_MAX);
    ns_ctx t;
    ctx_init(&t, NULL, in, 1, rows, cols, cfg);
    t.X = X;
    t.partials = partials;
    run_phase(pool, &t, PH_LOAD);
    run_phase(pool, &t, PH_SCALE);
}

void hp_ns_store(hp_pool *pool, float *out, float *X, long rows, long cols) {
    ns_ctx t;
    ctx_init(&t, out, NULL, 1, rows, cols, NULL);
    t.X = X;
    run_phase(pool, &t, PH_STORE);
}

void hp_newton_schulz(hp_pool *pool, float *out, const float *in, float *scratch, long rows,
                      long cols, const hp_ns_config *cfg) {
    hp_newton_schulz_batched(pool, out, in, scratch, 1, rows, cols, cfg);
}
