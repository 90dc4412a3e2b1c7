/* comm/coll_a2a: the all-to-all with per-pair counts (HP_COMM_ALL_TO_ALL).
 * Inside a supernode every member publishes its send buffer (and, on the
 * fused path, its receive buffer and receive counts) in its slot and, after
 * a barrier, copies its part of each peer's send buffer in place (zero-copy
 * reads). Across supernodes, per ordered pair of supernodes (A -> B), either
 * direct: one message per (source rank, destination rank); or fused: one
 * message from A's sender (A's member B mod L_A) to B's receiver (B's member
 * A mod L_B), so that different pairs use different members' ports. The
 * sender packs every A member's rows for B's members, read in place from
 * the peers' published send buffers, behind a header of the L_A x L_B
 * counts; the receiver checks the counts against its members' receive
 * counts and unpacks the rows into their receive buffers before the
 * closing barrier. A pair fuses when its mean message per rank pair is
 * below the world's threshold (hp_comm_opts.a2a_fuse_bytes); both sides
 * decide from the same numbers (A's members' send counts to B are B's
 * members' receive counts from A). When every supernode of the group has
 * one member, fusion would change nothing: that path (direct) posts its
 * messages first and meets no peer (its barriers are free); so does a call
 * without counts whose equal messages are at or above the threshold. With
 * counts, a pair whose mean the member's own rows already put at or above
 * the threshold is direct whatever its peers send, and its messages are
 * posted before the first barrier too; the others wait for the peers'
 * counts. */
#include <string.h>

#include "comm/coll_internal.h"

static int64_t cnt_of(const int64_t *counts, int64_t count, int j) { return counts ? counts[j] : count; }

/* off[j] = the sum of the first j counts (n + 1 entries). */
static void prefix(int64_t *off /* [n + 1] */, const int64_t *counts /* [n] or NULL */, int64_t count, int n) {
    off[0] = 0;
    for (int j = 0; j < n; j++) off[j + 1] = off[j] + cnt_of(counts, count, j);
}

/* Whether a pair of supernodes with `pairs` rank pairs moving `bytes` in all fuses them into one message:
 * the mean per rank pair below thr (0: never); a pair of lone ranks is one message either way. */
static int fuses(int64_t bytes, int64_t pairs, int64_t thr) { return thr > 0 && pairs > 1 && bytes / pairs < thr; }

static size_t round64(size_t b) { return (b + 63) & ~(size_t)63; }

static hp_status first_of(hp_status a, hp_status b, hp_status c) {
    if (a) {
        hp_status_free(b);
        hp_status_free(c);
        return a;
    }
    if (b) {
        hp_status_free(c);
        return b;
    }
    return c;
}

static hp_status mismatch(const ctx *c, int expecting, int sender, int64_t nn, int64_t want) {
    return hp_errorf("comm: all_to_all on group '%s' (rank %d): rank %d sends %lld elements, %lld expected",
                     c->g->name, c->g->ranks[expecting], c->g->ranks[sender], (long long)nn, (long long)want);
}

/* The closing barrier, then the call's first error. Counts that disagree (a member's receive count against
 * its sender's send count: in place inside a supernode, a message's size or a fused header's counts across)
 * are reported by the rank that finds them, and the group is not broken: breaking it would release the
 * peers' barriers while they still read this rank's buffers, or write fused rows into theirs. A timeout has
 * broken it already. */
static hp_status closing(ctx *c, hp_status st, hp_status st2) {
    if (!st2) st2 = hp_coll_size_error(c);
    return first_of(st, st2, hp_coll_bar(c));
}

/* ---- direct: one message per cross rank pair, posted before the barrier ---- */

static hp_status direct(ctx *c, const hp_comm_args *a) {
    hp_comm_group *g = c->g;
    const hp_comm_tensor *t = &a->t[0];
    size_t esz = c->esz;
    int n = g->n, me = c->me;
    int64_t *offs = hp_coll_grow(&c->s->ptrs, &c->s->ptrs_cap, sizeof(int64_t) * 2 * (size_t)(n + 1));
    if (!offs) return hp_coll_fail(c, "out of memory");
    int64_t *soff = offs, *roff = offs + n + 1;
    prefix(soff, a->counts, t->count, n);
    prefix(roff, a->recv_counts, t->count, n);
    int ncross = 0;
    for (int j = 0; j < n; j++) ncross += g->sn[j] != c->T;
    hp_comm_lreq *q;
    HP_TRY(hp_coll_lreqs(c, &q, (size_t)(2 * ncross)));
    int nq = 0;
    for (int j = 0; j < n; j++) {
        if (g->sn[j] == c->T) continue;
        TRY_Q(hp_comm_link_irecv(c->r, &q[nq], g->ranks[j], g->gid, ptr_at(t->recv, roff[j], esz),
                                 (size_t)(roff[j + 1] - roff[j]) * esz));
        nq++;
        TRY_Q(hp_comm_link_isend(c->r, &q[nq], g->ranks[j], g->gid, ptr_at((void *)t->send, soff[j], esz),
                                 (size_t)(soff[j + 1] - soff[j]) * esz));
        nq++;
    }
    const void *sp[1] = {t->send};
    hp_comm_slot *s = &c->slots[c->myl];
    s->src = sp;
    s->counts = a->counts;
    s->count = t->count;
    TRY_Q(hp_coll_bar(c));
    hp_status st = HP_OK;
    for (int j = 0; j < c->L; j++) {
        int m = g->sn_members[c->T][j];
        hp_comm_slot *ps = &c->slots[j];
        int64_t off = 0;
        for (int x = 0; x < me; x++) off += cnt_of(ps->counts, ps->count, x);
        int64_t nn = cnt_of(ps->counts, ps->count, me);
        if (nn != roff[m + 1] - roff[m]) {
            if (!st) st = mismatch(c, me, m, nn, roff[m + 1] - roff[m]);
            continue;
        }
        if (nn) memcpy(ptr_at(t->recv, roff[m], esz), ptr_at((void *)ps->src[0], off, esz), (size_t)nn * esz);
        if (j != c->myl) peer_io(c, 1, nn);
    }
    hp_status st2 = hp_coll_wait_all(c, q, nq);
    return closing(c, st, st2);
}

/* ---- fused: per pair of supernodes one message, or direct, decided after the barrier ---- */

/* Per other supernode U: whether T -> U and U -> T fuse, and (where this member is the pair's sender or
 * receiver) the bytes and scratch place of the messages. */
typedef struct {
    int64_t pre_s, pre_r; /* T -> U, U -> T direct whatever the peers' counts: posted before the barrier */
    int64_t fs, fr;       /* T -> U fused; U -> T fused */
    int64_t bs, br;       /* bytes of the fused messages, header included */
    int64_t at_s, at_r;   /* their places in the scratch */
} pairinfo;

static hp_status fused(ctx *c, const hp_comm_args *a) {
    hp_comm_group *g = c->g;
    const hp_comm_tensor *t = &a->t[0];
    size_t esz = c->esz;
    int n = g->n, me = c->me, L = c->L, k = g->k, T = c->T, myl = c->myl;
    int64_t thr = c->r->w->a2a_fuse_bytes;
    size_t row = (size_t)n + 1;
    size_t tab_bytes = sizeof(int64_t) * 2 * (size_t)L * row, info_at = round64(tab_bytes);
    char *pp = hp_coll_grow(&c->s->ptrs, &c->s->ptrs_cap, info_at + sizeof(pairinfo) * (size_t)k);
    if (!pp) return hp_coll_fail(c, "out of memory");
    /* soffs[j * row + x]: where member x's rows start in local member j's send buffer; roffs: receive buffer */
    int64_t *soffs = (int64_t *)pp, *roffs = soffs + (size_t)L * row;
    pairinfo *pi = (pairinfo *)(pp + info_at);
    int64_t *soff = soffs + (size_t)myl * row, *roff = roffs + (size_t)myl * row;
    prefix(soff, a->counts, t->count, n);
    prefix(roff, a->recv_counts, t->count, n);
    hp_comm_lreq *q = NULL;
    int nq = 0;
    HP_TRY(hp_coll_lreqs(c, &q, 2 * (size_t)n + 2 * (size_t)k));
    /* A pair whose mean this member's own rows already put at or above the threshold goes direct whatever its
     * peers' counts (a pair's bytes only grow with them): those messages are posted now, before the barrier. */
    for (int U = 0; U < k; U++) {
        memset(&pi[U], 0, sizeof pi[U]);
        if (U == T) continue;
        int LU = g->sn_n[U];
        int64_t es = 0, er = 0, pairs = (int64_t)L * LU;
        for (int b = 0; b < LU; b++) {
            int x = g->sn_members[U][b];
            es += soff[x + 1] - soff[x];
            er += roff[x + 1] - roff[x];
        }
        pi[U].pre_s = !fuses(es * (int64_t)esz, pairs, thr);
        pi[U].pre_r = !fuses(er * (int64_t)esz, pairs, thr);
        for (int b = 0; b < LU && pi[U].pre_r; b++) {
            int x = g->sn_members[U][b];
            TRY_Q(hp_comm_link_irecv(c->r, &q[nq++], g->ranks[x], g->gid, ptr_at(t->recv, roff[x], esz),
                                     (size_t)(roff[x + 1] - roff[x]) * esz));
        }
    }
    for (int U = 0; U < k; U++)
        for (int b = 0; U != T && b < g->sn_n[U] && pi[U].pre_s; b++) {
            int x = g->sn_members[U][b];
            TRY_Q(hp_comm_link_isend(c->r, &q[nq++], g->ranks[x], g->gid, ptr_at((void *)t->send, soff[x], esz),
                                     (size_t)(soff[x + 1] - soff[x]) * esz));
        }

    const void *sp[1] = {t->send};
    void *rp[1] = {t->recv};
    hp_comm_slot *s = &c->slots[myl];
    s->src = sp;
    s->dst = rp;
    s->counts = a->counts;
    s->recv_counts = a->recv_counts;
    s->count = t->count;
    TRY_Q(hp_coll_bar(c));
    for (int j = 0; j < L; j++) {
        const hp_comm_slot *ps = &c->slots[j];
        if (j == myl) continue;
        prefix(soffs + (size_t)j * row, ps->counts, ps->count, n);
        prefix(roffs + (size_t)j * row, ps->recv_counts, ps->count, n);
    }
    size_t need = 0;
    for (int U = 0; U < k; U++) {
        if (U == T) continue;
        int LU = g->sn_n[U];
        int64_t es = 0, er = 0;
        for (int j = 0; j < L; j++)
            for (int b = 0; b < LU; b++) {
                size_t x = (size_t)j * row + (size_t)g->sn_members[U][b];
                es += soffs[x + 1] - soffs[x];
                er += roffs[x + 1] - roffs[x];
            }
        int64_t pairs = (int64_t)L * LU, hdr = pairs * (int64_t)sizeof(int64_t);
        pi[U].fs = fuses(es * (int64_t)esz, pairs, thr);
        pi[U].fr = fuses(er * (int64_t)esz, pairs, thr);
        HP_ASSERT(!(pi[U].pre_s && pi[U].fs) && !(pi[U].pre_r && pi[U].fr));
        if (U % L != myl) continue; /* another member of T sends to and receives from U */
        if (pi[U].fs) pi[U].bs = hdr + es * (int64_t)esz, pi[U].at_s = (int64_t)need, need += round64((size_t)pi[U].bs);
        if (pi[U].fr) pi[U].br = hdr + er * (int64_t)esz, pi[U].at_r = (int64_t)need, need += round64((size_t)pi[U].br);
    }
    char *buf = NULL;
    hp_status st = need ? hp_coll_scratch(c, (void **)&buf, need) : HP_OK;
    if (st) {
        hp_coll_cancel_all(c, q, nq);
        return first_of(st, hp_coll_bar(c), HP_OK);
    }
    for (int U = 0; U < k; U++) { /* receives first */
        if (U == T || pi[U].pre_r) continue;
        if (pi[U].fr) {
            if (pi[U].br)
                TRY_Q(hp_comm_link_irecv(c->r, &q[nq++], g->ranks[g->sn_members[U][T % g->sn_n[U]]], g->gid,
                                         buf + pi[U].at_r, (size_t)pi[U].br));
            continue;
        }
        for (int b = 0; b < g->sn_n[U]; b++) {
            int x = g->sn_members[U][b];
            TRY_Q(hp_comm_link_irecv(c->r, &q[nq++], g->ranks[x], g->gid, ptr_at(t->recv, roff[x], esz),
                                     (size_t)(roff[x + 1] - roff[x]) * esz));
        }
    }
    for (int U = 0; U < k; U++) {
        if (U == T || pi[U].pre_s) continue;
        int LU = g->sn_n[U];
        if (pi[U].fs) {
            if (!pi[U].bs) continue;
            /* the pair's message: the L x LU counts, then the rows, source member-major */
            int64_t *hdr = (int64_t *)(buf + pi[U].at_s);
            char *d = (char *)(hdr + (size_t)L * LU);
            for (int j = 0; j < L; j++)
                for (int b = 0; b < LU; b++) {
                    size_t x = (size_t)j * row + (size_t)g->sn_members[U][b];
                    int64_t nn = soffs[x + 1] - soffs[x];
                    hdr[(size_t)j * LU + b] = nn;
                    if (nn) memcpy(d, ptr_at((void *)c->slots[j].src[0], soffs[x], esz), (size_t)nn * esz);
                    if (j != myl) peer_io(c, 1, nn);
                    d += nn * (int64_t)esz;
                }
            TRY_Q(hp_comm_link_isend(c->r, &q[nq++], g->ranks[g->sn_members[U][T % LU]], g->gid, hdr,
                                     (size_t)pi[U].bs));
            continue;
        }
        for (int b = 0; b < LU; b++) {
            int x = g->sn_members[U][b];
            TRY_Q(hp_comm_link_isend(c->r, &q[nq++], g->ranks[x], g->gid, ptr_at((void *)t->send, soff[x], esz),
                                     (size_t)(soff[x + 1] - soff[x]) * esz));
        }
    }
    for (int j = 0; j < L; j++) { /* inside the supernode: read the peers' rows in place */
        int m = g->sn_members[T][j];
        const int64_t *ps = soffs + (size_t)j * row;
        int64_t nn = ps[me + 1] - ps[me], want = roff[m + 1] - roff[m];
        if (nn != want) {
            if (!st) st = mismatch(c, me, m, nn, want);
            continue;
        }
        if (nn)
            memcpy(ptr_at(t->recv, roff[m], esz), ptr_at((void *)c->slots[j].src[0], ps[me], esz), (size_t)nn * esz);
        if (j != myl) peer_io(c, 1, nn);
    }
    hp_status st2 = hp_coll_wait_all(c, q, nq);
    /* the fused messages this member received: into its peers' receive buffers */
    for (int U = 0; U < k && !st2 && !c->size_bad; U++) {
        if (U == T || !pi[U].fr || !pi[U].br) continue;
        int LU = g->sn_n[U];
        const int64_t *hdr = (const int64_t *)(buf + pi[U].at_r);
        const char *d = (const char *)(hdr + (size_t)LU * L);
        for (int u = 0; u < LU; u++) {
            int y = g->sn_members[U][u];
            for (int j = 0; j < L; j++) {
                const int64_t *rj = roffs + (size_t)j * row;
                int64_t nn = hdr[(size_t)u * L + j], want = rj[y + 1] - rj[y];
                if (nn != want) {
                    if (!st) st = mismatch(c, g->sn_members[T][j], y, nn, want);
                    u = LU; /* the rest of this message cannot be placed */
                    break;
                }
                if (nn) memcpy(ptr_at(c->slots[j].dst[0], rj[y], esz), d, (size_t)nn * esz);
                if (j != myl) peer_io(c, 1, nn);
                d += nn * (int64_t)esz;
            }
        }
    }
    return closing(c, st, st2);
}

hp_status hp_coll_all_to_all(ctx *c, const hp_comm_args *a) {
    const hp_comm_group *g = c->g;
    c->defer_size = 1;
    int shared = 0; /* some supernode of the group has more than one member */
    for (int U = 0; U < g->k && !shared; U++) shared = g->sn_n[U] > 1;
    int64_t thr = c->r->w->a2a_fuse_bytes;
    /* without counts every pair's mean is the count, known before the barrier: a call of large equal
     * messages posts them first, as when nothing fuses */
    if (g->k > 1 && shared && thr > 0 && (a->counts || a->t[0].count * (int64_t)c->esz < thr)) return fused(c, a);
    return direct(c, a);
}
