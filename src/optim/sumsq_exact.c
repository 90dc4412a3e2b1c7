/* optim/sumsq_exact: the exact sum of squares (see the header). */
#include "optim/sumsq_exact.h"

#include <math.h>
#include <string.h>

#define BINS HP_SUMSQ_EXACT_BINS
#define NAN_AT (2 * BINS)
#define INF_AT (2 * BINS + 1)

void hp_sumsq_exact_clear(hp_sumsq_exact *a) { memset(a, 0, sizeof *a); }

void hp_sumsq_exact_add(hp_sumsq_exact *a, const float *x, long n, int shift) {
    uint64_t *lo = a->w, *hi = a->w + BINS;
    int off = HP_SUMSQ_EXACT_SHIFT - shift;
    for (long i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        uint32_t e = u >> 23 & 0xffu, m = u & 0x7fffffu;
        if (e == 0xffu) {
            a->w[m ? NAN_AT : INF_AT]++;
            continue;
        }
        if (e) m |= 1u << 23;
        else if (!m) continue; /* a zero */
        else e = 1;            /* a subnormal: m * 2^(1 - 150) */
        uint64_t s = (uint64_t)m * m;
        int b = 2 * (int)e + off;
        lo[b] += s;
        hi[b] += lo[b] < s; /* the carry */
    }
}

void hp_sumsq_exact_merge(hp_sumsq_exact *a, const hp_sumsq_exact *b) {
    uint64_t *lo = a->w, *hi = a->w + BINS;
    for (int i = 0; i < BINS; i++) {
        lo[i] += b->w[i];
        hi[i] += b->w[BINS + i] + (lo[i] < b->w[i]);
    }
    a->w[NAN_AT] += b->w[NAN_AT];
    a->w[INF_AT] += b->w[INF_AT];
}

/* The canonical form: N = sum over i of (hi_i 2^64 + lo_i) 2^i as limbs of
 * 64 bits, little end first (BINS + 128 bits and a margin for the carries). */
#define LIMBS ((BINS + 128) / 64 + 2)

static void add_at(uint64_t *limb, int bit, uint64_t v) {
    int k = bit / 64, s = bit % 64;
    uint64_t parts[2] = {v << s, s ? v >> (64 - s) : 0};
    for (int j = 0; j < 2; j++) {
        uint64_t c = parts[j];
        for (int q = k + j; c && q < LIMBS; q++) {
            limb[q] += c;
            c = limb[q] < c;
        }
    }
}

double hp_sumsq_exact_value(const hp_sumsq_exact *a) {
    if (a->w[NAN_AT]) return NAN;
    if (a->w[INF_AT]) return INFINITY;
    uint64_t limb[LIMBS];
    memset(limb, 0, sizeof limb);
    for (int i = 0; i < BINS; i++) {
        add_at(limb, i, a->w[i]);
        add_at(limb, i + 64, a->w[BINS + i]);
    }
    /* from the top limb down: a fixed sequence of additions of a fixed N */
    double v = 0;
    for (int q = LIMBS - 1; q >= 0; q--)
        if (limb[q]) v += ldexp((double)limb[q], 64 * q - 332);
    return v;
}

int hp_sumsq_exact_shift(float w) {
    int e;
    float f = frexpf(w, &e); /* w = f 2^e, f in [0.5, 1) */
    if (!(w > 0 && w <= 1) || f != 0.5f || 1 - e >= HP_SUMSQ_EXACT_SHIFT) return -1;
    return 1 - e;
}
