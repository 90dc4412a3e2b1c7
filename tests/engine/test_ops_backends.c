/* Every operator on both kernel backend tables (kernels/backend.h), through
 * whole programs (hp_program_create_on), forward and backward, fp32 and bf16:
 *  - two models: GPT-2 (embedding, positions, LayerNorm, linear with bias,
 *    attention, GELU, residual add, cross-entropy) and a second one for the
 *    operators GPT-2 lacks (RMSNorm, SwiGLU, RoPE, linear without bias,
 *    grouped-query attention's repeated kv heads, and PanGu-α's query built
 *    from a position table and joined to keys and values by concat);
 *    together, with their backward operators and bf16's casts, every
 *    operator of the table but the vocabulary-parallel ones;
 *  - the vocabulary-parallel operators (embedding_vp and its backward
 *    forms, cross_entropy_vp_stats, cross_entropy_vp, cross_entropy_vp_bwd),
 *    which only per-rank programs of tensor parallelism hold, run node by
 *    node on the two halves of a padded vocabulary, the statistics'
 *    all-gather done by hand: put together, the halves give the
 *    whole-vocabulary operators' values on the same table (fp32 1e-5, bf16
 *    1e-2 relative L2), the two tables the same bits in fp32, and bf16 is
 *    within 1% (loss) and 3% (gradients) of fp32;
 *  - a Mixture-of-Experts model (router, dispatch, the experts' grouped
 *    GEMMs, combine, the balancing and z losses: ops/moe);
 *  - GPT-2 again with its head and loss fused over vocabulary chunks of 7
 *    columns (linear_cross_entropy: 23 columns in 4 chunks, the last of 2):
 *    the same checks, and its loss and gradients those of the unfused
 *    program within 1e-5 (relative);
 *  - the test enumerates the operator table (hp_ops_all): an operator that
 *    none of the above runs fails it;
 *  - fp32: each table's gradient matches central finite differences of its
 *    loss in random directions (2%), and the two tables give the same bits
 *    (they share every fp32 kernel);
 *  - bf16: each table's loss within 1% and every parameter's gradient within
 *    3% (relative L2, cosine >= 0.9995; the MoE model 6%: a near-tie's routing
 *    may turn) of the fp32 program's; the portable
 *    table creates no oneDNN primitive. */
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/bf16.h"
#include "kernels/backend.h"
#include "kernels/kernels.h"
#include "kernels/vocab_parallel.h"
#include "models/gpt2.h"
#include "models/llama.h"
#include "ops/ops.h"
#include "parallel/compile.h"
#include "runtime/params.h"
#include "runtime/program.h"
#include "testutil.h"

enum { B = 2, T = 8 };

typedef struct {
    hp_graph *g;
    int tokens, targets, V;
    int64_t loss_chunk; /* > 0: compiled with the head and the loss fused over this many columns */
    double bf16_tol;    /* bf16 gradients' relative error allowed (0: 3%) */
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

/* tokens -> embedding -> RMSNorm -> linear -> SwiGLU -> the query from a position table, one kv head repeated
 * to the query heads (grouped-query attention) -> RoPE -> attention -> + embedding -> linear (head) ->
 * cross-entropy. */
static void extras_model(model *m) {
    const int C = 16, H = 24, NH = 2, V = 23, Vp = 32;
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    m->tokens = hp_graph_input(g, "tokens", HP_I32, hp_shape2(B, T));
    m->targets = hp_graph_input(g, "targets", HP_I32, hp_shape2(B, T));
    int wte = hp_graph_param(g, "wte", hp_shape2(Vp, C));
    int nw = hp_graph_param(g, "norm.weight", hp_shape1(C));
    int up = hp_graph_param(g, "up.weight", hp_shape3(2, H, C));
    int qw = hp_graph_param(g, "q.weight", hp_shape3(1, C, C));
    int kvw = hp_graph_param(g, "kv.weight", hp_shape3(2, C / NH, H)); /* one kv head for the NH query heads */
    int tq = hp_graph_param(g, "top_query.weight", hp_shape2(T + 2, C));
    int head = hp_graph_param(g, "head.weight", hp_shape2(Vp, C));
    int x = hp_embedding(g, m->tokens, wte);
    int h = hp_rmsnorm(g, x, nw, 1e-5f);
    h = hp_swiglu(g, hp_linear(g, h, up, -1));
    /* the query from a position table, keys and values from h, joined (PanGu-α's query layer) */
    int q = hp_linear(g, hp_pos_table(g, tq, B, T), qw, -1);
    h = hp_rope(g, hp_concat(g, q, hp_repeat_heads(g, hp_linear(g, h, kvw, -1), C / NH, NH), 2), NH, 10000.0f);
    h = hp_add(g, x, hp_attention(g, h, NH));
    int loss = hp_xent(g, hp_linear(g, h, head, -1), m->targets, V, NULL);
    CHECK_OK(hp_graph_status(g));
    g->vals[loss].persistent = 1;
    g->loss = loss;
    m->g = g;
    m->V = V;
}

/* A Mixture-of-Experts model (models/llama's MoE blocks): router, top-2 of 4 experts renormalised, dispatch,
 * the experts' grouped GEMMs and SwiGLU, combine, one shared expert, the balancing and z losses. */
static void moe_model(model *m) {
    hp_model_config c = {.layers = 1, .heads = 2, .channels = 16, .vocab = 23, .max_seq = T, .kv_heads = 1,
                         .experts = 4, .top_k = 2, .expert_ffn = 8, .shared_experts = 1, .moe_flags = HP_MOE_RENORM,
                         .aux_coef = 0.05f, .z_coef = 0.01f};
    CHECK_OK(hp_graph_create(&m->g));
    CHECK_OK(hp_llama_build(m->g, &c, B, T));
    m->tokens = hp_graph_find(m->g, "tokens"), m->targets = hp_graph_find(m->g, "targets"), m->V = c.vocab;
}

static void build(run *r, const model *m, hp_dtype dt, const hp_kbackend *kern, hp_pool *pool) {
    hp_compile_opts o = {.train = 1, .dtype = dt, .loss_chunk = m->loss_chunk};
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
static void compare_grads(const run *a, const run *b, const char *what, double tol) {
    double cmin = 1.0 - tol * tol / 1.8; /* 3%: 0.9995 */
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
        if (rel > tol || cosv < cmin)
            fprintf(stderr, "%s: %s gradient relative error %.4f, cosine %.5f\n", what, a->ps.name[i], rel, cosv);
        CHECK(rel <= tol);
        CHECK(cosv >= cmin);
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
        compare_grads(&f32[0], &b16[t], what, m->bf16_tol > 0 ? m->bf16_tol : 0.03);
        mark_ops(seen, b16[t].c.rg.g);
    }
    CHECK(hp_program_gemm_creations(b16[1].p) == 0); /* portable: no oneDNN product */
    for (int t = 0; t < 2; t++) release(&f32[t]), release(&b16[t]);
}

/* The fused head and loss against the plain one: the same loss and gradients up to rounding. */
static void test_fused_vs_plain(const model *plain, const model *fused, hp_pool *pool) {
    run a, b;
    build(&a, plain, HP_F32, hp_kbackend_cpu(), pool);
    build(&b, fused, HP_F32, hp_kbackend_cpu(), pool);
    step(&a), step(&b);
    CHECK(a.ps.total == b.ps.total);
    const float *ga = hp_program_grads(a.p), *gb = hp_program_grads(b.p);
    double big = 0, diff = 0;
    for (size_t i = 0; i < a.ps.total; i++) {
        if (fabs(ga[i]) > big) big = fabs(ga[i]);
        if (fabs(ga[i] - gb[i]) > diff) diff = fabs(ga[i] - gb[i]);
    }
    printf("fused head and loss vs plain: loss %.7f vs %.7f, max |gradient difference| %.3g of %.3g\n", b.loss,
           a.loss, diff, big);
    CHECK(fabs(a.loss - b.loss) <= 1e-5 * fabs(a.loss));
    CHECK(big > 0 && diff <= 1e-5 * big);
    int fused_node = 0;
    for (int i = 0; i < b.c.rg.g->nnodes; i++) fused_node |= b.c.rg.g->nodes[i].op == &hp_op_linear_xent_bwd;
    CHECK(fused_node);
    release(&a), release(&b);
}

/* ---- the vocabulary-parallel operators, node by node ---- */

enum { VN = B * T, VC = 16, VV = 23, VVP = 32, VH = VVP / 2 };

static void mark_op(int *seen, const hp_opdef *op) {
    int n;
    const hp_opdef *const *all = hp_ops_all(&n);
    for (int k = 0; k < n; k++)
        if (all[k] == op) seen[k] = 1;
}

/* Runs op on in -> out as a node with integer attributes a[0..na). */
static void run_node(const hp_kctx *k, const hp_opdef *op, const int64_t *a, int na, const hp_tensor *in,
                     hp_tensor *out, int *seen) {
    hp_node n;
    memset(&n, 0, sizeof n);
    n.op = op;
    n.fwd_node = -1;
    for (int i = 0; i < na; i++) n.a.i[i] = a[i];
    snprintf(n.name, sizeof n.name, "%s", op->name);
    op->run(k, &n, in, out);
    mark_op(seen, op);
}

/* A tensor of dtype dt over x's n floats: x itself (fp32) or its bf16 rounding in b. */
static hp_tensor as(hp_dtype dt, hp_shape s, float *x, uint16_t *b) {
    if (dt == HP_F32) return (hp_tensor){HP_F32, s, x};
    for (int64_t i = 0; i < hp_shape_numel(&s); i++) b[i] = hp_f32_to_bf16(x[i]);
    return (hp_tensor){HP_BF16, s, b};
}

/* Element i of t as a float. */
static float at(const hp_tensor *t, int64_t i) {
    return t->dtype == HP_BF16 ? hp_bf16_to_f32(((const uint16_t *)t->data)[i]) : ((const float *)t->data)[i];
}

/* Relative L2 distance of x[n] from ref[n]. */
static double rel_l2(const float *x, const float *ref, int64_t n) {
    double d2 = 0, r2 = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)x[i] - ref[i];
        d2 += d * d, r2 += (double)ref[i] * ref[i];
    }
    return sqrt(d2) / (sqrt(r2) + 1e-30);
}

/* What one run gives, put together from the halves (floats): the embedding, its table gradient
 * (plain and accumulated), the loss, per-position losses, probabilities and logit gradients. */
typedef struct {
    float emb[VN * VC], dtab[VVP * VC], acc[VVP * VC], loss, losses[VN], probs[VN * VVP], dlogits[VN * VVP];
} vp_result;

static void vp_compare(const vp_result *x, const vp_result *ref, double tol, const char *what) {
    double e[6] = {rel_l2(x->emb, ref->emb, VN * VC),       rel_l2(x->dtab, ref->dtab, VVP * VC),
                   rel_l2(x->acc, ref->acc, VVP * VC),       rel_l2(x->losses, ref->losses, VN),
                   rel_l2(x->probs, ref->probs, VN * VVP),   rel_l2(x->dlogits, ref->dlogits, VN * VVP)};
    double dl = fabs((double)x->loss - ref->loss) / fabs((double)ref->loss);
    printf("%s: loss %.6f vs %.6f; relative L2 emb %.1e dtable %.1e acc %.1e losses %.1e probs %.1e dlogits %.1e\n",
           what, x->loss, ref->loss, e[0], e[1], e[2], e[3], e[4], e[5]);
    CHECK(dl <= tol);
    for (int i = 0; i < 6; i++) CHECKF(e[i] <= tol, "%s: output %d relative L2 %.2e", what, i, e[i]);
}

/* The whole-vocabulary operators (ref) and the two halves of the vocabulary-parallel ones (vp)
 * through table kern in dtype dt. */
static void vp_run(vp_result *ref, vp_result *vp, const hp_kbackend *kern, hp_dtype dt, hp_pool *pool, int *seen) {
    static int32_t ids[VN], tgt[VN];
    static float table[VVP * VC], logits[VN * VVP], dy[VN * VC], dsofar[VVP * VC], lh[VN * VH];
    static uint16_t table16[VVP * VC], logits16[VN * VVP], dy16[VN * VC], lh16[VN * VH];
    static uint16_t out16[VN * VVP];
    static float out32[VN * VVP], stats[2 * 3 * VN], probs[VN * VVP], probs_h[VN * VH], losses[VN];
    hp_rng rng;
    hp_rng_seed(&rng, 23);
    for (int i = 0; i < VN; i++) ids[i] = (i * 7 + 3) % VV, tgt[i] = (i * 13 + 5) % VV;
    for (int i = 0; i < VVP * VC; i++) table[i] = (float)hp_rng_normal(&rng), dsofar[i] = (float)hp_rng_normal(&rng);
    for (int i = 0; i < VN * VVP; i++) logits[i] = (float)(2.0 * hp_rng_normal(&rng));
    for (int i = 0; i < VN * VC; i++) dy[i] = (float)hp_rng_normal(&rng);
    size_t nscratch = hp_kb_xent_scratch(VVP, hp_pool_size(pool)) + hp_kb_xent_vp_bwd_scratch(VH, hp_pool_size(pool));
    float *scratch = calloc(nscratch + 1, sizeof(float));
    CHECK(scratch);
    hp_kctx k = {.pool = pool, .scratch = scratch, .kern = kern};
    hp_tensor tid = {HP_I32, hp_shape2(B, T), ids}, ttg = {HP_I32, hp_shape2(B, T), tgt};
    hp_tensor ttab = as(dt, hp_shape2(VVP, VC), table, table16), tdy = as(dt, hp_shape3(B, T, VC), dy, dy16);
    hp_tensor tlog = as(dt, hp_shape3(B, T, VVP), logits, logits16);
    hp_tensor o16 = {dt, hp_shape3(B, T, VC), dt == HP_F32 ? (void *)out32 : (void *)out16};
    float one = 1.0f;
    hp_tensor tone = {HP_F32, hp_shape1(1), &one};

    /* the whole vocabulary */
    hp_tensor in[3], out[3];
    int64_t a[3] = {VV, VN, 0};
    in[0] = tid, in[1] = ttab;
    run_node(&k, &hp_op_embedding, a, 0, in, &o16, seen);
    for (int i = 0; i < VN * VC; i++) ref->emb[i] = at(&o16, i);
    in[0] = tdy, in[1] = tid, in[2] = (hp_tensor){HP_F32, hp_shape2(VVP, VC), dsofar};
    out[0] = (hp_tensor){HP_F32, hp_shape2(VVP, VC), ref->dtab};
    run_node(&k, &hp_op_embedding_bwd, a, 0, in, out, seen);
    out[0].data = ref->acc;
    run_node(&k, &hp_op_embedding_bwd_acc, a, 0, in, out, seen);
    in[0] = tlog, in[1] = ttg;
    out[0] = (hp_tensor){HP_F32, hp_shape1(1), &ref->loss};
    out[1] = (hp_tensor){HP_F32, hp_shape3(B, T, VVP), probs};
    out[2] = (hp_tensor){HP_F32, hp_shape2(B, T), ref->losses};
    run_node(&k, &hp_op_xent, a, 2, in, out, seen);
    memcpy(ref->probs, probs, sizeof probs);
    in[0] = tone, in[1] = out[1], in[2] = ttg;
    out[0] = (hp_tensor){dt, hp_shape3(B, T, VVP), dt == HP_F32 ? (void *)out32 : (void *)out16};
    run_node(&k, &hp_op_xent_bwd, a, 2, in, out, seen);
    for (int i = 0; i < VN * VVP; i++) ref->dlogits[i] = at(&out[0], i);

    /* the halves: rows (columns of the logits) [h * VH, (h + 1) * VH) */
    memset(vp->emb, 0, sizeof vp->emb);
    for (int h = 0; h < 2; h++) {
        int64_t b[3] = {h * VH, VV, VN};
        hp_tensor tab_h = {dt, hp_shape2(VH, VC),
                           dt == HP_F32 ? (void *)(table + h * VH * VC) : (void *)(table16 + h * VH * VC)};
        in[0] = tid, in[1] = tab_h;
        run_node(&k, &hp_op_embedding_vp, b, 1, in, &o16, seen);
        for (int i = 0; i < VN * VC; i++) vp->emb[i] += at(&o16, i); /* the other half's rows are 0 */
        in[0] = tdy, in[1] = tid, in[2] = (hp_tensor){HP_F32, hp_shape2(VH, VC), dsofar + h * VH * VC};
        out[0] = (hp_tensor){HP_F32, hp_shape2(VH, VC), vp->dtab + h * VH * VC};
        run_node(&k, &hp_op_embedding_vp_bwd, b, 1, in, out, seen);
        out[0].data = vp->acc + h * VH * VC;
        run_node(&k, &hp_op_embedding_vp_bwd_acc, b, 1, in, out, seen);
        for (int r = 0; r < VN; r++) memcpy(lh + r * VH, logits + r * VVP + h * VH, VH * sizeof(float));
        hp_tensor tlh = as(dt, hp_shape3(B, T, VH), lh, lh16);
        in[0] = tlh, in[1] = ttg;
        out[0] = (hp_tensor){HP_F32, hp_shape2(3, VN), stats + h * 3 * VN}; /* the gathered [2, 3, VN] */
        run_node(&k, &hp_op_xent_vp_stats, b, 2, in, out, seen);
    }
    for (int h = 0; h < 2; h++) {
        int64_t b[3] = {h * VH, VV, VN};
        for (int r = 0; r < VN; r++) memcpy(lh + r * VH, logits + r * VVP + h * VH, VH * sizeof(float));
        hp_tensor tlh = as(dt, hp_shape3(B, T, VH), lh, lh16);
        float loss_h;
        in[0] = tlh, in[1] = (hp_tensor){HP_F32, hp_shape3(2, 3, VN), stats};
        out[0] = (hp_tensor){HP_F32, hp_shape1(1), &loss_h};
        out[1] = (hp_tensor){HP_F32, hp_shape3(B, T, VH), probs_h};
        out[2] = (hp_tensor){HP_F32, hp_shape2(B, T), losses};
        run_node(&k, &hp_op_xent_vp_finish, b, 3, in, out, seen);
        if (h == 0) vp->loss = loss_h, memcpy(vp->losses, losses, sizeof losses);
        CHECK(!memcmp(&loss_h, &vp->loss, sizeof loss_h) && !memcmp(losses, vp->losses, sizeof losses));
        for (int r = 0; r < VN; r++) memcpy(vp->probs + r * VVP + h * VH, probs_h + r * VH, VH * sizeof(float));
        in[0] = tone, in[1] = out[1], in[2] = ttg;
        out[0] = (hp_tensor){dt, hp_shape3(B, T, VH), dt == HP_F32 ? (void *)out32 : (void *)out16};
        run_node(&k, &hp_op_xent_vp_bwd, b, 3, in, out, seen);
        for (int r = 0; r < VN; r++)
            for (int c = 0; c < VH; c++) vp->dlogits[r * VVP + h * VH + c] = at(&out[0], r * VH + c);
    }
    free(scratch);
}

static void test_vocab_parallel(int *seen, hp_pool *pool) {
    const hp_kbackend *tables[2] = {hp_kbackend_portable(), hp_kbackend_cpu()};
    static vp_result ref, vp, f32[2];
    for (int d = 0; d < 2; d++)
        for (int t = 0; t < 2; t++) {
            hp_dtype dt = d ? HP_BF16 : HP_F32;
            char what[96];
            snprintf(what, sizeof what, "vocabulary-parallel %s on %s vs whole vocabulary", d ? "bf16" : "fp32",
                     tables[t]->name);
            vp_run(&ref, &vp, tables[t], dt, pool, seen);
            vp_compare(&vp, &ref, d ? 1e-2 : 1e-5, what);
            if (!d) {
                f32[t] = vp;
                continue;
            }
            /* bf16 against the portable table's fp32 (the reference): the loss 1%, gradients 3% */
            snprintf(what, sizeof what, "vocabulary-parallel bf16 on %s vs fp32", tables[t]->name);
            double dl = fabs((double)vp.loss - f32[0].loss) / fabs((double)f32[0].loss);
            double e1 = rel_l2(vp.dtab, f32[0].dtab, VVP * VC), e2 = rel_l2(vp.dlogits, f32[0].dlogits, VN * VVP);
            printf("%s: loss %.6f (fp32 %.6f), relative L2 dtable %.1e dlogits %.1e\n", what, vp.loss, f32[0].loss, e1,
                   e2);
            CHECK(dl <= 0.01 && e1 <= 0.03 && e2 <= 0.03);
        }
    CHECK(!memcmp(&f32[0], &f32[1], sizeof f32[0])); /* fp32: the same bits on both tables */
}

int main(void) {
    hp_kernels_init();
    hp_pool *pool;
    CHECK_OK(hp_pool_create(&pool, 2));
    int nops;
    const hp_opdef *const *all = hp_ops_all(&nops);
    int *seen = calloc((size_t)nops, sizeof *seen);
    CHECK(seen);
    model m[4];
    gpt2_model(&m[0]);
    extras_model(&m[1]);
    gpt2_model(&m[2]);
    moe_model(&m[3]);
    m[0].loss_chunk = m[1].loss_chunk = m[3].loss_chunk = 0, m[2].loss_chunk = 7;
    for (int i = 0; i < 4; i++) m[i].bf16_tol = 0;
    m[3].bf16_tol = 0.06; /* the router's input rounded to bf16 can turn a near-tie's choice of expert */
    test_model(&m[0], "gpt2", seen, pool);
    test_model(&m[1], "extras", seen, pool);
    test_model(&m[2], "gpt2 fused loss", seen, pool);
    test_model(&m[3], "moe", seen, pool);
    test_fused_vs_plain(&m[0], &m[2], pool);
    test_vocab_parallel(seen, pool);
    for (int k = 0; k < nops; k++) {
        if (seen[k]) continue;
        fprintf(stderr, "operator %s not run by this test\n", all[k]->name);
        CHECK(0);
    }
    for (int i = 0; i < 4; i++) hp_graph_destroy(m[i].g);
    free(seen);
    hp_pool_destroy(pool);
    return 0;
}
