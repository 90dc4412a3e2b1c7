/* comm/coll_rs_ag: reduce-scatter and all-gather. Between supernodes every
 * fused tensor of the call travels packed in one message per (source,
 * destination) rank pair:
 *   reduce-scatter: each supernode sums member m's shard over its own ranks
 *     (on the local rank with m's local index modulo the local count) and
 *     sends that partial to m, which adds the partials in supernode order;
 *   all-gather: each rank sends its shard to one rank per other supernode,
 *     which the rest of that supernode then reads zero-copy. */
#include <stdlib.h>
#include <string.h>

#include "comm/coll_internal.h"
#include "comm/copy.h"

/* ---- reduce-scatter: within the supernode, then across ---- */

static const void *const *peer_src(ctx *c, int j) { return c->slots[j].src; }

hp_status hp_coll_reduce_scatter(ctx *c, const lay *l, const void *const *src, void *const *out, float div) {
    hp_comm_group *g = c->g;
    int nt = l->nt, k = g->k, me = c->me;
    size_t esz = c->esz;
    int64_t mine = 0;
    for (int i = 0; i < nt; i++) mine += lcnt(l, i, me);
    int stream = (size_t)mine * esz >= HP_COMM_STREAM_BYTES;
    /* members of other supernodes whose partial this rank computes */
    int nown = 0;
    size_t outbox = 0;
    if (k > 1)
        for (int m = 0; m < g->n; m++)
            if (g->sn[m] != c->T && owner(g, c->T, m) == me) {
                nown++;
                for (int i = 0; i < nt; i++) outbox += (size_t)lcnt(l, i, m) * esz;
            }
    /* a rank alone in its supernode (fp32) adds its input itself to the partials it receives */
    int solo = k > 1 && c->L == 1 && c->dt == HP_F32;
    size_t acc_b = k > 1 && !solo ? (size_t)mine * 4 : 0, inbox_b = k > 1 ? (size_t)(k - 1) * (size_t)mine * esz : 0;
    acc_b = (acc_b + 63) & ~(size_t)63;
    inbox_b = (inbox_b + 63) & ~(size_t)63;
    char *sc;
    hp_comm_lreq *q;
    HP_TRY(hp_coll_scratch(c, (void **)&sc, acc_b + inbox_b + outbox));
    HP_TRY(hp_coll_lreqs(c, &q, (size_t)(k - 1 + nown)));
    float *acc = (float *)sc;
    char *inbox = sc + acc_b, *obox = sc + acc_b + inbox_b;
    int nq = 0;
    if (k > 1)
        for (int T = 0, s = 0; T < k; T++) {
            if (T == c->T) continue;
            int from = g->ranks[owner(g, T, me)];
            TRY_Q(hp_comm_link_irecv(c->r, &q[nq], from, g->gid, inbox + (size_t)s * (size_t)mine * esz,
                                     (size_t)mine * esz));
            nq++;
            s++;
        }
    c->slots[c->myl].src = src;
    TRY_Q(hp_coll_bar(c));
    const void *srcs[256];
    const void **ps = c->L <= 256 ? srcs : malloc(sizeof(void *) * (size_t)c->L);
    if (!ps) TRY_Q(hp_coll_fail(c, "out of memory"));
    hp_status st = HP_OK;
    if (k > 1) {
        size_t pos = 0;
        for (int m = 0; m < g->n && !st; m++) {
            if (g->sn[m] == c->T || owner(g, c->T, m) != me) continue;
            size_t start = pos;
            const char *from = obox + start;
            if (c->L == 1 && nt == 1) { /* the partial is the input itself: sent from there */
                from = (const char *)src[0] + loff(l, 0, m) * (int64_t)esz;
                pos += (size_t)lcnt(l, 0, m) * esz;
            } else {
                for (int i = 0; i < nt; i++) {
                    int64_t n = lcnt(l, i, m);
                    if (c->L == 1) {
                        hp_comm_copy(obox + pos, (const char *)src[i] + loff(l, i, m) * (int64_t)esz, (size_t)n * esz, 0);
                    } else {
                        for (int j = 0; j < c->L; j++) ps[j] = peer_src(c, j)[i];
                        hp_coll_reduce_peers(obox + pos, 0, c->dt, ps, c->L, loff(l, i, m), n, 0, 0, c->tree);
                        peer_io(c, c->L - 1, n);
                    }
                    pos += (size_t)n * esz;
                }
            }
            st = hp_comm_link_isend(c->r, &q[nq], g->ranks[m], g->gid, from, pos - start);
            if (!st) nq++;
        }
    }
    int64_t apos = 0;
    for (int i = 0; i < nt && !st; i++) {
        for (int j = 0; j < c->L; j++) ps[j] = peer_src(c, j)[i];
        int64_t n = lcnt(l, i, me);
        if (solo) continue;
        peer_io(c, c->L - 1, n); /* the peers' inputs, read for the sum */
        if (k > 1) hp_coll_reduce_peers(acc + apos, 1, c->dt, ps, c->L, loff(l, i, me), n, 0, 0, c->tree);
        else hp_coll_reduce_peers(out[i], 0, c->dt, ps, c->L, loff(l, i, me), n, div, stream, c->tree);
        apos += n;
    }
    if (ps != srcs) free(ps);
    TRY_Q(st);
    TRY_Q(hp_coll_bar(c));
    HP_TRY(hp_coll_wait_all(c, q, nq));
    if (k > 1) {
        const void *parts[64];
        if (k - 1 > 64) return hp_coll_fail(c, "more than 65 supernodes in one group");
        int64_t pos = 0;
        for (int i = 0; i < nt; i++) {
            for (int s = 0; s < k - 1; s++) parts[s] = inbox + ((size_t)s * (size_t)mine + (size_t)pos) * esz;
            int64_t n = lcnt(l, i, me);
            const float *own = solo ? (const float *)src[i] + loff(l, i, me) : acc + pos;
            hp_coll_combine(out[i], c->dt, own, parts, k, c->T, n, div, stream, c->tree);
            pos += n;
        }
    }
    return HP_OK;
}

/* ---- all-gather: across the supernodes, then within ---- */

/* Copies this rank's shards from its inputs to their places in its outputs. */
static void own_shards(ctx *c, const lay *l, const void *const *in, void *const *out, int stream) {
    for (int i = 0; i < l->nt; i++) {
        char *dst = ptr_at(out[i], loff(l, i, c->me), c->esz);
        const char *src = in[i];
        size_t nb = (size_t)lcnt(l, i, c->me) * c->esz;
        if (dst == src || !nb) continue;
        c->copied += (int64_t)nb;
        if (dst < src + nb && src < dst + nb) memmove(dst, src, nb);
        else hp_comm_copy(dst, src, nb, stream);
    }
}

hp_status hp_coll_all_gather(ctx *c, const lay *l, const void *const *in, void *const *out) {
    hp_comm_group *g = c->g;
    int nt = l->nt, k = g->k, me = c->me;
    size_t esz = c->esz, outb = 0;
    /* with inputs apart from the outputs (or in place), shards are sent from
     * the inputs and the own copy overlaps the transfer */
    int early = k > 1;
    for (int i = 0; i < nt; i++) {
        size_t tb = 0;
        for (int m = 0; m < g->n; m++) tb += (size_t)lcnt(l, i, m) * esz;
        outb += tb;
        const char *o = out[i], *s = in[i], *at = ptr_at(out[i], loff(l, i, me), esz);
        size_t nb = (size_t)lcnt(l, i, me) * esz;
        if (s != at && nb && s < o + tb && o < s + nb) early = 0;
    }
    int stream = outb >= HP_COMM_STREAM_BYTES;
    if (c->fence) HP_TRY(hp_coll_bar(c));
    if (!early) own_shards(c, l, in, out, stream);
    if (k > 1) {
        /* incoming shards: members of other supernodes that this rank receives for its supernode */
        int nin = 0;
        size_t inbytes = 0, mybytes = 0;
        for (int i = 0; i < nt; i++) mybytes += (size_t)lcnt(l, i, me) * esz;
        for (int m = 0; m < g->n; m++)
            if (g->sn[m] != c->T && owner(g, c->T, m) == me) {
                nin++;
                for (int i = 0; i < nt; i++) inbytes += (size_t)lcnt(l, i, m) * esz;
            }
        int packed = nt > 1;
        char *sc = NULL;
        hp_comm_lreq *q;
        if (packed) HP_TRY(hp_coll_scratch(c, (void **)&sc, mybytes + inbytes));
        HP_TRY(hp_coll_lreqs(c, &q, (size_t)(k - 1 + nin)));
        int nq = 0;
        size_t pos = mybytes;
        for (int m = 0; m < g->n; m++) {
            if (g->sn[m] == c->T || owner(g, c->T, m) != me) continue;
            size_t nb = 0;
            for (int i = 0; i < nt; i++) nb += (size_t)lcnt(l, i, m) * esz;
            void *dst = packed ? sc + pos : ptr_at(out[0], loff(l, 0, m), esz);
            TRY_Q(hp_comm_link_irecv(c->r, &q[nq], g->ranks[m], g->gid, dst, nb));
            nq++;
            pos += nb;
        }
        const void *sendbuf = early ? in[0] : ptr_at(out[0], loff(l, 0, me), esz);
        if (packed) {
            size_t p = 0;
            for (int i = 0; i < nt; i++) {
                size_t nb = (size_t)lcnt(l, i, me) * esz;
                if (nb) memcpy(sc + p, early ? in[i] : ptr_at(out[i], loff(l, i, me), esz), nb);
                c->copied += (int64_t)nb;
                p += nb;
            }
            sendbuf = sc;
        }
        for (int T = 0; T < k; T++)
            if (T != c->T) {
                TRY_Q(hp_comm_link_isend(c->r, &q[nq], g->ranks[owner(g, T, me)], g->gid, sendbuf, mybytes));
                nq++;
            }
        if (early) own_shards(c, l, in, out, stream);
        HP_TRY(hp_coll_wait_all(c, q, nq));
        if (packed) {
            pos = mybytes;
            for (int m = 0; m < g->n; m++) {
                if (g->sn[m] == c->T || owner(g, c->T, m) != me) continue;
                for (int i = 0; i < nt; i++) {
                    size_t nb = (size_t)lcnt(l, i, m) * esz;
                    if (nb) memcpy(ptr_at(out[i], loff(l, i, m), esz), sc + pos, nb);
                    c->copied += (int64_t)nb;
                    pos += nb;
                }
            }
        }
    }
    c->slots[c->myl].src = in;
    c->slots[c->myl].dst = out;
    HP_TRY(hp_coll_bar(c));
    for (int m = 0; m < g->n; m++) {
        if (m == me) continue;
        int local = g->sn[m] == c->T, holder = local ? m : owner(g, c->T, m);
        if (holder == me) continue;
        hp_comm_slot *hs = &c->slots[g->lidx[holder]];
        for (int i = 0; i < nt; i++) {
            size_t nb = (size_t)lcnt(l, i, m) * esz;
            int64_t off = loff(l, i, m);
            /* a supernode-shared output already holds the holder's part */
            if (!nb || hs->dst[i] == out[i]) continue;
            /* a local peer's shard is read from its input, received shards from the holder's output */
            const void *from = local ? hs->src[i] : ptr_at(hs->dst[i], off, esz);
            hp_comm_copy(ptr_at(out[i], off, esz), from, nb, stream);
            c->copied += (int64_t)nb;
            peer_io(c, 1, lcnt(l, i, m));
        }
    }
    return hp_coll_bar(c);
}
