/* The bf16 program (hp_compile with dtype bf16: parallel/precision) against
 * the fp32 one on a small GPT-2 with the same weights and batch:
 * - the dtypes each operator's table entry names: bf16 copies of the
 *   matrices, bf16 activations, fp32 norm statistics, attention weights and
 *   loss; every parameter gradient fp32 (one cast per parameter read in bf16);
 * - the whole-model gradient check: loss within 1% and every parameter's
 *   gradient within 3% (relative L2) of fp32's, cosine >= 0.9995 — bf16 keeps
 *   8 significant bits (2^-8 = 0.4% per rounding), a backward pass through
 *   2 blocks compounds a few of them;
 * - oneDNN primitives are made when the program is created (one per linear
 *   forward, one per backward product) and never again in later steps;
 * - the portable bf16 path (forced, as on a CPU without AVX512-BF16) runs
 *   the same program: no primitive, the same gradients within the same
 *   tolerance of fp32;
 * - fp32 on oneDNN (every product, or the measured pick per product): a
 *   primitive per block, the fp32 OpenBLAS program's loss and gradients
 *   within 1e-5. */
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "ops/ops.h"
#include "parallel/compile.h"
#include "runtime/params.h"
#include "runtime/program.h"
#include "testutil.h"

typedef struct {
    hp_compiled c;
    hp_param_store ps;
    hp_program *p;
    float loss;
} run;

static const int B = 4, T = 16;

static void build(run *r, const hp_graph *model, const hp_gpt2_io *io, const hp_gpt2_config *mc, hp_dtype dt,
                  int fp32_gemm, hp_pool *pool) {
    hp_compile_opts o = {.train = 1, .dtype = dt, .fp32_gemm = fp32_gemm};
    CHECK_OK(hp_compile(&r->c, model, NULL, 0, &o));
    CHECK_OK(hp_param_store_create(&r->ps, r->c.rg.g));
    float *ptrs[256];
    for (int i = 0; i < r->ps.n && i < 256; i++) ptrs[i] = hp_param_ptr(&r->ps, i);
    CHECK_OK(hp_gpt2_init(ptrs, (const char(*)[HP_NAME_LEN])r->ps.name, r->ps.shape, r->ps.n, mc, 11));
    CHECK_OK(hp_program_create_ordered(&r->p, r->c.rg.g, r->c.sched.order, r->c.sched.n, &r->c.mem, &r->ps, pool,
                                       NULL));
    int32_t *tok = hp_program_data(r->p, r->c.rg.map[io->tokens]), *tgt = hp_program_data(r->p, r->c.rg.map[io->targets]);
    for (int i = 0; i < B * T; i++) tok[i] = (i * 7 + 3) % mc->V, tgt[i] = (i * 13 + 5) % mc->V;
}

static void step(run *r) {
    CHECK_OK(hp_program_run(r->p, HP_PHASE_FWD));
    CHECK_OK(hp_program_run(r->p, HP_PHASE_BWD));
    r->loss = ((float *)hp_program_data(r->p, r->c.rg.loss))[0];
}

static void release(run *r) {
    hp_program_destroy(r->p);
    hp_param_store_free(&r->ps);
    hp_compiled_free(&r->c);
}

/* Every parameter's gradient of b against a's (the fp32 reference). */
static void compare_grads(const run *a, const run *b, const char *what) {
    const float *ga = hp_program_grads(a->p), *gb = hp_program_grads(b->p);
    CHECK(a->ps.n == b->ps.n);
    double worst = 0, worst_cos = 1;
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
        if (rel > worst) worst = rel;
        if (cosv < worst_cos) worst_cos = cosv;
    }
    printf("%s: worst gradient relative error %.4f, worst cosine %.6f\n", what, worst, worst_cos);
}

/* Does oneDNN run bf16 matmuls here (not below AVX-512, nor with the portable path forced)? */
static int onednn_has_bf16(void) {
    hp_gemm_ctx *ctx = NULL;
    CHECK_OK(hp_gemm_ctx_create(&ctx, NULL));
    hp_gemm_desc d = {.M = 16, .N = 16, .K = 16, .a = HP_BF16, .b = HP_BF16, .c = HP_F32};
    hp_gemm *g = NULL;
    CHECK_OK(hp_gemm_prepare(&g, ctx, &d));
    int yes = g && hp_gemm_isa(g) != HP_ISA_PORTABLE;
    hp_gemm_free(g);
    hp_gemm_ctx_destroy(ctx);
    return yes;
}

static int count_op(const hp_graph *g, const hp_opdef *op, hp_phase ph) {
    int n = 0;
    for (int i = 0; i < g->nnodes; i++) n += g->nodes[i].op == op && g->nodes[i].phase == ph;
    return n;
}

int main(void) {
    hp_kernels_init();
    hp_gpt2_config mc = {.L = 2, .NH = 4, .C = 64, .V = 200, .Vp = 256, .maxT = 16};
    CHECK_OK(hp_gpt2_config_check(&mc));
    hp_graph *model;
    hp_gpt2_io io;
    CHECK_OK(hp_graph_create(&model));
    CHECK_OK(hp_gpt2_build(model, &io, &mc, B, T));
    hp_pool *pool;
    CHECK_OK(hp_pool_create(&pool, 2));

    run f32, b16;
    build(&f32, model, &io, &mc, HP_F32, HP_GEMM_FP32_OPENBLAS, pool);
    build(&b16, model, &io, &mc, HP_BF16, HP_GEMM_FP32_OPENBLAS, pool);

    /* dtypes as the operators' rules name them */
    const hp_graph *g = b16.c.global;
    int casts = 0, param_casts = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        if (n->op == &hp_op_cast && n->phase == HP_PHASE_FWD) {
            casts++;
            param_casts += g->vals[n->in[0]].kind == HP_V_PARAM;
        }
        if (n->op == &hp_op_linear) {
            CHECK(g->vals[n->in[0]].dtype == HP_BF16 && g->vals[n->in[1]].dtype == HP_BF16);
            CHECK(g->vals[n->out[0]].dtype == HP_BF16);
            if (n->nin == 3) CHECK(g->vals[n->in[2]].dtype == HP_F32);
        }
        if (n->op == &hp_op_layernorm) {
            CHECK(g->vals[n->out[0]].dtype == HP_BF16);
            CHECK(g->vals[n->out[1]].dtype == HP_F32 && g->vals[n->out[2]].dtype == HP_F32);
        }
        if (n->op == &hp_op_attention) CHECK(g->vals[n->out[1]].dtype == HP_F32);
    }
    CHECK(g->vals[g->loss].dtype == HP_F32);
    /* wte (read twice: embedding and the tied head, one copy), wpe, and 4 matrices per block */
    CHECK(param_casts == 2 + 4 * mc.L);
    CHECK(casts == param_casts); /* every operator of GPT-2 has a bf16 rule: no activation casts */
    for (int v = 0; v < g->nvals; v++)
        if (g->vals[v].kind == HP_V_PARAM) CHECK(g->vals[g->vals[v].grad].dtype == HP_F32);
    CHECK(count_op(f32.c.global, &hp_op_cast, HP_PHASE_FWD) == 0);

    /* oneDNN primitives: all made at creation */
    int nlin = count_op(b16.c.rg.g, &hp_op_linear, HP_PHASE_FWD);
    int natt = count_op(b16.c.rg.g, &hp_op_attention, HP_PHASE_FWD);
    long made = hp_program_gemm_creations(b16.p);
    CHECK(hp_program_gemm_creations(f32.p) == 0);
    if (onednn_has_bf16())
        /* one forward product per linear; backward: bwd-data and bwd-weight each (the first
         * linear's input needs a gradient too: every linear of GPT-2 has both), a row block
         * per pool thread (2), every M >= 32; attention (forward and backward node each):
         * its three serial shapes, one primitive per pool thread; packed bwd-weight blocks
         * (where oneDNN has AMX) a reorder primitive each too */
        CHECK(made == 3L * nlin * 2 + (hp_gemm_auto_packs() ? 2L * nlin : 0) + 2L * natt * 3 * 2);
    else /* oneDNN 2.6 has no bf16 matmul below AVX-512 (or the portable path is forced) */
        CHECK(made == 0);
    step(&f32);
    step(&b16);
    CHECK(hp_program_gemm_creations(b16.p) == made);
    printf("fp32 loss %.6f, bf16 loss %.6f; %d linears, %ld oneDNN primitives\n", f32.loss, b16.loss, nlin, made);
    CHECK(fabs(b16.loss - f32.loss) <= 0.01 * fabs(f32.loss));
    compare_grads(&f32, &b16, "bf16 vs fp32");
    step(&b16);
    CHECK(hp_program_gemm_creations(b16.p) == made);

    /* the portable bf16 path: same program, no oneDNN primitive */
    hp_kernels_set_portable(1);
    run port;
    build(&port, model, &io, &mc, HP_BF16, HP_GEMM_FP32_OPENBLAS, pool);
    CHECK(hp_program_gemm_creations(port.p) == 0);
    step(&port);
    printf("portable bf16 loss %.6f\n", port.loss);
    CHECK(fabs(port.loss - f32.loss) <= 0.01 * fabs(f32.loss));
    compare_grads(&f32, &port, "portable bf16 vs fp32");
    hp_kernels_set_portable(0);

    release(&port);

    /* fp32 on oneDNN (--fp32-gemm onednn): every product a primitive, gradients as OpenBLAS's
     * within fp32 rounding; auto: each product on the faster, measured, within the same */
    for (int policy = HP_GEMM_FP32_ONEDNN; policy <= HP_GEMM_FP32_AUTO; policy++) {
        run d;
        build(&d, model, &io, &mc, HP_F32, policy, pool);
        long made32 = hp_program_gemm_creations(d.p);
        if (policy == HP_GEMM_FP32_ONEDNN) CHECK(made32 == 3L * nlin * 2 + (hp_gemm_auto_packs() ? 2L * nlin : 0));
        step(&d);
        CHECK(hp_program_gemm_creations(d.p) == made32);
        CHECK(fabs(d.loss - f32.loss) <= 1e-5 * fabs(f32.loss));
        const float *ga = hp_program_grads(f32.p), *gb = hp_program_grads(d.p);
        double d2 = 0, x2 = 0;
        for (size_t k = 0; k < f32.ps.total; k++) d2 += ((double)ga[k] - gb[k]) * ((double)ga[k] - gb[k]), x2 += (double)ga[k] * ga[k];
        printf("fp32 on %s: %ld primitives, loss %.7f, gradient relative error %.2e\n",
               policy == HP_GEMM_FP32_ONEDNN ? "oneDNN" : "the measured pick", made32, d.loss, sqrt(d2 / x2));
        CHECK(sqrt(d2 / x2) <= 1e-5);
        release(&d);
    }
    release(&b16);
    release(&f32);
    hp_pool_destroy(pool);
    hp_graph_destroy(model);
    return hp_test_finish("test_bf16_model");
}
