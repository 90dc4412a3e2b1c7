/* comm/coll: the collectives' entry (hp_comm_exec: checks a call and runs
 * it) and broadcast. Inside a supernode every rank publishes its
 * buffer pointers in its slot, meets its peers at a barrier, and then reads
 * the peers' buffers directly (zero-copy); a second barrier tells it that
 * nobody reads its buffers any more. Between supernodes the partial results
 * move as one message per (source, destination) rank pair and call (every
 * fused tensor of the call packed into it). When the ranks of a supernode
 * pass the same output buffer (all-gather, all-reduce, broadcast), the
 * supernode shares one output: each rank writes only its own part and
 * nothing is copied between peers. The algorithms: coll_rs_ag.c
 * (reduce-scatter, all-gather), coll_allreduce.c (all-reduce), coll_a2a.c
 * (all-to-all, whose cross-supernode leg may be one fused message per pair
 * of supernodes), their sums in
 * coll_sum.c, and what they share in coll_base.c (failure, barrier, link
 * waits, scratch). A call counts what it reads from and writes into its
 * peers' buffers (peer_io) and adds it to the rank's intra-tier counters
 * when it returns (hp_comm_rank_tier_stats); link.c counts messages. */
#include <string.h>

#include "comm/coll_internal.h"
#include "comm/coll_scratch.h"

/* ---- broadcast: root to one rank per supernode, then zero-copy within ---- */

static hp_status broadcast(ctx *c, const hp_comm_args *a, void *const *buf) {
    hp_comm_group *g = c->g;
    int k = g->k, rt = a->peer, Tr = g->sn[rt];
    if (k > 1) {
        hp_comm_lreq *q;
        HP_TRY(hp_coll_lreqs(c, &q, (size_t)(k * a->nt)));
        int nq = 0;
        for (int i = 0; i < a->nt; i++) {
            size_t nb = (size_t)a->t[i].count * c->esz;
            if (c->me == rt) {
                for (int T = 0; T < k; T++)
                    if (T != Tr) {
                        TRY_Q(hp_comm_link_isend(c->r, &q[nq], g->ranks[owner(g, T, rt)], g->gid, buf[i], nb));
                        nq++;
                    }
            } else if (c->T != Tr && owner(g, c->T, rt) == c->me) {
                TRY_Q(hp_comm_link_irecv(c->r, &q[nq], g->ranks[rt], g->gid, buf[i], nb));
                nq++;
            }
        }
        HP_TRY(hp_coll_wait_all(c, q, nq));
    }
    int holder = c->T == Tr ? rt : owner(g, c->T, rt);
    c->slots[c->myl].dst = buf;
    HP_TRY(hp_coll_bar(c));
    if (c->me != holder) {
        void *const *pd = c->slots[g->lidx[holder]].dst;
        for (int i = 0; i < a->nt; i++)
            if (a->t[i].count && pd[i] != buf[i]) {
                memcpy(buf[i], pd[i], (size_t)a->t[i].count * c->esz);
                peer_io(c, 1, a->t[i].count);
            }
    }
    return hp_coll_bar(c);
}

/* ---- entry ---- */

static const char *kind_name(hp_comm_kind k) {
    switch (k) {
    case HP_COMM_ALL_GATHER: return "all_gather";
    case HP_COMM_REDUCE_SCATTER: return "reduce_scatter";
    case HP_COMM_ALL_REDUCE: return "all_reduce";
    case HP_COMM_BROADCAST: return "broadcast";
    case HP_COMM_ALL_TO_ALL: return "all_to_all";
    case HP_COMM_SEND: return "send";
    case HP_COMM_RECV: return "recv";
    case HP_COMM_BARRIER: return "barrier";
    }
    return "collective";
}

static hp_status check_args(ctx *c, const hp_comm_args *a) {
    const char *w = c->what, *gn = c->g->name;
    int n = c->g->n;
    if (a->kind == HP_COMM_BARRIER) return HP_OK;
    int moves = a->kind == HP_COMM_ALL_TO_ALL || a->kind == HP_COMM_ALL_GATHER || a->kind == HP_COMM_BROADCAST ||
                a->kind == HP_COMM_SEND || a->kind == HP_COMM_RECV; /* bytes moved, never added */
    if (a->dtype != HP_F32 && a->dtype != HP_BF16 && !(moves && a->dtype == HP_I32))
        return hp_errorf("comm: %s on group '%s': dtype %s is not f32 or bf16%s", w, gn, hp_dtype_name(a->dtype),
                         moves ? " (or i32)" : "");
    if (a->nt < 1 || !a->t) return hp_errorf("comm: %s on group '%s': needs at least one tensor", w, gn);
    if (a->nt > 1 && (a->kind == HP_COMM_ALL_TO_ALL || a->kind == HP_COMM_SEND || a->kind == HP_COMM_RECV))
        return hp_errorf("comm: %s on group '%s': takes one tensor, got %d", w, gn, a->nt);
    if (a->counts && a->nt != 1) return hp_errorf("comm: %s on group '%s': counts need nt = 1", w, gn);
    if (a->kind == HP_COMM_ALL_TO_ALL && !a->counts != !a->recv_counts)
        return hp_errorf("comm: all_to_all on group '%s': give both send and receive counts or neither", gn);
    for (int i = 0; i < a->nt; i++)
        if (a->t[i].count < 0 && !a->counts)
            return hp_errorf("comm: %s on group '%s': tensor %d has negative count %lld", w, gn, i, (long long)a->t[i].count);
    for (int j = 0; a->counts && j < n; j++)
        if (a->counts[j] < 0 || (a->recv_counts && a->recv_counts[j] < 0))
            return hp_errorf("comm: %s on group '%s': counts[%d] is negative", w, gn, j);
    if ((a->kind == HP_COMM_BROADCAST || a->kind == HP_COMM_SEND || a->kind == HP_COMM_RECV) &&
        (a->peer < 0 || a->peer >= n))
        return hp_errorf("comm: %s on group '%s': peer %d is not a member index in [0, %d)", w, gn, a->peer, n);
    if ((a->kind == HP_COMM_SEND || a->kind == HP_COMM_RECV) && a->peer == c->me)
        return hp_errorf("comm: %s on group '%s': rank %d cannot message itself", w, gn, c->r->rank);
    return HP_OK;
}

/* The call's context on rank r (its checks included). */
static hp_status ctx_init(ctx *c, hp_comm_rank *r, hp_comm_scratch *s, hp_comm_group *g, const hp_comm_args *a) {
    memset(c, 0, sizeof *c);
    c->r = r;
    c->s = s;
    c->g = g;
    c->what = kind_name(a->kind);
    c->me = hp_comm_group_index(g, r->rank);
    if (c->me < 0) return hp_errorf("comm: %s on group '%s': rank %d is not a member", c->what, g->name, r->rank);
    if (g->w != r->w) return hp_errorf("comm: %s on group '%s': the group belongs to another world", c->what, g->name);
    if (atomic_load(&g->failed)) return hp_coll_broken(c);
    c->T = g->sn[c->me];
    c->L = g->sn_n[c->T];
    c->myl = g->lidx[c->me];
    c->slots = g->sng[c->T].slots;
    c->bar = &g->sng[c->T].bar;
    c->dt = a->dtype;
    c->esz = hp_dtype_size(a->dtype);
    c->tree = a->tree;
    c->fence = a->fence;
    c->deadline = hp_comm_now_ns() + r->w->timeout_ns;
    return check_args(c, a);
}

/* A send or recv posted on the link: the one request q (its data stays the caller's until finished). */
static hp_status post_p2p(ctx *c, hp_comm_lreq *q, const hp_comm_args *a) {
    size_t nb = (size_t)a->t[0].count * c->esz;
    if (a->kind == HP_COMM_SEND) return hp_comm_link_isend(c->r, q, c->g->ranks[a->peer], c->g->gid, a->t[0].send, nb);
    return hp_comm_link_irecv(c->r, q, c->g->ranks[a->peer], c->g->gid, a->t[0].recv, nb);
}

hp_status hp_comm_p2p_post(hp_comm_rank *r, hp_comm_group *g, const hp_comm_args *a, hp_comm_lreq *q,
                           int64_t *deadline) {
    ctx c;
    HP_TRY(ctx_init(&c, r, NULL, g, a));
    if (a->kind != HP_COMM_SEND && a->kind != HP_COMM_RECV)
        return hp_errorf("comm: %s on group '%s': not a point-to-point call", c.what, g->name);
    *deadline = c.deadline;
    return post_p2p(&c, q, a);
}

hp_status hp_comm_p2p_finish(hp_comm_rank *r, hp_comm_group *g, const hp_comm_args *a, hp_comm_lreq *q,
                             int64_t deadline) {
    ctx c;
    memset(&c, 0, sizeof c);
    c.r = r, c.g = g, c.what = kind_name(a->kind), c.me = hp_comm_group_index(g, r->rank);
    c.T = g->sn[c.me], c.myl = g->lidx[c.me], c.slots = g->sng[c.T].slots, c.deadline = deadline;
    return hp_coll_wait_all(&c, q, 1);
}

static hp_status exec_call(ctx *cx, hp_comm_rank *r, hp_comm_scratch *s, hp_comm_group *g, const hp_comm_args *a) {
    if (a->prepare) HP_TRY(a->prepare(a->prepare_ctx));
    HP_TRY(ctx_init(cx, r, s, g, a));
    int nt = a->nt;
    float div = a->op == HP_COMM_AVG ? (float)g->n : 0;

    if (a->kind == HP_COMM_SEND || a->kind == HP_COMM_RECV) {
        hp_comm_lreq *q;
        HP_TRY(hp_coll_lreqs(cx, &q, 1));
        HP_TRY(post_p2p(cx, q, a));
        return hp_coll_wait_all(cx, q, 1);
    }
    if (a->kind == HP_COMM_BARRIER) {
        HP_TRY(hp_coll_bar(cx));
        if (g->k > 1 && cx->myl == 0) {
            hp_comm_lreq *q;
            HP_TRY(hp_coll_lreqs(cx, &q, (size_t)(2 * g->k)));
            int nq = 0;
            for (int T = 0; T < g->k; T++) {
                if (T == cx->T) continue;
                int lead = g->ranks[g->sn_members[T][0]];
                hp_status ps = hp_comm_link_irecv(r, &q[nq], lead, g->gid, NULL, 0);
                if (!ps) nq++;
                if (!ps) ps = hp_comm_link_isend(r, &q[nq], lead, g->gid, NULL, 0);
                if (ps) {
                    hp_coll_cancel_all(cx, q, nq);
                    return ps;
                }
                nq++;
            }
            HP_TRY(hp_coll_wait_all(cx, q, nq));
        }
        return hp_coll_bar(cx);
    }
    if (a->kind == HP_COMM_ALL_TO_ALL) return hp_coll_all_to_all(cx, a);

    /* pointer arrays for the fused tensors: [src][dst] */
    size_t noffs = (size_t)(g->n > nt ? g->n : nt) + 1;
    void **pp = hp_coll_grow(&s->ptrs, &s->ptrs_cap, sizeof(void *) * 2 * (size_t)nt + sizeof(int64_t) * noffs);
    if (!pp) return hp_coll_fail(cx, "out of memory");
    const void **src = (const void **)pp;
    void **dst = pp + nt;
    int64_t *offs = (int64_t *)(pp + 2 * nt);
    lay l = {0, nt, g->n, a->t, a->counts, offs};
    if (a->counts) {
        l.mode = 1;
        offs[0] = 0;
        for (int m = 0; m < g->n; m++) offs[m + 1] = offs[m] + a->counts[m];
    }
    switch (a->kind) {
    case HP_COMM_BROADCAST:
        for (int i = 0; i < nt; i++) dst[i] = a->t[i].recv;
        return broadcast(cx, a, dst);
    case HP_COMM_ALL_GATHER: {
        for (int i = 0; i < nt; i++) {
            src[i] = a->t[i].send;
            dst[i] = a->t[i].recv;
        }
        hp_status st = hp_coll_all_gather(cx, &l, src, dst);
        if (a->copied) *a->copied += cx->copied;
        return st;
    }
    case HP_COMM_REDUCE_SCATTER:
        for (int i = 0; i < nt; i++) {
            src[i] = a->t[i].send;
            dst[i] = a->t[i].recv;
        }
        return hp_coll_reduce_scatter(cx, &l, src, dst, div);
    case HP_COMM_ALL_REDUCE: {
        if (nt == 1 && g->k == 2 && g->n == 2 && (size_t)a->t[0].count * cx->esz >= HP_COMM_SPLIT_ALL_REDUCE_BYTES) {
            /* two supernodes of one rank, one large tensor: reduce-scatter,
             * then all-gather, so each rank sums half of the vector instead of
             * all of it (same bytes on the link, same order of the sums) */
            int64_t N = a->t[0].count, h = chunk_at(N, 2, 1);
            int64_t cnt[2] = {h, N - h}, at[3] = {0, h, N};
            lay l2 = {1, 1, 2, a->t, cnt, at};
            src[0] = a->t[0].send ? a->t[0].send : a->t[0].recv;
            dst[0] = ptr_at(a->t[0].recv, at[cx->me], cx->esz);
            HP_TRY(hp_coll_reduce_scatter(cx, &l2, src, dst, div));
            src[0] = dst[0];
            dst[0] = a->t[0].recv;
            return hp_coll_all_gather(cx, &l2, src, dst);
        }
        int64_t *pre = offs;
        pre[0] = 0;
        for (int i = 0; i < nt; i++) {
            src[i] = a->t[i].send ? a->t[i].send : a->t[i].recv;
            dst[i] = a->t[i].recv;
            pre[i + 1] = pre[i] + a->t[i].count;
        }
        cx->src = src;
        cx->dst = dst;
        fvec v = {a->t, nt, pre};
        return hp_coll_all_reduce(cx, &v, div);
    }
    default: break;
    }
    return hp_errorf("comm: unknown collective kind %d", (int)a->kind);
}

hp_status hp_comm_exec(hp_comm_rank *r, hp_comm_scratch *s, hp_comm_group *g, const hp_comm_args *a) {
    ctx c;
    memset(&c, 0, sizeof c);
    hp_status st = exec_call(&c, r, s, g, a);
    if (c.intra_msgs) { /* the peers' buffers it read or wrote, on the intra tier */
        atomic_fetch_add_explicit(&r->intra_bytes, (long long)c.intra_bytes, memory_order_relaxed);
        atomic_fetch_add_explicit(&r->intra_msgs, (long long)c.intra_msgs, memory_order_relaxed);
    }
    return st;
}
