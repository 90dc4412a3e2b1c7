/* Every operator on both kernel backend tables (kernels/backend.h), through
 * whole programs (hp_program_create_on), forward and backward, fp32 and bf16:
 *  - two models: GPT-2 (embedding, positions, LayerNorm, linear with bias,
 *    attention, GELU, residual add, cross-entropy) and a second one for the
 *    operators GPT-2 lacks (RMSNorm, SwiGLU, RoPE, linear without bias);
 *    together, with their backward operators and bf16's casts, every
 *    operator of the table but the vocabulary-parallel ones (per-rank
 *    programs of tensor parallelism: tests/parallel);
 *  - fp32: each table's gradient matches central finite differences of its
 *    loss in random directions (2%), and the two tables give the same bits
 *    (they share every fp32 kernel);
 *  - bf16: each table's loss within 1% and every parameter's gradient within
 *    3% (relative L2, cosine >= 0.9995) of the fp32 program's; the portable
 *    table creates no oneDNN primitive. */
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/backend.h"
#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "ops/ops.h"
#include "parallel/compile.h"
#include "runtime/params.h"
#include "runtime/program.h"
#include "testutil.h"

enum { B = 2, T = 8 };

typedef struct {
    hp_graph *g;
    int tokens, targets, V;
} model;

typedef struct {
    hp_compiled c;
    hp_param_store ps;
    hp_program *p;
    float loss;
} run;

static void gpt2_model(model *m) {
    hp_gpt2_config c = {.L = 1, .NH = 2, .C = 16, .V = 23, .Vp = 32, .maxT = T};
    CHECK_OK(hp_gpt2_config_check(&c));
    hp_gpt2_io io;
    CHECK_OK(hp_graph_create(&m->g));
    CHECK_OK(hp_gpt2_build(m->g, &io, &c, B, T));
    m->tokens = io.tokens, m->targets = io.targets, m->V = c.V;
}

/* tokens -> embedding -> RMSNorm -> linear -> SwiGLU -> linear (qkv) -> RoPE ->
 * attention -> + embedding -> linear (head) -> cross-entropy. */
static void extras_model(model *m) {
    const int C = 16, H = 24, NH = 2, V = 23, Vp = 32;
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    m->tokens = hp_graph_input(g, "tokens", HP_I32, hp_shape2(B, T));
    m->targets = hp_graph_input(g, "targets", HP_I32, hp_shape2(B, T));
    int wte = hp_graph_param(g, "wte", hp_shape2(Vp, C));
    int nw = hp_graph_param(g, "norm.weight", hp_shape1(C));
    int up = hp_graph_param(g, "up.weight", hp_shape3(2, H, C));
    int qkvw = hp_graph_param(g, "qkv.weight", hp_shape3(3, C, H));
    int head = hp_graph_param(g, "head.weight", hp_shape2(Vp, C));
    int x = hp_embedding(g, m->tokens, wte);
    int h = hp_rmsnorm(g, x, nw, 1e-5f);
    h = hp_swiglu(g, hp_linear(g, h, up, -1));
    h = hp_rope(g, hp_linear(g, h, qkvw, -1), NH, 10000.0f);
    h = hp_add(g, x, hp_attention(g, h, NH));
    int loss = hp_xent(g, hp_linear(g, h, head, -1), m->targets, V, NULL);
    CHECK_OK(hp_graph_status(g));
    g->vals[loss].persistent = 1;
    g->loss = loss;
    m->g = g;
    m->V = V;
}

static void build(run *r, const model *m, hp_dtype dt, const hp_kbackend *kern, hp_pool *pool) {
    hp_compile_opts o = {.train = 1, .dtype = dt};
    CHECK_OK(hp_compile(&r->c, m->g, NULL, 0, &o));
    CHECK_OK(hp_param_store_create(&r->ps, r->c.rg.g));
    hp_rng rng;
    hp_rng_seed(&rng, 11);
    for (int i = 0; i < r->ps.n; i++) { /* norm weights near 1, the rest large enough to carry signal */
        float *p = hp_param_ptr(&r->ps, i);
        int norm = strstr(r->ps.name[i], "norm") != NULL || strstr(r->ps.name[i], "ln") != NULL;
        for (size_t k = 0; k < hp_param_numel(&r->ps, i); k++)
            p[k] = (float)((norm ? 1.0 : 0.0) + 0.3 * hp_rng_normal(&rng));
    }
    hp_program_backend be = {.kern = kern};
    CHECK_OK(hp_program_create_on(&r->p, &be, r->c.rg.g, r->c.sched.order, r->c.sched.n, &r->c.mem, &r->ps, pool,
                                  NULL));
    int32_t *tok = hp_program_data(r->p, r->c.rg.map[m->tokens]);
    int32_t *tgt = hp_program_data(r->p, r->c.rg.map[m->targets]);
    for (int i = 0; i < B * T; i++) tok[i] = (i * 7 + 3) % m->V, tgt[i] = (i * 13 + 5) % m->V;
}

static float fwd(run *r) {
    CHECK_OK(hp_program_run(r->p, HP_PHASE_FWD));
    return ((float *)hp_program_data(r->p, r->c.rg.loss))[0];
}

static void step(run *r) {
    r->loss = fwd(r);
    CHECK_OK(hp_program_run(r->p, HP_PHASE_BWD));
}

static void release(run *r) {
    hp_program_destroy(r->p);
    hp_param_store_free(&r->ps);
    hp_compiled_free(&r->c);
}

/* The operators a's graph runs, marked in seen[] (indices of hp_ops_all). */
static void mark_ops(int *seen, const hp_graph *g) {
    int n;
    const hp_opdef *const *all = hp_ops_all(&n);
    for (int i = 0; i < g->nnodes; i++)
        for (int k = 0; k < n; k++)
            if (g->nodes[i].op == all[k]) seen[k] = 1;
}

/* Central differences of r's loss in two random directions against its
 * gradient (r has run a step: its gradients are those of the current weights). */
static void check_directions(run *r, const char *what) {
    const float *grad = hp_program_grads(r->p);
    size_t total = r->ps.total;
    float *save = malloc(total * sizeof(float)), *dir = malloc(total * sizeof(float));
    CHECK(save && dir);
    memcpy(save, r->ps.data, total * sizeof(float));
    hp_rng rng;
    hp_rng_seed(&rng, 5);
    const double h = 1e-2;
    for (int t = 0; t < 2; t++) {
        double an = 0, norm = 0;
        for (size_t k = 0; k < total; k++) dir[k] = (float)hp_rng_normal(&rng), norm += (double)dir[k] * dir[k];
        norm = sqrt(norm);
        for (size_t k = 0; k < total; k++) dir[k] = (float)(dir[k] / norm), an += (double)grad[k] * dir[k];
        for (size_t k = 0; k < total; k++) r->ps.data[k] = save[k] + (float)h * dir[k];
        double lp = fwd(r);
        for (size_t k = 0; k < total; k++) r->ps.data[k] = save[k] - (float)h * dir[k];
        double lm = fwd(r);
        double num = (lp - lm) / (2 * h);
        printf("%s: direction %d analytic %.6f numeric %.6f\n", what, t, an, num);
        CHECK(fabs(an - num) <= 0.02 * fabs(num) + 1e-4);
    }
    memcpy(r->ps.data, save, total * sizeof(float));
    free(save);
    free(dir);
}

/* Every parameter's gradient of b against a's (the fp32 reference). */
static void compare_grads(const run *a, const run *b, const char *what) {
    const float *ga = hp_program_grads(a->p), *gb = hp_program_grads(b->p);
    CHECK(a->ps.n == b->ps.n);
    for (int i = 0; i < a->ps.n; i++) {
        size_t n = hp_param_numel(&a->ps, i);
        const float *x = ga + a->ps.offset[i], *y = gb + b->ps.offset[hp_param_store_find(&b->ps, a->ps.name[i])];
        double d2 = 0, x2 = 0, y2 = 0, xy = 0;
        for (size_t k = 0; k < n; k++) {
            d2 += ((double)x[k] - y[k]) * ((double)x[k] - y[k]);
            x2 += (double)x[k] * x[k], y2 += (double)y[k] * y[k], xy += (double)x[k] * y[k];
        }
        double rel = sqrt(d2) / (sqrt(x2) + 1e-30), cosv = xy / (sqrt(x2) * sqrt(y2) + 1e-30);
        if (rel > 0.03 || cosv < 0.9995)
            fprintf(stderr, "%s: %s gradient relative error %.4f, cosine %.5f\n", what, a->ps.name[i], rel, cosv);
        CHECK(rel <= 0.03);
        CHECK(cosv >= 0.9995);
    }
}

static void test_model(const model *m, const char *name, int *seen, hp_pool *pool) {
    const hp_kbackend *tables[2] = {hp_kbackend_cpu(), hp_kbackend_portable()};
    run f32[2], b16[2];
    for (int t = 0; t < 2; t++) {
        char what[64];
        snprintf(what, sizeof what, "%s fp32 on %s", name, tables[t]->name);
        build(&f32[t], m, HP_F32, tables[t], pool);
        step(&f32[t]);
        check_directions(&f32[t], what);
        step(&f32[t]); /* the gradients of the weights as they are again */
        mark_ops(seen, f32[t].c.rg.g);
    }
    CHECK(memcmp(&f32[0].loss, &f32[1].loss, sizeof(float)) == 0);
    CHECK(memcmp(hp_program_grads(f32[0].p), hp_program_grads(f32[1].p), f32[0].ps.total * sizeof(float)) == 0);
    for (int t = 0; t < 2; t++) {
        char what[64];
        snprintf(what, sizeof what, "%s bf16 on %s vs fp32", name, tables[t]->name);
        build(&b16[t], m, HP_BF16, tables[t], pool);
        step(&b16[t]);
        printf("%s: loss %.6f (fp32 %.6f), %ld oneDNN primitives\n", what, b16[t].loss, f32[0].loss,
               hp_program_gemm_creations(b16[t].p));
        CHECK(isfinite(b16[t].loss));
        CHECK(fabs(b16[t].loss - f32[0].loss) <= 0.01 * fabs(f32[0].loss));
        compare_grads(&f32[0], &b16[t], what);
        mark_ops(seen, b16[t].c.rg.g);
    }
    CHECK(hp_program_gemm_creations(b16[1].p) == 0); /* portable: no oneDNN product */
    for (int t = 0; t < 2; t++) release(&f32[t]), release(&b16[t]);
}

int main(void) {
    hp_kernels_init();
    hp_pool *pool;
    CHECK_OK(hp_pool_create(&pool, 2));
    int nops;
    const hp_opdef *const *all = hp_ops_all(&nops);
    int *seen = calloc((size_t)nops, sizeof *seen);
    CHECK(seen);
    model m[2];
    gpt2_model(&m[0]);
    extras_model(&m[1]);
    test_model(&m[0], "gpt2", seen, pool);
    test_model(&m[1], "extras", seen, pool);
    for (int k = 0; k < nops; k++) {
        if (seen[k] || strstr(all[k]->name, "_vp")) continue;
        fprintf(stderr, "operator %s not run by this test\n", all[k]->name);
        CHECK(0);
    }
    for (int i = 0; i < 2; i++) hp_graph_destroy(m[i].g);
    free(seen);
    hp_pool_destroy(pool);
    return 0;
}
