/* Gradient accumulation inside a backward rule (hp_grad_take): a tied table
 * (embedding lookup and LM head share W) gets its gradient from one
 * embedding_bwd_acc node that adds the rows to the LM head's gradient, with no
 * add node and no table-sized embedding_bwd; an untied table keeps the plain
 * embedding_bwd. The tied gradient is checked against central finite
 * differences (2% + 2e-4, fp32 forward, h = 1e-2) and is bit-identical run to
 * run and across pool sizes 1 and 2. */
#include "core/autodiff.h"
#include "core/rng.h"
#include "kernels/kernels.h"
#include "ops/ops.h"
#include "runtime/program.h"
#include "testutil.h"

enum { N = 6, R = 9, C = 4 };

typedef struct {
    hp_graph *g;
    int ids, targets, w, head, loss;
} toy;

/* x = W[ids]; logits = x . H^T; loss = xent(logits, targets); H = W when tied. */
static void toy_build(toy *t, int tied) {
    CHECK_OK(hp_graph_create(&t->g));
    hp_graph *g = t->g;
    t->ids = hp_graph_input(g, "ids", HP_I32, hp_shape1(N));
    t->targets = hp_graph_input(g, "targets", HP_I32, hp_shape1(N));
    t->w = hp_graph_param(g, "w", hp_shape2(R, C));
    t->head = tied ? t->w : hp_graph_param(g, "head", hp_shape2(R, C));
    int x = hp_embedding(g, t->ids, t->w);
    int logits = hp_linear(g, x, t->head, -1);
    t->loss = hp_xent(g, logits, t->targets, R, NULL);
    CHECK_OK(hp_graph_status(g));
    g->vals[t->loss].persistent = 1;
    CHECK_OK(hp_autodiff(g, t->loss, &hp_op_add));
}

static int count_op(const hp_graph *g, const hp_opdef *op, int phase) {
    int n = 0;
    for (int i = 0; i < g->nnodes; i++) n += g->nodes[i].op == op && (int)g->nodes[i].phase == phase;
    return n;
}

static int producer_of(const hp_graph *g, int v) {
    int p = -1;
    for (int i = 0; i < g->nnodes; i++)
        for (int k = 0; k < g->nodes[i].nout; k++)
            if (g->nodes[i].out[k] == v) p = i;
    return p;
}

/* Runs forward + backward on pool of nt threads; returns the loss and copies
 * the gradients into grad[total]. */
static double run(toy *t, hp_param_store *ps, int nt, float *grad, const int32_t *ids, const int32_t *tg) {
    hp_pool *pool;
    CHECK_OK(hp_pool_create(&pool, nt));
    hp_program *p;
    CHECK_OK(hp_program_create(&p, t->g, ps, pool));
    memcpy(hp_program_data(p, t->ids), ids, N * sizeof(int32_t));
    memcpy(hp_program_data(p, t->targets), tg, N * sizeof(int32_t));
    CHECK_OK(hp_program_run(p, HP_PHASE_FWD));
    CHECK_OK(hp_program_run(p, HP_PHASE_BWD));
    double loss = ((float *)hp_program_data(p, t->loss))[0];
    if (grad) memcpy(grad, hp_program_grads(p), ps->total * sizeof(float));
    hp_program_destroy(p);
    hp_pool_destroy(pool);
    return loss;
}

int main(void) {
    hp_kernels_init();
    /* untied: the plain embedding_bwd, nothing taken */
    toy u;
    toy_build(&u, 0);
    CHECK(count_op(u.g, &hp_op_embedding_bwd, HP_PHASE_BWD) == 1);
    CHECK(count_op(u.g, &hp_op_embedding_bwd_acc, HP_PHASE_BWD) == 0);
    hp_graph_destroy(u.g);

    /* tied: one accumulating node writes the table's gradient, no add */
    toy t;
    toy_build(&t, 1);
    const hp_graph *g = t.g;
    CHECK(count_op(g, &hp_op_embedding_bwd, HP_PHASE_BWD) == 0);
    CHECK(count_op(g, &hp_op_embedding_bwd_acc, HP_PHASE_BWD) == 1);
    CHECK(count_op(g, &hp_op_add, HP_PHASE_BWD) == 0);
    int gw = g->vals[t.w].grad;
    CHECK(gw >= 0 && g->vals[gw].persistent && g->vals[gw].grad_of == t.w);
    int pn = producer_of(g, gw);
    CHECK(pn >= 0 && g->nodes[pn].op == &hp_op_embedding_bwd_acc);
    /* its third input is the LM head's gradient of the table */
    int sofar = g->nodes[pn].in[2], pl = producer_of(g, sofar);
    CHECK(pl >= 0 && g->nodes[pl].op == &hp_op_linear_bwd && g->nodes[pl].out[1] == sofar);

    hp_param_store ps;
    CHECK_OK(hp_param_store_create(&ps, g));
    hp_rng rng;
    hp_rng_seed(&rng, 3);
    for (size_t k = 0; k < ps.total; k++) ps.data[k] = (float)(0.5 * hp_rng_normal(&rng));
    int32_t ids[N] = {1, 4, 4, 0, 8, 1}, tg[N] = {2, 4, 7, 0, 1, 8}; /* repeated rows too */
    float *grad = malloc(ps.total * sizeof(float)), *grad1 = malloc(ps.total * sizeof(float));
    float *again = malloc(ps.total * sizeof(float));
    double L0 = run(&t, &ps, 2, grad, ids, tg);
    CHECK(run(&t, &ps, 2, again, ids, tg) == L0);
    CHECK(memcmp(grad, again, ps.total * sizeof(float)) == 0);
    CHECK(run(&t, &ps, 1, grad1, ids, tg) == L0);
    CHECK(memcmp(grad, grad1, ps.total * sizeof(float)) == 0);

    const double h = 1e-2;
    size_t off = ps.offset[hp_param_store_find(&ps, "w")];
    for (size_t k = 0; k < (size_t)R * C; k++) {
        float keep = ps.data[off + k];
        ps.data[off + k] = keep + (float)h;
        double lp = run(&t, &ps, 1, NULL, ids, tg);
        ps.data[off + k] = keep - (float)h;
        double lm = run(&t, &ps, 1, NULL, ids, tg);
        ps.data[off + k] = keep;
        double fd = (lp - lm) / (2 * h), an = grad[off + k];
        if (!(fabs(fd - an) <= 0.02 * fabs(an) + 2e-4))
            fprintf(stderr, "w[%zu]: analytic %.6g, finite difference %.6g\n", k, an, fd);
        CHECK(fabs(fd - an) <= 0.02 * fabs(an) + 2e-4);
    }
    free(grad), free(grad1), free(again);
    hp_param_store_free(&ps);
    hp_graph_destroy(t.g);
    return hp_test_finish("test_grad_take");
}
