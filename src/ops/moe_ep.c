/* ops/moe_ep: expert parallelism's token exchange as operators of the global
 * graph (issue 27). The expert-parallel pass (parallel/ep_pass) puts them
 * around the experts of a MoE layer whose stacked weights are split by expert
 * over a mesh axis of G members; each lowers to its communicating form
 * (parallel/ep_ops), which runs the variable-count all-to-all along that axis.
 * Attributes (all three): i[0] G, i[1] E (experts; member o owns experts
 * [o E/G, (o+1) E/G)), i[2] the mesh axis; moe_ep_send's f[0]: a capacity
 * factor (0: dropless).
 *   moe_ep_send(xp[R, C], eid[R]) -> xr[G R, C], er[G R] i32, src[G R, 2] i32:
 *     the member's dispatched rows (grouped by expert, rows of no expert last)
 *     sent to their experts' owners; xr holds the rows the member's own
 *     experts received, grouped by expert and, within an expert, by source
 *     member and position (the tokens' order), er their experts (-1 past the
 *     received rows), src each row's source member and its position among the
 *     rows that source sent here ((-1, -1) past them). G R rows: room for
 *     every row of the group (dropless). With f[0] > 0 and two more inputs,
 *     scores[N, k] and rowof[N, k] (moe_route's slot scores, moe_dispatch's
 *     slot rows), each expert keeps at most ceil(N G k / E f) of the rows it
 *     got, the highest scores (ties: the earlier token) — the router's rule
 *     over the group's tokens; the dropped rows come after the kept ones,
 *     expert -1, and return as zeros. A fourth output drops[1] (optional):
 *     how many rows the member's experts dropped (a partial sum over the
 *     members; moe_aux adds it to the metrics' drops).
 *   moe_ep_return(yr[G R, O], src, eid[R]) -> yp[R, O]: the rows back to their
 *     sources, in the places of xp (rows of no expert: 0). send's gradient.
 *   moe_ep_resend(dyp[R, O], src, eid) -> dyr[G R, O]: yp's gradient taken
 *     the way xp went (rows past the received ones: 0). return's gradient.
 * Lowered (G > 1) each member's local form moves the rows. On the global
 * graph one process holds every member's rows (a one-rank run; validation
 * mode's reference): they stay in place, the kept rows first in xp's order,
 * then the ones a capacity dropped (id -1, no source: they return as zeros),
 * then the room the other members' rows would take; with a capacity factor
 * each expert keeps at most ceil(N k / E f) of all N tokens' rows, the rule
 * the owners apply to their group's rows when the group holds every token. */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/ops_util.h"

#define OI32(t) ((int32_t *)(t).data)

static hp_status attrs_check(const hp_node *n, const char *what) {
    long G = (long)n->a.i[0], E = (long)n->a.i[1];
    if (G < 1 || E < 1 || E % G)
        return SHAPE_ERR("%s: %ld experts over %ld members (each member owns E/G of them)", what, E, G);
    return HP_OK;
}

static hp_status send_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    HP_TRY(attrs_check(n, "moe_ep_send"));
    const hp_shape *x = in_shape(g, n, 0), *e = in_shape(g, n, 1);
    char b1[64], b2[64];
    if (x->ndim != 2 || g->vals[n->in[1]].dtype != HP_I32 || hp_shape_numel(e) != x->d[0])
        return SHAPE_ERR("moe_ep_send: rows %s and expert ids %s (expected [R, C] and i32 [R])",
                         hp_shape_str(b1, sizeof b1, x), hp_shape_str(b2, sizeof b2, e));
    if (n->nin != 2 && (n->nin != 4 || in_numel(g, n, 2) != x->d[0] || in_numel(g, n, 3) != x->d[0] ||
                        g->vals[n->in[2]].dtype != HP_F32 || g->vals[n->in[3]].dtype != HP_I32))
        return SHAPE_ERR("moe_ep_send: %d inputs (2: rows and ids; 4: with the slots' scores and rows, one per row)",
                         n->nin);
    int64_t R = x->d[0] * n->a.i[0];
    os[0] = hp_shape2(R, x->d[1]);
    os[1] = hp_shape1(R);
    os[2] = hp_shape2(R, 2);
    os[3] = hp_shape1(1); /* with a capacity, optional: the rows the member's experts dropped */
    od[0] = g->vals[n->in[0]].dtype, od[1] = od[2] = HP_I32, od[3] = HP_F32;
    return HP_OK;
}

/* (yr or dyp, src, eid): rows and the two index values agree */
static hp_status back_check(const hp_graph *g, const hp_node *n, const char *what, int64_t rows_in) {
    HP_TRY(attrs_check(n, what));
    const hp_shape *y = in_shape(g, n, 0), *s = in_shape(g, n, 1), *e = in_shape(g, n, 2);
    int64_t R = hp_shape_numel(e), G = n->a.i[0];
    char b1[64], b2[64];
    if (y->ndim != 2 || y->d[0] != rows_in || s->ndim != 2 || s->d[0] != G * R || s->d[1] != 2 ||
        g->vals[n->in[1]].dtype != HP_I32 || g->vals[n->in[2]].dtype != HP_I32)
        return SHAPE_ERR("%s: rows %s do not match the sources %s", what, hp_shape_str(b1, sizeof b1, y),
                         hp_shape_str(b2, sizeof b2, s));
    return HP_OK;
}

static hp_status return_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *y = in_shape(g, n, 0);
    int64_t R = in_numel(g, n, 2);
    HP_TRY(back_check(g, n, "moe_ep_return", R * n->a.i[0]));
    os[0] = hp_shape2(R, y->d[1]);
    od[0] = g->vals[n->in[0]].dtype;
    return HP_OK;
}

static hp_status resend_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *y = in_shape(g, n, 0);
    int64_t R = in_numel(g, n, 2);
    HP_TRY(back_check(g, n, "moe_ep_resend", R));
    os[0] = hp_shape2(R * n->a.i[0], y->d[1]);
    od[0] = g->vals[n->in[0]].dtype;
    return HP_OK;
}

static int capped(const hp_node *n) { return n->nin >= 4 && n->a.f[0] > 0; }

/* scratch: with a capacity, 4 per row (the rows' scores, the order being sorted and its merge buffer, keep) */
static size_t send_scratch(const hp_graph *g, const hp_node *n, int nt) {
    (void)nt;
    return capped(n) ? 4 * (size_t)in_numel(g, n, 1) : (size_t)in_numel(g, n, 1);
}

/* Sorts the rows t[0, m) the higher score first, then the earlier row; a merge through tmp[m]. */
static void by_score(int32_t *t, int32_t *tmp, long m, const float *score) {
    for (long w = 1; w < m; w *= 2) {
        for (long lo = 0; lo < m; lo += 2 * w) {
            long mid = lo + w < m ? lo + w : m, hi = lo + 2 * w < m ? lo + 2 * w : m, i = lo, j = mid, o = lo;
            while (i < mid && j < hi) {
                float a = score[t[i]], b = score[t[j]];
                tmp[o++] = b > a || (b == a && t[j] < t[i]) ? t[j++] : t[i++];
            }
            while (i < mid) tmp[o++] = t[i++];
            while (j < hi) tmp[o++] = t[j++];
        }
        memcpy(t, tmp, sizeof *t * (size_t)m);
    }
}

/* keep[r]: row r (of expert e[r] >= 0) is kept; a capacity keeps each expert's best ceil(N k / E f) rows.
 * scratch: send_scratch's. */
static void rows_kept(int32_t *keep, float *scratch, const hp_node *n, const hp_tensor *in, long R) {
    const int32_t *e = I32(in[1]);
    for (long r = 0; r < R; r++) keep[r] = e[r] >= 0;
    if (!capped(n)) return;
    float *score = scratch;
    int32_t *idx = (int32_t *)(void *)(scratch + R), *tmp = idx + R;
    const float *sc = CF32(in[2]);
    const int32_t *rowof = I32(in[3]);
    long slots = (long)hp_shape_numel(&in[3].shape);
    for (long r = 0; r < R; r++) score[r] = 0;
    for (long i = 0; i < slots; i++)
        if (rowof[i] >= 0 && rowof[i] < R) score[rowof[i]] = sc[i];
    long cap = (long)ceil((double)slots / (double)n->a.i[1] * n->a.f[0]);
    for (long b = 0; b < R;) { /* xp groups the rows by expert */
        long end = b;
        while (end < R && e[end] == e[b]) end++;
        if (e[b] >= 0 && end - b > cap) {
            for (long t = b; t < end; t++) idx[t - b] = (int32_t)t;
            by_score(idx, tmp, end - b, score);
            for (long i = cap; i < end - b; i++) keep[idx[i]] = 0;
        }
        b = end;
    }
}

static void send_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long R = t_rows(&in[0]), C = t_last(&in[0]), GR = t_rows(&out[0]);
    size_t rb = hp_dtype_size(in[0].dtype) * (size_t)C;
    const int32_t *e = I32(in[1]);
    int32_t *er = OI32(out[1]), *src = OI32(out[2]);
    int32_t *keep = (int32_t *)(void *)(k->scratch + (capped(n) ? 3 * R : 0));
    rows_kept(keep, k->scratch, n, in, R);
    const char *xp = in[0].data;
    char *xr = out[0].data;
    long w = 0;
    for (int pass = 0; pass < 2; pass++) /* the kept rows, then the dropped ones */
        for (long r = 0; r < R; r++) {
            if (e[r] < 0 || keep[r] != !pass) continue;
            if (!pass) memcpy(xr + rb * (size_t)w, xp + rb * (size_t)r, rb);
            else memset(xr + rb * (size_t)w, 0, rb);
            er[w] = pass ? -1 : e[r];
            src[2 * w] = pass ? -1 : 0, src[2 * w + 1] = pass ? -1 : (int32_t)r;
            w++;
        }
    memset(xr + rb * (size_t)w, 0, rb * (size_t)(GR - w));
    for (; w < GR; w++) er[w] = -1, src[2 * w] = src[2 * w + 1] = -1;
    if (n->nout > 3 && n->out[3] >= 0) { /* the rows the capacity dropped */
        long dropped = 0;
        for (long r = 0; r < R; r++) dropped += e[r] >= 0 && !keep[r];
        F32(out[3])[0] = (float)dropped;
    }
}

/* dst[pos of row r] = from[r] (return) or dst[r] = from[pos of row r] (resend); untouched rows 0 */
static void move_run(const hp_tensor *in, hp_tensor *out, int back) {
    long Rin = t_rows(&in[0]), O = t_last(&in[0]), Rout = t_rows(&out[0]);
    size_t rb = hp_dtype_size(in[0].dtype) * (size_t)O;
    const int32_t *src = I32(in[1]);
    char *dst = out[0].data;
    const char *from = in[0].data;
    memset(dst, 0, rb * (size_t)Rout);
    long R = back ? Rin : Rout;
    for (long r = 0; r < R; r++) {
        long p = src[2 * r + 1];
        if (src[2 * r] < 0 || p < 0 || p >= (back ? Rout : Rin)) continue;
        if (back) memcpy(dst + rb * (size_t)p, from + rb * (size_t)r, rb);
        else memcpy(dst + rb * (size_t)r, from + rb * (size_t)p, rb);
    }
}

static void return_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)k, (void)n;
    move_run(in, out, 1);
}

static void resend_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)k, (void)n;
    move_run(in, out, 0);
}

static void send_backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dx = grad_for(g, node, 0);
    if (dx < 0 || gout[0] < 0) return;
    const hp_node *n = &g->nodes[node];
    int in[3] = {gout[0], n->out[2], n->in[1]};
    emit_bwd(g, &hp_op_moe_ep_return, node, in, 3, &dx, 1);
    gin[0] = dx;
}

static void return_backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dy = grad_for(g, node, 0);
    if (dy < 0 || gout[0] < 0) return;
    const hp_node *n = &g->nodes[node];
    int in[3] = {gout[0], n->in[1], n->in[2]};
    emit_bwd(g, &hp_op_moe_ep_resend, node, in, 3, &dy, 1);
    gin[0] = dy;
}

const hp_opdef hp_op_moe_ep_send = {
    .name = "moe_ep_send", .nout = 3, .nograd_outs = 6, .infer = send_infer, .run = send_run,
    .scratch = send_scratch, .backward = send_backward, .bytes = hp_ops_io_bytes,
};
const hp_opdef hp_op_moe_ep_return = {
    .name = "moe_ep_return", .nout = 1, .infer = return_infer, .run = return_run, .backward = return_backward,
    .bytes = hp_ops_io_bytes,
};
const hp_opdef hp_op_moe_ep_resend = {
    .name = "moe_ep_resend", .nout = 1, .infer = resend_infer, .run = resend_run, .bytes = hp_ops_io_bytes,
};

hp_moe_role hp_op_moe_role(const hp_opdef *op) {
    if (op == &hp_op_moe_route) return HP_MOE_ROLE_ROUTE;
    if (op == &hp_op_moe_aux) return HP_MOE_ROLE_AUX;
    if (op == &hp_op_moe_dispatch) return HP_MOE_ROLE_DISPATCH;
    if (op == &hp_op_grouped_linear) return HP_MOE_ROLE_EXPERTS;
    if (op == &hp_op_swiglu) return HP_MOE_ROLE_GATED;
    if (op == &hp_op_moe_combine) return HP_MOE_ROLE_COMBINE;
    if (op == &hp_op_gelu || op == &hp_op_cast) return HP_MOE_ROLE_ROWWISE;
    if (op == &hp_op_moe_ep_send) return HP_MOE_ROLE_SEND;
    if (op == &hp_op_moe_ep_return) return HP_MOE_ROLE_RETURN;
    if (op == &hp_op_moe_ep_resend) return HP_MOE_ROLE_RESEND;
    return HP_MOE_ROLE_NONE;
}
