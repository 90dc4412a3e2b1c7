#include "optim/optimizer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim/adamw.h"
#include "optim/clip.h"

/* Default cfg.muon_batch_floats. */
#define MUON_CHUNK_FLOATS (1L << 22)

typedef struct {
    char *name;
    float *param, *grad;
    hp_shape shape;
    long numel;
    hp_opt_kind kind;
    long count, rows, cols; /* Muon: count matrices of rows x cols */
    float scale;            /* Muon update scale */
    float *m, *v;           /* state (v: AdamW only) */
} param_rec;

typedef struct {
    char *name;
    float *data;
    hp_shape shape;
} state_rec;

/* One Muon matrix: matrix j of parameter p. */
typedef struct {
    int p;
    long j;
} muon_mat;

/* Matrices of one shape; mats[first, first + n) in the optimizer's list. */
typedef struct {
    long rows, cols, first, n, chunk;
} muon_group;

struct hp_optimizer {
    hp_optim_config cfg;
    hp_pool *pool;
    long step;
    double muon_ratio; /* muon_lr / lr */
    float grad_scale;  /* applied to the gradients in the next step (clipping) */

    int nparams;
    param_rec *params;
    float *state; /* every state tensor, one allocation */
    int nstates;
    state_rec *states;

    hp_adamw_tensor *adamw;
    int nadamw;
    long adamw_total;

    muon_mat *mats;
    long nmats;
    muon_group *groups;
    int ngroups;
    float *muon_u;     /* [chunk, rows, cols] of the largest chunk */
    float *ns_scratch; /* batched NS scratch of the largest chunk */

    float **grads; /* for clipping */
    long *sizes;
    double *clip_scratch;
};

void hp_optim_config_default(hp_optim_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = HP_OPT_ADAMW;
    cfg->lr = 3e-4f;
    cfg->beta1 = 0.9f;
    cfg->beta2 = 0.999f;
    cfg->eps = 1e-8f;
    cfg->weight_decay = 0.0f;
    cfg->decay_vectors = 1;
    cfg->muon_lr = 0.02f;
    cfg->muon_beta = 0.95f;
    cfg->muon_weight_decay = 0.0f;
    cfg->muon_momentum = HP_MUON_EMA;
    cfg->muon_nesterov = 1;
    cfg->muon_scale = HP_MUON_SCALE_KELLER;
    hp_status st = hp_ns_config_named(&cfg->ns, "quintic");
    HP_ASSERT(st == HP_OK);
}

/* ---- validation ---- */

static int finite_in(float x, float lo, float hi_excl) { return isfinite(x) && x >= lo && x < hi_excl; }

hp_status hp_optim_config_check(const hp_optim_config *c) {
    if (c->kind != HP_OPT_ADAMW && c->kind != HP_OPT_MUON)
        return hp_errorf("optimizer: unknown optimizer kind %d", (int)c->kind);
    if (!finite_in(c->lr, 0.0f, INFINITY))
        return hp_errorf("lr: must be a number >= 0, got %g", (double)c->lr);
    if (!finite_in(c->beta1, 0.0f, 1.0f))
        return hp_errorf("beta1: must be in [0, 1), got %g", (double)c->beta1);
    if (!finite_in(c->beta2, 0.0f, 1.0f))
        return hp_errorf("beta2: must be in [0, 1), got %g", (double)c->beta2);
    if (!(c->eps > 0.0f) || !isfinite(c->eps))
        return hp_errorf("eps: must be a positive number, got %g", (double)c->eps);
    if (!finite_in(c->weight_decay, 0.0f, INFINITY))
        return hp_errorf("weight_decay: must be a number >= 0, got %g", (double)c->weight_decay);
    if (c->kind == HP_OPT_MUON) {
        if (!finite_in(c->muon_lr, 0.0f, INFINITY))
            return hp_errorf("muon_lr: must be a number >= 0, got %g", (double)c->muon_lr);
        if (!finite_in(c->muon_beta, 0.0f, 1.0f))
            return hp_errorf("muon_beta: must be in [0, 1), got %g", (double)c->muon_beta);
        if (!finite_in(c->muon_weight_decay, 0.0f, INFINITY))
            return hp_errorf("muon_weight_decay: must be a number >= 0, got %g",
                             (double)c->muon_weight_decay);
        if (c->muon_momentum != HP_MUON_EMA && c->muon_momentum != HP_MUON_SUM)
            return hp_errorf("muon_momentum: unknown form %d", (int)c->muon_momentum);
        if (c->muon_batch_floats < 0)
            return hp_errorf("muon_batch_floats: must be >= 0, got %ld", c->muon_batch_floats);
        if (c->muon_scale != HP_MUON_SCALE_KELLER && c->muon_scale != HP_MUON_SCALE_MOONLIGHT)
            return hp_errorf("muon_scale: unknown scale %d", (int)c->muon_scale);
        HP_TRY(hp_ns_config_check(&c->ns));
    }
    return HP_OK;
}

static hp_status check_params(const hp_opt_param *params, int nparams) {
    if (nparams < 0) return hp_errorf("optimizer: parameter count must be >= 0, got %d", nparams);
    if (nparams > 0 && !params) return hp_errorf("optimizer: parameter list is NULL");
    for (int i = 0; i < nparams; i++) {
        const hp_opt_param *p = &params[i];
        if (!p->name || !p->name[0]) return hp_errorf("parameter %d: name is empty", i);
        if (!p->param || !p->grad)
            return hp_errorf("parameter '%s': %s buffer is NULL", p->name,
                             p->param ? "grad" : "param");
        if (p->shape.ndim < 1 || p->shape.ndim > HP_MAX_DIMS)
            return hp_errorf("parameter '%s': shape has %d dims (expected 1 to %d)", p->name,
                             p->shape.ndim, HP_MAX_DIMS);
        for (int d = 0; d < p->shape.ndim; d++)
            if (p->shape.d[d] < 1)
                return hp_errorf("parameter '%s': dim %d is %lld (must be >= 1)", p->name, d,
                                 (long long)p->shape.d[d]);
        if (hp_shape_numel(&p->shape) > (1L << 31) - 1)
            return hp_errorf("parameter '%s': more than 2^31-1 values", p->name);
        for (int j = 0; j < i; j++)
            if (!strcmp(params[j].name, p->name))
                return hp_errorf("parameter '%s': name appears twice (entries %d and %d)",
                                 p->name, j, i);
    }
    return HP_OK;
}

/* ---- building ---- */

static char *str_concat(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 1);
    if (!s) return NULL;
    memcpy(s, a, la);
    memcpy(s + la, b, lb + 1);
    return s;
}

static int cmp_shape(const void *x, const void *y) {
    const long *a = x, *b = y; /* (rows, cols, order) triples */
    for (int k = 0; k < 3; k++)
        if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
    return 0;
}

/* Groups the Muon matrices by shape (largest first, then first appearance) and
 * sizes the chunk buffers. */
static hp_status plan_muon(hp_optimizer *o) {
    long nm = 0;
    for (int i = 0; i < o->nparams; i++)
        if (o->params[i].kind == HP_OPT_MUON) nm += o->params[i].count;
    o->nmats = nm;
    if (nm == 0) return HP_OK;
    long *keys = malloc((size_t)nm * 5 * sizeof(long));
    o->mats = malloc((size_t)nm * sizeof *o->mats);
    o->groups = malloc((size_t)nm * sizeof *o->groups);
    if (!keys || !o->mats || !o->groups) {
        free(keys);
        return hp_errorf("optimizer: out of memory planning Muon");
    }
    long k = 0;
    for (int i = 0; i < o->nparams; i++) {
        const param_rec *p = &o->params[i];
        if (p->kind != HP_OPT_MUON) continue;
        for (long j = 0; j < p->count; j++, k++) {
            long *e = keys + 5 * k;
            e[0] = -p->rows * p->cols; /* larger matrices first */
            e[1] = p->rows;
            e[2] = k; /* keeps the parameter order inside a group */
            e[3] = i;
            e[4] = j;
        }
    }
    /* sort by (size, rows, order): cmp_shape looks at the first three longs */
    qsort(keys, (size_t)nm, 5 * sizeof(long), cmp_shape);
    size_t max_u = 0, max_ns = 0;
    o->ngroups = 0;
    for (long a = 0; a < nm; a++) {
        const param_rec *p = &o->params[keys[5 * a + 3]];
        o->mats[a].p = (int)keys[5 * a + 3];
        o->mats[a].j = keys[5 * a + 4];
        muon_group *g = o->ngroups ? &o->groups[o->ngroups - 1] : NULL;
        if (!g || g->rows != p->rows || g->cols != p->cols) {
            g = &o->groups[o->ngroups++];
            g->rows = p->rows;
            g->cols = p->cols;
            g->first = a;
            g->n = 0;
        }
        g->n++;
    }
    free(keys);
    for (int gi = 0; gi < o->ngroups; gi++) {
        muon_group *g = &o->groups[gi];
        long per = g->rows * g->cols;
        long cap = o->cfg.muon_batch_floats > 0 ? o->cfg.muon_batch_floats : MUON_CHUNK_FLOATS;
        long chunk = cap / per;
        if (chunk < 1) chunk = 1;
        if (chunk > g->n) chunk = g->n;
        g->chunk = chunk;
        size_t u = (size_t)chunk * (size_t)per;
        size_t ns = hp_newton_schulz_batched_scratch(chunk, g->rows, g->cols);
        if (u > max_u) max_u = u;
        if (ns > max_ns) max_ns = ns;
    }
    o->muon_u = malloc(max_u * sizeof(float));
    o->ns_scratch = malloc(max_ns * sizeof(float));
    if (!o->muon_u || !o->ns_scratch) return hp_errorf("optimizer: out of memory for Muon buffers");
    return HP_OK;
}

static hp_status build(hp_optimizer *o, const hp_opt_param *params, const hp_opt_kind *kinds) {
    const hp_optim_config *c = &o->cfg;
    size_t state_floats = 0;
    for (int i = 0; i < o->nparams; i++) {
        param_rec *p = &o->params[i];
        const hp_opt_param *in = &params[i];
        p->name = str_concat(in->name, "");
        if (!p->name) return hp_errorf("optimizer: out of memory");
        p->param = in->param;
        p->grad = in->grad;
        p->shape = in->shape;
        p->numel = (long)hp_shape_numel(&in->shape);
        p->kind = kinds[i];
        if (p->kind == HP_OPT_MUON) {
            int nd = p->shape.ndim;
            p->count = nd == 3 ? p->shape.d[0] : 1;
            p->rows = p->shape.d[nd - 2];
            p->cols = p->shape.d[nd - 1];
            p->scale = hp_muon_scale(c->muon_scale, p->rows, p->cols);
            o->nstates += 1;
            state_floats += (size_t)p->numel;
        } else {
            o->nstates += 2;
            o->nadamw++;
            state_floats += 2 * (size_t)p->numel;
        }
    }
    o->state = calloc(state_floats ? state_floats : 1, sizeof(float));
    o->states = calloc((size_t)o->nstates + 1, sizeof *o->states);
    o->adamw = calloc((size_t)o->nadamw + 1, sizeof *o->adamw);
    o->grads = calloc((size_t)o->nparams + 1, sizeof *o->grads);
    o->sizes = calloc((size_t)o->nparams + 1, sizeof *o->sizes);
    if (!o->state || !o->states || !o->adamw || !o->grads || !o->sizes)
        return hp_errorf("optimizer: out of memory for %zu floats of state", state_floats);
    float *next = o->state;
    int ks = 0, ka = 0;
    for (int i = 0; i < o->nparams; i++) {
        param_rec *p = &o->params[i];
        o->grads[i] = p->grad;
        o->sizes[i] = p->numel;
        p->m = next;
        next += p->numel;
        const char *prefix = p->kind == HP_OPT_MUON ? "muon.m." : "adamw.m.";
        o->states[ks] = (state_rec){str_concat(prefix, p->name), p->m, p->shape};
        if (!o->states[ks++].name) return hp_errorf("optimizer: out of memory");
        if (p->kind == HP_OPT_ADAMW) {
            p->v = next;
            next += p->numel;
            o->states[ks] = (state_rec){str_concat("adamw.v.", p->name), p->v, p->shape};
            if (!o->states[ks++].name) return hp_errorf("optimizer: out of memory");
            float wd = (c->decay_vectors || p->shape.ndim >= 2) ? c->weight_decay : 0.0f;
            o->adamw[ka++] = (hp_adamw_tensor){p->param, p->m, p->v, p->grad, p->numel, wd};
            o->adamw_total += p->numel;
        }
    }
    o->clip_scratch = malloc((hp_clip_scratch(o->sizes, o->nparams) + 1) * sizeof(double));
    if (!o->clip_scratch) return hp_errorf("optimizer: out of memory");
    return plan_muon(o);
}

hp_status hp_optimizer_create(hp_optimizer **out, const hp_optim_config *cfg,
                              const hp_opt_param *params, int nparams, hp_pool *pool) {
    *out = NULL;
    HP_TRY(hp_optim_config_check(cfg));
    HP_TRY(check_params(params, nparams));
    hp_opt_kind *kinds = malloc(((size_t)nparams + 1) * sizeof *kinds);
    if (!kinds) return hp_errorf("optimizer: out of memory");
    hp_status st = hp_optim_route(kinds, cfg->kind, cfg->muon_params, cfg->adamw_params, params,
                                  nparams);
    int nmuon = 0;
    for (int i = 0; !st && i < nparams; i++) nmuon += kinds[i] == HP_OPT_MUON;
    if (!st && nmuon > 0 && !(cfg->lr > 0.0f))
        st = hp_errorf("lr: must be > 0 when Muon is used (Muon's lr follows the schedule of lr, "
                       "scaled by muon_lr / lr), got %g",
                       (double)cfg->lr);
    hp_optimizer *o = NULL;
    if (!st) {
        o = calloc(1, sizeof *o);
        if (o) o->params = calloc((size_t)nparams + 1, sizeof *o->params);
        if (!o || !o->params) st = hp_errorf("optimizer: out of memory");
    }
    if (!st) {
        o->cfg = *cfg;
        o->cfg.muon_params = NULL; /* not kept: the caller owns the strings */
        o->cfg.adamw_params = NULL;
        o->pool = pool;
        o->grad_scale = 1.0f;
        o->nparams = nparams;
        o->muon_ratio = cfg->lr > 0.0f ? (double)cfg->muon_lr / (double)cfg->lr : 0.0;
        st = build(o, params, kinds);
    }
    free(kinds);
    if (st) {
        hp_optimizer_destroy(o);
        return st;
    }
    *out = o;
    return HP_OK;
}

void hp_optimizer_destroy(hp_optimizer *o) {
    if (!o) return;
    if (o->params)
        for (int i = 0; i < o->nparams; i++) free(o->params[i].name);
    if (o->states)
        for (int k = 0; k < o->nstates; k++) free(o->states[k].name);
    free(o->params);
    free(o->states);
    free(o->state);
    free(o->adamw);
    free(o->mats);
    free(o->groups);
    free(o->muon_u);
    free(o->ns_scratch);
    free(o->grads);
    free(o->sizes);
    free(o->clip_scratch);
    free(o);
}

/* ---- stepping ---- */

static void muon_group_step(hp_optimizer *o, const muon_group *g, float lr) {
    const hp_optim_config *c = &o->cfg;
    long per = g->rows * g->cols;
    for (long a = 0; a < g->n; a += g->chunk) {
        long n = g->n - a < g->chunk ? g->n - a : g->chunk;
        for (long q = 0; q < n; q++) {
            const muon_mat *mt = &o->mats[g->first + a + q];
            param_rec *p = &o->params[mt->p];
            hp_muon_momentum_update_scaled(o->pool, o->muon_u + q * per, p->m + mt->j * per,
                                           p->grad + mt->j * per, per, c->muon_beta,
                                           c->muon_momentum, c->muon_nesterov, o->grad_scale);
        }
        hp_newton_schulz_batched(o->pool, o->muon_u, o->muon_u, o->ns_scratch, n, g->rows, g->cols,
                                 &c->ns);
        for (long q = 0; q < n; q++) {
            const muon_mat *mt = &o->mats[g->first + a + q];
            param_rec *p = &o->params[mt->p];
            hp_muon_apply(o->pool, p->param + mt->j * per, o->muon_u + q * per, per, lr,
                          c->muon_weight_decay, p->scale);
        }
    }
}

void hp_optimizer_step2(hp_optimizer *o, float adamw_lr, float muon_lr) {
    o->step++;
    if (o->nadamw > 0) {
        hp_adamw_hparams hp = {o->cfg.beta1, o->cfg.beta2, o->cfg.eps};
        hp_adamw_update_many_scaled(o->pool, o->adamw, o->nadamw, o->adamw_total, adamw_lr, &hp,
                                    o->step, o->grad_scale);
    }
    for (int gi = 0; gi < o->ngroups; gi++) muon_group_step(o, &o->groups[gi], muon_lr);
    o->grad_scale = 1.0f;
}

void hp_optimizer_step(hp_optimizer *o, float lr) {
    hp_optimizer_step2(o, lr, (float)((double)lr * o->muon_ratio));
}

float hp_optimizer_clip_grads(hp_optimizer *o, float max_norm) {
    double norm = hp_grad_global_norm(o->pool, o->grads, o->clip_scratch, o->sizes, o->nparams);
    o->grad_scale = hp_clip_scale(norm, max_norm);
    return (float)norm;
}

void hp_optimizer_set_grad_scale(hp_optimizer *o, float s) { o->grad_scale = s; }

long hp_optimizer_get_step(const hp_optimizer *o) { return o->step; }
void hp_optimizer_set_step(hp_optimizer *o, long step) { o->step = step; }

int hp_optimizer_param_count(const hp_optimizer *o) { return o->nparams; }
hp_opt_kind hp_optimizer_param_kind(const hp_optimizer *o, int i) {
    HP_ASSERT(i >= 0 && i < o->nparams);
    return o->params[i].kind;
}

int hp_optimizer_state_count(const hp_optimizer *o) { return o->nstates; }
void hp_optimizer_state_get(const hp_optimizer *o, int k, const char **name, float **data,
                            hp_shape *shape) {
    HP_ASSERT(k >= 0 && k < o->nstates);
    if (name) *name = o->states[k].name;
    if (data) *data = o->states[k].data;
    if (shape) *shape = o->states[k].shape;
}

/* ---- description ---- */

typedef struct {
    char *buf;
    size_t n, len;
} text;

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = t->len < t->n ? t->n - t->len : 0;
    int k = vsnprintf(room ? t->buf + t->len : NULL, room, fmt, ap);
    va_end(ap);
    if (k > 0) t->len += (size_t)k;
}

size_t hp_optimizer_describe(const hp_optimizer *o, char *buf, size_t n) {
    text t = {buf, n, 0};
    if (n > 0) buf[0] = 0;
    const hp_optim_config *c = &o->cfg;
    long nm = 0, na = 0, vm = 0, va = 0;
    for (int i = 0; i < o->nparams; i++) {
        if (o->params[i].kind == HP_OPT_MUON) {
            nm++;
            vm += o->params[i].numel;
        } else {
            na++;
            va += o->params[i].numel;
        }
    }
    add(&t, "optimizer %s: adamw %ld tensors (%ld values, lr %g, betas %g/%g, eps %g, wd %g)",
        hp_opt_kind_name(c->kind), na, va, (double)c->lr, (double)c->beta1, (double)c->beta2,
        (double)c->eps, (double)c->weight_decay);
    if (c->kind == HP_OPT_MUON)
        add(&t,
            "; muon %ld tensors (%ld values, lr %g, beta %g %s%s, ns %s, scale %s, wd %g)",
            nm, vm, (double)c->muon_lr, (double)c->muon_beta,
            hp_muon_momentum_name(c->muon_momentum), c->muon_nesterov ? " nesterov" : "",
            c->ns.name ? c->ns.name : "custom", hp_muon_scale_name(c->muon_scale),
            (double)c->muon_weight_decay);
    add(&t, "\n");
    for (int i = 0; i < o->nparams; i++) {
        const param_rec *p = &o->params[i];
        char sh[64];
        hp_shape_str(sh, sizeof sh, &p->shape);
        if (p->kind == HP_OPT_MUON)
            add(&t, "  muon   %-40s %-20s scale %.4g\n", p->name, sh, (double)p->scale);
        else
            add(&t, "  adamw  %-40s %s\n", p->name, sh);
    }
    return t.len;
}
