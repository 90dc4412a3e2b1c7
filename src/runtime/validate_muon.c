/* runtime/validate_muon: Muon's updates against one rank's (see the header). */
#include "runtime/validate_muon.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim/clip.h"
#include "optim/muon.h"
#include "optim/newton_schulz.h"
#include "optim/route.h"
#include "runtime/dist_weights.h"

typedef struct {
    int param;  /* index in the reference store */
    int64_t n, count, rows, cols;
    float *m0;  /* [n] the momentum before the step, whole */
} vmat;

struct hp_vmuon {
    hp_dist *d;
    const hp_dist_ckpt *ck;
    const hp_validator *v;
    hp_optim_config oc;
    float max_norm;
    hp_pool *pool;
    vmat *mats;
    int n;
};

void hp_vmuon_free(hp_vmuon *m) {
    if (!m) return;
    for (int i = 0; i < m->n; i++) free(m->mats[i].m0);
    free(m->mats);
    hp_pool_destroy(m->pool);
    free(m);
}

/* out[ps->n]: each parameter's optimizer, as the optimizer phase routes them. */
static hp_status route(hp_opt_kind *out, const hp_param_store *ps, const hp_optim_config *oc) {
    hp_opt_param *pp = calloc((size_t)ps->n + 1, sizeof *pp);
    if (!pp) return hp_errorf("validation: out of memory");
    for (int i = 0; i < ps->n; i++)
        pp[i] = (hp_opt_param){.name = ps->name[i], .shape = ps->shape[i], .hidden_matrix = ps->hidden_matrix[i]};
    hp_status st = hp_optim_route(out, oc->kind, oc->muon_params, oc->adamw_params, pp, ps->n);
    free(pp);
    return st;
}

hp_status hp_vmuon_before(hp_vmuon **out, hp_dist *d, const hp_dist_ckpt *ck, const hp_validator *v,
                          const hp_optim_config *oc, float max_norm, int threads) {
    *out = NULL;
    if (oc->kind != HP_OPT_MUON) return HP_OK;
    const hp_param_store *ps = hp_validate_ref_store(v);
    hp_opt_kind *kind = calloc((size_t)ps->n + 1, sizeof *kind);
    hp_vmuon *m = calloc(1, sizeof *m);
    if (m) m->mats = calloc((size_t)ps->n + 1, sizeof *m->mats);
    hp_status st = kind && m && m->mats ? route(kind, ps, oc) : hp_errorf("validation: out of memory");
    if (!st) {
        m->d = d, m->ck = ck, m->v = v, m->oc = *oc, m->max_norm = max_norm;
        st = hp_pool_create(&m->pool, threads > 0 ? threads : 1);
    }
    for (int i = 0; !st && i < ps->n; i++) {
        if (kind[i] != HP_OPT_MUON) continue;
        const hp_shape *s = &ps->shape[i];
        vmat *x = &m->mats[m->n++];
        x->param = i;
        x->n = hp_shape_numel(s);
        x->rows = s->d[s->ndim - 2], x->cols = s->d[s->ndim - 1];
        x->count = x->n / (x->rows * x->cols);
        x->m0 = malloc(sizeof(float) * (size_t)x->n);
        if (!x->m0) {
            st = hp_errorf("validation: out of memory");
            break;
        }
        char nm[HP_NAME_LEN + 8];
        snprintf(nm, sizeof nm, "muon.m.%s", ps->name[i]);
        st = hp_dist_tensor_get(d, ck, x->m0, nm, x->n);
        if (st) st = hp_error_wrap(st, "validation: Muon's momentum of '%s'", ps->name[i]);
    }
    free(kind);
    if (st || !m->n) {
        hp_vmuon_free(m);
        return st;
    }
    *out = m;
    return HP_OK;
}

/* The reference's clipping scale: its whole gradients' global norm. */
static float ref_clip(const hp_vmuon *m) {
    if (!(m->max_norm > 0)) return 1.0f;
    const hp_param_store *ps = hp_validate_ref_store(m->v);
    double ss = 0;
    for (int i = 0; i < ps->n; i++) {
        int64_t n = 0;
        const float *g = hp_validate_ref_grad(m->v, ps->name[i], &n);
        for (int64_t e = 0; g && e < n; e++) ss += (double)g[e] * (double)g[e];
    }
    return hp_clip_scale(sqrt(ss), m->max_norm);
}

/* One rank's update of matrix x into w (from the reference's parameters). */
static hp_status reference_update(float *w, const hp_vmuon *m, const vmat *x, float clip, float lr) {
    const hp_param_store *ps = hp_validate_ref_store(m->v);
    int64_t n = 0;
    const float *g = hp_validate_ref_grad(m->v, ps->name[x->param], &n);
    if (!g || n != x->n) return hp_errorf("validation: no reference gradient of '%s'", ps->name[x->param]);
    size_t sn = hp_newton_schulz_batched_scratch((long)x->count, (long)x->rows, (long)x->cols);
    float *u = malloc(sizeof(float) * (size_t)n), *mom = malloc(sizeof(float) * (size_t)n);
    float *scr = malloc(sizeof(float) * (sn ? sn : 1));
    hp_status st = u && mom && scr ? HP_OK : hp_errorf("validation: out of memory for '%s'", ps->name[x->param]);
    if (!st) {
        memcpy(mom, x->m0, sizeof(float) * (size_t)n);
        hp_muon_momentum_update_scaled(m->pool, u, mom, g, (long)n, m->oc.muon_beta, m->oc.muon_momentum,
                                       m->oc.muon_nesterov, clip);
        hp_newton_schulz_batched(m->pool, u, u, scr, (long)x->count, (long)x->rows, (long)x->cols, &m->oc.ns);
        memcpy(w, ps->data + ps->offset[x->param], sizeof(float) * (size_t)n);
        hp_muon_apply(m->pool, w, u, (long)n, lr, m->oc.muon_weight_decay,
                      hp_muon_scale(m->oc.muon_scale, (long)x->rows, (long)x->cols));
    }
    free(u), free(mom), free(scr);
    return st;
}

hp_status hp_vmuon_check(hp_vmuon *m, hp_validate_report *rep, float muon_lr) {
    free(rep->updates);
    rep->updates = calloc((size_t)m->n, sizeof *rep->updates);
    rep->nupdates = 0;
    rep->worst_update = 0;
    if (!rep->updates) return hp_errorf("validation: out of memory");
    const hp_param_store *ps = hp_validate_ref_store(m->v);
    float clip = ref_clip(m);
    hp_status st = HP_OK;
    for (int i = 0; i < m->n && !st; i++) {
        const vmat *x = &m->mats[i];
        const char *name = ps->name[x->param];
        float *got = malloc(sizeof(float) * (size_t)x->n), *want = malloc(sizeof(float) * (size_t)x->n);
        st = got && want ? HP_OK : hp_errorf("validation: out of memory for '%s'", name);
        if (!st) st = hp_dist_weight_get(m->d, m->ck, got, name, x->n);
        if (!st) st = reference_update(want, m, x, clip, muon_lr);
        if (!st) {
            const float *w0 = ps->data + ps->offset[x->param];
            float keep = 1.0f - muon_lr * m->oc.muon_weight_decay;
            double diff = 0, size = 0;
            for (int64_t e = 0; e < x->n; e++) {
                double d = fabs((double)got[e] - (double)want[e]);
                diff = isnan(d) ? INFINITY : fmax(diff, d);
                size = fmax(size, fabs((double)want[e] - (double)w0[e] * (double)keep));
            }
            hp_validate_grad *u = &rep->updates[rep->nupdates++];
            snprintf(u->name, sizeof u->name, "%s", name);
            snprintf(u->layout, sizeof u->layout, "%lldx%lldx%lld", (long long)x->count, (long long)x->rows,
                     (long long)x->cols);
            u->rel_err = size > 0 ? diff / size : diff;
            if (u->rel_err > rep->worst_update || isnan(u->rel_err)) rep->worst_update = u->rel_err;
            if (!(u->rel_err <= HP_VMUON_TOL))
                st = hp_errorf("validation: the Muon update of '%s' differs from one rank's by %.3g of the update's "
                               "size (tolerance %g): a piece orthogonalised alone instead of the whole matrix?",
                               name, u->rel_err, HP_VMUON_TOL);
        }
        free(got), free(want);
    }
    return st;
}
