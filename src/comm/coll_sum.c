/* comm/coll_sum: the arithmetic of the reducing collectives. Sums run in
 * fp32 in a fixed order: local ranks in member order, then supernode
 * partials (bf16 partials rounded once) in supernode order, so a result
 * does not depend on which rank computed it, on fusion or on the split.
 * With hp_comm_args.tree the same sources are added as a binary tree over
 * their positions instead of left to right (hp_coll_tree_sum): with a
 * power-of-two rank count per supernode and per group, the local trees then
 * the supernode tree are one tree over all members, whatever the split into
 * supernodes (the deterministic mode's reductions). */
#include <string.h>

#include "comm/coll_internal.h"
#include "comm/copy.h"

/* ---- arithmetic: fp32 sums in a fixed order ---- */

void hp_coll_load_f32(float *t, const void *src, hp_dtype dt, int64_t off, int64_t n) {
    if (dt == HP_F32) {
        memcpy(t, (const float *)src + off, (size_t)n * 4);
    } else {
        const uint16_t *s = (const uint16_t *)src + off;
        for (int64_t j = 0; j < n; j++) t[j] = hp_bf16_to_f32(s[j]);
    }
}

void hp_coll_add_f32(float *t, const void *src, hp_dtype dt, int64_t off, int64_t n) {
    if (dt == HP_F32) {
        const float *s = (const float *)src + off;
        for (int64_t j = 0; j < n; j++) t[j] += s[j];
    } else {
        const uint16_t *s = (const uint16_t *)src + off;
        for (int64_t j = 0; j < n; j++) t[j] += hp_bf16_to_f32(s[j]);
    }
}

/* dst[off + j] (dt) = t[j] / div (div != 0) or t[j]; stream: past the caches. */
void hp_coll_store(void *dst, hp_dtype dt, int64_t off, const float *t, int64_t n, float div, int stream) {
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

/* The binary tree over sources 0..n-1: a counter of partial sums, level l
 * holding the sum of the last 2^l sources seen; source p closes the levels of
 * the 1 bits of p. With n a power of two the result is ((s0+s1)+(s2+s3))...;
 * otherwise the leftover levels are added from the highest (earliest) down.
 * t (nb floats) receives the sum; the levels need (log2(n) + 1) * BLK floats. */
void hp_coll_tree_sum(float *t, const hp_coll_src *src, int n, int64_t nb) {
    float lv[9][BLK]; /* up to 256 sources */
    int top = -1;     /* highest level in use */
    unsigned used = 0;
    HP_ASSERT(n >= 1 && n <= 256 && nb <= BLK);
    for (int p = 0; p < n; p++) {
        float *c = t;
        hp_coll_load_f32(c, src[p].p, src[p].dt, src[p].off, nb);
        int l = 0;
        for (; (unsigned)p >> l & 1u; l++) { /* lv[l] + c: earlier on the left */
            for (int64_t j = 0; j < nb; j++) c[j] = lv[l][j] + c[j];
            used &= ~(1u << l);
        }
        memcpy(lv[l], c, (size_t)nb * 4);
        used |= 1u << l;
        if (l > top) top = l;
    }
    int first = 1;
    for (int l = top; l >= 0; l--) {
        if (!(used >> l & 1u)) continue;
        if (first) memcpy(t, lv[l], (size_t)nb * 4), first = 0;
        else
            for (int64_t j = 0; j < nb; j++) t[j] = t[j] + lv[l][j];
    }
}

/* out[j] (dt, or fp32 when acc) = sum over p of src[p][off + j] (left to
 * right, or as a tree), divided by div when div != 0. */
void hp_coll_reduce_peers(void *out, int acc, hp_dtype dt, const void *const *src, int nsrc, int64_t off,
                          int64_t n, float div, int stream, int tree) {
    float t[BLK];
    hp_coll_src ts[256];
    for (int64_t b = 0; b < n; b += BLK) {
        int64_t nb = n - b < BLK ? n - b : BLK;
        if (tree && nsrc > 2) {
            for (int p = 0; p < nsrc; p++) ts[p] = (hp_coll_src){src[p], dt, off + b};
            hp_coll_tree_sum(t, ts, nsrc, nb);
        } else {
            hp_coll_load_f32(t, src[0], dt, off + b, nb);
            for (int p = 1; p < nsrc; p++) hp_coll_add_f32(t, src[p], dt, off + b, nb);
        }
        if (acc) memcpy((float *)out + b, t, (size_t)nb * 4);
        else hp_coll_store(out, dt, b, t, nb, div, stream);
    }
}

/* Rounds fp32 values to bf16 and back (a partial that crosses supernodes as bf16). */
static void round_bf16(float *t, int64_t n) {
    for (int64_t j = 0; j < n; j++) t[j] = hp_bf16_to_f32(hp_f32_to_bf16(t[j]));
}

/* u = the k supernode partials summed in supernode order: own (fp32, at
 * position T, rounded like the others when dt is bf16) and parts[] (dt, the
 * other supernodes in order), each read at element off. */
void hp_coll_canon_sum(float *u, hp_dtype dt, float *own, const void *const *parts, int k, int T, int64_t off,
                       int64_t n, int tree) {
    if (dt == HP_BF16) round_bf16(own, n);
    if (tree && k > 2) {
        hp_coll_src ts[256];
        HP_ASSERT(k <= 256);
        for (int p = 0; p < k; p++)
            ts[p] = p == T ? (hp_coll_src){own, HP_F32, 0} : (hp_coll_src){parts[p < T ? p : p - 1], dt, off};
        hp_coll_tree_sum(u, ts, k, n);
        return;
    }
    if (T == 0) memcpy(u, own, (size_t)n * 4);
    else hp_coll_load_f32(u, parts[0], dt, off, n);
    for (int p = 1; p < k; p++) {
        if (p == T) {
            for (int64_t j = 0; j < n; j++) u[j] += own[j];
        } else {
            hp_coll_add_f32(u, parts[p < T ? p : p - 1], dt, off, n);
        }
    }
}

/* out = the partials summed in supernode order (acc: this supernode's, fp32),
 * divided by div when div != 0. */
void hp_coll_combine(void *out, hp_dtype dt, const float *acc, const void *const *parts, int k, int T, int64_t n,
                     float div, int stream, int tree) {
    float own[BLK], u[BLK];
    for (int64_t b = 0; b < n; b += BLK) {
        int64_t nb = n - b < BLK ? n - b : BLK;
        memcpy(own, acc + b, (size_t)nb * 4);
        hp_coll_canon_sum(u, dt, own, parts, k, T, b, nb, tree);
        hp_coll_store(out, dt, b, u, nb, div, stream);
    }
}
