/* tests/models/test_param_init: a parameter's init stated where it is
 * declared (hp_param_init) and models/build's hp_model_init over it: zeros
 * are 0, ones 1, constants their value, a normal's sample std within 5% of
 * its std on 64k samples, a uniform inside its bounds, rows past `rows` 0;
 * two inits with one seed are the same bits, and a random parameter's values
 * do not change when the constants declared before it change kind; hp_param's
 * by-name rule equals the explicit inits it names; bad inits are one-line
 * errors naming the parameter; GPT-2's explicit inits (models/gpt2.c) give
 * bit for bit what the by-name GPT-2 rule they replaced gave. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/graph.h"
#include "core/rng.h"
#include "models/build.h"
#include "models/gpt2.h"
#include "testutil.h"

/* Every parameter of a graph, malloc'd, with the names hp_model_init checks. */
typedef struct {
    int n;
    float **p;                 /* [n] */
    char (*names)[HP_NAME_LEN]; /* [n] */
    size_t *numel;             /* [n] */
} bufs;

static void bufs_free(bufs *b) {
    for (int i = 0; i < b->n; i++) free(b->p[i]);
    free(b->p), free(b->names), free(b->numel);
    memset(b, 0, sizeof *b);
}

/* b gets g's parameters, filled by hp_model_init with seed. */
static hp_status init_all(bufs *b, const hp_graph *g, uint64_t seed) {
    memset(b, 0, sizeof *b);
    int ids[64];
    int n = hp_graph_params(g, ids, 64);
    if (n > 64) return hp_errorf("test: %d parameters", n);
    b->n = n;
    b->p = calloc((size_t)n, sizeof *b->p), b->names = calloc((size_t)n, sizeof *b->names);
    b->numel = calloc((size_t)n, sizeof *b->numel);
    for (int i = 0; i < n; i++) {
        b->numel[i] = (size_t)hp_val_numel(g, ids[i]);
        b->p[i] = malloc(sizeof(float) * (b->numel[i] ? b->numel[i] : 1));
        memcpy(b->names[i], g->vals[ids[i]].name, HP_NAME_LEN);
    }
    return hp_model_init(b->p, g, (const char(*)[HP_NAME_LEN])b->names, n, seed);
}

static int find(const bufs *b, const char *name) {
    for (int i = 0; i < b->n; i++)
        if (!strcmp(b->names[i], name)) return i;
    CHECKF(0, "no parameter '%s'", name);
    return 0;
}

enum { N = 256 }; /* the random tensors are [N, N]: 65536 samples */

/* One parameter of each kind, then a random one behind constants of `kinds`
 * (0: zeros then ones, 1: a constant then a by-name bias). */
static hp_graph *kinds_graph(int kinds) {
    hp_graph *g = NULL;
    CHECK_OK(hp_graph_create(&g));
    if (!g) return NULL;
    if (kinds == 0) {
        hp_param_init(g, "z", hp_dims2(64, 4), hp_init_zeros());
        hp_param_init(g, "o", hp_dims1(8), hp_init_ones());
    } else {
        hp_param_init(g, "c", hp_dims1(8), hp_init_constant(-0.375));
        hp_param(g, "x.bias", hp_dims2(3, 5));
    }
    hp_param_init(g, "n", hp_dims2(N, N), hp_init_normal(0.05));
    hp_param_init(g, "u", hp_dims2(N, N), hp_init_uniform(-0.3, 0.7));
    hp_init rows = hp_init_normal(1.0);
    rows.rows = 5;
    hp_param_init(g, "r", hp_dims3(8, 2, 3), rows);
    hp_init crows = hp_init_constant(2.5);
    crows.rows = 1;
    hp_param_init(g, "cr", hp_dims2(3, 2), crows);
    CHECK(hp_graph_status(g) == HP_OK);
    return g;
}

static void kinds(void) {
    hp_graph *g = kinds_graph(0), *g2 = kinds_graph(0), *h = kinds_graph(1);
    if (!g || !g2 || !h) return;
    bufs a, a2, b, c;
    CHECK_OK(init_all(&a, g, 7));
    CHECK_OK(init_all(&a2, g2, 7));
    CHECK_OK(init_all(&b, h, 7));
    CHECK_OK(init_all(&c, g, 8));
    const float *z = a.p[find(&a, "z")], *o = a.p[find(&a, "o")], *cst = b.p[find(&b, "c")];
    for (int i = 0; i < 64 * 4; i++) CHECK(z[i] == 0.0f && !signbit(z[i]));
    for (int i = 0; i < 8; i++) CHECK(o[i] == 1.0f && cst[i] == -0.375f);
    const float *xb = b.p[find(&b, "x.bias")];
    for (int i = 0; i < 15; i++) CHECK(xb[i] == 0.0f);
    /* normal: mean near 0, std within 5% of 0.05 */
    const float *nv = a.p[find(&a, "n")];
    double s = 0, sq = 0;
    for (int i = 0; i < N * N; i++) s += nv[i], sq += (double)nv[i] * nv[i];
    double mean = s / (N * N), sd = sqrt(sq / (N * N) - mean * mean);
    CHECKF(fabs(mean) < 0.05 * 0.05, "mean %g", mean);
    CHECKF(fabs(sd - 0.05) < 0.05 * 0.05, "std %g", sd);
    /* uniform: inside [low, high] as floats, spread over it, mean near the middle */
    const float *uv = a.p[find(&a, "u")];
    float lo = 1, hi = -1;
    s = 0;
    for (int i = 0; i < N * N; i++) {
        CHECK(uv[i] >= (float)-0.3 && uv[i] <= (float)0.7);
        lo = fminf(lo, uv[i]), hi = fmaxf(hi, uv[i]);
        s += uv[i];
    }
    CHECKF(lo < -0.29f && hi > 0.69f, "range [%g, %g]", (double)lo, (double)hi);
    CHECKF(fabs(s / (N * N) - 0.2) < 0.01, "mean %g", s / (N * N));
    /* rows: the first 5 rows of 6 drawn, the rest 0; a constant's first row only */
    const float *rv = a.p[find(&a, "r")], *cr = a.p[find(&a, "cr")];
    for (int i = 0; i < 8 * 6; i++) CHECK(i < 5 * 6 ? rv[i] != 0.0f : rv[i] == 0.0f);
    for (int i = 0; i < 6; i++) CHECK(cr[i] == (i < 2 ? 2.5f : 0.0f));
    /* the same seed gives the same bits; the constants before the random tensors change nothing of them;
     * another seed gives other values */
    const char *random[] = {"n", "u", "r"};
    for (int k = 0; k < 3; k++) {
        size_t bytes = a.numel[find(&a, random[k])] * sizeof(float);
        CHECK(!memcmp(a.p[find(&a, random[k])], a2.p[find(&a2, random[k])], bytes));
        CHECK(!memcmp(a.p[find(&a, random[k])], b.p[find(&b, random[k])], bytes));
        CHECK(memcmp(a.p[find(&a, random[k])], c.p[find(&c, random[k])], bytes) != 0);
    }
    /* the rule: "n" takes the stream's first 2 x 65536 draws, "u" the next 65536 */
    hp_rng rng;
    hp_rng_seed(&rng, 7);
    for (int i = 0; i < N * N; i++) CHECK(nv[i] == (float)(0.05 * hp_rng_normal(&rng)));
    double low = -0.3, high = 0.7;
    for (int i = 0; i < N * N; i++) CHECK(uv[i] == (float)(low + (high - low) * (double)hp_rng_uniform(&rng)));
    bufs_free(&a), bufs_free(&a2), bufs_free(&b), bufs_free(&c);
    hp_graph_destroy(g), hp_graph_destroy(g2), hp_graph_destroy(h);
}

/* hp_param's by-name rule is the explicit inits it names, draw for draw. */
static void by_name(void) {
    hp_graph *g = NULL, *h = NULL;
    CHECK_OK(hp_graph_create(&g));
    CHECK_OK(hp_graph_create(&h));
    if (!g || !h) return;
    hp_param(g, "a.weight", hp_dims2(16, 8));
    hp_param(g, "a.bias", hp_dims1(16));
    hp_param(g, "rms_norm.weight", hp_dims1(8));
    hp_param(g, "ln_f.weight", hp_dims1(8));
    hp_param(g, "ln_f.bias", hp_dims1(8));
    hp_param(g, "head", hp_dims2(4, 8));
    hp_param_init(h, "a.weight", hp_dims2(16, 8), hp_init_normal(0.02));
    hp_param_init(h, "a.bias", hp_dims1(16), hp_init_zeros());
    hp_param_init(h, "rms_norm.weight", hp_dims1(8), hp_init_ones());
    hp_param_init(h, "ln_f.weight", hp_dims1(8), hp_init_ones());
    hp_param_init(h, "ln_f.bias", hp_dims1(8), (hp_init){.kind = HP_INIT_BY_NAME});
    hp_param_init(h, "head", hp_dims2(4, 8), hp_init_normal(0.02));
    bufs a, b;
    CHECK_OK(init_all(&a, g, 3));
    CHECK_OK(init_all(&b, h, 3));
    for (int i = 0; i < a.n && i < b.n; i++) CHECK(!memcmp(a.p[i], b.p[i], a.numel[i] * sizeof(float)));
    for (int i = 0; i < 8; i++) CHECK(a.p[2][i] == 1.0f && a.p[3][i] == 1.0f && a.p[4][i] == 0.0f);
    /* the parameter list must be the model's */
    CHECK_ERR(hp_model_init(a.p, g, (const char(*)[HP_NAME_LEN])a.names, a.n - 1, 3), "5 parameter tensors given");
    memcpy(a.names[1], "other", 6);
    CHECK_ERR(hp_model_init(a.p, g, (const char(*)[HP_NAME_LEN])a.names, a.n, 3), "parameter 1 is 'other'");
    bufs_free(&a), bufs_free(&b);
    hp_graph_destroy(g), hp_graph_destroy(h);
}

/* A bad init is the graph's one-line error naming the parameter. */
static void bad(void) {
    struct {
        hp_init init;
        const char *name, *needle;
    } cases[] = {
        {{.kind = HP_INIT_NORMAL, .std = -0.5}, "neg.weight", "parameter 'neg.weight': normal init's std -0.5"},
        {{.kind = HP_INIT_NORMAL, .std = NAN}, "nan.weight", "parameter 'nan.weight': normal init's std nan"},
        {{.kind = (hp_init_kind)99}, "odd.weight", "parameter 'odd.weight': unknown init kind 99"},
        {{.kind = (hp_init_kind)-1}, "neg.kind", "parameter 'neg.kind': unknown init kind -1"},
        {{.kind = HP_INIT_UNIFORM, .low = 1, .high = 0}, "u.weight",
         "parameter 'u.weight': uniform init's bounds [1, 0]"},
        {{.kind = HP_INIT_CONSTANT, .value = INFINITY}, "c.weight", "parameter 'c.weight': constant init inf"},
        {{.kind = HP_INIT_ZEROS, .rows = 5}, "rows.weight", "parameter 'rows.weight': init rows 5 outside 0 .. 4"},
        {{.kind = HP_INIT_ONES, .rows = -1}, "rows2.weight", "parameter 'rows2.weight': init rows -1"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        hp_graph *g = NULL;
        CHECK_OK(hp_graph_create(&g));
        if (!g) return;
        CHECK(hp_param_init(g, cases[k].name, hp_dims2(4, 3), cases[k].init) == -1);
        CHECK(hp_param(g, "after", hp_dims1(2)) == -1); /* the error sticks */
        hp_status st = hp_graph_status(g);
        CHECKF(st && strstr(hp_status_msg(st), cases[k].needle) && !strchr(hp_status_msg(st), '\n'), "'%s' lacks '%s'",
               st ? hp_status_msg(st) : "(ok)", cases[k].needle);
        hp_graph_destroy(g);
    }
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* The by-name GPT-2 rule gpt2.c's explicit inits replaced, as it was:
 * *.bias 0, *ln*.weight 1, *.proj.weight N(0, 0.02/sqrt(2L)), the rest
 * N(0, 0.02) with wte's padded rows 0, one stream in list order. */
static void gpt2_by_name(bufs *b, const hp_gpt2_config *c, uint64_t seed) {
    hp_rng rng;
    hp_rng_seed(&rng, seed);
    double resid = 0.02 / sqrt(2.0 * c->L);
    for (int i = 0; i < b->n; i++) {
        const char *nm = b->names[i];
        float *p = b->p[i];
        if (ends_with(nm, ".bias")) {
            memset(p, 0, b->numel[i] * sizeof(float));
        } else if (strstr(nm, "ln") && ends_with(nm, ".weight")) {
            for (size_t k = 0; k < b->numel[i]; k++) p[k] = 1.0f;
        } else {
            double std = ends_with(nm, "attn.proj.weight") || ends_with(nm, "mlp.proj.weight") ? resid : 0.02;
            size_t real = strcmp(nm, "wte") == 0 ? (size_t)c->V * (size_t)c->C : b->numel[i];
            for (size_t k = 0; k < b->numel[i]; k++) p[k] = k < real ? (float)(std * hp_rng_normal(&rng)) : 0.0f;
        }
    }
}

static void gpt2(void) {
    hp_gpt2_config c = {.L = 3, .NH = 2, .C = 16, .V = 100, .Vp = 128, .maxT = 12};
    hp_graph *g = NULL;
    hp_gpt2_io io;
    CHECK_OK(hp_graph_create(&g));
    if (!g) return;
    CHECK_OK(hp_gpt2_build(g, &io, &c, 2, 8));
    bufs a, want;
    CHECK_OK(init_all(&a, g, 1337));
    CHECK_OK(init_all(&want, g, 1337));
    gpt2_by_name(&want, &c, 1337);
    CHECK(a.n == 2 + 12 * c.L + 2); /* wte, wpe, 12 per layer, lnf's two */
    for (int i = 0; i < a.n; i++)
        CHECKF(!memcmp(a.p[i], want.p[i], a.numel[i] * sizeof(float)), "'%s' differs from the by-name rule",
               a.names[i]);
    /* hp_gpt2_init (tests, inference) is the same */
    for (int i = 0; i < a.n; i++) memset(a.p[i], 0xff, a.numel[i] * sizeof(float));
    CHECK_OK(hp_gpt2_init(a.p, (const char(*)[HP_NAME_LEN])a.names, NULL, a.n, &c, 1337));
    for (int i = 0; i < a.n; i++) CHECK(!memcmp(a.p[i], want.p[i], a.numel[i] * sizeof(float)));
    const float *wte = a.p[find(&a, "wte")];
    for (size_t k = (size_t)c.V * c.C; k < (size_t)c.Vp * c.C; k++) CHECK(wte[k] == 0.0f);
    bufs_free(&a), bufs_free(&want);
    hp_graph_destroy(g);
}

int main(void) {
    kinds();
    by_name();
    bad();
    gpt2();
    return hp_test_finish("test_param_init");
}
