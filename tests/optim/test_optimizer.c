/* The optimizer object: its steps are exactly the AdamW / momentum /
 * Newton-Schulz / update building blocks applied per parameter (Muon batched
 * by shape, in several chunks), independent of the pool size; state can be
 * copied out and into a fresh optimizer and the run continues bit for bit;
 * gradient clipping; the description; the step counter; config errors. */
#include <cblas.h>
#include <stdlib.h>

#include "optim/adamw.h"
#include "optim/muon.h"
#include "optim/newton_schulz.h"
#include "optim/optimizer.h"
#include "testutil.h"

#define NP 12
typedef struct {
    hp_opt_param p[NP];
    float *values, *grads;
    long total;
} model;

static const struct {
    const char *name;
    int ndim;
    long d[3];
    int hidden;
} spec[NP] = {
    {"wte", 2, {96, 32}, 0},
    {"wpe", 2, {16, 32}, 0},
    {"h.0.ln1.weight", 1, {32}, 0},
    {"h.0.attn.qkv.weight", 2, {96, 32}, 1},
    {"h.0.attn.qkv.bias", 1, {96}, 0},
    {"h.0.attn.proj.weight", 2, {32, 32}, 1},
    {"h.0.mlp.fc.weight", 2, {128, 32}, 1},
    {"h.0.mlp.proj.weight", 2, {32, 128}, 1},
    {"h.1.attn.proj.weight", 2, {32, 32}, 1},
    {"h.1.mlp.fc.weight", 2, {128, 32}, 1},
    {"h.1.moe.experts", 3, {3, 32, 32}, 1},
    {"big.vec", 1, {40000}, 0},
};

static void model_init(model *m, unsigned long long seed) {
    long total = 0;
    for (int i = 0; i < NP; i++) {
        long n = 1;
        for (int d = 0; d < spec[i].ndim; d++) n *= spec[i].d[d];
        total += n;
    }
    m->total = total;
    m->values = malloc(sizeof(float) * total);
    m->grads = malloc(sizeof(float) * total);
    long off = 0;
    for (int i = 0; i < NP; i++) {
        hp_shape s = spec[i].ndim == 1   ? hp_shape1(spec[i].d[0])
                     : spec[i].ndim == 2 ? hp_shape2(spec[i].d[0], spec[i].d[1])
                                         : hp_shape3(spec[i].d[0], spec[i].d[1], spec[i].d[2]);
        m->p[i] = (hp_opt_param){spec[i].name, m->values + off, m->grads + off, s, spec[i].hidden};
        off += (long)hp_shape_numel(&s);
    }
    hp_test_rng r = {seed};
    for (long i = 0; i < total; i++) m->values[i] = (float)(0.1 * hp_test_normal(&r));
}

static void model_copy(model *dst, const model *src) {
    model_init(dst, 1);
    memcpy(dst->values, src->values, sizeof(float) * src->total);
}

static void model_free(model *m) {
    free(m->values);
    free(m->grads);
}

static void fill_grads(model *m, int step) {
    hp_test_rng r = {1000 + (unsigned long long)step};
    for (long i = 0; i < m->total; i++) m->grads[i] = (float)hp_test_normal(&r);
}

static void muon_config(hp_optim_config *c) {
    hp_optim_config_default(c);
    c->kind = HP_OPT_MUON;
    c->lr = 1e-3f;
    c->muon_lr = 0.05f;
    c->weight_decay = 0.1f;
    c->decay_vectors = 0;
    c->muon_weight_decay = 0.05f;
    c->muon_scale = HP_MUON_SCALE_MOONLIGHT;
    c->muon_momentum = HP_MUON_SUM;
    c->muon_batch_floats = 2048; /* 32x32 matrices: batches of 2 */
    hp_status st = hp_ns_config_named(&c->ns, "perstep");
    HP_ASSERT(!st);
}

static int same(const float *a, const float *b, long n) {
    return memcmp(a, b, sizeof(float) * (size_t)n) == 0;
}

/* The optimizer equals the building blocks applied one parameter (one matrix)
 * at a time, for pools of 1 and 3 threads. */
static void test_matches_building_blocks(hp_pool *pool3) {
    hp_optim_config cfg;
    muon_config(&cfg);
    model ref, a, b;
    model_init(&ref, 11);
    model_copy(&a, &ref);
    model_copy(&b, &ref);
    hp_optimizer *oa, *ob;
    CHECK_OK(hp_optimizer_create(&oa, &cfg, a.p, NP, NULL));
    CHECK_OK(hp_optimizer_create(&ob, &cfg, b.p, NP, pool3));
    for (int i = 0; i < NP; i++)
        CHECK(hp_optimizer_param_kind(oa, i) == (spec[i].hidden ? HP_OPT_MUON : HP_OPT_ADAMW));

    /* reference state */
    float *m = calloc((size_t)ref.total, sizeof(float)), *v = calloc((size_t)ref.total, sizeof(float));
    float *u = malloc(sizeof(float) * 128 * 32), *scratch = malloc(sizeof(float) * 100000);
    hp_adamw_hparams hp = {cfg.beta1, cfg.beta2, cfg.eps};
    double ratio = (double)cfg.muon_lr / (double)cfg.lr;
    for (int t = 1; t <= 3; t++) {
        float lr = cfg.lr * (float)t / 3.0f;
        fill_grads(&ref, t);
        memcpy(a.grads, ref.grads, sizeof(float) * ref.total);
        memcpy(b.grads, ref.grads, sizeof(float) * ref.total);
        hp_optimizer_step(oa, lr);
        hp_optimizer_step(ob, lr);
        float mlr = (float)((double)lr * ratio);
        for (int i = 0; i < NP; i++) {
            hp_opt_param *p = &ref.p[i];
            long off = p->param - ref.values, n = (long)hp_shape_numel(&p->shape);
            if (!spec[i].hidden) {
                float wd = p->shape.ndim >= 2 ? cfg.weight_decay : 0.0f;
                hp_adamw_update(NULL, p->param, m + off, v + off, p->grad, n, lr, wd, &hp, t);
                continue;
            }
            int nd = p->shape.ndim;
            long rows = p->shape.d[nd - 2], cols = p->shape.d[nd - 1], per = rows * cols;
            HP_ASSERT(hp_newton_schulz_scratch(rows, cols) <= 100000);
            for (long j = 0; j < n / per; j++) {
                hp_muon_momentum_update(NULL, u, m + off + j * per, p->grad + j * per, per,
                                        cfg.muon_beta, cfg.muon_momentum, cfg.muon_nesterov);
                hp_newton_schulz(NULL, u, u, scratch, rows, cols, &cfg.ns);
                hp_muon_apply(NULL, p->param + j * per, u, per, mlr, cfg.muon_weight_decay,
                              hp_muon_scale(cfg.muon_scale, rows, cols));
            }
        }
        CHECK(same(a.values, ref.values, ref.total));
        CHECK(same(b.values, ref.values, ref.total));
    }
    CHECK(hp_optimizer_get_step(oa) == 3);
    /* every parameter moved */
    model init;
    model_init(&init, 11);
    for (int i = 0; i < NP; i++) {
        long off = ref.p[i].param - ref.values;
        CHECK(!same(ref.values + off, init.values + off, (long)hp_shape_numel(&ref.p[i].shape)));
    }
    model_free(&init);
    hp_optimizer_destroy(oa);
    hp_optimizer_destroy(ob);
    model_free(&ref);
    model_free(&a);
    model_free(&b);
    free(m);
    free(v);
    free(u);
    free(scratch);
}

/* Copy state out, build a new optimizer on a copy of the parameters, copy
 * state in: the next steps are identical bit for bit. */
static void test_state_round_trip(hp_pool *pool, hp_opt_kind kind) {
    hp_optim_config cfg;
    muon_config(&cfg);
    cfg.kind = kind;
    model a, b;
    model_init(&a, 21);
    hp_optimizer *oa, *ob;
    CHECK_OK(hp_optimizer_create(&oa, &cfg, a.p, NP, pool));
    for (int t = 1; t <= 3; t++) {
        fill_grads(&a, t);
        hp_optimizer_step(oa, 1e-3f);
    }
    int ns = hp_optimizer_state_count(oa);
    int want = 0;
    for (int i = 0; i < NP; i++) want += (kind == HP_OPT_MUON && spec[i].hidden) ? 1 : 2;
    CHECK(ns == want);
    /* save: names, shapes, data */
    float **saved = malloc(sizeof(float *) * (size_t)ns);
    for (int k = 0; k < ns; k++) {
        const char *name;
        float *data;
        hp_shape shape;
        hp_optimizer_state_get(oa, k, &name, &data, &shape);
        long n = (long)hp_shape_numel(&shape);
        saved[k] = malloc(sizeof(float) * n);
        memcpy(saved[k], data, sizeof(float) * n);
    }
    long step = hp_optimizer_get_step(oa);
    model_copy(&b, &a);
    CHECK_OK(hp_optimizer_create(&ob, &cfg, b.p, NP, NULL));
    CHECK(hp_optimizer_state_count(ob) == ns);
    for (int k = 0; k < ns; k++) {
        const char *na, *nb;
        float *data;
        hp_shape sa, sb;
        hp_optimizer_state_get(oa, k, &na, NULL, &sa);
        hp_optimizer_state_get(ob, k, &nb, &data, &sb);
        CHECK(!strcmp(na, nb) && hp_shape_eq(&sa, &sb));
        memcpy(data, saved[k], sizeof(float) * hp_shape_numel(&sb));
        free(saved[k]);
    }
    free(saved);
    hp_optimizer_set_step(ob, step);
    for (int t = 4; t <= 5; t++) {
        fill_grads(&a, t);
        fill_grads(&b, t);
        hp_optimizer_step(oa, 2e-3f);
        hp_optimizer_step(ob, 2e-3f);
    }
    CHECK(same(a.values, b.values, a.total));
    for (int k = 0; k < ns; k++) {
        float *da, *db;
        hp_shape s;
        hp_optimizer_state_get(oa, k, NULL, &da, &s);
        hp_optimizer_state_get(ob, k, NULL, &db, NULL);
        CHECK(same(da, db, (long)hp_shape_numel(&s)));
    }
    /* without the step counter the AdamW bias correction differs */
    if (kind == HP_OPT_ADAMW) {
        hp_optimizer_set_step(ob, 0);
        fill_grads(&a, 6);
        fill_grads(&b, 6);
        hp_optimizer_step(oa, 2e-3f);
        hp_optimizer_step(ob, 2e-3f);
        CHECK(!same(a.values, b.values, a.total));
    }
    hp_optimizer_destroy(oa);
    hp_optimizer_destroy(ob);
    model_free(&a);
    model_free(&b);
}

static void test_state_names(void) {
    hp_optim_config cfg;
    muon_config(&cfg);
    model a;
    model_init(&a, 3);
    hp_optimizer *o;
    CHECK_OK(hp_optimizer_create(&o, &cfg, a.p, NP, NULL));
    const char *name;
    float *data;
    hp_shape s;
    hp_optimizer_state_get(o, 0, &name, &data, &s);
    CHECK(!strcmp(name, "adamw.m.wte") && s.ndim == 2 && s.d[0] == 96 && data[0] == 0.0f);
    hp_optimizer_state_get(o, 1, &name, NULL, NULL);
    CHECK(!strcmp(name, "adamw.v.wte"));
    /* wte m, v; wpe m, v; ln1 m, v; qkv.weight: muon */
    hp_optimizer_state_get(o, 6, &name, NULL, &s);
    CHECK(!strcmp(name, "muon.m.h.0.attn.qkv.weight") && s.d[0] == 96 && s.d[1] == 32);
    hp_optimizer_state_get(o, hp_optimizer_state_count(o) - 1, &name, NULL, &s);
    CHECK(!strcmp(name, "adamw.v.big.vec") && s.d[0] == 40000);

    char buf[4096];
    size_t len = hp_optimizer_describe(o, buf, sizeof buf);
    CHECK(len == strlen(buf));
    CHECK(strstr(buf, "optimizer muon: adamw 5 tensors") != NULL);
    CHECK(strstr(buf, "muon 7 tensors") != NULL);
    CHECK(strstr(buf, "ns perstep, scale moonlight") != NULL);
    CHECK(strstr(buf, "  muon   h.1.moe.experts") != NULL);
    CHECK(strstr(buf, "  adamw  h.0.attn.qkv.bias") != NULL);
    char small[16];
    CHECK(hp_optimizer_describe(o, small, sizeof small) == len);
    CHECK(strlen(small) == sizeof small - 1);
    printf("%s", buf);
    hp_optimizer_destroy(o);
    model_free(&a);
}

/* Clipping: the norm comes back, the gradient buffers are left alone, and the
 * scale is fused into the next step: the result is bit-identical to stepping
 * on gradients scaled beforehand (AdamW and Muon), and applies to that one
 * step only. */
static void test_clipping(hp_pool *pool3) {
    for (int kind = 0; kind < 2; kind++) {
        hp_optim_config cfg;
        if (kind == 0)
            hp_optim_config_default(&cfg);
        else
            muon_config(&cfg);
        model a, b;
        model_init(&a, 5);
        model_copy(&b, &a);
        fill_grads(&a, 1);
        double ss = 0;
        for (long i = 0; i < a.total; i++) ss += (double)a.grads[i] * a.grads[i];
        double norm = sqrt(ss);
        hp_optimizer *o1, *o3, *ob;
        CHECK_OK(hp_optimizer_create(&o1, &cfg, a.p, NP, NULL));
        CHECK_OK(hp_optimizer_create(&o3, &cfg, a.p, NP, pool3));
        CHECK_OK(hp_optimizer_create(&ob, &cfg, b.p, NP, pool3));
        float *g0 = malloc(sizeof(float) * a.total);
        memcpy(g0, a.grads, sizeof(float) * a.total);
        /* off, and a max above the norm: the norm comes back, nothing changes */
        float n1 = hp_optimizer_clip_grads(o1, 0.0f);
        float n3 = hp_optimizer_clip_grads(o3, (float)(2 * norm));
        CHECK_NEAR(n1, norm, 1e-4 * norm);
        CHECK(n1 == n3); /* the same bytes for any pool size */
        CHECK(same(a.grads, g0, a.total));
        /* clip to 1: the buffers stay; the step uses grad / (norm + 1e-6) */
        float n = hp_optimizer_clip_grads(o3, 1.0f);
        CHECK(n == n1);
        CHECK(same(a.grads, g0, a.total));
        float s = (float)(1.0 / ((double)n + 1e-6));
        for (long i = 0; i < b.total; i++) b.grads[i] = g0[i] * s;
        CHECK_NEAR(hp_optimizer_clip_grads(ob, 0.0f), 1.0, 1e-5);
        hp_optimizer_step(o3, 1e-2f);
        hp_optimizer_step(ob, 1e-2f);
        CHECK(same(a.values, b.values, a.total));
        /* the next step is unscaled again */
        fill_grads(&a, 2);
        memcpy(b.grads, a.grads, sizeof(float) * a.total);
        hp_optimizer_step(o3, 1e-2f);
        hp_optimizer_step(ob, 1e-2f);
        CHECK(same(a.values, b.values, a.total));
        /* an explicit scale (distributed trainers) is the same fused scaling */
        fill_grads(&a, 3);
        for (long i = 0; i < b.total; i++) b.grads[i] = a.grads[i] * 0.25f;
        hp_optimizer_set_grad_scale(o3, 0.25f);
        hp_optimizer_step(o3, 1e-2f);
        hp_optimizer_step(ob, 1e-2f);
        CHECK(same(a.values, b.values, a.total));
        hp_optimizer_destroy(o1);
        hp_optimizer_destroy(o3);
        hp_optimizer_destroy(ob);
        free(g0);
        model_free(&a);
        model_free(&b);
    }
}

static void test_lr_and_step_counter(void) {
    /* hp_optimizer_step(o, lr) == step2(o, lr, lr * muon_lr / cfg.lr) */
    hp_optim_config cfg;
    muon_config(&cfg);
    model a, b;
    model_init(&a, 8);
    model_copy(&b, &a);
    hp_optimizer *oa, *ob;
    CHECK_OK(hp_optimizer_create(&oa, &cfg, a.p, NP, NULL));
    CHECK_OK(hp_optimizer_create(&ob, &cfg, b.p, NP, NULL));
    fill_grads(&a, 1);
    fill_grads(&b, 1);
    hp_optimizer_step(oa, cfg.lr);
    hp_optimizer_step2(ob, cfg.lr, cfg.muon_lr);
    CHECK(same(a.values, b.values, a.total));
    /* set_step: the AdamW update uses t = step + 1 */
    hp_optimizer_set_step(oa, 41);
    fill_grads(&a, 2);
    float p0 = a.values[0], m0, v0, *mp, *vp;
    hp_optimizer_state_get(oa, 0, NULL, &mp, NULL);
    hp_optimizer_state_get(oa, 1, NULL, &vp, NULL);
    m0 = mp[0];
    v0 = vp[0];
    float g = a.grads[0];
    hp_optimizer_step(oa, 1e-3f);
    CHECK(hp_optimizer_get_step(oa) == 42);
    hp_adamw_hparams hp = {cfg.beta1, cfg.beta2, cfg.eps};
    hp_adamw_update(NULL, &p0, &m0, &v0, &g, 1, 1e-3f, cfg.weight_decay, &hp, 42);
    CHECK(p0 == a.values[0]);
    hp_optimizer_destroy(oa);
    hp_optimizer_destroy(ob);
    model_free(&a);
    model_free(&b);
}

static void test_errors(void) {
    hp_optim_config cfg;
    muon_config(&cfg);
    model a;
    model_init(&a, 9);
    hp_optimizer *o = (hp_optimizer *)&a; /* must be reset to NULL on error */
    cfg.muon_params = "h.0.ln1.*";
    CHECK_ERR(hp_optimizer_create(&o, &cfg, a.p, NP, NULL),
              "muon_params: parameter 'h.0.ln1.weight' has shape [32]");
    CHECK(o == NULL);
    cfg.muon_params = NULL;
    cfg.lr = 0.0f;
    CHECK_ERR(hp_optimizer_create(&o, &cfg, a.p, NP, NULL), "lr: must be > 0 when Muon is used");
    cfg.kind = HP_OPT_ADAMW; /* fine for AdamW alone */
    CHECK_OK(hp_optimizer_create(&o, &cfg, a.p, NP, NULL));
    hp_optimizer_destroy(o);
    muon_config(&cfg);
    cfg.beta2 = 1.0f;
    CHECK_ERR(hp_optimizer_create(&o, &cfg, a.p, NP, NULL), "beta2: must be in [0, 1)");
    muon_config(&cfg);
    cfg.muon_beta = -0.1f;
    CHECK_ERR(hp_optimizer_create(&o, &cfg, a.p, NP, NULL), "muon_beta");
    muon_config(&cfg);
    cfg.ns.steps = 99;
    CHECK_ERR(hp_optimizer_create(&o, &cfg, a.p, NP, NULL), "ns.steps");
    muon_config(&cfg);
    a.p[4].name = "wte";
    CHECK_ERR(hp_optimizer_create(&o, &cfg, a.p, NP, NULL), "parameter 'wte': name appears twice");
    a.p[4].name = "h.0.attn.qkv.bias";
    a.p[2].grad = NULL;
    CHECK_ERR(hp_optimizer_create(&o, &cfg, a.p, NP, NULL), "'h.0.ln1.weight': grad buffer is NULL");
    a.p[2].grad = a.p[2].param;
    a.p[3].shape.d[1] = 0;
    CHECK_ERR(hp_optimizer_create(&o, &cfg, a.p, NP, NULL), "dim 1 is 0");
    /* no parameters at all is fine */
    CHECK_OK(hp_optimizer_create(&o, &cfg, NULL, 0, NULL));
    hp_optimizer_step(o, 1e-3f);
    CHECK(hp_optimizer_clip_grads(o, 1.0f) == 0.0f);
    hp_optimizer_destroy(o);
    model_free(&a);
}

int main(void) {
    openblas_set_num_threads(1);
    hp_pool *pool3;
    CHECK_OK(hp_pool_create(&pool3, 3));
    test_matches_building_blocks(pool3);
    test_state_round_trip(pool3, HP_OPT_MUON);
    test_state_round_trip(NULL, HP_OPT_ADAMW);
    test_state_names();
    test_clipping(pool3);
    test_lr_and_step_counter();
    test_errors();
    hp_pool_destroy(pool3);
    return hp_test_finish("test_optimizer");
}
