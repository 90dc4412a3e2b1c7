#include "optim/muon.h"

#include <math.h>
#include <string.h>

hp_status hp_muon_momentum_parse(hp_muon_momentum *out, const char *name) {
    if (name && (!strcmp(name, "ema") || !strcmp(name, "average"))) {
        *out = HP_MUON_EMA;
    } else if (name && !strcmp(name, "sum")) {
        *out = HP_MUON_SUM;
    } else {
        return hp_errorf("muon_momentum: unknown momentum form '%s' (expected ema or sum)",
                         name ? name : "(null)");
    }
    return HP_OK;
}

hp_status hp_muon_scale_parse(hp_muon_scale_mode *out, const char *name) {
    if (name && !strcmp(name, "keller")) {
        *out = HP_MUON_SCALE_KELLER;
    } else if (name && !strcmp(name, "moonlight")) {
        *out = HP_MUON_SCALE_MOONLIGHT;
    } else {
        return hp_errorf("muon_scale: unknown update scale '%s' (expected keller or moonlight)",
                         name ? name : "(null)");
    }
    return HP_OK;
}

const char *hp_muon_momentum_name(hp_muon_momentum m) { return m == HP_MUON_SUM ? "sum" : "ema"; }
const char *hp_muon_scale_name(hp_muon_scale_mode s) {
    return s == HP_MUON_SCALE_MOONLIGHT ? "moonlight" : "keller";
}

float hp_muon_scale(hp_muon_scale_mode mode, long rows, long cols) {
    if (mode == HP_MUON_SCALE_MOONLIGHT)
        return (float)(0.2 * sqrt((double)(rows > cols ? rows : cols)));
    double ratio = (double)rows / (double)cols;
    return (float)sqrt(ratio > 1.0 ? ratio : 1.0);
}

typedef struct {
    float *u, *m;
    const float *grad;
    long n;
    float beta, gscale;
    hp_muon_momentum form;
    int nesterov;
} momentum_ctx;

static void momentum_task(void *ctx, int tid, int nthreads) {
    momentum_ctx *t = ctx;
    long b, e;
    hp_pool_split(&b, &e, t->n, 16, tid, nthreads);
    const float beta = t->beta, gw = t->form == HP_MUON_EMA ? 1.0f - t->beta : 1.0f, gs = t->gscale;
    float *u = t->u, *m = t->m;
    const float *g = t->grad;
    if (t->nesterov) {
        for (long i = b; i < e; i++) {
            float gi = g[i] * gs;
            float mi = beta * m[i] + gw * gi;
            m[i] = mi;
            u[i] = gw * gi + beta * mi;
        }
    } else {
        for (long i = b; i < e; i++) {
            float mi = beta * m[i] + gw * (g[i] * gs);
            m[i] = mi;
            u[i] = mi;
        }
    }
}

void hp_muon_momentum_update_scaled(hp_pool *pool, float *u, float *m, const float *grad, long n,
                                    float beta, hp_muon_momentum form, int nesterov,
                                    float grad_scale) {
    momentum_ctx t = {u, m, grad, n, beta, grad_scale, form, nesterov};
    hp_pool_run(pool, momentum_task, &t);
}

void hp_muon_momentum_update(hp_pool *pool, float *u, float *m, const float *grad, long n,
                             float beta, hp_muon_momentum form, int nesterov) {
    hp_muon_momentum_update_scaled(pool, u, m, grad, n, beta, form, nesterov, 1.0f);
}

typedef struct {
    float *param;
    const float *o;
    long n;
    float decay, step;
} apply_ctx;

static void apply_task(void *ctx, int tid, int nthreads) {
    apply_ctx *t = ctx;
    long b, e;
    hp_pool_split(&b, &e, t->n, 16, tid, nthreads);
    float *p = t->param;
    const float *o = t->o;
    const float decay = t->decay, step = t->step;
    for (long i = b; i < e; i++) p[i] = p[i] * decay - step * o[i];
}

void hp_muon_apply(hp_pool *pool, float *param, const float *o, long n, float lr, float wd,
                   float scale) {
    apply_ctx t = {param, o, n, 1.0f - lr * wd, lr * scale};
    hp_pool_run(pool, apply_task, &t);
}
