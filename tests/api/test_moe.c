/* Mixture-of-Experts (ops/moe, kernels/moe; issue 27):
 *  - the balancing and z losses equal their formulas on a hand-made routing
 *    (the router the identity, so the logits are the tokens): aux = coef E
 *    sum_e f_e P_e with f_e over the routed slots (T k) and P_e the mean
 *    score, z = coef mean(logsumexp^2); the top-k, its renormalised weights;
 *  - capacity: an expert keeps the slots with the highest scores (ties: the
 *    earlier token), the same bits on every run; dropped slots add nothing;
 *  - the gradients of the router (through the scores with the routing held),
 *    the stacked experts (grouped GEMM), the shared expert and the input match
 *    central finite differences of a loss carrying the balancing and z losses;
 *  - an expert no token chose gets a zero gradient, nothing divides by zero. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/kernels.h"
#include "ops/ops.h"
#include "parallel/compile.h"
#include "runtime/params.h"
#include "runtime/program.h"
#include "testutil.h"

enum { T = 6, C = 4, E = 4, K = 2, F = 3 };

typedef struct {
    hp_graph *g;
    int x, y, aux, loss;
    hp_compiled c;
    hp_param_store ps;
    hp_pool *pool;
    hp_program *p;
} moe_run;

/* x[T, C] (an input) through hp_moe; loss = sum(y * y_weights) + aux, so every output matters */
static void build(moe_run *r, int flags, double capacity, double aux_coef, double z_coef, int train) {
    memset(r, 0, sizeof *r);
    CHECK_OK(hp_graph_create(&r->g));
    hp_graph *g = r->g;
    r->x = hp_graph_param(g, "x", hp_shape2(T, C)); /* a parameter: its gradient is checked too */
    int router = hp_graph_param(g, "router", hp_shape2(E, C));
    int gu = hp_graph_param(g, "experts.gate_up", hp_shape4(E, 2, F, C));
    int dn = hp_graph_param(g, "experts.down", hp_shape3(E, C, F));
    r->y = hp_moe(g, &r->aux, r->x, router, gu, dn, K, flags, capacity, aux_coef, z_coef);
    int tgt = hp_graph_input(g, "targets", HP_I32, hp_shape1(T));
    int head = hp_graph_param(g, "head", hp_shape2(8, C));
    r->loss = hp_add(g, hp_xent(g, hp_linear(g, r->y, head, -1), tgt, 8, NULL), r->aux);
    CHECK_OK(hp_graph_status(g));
    g->vals[r->loss].persistent = 1;
    g->vals[r->aux].persistent = 1;
    for (int i = 0; i < g->nnodes; i++) /* the routing, read after the forward */
        if (g->nodes[i].op == &hp_op_moe_route) g->vals[g->nodes[i].out[0]].persistent = g->vals[g->nodes[i].out[1]].persistent = 1;
    g->loss = r->loss;
    hp_compile_opts o = {.train = train};
    CHECK_OK(hp_compile(&r->c, g, NULL, 0, &o));
    CHECK_OK(hp_param_store_create(&r->ps, r->c.rg.g));
    CHECK_OK(hp_pool_create(&r->pool, 2));
    CHECK_OK(hp_program_create_ordered(&r->p, r->c.rg.g, r->c.sched.order, r->c.sched.n, &r->c.mem, &r->ps, r->pool,
                                       NULL));
    int32_t *t = hp_program_data(r->p, hp_graph_find(r->c.rg.g, "targets"));
    for (int i = 0; i < T; i++) t[i] = (i * 5 + 1) % 8;
}

static void release(moe_run *r) {
    hp_program_destroy(r->p);
    hp_pool_destroy(r->pool);
    hp_param_store_free(&r->ps);
    hp_compiled_free(&r->c);
    hp_graph_destroy(r->g);
}

static float *param(moe_run *r, const char *name) { return hp_param_ptr(&r->ps, hp_param_store_find(&r->ps, name)); }

static float value(moe_run *r, int global) { return ((float *)hp_program_data(r->p, r->c.rg.map[global]))[0]; }

/* hand-made logits: the router is the identity (C = E), so token t's logits are x[t] */
static const float X[T][C] = {{2.0f, 1.0f, 0.0f, -1.0f}, {0.5f, 0.4f, 0.3f, 0.2f}, {-1.0f, 3.0f, 1.0f, 0.0f},
                              {0.0f, 0.0f, 2.0f, 1.5f},  {1.0f, -2.0f, 0.5f, 4.0f}, {2.5f, 2.4f, -1.0f, 0.0f}};

static void set_identity(moe_run *r, hp_rng *rng) {
    memcpy(param(r, "x"), X, sizeof X);
    float *w = param(r, "router");
    for (int e = 0; e < E; e++)
        for (int c = 0; c < C; c++) w[e * C + c] = e == c ? 1.0f : 0.0f;
    static const char *const rest[] = {"experts.gate_up", "experts.down", "head"};
    for (int i = 0; i < 3; i++) {
        int k = hp_param_store_find(&r->ps, rest[i]);
        float *p = hp_param_ptr(&r->ps, k);
        for (size_t j = 0; j < hp_param_numel(&r->ps, k); j++) p[j] = (float)(0.5 * hp_rng_normal(rng));
    }
}

/* the moe_aux node's report [3 E + 1] (the statistics, the metrics' row, the balancing loss), kept after the step */
static const float *report_of(moe_run *r) {
    const hp_graph *lg = r->c.rg.g;
    for (int i = 0; i < lg->nnodes; i++)
        if (lg->nodes[i].op == &hp_op_moe_aux && lg->nodes[i].out[1] >= 0) {
            CHECK(hp_val_numel(lg, lg->nodes[i].out[1]) == 3 * E + 1);
            return hp_program_data(r->p, lg->nodes[i].out[1]);
        }
    CHECK(0);
    return NULL;
}

static void formulas(void) {
    moe_run r;
    const double ac = 0.1, zc = 0.01;
    build(&r, HP_MOE_RENORM, 0, ac, zc, 0);
    hp_rng rng;
    hp_rng_seed(&rng, 1);
    set_identity(&r, &rng);
    CHECK_OK(hp_program_run(r.p, HP_PHASE_FWD));
    /* the reference, by hand */
    double f[E] = {0}, P[E] = {0}, z = 0;
    int top[T][K];
    for (int t = 0; t < T; t++) {
        double m = X[t][0], s = 0, p[E];
        for (int e = 1; e < E; e++) m = fmax(m, X[t][e]);
        for (int e = 0; e < E; e++) s += exp(X[t][e] - m);
        for (int e = 0; e < E; e++) p[e] = exp(X[t][e] - m) / s, P[e] += p[e] / T;
        z += pow(m + log(s), 2) / T;
        for (int j = 0; j < K; j++) {
            int best = -1;
            for (int e = 0; e < E; e++)
                if ((j == 0 || e != top[t][0]) && (best < 0 || p[e] > p[best])) best = e;
            top[t][j] = best, f[best] += 1.0 / (T * K);
        }
    }
    double aux = 0;
    for (int e = 0; e < E; e++) aux += ac * E * f[e] * P[e];
    aux += zc * z;
    float got = value(&r, r.aux);
    printf("balancing + z loss: %.7f (formula %.7f)\n", got, aux);
    CHECK(fabs(got - aux) <= 1e-6 * fmax(1.0, fabs(aux)));
    /* the metrics' report: the z-loss, no slot dropped (dropless), the balancing loss alone */
    const float *rep = report_of(&r);
    if (rep) {
        double bal = aux - zc * z;
        CHECKF(fabs(rep[2 * E] - zc * z) <= 1e-6 && rep[2 * E + 1] == 0.0f && fabs(rep[3 * E] - bal) <= 1e-6,
               "report: z %g (formula %g), dropped %g, balancing %g (formula %g)", rep[2 * E], zc * z,
               rep[2 * E + 1], rep[3 * E], bal);
    }
    /* the routing: the route node's index output */
    const hp_graph *lg = r.c.rg.g;
    int found = 0;
    for (int i = 0; i < lg->nnodes; i++) {
        if (lg->nodes[i].op != &hp_op_moe_route) continue;
        const int32_t *ix = hp_program_data(r.p, lg->nodes[i].out[1]);
        const float *w = hp_program_data(r.p, lg->nodes[i].out[0]);
        for (int t = 0; t < T; t++) {
            CHECK(ix[t * K] == top[t][0] && ix[t * K + 1] == top[t][1]);
            CHECK(fabs(w[t * K] + w[t * K + 1] - 1.0f) < 1e-6); /* renormalised */
        }
        found = 1;
    }
    CHECK(found);
    release(&r);
}

/* capacity factor 0.5: ceil(6 * 2 / 4 * 0.5) = 2 slots per expert; the dropped ones are each expert's lowest
 * scores, the same on every run */
static void capacity(void) {
    int32_t first[T * K];
    for (int run = 0; run < 2; run++) {
        moe_run r;
        build(&r, 0, 0.5, 0, 0, 0);
        hp_rng rng;
        hp_rng_seed(&rng, 2);
        set_identity(&r, &rng);
        CHECK_OK(hp_program_run(r.p, HP_PHASE_FWD));
        const hp_graph *lg = r.c.rg.g;
        for (int i = 0; i < lg->nnodes; i++) {
            if (lg->nodes[i].op != &hp_op_moe_route) continue;
            const int32_t *ix = hp_program_data(r.p, lg->nodes[i].out[1]);
            const float *w = hp_program_data(r.p, lg->nodes[i].out[0]);
            int kept[E] = {0}, dropped = 0;
            for (int s = 0; s < T * K; s++) {
                if (ix[s] >= 0) kept[ix[s]]++;
                else {
                    dropped++;
                    CHECK(w[s] == 0.0f);
                }
            }
            for (int e = 0; e < E; e++) CHECK(kept[e] <= 2);
            CHECK(dropped > 0);
            const float *rep = report_of(&r);
            if (rep) CHECKF(rep[2 * E + 1] == (float)dropped, "report: %g dropped, %d counted", rep[2 * E + 1], dropped);
            /* every dropped slot's score is below every kept one's of the same expert: the kept ones are the
             * highest (softmax scores of the hand-made logits, recomputed) */
            for (int s = 0; s < T * K; s++) {
                if (ix[s] >= 0) continue;
                int t = s / K;
                /* the expert it had: the j-th best of token t */
                double p[E], m = X[t][0], sum = 0;
                for (int e = 1; e < E; e++) m = fmax(m, X[t][e]);
                for (int e = 0; e < E; e++) sum += exp(X[t][e] - m);
                for (int e = 0; e < E; e++) p[e] = exp(X[t][e] - m) / sum;
                int best = 0, second = -1;
                for (int e = 1; e < E; e++) best = p[e] > p[best] ? e : best;
                for (int e = 0; e < E; e++)
                    if (e != best && (second < 0 || p[e] > p[second])) second = e;
                int e = s % K == 0 ? best : second;
                for (int u = 0; u < T * K; u++) {
                    if (ix[u] != e) continue;
                    int tu = u / K;
                    double mu = X[tu][0], su = 0;
                    for (int q = 1; q < E; q++) mu = fmax(mu, X[tu][q]);
                    for (int q = 0; q < E; q++) su += exp(X[tu][q] - mu);
                    CHECK(exp(X[tu][e] - mu) / su >= p[e]);
                }
            }
            if (run == 0) memcpy(first, ix, sizeof first);
            else CHECK(!memcmp(first, ix, sizeof first));
        }
        release(&r);
    }
}

static float loss_of(moe_run *r) {
    CHECK_OK(hp_program_run(r->p, HP_PHASE_FWD));
    return value(r, r->loss);
}

/* finite differences along a random direction of parameter `name` */
static void fd(moe_run *r, const char *name, hp_rng *rng) {
    const hp_graph *lg = r->c.rg.g;
    int v = hp_graph_find(lg, name), k = hp_param_store_find(&r->ps, name);
    CHECK(v >= 0 && k >= 0 && lg->vals[v].grad >= 0);
    if (v < 0 || k < 0) return;
    size_t n = hp_param_numel(&r->ps, k);
    float *w = hp_param_ptr(&r->ps, k), dir[256];
    CHECK(n <= 256);
    CHECK_OK(hp_program_run(r->p, HP_PHASE_FWD));
    CHECK_OK(hp_program_run(r->p, HP_PHASE_BWD));
    const float *gr = hp_program_data(r->p, lg->vals[v].grad);
    double an = 0;
    for (size_t i = 0; i < n; i++) dir[i] = (float)hp_rng_normal(rng), an += (double)dir[i] * gr[i];
    const float eps = 1e-3f;
    for (size_t i = 0; i < n; i++) w[i] += eps * dir[i];
    double lp = loss_of(r);
    for (size_t i = 0; i < n; i++) w[i] -= 2 * eps * dir[i];
    double lm = loss_of(r);
    for (size_t i = 0; i < n; i++) w[i] += eps * dir[i];
    double nu = (lp - lm) / (2 * eps);
    printf("%-16s analytic %10.6f numeric %10.6f\n", name, an, nu);
    CHECK(fabs(an - nu) <= 0.02 * fabs(nu) + 2e-4);
}

static void gradients(int flags) {
    moe_run r;
    build(&r, flags, 0, 0.5, 0.05, 1); /* large coefficients: the losses' own gradients count */
    hp_rng rng;
    hp_rng_seed(&rng, 7);
    for (int i = 0; i < r.ps.n; i++) {
        float *p = hp_param_ptr(&r.ps, i);
        for (size_t j = 0; j < hp_param_numel(&r.ps, i); j++) p[j] = (float)(0.5 * hp_rng_normal(&rng));
    }
    static const char *const names[] = {"router", "experts.gate_up", "experts.down", "x", "head"};
    for (int i = 0; i < 5; i++) fd(&r, names[i], &rng);
    release(&r);
}

/* top-2 of 4 experts with every token's logits favouring experts 0 and 1: experts 2 and 3 see no token */
static void idle_experts(void) {
    moe_run r;
    build(&r, 0, 0, 0.1, 0.01, 1);
    hp_rng rng;
    hp_rng_seed(&rng, 3);
    set_identity(&r, &rng);
    float *x = param(&r, "x");
    for (int t = 0; t < T; t++) x[t * C] = 9.0f, x[t * C + 1] = 8.0f; /* experts 0 and 1 for every token */
    CHECK_OK(hp_program_run(r.p, HP_PHASE_FWD));
    CHECK_OK(hp_program_run(r.p, HP_PHASE_BWD));
    const hp_graph *lg = r.c.rg.g;
    int v = hp_graph_find(lg, "experts.down");
    const float *gd = hp_program_data(r.p, lg->vals[v].grad);
    const int32_t *ix = NULL;
    for (int i = 0; i < lg->nnodes; i++)
        if (lg->nodes[i].op == &hp_op_moe_route) ix = hp_program_data(r.p, lg->nodes[i].out[1]);
    int used[E] = {0};
    for (int s = 0; ix && s < T * K; s++) used[ix[s]] = 1;
    int idle = 0;
    for (int e = 0; e < E; e++) {
        double s = 0;
        for (int j = 0; j < C * F; j++) {
            s += fabs(gd[e * C * F + j]);
            CHECK(isfinite(gd[e * C * F + j]));
        }
        if (!used[e]) {
            idle++;
            CHECK(s == 0);
        } else {
            CHECK(s > 0);
        }
    }
    CHECK(idle > 0);
    CHECK(isfinite(value(&r, r.loss)));
    release(&r);
}

int main(void) {
    hp_kernels_init();
    formulas();
    capacity();
    gradients(HP_MOE_RENORM);
    gradients(HP_MOE_SIGMOID);
    idle_experts();
    return hp_test_finish("test_moe");
}
