/* comm/coll_sum: the arithmetic of the reducing collectives. Sums run in
 * fp32 in a fixed order: local ranks in member order, then supernode
 * partials (bf16 partials rounded once) in supernode order, so a result
 * does not depend on which rank computed it, on fusion or on the split. */
#include <string.h>

#include "comm/coll_impl.h"
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

/* out[j] (dt, or fp32 when acc) = sum over p of src[p][off + j], divided by div when div != 0. */
void hp_coll_reduce_peers(void *out, int acc, hp_dtype dt, const void *const *src, int nsrc, int64_t off,
                          int64_t n, float div, int stream) {
    float t[BLK];
    for (int64_t b = 0; b < n; b += BLK) {
        int64_t nb = n - b < BLK ? n - b : BLK;
        hp_coll_load_f32(t, src[0], dt, off + b, nb);
        for (int p = 1; p < nsrc; p++) hp_coll_add_f32(t, src[p], dt, off + b, nb);
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
                       int64_t n) {
    if (dt == HP_BF16) round_bf16(own, n);
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
                     float div, int stream) {
    float own[BLK], u[BLK];
    for (int64_t b = 0; b < n; b += BLK) {
        int64_t nb = n - b < BLK ? n - b : BLK;
        memcpy(own, acc + b, (size_t)nb * 4);
        hp_coll_canon_sum(u, dt, own, parts, k, T, b, nb);
        hp_coll_store(out, dt, b, u, nb, div, stream);
    }
}
