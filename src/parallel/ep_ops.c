/* parallel/ep_ops: the local, communicating forms of expert parallelism's
 * exchange (ops/moe_ep says what each computes): along mesh axis i[2] the G
 * members exchange first each expert's row count (an i32 all-to-all of E/G
 * counts per pair), then the rows, with the comm layer's variable-count
 * all-to-all (inside a supernode the receiver copies straight out of the
 * sender's buffer; across supernodes one message per pair of ranks). The
 * returning directions need no counts: a member knows from the expert ids
 * of its rows what comes back from each owner, and from the rows' sources
 * what it sends. Rows are put in place by plain copies, in an order fixed by
 * the routing, so the result is the same bits whatever the group's size. */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "parallel/ep.h"
#include "parallel/rank.h"

#define I32C(t) ((const int32_t *)(t).data)
#define I32W(t) ((int32_t *)(t).data)
#define CF32(t) ((const float *)(t).data)

typedef struct {
    hp_comm_group *grp;
    int G, me;
    long E, El;
} ep_group;

static int group_of(ep_group *q, const hp_kctx *k, const hp_node *n) {
    hp_rank_ctx *c = k->rank;
    q->G = (int)n->a.i[0], q->E = (long)n->a.i[1], q->El = q->E / q->G;
    q->grp = c ? hp_mesh_comm_group(c->mc, (int)n->a.i[2], c->rank) : NULL;
    if (!q->grp || hp_comm_group_size(q->grp) != q->G) {
        if (!*k->err)
            *k->err = hp_errorf("%s: rank %d has no group of %d members along mesh axis %lld", n->op->name,
                                c ? c->rank : -1, q->G, (long long)n->a.i[2]);
        return 0;
    }
    q->me = hp_comm_group_index(q->grp, c->rank);
    return 1;
}

/* The scratch: int64 [3 G] (send and receive counts, packed offsets per source), int32 [2 E + G] (rows per
 * expert, the received counts [G][E/G], rows per source), then the rows moved (G R x the wider row). */
typedef struct {
    int64_t *scnt, *rcnt, *start;
    int32_t *per_e, *mat, *per_src;
    char *raw;
} ep_scratch;

static size_t ints_floats(long G, long E) { return ((size_t)(6 * G + 2 * E + G) + 15) / 16 * 16; }

static void scratch_of(ep_scratch *s, const hp_kctx *k, long G, long E) {
    s->scnt = (int64_t *)k->scratch;
    s->rcnt = s->scnt + G;
    s->start = s->rcnt + G;
    s->per_e = (int32_t *)(s->start + G);
    s->mat = s->per_e + E;
    s->per_src = s->mat + E;
    s->raw = (char *)(k->scratch + ints_floats(G, E));
}

static long t_rows(const hp_tensor *t) { return (long)(hp_shape_numel(&t->shape) / t->shape.d[t->shape.ndim - 1]); }
static long t_last(const hp_tensor *t) { return (long)t->shape.d[t->shape.ndim - 1]; }

static size_t ep_scratch_size(const hp_graph *g, const hp_node *n, int nt) {
    (void)nt;
    long G = (long)n->a.i[0], E = (long)n->a.i[1];
    int64_t rows = 0, wide = 0;
    for (int k = 0; k < n->nin; k++) {
        const hp_shape *s = &g->vals[n->in[k]].shape;
        if (g->vals[n->in[k]].dtype == HP_I32 || s->ndim != 2) continue;
        rows = s->d[0] > rows ? s->d[0] : rows, wide = s->d[1] > wide ? s->d[1] : wide;
    }
    const hp_shape *o = &g->vals[n->out[0]].shape;
    if (o->ndim == 2) rows = o->d[0] > rows ? o->d[0] : rows, wide = o->d[1] > wide ? o->d[1] : wide;
    /* + ep_send's order: 6 int32 and a score per received row, a score per sent row, a flag per row */
    return ints_floats(G, E) + (size_t)(rows * wide) + (size_t)(8 * rows + rows / 4 + 4); /* rows: at most G R */
}

/* per_e[e]: the rows of expert e among eid's R (rows of no expert last) */
static void count_experts(int32_t *per_e, const int32_t *eid, long R, long E) {
    memset(per_e, 0, sizeof *per_e * (size_t)E);
    for (long r = 0; r < R; r++)
        if (eid[r] >= 0 && eid[r] < E) per_e[eid[r]]++;
}

static hp_status a2a(hp_comm_rank *cr, hp_comm_group *grp, void *recv, const void *send, const int64_t *scnt,
                     const int64_t *rcnt, hp_dtype dt) {
    hp_comm_tensor t = {recv, send, 0};
    hp_comm_args a = {.kind = HP_COMM_ALL_TO_ALL, .dtype = dt, .nt = 1, .t = &t, .counts = scnt, .recv_counts = rcnt};
    return hp_comm_run(cr, grp, &a);
}

static void fail(const hp_kctx *k, hp_status st) {
    if (!st) return;
    if (*k->err) hp_status_free(st);
    else *k->err = st;
}

/* in (xp[R, C], eid[R]) -> (xr[G R, C], er[G R], src[G R, 2]) */
/* Sorts the positions t[0, m) by a capacity's order: the higher score[ord[t]] first, then the earlier position
 * (the earlier token); a merge sort through tmp[m] (stable, no allocation). */
static int before_in(const float *score, const int32_t *ord, int32_t a, int32_t b) {
    float x = score[ord[a]], y = score[ord[b]];
    return x != y ? x > y : a < b;
}

static void sort_capacity(int32_t *t, int32_t *tmp, long m, const float *score, const int32_t *ord) {
    for (long w = 1; w < m; w *= 2) {
        for (long lo = 0; lo < m; lo += 2 * w) {
            long mid = lo + w < m ? lo + w : m, hi = lo + 2 * w < m ? lo + 2 * w : m, i = lo, j = mid, o = lo;
            while (i < mid && j < hi) tmp[o++] = before_in(score, ord, t[j], t[i]) ? t[j++] : t[i++];
            while (i < mid) tmp[o++] = t[i++];
            while (j < hi) tmp[o++] = t[j++];
        }
        memcpy(t, tmp, sizeof *t * (size_t)m);
    }
}

/* in (xp[R, C], eid[R][, scores[N, k], rowof[N, k]]) -> (xr[G R, C], er[G R], src[G R, 2]); with a capacity
 * factor f[0] > 0 (and the slots' scores), each own expert keeps at most ceil(N G k / E x f) of the rows the
 * group sent it, the highest scores (ties: the earlier token), its dropped rows flagged -1 after the kept ones */
static void send_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    ep_group q;
    if (!group_of(&q, k, n)) return;
    hp_rank_ctx *c = k->rank;
    ep_scratch s;
    scratch_of(&s, k, q.G, q.E);
    long R = t_rows(&in[0]), C = t_last(&in[0]), GR = t_rows(&out[0]);
    size_t rb = hp_dtype_size(in[0].dtype) * (size_t)C;
    int capped = n->nin >= 4 && n->a.f[0] > 0;
    const int32_t *eid = I32C(in[1]);
    count_experts(s.per_e, eid, R, q.E);
    for (int o = 0; o < q.G; o++) s.scnt[o] = s.rcnt[o] = q.El;
    hp_status st = a2a(c->comm, q.grp, s.mat, s.per_e, s.scnt, s.rcnt, HP_I32); /* mat[src][my expert] */
    if (st) return fail(k, st);
    long total = 0;
    for (int o = 0; o < q.G; o++) {
        int64_t sent = 0, got = 0;
        for (long j = 0; j < q.El; j++) sent += s.per_e[o * q.El + j], got += s.mat[o * q.El + j];
        s.scnt[o] = sent * C, s.rcnt[o] = got * C, total += got;
    }
    if (total > GR) {
        fail(k, hp_errorf("moe_ep_send: member %d receives %ld rows, room for %ld", q.me, total, GR));
        return;
    }
    st = a2a(c->comm, q.grp, s.raw, in[0].data, s.scnt, s.rcnt, in[0].dtype);
    if (st) return fail(k, st);
    /* the order: for each own expert, each source's run of it, in the source's order */
    int32_t *ord = (int32_t *)(void *)(s.raw + rb * (size_t)GR), *srcm = ord + GR, *pos = srcm + GR, *ex = pos + GR;
    int32_t *idx = ex + GR, *tmpi = idx + GR;
    float *rscore = (float *)(tmpi + GR), *sscore = rscore + GR;
    unsigned char *keep = (unsigned char *)(sscore + R);
    long r = 0;
    for (long j = 0; j < q.El; j++) {
        long at = 0; /* row offset of source o's block in raw */
        for (int o = 0; o < q.G; o++) {
            long before = 0; /* rows of o's block before expert j's run */
            for (long i = 0; i < j; i++) before += s.mat[o * q.El + i];
            long cnt = s.mat[o * q.El + j];
            for (long t = 0; t < cnt; t++, r++)
                ord[r] = (int32_t)(at + before + t), srcm[r] = o, pos[r] = (int32_t)(before + t), ex[r] = (int32_t)j;
            at += (long)(s.rcnt[o] / C);
        }
    }
    memset(keep, 1, (size_t)total);
    if (capped) { /* the slots' scores follow their rows; each expert's owner drops past its capacity */
        const float *sc = CF32(in[2]);
        const int32_t *rowof = I32C(in[3]);
        long slots = (long)hp_shape_numel(&in[3].shape), K = t_last(&in[3]), N = slots / K;
        for (long i = 0; i < slots; i++)
            if (rowof[i] >= 0 && rowof[i] < R) sscore[rowof[i]] = sc[i];
        for (int o = 0; o < q.G; o++) s.scnt[o] /= C, s.rcnt[o] /= C;
        float *rs_raw = rscore; /* received in raw order, then read through ord */
        st = a2a(c->comm, q.grp, rs_raw, sscore, s.scnt, s.rcnt, HP_F32);
        if (st) return fail(k, st);
        long cap = (long)ceil((double)N * (double)q.G * (double)K / (double)q.E * n->a.f[0]);
        for (long b = 0; b < total;) {
            long e = b;
            while (e < total && ex[e] == ex[b]) e++;
            if (e - b > cap) {
                for (long t = b; t < e; t++) idx[t - b] = (int32_t)t;
                sort_capacity(idx, tmpi, e - b, rs_raw, ord);
                for (long i = cap; i < e - b; i++) keep[idx[i]] = 0;
            }
            b = e;
        }
    }
    char *xr = out[0].data;
    int32_t *er = I32W(out[1]), *src = I32W(out[2]);
    long w = 0;
    for (int pass = 0; pass < 2; pass++) /* the kept rows, then the dropped ones (-1: no expert) */
        for (long t = 0; t < total; t++) {
            if (keep[t] != !pass) continue;
            if (!pass) memcpy(xr + rb * (size_t)w, s.raw + rb * (size_t)ord[t], rb);
            else memset(xr + rb * (size_t)w, 0, rb);
            er[w] = pass ? -1 : (int32_t)(q.me * q.El + ex[t]);
            src[2 * w] = srcm[t], src[2 * w + 1] = pos[t];
            w++;
        }
    memset(xr + rb * (size_t)w, 0, rb * (size_t)(GR - w));
    for (; w < GR; w++) er[w] = -1, src[2 * w] = src[2 * w + 1] = -1;
}

/* per_src[o]: the rows among the received that came from member o (src's first column) */
static long count_sources(int32_t *per_src, const int32_t *src, long GR, int G) {
    memset(per_src, 0, sizeof *per_src * (size_t)G);
    long total = 0;
    for (long r = 0; r < GR; r++)
        if (src[2 * r] >= 0 && src[2 * r] < G) per_src[src[2 * r]]++, total++;
    return total;
}

/* The returning directions' counts, known without an exchange: rows per owner from the member's own expert ids
 * (what went to each owner), rows per source from the received rows' sources, each source's offset in a buffer
 * packed by source (s->start); elements of O each into s->scnt / s->rcnt — back (return): to each source, from
 * each owner; else (resend): to each owner, from each source. Returns the member's own rows that went out. */
static long return_counts(ep_scratch *s, const ep_group *q, const int32_t *src, long GR, const int32_t *eid, long R,
                          long O, int back) {
    count_sources(s->per_src, src, GR, q->G);
    count_experts(s->per_e, eid, R, q->E);
    long own = 0;
    int64_t at = 0;
    for (int o = 0; o < q->G; o++) {
        int64_t to_owner = 0;
        for (long j = 0; j < q->El; j++) to_owner += s->per_e[o * q->El + j];
        int64_t *by_source = back ? s->scnt : s->rcnt, *by_owner = back ? s->rcnt : s->scnt;
        by_source[o] = (int64_t)s->per_src[o] * O, by_owner[o] = to_owner * O, own += (long)to_owner;
        s->start[o] = at, at += s->per_src[o];
    }
    return own;
}

/* in (yr[G R, O], src, eid[R]) -> yp[R, O] */
static void return_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    ep_group q;
    if (!group_of(&q, k, n)) return;
    ep_scratch s;
    scratch_of(&s, k, q.G, q.E);
    long GR = t_rows(&in[0]), O = t_last(&in[0]), R = t_rows(&out[0]);
    size_t rb = hp_dtype_size(in[0].dtype) * (size_t)O;
    const int32_t *src = I32C(in[1]);
    long own = return_counts(&s, &q, src, GR, I32C(in[2]), R, O, 1);
    /* packed by source, each source's rows at their positions there */
    const char *yr = in[0].data;
    for (long r = 0; r < GR; r++)
        if (src[2 * r] >= 0 && src[2 * r] < q.G)
            memcpy(s.raw + rb * (size_t)(s.start[src[2 * r]] + src[2 * r + 1]), yr + rb * (size_t)r, rb);
    hp_status st = a2a(((hp_rank_ctx *)k->rank)->comm, q.grp, out[0].data, s.raw, s.scnt, s.rcnt, in[0].dtype);
    if (st) return fail(k, st);
    memset((char *)out[0].data + rb * (size_t)own, 0, rb * (size_t)(R - own));
}

/* in (dyp[R, O], src, eid) -> dyr[G R, O] */
static void resend_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    ep_group q;
    if (!group_of(&q, k, n)) return;
    ep_scratch s;
    scratch_of(&s, k, q.G, q.E);
    long R = t_rows(&in[0]), O = t_last(&in[0]), GR = t_rows(&out[0]);
    size_t rb = hp_dtype_size(in[0].dtype) * (size_t)O;
    const int32_t *src = I32C(in[1]);
    return_counts(&s, &q, src, GR, I32C(in[2]), R, O, 0);
    hp_status st = a2a(((hp_rank_ctx *)k->rank)->comm, q.grp, s.raw, in[0].data, s.scnt, s.rcnt, in[0].dtype);
    if (st) return fail(k, st);
    char *dy = out[0].data;
    for (long r = 0; r < GR; r++) {
        if (src[2 * r] >= 0 && src[2 * r] < q.G)
            memcpy(dy + rb * (size_t)r, s.raw + rb * (size_t)(s.start[src[2 * r]] + src[2 * r + 1]), rb);
        else memset(dy + rb * (size_t)r, 0, rb);
    }
}

/* What a member sends per call under a balanced routing (the routing decides the real count): its token-side
 * rows (send and resend: the input; return: the output) less the 1/G that stay with it. */
static double ep_bytes(const hp_graph *g, const hp_node *n) {
    const hp_value *v = &g->vals[n->op == &hp_op_ep_return ? n->out[0] : n->in[0]];
    double G = (double)(n->a.i[0] > 0 ? n->a.i[0] : 1);
    return (double)hp_shape_numel(&v->shape) * (double)hp_dtype_size(v->dtype) * (G - 1) / G;
}

static void ep_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    memset(d, 0, sizeof *d);
    d->kind = HP_COLL_ALL_TO_ALL;
    d->role = HP_COLL_BLOCKING;
    d->group = HP_COLL_GROUP_AXIS;
    d->axis = (int)n->a.i[2];
    d->plan = d->unit = d->peer = d->pair_key = -1;
    d->pair = HP_COLL_PAIR_NONE;
    d->bytes = ep_bytes(g, n);
    d->check = HP_COLL_CHECK_NONE;
    d->purpose = "expert parallelism";
}

const hp_opdef hp_op_ep_send = {.name = "ep_send", .nout = 3, .communicates = 1, .run = send_run,
                                .scratch = ep_scratch_size, .bytes = ep_bytes, .describe = ep_describe};
const hp_opdef hp_op_ep_return = {.name = "ep_return", .nout = 1, .communicates = 1, .run = return_run,
                                  .scratch = ep_scratch_size, .bytes = ep_bytes, .describe = ep_describe};
const hp_opdef hp_op_ep_resend = {.name = "ep_resend", .nout = 1, .communicates = 1, .run = resend_run,
                                  .scratch = ep_scratch_size, .bytes = ep_bytes, .describe = ep_describe};
