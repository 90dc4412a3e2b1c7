#include "io/crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define HAVE_X86_CRC 1
#else
#define HAVE_X86_CRC 0
#endif

#define POLY 0x82F63B78u /* reflected Castagnoli polynomial */
#define LONG_BLOCK 8192  /* bytes per stream of the three-stream loop */
#define SHORT_BLOCK 256  /* the same for what is left after the long blocks */
#define COPY_CHUNK 65536 /* hp_crc32c_copy: checksummed, then copied while in the cache */

/* Constant tables, built once. A register value is a polynomial over GF(2)
 * of degree < 32 with x^0 in bit 31 (the reflected order). */
typedef struct {
    uint32_t slice[8][256];            /* slicing-by-8: slice[k][b] = b followed by k zero bytes */
    uint32_t shift_long[4][256];       /* multiplication by x^(8 LONG_BLOCK), byte by byte of the factor */
    uint32_t shift_short[4][256];      /* by x^(8 SHORT_BLOCK) */
    uint32_t xpow[64];                 /* x^(2^k) mod P */
    uint64_t fold1024[2], fold128[2];  /* folding a 128-bit lane 1024 or 128 bits on (see raw_fold) */
    int hw;                            /* the SSE4.2 instruction is there */
    int fold;                          /* and AVX2 with VPCLMULQDQ: raw_fold */
} crc_tables;

static crc_tables g_tab;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* a * b mod P (both reflected). */
static uint32_t gf_mul(uint32_t a, uint32_t b) {
    uint32_t p = 0;
    for (int i = 0; i < 32; i++) {
        if (a & (0x80000000u >> i)) p ^= b;
        b = (b & 1) ? (b >> 1) ^ POLY : b >> 1; /* b * x */
    }
    return p;
}

/* x^e mod P. */
static uint32_t x_pow(const crc_tables *t, uint64_t e) {
    uint32_t r = 0x80000000u; /* x^0 */
    for (int k = 0; e && k < 64; k++, e >>= 1)
        if (e & 1) r = gf_mul(r, t->xpow[k]);
    return r;
}

/* x^(8 n) mod P. */
static uint32_t x_pow_bytes(const crc_tables *t, uint64_t n) { return x_pow(t, n << 3); }

/* The constants that move a 128-bit lane d bits on (raw_fold). */
static void fold_constants(uint64_t k[2], const crc_tables *t, uint64_t d) {
    k[0] = (uint64_t)x_pow(t, d + 63) << 32;
    k[1] = (uint64_t)x_pow(t, d - 1) << 32;
}

static void fill_shift(uint32_t tab[4][256], uint32_t factor) {
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++) tab[k][b] = gf_mul(factor, b << (8 * k));
}

static void build_tables(void) {
    crc_tables *t = &g_tab;
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int i = 0; i < 8; i++) c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        t->slice[0][b] = c;
    }
    for (int k = 1; k < 8; k++)
        for (int b = 0; b < 256; b++) {
            uint32_t c = t->slice[k - 1][b];
            t->slice[k][b] = (c >> 8) ^ t->slice[0][c & 0xff];
        }
    t->xpow[0] = 0x40000000u; /* x^1 */
    for (int k = 1; k < 64; k++) t->xpow[k] = gf_mul(t->xpow[k - 1], t->xpow[k - 1]);
    fill_shift(t->shift_long, x_pow_bytes(t, LONG_BLOCK));
    fill_shift(t->shift_short, x_pow_bytes(t, SHORT_BLOCK));
    fold_constants(t->fold1024, t, 1024);
    fold_constants(t->fold128, t, 128);
#if HAVE_X86_CRC
    __builtin_cpu_init();
    t->hw = __builtin_cpu_supports("sse4.2") != 0;
    t->fold = t->hw && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("vpclmulqdq") &&
              __builtin_cpu_supports("pclmul");
#endif
}

static const crc_tables *tables(void) {
    pthread_once(&g_once, build_tables);
    return &g_tab;
}

static inline uint32_t shift_by(const uint32_t tab[4][256], uint32_t c) {
    return tab[0][c & 0xff] ^ tab[1][(c >> 8) & 0xff] ^ tab[2][(c >> 16) & 0xff] ^ tab[3][c >> 24];
}

/* The raw register (no inversions) through n bytes, table-driven. */
static uint32_t raw_portable(const crc_tables *t, uint32_t c, const unsigned char *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        c = t->slice[0][(c ^ *p++) & 0xff] ^ (c >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        w = __builtin_bswap64(w);
#endif
        w ^= c;
        c = t->slice[7][w & 0xff] ^ t->slice[6][(w >> 8) & 0xff] ^ t->slice[5][(w >> 16) & 0xff] ^
            t->slice[4][(w >> 24) & 0xff] ^ t->slice[3][(w >> 32) & 0xff] ^ t->slice[2][(w >> 40) & 0xff] ^
            t->slice[1][(w >> 48) & 0xff] ^ t->slice[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) c = t->slice[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return c;
}

#if HAVE_X86_CRC
static inline uint64_t load64(const unsigned char *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* Three streams of `block` bytes each, side by side, then joined: the
 * instruction's latency is hidden by the other two streams. */
__attribute__((target("sse4.2"))) static uint32_t raw_three(const uint32_t tab[4][256], uint32_t c,
                                                            const unsigned char *p, size_t block) {
    uint64_t c0 = c, c1 = 0, c2 = 0;
    const unsigned char *end = p + block;
    for (; p < end; p += 8) {
        c0 = _mm_crc32_u64(c0, load64(p));
        c1 = _mm_crc32_u64(c1, load64(p + block));
        c2 = _mm_crc32_u64(c2, load64(p + 2 * block));
    }
    return shift_by(tab, shift_by(tab, (uint32_t)c0) ^ (uint32_t)c1) ^ (uint32_t)c2;
}

__attribute__((target("sse4.2"))) static uint32_t raw_hw(const crc_tables *t, uint32_t c, const unsigned char *p,
                                                         size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8(c, *p++);
        n--;
    }
    for (; n >= 3 * LONG_BLOCK; p += 3 * LONG_BLOCK, n -= 3 * LONG_BLOCK) c = raw_three(t->shift_long, c, p, LONG_BLOCK);
    for (; n >= 3 * SHORT_BLOCK; p += 3 * SHORT_BLOCK, n -= 3 * SHORT_BLOCK)
        c = raw_three(t->shift_short, c, p, SHORT_BLOCK);
    uint64_t c64 = c;
    for (; n >= 8; p += 8, n -= 8) c64 = _mm_crc32_u64(c64, load64(p));
    c = (uint32_t)c64;
    while (n--) c = _mm_crc32_u8(c, *p++);
    return c;
}

#define FOLD_TARGET __attribute__((target("avx2,pclmul,vpclmulqdq,sse4.2")))

/* Folding by carry-less multiplication. A 128-bit lane loaded from the
 * stream holds 128 message bits, bit j of the register (byte j / 8, bit
 * j % 8) the coefficient of x^(127 - j): the reflected order of the
 * register. Its low 64 bits H weigh x^64 more than its high ones L, so a
 * lane moved d bits on is H x^(d + 64) + L x^d = H k0 + L k1 (mod P) with
 * k0 = x^(d + 63), k1 = x^(d - 1) mod P (one power less: a carry-less
 * product of two reflected 64-bit values comes out one place short), each
 * held in the top 32 bits of its 64-bit half: two multiplications, whose
 * sum (below degree 96) is XORed into the lane d bits on. Four 256-bit
 * accumulators (eight lanes, 128 bytes) move 1024 bits a round; at the end
 * the eight lanes are folded into one, which is the message modulo P, so
 * the crc32 instruction over its 16 bytes from a zero register gives the
 * register value. The starting register is XORed into the first 32 bits. */
static inline FOLD_TARGET __m128i fold_lane(__m128i a, __m128i k, __m128i next) {
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11)), next);
}

#define FOLD4(x0, x1, x2, x3, y0, y1, y2, y3, k)                                                                        \
    do {                                                                                                               \
        x0 = _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(x0, k, 0x00), _mm256_clmulepi64_epi128(x0, k, 0x11)), y0); \
        x1 = _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(x1, k, 0x00), _mm256_clmulepi64_epi128(x1, k, 0x11)), y1); \
        x2 = _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(x2, k, 0x00), _mm256_clmulepi64_epi128(x2, k, 0x11)), y2); \
        x3 = _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(x3, k, 0x00), _mm256_clmulepi64_epi128(x3, k, 0x11)), y3); \
    } while (0)

/* 128 bytes at p into four accumulators (and to dst when copying). */
#define LOAD4(x0, x1, x2, x3, p, dst, copy)                                                                            \
    do {                                                                                                               \
        x0 = _mm256_loadu_si256((const __m256i *)(p)), x1 = _mm256_loadu_si256((const __m256i *)((p) + 32));       \
        x2 = _mm256_loadu_si256((const __m256i *)((p) + 64)), x3 = _mm256_loadu_si256((const __m256i *)((p) + 96)); \
        if (copy) {                                                                                                    \
            _mm256_storeu_si256((__m256i *)(dst), x0), _mm256_storeu_si256((__m256i *)((dst) + 32), x1);             \
            _mm256_storeu_si256((__m256i *)((dst) + 64), x2), _mm256_storeu_si256((__m256i *)((dst) + 96), x3);      \
        }                                                                                                              \
    } while (0)

/* The eight lanes of four accumulators folded into one, as the register value. */
static inline FOLD_TARGET uint32_t fold_finish(const crc_tables *t, __m256i x0, __m256i x1, __m256i x2, __m256i x3) {
    const __m128i k1 = _mm_set_epi64x((long long)t->fold128[1], (long long)t->fold128[0]);
    __m128i a = _mm256_castsi256_si128(x0);
    a = fold_lane(a, k1, _mm256_extracti128_si256(x0, 1));
    a = fold_lane(a, k1, _mm256_castsi256_si128(x1));
    a = fold_lane(a, k1, _mm256_extracti128_si256(x1, 1));
    a = fold_lane(a, k1, _mm256_castsi256_si128(x2));
    a = fold_lane(a, k1, _mm256_extracti128_si256(x2, 1));
    a = fold_lane(a, k1, _mm256_castsi256_si128(x3));
    a = fold_lane(a, k1, _mm256_extracti128_si256(x3, 1));
    return (uint32_t)_mm_crc32_u64(_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(a)), (uint64_t)_mm_extract_epi64(a, 1));
}

static inline FOLD_TARGET __attribute__((always_inline)) uint32_t fold_body(const crc_tables *t, uint32_t c,
                                                                            const unsigned char *p, size_t n,
                                                                            unsigned char *dst, int copy) {
    const __m256i k = _mm256_set_epi64x((long long)t->fold1024[1], (long long)t->fold1024[0],
                                        (long long)t->fold1024[1], (long long)t->fold1024[0]);
    __m256i x0, x1, x2, x3, y0, y1, y2, y3;
    LOAD4(x0, x1, x2, x3, p, dst, copy);
    if (copy) dst += 128;
    x0 = _mm256_xor_si256(x0, _mm256_set_epi64x(0, 0, 0, (long long)c));
    p += 128, n -= 128;
    for (; n >= 128; p += 128, n -= 128) {
        LOAD4(y0, y1, y2, y3, p, dst, copy);
        if (copy) dst += 128;
        FOLD4(x0, x1, x2, x3, y0, y1, y2, y3, k);
    }
    uint32_t r = fold_finish(t, x0, x1, x2, x3);
    if (copy && n) memcpy(dst, p, n);
    return raw_hw(t, r, p, n);
}


/* At least 128 bytes. */
static FOLD_TARGET uint32_t raw_fold(const crc_tables *t, uint32_t c, const unsigned char *p, size_t n) {
    return fold_body(t, c, p, n, NULL, 0);
}

static FOLD_TARGET uint32_t raw_fold_copy(const crc_tables *t, uint32_t c, const unsigned char *p, size_t n,
                                          unsigned char *dst) {
    return fold_body(t, c, p, n, dst, 1);
}
#endif

static uint32_t raw_update(const crc_tables *t, uint32_t c, const unsigned char *p, size_t n) {
#if HAVE_X86_CRC
    if (t->fold && n >= 256) return raw_fold(t, c, p, n);
    if (t->hw) return raw_hw(t, c, p, n);
#endif
    return raw_portable(t, c, p, n);
}

uint32_t hp_crc32c(uint32_t crc, const void *data, size_t n) {
    if (!n) return crc;
    return ~raw_update(tables(), ~crc, data, n);
}

uint32_t hp_crc32c_path(int path, uint32_t crc, const void *data, size_t n) {
    const crc_tables *t = tables();
    if (!n) return crc;
#if HAVE_X86_CRC
    if (path >= 2 && t->fold && n >= 256) return ~raw_fold(t, ~crc, data, n);
    if (path >= 1 && t->hw) return ~raw_hw(t, ~crc, data, n);
#else
    (void)path;
#endif
    return ~raw_portable(t, ~crc, data, n);
}

uint32_t hp_crc32c_copy(void *dst, uint32_t crc, const void *src, size_t n) {
    const crc_tables *t = tables();
    uint32_t c = ~crc;
    unsigned char *d = dst;
    const unsigned char *s = src;
#if HAVE_X86_CRC
    if (t->fold && n >= 256) return ~raw_fold_copy(t, c, s, n, d); /* one pass: each block loaded once */
#endif
    while (n) {
        size_t k = n < COPY_CHUNK ? n : COPY_CHUNK;
        c = raw_update(t, c, s, k);
        memcpy(d, s, k);
        d += k, s += k, n -= k;
    }
    return ~c;
}

uint32_t hp_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
    return gf_mul(x_pow_bytes(tables(), len_b), crc_a) ^ crc_b;
}

int hp_crc32c_hw(void) { return tables()->fold ? 2 : tables()->hw; }
