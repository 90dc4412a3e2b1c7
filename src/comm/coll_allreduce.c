/* comm/coll_allreduce: the all-reduce. The fused tensors are one vector cut
 * into balanced chunks, one per member; in each supernode one rank handles a
 * chunk from end to end (sums it out of the local inputs, exchanges partials
 * and results across supernodes, writes it into every local output), so a
 * call needs one barrier pair however many tensors it fuses. Between two
 * supernodes the two handlers of a chunk swap partials (one round); beyond,
 * partials go to the chunk's member and results come back.
 * Per rank this moves 2 (k-1)/k * N / R bytes between k supernodes of R
 * ranks for an all-reduce of N bytes: the one-tier ring's figure over R. */
#include <string.h>

#include "comm/coll_internal.h"
#include "comm/copy.h"

/* ---- all-reduce: one barrier pair per call ---- */

/* The next piece of [*lo, hi) that lies in one tensor: tensor *i, elements
 * [*off, *off + return) of it; 0 when the range is exhausted. */
static int64_t next_piece(const fvec *v, int *i, int64_t *lo, int64_t hi, int64_t *off) {
    while (*i < v->nt && v->pre[*i + 1] <= *lo) (*i)++;
    if (*lo >= hi || *i >= v->nt) return 0;
    int64_t end = v->pre[*i + 1] < hi ? v->pre[*i + 1] : hi;
    *off = *lo - v->pre[*i];
    int64_t n = end - *lo;
    *lo = end;
    return n;
}

/* The distinct output buffers of tensor i among the local members. */
static int local_dsts(const ctx *c, int i, void **d) {
    int nd = 0;
    for (int j = 0; j < c->L; j++) {
        void *p = c->slots[j].dst[i];
        int dup = 0;
        for (int x = 0; x < nd && !dup; x++) dup = d[x] == p;
        if (!dup) d[nd++] = p;
    }
    return nd;
}

/* t = the sum over local members (in order, or as a tree) of input i at [off, off + n). */
static void local_sum(const ctx *c, float *t, int i, int64_t off, int64_t n) {
    if (c->tree && c->L > 2) {
        hp_coll_src ts[256];
        HP_ASSERT(c->L <= 256);
        for (int j = 0; j < c->L; j++) ts[j] = (hp_coll_src){c->slots[j].src[i], c->dt, off};
        hp_coll_tree_sum(t, ts, c->L, n);
        return;
    }
    int j = 1;
    if (c->dt == HP_F32 && c->L >= 2) { /* the first two inputs in one pass */
        const float *a = (const float *)c->slots[0].src[i] + off, *b = (const float *)c->slots[1].src[i] + off;
        for (int64_t e = 0; e < n; e++) t[e] = a[e] + b[e];
        j = 2;
    } else {
        hp_coll_load_f32(t, c->slots[0].src[i], c->dt, off, n);
    }
    for (; j < c->L; j++) hp_coll_add_f32(t, c->slots[j].src[i], c->dt, off, n);
}

/* Copies a packed chunk [lo, hi) of the fused vector into every local output. */
static void push_packed(ctx *c, const fvec *v, void **d, const char *from, int64_t lo, int64_t hi) {
    int i = 0;
    int64_t off, n, pos = 0;
    while ((n = next_piece(v, &i, &lo, hi, &off)) > 0) {
        int nd = local_dsts(c, i, d);
        for (int x = 0; x < nd; x++) memcpy(ptr_at(d[x], off, c->esz), from + pos * (int64_t)c->esz, (size_t)n * c->esz);
        peer_io(c, nd - 1, n); /* every output but its own */
        pos += n;
    }
}

/* Packs this supernode's partial of chunk [lo, hi) (dt, rounded once) into out. */
static void pack_partial(ctx *c, const fvec *v, char *out, int64_t lo, int64_t hi) {
    float t[BLK];
    int i = 0;
    int64_t off, pn;
    size_t pos = 0;
    while ((pn = next_piece(v, &i, &lo, hi, &off)) > 0) {
        peer_io(c, c->L - 1, pn); /* the peers' inputs, read for the sum */
        for (int64_t b = 0; b < pn; b += BLK) {
            int64_t nb = pn - b < BLK ? pn - b : BLK;
            local_sum(c, t, i, off + b, nb);
            hp_coll_store(out + pos, c->dt, 0, t, nb, 0, 0);
            pos += (size_t)nb * c->esz;
        }
    }
}

/* Two supernodes: every chunk is handled by two ranks, its member and the
 * member's owner in the other supernode. The two swap their supernodes'
 * partials (one round, one message per pair of ranks carrying all the chunks
 * they share, the same bytes as reduce-scatter + all-gather), add them in
 * supernode order and write the sum into their local outputs. */
static hp_status all_reduce_pair(ctx *c, const fvec *v, float div, void **d, int *hl, int *hd) {
    hp_comm_group *g = c->g;
    int me = c->me, n = g->n, other = 1 - c->T;
    size_t esz = c->esz;
    int64_t N = v->pre[v->nt];
    int stream = (size_t)N * esz >= HP_COMM_STREAM_BYTES;
    /* the chunks this rank handles, grouped by the peer that handles them on
     * the other side (in the other supernode's member order), each group in
     * member order: both ends of a pair list their shared chunks alike */
    int nh = 0;
    size_t bytes = 0;
    for (int j = 0; j < g->sn_n[other]; j++) {
        int cp = g->sn_members[other][j];
        for (int m = 0; m < n; m++) {
            int mine = m == me ? owner(g, other, me) == cp : m == cp && owner(g, c->T, m) == me;
            if (!mine) continue;
            hl[nh++] = m;
            bytes += (size_t)(chunk_at(N, n, m + 1) - chunk_at(N, n, m)) * esz;
        }
    }
    size_t ab = (bytes + 63) & ~(size_t)63;
    char *sc;
    hp_comm_lreq *q;
    HP_TRY(hp_coll_scratch(c, (void **)&sc, 2 * ab));
    HP_TRY(hp_coll_lreqs(c, &q, (size_t)(2 * nh)));
    char *obox = sc, *inbox = sc + ab;
    int nq = 0;
    size_t pos = 0;
    for (int h = 0; h < nh;) { /* one receive per peer */
        int cp = hl[h] == me ? owner(g, other, me) : hl[h];
        size_t start = pos;
        for (; h < nh && (hl[h] == me ? owner(g, other, me) : hl[h]) == cp; h++)
            pos += (size_t)(chunk_at(N, n, hl[h] + 1) - chunk_at(N, n, hl[h])) * esz;
        if (pos > start) {
            TRY_Q(hp_comm_link_irecv(c->r, &q[nq], g->ranks[cp], g->gid, inbox + start, pos - start));
            nq++;
        }
    }
    int nrecv = nq;
    c->slots[c->myl].src = c->src;
    c->slots[c->myl].dst = c->dst;
    TRY_Q(hp_coll_bar(c));
    /* this supernode's partials, one message per peer; a rank alone in its
     * supernode sends a single tensor's consecutive chunks straight from its input */
    int direct_ok = c->L == 1 && v->nt == 1, any_direct = 0;
    pos = 0;
    for (int h = 0; h < nh;) {
        int cp = hl[h] == me ? owner(g, other, me) : hl[h], h0 = h, direct = direct_ok;
        size_t start = pos;
        for (; h < nh && (hl[h] == me ? owner(g, other, me) : hl[h]) == cp; h++) {
            if (h > h0 && hl[h] != hl[h - 1] + 1) direct = 0;
            pos += (size_t)(chunk_at(N, n, hl[h] + 1) - chunk_at(N, n, hl[h])) * esz;
        }
        const char *from = obox + start;
        if (direct) {
            from = (const char *)c->src[0] + chunk_at(N, n, hl[h0]) * (int64_t)esz;
            any_direct = 1;
        } else {
            size_t p = start;
            for (int x = h0; x < h; x++) {
                int64_t lo = chunk_at(N, n, hl[x]), hi = chunk_at(N, n, hl[x] + 1);
                pack_partial(c, v, obox + p, lo, hi);
                p += (size_t)(hi - lo) * esz;
            }
        }
        for (int x = h0; x < h; x++) hd[x] = direct;
        if (pos > start) {
            TRY_Q(hp_comm_link_isend(c->r, &q[nq], g->ranks[cp], g->gid, from, pos - start));
            nq++;
        }
    }
    hp_status st = hp_coll_wait_all(c, q, nrecv);
    if (st) {
        hp_coll_cancel_all(c, q + nrecv, nq - nrecv);
        return st;
    }
    /* an input sent in place must not change before the peer has it */
    if (any_direct && c->src[0] == c->dst[0]) {
        HP_TRY(hp_coll_wait_all(c, q + nrecv, nq - nrecv));
        nq = nrecv;
    }
    /* supernode 0's partial first, then supernode 1's */
    float u[BLK];
    pos = 0;
    for (int h = 0; h < nh; h++) {
        int64_t lo = chunk_at(N, n, hl[h]), hi = chunk_at(N, n, hl[h] + 1), off, pn;
        int i = 0;
        while ((pn = next_piece(v, &i, &lo, hi, &off)) > 0) {
            int nd = local_dsts(c, i, d);
            peer_io(c, nd - 1, pn); /* the sum into every output but its own */
            for (int64_t b = 0; b < pn; b += BLK) {
                int64_t nb = pn - b < BLK ? pn - b : BLK;
                /* own partial: packed in obox, or (direct) the input itself */
                const char *own = hd[h] ? (const char *)c->src[0] + (off + b) * (int64_t)esz : obox + pos;
                hp_coll_load_f32(u, c->T == 0 ? own : inbox + pos, c->dt, 0, nb);
                hp_coll_add_f32(u, c->T == 0 ? inbox + pos : own, c->dt, 0, nb);
                if (div != 0)
                    for (int64_t j = 0; j < nb; j++) u[j] /= div;
                for (int x = 0; x < nd; x++) hp_coll_store(d[x], c->dt, off + b, u, nb, 0, stream);
                pos += (size_t)nb * esz;
            }
        }
    }
    HP_TRY(hp_coll_wait_all(c, q + nrecv, nq - nrecv));
    return hp_coll_bar(c);
}

/* Every chunk range is read (from every local input) and written (into every
 * local output) by one rank of each supernode only: member m in its own
 * supernode, owner(T, m) elsewhere. So after the first barrier no rank waits
 * for a local peer, and in-place calls and shared outputs need no care. */
hp_status hp_coll_all_reduce(ctx *c, const fvec *v, float div) {
    hp_comm_group *g = c->g;
    int k = g->k, me = c->me, n = g->n;
    size_t esz = c->esz;
    int64_t N = v->pre[v->nt];
    int stream = (size_t)N * esz >= HP_COMM_STREAM_BYTES;
    int64_t lo = chunk_at(N, n, me), hi = chunk_at(N, n, me + 1), mine = hi - lo;
    void **d = (void **)hp_coll_grow(&c->s->ptrs2, &c->s->ptrs2_cap,
                                     sizeof(void *) * (size_t)c->L + 2 * sizeof(int) * (size_t)n);
    if (!d) return hp_coll_fail(c, "out of memory");
    if (k == 2) return all_reduce_pair(c, v, div, d, (int *)(d + c->L), (int *)(d + c->L) + n);
    /* scratch: partials out (remote members this rank owns), partials in
     * (one per other supernode), this rank's reduced chunk, remote results in */
    size_t own_b = 0, in_b = 0, red_b = 0;
    int nown = 0;
    if (k > 1) {
        for (int m = 0; m < n; m++)
            if (g->sn[m] != c->T && owner(g, c->T, m) == me) {
                own_b += (size_t)(chunk_at(N, n, m + 1) - chunk_at(N, n, m)) * esz;
                nown++;
            }
        in_b = (size_t)(k - 1) * (size_t)mine * esz;
        red_b = (size_t)mine * esz;
    }
    size_t a1 = (own_b + 63) & ~(size_t)63, a2 = (in_b + 63) & ~(size_t)63, a3 = (red_b + 63) & ~(size_t)63;
    char *sc = NULL;
    hp_comm_lreq *q = NULL;
    int nq = 0;
    if (k > 1) {
        HP_TRY(hp_coll_scratch(c, (void **)&sc, 2 * a1 + a2 + a3));
        HP_TRY(hp_coll_lreqs(c, &q, (size_t)(2 * (k - 1) + 2 * nown)));
    }
    char *obox = sc, *inbox = sc + a1, *red = sc + a1 + a2, *rbox = sc + a1 + a2 + a3;
    /* partials of this rank's chunk from the other supernodes */
    if (k > 1 && mine)
        for (int T = 0, s = 0; T < k; T++) {
            if (T == c->T) continue;
            TRY_Q(hp_comm_link_irecv(c->r, &q[nq], g->ranks[owner(g, T, me)], g->gid, inbox + (size_t)s * (size_t)mine * esz,
                                     (size_t)mine * esz));
            nq++;
            s++;
        }
    int nrs = nq;
    c->slots[c->myl].src = c->src;
    c->slots[c->myl].dst = c->dst;
    TRY_Q(hp_coll_bar(c));
    float t[BLK], u[BLK];
    /* this supernode's partials of the chunks of remote members this rank owns */
    if (k > 1) {
        size_t pos = 0;
        for (int m = 0; m < n; m++) {
            if (g->sn[m] == c->T || owner(g, c->T, m) != me) continue;
            int64_t mlo = chunk_at(N, n, m), mhi = chunk_at(N, n, m + 1);
            size_t start = pos;
            pack_partial(c, v, obox + pos, mlo, mhi);
            pos += (size_t)(mhi - mlo) * esz;
            if (pos > start) {
                TRY_Q(hp_comm_link_isend(c->r, &q[nq], g->ranks[m], g->gid, obox + start, pos - start));
                nq++;
            }
        }
    }
    if (nrs) {
        hp_status st = hp_coll_wait_all(c, q, nrs);
        if (st) {
            hp_coll_cancel_all(c, q + nrs, nq - nrs);
            return st;
        }
    }
    /* this rank's chunk: local sum, partials in supernode order, into every local output */
    const void *parts[64];
    if (k - 1 > 64) TRY_Q(hp_coll_fail(c, "more than 65 supernodes in one group"));
    for (int s = 0; s < k - 1; s++) parts[s] = inbox + (size_t)s * (size_t)mine * esz;
    {
        int i = 0;
        int64_t clo = lo, off, pn, pos = 0;
        while ((pn = next_piece(v, &i, &clo, hi, &off)) > 0) {
            int nd = local_dsts(c, i, d);
            peer_io(c, c->L - 1 + nd - 1, pn); /* the peers' inputs read, every output but its own written */
            for (int64_t b = 0; b < pn; b += BLK) {
                int64_t nb = pn - b < BLK ? pn - b : BLK;
                local_sum(c, t, i, off + b, nb);
                float *res = t;
                if (k > 1) {
                    hp_coll_canon_sum(u, c->dt, t, parts, k, c->T, pos + b, nb, c->tree);
                    res = u;
                }
                if (div != 0)
                    for (int64_t j = 0; j < nb; j++) res[j] /= div;
                if (k > 1) hp_coll_store(red, c->dt, pos + b, res, nb, 0, 0);
                for (int x = 0; x < nd; x++) hp_coll_store(d[x], c->dt, off + b, res, nb, 0, stream);
            }
            pos += pn;
        }
    }
    if (k > 1) {
        /* results: this rank's chunk to its owner in every other supernode, and the
         * chunks of the remote members this rank owns from them */
        if (mine)
            for (int T = 0; T < k; T++)
                if (T != c->T) {
                    TRY_Q(hp_comm_link_isend(c->r, &q[nq], g->ranks[owner(g, T, me)], g->gid, red, (size_t)mine * esz));
                    nq++;
                }
        size_t pos = 0;
        for (int m = 0; m < n; m++) {
            if (g->sn[m] == c->T || owner(g, c->T, m) != me) continue;
            size_t nb = (size_t)(chunk_at(N, n, m + 1) - chunk_at(N, n, m)) * esz;
            if (!nb) continue;
            TRY_Q(hp_comm_link_irecv(c->r, &q[nq], g->ranks[m], g->gid, rbox + pos, nb));
            nq++;
            pos += nb;
        }
        HP_TRY(hp_coll_wait_all(c, q + nrs, nq - nrs));
        pos = 0;
        for (int m = 0; m < n; m++) {
            if (g->sn[m] == c->T || owner(g, c->T, m) != me) continue;
            int64_t mlo = chunk_at(N, n, m), mhi = chunk_at(N, n, m + 1);
            push_packed(c, v, d, rbox + pos, mlo, mhi);
            pos += (size_t)(mhi - mlo) * esz;
        }
    }
    return hp_coll_bar(c);
}
