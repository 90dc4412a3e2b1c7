/* comm/coll: the collective algorithms. Inside a supernode every rank
 * publishes its buffer pointers in its slot, meets its peers at a barrier,
 * and then reads the peers' buffers directly (zero-copy); a second barrier
 * tells it that nobody reads its buffers any more. Between supernodes the
 * partial results move as one message per (source, destination) rank pair
 * and call (every fused tensor of the call packed into it):
 *   reduce-scatter: each supernode sums member m's shard over its own ranks
 *     (on the local rank with m's local index modulo the local count) and
 *     sends that partial to m, which adds the partials in supernode order;
 *   all-gather: each rank sends its shard to one rank per other supernode,
 *     which the rest of that supernode then reads zero-copy;
 *   all-reduce: the fused tensors are one vector cut into balanced chunks,
 *     one per member; in each supernode one rank handles a chunk from end to
 *     end (sums it out of the local inputs, exchanges partials and results
 *     across supernodes, writes it into every local output), so a call
 *     needs one barrier pair however many tensors it fuses. Between two
 *     supernodes the two handlers of a chunk swap partials (one round);
 *     beyond, partials go to the chunk's member and results come back.
 * Sums run in a fixed order: local ranks in member order, then supernode
 * partials (bf16 partials rounded once) in supernode order, so a result
 * does not depend on which rank computed it, on fusion or on the split.
 * When the ranks of a supernode pass the same output buffer (all-gather,
 * all-reduce, broadcast), the supernode shares one output: each rank writes
 * only its own part and nothing is copied between peers.
 * Per rank this moves 2 (k-1)/k * N / R bytes between k supernodes of R
 * ranks for an all-reduce of N bytes: the one-tier ring's figure over R. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/copy.h"
#include "comm/internal.h"

typedef struct {
    hp_comm_rank *r;
    hp_comm_group *g;
    const char *what;
    int me, T, L, myl;
    hp_comm_slot *slots;
    hp_comm_fence *bar;
    int64_t deadline;
    hp_dtype dt;
    size_t esz;
    const void *const *src; /* all-reduce: per tensor input */
    void *const *dst;       /* all-reduce: per tensor output */
} ctx;

/* Shard layout of a fused all-gather / reduce-scatter. */
typedef struct {
    int mode; /* 0: t[i].count each; 1: explicit counts (nt = 1) */
    int nt, n;
    const hp_comm_tensor *t;
    const int64_t *counts;
    const int64_t *offs;
} lay;

static int64_t lcnt(const lay *l, int i, int m) { return l->mode == 0 ? l->t[i].count : l->counts[m]; }

static int64_t loff(const lay *l, int i, int m) { return l->mode == 0 ? (int64_t)m * l->t[i].count : l->offs[m]; }

/* A single all-reduce between two lone ranks from this size on runs as
 * reduce-scatter + all-gather. */
#define SPLIT_AR_BYTES ((size_t)1 << 20)

/* ---- failure ---- */

static hp_status fail(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static hp_status fail(ctx *c, const char *fmt, ...) {
    char detail[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    hp_comm_group *g = c->g;
    char msg[400];
    snprintf(msg, sizeof msg, "comm: %s on group '%s' (rank %d): %s", c->what, g->name, c->r->rank, detail);
    pthread_mutex_lock(&g->fail_mu);
    if (!atomic_load(&g->failed)) {
        snprintf(g->fail_msg, sizeof g->fail_msg, "%s", msg);
        atomic_store(&g->failed, 1);
    }
    pthread_mutex_unlock(&g->fail_mu);
    for (int p = 0; p < g->k; p++)
        if (g->sng[p].slots) hp_comm_fence_break(&g->sng[p].bar);
    return hp_errorf("%s", msg);
}

static hp_status broken(ctx *c) {
    hp_comm_group *g = c->g;
    char first[400];
    pthread_mutex_lock(&g->fail_mu);
    snprintf(first, sizeof first, "%s", g->fail_msg);
    pthread_mutex_unlock(&g->fail_mu);
    return hp_errorf("comm: %s on group '%s' (rank %d): group broken by an earlier failure: %s", c->what,
                     g->name, c->r->rank, first);
}

static hp_status bar(ctx *c) {
    hp_comm_slot *mine = &c->slots[c->myl];
    long ph = atomic_fetch_add(&mine->phase, 1) + 1;
    int rc = hp_comm_fence_wait(c->bar, c->deadline);
    if (rc == 0) return HP_OK;
    if (rc == -2) return broken(c);
    int missing = -1;
    for (int j = 0; j < c->L; j++)
        if (atomic_load(&c->slots[j].phase) < ph) {
            missing = c->g->ranks[c->g->sn_members[c->T][j]];
            break;
        }
    return fail(c, "timed out after %g s waiting for rank %d", (double)c->r->w->timeout_ns / 1e9, missing);
}

/* Link waits wake every 20 ms to notice a failure elsewhere in the group,
 * and allow a grace period past the deadline (a quarter of the timeout, 50 ms
 * to 30 s) so that a peer stuck behind the really missing rank reports that
 * rank first: the error then names the root cause. */
static int64_t link_deadline(const ctx *c) {
    int64_t grace = c->r->w->timeout_ns / 4;
    if (grace < 50000000LL) grace = 50000000LL;
    if (grace > 30000000000LL) grace = 30000000000LL;
    return c->deadline + grace;
}

static int64_t slice_end(const ctx *c) {
    int64_t t = hp_comm_now_ns() + 20000000LL, d = link_deadline(c);
    return t < d ? t : d;
}

static hp_status wait_all(ctx *c, hp_comm_lreq *q, int n) {
    hp_status st = HP_OK;
    for (int i = 0; i < n; i++) {
        if (st) {
            hp_comm_link_cancel(c->r, &q[i]);
            continue;
        }
        int rc;
        while ((rc = hp_comm_link_wait(c->r, &q[i], slice_end(c))) && hp_comm_now_ns() < link_deadline(c) &&
               !atomic_load(&c->g->failed)) {
        }
        if (rc && atomic_load(&c->g->failed)) {
            st = broken(c);
            hp_comm_link_cancel(c->r, &q[i]);
        } else if (rc) {
            int peer = q[i].is_send ? q[i].dst : q[i].src;
            st = fail(c, "timed out after %g s waiting for rank %d (supernode %d)",
                      (double)c->r->w->timeout_ns / 1e9, peer, peer / c->r->w->R);
            hp_comm_link_cancel(c->r, &q[i]);
        } else if (q[i].size_mismatch) {
            st = fail(c, "message from rank %d has %s size than expected (%zu bytes posted)", q[i].src,
                      "a different", q[i].bytes);
        }
    }
    return st;
}

/* Withdraws posted requests when a call fails half-way, so no late message
 * lands in memory that is reused. */
static void cancel_all(ctx *c, hp_comm_lreq *q, int n) {
    for (int i = 0; i < n; i++) hp_comm_link_cancel(c->r, &q[i]);
}

#define TRY_Q(expr)                   \
    do {                              \
        hp_status tq_ = (expr);       \
        if (tq_) {                    \
            cancel_all(c, q, nq);     \
            return tq_;               \
        }                             \
    } while (0)

/* ---- scratch ---- */

static void *grow(void **p, size_t *cap, size_t need) {
    if (need <= *cap) return *p;
    size_t n = need + need / 2 + 256;
    n = (n + 63) & ~(size_t)63;
    void *q = aligned_alloc(64, n);
    if (!q) return NULL;
    free(*p);
    *p = q;
    *cap = n;
    return q;
}

static hp_status scratch(ctx *c, void **out, size_t bytes) {
    *out = grow(&c->r->scratch, &c->r->scratch_cap, bytes ? bytes : 64);
    return *out ? HP_OK : fail(c, "out of memory for %zu bytes of scratch", bytes);
}

static hp_status lreqs(ctx *c, hp_comm_lreq **out, size_t n) {
    *out = grow((void **)&c->r->lreqs, &c->r->lreqs_cap, (n ? n : 1) * sizeof(hp_comm_lreq));
    return *out ? HP_OK : fail(c, "out of memory for requests");
}

/* ---- arithmetic: fp32 sums in a fixed order ---- */

#define BLK 1024

static void load_f32(float *t, const void *src, hp_dtype dt, int64_t off, int64_t n) {
    if (dt == HP_F32) {
        memcpy(t, (const float *)src + off, (size_t)n * 4);
    } else {
        const uint16_t *s = (const uint16_t *)src + off;
        for (int64_t j = 0; j < n; j++) t[j] = hp_bf16_to_f32(s[j]);
    }
}

static void add_f32(float *t, const void *src, hp_dtype dt, int64_t off, int64_t n) {
    if (dt == HP_F32) {
        const float *s = (const float *)src + off;
        for (int64_t j = 0; j < n; j++) t[j] += s[j];
    } else {
        const uint16_t *s = (const uint16_t *)src + off;
        for (int64_t j = 0; j < n; j++) t[j] += hp_bf16_to_f32(s[j]);
    }
}

/* dst[off + j] (dt) = t[j] / div (div != 0) or t[j]; stream: past the caches. */
static void store(void *dst, hp_dtype dt, int64_t off, const float *t, int64_t n, float div, int stream) {
    float tmp[BLK];
    if (div != 0) {
        for (int64_t j = 0; j < n; j++) tmp[j] = t[j] / div;
        t = tmp;
    }
    if (dt == HP_F32) {
        hp_comm_copy((float *)dst + off, t, (size_t)n * 4, stream);
    } else {
        uint16_t *d = (uint16_t *)dst + off;
        for (int64_t j = 0; j < n; j++) d[j] = hp_f32_to_bf16(t[j]);
    }
}

/* out[j] (dt, or fp32 when acc) = sum over p of src[p][off + j], divided by div when div != 0. */
static void reduce_peers(void *out, int acc, hp_dtype dt, const void *const *src, int nsrc, int64_t off,
                         int64_t n, float div, int stream) {
    float t[BLK];
    for (int64_t b = 0; b < n; b += BLK) {
        int64_t nb = n - b < BLK ? n - b : BLK;
        load_f32(t, src[0], dt, off + b, nb);
        for (int p = 1; p < nsrc; p++) add_f32(t, src[p], dt, off + b, nb);
        if (acc) memcpy((float *)out + b, t, (size_t)nb * 4);
        else store(out, dt, b, t, nb, div, stream);
    }
}

/* Rounds fp32 values to bf16 and back (a partial that crosses supernodes as bf16). */
static void round_bf16(float *t, int64_t n) {
    for (int64_t j = 0; j < n; j++) t[j] = hp_bf16_to_f32(hp_f32_to_bf16(t[j]));
}

/* u = the k supernode partials summed in supernode order: own (fp32, at
 * position T, rounded like the others when dt is bf16) and parts[] (dt, the
 * other supernodes in order), each read at element off. */
static void canon_sum(float *u, hp_dtype dt, float *own, const void *const *parts, int k, int T, int64_t off,
                      int64_t n) {
    if (dt == HP_BF16) round_bf16(own, n);
    if (T == 0) memcpy(u, own, (size_t)n * 4);
    else load_f32(u, parts[0], dt, off, n);
    for (int p = 1; p < k; p++) {
        if (p == T) {
            for (int64_t j = 0; j < n; j++) u[j] += own[j];
        } else {
            add_f32(u, parts[p < T ? p : p - 1], dt, off, n);
        }
    }
}

/* out = the partials summed in supernode order (acc: this supernode's, fp32),
 * divided by div when div != 0. */
static void combine(void *out, hp_dtype dt, const float *acc, const void *const *parts, int k, int T, int64_t n,
                    float div, int stream) {
    float own[BLK], u[BLK];
    for (int64_t b = 0; b < n; b += BLK) {
        int64_t nb = n - b < BLK ? n - b : BLK;
        memcpy(own, acc + b, (size_t)nb * 4);
        canon_sum(u, dt, own, parts, k, T, b, nb);
        store(out, dt, b, u, nb, div, stream);
    }
}

/* ---- helpers ---- */

/* The rank of supernode position T that handles member m's data there. */
static int owner(const hp_comm_group *g, int T, int m) { return g->sn_members[T][g->lidx[m] % g->sn_n[T]]; }

static const void *const *peer_src(ctx *c, int j) { return c->slots[j].src; }

static void *ptr_at(void *base, int64_t off, size_t esz) { return (char *)base + off * (int64_t)esz; }

/* ---- reduce-scatter: within the supernode, then across ---- */

static hp_status reduce_scatter(ctx *c, const lay *l, const void *const *src, void *const *out, float div) {
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
    HP_TRY(scratch(c, (void **)&sc, acc_b + inbox_b + outbox));
    HP_TRY(lreqs(c, &q, (size_t)(k - 1 + nown)));
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
    TRY_Q(bar(c));
    const void *srcs[256];
    const void **ps = c->L <= 256 ? srcs : malloc(sizeof(void *) * (size_t)c->L);
    if (!ps) TRY_Q(fail(c, "out of memory"));
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
                        reduce_peers(obox + pos, 0, c->dt, ps, c->L, loff(l, i, m), n, 0, 0);
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
        if (k > 1) reduce_peers(acc + apos, 1, c->dt, ps, c->L, loff(l, i, me), n, 0, 0);
        else reduce_peers(out[i], 0, c->dt, ps, c->L, loff(l, i, me), n, div, stream);
        apos += n;
    }
    if (ps != srcs) free(ps);
    TRY_Q(st);
    TRY_Q(bar(c));
    HP_TRY(wait_all(c, q, nq));
    if (k > 1) {
        const void *parts[64];
        if (k - 1 > 64) return fail(c, "more than 65 supernodes in one group");
        int64_t pos = 0;
        for (int i = 0; i < nt; i++) {
            for (int s = 0; s < k - 1; s++) parts[s] = inbox + ((size_t)s * (size_t)mine + (size_t)pos) * esz;
            int64_t n = lcnt(l, i, me);
            const float *own = solo ? (const float *)src[i] + loff(l, i, me) : acc + pos;
            combine(out[i], c->dt, own, parts, k, c->T, n, div, stream);
            pos += n;
        }
    }
    return HP_OK;
}

/* ---- all-gather: across the supernodes, then within ---- */

/* Copies this rank's shards from its inputs to their places in its outputs. */
static void own_shards(const ctx *c, const lay *l, const void *const *in, void *const *out, int stream) {
    for (int i = 0; i < l->nt; i++) {
        char *dst = ptr_at(out[i], loff(l, i, c->me), c->esz);
        const char *src = in[i];
        size_t nb = (size_t)lcnt(l, i, c->me) * c->esz;
        if (dst == src || !nb) continue;
        if (dst < src + nb && src < dst + nb) memmove(dst, src, nb);
        else hp_comm_copy(dst, src, nb, stream);
    }
}

static hp_status all_gather(ctx *c, const lay *l, const void *const *in, void *const *out) {
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
        if (packed) HP_TRY(scratch(c, (void **)&sc, mybytes + inbytes));
        HP_TRY(lreqs(c, &q, (size_t)(k - 1 + nin)));
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
        HP_TRY(wait_all(c, q, nq));
        if (packed) {
            pos = mybytes;
            for (int m = 0; m < g->n; m++) {
                if (g->sn[m] == c->T || owner(g, c->T, m) != me) continue;
                for (int i = 0; i < nt; i++) {
                    size_t nb = (size_t)lcnt(l, i, m) * esz;
                    if (nb) memcpy(ptr_at(out[i], loff(l, i, m), esz), sc + pos, nb);
                    pos += nb;
                }
            }
        }
    }
    c->slots[c->myl].src = in;
    c->slots[c->myl].dst = out;
    HP_TRY(bar(c));
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
        }
    }
    return bar(c);
}

/* ---- all-reduce: one barrier pair per call ---- */

/* The fused tensors back to back: pre[i] is where tensor i starts. */
typedef struct {
    const hp_comm_tensor *t;
    int nt;
    const int64_t *pre;
} fvec;

/* Start of member m's chunk when N elements are cut into n balanced chunks. */
static int64_t chunk_at(int64_t N, int n, int m) {
    int64_t q = N / n, rem = N % n;
    return (int64_t)m * q + (m < rem ? m : rem);
}

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

/* t = the sum over local members (in order) of input i at [off, off + n). */
static void local_sum(const ctx *c, float *t, int i, int64_t off, int64_t n) {
    int j = 1;
    if (c->dt == HP_F32 && c->L >= 2) { /* the first two inputs in one pass */
        const float *a = (const float *)c->slots[0].src[i] + off, *b = (const float *)c->slots[1].src[i] + off;
        for (int64_t e = 0; e < n; e++) t[e] = a[e] + b[e];
        j = 2;
    } else {
        load_f32(t, c->slots[0].src[i], c->dt, off, n);
    }
    for (; j < c->L; j++) add_f32(t, c->slots[j].src[i], c->dt, off, n);
}

/* Copies a packed chunk [lo, hi) of the fused vector into every local output. */
static void push_packed(const ctx *c, const fvec *v, void **d, const char *from, int64_t lo, int64_t hi) {
    int i = 0;
    int64_t off, n, pos = 0;
    while ((n = next_piece(v, &i, &lo, hi, &off)) > 0) {
        int nd = local_dsts(c, i, d);
        for (int x = 0; x < nd; x++) memcpy(ptr_at(d[x], off, c->esz), from + pos * (int64_t)c->esz, (size_t)n * c->esz);
        pos += n;
    }
}

/* Packs this supernode's partial of chunk [lo, hi) (dt, rounded once) into out. */
static void pack_partial(const ctx *c, const fvec *v, char *out, int64_t lo, int64_t hi) {
    float t[BLK];
    int i = 0;
    int64_t off, pn;
    size_t pos = 0;
    while ((pn = next_piece(v, &i, &lo, hi, &off)) > 0)
        for (int64_t b = 0; b < pn; b += BLK) {
            int64_t nb = pn - b < BLK ? pn - b : BLK;
            local_sum(c, t, i, off + b, nb);
            store(out + pos, c->dt, 0, t, nb, 0, 0);
            pos += (size_t)nb * c->esz;
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
    HP_TRY(scratch(c, (void **)&sc, 2 * ab));
    HP_TRY(lreqs(c, &q, (size_t)(2 * nh)));
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
    TRY_Q(bar(c));
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
    hp_status st = wait_all(c, q, nrecv);
    if (st) {
        cancel_all(c, q + nrecv, nq - nrecv);
        return st;
    }
    /* an input sent in place must not change before the peer has it */
    if (any_direct && c->src[0] == c->dst[0]) {
        HP_TRY(wait_all(c, q + nrecv, nq - nrecv));
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
            for (int64_t b = 0; b < pn; b += BLK) {
                int64_t nb = pn - b < BLK ? pn - b : BLK;
                /* own partial: packed in obox, or (direct) the input itself */
                const char *own = hd[h] ? (const char *)c->src[0] + (off + b) * (int64_t)esz : obox + pos;
                load_f32(u, c->T == 0 ? own : inbox + pos, c->dt, 0, nb);
                add_f32(u, c->T == 0 ? inbox + pos : own, c->dt, 0, nb);
                if (div != 0)
                    for (int64_t j = 0; j < nb; j++) u[j] /= div;
                for (int x = 0; x < nd; x++) store(d[x], c->dt, off + b, u, nb, 0, stream);
                pos += (size_t)nb * esz;
            }
        }
    }
    HP_TRY(wait_all(c, q + nrecv, nq - nrecv));
    return bar(c);
}

/* Every chunk range is read (from every local input) and written (into every
 * local output) by one rank of each supernode only: member m in its own
 * supernode, owner(T, m) elsewhere. So after the first barrier no rank waits
 * for a local peer, and in-place calls and shared outputs need no care. */
static hp_status all_reduce(ctx *c, const fvec *v, float div) {
    hp_comm_group *g = c->g;
    int k = g->k, me = c->me, n = g->n;
    size_t esz = c->esz;
    int64_t N = v->pre[v->nt];
    int stream = (size_t)N * esz >= HP_COMM_STREAM_BYTES;
    int64_t lo = chunk_at(N, n, me), hi = chunk_at(N, n, me + 1), mine = hi - lo;
    void **d = (void **)grow(&c->r->ptrs2, &c->r->ptrs2_cap, sizeof(void *) * (size_t)c->L + 2 * sizeof(int) * (size_t)n);
    if (!d) return fail(c, "out of memory");
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
        HP_TRY(scratch(c, (void **)&sc, 2 * a1 + a2 + a3));
        HP_TRY(lreqs(c, &q, (size_t)(2 * (k - 1) + 2 * nown)));
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
    TRY_Q(bar(c));
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
        hp_status st = wait_all(c, q, nrs);
        if (st) {
            cancel_all(c, q + nrs, nq - nrs);
            return st;
        }
    }
    /* this rank's chunk: local sum, partials in supernode order, into every local output */
    const void *parts[64];
    if (k - 1 > 64) TRY_Q(fail(c, "more than 65 supernodes in one group"));
    for (int s = 0; s < k - 1; s++) parts[s] = inbox + (size_t)s * (size_t)mine * esz;
    {
        int i = 0;
        int64_t clo = lo, off, pn, pos = 0;
        while ((pn = next_piece(v, &i, &clo, hi, &off)) > 0) {
            int nd = local_dsts(c, i, d);
            for (int64_t b = 0; b < pn; b += BLK) {
                int64_t nb = pn - b < BLK ? pn - b : BLK;
                local_sum(c, t, i, off + b, nb);
                float *res = t;
                if (k > 1) {
                    canon_sum(u, c->dt, t, parts, k, c->T, pos + b, nb);
                    res = u;
                }
                if (div != 0)
                    for (int64_t j = 0; j < nb; j++) res[j] /= div;
                if (k > 1) store(red, c->dt, pos + b, res, nb, 0, 0);
                for (int x = 0; x < nd; x++) store(d[x], c->dt, off + b, res, nb, 0, stream);
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
        HP_TRY(wait_all(c, q + nrs, nq - nrs));
        pos = 0;
        for (int m = 0; m < n; m++) {
            if (g->sn[m] == c->T || owner(g, c->T, m) != me) continue;
            int64_t mlo = chunk_at(N, n, m), mhi = chunk_at(N, n, m + 1);
            push_packed(c, v, d, rbox + pos, mlo, mhi);
            pos += (size_t)(mhi - mlo) * esz;
        }
    }
    return bar(c);
}

/* ---- broadcast: root to one rank per supernode, then zero-copy within ---- */

static hp_status broadcast(ctx *c, const hp_comm_args *a, void *const *buf) {
    hp_comm_group *g = c->g;
    int k = g->k, rt = a->peer, Tr = g->sn[rt];
    if (k > 1) {
        hp_comm_lreq *q;
        HP_TRY(lreqs(c, &q, (size_t)(k * a->nt)));
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
        HP_TRY(wait_all(c, q, nq));
    }
    int holder = c->T == Tr ? rt : owner(g, c->T, rt);
    c->slots[c->myl].dst = buf;
    HP_TRY(bar(c));
    if (c->me != holder) {
        void *const *pd = c->slots[g->lidx[holder]].dst;
        for (int i = 0; i < a->nt; i++)
            if (a->t[i].count && pd[i] != buf[i]) memcpy(buf[i], pd[i], (size_t)a->t[i].count * c->esz);
    }
    return bar(c);
}

/* ---- all-to-all: direct messages across, zero-copy reads within ---- */

static int64_t cnt_of(const int64_t *counts, int64_t count, int j) { return counts ? counts[j] : count; }

static hp_status all_to_all(ctx *c, const hp_comm_args *a) {
    hp_comm_group *g = c->g;
    const hp_comm_tensor *t = &a->t[0];
    size_t esz = c->esz;
    int n = g->n, me = c->me;
    int64_t *offs = grow(&c->r->ptrs, &c->r->ptrs_cap, sizeof(int64_t) * 2 * (size_t)(n + 1));
    if (!offs) return fail(c, "out of memory");
    int64_t *soff = offs, *roff = offs + n + 1;
    soff[0] = roff[0] = 0;
    for (int j = 0; j < n; j++) {
        soff[j + 1] = soff[j] + cnt_of(a->counts, t->count, j);
        roff[j + 1] = roff[j] + cnt_of(a->recv_counts, t->count, j);
    }
    int ncross = 0;
    for (int j = 0; j < n; j++) ncross += g->sn[j] != c->T;
    hp_comm_lreq *q;
    HP_TRY(lreqs(c, &q, (size_t)(2 * ncross)));
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
    TRY_Q(bar(c));
    hp_status st = HP_OK;
    for (int j = 0; j < c->L; j++) {
        int m = g->sn_members[c->T][j];
        hp_comm_slot *ps = &c->slots[j];
        int64_t off = 0;
        for (int x = 0; x < me; x++) off += cnt_of(ps->counts, ps->count, x);
        int64_t nn = cnt_of(ps->counts, ps->count, me);
        if (nn != roff[m + 1] - roff[m]) {
            if (!st)
                st = hp_errorf("comm: all_to_all on group '%s' (rank %d): rank %d sends %lld elements, %lld expected",
                               g->name, c->r->rank, g->ranks[m], (long long)nn, (long long)(roff[m + 1] - roff[m]));
            continue;
        }
        if (nn) memcpy(ptr_at(t->recv, roff[m], esz), ptr_at((void *)ps->src[0], off, esz), (size_t)nn * esz);
    }
    hp_status st2 = wait_all(c, q, nq);
    hp_status st3 = bar(c);
    if (st) {
        hp_status_free(st2);
        hp_status_free(st3);
        return st;
    }
    if (st2) {
        hp_status_free(st3);
        return st2;
    }
    return st3;
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
    if (a->dtype != HP_F32 && a->dtype != HP_BF16)
        return hp_errorf("comm: %s on group '%s': dtype %s is not f32 or bf16", w, gn, hp_dtype_name(a->dtype));
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

hp_status hp_comm_exec(hp_comm_rank *r, hp_comm_group *g, const hp_comm_args *a) {
    ctx c;
    memset(&c, 0, sizeof c);
    c.r = r;
    c.g = g;
    c.what = kind_name(a->kind);
    c.me = hp_comm_group_index(g, r->rank);
    if (c.me < 0) return hp_errorf("comm: %s on group '%s': rank %d is not a member", c.what, g->name, r->rank);
    if (g->w != r->w) return hp_errorf("comm: %s on group '%s': the group belongs to another world", c.what, g->name);
    if (atomic_load(&g->failed)) return broken(&c);
    c.T = g->sn[c.me];
    c.L = g->sn_n[c.T];
    c.myl = g->lidx[c.me];
    c.slots = g->sng[c.T].slots;
    c.bar = &g->sng[c.T].bar;
    c.dt = a->dtype;
    c.esz = hp_dtype_size(a->dtype);
    c.deadline = hp_comm_now_ns() + r->w->timeout_ns;
    HP_TRY(check_args(&c, a));
    int nt = a->nt;
    float div = a->op == HP_COMM_AVG ? (float)g->n : 0;

    if (a->kind == HP_COMM_SEND || a->kind == HP_COMM_RECV) {
        hp_comm_lreq *q;
        HP_TRY(lreqs(&c, &q, 1));
        size_t nb = (size_t)a->t[0].count * c.esz;
        if (a->kind == HP_COMM_SEND)
            HP_TRY(hp_comm_link_isend(r, q, g->ranks[a->peer], g->gid, a->t[0].send, nb));
        else
            HP_TRY(hp_comm_link_irecv(r, q, g->ranks[a->peer], g->gid, a->t[0].recv, nb));
        return wait_all(&c, q, 1);
    }
    if (a->kind == HP_COMM_BARRIER) {
        HP_TRY(bar(&c));
        if (g->k > 1 && c.myl == 0) {
            hp_comm_lreq *q;
            HP_TRY(lreqs(&c, &q, (size_t)(2 * g->k)));
            int nq = 0;
            for (int T = 0; T < g->k; T++) {
                if (T == c.T) continue;
                int lead = g->ranks[g->sn_members[T][0]];
                hp_status ps = hp_comm_link_irecv(r, &q[nq], lead, g->gid, NULL, 0);
                if (!ps) nq++;
                if (!ps) ps = hp_comm_link_isend(r, &q[nq], lead, g->gid, NULL, 0);
                if (ps) {
                    cancel_all(&c, q, nq);
                    return ps;
                }
                nq++;
            }
            HP_TRY(wait_all(&c, q, nq));
        }
        return bar(&c);
    }
    if (a->kind == HP_COMM_ALL_TO_ALL) return all_to_all(&c, a);

    /* pointer arrays for the fused tensors: [src][dst] */
    size_t noffs = (size_t)(g->n > nt ? g->n : nt) + 1;
    void **pp = grow(&r->ptrs, &r->ptrs_cap, sizeof(void *) * 2 * (size_t)nt + sizeof(int64_t) * noffs);
    if (!pp) return fail(&c, "out of memory");
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
        return broadcast(&c, a, dst);
    case HP_COMM_ALL_GATHER:
        for (int i = 0; i < nt; i++) {
            src[i] = a->t[i].send;
            dst[i] = a->t[i].recv;
        }
        return all_gather(&c, &l, src, dst);
    case HP_COMM_REDUCE_SCATTER:
        for (int i = 0; i < nt; i++) {
            src[i] = a->t[i].send;
            dst[i] = a->t[i].recv;
        }
        return reduce_scatter(&c, &l, src, dst, div);
    case HP_COMM_ALL_REDUCE: {
        if (nt == 1 && g->k == 2 && g->n == 2 && (size_t)a->t[0].count * c.esz >= SPLIT_AR_BYTES) {
            /* two supernodes of one rank, one large tensor: reduce-scatter,
             * then all-gather, so each rank sums half of the vector instead of
             * all of it (same bytes on the link, same order of the sums) */
            int64_t N = a->t[0].count, h = chunk_at(N, 2, 1);
            int64_t cnt[2] = {h, N - h}, at[3] = {0, h, N};
            lay l2 = {1, 1, 2, a->t, cnt, at};
            src[0] = a->t[0].send ? a->t[0].send : a->t[0].recv;
            dst[0] = ptr_at(a->t[0].recv, at[c.me], c.esz);
            HP_TRY(reduce_scatter(&c, &l2, src, dst, div));
            src[0] = dst[0];
            dst[0] = a->t[0].recv;
            return all_gather(&c, &l2, src, dst);
        }
        int64_t *pre = offs;
        pre[0] = 0;
        for (int i = 0; i < nt; i++) {
            src[i] = a->t[i].send ? a->t[i].send : a->t[i].recv;
            dst[i] = a->t[i].recv;
            pre[i + 1] = pre[i] + a->t[i].count;
        }
        c.src = src;
        c.dst = dst;
        fvec v = {a->t, nt, pre};
        return all_reduce(&c, &v, div);
    }
    default: break;
    }
    return hp_errorf("comm: unknown collective kind %d", (int)a->kind);
}
