/* ops/moe: the Mixture-of-Experts layer's operators (issue 27), fp32 (under
 * bf16 the precision pass casts around them). hp_moe (ops/common) builds the
 * layer from them:
 *   moe_route(x[N..., C], router[E, C]) -> weights[N..., k], index[N..., k] i32,
 *     stats[3, E] (row 0: the scores summed over the tokens, row 1: the
 *     routed slots per expert, row 2: for the metrics, [0] the z-loss (as
 *     zsum) and [1] the slots its capacity dropped (E >= 2), the rest 0),
 *     zsum[1] (z-loss: zcoef / divisor x the sum of
 *     the tokens' logsumexp^2), the logits x router^T made inside in fp32 (the
 *     router's math, under bf16 too). Attributes: i[0] k, i[1] 1: sigmoid scores
 *     (0: softmax), i[2] renormalise the k weights, i[3] the divisor (the
 *     global number of tokens), f[0] the capacity factor (0: dropless; a
 *     rank's capacity is ceil(its tokens k / E x factor)), f[1] zcoef.
 *     stats and zsum are sums over tokens: Partial where the tokens are split;
 *     scores[N..., k]: each slot's score (what a capacity ranks slots by:
 *     expert parallelism's owners drop by it).
 *   moe_aux(stats[2 or 3, E]) -> aux[1] = coef E sum_e f_e P_e with f_e = routed_e /
 *     (divisor k), P_e = scores_e / divisor: the load-balancing loss of the
 *     whole batch (its stats summed over every rank first: a Replicate input).
 *     i[0] the divisor, i[1] k, f[0] coef. A second output, report[3 E + 1]:
 *     the statistics (row 2 zero if not given) and the loss, kept after the
 *     step for the metrics (the builder marks it persistent). An optional
 *     second input drops[1] (whole): the slots the experts' owners dropped
 *     under expert parallelism with a capacity (moe_ep_send's fourth
 *     output, summed over the ranks), added to the report's drops. i[2] = 1 (the deterministic mode's
 *     per-part form, HP_MOE_PER_PART): each part of the batch (a rank's
 *     slice) its own balancing loss from its own statistics, weighted f[1]
 *     (its share of the batch): Partial in, Partial out; moe_route's i[4]
 *     then takes the statistics' gradient per part.
 *   moe_dispatch(x[N..., C], index[N..., k]) -> xp[N k, C] the routed slots'
 *     rows grouped by expert, eid[N k] each row's expert (-1: none),
 *     rowof[N..., k] each slot's row (-1: dropped). The rows are the rank's
 *     own (split with the tokens' first dimension). With i[2] = chunks > 1
 *     (HP_MOE_DISPATCH_CHUNKS, parallel/moe_chunk), chunk i[1] of the
 *     rank's tokens only: xp and eid [N k / chunks, ...], rowof -1 outside
 *     the chunk (its combine and the backward then leave those tokens 0).
 *   grouped_linear(xp[..., I], W[E, O..., I], eid[...]) -> y[..., O...]: each
 *     run of rows of one expert times that expert's weight (one GEMM per
 *     expert, no per-token loop); rows of no expert give 0. i[0]: the id of
 *     W's first expert (a member's experts under expert parallelism), i[1]:
 *     1 + the mesh axis the rows came over (ops.h HP_GROUPED_*). With a
 *     fourth input src[..., 2] (moe_ep_send's sources) and i[2] = G, runs
 *     are also cut where the source changes, and the weight's gradient adds
 *     the sources' parts as a binary tree (the deterministic mode).
 *   moe_combine(yp[N k (/ chunks), C], weights[N..., k], rowof[N..., k]) -> y[N..., C]
 *     = sum over each token's kept slots of weight x its row.
 * Each has its backward; the router's gradient goes through the scores with
 * the routing held fixed (and through the balancing loss's P_e, f_e held). */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/ops_util.h"

#define OI32(t) ((int32_t *)(t).data)

/* ---- moe_route ---- */

static hp_status route_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *x = in_shape(g, n, 0), *w = in_shape(g, n, 1);
    int64_t E = w->d[0], k = n->a.i[0];
    char b1[64], b2[64];
    if (w->ndim != 2 || w->d[1] != last_dim(x))
        return SHAPE_ERR("moe_route: router weight %s does not match x %s (expected [E, %lld])",
                         hp_shape_str(b1, sizeof b1, w), hp_shape_str(b2, sizeof b2, x), (long long)last_dim(x));
    if (E < 1 || E > HP_MOE_MAX_EXPERTS) return SHAPE_ERR("moe_route: %lld experts (1..%d)", (long long)E, HP_MOE_MAX_EXPERTS);
    if (k < 1 || k > E || k > HP_MOE_MAX_TOPK)
        return SHAPE_ERR("moe_route: top-%lld of %lld experts (1..%d)", (long long)k, (long long)E, HP_MOE_MAX_TOPK);
    if (!(n->a.f[0] >= 0) || !(n->a.f[1] >= 0))
        return SHAPE_ERR("moe_route: capacity factor %g and z coefficient %g must be >= 0", n->a.f[0], n->a.f[1]);
    os[0] = os[1] = *x;
    os[0].d[x->ndim - 1] = os[1].d[x->ndim - 1] = k;
    os[2] = hp_shape2(3, E);
    os[3] = hp_shape1(1);
    os[4] = os[0];
    od[0] = HP_F32, od[1] = HP_I32, od[2] = od[3] = od[4] = HP_F32;
    return HP_OK;
}

static long route_capacity(const hp_node *n, long N, long E) {
    double f = n->a.f[0];
    return f > 0 ? (long)ceil((double)N * (double)n->a.i[0] / (double)E * f) : 0;
}

/* forward: the logits [N, E] and the routing's scratch; backward: the logits and their gradient */
static size_t route_scratch(const hp_graph *g, const hp_node *n, int nt) {
    (void)nt;
    int fwd = n->op == &hp_op_moe_route;
    const hp_shape *x = &g->vals[n->in[fwd ? 0 : 3]].shape, *w = &g->vals[n->in[fwd ? 1 : 4]].shape;
    long N = (long)rows_of(x), E = (long)w->d[0];
    return (size_t)(2 * N * E) + (fwd ? hp_k_moe_route_scratch(N, E, (long)n->a.i[0]) : 0);
}

static float zscale(const hp_node *n, long N) {
    return (float)(n->a.f[1] / (double)(n->a.i[3] > 0 ? n->a.i[3] : (N ? N : 1)));
}

/* in (x[N..., C], W[E, C]): the logits in fp32 (the router's math), then the routing */
static void route_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long N = t_rows(&in[0]), C = t_last(&in[0]), E = in[1].shape.d[0], K = (long)n->a.i[0];
    float *logits = k->scratch, *stats = F32(out[2]);
    kern_of(k)->k_matmul_fwd(k->pool, logits, CF32(in[0]), CF32(in[1]), NULL, N, C, E);
    kern_of(k)->k_moe_route(k->pool, F32(out[0]), OI32(out[1]), n->nout > 4 && n->out[4] >= 0 ? F32(out[4]) : NULL,
                            stats, stats + E, F32(out[3]), logits + 2 * N * E,
                            logits, N, E, K, (int)n->a.i[1], (int)n->a.i[2], route_capacity(n, N, E), zscale(n, N));
    /* the metrics' row: the z-loss and the slots the capacity dropped */
    memset(stats + 2 * E, 0, sizeof(float) * (size_t)E);
    stats[2 * E] = F32(out[3])[0];
    long dropped = 0;
    for (long i = 0; i < N * K; i++) dropped += OI32(out[1])[i] < 0;
    if (E >= 2) stats[2 * E + 1] = (float)dropped;
}

static void route_backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dx = grad_for(g, node, 0), dw = grad_for(g, node, 1);
    if (dx < 0 && dw < 0) return;
    int in[6] = {gout[0], gout[2], gout[3], g->nodes[node].in[0], g->nodes[node].in[1], g->nodes[node].out[1]};
    for (int q = 0; q < 3; q++) /* an output nothing differentiates: a zero gradient */
        if (in[q] < 0) {
            int o = g->nodes[node].out[q == 0 ? 0 : q + 1];
            in[q] = hp_graph_value(g, HP_V_CONST, HP_F32, g->vals[o].shape, "moe_route.zero_grad");
            if (in[q] < 0) return;
        }
    int out[2] = {dx, dw};
    emit_bwd(g, &hp_op_moe_route_bwd, node, in, 6, out, 2);
    gin[0] = dx, gin[1] = dw;
}

const hp_opdef hp_op_moe_route = {
    .name = "moe_route", .nout = 5, .nograd_outs = 2 | 16, .infer = route_infer, .run = route_run,
    .backward = route_backward, .scratch = route_scratch, .bytes = hp_ops_io_bytes,
};

/* in (dweights, dstats, dzsum, x, W, index) -> (dx, dW), either may be -1 */
static void route_bwd_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long N = t_rows(&in[3]), C = t_last(&in[3]), E = in[4].shape.d[0], K = (long)n->a.i[0];
    float *logits = k->scratch, *dlogits = logits + N * E;
    kern_of(k)->k_matmul_fwd(k->pool, logits, CF32(in[3]), CF32(in[4]), NULL, N, C, E);
    float dz = CF32(in[2])[0] * zscale(n, N);
    kern_of(k)->k_moe_route_bwd(k->pool, dlogits, CF32(in[0]), CF32(in[1]), dz, logits, I32(in[5]), N, E, K,
                                (int)n->a.i[1], (int)n->a.i[2]);
    kern_of(k)->k_matmul_bwd(k->pool, n->out[0] >= 0 ? F32(out[0]) : NULL, n->out[1] >= 0 ? F32(out[1]) : NULL, NULL,
                             dlogits, CF32(in[3]), CF32(in[4]), N, C, E);
}

const hp_opdef hp_op_moe_route_bwd = {
    .name = "moe_route_bwd", .nout = 2, .run = route_bwd_run, .scratch = route_scratch, .bytes = hp_ops_io_bytes,
};

/* ---- moe_aux ---- */

static hp_status aux_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *s = in_shape(g, n, 0);
    if (s->ndim != 2 || (s->d[0] != 2 && s->d[0] != 3))
        return SHAPE_ERR("moe_aux: statistics must be [2 or 3, E], got %d dimensions", s->ndim);
    if (n->a.i[0] < 1 || n->a.i[1] < 1)
        return SHAPE_ERR("moe_aux: divisor %lld and k %lld must be >= 1", (long long)n->a.i[0], (long long)n->a.i[1]);
    if (n->nin > 1 && (in_numel(g, n, 1) != 1 || g->vals[n->in[1]].dtype != HP_F32))
        return SHAPE_ERR("moe_aux: the experts' owners' drops must be one fp32 count (%d inputs)", n->nin);
    os[0] = hp_shape1(1);
    os[1] = hp_shape1(3 * s->d[1] + 1);
    od[0] = od[1] = HP_F32;
    return HP_OK;
}

/* d aux / d scores_e (the routed counts held) */
static double aux_slope(const hp_node *n, long E, float count) {
    double D = (double)n->a.i[0], K = (double)n->a.i[1];
    return n->a.f[0] * (double)E * ((double)count / (D * K)) / D;
}

/* the part's weight (f[1]; 0: 1): a slice's loss in the deterministic mode's per-part form */
static float aux_scale(const hp_node *n) { return n->a.f[1] > 0 ? (float)n->a.f[1] : 1.0f; }

static void aux_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)k;
    long E = t_last(&in[0]);
    const float *s = CF32(in[0]);
    double a = 0;
    for (long e = 0; e < E; e++) a += aux_slope(n, E, s[E + e]) * (double)s[e];
    F32(out[0])[0] = (float)a * aux_scale(n);
    if (n->nout > 1 && n->out[1] >= 0) { /* the report: the statistics, then the layer's balancing loss */
        long rows = (long)in[0].shape.d[0];
        memcpy(F32(out[1]), s, sizeof(float) * (size_t)(rows * E));
        if (rows < 3) memset(F32(out[1]) + 2 * E, 0, sizeof(float) * (size_t)E);
        F32(out[1])[3 * E] = F32(out[0])[0];
        if (n->nin > 1 && E >= 2) F32(out[1])[2 * E + 1] += CF32(in[1])[0]; /* the owners' drops (EP) */
    }
}

static void aux_backward(hp_graph *g, int node, const int *gout, int *gin) {
    int ds = grad_for(g, node, 0);
    if (ds < 0) return;
    int in[2] = {gout[0], g->nodes[node].in[0]};
    emit_bwd(g, &hp_op_moe_aux_bwd, node, in, 2, &ds, 1);
    gin[0] = ds;
}

const hp_opdef hp_op_moe_aux = {
    .name = "moe_aux", .nout = 2, .nograd_outs = 2, .infer = aux_infer, .run = aux_run, .backward = aux_backward,
    .bytes = hp_ops_io_bytes,
};

/* in (daux, stats) -> dstats (the counts' row 0) */
static void aux_bwd_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)k;
    long E = t_last(&in[1]);
    const float *s = CF32(in[1]);
    float da = CF32(in[0])[0], *d = F32(out[0]);
    float w = aux_scale(n);
    for (long e = 0; e < E; e++) d[e] = (float)((double)da * aux_slope(n, E, s[E + e])) * w, d[E + e] = 0.0f;
    if (in[1].shape.d[0] > 2) memset(d + 2 * E, 0, sizeof(float) * (size_t)E);
}

const hp_opdef hp_op_moe_aux_bwd = {
    .name = "moe_aux_bwd", .nout = 1, .run = aux_bwd_run, .bytes = hp_ops_io_bytes,
};

/* ---- moe_dispatch ---- */

static hp_status dispatch_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *x = in_shape(g, n, 0), *ix = in_shape(g, n, 1);
    char b1[64], b2[64];
    if (g->vals[n->in[1]].dtype != HP_I32 || ix->ndim != x->ndim || x->ndim + 1 > HP_MAX_DIMS)
        return SHAPE_ERR("moe_dispatch: index %s must be i32 [N..., k] for x %s", hp_shape_str(b1, sizeof b1, ix),
                         hp_shape_str(b2, sizeof b2, x));
    for (int d = 0; d + 1 < x->ndim; d++)
        if (ix->d[d] != x->d[d])
            return SHAPE_ERR("moe_dispatch: index %s does not match x %s", hp_shape_str(b1, sizeof b1, ix),
                             hp_shape_str(b2, sizeof b2, x));
    if (n->a.i[0] < 1) return SHAPE_ERR("moe_dispatch: %lld experts", (long long)n->a.i[0]);
    int64_t K = n->a.i[HP_MOE_DISPATCH_CHUNKS] > 1 ? n->a.i[HP_MOE_DISPATCH_CHUNKS] : 1, c = n->a.i[HP_MOE_DISPATCH_CHUNK];
    int64_t N = rows_of(x);
    if (N % K || c < 0 || c >= K)
        return SHAPE_ERR("moe_dispatch: %lld tokens do not cut into %lld chunks (chunk %lld)", (long long)N,
                         (long long)K, (long long)c);
    os[0] = hp_shape2(hp_shape_numel(ix) / K, last_dim(x));
    os[1] = hp_shape1(hp_shape_numel(ix) / K);
    os[2] = *ix;
    od[0] = HP_F32, od[1] = od[2] = HP_I32;
    return HP_OK;
}

/* With chunks, chunk c's tokens (rows [c N / chunks, (c + 1) N / chunks) of x) only; the other tokens' slots
 * -1 in rowof. */
static void dispatch_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long C = t_last(&in[0]), N = t_rows(&in[0]), K = t_last(&in[1]);
    long nc = n->a.i[HP_MOE_DISPATCH_CHUNKS] > 1 ? (long)n->a.i[HP_MOE_DISPATCH_CHUNKS] : 1, Nc = N / nc;
    long t0 = (long)n->a.i[HP_MOE_DISPATCH_CHUNK] * Nc;
    int32_t *rowof = OI32(out[2]);
    for (long i = 0; i < t0 * K; i++) rowof[i] = -1;
    for (long i = (t0 + Nc) * K; i < N * K; i++) rowof[i] = -1;
    kern_of(k)->k_moe_dispatch(F32(out[0]), OI32(out[1]), rowof + t0 * K, CF32(in[0]) + t0 * C, I32(in[1]) + t0 * K,
                               Nc, C, (long)n->a.i[0], K);
}

static void dispatch_backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dx = grad_for(g, node, 0);
    if (dx < 0) return;
    int in[2] = {gout[0], g->nodes[node].out[2]};
    emit_bwd(g, &hp_op_moe_dispatch_bwd, node, in, 2, &dx, 1);
    gin[0] = dx;
}

const hp_opdef hp_op_moe_dispatch = {
    .name = "moe_dispatch", .nout = 3, .nograd_outs = 6, .infer = dispatch_infer, .run = dispatch_run,
    .backward = dispatch_backward, .bytes = hp_ops_io_bytes,
};

/* in (dxp, rowof) -> dx */
static void dispatch_bwd_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)n;
    long C = t_last(&out[0]), N = t_rows(&out[0]), K = t_last(&in[1]);
    kern_of(k)->k_moe_dispatch_bwd(F32(out[0]), CF32(in[0]), I32(in[1]), N, C, K);
}

const hp_opdef hp_op_moe_dispatch_bwd = {
    .name = "moe_dispatch_bwd", .nout = 1, .run = dispatch_bwd_run, .bytes = hp_ops_io_bytes,
};

/* ---- grouped_linear ---- */

static hp_status grouped_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *x = in_shape(g, n, 0), *w = in_shape(g, n, 1), *e = in_shape(g, n, 2);
    char b1[64], b2[64];
    if (w->ndim < 3 || w->d[w->ndim - 1] != last_dim(x) || x->ndim - 1 + w->ndim - 2 > HP_MAX_DIMS)
        return SHAPE_ERR("grouped_linear: weight %s does not match rows %s (expected [E, O..., %lld])",
                         hp_shape_str(b1, sizeof b1, w), hp_shape_str(b2, sizeof b2, x), (long long)last_dim(x));
    if (g->vals[n->in[2]].dtype != HP_I32 || hp_shape_numel(e) != rows_of(x))
        return SHAPE_ERR("grouped_linear: expert ids %s must be i32, one per row of %s", hp_shape_str(b1, sizeof b1, e),
                         hp_shape_str(b2, sizeof b2, x));
    if (n->nin > 3 && (g->vals[n->in[3]].dtype != HP_I32 || in_numel(g, n, 3) != 2 * rows_of(x) ||
                       n->a.i[HP_GROUPED_SOURCES] < 1 || n->a.i[HP_GROUPED_SOURCES] > HP_MOE_MAX_SOURCES))
        return SHAPE_ERR("grouped_linear: sources %s must be i32 [rows, 2] for rows %s, from 1..%d members",
                         hp_shape_str(b1, sizeof b1, in_shape(g, n, 3)), hp_shape_str(b2, sizeof b2, x),
                         HP_MOE_MAX_SOURCES);
    os[0] = *x;
    os[0].ndim = x->ndim - 1;
    for (int d = 1; d < w->ndim - 1; d++) os[0].d[os[0].ndim++] = w->d[d];
    od[0] = HP_F32;
    return HP_OK;
}

/* The end of the run of rows starting at r0: one expert (and, with sources, one source). */
static long run_end(const int32_t *eid, const int32_t *src, long r0, long R) {
    long r1 = r0 + 1;
    while (r1 < R && eid[r1] == eid[r0] && (!src || src[2 * r1] == src[2 * r0])) r1++;
    return r1;
}

/* The local expert of row r (-1: none): its id less the weight's first expert. */
static long expert_at(const hp_node *n, const int32_t *eid, long r, long E) {
    long e = eid[r] < 0 ? -1 : eid[r] - (long)n->a.i[HP_GROUPED_E0];
    return e >= 0 && e < E ? e : -1;
}

static void grouped_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long I = t_last(&in[0]), R = t_rows(&in[0]), E = in[1].shape.d[0];
    long O = (long)(hp_shape_numel(&in[1].shape) / E / I);
    const int32_t *eid = I32(in[2]), *src = n->nin > 3 ? I32(in[3]) : NULL;
    const float *x = CF32(in[0]), *W = CF32(in[1]);
    float *y = F32(out[0]);
    for (long r0 = 0; r0 < R;) {
        long r1 = run_end(eid, src, r0, R), e = expert_at(n, eid, r0, E);
        if (e < 0) memset(y + r0 * O, 0, sizeof(float) * (size_t)((r1 - r0) * O));
        else kern_of(k)->k_matmul_fwd(k->pool, y + r0 * O, x + r0 * I, W + e * O * I, NULL, r1 - r0, I, O);
        r0 = r1;
    }
}

static void grouped_backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dx = grad_for(g, node, 0), dw = grad_for(g, node, 1);
    if (dx < 0 && dw < 0) return;
    const hp_node *n = &g->nodes[node];
    int in[5] = {gout[0], n->in[0], n->in[1], n->in[2], n->nin > 3 ? n->in[3] : -1}, out[2] = {dx, dw};
    emit_bwd(g, &hp_op_grouped_linear_bwd, node, in, n->nin > 3 ? 5 : 4, out, 2);
    gin[0] = dx, gin[1] = dw;
}

static double grouped_flops(const hp_graph *g, const hp_node *n) {
    const hp_shape *w = in_shape(g, n, 1);
    return 2.0 * (double)rows_of(in_shape(g, n, 0)) * (double)hp_shape_numel(w) / (double)w->d[0];
}

const hp_opdef hp_op_grouped_linear = {
    .name = "grouped_linear", .nout = 1, .infer = grouped_infer, .run = grouped_run, .backward = grouped_backward,
    .flops = grouped_flops, .bytes = hp_ops_io_bytes,
};

/* with sources: one expert's weight gradient per source in scratch, G slots of O x I */
static size_t grouped_bwd_scratch(const hp_graph *g, const hp_node *n, int nt) {
    (void)nt;
    if (n->nin < 5 || n->out[1] < 0) return 0;
    const hp_shape *w = in_shape(g, n, 2);
    return (size_t)n->a.i[HP_GROUPED_SOURCES] * (size_t)(hp_shape_numel(w) / w->d[0]);
}

/* in (dy, xp, W, eid[, src]) -> (dxp, dW), either may be -1. With sources, each expert's weight gradient is
 * the sum of one GEMM per source run, added as a binary tree over the G sources ((s0 + s1) + (s2 + s3) ...; a
 * source without rows adds zeros): the deterministic mode's order, the same bits for any split of the
 * sources over ranks. */
static void grouped_bwd_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long I = t_last(&in[1]), R = t_rows(&in[1]), E = in[2].shape.d[0];
    long O = (long)(hp_shape_numel(&in[2].shape) / E / I), OI = O * I;
    const int32_t *eid = I32(in[3]), *src = n->nin > 4 ? I32(in[4]) : NULL;
    const float *dy = CF32(in[0]), *x = CF32(in[1]), *W = CF32(in[2]);
    float *dx = n->out[0] >= 0 ? F32(out[0]) : NULL, *dW = n->out[1] >= 0 ? F32(out[1]) : NULL;
    long G = src ? (long)n->a.i[HP_GROUPED_SOURCES] : 1;
    if (dW) memset(dW, 0, sizeof(float) * (size_t)(E * OI)); /* experts no row reached */
    for (long r0 = 0; r0 < R;) {
        long e = expert_at(n, eid, r0, E), r1 = run_end(eid, src, r0, R);
        if (e < 0) {
            if (dx) memset(dx + r0 * I, 0, sizeof(float) * (size_t)((r1 - r0) * I));
            r0 = r1;
            continue;
        }
        if (!src || !dW) {
            kern_of(k)->k_matmul_bwd(k->pool, dx ? dx + r0 * I : NULL, dW ? dW + e * OI : NULL, NULL, dy + r0 * O,
                                     x + r0 * I, W + e * OI, r1 - r0, I, O);
            r0 = r1;
            continue;
        }
        float *slot = k->scratch; /* [G][O I] */
        memset(slot, 0, sizeof(float) * (size_t)(G * OI));
        long q = r0; /* every run of expert e, one per source */
        while (q < R && expert_at(n, eid, q, E) == e) {
            long q1 = run_end(eid, src, q, R), s = src[2 * q];
            if (s < 0 || s >= G) s = 0;
            kern_of(k)->k_matmul_bwd(k->pool, dx ? dx + q * I : NULL, slot + s * OI, NULL, dy + q * O, x + q * I,
                                     W + e * OI, q1 - q, I, O);
            q = q1;
        }
        for (long step = 1; step < G; step *= 2)
            for (long a = 0; a + step < G; a += 2 * step)
                for (long j = 0; j < OI; j++) slot[a * OI + j] += slot[(a + step) * OI + j];
        memcpy(dW + e * OI, slot, sizeof(float) * (size_t)OI);
        r0 = q;
    }
}

static double grouped_flops_bwd(const hp_graph *g, const hp_node *n) {
    const hp_shape *w = in_shape(g, n, 2);
    double f = 2.0 * (double)rows_of(in_shape(g, n, 1)) * (double)hp_shape_numel(w) / (double)w->d[0];
    return f * ((n->out[0] >= 0) + (n->out[1] >= 0));
}

const hp_opdef hp_op_grouped_linear_bwd = {
    .name = "grouped_linear_bwd", .nout = 2, .run = grouped_bwd_run, .scratch = grouped_bwd_scratch,
    .flops = grouped_flops_bwd, .bytes = hp_ops_io_bytes,
};

/* ---- moe_combine ---- */

static hp_status combine_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *yp = in_shape(g, n, 0), *w = in_shape(g, n, 1);
    char b1[64], b2[64];
    /* yp: every slot's row, or a chunk's (a dispatch's chunk: N k / chunks rows) */
    if (yp->ndim != 2 || yp->d[0] < 1 || hp_shape_numel(w) % yp->d[0] || g->vals[n->in[2]].dtype != HP_I32 ||
        !hp_shape_eq(in_shape(g, n, 2), w))
        return SHAPE_ERR("moe_combine: rows %s do not match weights %s", hp_shape_str(b1, sizeof b1, yp),
                         hp_shape_str(b2, sizeof b2, w));
    os[0] = *w;
    os[0].d[w->ndim - 1] = last_dim(yp);
    od[0] = HP_F32;
    return HP_OK;
}

static void combine_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)n;
    long C = t_last(&in[0]), K = t_last(&in[1]), N = t_rows(&in[1]);
    kern_of(k)->k_moe_combine(F32(out[0]), CF32(in[0]), CF32(in[1]), I32(in[2]), N, C, K);
}

static void combine_backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dyp = grad_for(g, node, 0), dw = grad_for(g, node, 1);
    if (dyp < 0 && dw < 0) return;
    const hp_node *n = &g->nodes[node];
    int in[4] = {gout[0], n->in[0], n->in[1], n->in[2]}, out[2] = {dyp, dw};
    emit_bwd(g, &hp_op_moe_combine_bwd, node, in, 4, out, 2);
    gin[0] = dyp, gin[1] = dw;
}

const hp_opdef hp_op_moe_combine = {
    .name = "moe_combine", .nout = 1, .infer = combine_infer, .run = combine_run, .backward = combine_backward,
    .bytes = hp_ops_io_bytes,
};

/* in (dy, yp, weights, rowof) -> (dyp, dweights) */
static void combine_bwd_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long C = t_last(&in[1]), K = t_last(&in[2]), N = t_rows(&in[2]), R = t_rows(&in[1]);
    kern_of(k)->k_moe_combine_bwd(n->out[0] >= 0 ? F32(out[0]) : NULL, n->out[1] >= 0 ? F32(out[1]) : NULL,
                                  CF32(in[0]), CF32(in[1]), CF32(in[2]), I32(in[3]), N, C, K, R);
}

const hp_opdef hp_op_moe_combine_bwd = {
    .name = "moe_combine_bwd", .nout = 2, .run = combine_bwd_run, .bytes = hp_ops_io_bytes,
};
