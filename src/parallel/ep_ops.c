/* parallel/ep_ops: the local, communicating forms of expert parallelism's
 * exchange (ops/moe_ep says what each computes): along mesh axis i[2] the G
 * members exchange first each expert's row count (an i32 all-to-all of E/G
 * counts per pair), then the rows, with the comm layer's variable-count
 * all-to-all (inside a supernode the receiver copies straight out of the
 * sender's buffer; across supernodes one message per pair of ranks). The
 * returning directions need no counts: a member knows from the expert ids
 * of its rows what comes back from each owner, and from the rows' sources
 * what it sends. Rows are put in place by plain copies, in an order fixed by
 * the routing, so the result is the same bits whatever the group's size.
 * Each comes whole (blocking) or, where the overlap pass split it, as a start
 * (the counts exchanged, the rows' all-to-all started on a request slot)
 * and a wait (the call waited, the rows put in place). */
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

/* The exchange's state, from the counts' exchange to the rows put in place: int64 [5 G] (send and receive counts
 * of the rows, of the scores, the packed offsets per source), int32 [2 E + G] (rows per expert, the received counts
 * [G][E/G], rows per source), then the rows moved (G R x the wider row), the received scores [G R] and the sent
 * ones [R]. The blocking forms keep it in their scratch; the split ones in the value their start makes and their
 * wait reads (the counts are the started calls' arguments: they must outlive the start). */
typedef struct {
    int64_t *scnt, *rcnt, *scnt2, *rcnt2, *start;
    int32_t *per_e, *mat, *per_src;
    char *raw;
    float *rscore, *sscore;
} ep_stage;

/* + a header of 8 int64 (16 floats) first: G, E, the rows, the widest row, C, for the rows' prepare step */
static size_t ints_floats(long G, long E) { return 16 + ((size_t)(10 * G + 2 * E + G) + 15) / 16 * 16; }

static long t_rows(const hp_tensor *t) { return (long)(hp_shape_numel(&t->shape) / t->shape.d[t->shape.ndim - 1]); }
static long t_last(const hp_tensor *t) { return (long)t->shape.d[t->shape.ndim - 1]; }

/* The most rows (at most G R) and the widest row (floats) of n's fp32/bf16 matrices, inputs and outputs. */
static void rows_wide(int64_t *rows, int64_t *wide, const hp_graph *g, const hp_node *n) {
    *rows = *wide = 0;
    for (int k = 0; k < n->nin + n->nout; k++) {
        int v = k < n->nin ? n->in[k] : n->out[k - n->nin];
        if (v < 0 || g->vals[v].dtype == HP_I32 || g->vals[v].shape.ndim != 2) continue;
        const hp_shape *s = &g->vals[v].shape;
        *rows = s->d[0] > *rows ? s->d[0] : *rows, *wide = s->d[1] > *wide ? s->d[1] : *wide;
    }
}

size_t hp_ep_stage_floats(long G, long E, int64_t rows, int64_t wide) {
    return ints_floats(G, E) + (size_t)(rows * wide + 2 * rows);
}

void hp_ep_rows_wide(int64_t *rows, int64_t *wide, const hp_graph *g, const hp_node *n) { rows_wide(rows, wide, g, n); }

static void stage_of(ep_stage *s, float *base, long G, long E, int64_t rows, int64_t wide) {
    int64_t *head = (int64_t *)(void *)base;
    head[0] = G, head[1] = E, head[2] = rows, head[3] = wide;
    s->scnt = head + 8;
    s->rcnt = s->scnt + G, s->scnt2 = s->rcnt + G, s->rcnt2 = s->scnt2 + G, s->start = s->rcnt2 + G;
    s->per_e = (int32_t *)(s->start + G);
    s->mat = s->per_e + E;
    s->per_src = s->mat + E;
    s->raw = (char *)(base + ints_floats(G, E));
    s->rscore = (float *)(void *)(s->raw + sizeof(float) * (size_t)(rows * wide));
    s->sscore = s->rscore + rows;
}

/* A blocking node's stage, in its scratch (its shapes give the sizes); a split one's, in the stage value (the
 * pass recorded the sizes in i[HP_EP_ROWS], i[HP_EP_WIDE]). */
static void stage_in_scratch(ep_stage *s, const hp_kctx *k, const hp_node *n) {
    int64_t rows, wide;
    rows_wide(&rows, &wide, k->graph, n);
    stage_of(s, k->scratch, (long)n->a.i[0], (long)n->a.i[1], rows, wide);
}

static void stage_at(ep_stage *s, float *base, const hp_node *n) {
    stage_of(s, base, (long)n->a.i[0], (long)n->a.i[1], n->a.i[HP_EP_ROWS], n->a.i[HP_EP_WIDE]);
}

static size_t stage_floats_of(const hp_graph *g, const hp_node *n) {
    int64_t rows, wide;
    rows_wide(&rows, &wide, g, n);
    return hp_ep_stage_floats((long)n->a.i[0], (long)n->a.i[1], rows, wide);
}

/* ep_send's order of the received rows (the wait's scratch, after the stage in the blocking form): 6 int32 per
 * row and a flag per row */
static size_t order_floats(int64_t rows) { return (size_t)(6 * rows + rows / 4 + 4); }

static size_t blocking_scratch(const hp_graph *g, const hp_node *n, int nt) {
    (void)nt;
    int64_t rows, wide;
    rows_wide(&rows, &wide, g, n);
    return stage_floats_of(g, n) + (n->op == &hp_op_ep_send ? order_floats(rows) : 0);
}

static size_t send_wait_scratch(const hp_graph *g, const hp_node *n, int nt) {
    (void)g, (void)nt;
    return order_floats(n->a.i[HP_EP_ROWS]);
}

/* per_e[e]: the rows of expert e among eid's R (rows of no expert last) */
static void count_experts(int32_t *per_e, const int32_t *eid, long R, long E) {
    memset(per_e, 0, sizeof *per_e * (size_t)E);
    for (long r = 0; r < R; r++)
        if (eid[r] >= 0 && eid[r] < E) per_e[eid[r]]++;
}

/* One all-to-all: count elements to and from every member, or per-member counts (scnt, rcnt); run to the end
 * (slot < 0), or started on the rank's request slot `slot` (the counts' arrays must stay valid until its wait, and
 * `prepare`, if given, runs on the lane right before the call begins). */
static hp_status a2a_call(const hp_kctx *k, const ep_group *q, int slot, void *recv, const void *send, int64_t count,
                          const int64_t *scnt, const int64_t *rcnt, hp_dtype dt, hp_status (*prepare)(void *),
                          void *pctx) {
    hp_rank_ctx *c = k->rank;
    hp_comm_tensor t = {recv, send, count};
    hp_comm_args a = {.kind = HP_COMM_ALL_TO_ALL, .dtype = dt, .nt = 1, .counts = scnt, .recv_counts = rcnt,
                      .prepare = prepare, .prepare_ctx = pctx};
    if (slot < 0) {
        a.t = &t;
        return hp_comm_run(c->comm, q->grp, &a);
    }
    if (slot >= c->nslots || c->reqs[slot])
        return hp_errorf("ep exchange: request slot %d of rank %d is %s", slot, c->rank,
                         slot >= c->nslots ? "not numbered" : "still in flight");
    c->tens[slot] = t;
    c->args[slot] = a;
    c->args[slot].t = &c->tens[slot];
    return hp_comm_start(&c->reqs[slot], c->comm, q->grp, &c->args[slot]);
}

static hp_status a2a(const hp_kctx *k, const ep_group *q, int slot, void *recv, const void *send,
                     const int64_t *scnt, const int64_t *rcnt, hp_dtype dt) {
    return a2a_call(k, q, slot, recv, send, 0, scnt, rcnt, dt, NULL, NULL);
}

/* Waits the requests on slots [slot, slot + n) (none started: nothing to wait). */
static hp_status wait_slots(const hp_kctx *k, int slot, int n) {
    hp_rank_ctx *c = k->rank;
    hp_status first = HP_OK;
    for (int s = slot; s < slot + n && s < c->nslots; s++) {
        if (!c->reqs[s]) continue;
        hp_status st = hp_comm_wait(c->reqs[s]);
        c->reqs[s] = NULL;
        if (st && !first) first = st;
        else if (st) hp_status_free(st);
    }
    return first;
}

static void fail(const hp_kctx *k, hp_status st) {
    if (!st) return;
    if (*k->err) hp_status_free(st);
    else *k->err = st;
}

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

static int capped_send(const hp_node *n, int nin) { return nin >= 4 && n->a.f[0] > 0; }

/* The rows' prepare step, on the lane once each expert's row count came: what each member sends this one, in
 * elements (rcnt) and rows (rcnt2). ctx: the stage. */
static hp_status send_counts_arrived(void *ctx) {
    const int64_t *head = ctx;
    ep_stage s;
    stage_of(&s, ctx, (long)head[0], (long)head[1], head[2], head[3]);
    long G = (long)head[0], El = (long)head[1] / G;
    int64_t C = head[4];
    for (long o = 0; o < G; o++) {
        int64_t got = 0;
        for (long j = 0; j < El; j++) got += s.mat[o * El + j];
        s.rcnt[o] = got * C, s.rcnt2[o] = got;
    }
    return HP_OK;
}

/* ep_send's first half, in (xp[R, C], eid[R][, scores[N, k], rowof[N, k]]): each expert's row count, then the rows
 * (their receive counts filled from those by the call's prepare step, right before it begins), and with a capacity
 * the slots' scores (each expert's owner drops past its capacity) — run to the end (slot < 0) or started in turn on
 * the group's lane (which runs them in order; slots slot .. slot + 2), nothing waited. stage: s's base. */
static hp_status send_begin(const hp_kctx *k, const hp_node *n, const hp_tensor *in, int nin, const ep_group *q,
                            ep_stage *s, float *stage, int slot) {
    long R = t_rows(&in[0]), C = t_last(&in[0]);
    ((int64_t *)(void *)stage)[4] = C;
    count_experts(s->per_e, I32C(in[1]), R, q->E);
    for (int o = 0; o < q->G; o++) {
        int64_t sent = 0;
        for (long j = 0; j < q->El; j++) sent += s->per_e[o * q->El + j];
        s->scnt[o] = sent * C, s->scnt2[o] = sent;
    }
    HP_TRY(a2a_call(k, q, slot, s->mat, s->per_e, q->El, NULL, NULL, HP_I32, NULL, NULL)); /* mat[src][my expert] */
    HP_TRY(a2a_call(k, q, slot < 0 ? -1 : slot + 1, s->raw, in[0].data, 0, s->scnt, s->rcnt, in[0].dtype,
                    send_counts_arrived, stage));
    if (!capped_send(n, nin)) return HP_OK;
    const float *sc = CF32(in[2]);
    const int32_t *rowof = I32C(in[3]);
    long slots = (long)hp_shape_numel(&in[3].shape);
    for (long i = 0; i < slots; i++)
        if (rowof[i] >= 0 && rowof[i] < R) s->sscore[rowof[i]] = sc[i];
    return a2a(k, q, slot < 0 ? -1 : slot + 2, s->rscore, s->sscore, s->scnt2, s->rcnt2, HP_F32);
}

/* ep_send's second half: the received rows in order -> (xr[G R, C], er[G R], src[G R, 2]); with a capacity factor
 * f[0] > 0, each own expert keeps at most ceil(N G k / E x f) of the rows the group sent it, the highest scores
 * (ties: the earlier token), its dropped rows flagged -1 after the kept ones. order: the scratch of
 * order_floats. */
static void send_finish(const hp_kctx *k, const hp_node *n, const hp_tensor *in, int nin, hp_tensor *out,
                        const ep_group *q, const ep_stage *s, float *order) {
    long C = t_last(&in[0]), GR = t_rows(&out[0]), total = 0;
    size_t rb = hp_dtype_size(in[0].dtype) * (size_t)C;
    for (int o = 0; o < q->G; o++) total += (long)(s->rcnt[o] / C);
    if (total > GR) {
        fail(k, hp_errorf("moe_ep_send: member %d receives %ld rows, room for %ld", q->me, total, GR));
        return;
    }
    /* the order: for each own expert, each source's run of it, in the source's order */
    int32_t *ord = (int32_t *)(void *)order, *srcm = ord + GR, *pos = srcm + GR, *ex = pos + GR;
    int32_t *idx = ex + GR, *tmpi = idx + GR;
    unsigned char *keep = (unsigned char *)(tmpi + GR);
    long r = 0;
    for (long j = 0; j < q->El; j++) {
        long at = 0; /* row offset of source o's block in raw */
        for (int o = 0; o < q->G; o++) {
            long before = 0; /* rows of o's block before expert j's run */
            for (long i = 0; i < j; i++) before += s->mat[o * q->El + i];
            long cnt = s->mat[o * q->El + j];
            for (long t = 0; t < cnt; t++, r++)
                ord[r] = (int32_t)(at + before + t), srcm[r] = o, pos[r] = (int32_t)(before + t), ex[r] = (int32_t)j;
            at += (long)(s->rcnt[o] / C);
        }
    }
    memset(keep, 1, (size_t)total);
    if (capped_send(n, nin)) {
        long slots = (long)hp_shape_numel(&in[3].shape), K = t_last(&in[3]), N = slots / K;
        long cap = (long)ceil((double)N * (double)q->G * (double)K / (double)q->E * n->a.f[0]);
        for (long b = 0; b < total;) {
            long e = b;
            while (e < total && ex[e] == ex[b]) e++;
            if (e - b > cap) {
                for (long t = b; t < e; t++) idx[t - b] = (int32_t)t;
                sort_capacity(idx, tmpi, e - b, s->rscore, ord); /* scores in raw order, read through ord */
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
            if (!pass) memcpy(xr + rb * (size_t)w, s->raw + rb * (size_t)ord[t], rb);
            else memset(xr + rb * (size_t)w, 0, rb);
            er[w] = pass ? -1 : (int32_t)(q->me * q->El + ex[t]);
            src[2 * w] = srcm[t], src[2 * w + 1] = pos[t];
            w++;
        }
    if (n->nout > 3 && n->out[3] >= 0) { /* the rows this member's experts dropped (a partial sum over members) */
        long dropped = 0;
        for (long t = 0; t < total; t++) dropped += !keep[t];
        ((float *)out[3].data)[0] = (float)dropped;
    }
    memset(xr + rb * (size_t)w, 0, rb * (size_t)(GR - w));
    for (; w < GR; w++) er[w] = -1, src[2 * w] = src[2 * w + 1] = -1;
}

/* in (xp[R, C], eid[R][, scores[N, k], rowof[N, k]]) -> (xr[G R, C], er[G R], src[G R, 2]): blocking */
static void send_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    ep_group q;
    if (!group_of(&q, k, n)) return;
    ep_stage s;
    stage_in_scratch(&s, k, n);
    hp_status st = send_begin(k, n, in, n->nin, &q, &s, k->scratch, -1);
    if (st) return fail(k, st);
    send_finish(k, n, in, n->nin, out, &q, &s, k->scratch + stage_floats_of(k->graph, n));
}

/* in (xp, eid[, scores, rowof]) -> stage: the counts' and the rows' all-to-alls started on slots i[3] ... */
static void send_start_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    ep_group q;
    if (!group_of(&q, k, n)) return;
    ep_stage s;
    stage_at(&s, out[0].data, n);
    fail(k, send_begin(k, n, in, n->nin, &q, &s, out[0].data, (int)n->a.i[HP_EP_SLOT]));
}

/* in (stage, xp, eid[, scores, rowof]) -> (xr, er, src): the all-to-all waited, the rows put in order (xp is read
 * by the peers until then: an input, so that it stays) */
static void send_wait_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    ep_group q;
    if (!group_of(&q, k, n)) return;
    hp_status st = wait_slots(k, (int)n->a.i[HP_EP_SLOT], HP_EP_SEND_SLOTS);
    if (st) return fail(k, st);
    ep_stage s;
    stage_at(&s, in[0].data, n);
    send_finish(k, n, in + 1, n->nin - 1, out, &q, &s, k->scratch);
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
static long return_counts(ep_stage *s, const ep_group *q, const int32_t *src, long GR, const int32_t *eid, long R,
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

/* ep_return's first half, in (yr[G R, O], src, eid[R]) -> yp[R, O]: each source's rows packed by source, the
 * all-to-all into yp run (slot < 0) or started */
static hp_status return_begin(const hp_kctx *k, const hp_tensor *in, hp_tensor *yp, const ep_group *q, ep_stage *s,
                              int slot) {
    long GR = t_rows(&in[0]), O = t_last(&in[0]), R = t_rows(yp);
    size_t rb = hp_dtype_size(in[0].dtype) * (size_t)O;
    const int32_t *src = I32C(in[1]);
    long own = return_counts(s, q, src, GR, I32C(in[2]), R, O, 1);
    /* packed by source, each source's rows at their positions there */
    const char *yr = in[0].data;
    for (long r = 0; r < GR; r++)
        if (src[2 * r] >= 0 && src[2 * r] < q->G)
            memcpy(s->raw + rb * (size_t)(s->start[src[2 * r]] + src[2 * r + 1]), yr + rb * (size_t)r, rb);
    memset((char *)yp->data + rb * (size_t)own, 0, rb * (size_t)(R - own)); /* rows the call does not write */
    return a2a(k, q, slot, yp->data, s->raw, s->scnt, s->rcnt, in[0].dtype);
}

/* in (yr[G R, O], src, eid[R]) -> yp[R, O]: blocking */
static void return_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    ep_group q;
    if (!group_of(&q, k, n)) return;
    ep_stage s;
    stage_in_scratch(&s, k, n);
    fail(k, return_begin(k, in, &out[0], &q, &s, -1));
}

/* in (yr, src, eid) -> (yp, stage): started on slot i[3]; yp is not ready before the wait */
static void return_start_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    ep_group q;
    if (!group_of(&q, k, n)) return;
    ep_stage s;
    stage_at(&s, out[1].data, n);
    fail(k, return_begin(k, in, &out[0], &q, &s, (int)n->a.i[HP_EP_SLOT]));
}

/* in (stage, yp): the all-to-all waited (yp then holds the rows back) */
static void return_wait_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)in, (void)out;
    fail(k, wait_slots(k, (int)n->a.i[HP_EP_SLOT], 1));
}

/* ep_resend's halves, in (dyp[R, O], src, eid) -> dyr[G R, O]: the counts known, dyp sent to the owners (run or
 * started), then each received row put at its place */
static hp_status resend_begin(const hp_kctx *k, const hp_tensor *in, long GR, const ep_group *q, ep_stage *s,
                              int slot) {
    long R = t_rows(&in[0]), O = t_last(&in[0]);
    return_counts(s, q, I32C(in[1]), GR, I32C(in[2]), R, O, 0);
    return a2a(k, q, slot, s->raw, in[0].data, s->scnt, s->rcnt, in[0].dtype);
}

static void resend_finish(const hp_tensor *in, hp_tensor *out, const ep_group *q, const ep_stage *s) {
    long GR = t_rows(&out[0]), O = t_last(&in[0]);
    size_t rb = hp_dtype_size(in[0].dtype) * (size_t)O;
    const int32_t *src = I32C(in[1]);
    char *dy = out[0].data;
    for (long r = 0; r < GR; r++) {
        if (src[2 * r] >= 0 && src[2 * r] < q->G)
            memcpy(dy + rb * (size_t)r, s->raw + rb * (size_t)(s->start[src[2 * r]] + src[2 * r + 1]), rb);
        else memset(dy + rb * (size_t)r, 0, rb);
    }
}

static void resend_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    ep_group q;
    if (!group_of(&q, k, n)) return;
    ep_stage s;
    stage_in_scratch(&s, k, n);
    hp_status st = resend_begin(k, in, t_rows(&out[0]), &q, &s, -1);
    if (st) return fail(k, st);
    resend_finish(in, out, &q, &s);
}

/* in (dyp, src, eid) -> stage */
static void resend_start_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    ep_group q;
    if (!group_of(&q, k, n)) return;
    ep_stage s;
    stage_at(&s, out[0].data, n);
    fail(k, resend_begin(k, in, (long)n->a.i[HP_EP_ROWS], &q, &s, (int)n->a.i[HP_EP_SLOT]));
}

/* in (stage, dyp, src, eid) -> dyr (dyp is read by the owners until the wait) */
static void resend_wait_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    ep_group q;
    if (!group_of(&q, k, n)) return;
    hp_status st = wait_slots(k, (int)n->a.i[HP_EP_SLOT], 1);
    if (st) return fail(k, st);
    ep_stage s;
    stage_at(&s, in[0].data, n);
    resend_finish(in + 1, out, &q, &s);
}

/* What a member sends per call under a balanced routing (the routing decides the real count): its token-side
 * rows (send and resend: the input; return: the output; a wait: its start's, its input 1) less the 1/G that stay
 * with it. */
static double ep_bytes(const hp_graph *g, const hp_node *n) {
    int wait = n->op == &hp_op_ep_send_wait || n->op == &hp_op_ep_return_wait || n->op == &hp_op_ep_resend_wait;
    int out = n->op == &hp_op_ep_return || n->op == &hp_op_ep_return_start;
    const hp_value *v = &g->vals[wait ? n->in[1] : out ? n->out[0] : n->in[0]];
    double G = (double)(n->a.i[0] > 0 ? n->a.i[0] : 1);
    return (double)hp_shape_numel(&v->shape) * (double)hp_dtype_size(v->dtype) * (G - 1) / G;
}

static void describe_as(hp_coll_desc *d, const hp_graph *g, const hp_node *n, hp_coll_role role) {
    memset(d, 0, sizeof *d);
    d->kind = HP_COLL_ALL_TO_ALL;
    d->role = role;
    d->group = HP_COLL_GROUP_AXIS;
    d->axis = (int)n->a.i[2];
    d->plan = d->unit = d->peer = d->pair_key = -1;
    d->pair = HP_COLL_PAIR_NONE;
    if (role != HP_COLL_BLOCKING) d->pair = HP_COLL_PAIR_SLOT, d->pair_key = (int)n->a.i[HP_EP_SLOT];
    d->bytes = ep_bytes(g, n);
    d->check = HP_COLL_CHECK_NONE;
    d->purpose = "expert parallelism";
}

static void ep_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) { describe_as(d, g, n, HP_COLL_BLOCKING); }
static void start_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) { describe_as(d, g, n, HP_COLL_START); }
static void wait_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) { describe_as(d, g, n, HP_COLL_WAIT); }

const hp_opdef hp_op_ep_send = {.name = "ep_send", .nout = 3, .communicates = 1, .run = send_run,
                                .scratch = blocking_scratch, .bytes = ep_bytes, .describe = ep_describe};
const hp_opdef hp_op_ep_return = {.name = "ep_return", .nout = 1, .communicates = 1, .run = return_run,
                                  .scratch = blocking_scratch, .bytes = ep_bytes, .describe = ep_describe};
const hp_opdef hp_op_ep_resend = {.name = "ep_resend", .nout = 1, .communicates = 1, .run = resend_run,
                                  .scratch = blocking_scratch, .bytes = ep_bytes, .describe = ep_describe};
const hp_opdef hp_op_ep_send_start = {.name = "ep_send_start", .nout = 1, .communicates = 1, .run = send_start_run,
                                      .bytes = ep_bytes, .describe = start_describe};
const hp_opdef hp_op_ep_send_wait = {.name = "ep_send_wait", .nout = 3, .communicates = 1, .run = send_wait_run,
                                     .scratch = send_wait_scratch, .describe = wait_describe};
const hp_opdef hp_op_ep_return_start = {.name = "ep_return_start", .nout = 2, .communicates = 1,
                                        .run = return_start_run, .bytes = ep_bytes, .describe = start_describe};
const hp_opdef hp_op_ep_return_wait = {.name = "ep_return_wait", .communicates = 1, .run = return_wait_run,
                                       .describe = wait_describe};
const hp_opdef hp_op_ep_resend_start = {.name = "ep_resend_start", .nout = 1, .communicates = 1,
                                        .run = resend_start_run, .bytes = ep_bytes, .describe = start_describe};
const hp_opdef hp_op_ep_resend_wait = {.name = "ep_resend_wait", .nout = 1, .communicates = 1,
                                       .run = resend_wait_run, .describe = wait_describe};

hp_ep_x hp_ep_exchange_of(const hp_opdef *op) {
    if (op == &hp_op_ep_send) return HP_EP_X_SEND;
    if (op == &hp_op_ep_return) return HP_EP_X_RETURN;
    if (op == &hp_op_ep_resend) return HP_EP_X_RESEND;
    if (op == &hp_op_ep_return_start) return HP_EP_X_RETURN_START;
    if (op == &hp_op_ep_send_start || op == &hp_op_ep_send_wait || op == &hp_op_ep_return_wait ||
        op == &hp_op_ep_resend_start || op == &hp_op_ep_resend_wait)
        return HP_EP_X_OTHER;
    return HP_EP_X_NONE;
}

void hp_ep_split_ops(const hp_opdef **start, const hp_opdef **wait, const hp_opdef *blocking) {
    hp_ep_x x = hp_ep_exchange_of(blocking);
    *start = x == HP_EP_X_SEND ? &hp_op_ep_send_start : x == HP_EP_X_RETURN ? &hp_op_ep_return_start
                                                                           : &hp_op_ep_resend_start;
    *wait = x == HP_EP_X_SEND ? &hp_op_ep_send_wait : x == HP_EP_X_RETURN ? &hp_op_ep_return_wait
                                                                         : &hp_op_ep_resend_wait;
}
