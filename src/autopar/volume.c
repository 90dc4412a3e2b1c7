/* autopar/volume: the per-member, per-tier bytes and messages of one
 * collective call, from the formulas in volume.h (one function per kind). */
#include "autopar/volume.h"

#include <string.h>

#include "comm/comm.h"

/* The call with its derived sizes. */
typedef struct {
    const hp_coll_call *c;
    int64_t n;   /* elements */
    int64_t q;   /* floor(n / p) */
    int64_t rem; /* n mod p: members below it hold one element more */
    int p, s, L;
    int64_t e;
} shape;

/* Bytes of the shards of members [a, b). */
static int64_t span(const shape *h, int a, int b) {
    if (b <= a) return 0;
    int64_t lo = (int64_t)a * h->q + (a < h->rem ? a : h->rem), hi = (int64_t)b * h->q + (b < h->rem ? b : h->rem);
    return (hi - lo) * h->e;
}

static int64_t shard(const shape *h, int x) { return span(h, x, x + 1); }

/* How many of members [a, b) hold a nonempty shard. */
static int nonempty(const shape *h, int a, int b) {
    if (b <= a) return 0;
    if (h->q > 0) return b - a;
    int hi = b < h->rem ? b : (int)h->rem, lo = a < h->rem ? a : (int)h->rem;
    return hi - lo;
}

static void add(hp_coll_vol *v, int tier, int64_t bytes, int64_t msgs) {
    v->bytes[tier] += bytes;
    v->msgs[tier] += msgs;
}

static void all_gather(hp_coll_vol *v, const shape *h, int m) {
    int l = m % h->L;
    add(v, HP_PROF_INTER, (int64_t)(h->s - 1) * shard(h, m), h->s - 1);
    if (h->c->shared_output) return;
    /* every shard but those of R_l */
    int64_t bytes = h->n * h->e, msgs = nonempty(h, 0, h->p);
    for (int U = 0; U < h->s; U++) {
        int64_t b = shard(h, U * h->L + l);
        bytes -= b;
        msgs -= b > 0;
    }
    add(v, HP_PROF_INTRA, bytes, msgs);
}

static void reduce_scatter(hp_coll_vol *v, const shape *h, int m) {
    int T = m / h->L, l = m % h->L, peers = h->L - 1;
    for (int U = 0; U < h->s; U++) {
        int64_t b = shard(h, U * h->L + l);
        if (U != T) add(v, HP_PROF_INTER, b, 1);
        if (b > 0) add(v, HP_PROF_INTRA, peers * b, peers);
    }
}

static void all_reduce(hp_coll_vol *v, const shape *h, int m) {
    const hp_coll_call *c = h->c;
    if (h->p == 2 && h->s == 2 && (size_t)c->bytes >= HP_COMM_SPLIT_ALL_REDUCE_BYTES) {
        add(v, HP_PROF_INTER, c->bytes, 2);
        return;
    }
    int T = m / h->L, l = m % h->L, io = h->L - 1 + (c->shared_output ? 0 : h->L - 1);
    int64_t own = shard(h, m);
    for (int U = 0; U < h->s; U++) {
        int64_t b = shard(h, U * h->L + l);
        if (b > 0) add(v, HP_PROF_INTRA, io * b, io);
        if (U != T && h->s >= 3 && b > 0) add(v, HP_PROF_INTER, b, 1);
    }
    if (h->s == 2) {
        int64_t b = own + shard(h, (1 - T) * h->L + l);
        if (b > 0) add(v, HP_PROF_INTER, b, 1);
    } else if (h->s >= 3 && own > 0) {
        add(v, HP_PROF_INTER, (int64_t)(h->s - 1) * own, h->s - 1);
    }
}

static void broadcast(hp_coll_vol *v, const shape *h, int m) {
    const hp_coll_call *c = h->c;
    int T = m / h->L, r = c->peer, holder = r / h->L == T ? r : T * h->L + r % h->L;
    if (m == r) add(v, HP_PROF_INTER, (int64_t)(h->s - 1) * c->bytes, h->s - 1);
    if (m != holder && !c->shared_output && c->bytes > 0) add(v, HP_PROF_INTRA, c->bytes, 1);
}

/* Whether the all-to-all's pair T -> U fuses: S_U the bytes each member of T sends to U's members. */
static int a2a_fuses(const shape *h, int64_t S_U) {
    int64_t thr = h->c->a2a_fuse_bytes, pairs = (int64_t)h->L * h->L;
    return h->s > 1 && h->L > 1 && thr > 0 && (int64_t)h->L * S_U / pairs < thr;
}

static void all_to_all(hp_coll_vol *v, const shape *h, int m) {
    int T = m / h->L, l = m % h->L, L = h->L;
    int64_t own = shard(h, m), S_T = span(h, T * L, T * L + L);
    if (own > 0) add(v, HP_PROF_INTRA, (L - 1) * own, L - 1);
    for (int U = 0; U < h->s; U++) {
        if (U == T) continue;
        int64_t S_U = span(h, U * L, U * L + L);
        if (!a2a_fuses(h, S_U)) {
            add(v, HP_PROF_INTER, S_U, L);
        } else if (U % L == l) {
            add(v, HP_PROF_INTER, 8 * (int64_t)L * L + (int64_t)L * S_U, 1);
            add(v, HP_PROF_INTRA, (int64_t)(L - 1) * S_U, (int64_t)(L - 1) * nonempty(h, U * L, U * L + L));
        }
        if (U % L == l && a2a_fuses(h, S_T)) /* U -> T: this member unpacks it */
            add(v, HP_PROF_INTRA, (int64_t)L * (S_T - own),
                (int64_t)L * (nonempty(h, T * L, T * L + L) - (own > 0)));
    }
}

static void send(hp_coll_vol *v, const shape *h, int m) {
    int tier = m / h->L == h->c->peer / h->L ? HP_PROF_INTRA : HP_PROF_INTER;
    add(v, tier, h->c->bytes, 1);
}

static void one(hp_coll_vol *v, const shape *h, int m) {
    memset(v, 0, sizeof *v);
    switch ((int)h->c->kind) {
    case HP_PROF_ALL_GATHER: all_gather(v, h, m); break;
    case HP_PROF_REDUCE_SCATTER: reduce_scatter(v, h, m); break;
    case HP_PROF_ALL_REDUCE: all_reduce(v, h, m); break;
    case HP_PROF_ALL_TO_ALL: all_to_all(v, h, m); break;
    case HP_PROF_SEND: send(v, h, m); break;
    default: broadcast(v, h, m); break;
    }
}

hp_status hp_coll_volume(hp_coll_vol *out, const hp_coll_call *c, int member) {
    memset(out, 0, sizeof *out);
    int k = (int)c->kind;
    if (k < 0 || k > (int)HP_VOL_BROADCAST) return hp_errorf("autopar/volume: kind: %d is not a collective kind", k);
    if (c->members < 1) return hp_errorf("autopar/volume: members: %d is not >= 1", c->members);
    if (c->supernodes < 1 || c->members % c->supernodes)
        return hp_errorf("autopar/volume: supernodes: %d does not divide members %d", c->supernodes, c->members);
    if (c->elem_bytes < 1) return hp_errorf("autopar/volume: elem_bytes: %d is not >= 1", c->elem_bytes);
    if (c->bytes < 0 || c->bytes % c->elem_bytes)
        return hp_errorf("autopar/volume: bytes: %lld is not a nonnegative multiple of elem_bytes %d",
                         (long long)c->bytes, c->elem_bytes);
    if (c->a2a_fuse_bytes < 0)
        return hp_errorf("autopar/volume: a2a_fuse_bytes: %lld is negative", (long long)c->a2a_fuse_bytes);
    int p = c->members, has_peer = k == (int)HP_PROF_SEND || k == (int)HP_VOL_BROADCAST;
    if (has_peer && (c->peer < 0 || c->peer >= p))
        return hp_errorf("autopar/volume: peer: %d is not a member index in [0, %d)", c->peer, p);
    if (member < -1 || member >= p)
        return hp_errorf("autopar/volume: member: %d is not -1 or a member index in [0, %d)", member, p);
    if (k == (int)HP_PROF_SEND && p == 1) return hp_errorf("autopar/volume: send: a group of 1 member has no peer");
    if (k == (int)HP_PROF_SEND && member == c->peer)
        return hp_errorf("autopar/volume: send: member %d cannot send to itself", member);
    shape h = {c, c->bytes / c->elem_bytes, 0, 0, p, c->supernodes, p / c->supernodes, c->elem_bytes};
    h.q = h.n / p;
    h.rem = h.n % p;
    if (member >= 0) {
        one(out, &h, member);
        return HP_OK;
    }
    for (int m = 0; m < p; m++) {
        if (k == (int)HP_PROF_SEND && m == c->peer) continue;
        hp_coll_vol v;
        one(&v, &h, m);
        for (int t = 0; t < HP_PROF_NTIERS; t++) {
            if (v.bytes[t] > out->bytes[t]) out->bytes[t] = v.bytes[t];
            if (v.msgs[t] > out->msgs[t]) out->msgs[t] = v.msgs[t];
        }
    }
    return HP_OK;
}
