/* api/calibrate_kernels: the kernel half of `hyperpar calibrate` — per
 * family and bucket one graph of one operator of the table at a shape whose
 * FLOPs land in the bucket, compiled as a program (runtime/program) on a pool
 * of the calibration's threads and timed: a warm-up, then the median of up to
 * `repeats` forward runs. The operator's own flops() and bytes() of that node
 * go with the time into autopar/calibrate's entry. fp32 only: bf16 entries
 * are left out (see hp_api_calib_kernels). */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "api/calibrate.h"
#include "core/timing.h"
#include "ops/ops.h"
#include "runtime/program.h"

/* One operator call to measure: the graph holds its inputs and the node. */
typedef struct {
    hp_graph *g;
    int node;      /* the measured node */
    int ids;       /* an i32 input to fill with indices below id_limit (-1: none) */
    long id_limit;
    int sorted_ids; /* ids ascending in equal runs (a grouped linear's expert ids) */
} calib_case;

typedef enum { OP_LINEAR, OP_GROUPED, OP_ATTENTION, OP_GELU, OP_LAYERNORM, OP_XENT, OP_ADD_POS } calib_op;

/* The operator measured for each family (hp_prof_family order). */
static const calib_op family_op[HP_PROF_NFAMILIES] = {OP_LINEAR, OP_GROUPED, OP_ATTENTION, OP_GELU,
                                                      OP_LAYERNORM, OP_XENT, OP_ADD_POS};

/* Shapes: [family][bucket][quick] as up to 4 numbers, read by build_case. */
static const long shapes[HP_PROF_NFAMILIES][HP_PROF_NBUCKETS][2][4] = {
    /* linear: M, K, N (2MKN FLOPs) */
    {{{32, 64, 64}, {32, 64, 64}}, {{256, 512, 512}, {256, 512, 512}}, {{1024, 1024, 1024}, {512, 1024, 1024}}},
    /* grouped_linear: rows, I, O, experts (2 rows I O FLOPs) */
    {{{32, 64, 64, 4}, {32, 64, 64, 4}},
     {{256, 512, 512, 4}, {256, 512, 512, 4}},
     {{1024, 1024, 1024, 4}, {512, 1024, 1024, 4}}},
    /* attention: B, T, C, NH (4 B T^2 C FLOPs) */
    {{{1, 32, 64, 1}, {1, 32, 64, 1}}, {{1, 256, 256, 4}, {1, 256, 256, 4}}, {{1, 1024, 256, 4}, {1, 1024, 256, 4}}},
    /* gelu: n (10 n); large: the medium measurement */
    {{{16384}, {16384}}, {{8 << 20}, {1 << 20}}, {{0}, {0}}},
    /* layernorm: rows, C (8 rows C) */
    {{{16, 768}, {16, 768}}, {{8192, 768}, {1024, 768}}, {{0}, {0}}},
    /* cross_entropy: rows, V (5 rows V) */
    {{{4, 2048}, {4, 2048}}, {{64, 50304}, {16, 50304}}, {{0}, {0}}},
    /* add_pos: B, T, C (B T C) */
    {{{1, 64, 768}, {1, 64, 768}}, {{8, 1024, 768}, {2, 1024, 768}}, {{0}, {0}}},
};

static int in_f32(hp_graph *g, const char *name, int nd, long a, long b, long c, long d) {
    hp_shape s = {.ndim = nd, .d = {a, b, c, d}};
    return hp_graph_input(g, name, HP_F32, s);
}

static int in_i32(hp_graph *g, const char *name, int nd, long a, long b) {
    hp_shape s = {.ndim = nd, .d = {a, b}};
    return hp_graph_input(g, name, HP_I32, s);
}

/* The graph of op at shape s into c, its description into shape[64]. */
static hp_status build_case(calib_case *c, char shape[64], calib_op op, const long *s) {
    memset(c, 0, sizeof *c);
    c->ids = -1;
    HP_TRY(hp_graph_create(&c->g));
    hp_graph *g = c->g;
    int out = -1;
    switch (op) {
    case OP_LINEAR: {
        int x = in_f32(g, "x", 2, s[0], s[1], 0, 0), w = in_f32(g, "w", 2, s[2], s[1], 0, 0);
        out = hp_linear(g, x, w, -1);
        snprintf(shape, 64, "M=%ld K=%ld N=%ld", s[0], s[1], s[2]);
        break;
    }
    case OP_GROUPED: {
        int x = in_f32(g, "x", 2, s[0], s[1], 0, 0), w = in_f32(g, "w", 3, s[3], s[2], s[1], 0);
        c->ids = in_i32(g, "experts", 1, s[0], 0), c->id_limit = s[3], c->sorted_ids = 1;
        int in[3] = {x, w, c->ids};
        hp_attrs a;
        memset(&a, 0, sizeof a);
        a.i[HP_GROUPED_E0] = 0;
        out = hp_graph_node(g, NULL, &hp_op_grouped_linear, in, 3, &a);
        snprintf(shape, 64, "rows=%ld I=%ld O=%ld E=%ld", s[0], s[1], s[2], s[3]);
        break;
    }
    case OP_ATTENTION: {
        int qkv = in_f32(g, "qkv", 4, s[0], s[1], 3, s[2]);
        out = hp_attention(g, qkv, (int)s[3]);
        snprintf(shape, 64, "B=%ld T=%ld C=%ld NH=%ld", s[0], s[1], s[2], s[3]);
        break;
    }
    case OP_GELU: {
        out = hp_gelu(g, in_f32(g, "x", 1, s[0], 0, 0, 0));
        snprintf(shape, 64, "n=%ld", s[0]);
        break;
    }
    case OP_LAYERNORM: {
        int x = in_f32(g, "x", 2, s[0], s[1], 0, 0), w = in_f32(g, "w", 1, s[1], 0, 0, 0),
            b = in_f32(g, "b", 1, s[1], 0, 0, 0);
        out = hp_layernorm(g, x, w, b, 1e-5f);
        snprintf(shape, 64, "rows=%ld C=%ld", s[0], s[1]);
        break;
    }
    case OP_XENT: {
        int logits = in_f32(g, "logits", 2, s[0], s[1], 0, 0);
        c->ids = in_i32(g, "targets", 1, s[0], 0), c->id_limit = s[1];
        out = hp_xent(g, logits, c->ids, (int)s[1], NULL);
        snprintf(shape, 64, "rows=%ld V=%ld", s[0], s[1]);
        break;
    }
    case OP_ADD_POS: {
        int x = in_f32(g, "x", 3, s[0], s[1], s[2], 0), pos = in_f32(g, "pos", 2, s[1], s[2], 0, 0);
        out = hp_add_pos(g, x, pos);
        snprintf(shape, 64, "B=%ld T=%ld C=%ld", s[0], s[1], s[2]);
        break;
    }
    }
    HP_TRY(hp_graph_error(g));
    if (out < 0 || g->nnodes < 1) return hp_errorf("calibrate: building the %s graph failed", shape);
    c->node = g->nnodes - 1;
    return HP_OK;
}

/* Deterministic values in [-1, 1) for the float inputs, indices for the i32 one. */
static void fill_inputs(hp_program *p, const calib_case *c) {
    const hp_graph *g = c->g;
    unsigned long long seed = 0x9E3779B97F4A7C15ULL;
    for (int v = 0; v < g->nvals; v++) {
        if (g->vals[v].kind != HP_V_INPUT) continue;
        long n = (long)hp_val_numel(g, v);
        if (v == c->ids) {
            int32_t *x = hp_program_data(p, v);
            for (long i = 0; i < n; i++) x[i] = (int32_t)(c->sorted_ids ? i * c->id_limit / n : (i * 7919) % c->id_limit);
            continue;
        }
        float *x = hp_program_data(p, v);
        for (long i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            x[i] = (float)((double)(seed >> 40) / (double)(1ULL << 23) - 1.0);
        }
    }
}

/* Times c's forward on pool: a warm-up, then up to reps runs within about
 * budget seconds (at least one); *sec their median. */
static hp_status time_case(double *sec, const calib_case *c, hp_pool *pool, int reps, double budget) {
    hp_param_store ps;
    HP_TRY(hp_param_store_create(&ps, c->g));
    hp_program *p = NULL;
    hp_status st = hp_program_create(&p, c->g, &ps, pool);
    if (!st) fill_inputs(p, c);
    if (!st) st = hp_program_run(p, HP_PHASE_FWD);
    double v[64], start = hp_now();
    int n = 0;
    while (!st && n < reps && n < 64 && (n == 0 || hp_now() - start < budget)) {
        double t0 = hp_now();
        st = hp_program_run(p, HP_PHASE_FWD);
        v[n++] = hp_now() - t0;
    }
    if (!st) *sec = hp_median(v, n);
    if (p) hp_program_destroy(p);
    hp_param_store_free(&ps);
    return st;
}

static hp_status measure(hp_calib_kernel *k, calib_op op, const long *s, hp_prof_bucket want, hp_pool *pool,
                         int reps, double budget) {
    calib_case c;
    char shape[64] = "";
    hp_status st = build_case(&c, shape, op, s);
    if (!st) {
        const hp_node *n = &c.g->nodes[c.node];
        k->given = 1, k->from_bucket = -1;
        snprintf(k->op, sizeof k->op, "%s", n->op->name);
        snprintf(k->shape, sizeof k->shape, "%s", shape);
        k->flops = n->op->flops ? n->op->flops(c.g, n) : 0;
        k->bytes = n->op->bytes ? n->op->bytes(c.g, n) : 0;
        if (hp_profile_bucket_of(k->flops) != want) /* the shape tables above are wrong */
            st = hp_errorf("calibrate: %s %s has %.3g FLOPs, not in bucket %s", k->op, shape, k->flops,
                           hp_profile_bucket_name(want));
    }
    if (!st) st = time_case(&k->seconds, &c, pool, reps, budget);
    if (c.g) hp_graph_destroy(c.g);
    if (!st && !(k->seconds > 0)) k->seconds = 1e-9; /* below the clock's resolution */
    return st;
}

hp_status hp_api_calib_kernels(hp_calib_data *d) {
    hp_pool *pool;
    HP_TRY(hp_pool_create(&pool, d->threads));
    double budget = d->quick ? 0.25 : 2.0;
    hp_status st = HP_OK;
    for (int f = 0; f < HP_PROF_NFAMILIES && !st; f++)
        for (int b = 0; b < HP_PROF_NBUCKETS && !st; b++) {
            hp_calib_kernel *k = &d->kernel[f][HP_PROF_FP32][b];
            const long *s = shapes[f][b][d->quick ? 1 : 0];
            if (s[0] == 0) { /* memory-bound large: the medium measurement stands for it */
                *k = d->kernel[f][HP_PROF_FP32][HP_PROF_MEDIUM];
                k->from_bucket = HP_PROF_MEDIUM;
                continue;
            }
            st = measure(k, family_op[f], s, (hp_prof_bucket)b, pool, d->repeats, budget);
        }
    hp_pool_destroy(pool);
    return st;
}
