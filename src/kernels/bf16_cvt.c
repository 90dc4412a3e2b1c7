/* kernels/bf16_cvt: fp32 <-> bf16 for the bf16 kernels. Narrowing rounds to
 * nearest even and keeps NaN a quiet NaN of the same sign, exactly as
 * hp_f32_to_bf16 (core/tensor.h). Where the CPU has AVX512-BF16 (and the
 * portable path is not forced) it runs vcvtneps2bf16, which rounds the same
 * way but flushes denormal inputs to zero; the lanes holding a denormal are
 * redone with the integer rounding, so both paths give the same bits for
 * every input (tests/kernels/test_kernels_bf16 checks all of them).
 * Widening is exact (a shift) and needs no special instruction. */
#include <immintrin.h>
#include <string.h>

#include "kernels/bf16.h"
#include "kernels/isa.h"

#define CVT_ALIGN 64
#define CVT_SERIAL 32768

void hp_kb_narrow_portable(uint16_t *out, const float *inp, long n) {
    for (long i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &inp[i], sizeof u);
        uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        uint32_t q = (u >> 16) | 0x40u;
        out[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? q : r);
    }
}

#define HP_TARGET_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* 16 values under mask m (loads and stores only the lanes in m). */
HP_TARGET_BF16 static inline void narrow16(uint16_t *out, const float *inp, __mmask16 m) {
    __m512 x = _mm512_maskz_loadu_ps(m, inp);
    __m256i h = (__m256i)_mm512_cvtneps_pbh(x);
    __m512i u = _mm512_castps_si512(x);
    __mmask16 den = _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000)) &
                    _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x007fffff));
    if (den) {
        __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb);
        h = _mm256_mask_blend_epi16(den, h, _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16)));
    }
    _mm256_mask_storeu_epi16(out, m, h);
}

HP_TARGET_BF16 static void narrow_avx512bf16(uint16_t *out, const float *inp, long n) {
    long i = 0;
    for (; i + 16 <= n; i += 16) narrow16(out + i, inp + i, 0xffff);
    if (i < n) narrow16(out + i, inp + i, (__mmask16)((1u << (n - i)) - 1u));
}

void hp_kb_narrow(uint16_t *out, const float *inp, long n) {
    if (hp_kernels_bf16_cvt_isa() == HP_ISA_AVX512_BF16)
        narrow_avx512bf16(out, inp, n);
    else
        hp_kb_narrow_portable(out, inp, n);
}

void hp_kb_widen(float *out, const uint16_t *inp, long n) {
    for (long i = 0; i < n; i++) {
        uint32_t u = (uint32_t)inp[i] << 16;
        memcpy(&out[i], &u, sizeof u);
    }
}

typedef struct {
    uint16_t *h;        /* [n] */
    float *f;           /* [n] */
    const uint16_t *ch; /* [n] */
    const float *cf;    /* [n] */
    long n;
} cvt_ctx;

static void narrow_task(void *c_, int tid, int nt) {
    cvt_ctx *c = c_;
    long i0, i1;
    hp_pool_split(&i0, &i1, c->n, CVT_ALIGN, tid, nt);
    if (i0 < i1) hp_kb_narrow(c->h + i0, c->cf + i0, i1 - i0);
}

static void widen_task(void *c_, int tid, int nt) {
    cvt_ctx *c = c_;
    long i0, i1;
    hp_pool_split(&i0, &i1, c->n, CVT_ALIGN, tid, nt);
    if (i0 < i1) hp_kb_widen(c->f + i0, c->ch + i0, i1 - i0);
}

void hp_kb_f32_to_bf16(hp_pool *pool, uint16_t *out, const float *inp, long n) {
    cvt_ctx c = {.h = out, .cf = inp, .n = n};
    hp_pool_run(n < CVT_SERIAL ? NULL : pool, narrow_task, &c);
}

static void narrow_portable_task(void *c_, int tid, int nt) {
    cvt_ctx *c = c_;
    long i0, i1;
    hp_pool_split(&i0, &i1, c->n, CVT_ALIGN, tid, nt);
    if (i0 < i1) hp_kb_narrow_portable(c->h + i0, c->cf + i0, i1 - i0);
}

void hp_kb_f32_to_bf16_portable(hp_pool *pool, uint16_t *out, const float *inp, long n) {
    cvt_ctx c = {.h = out, .cf = inp, .n = n};
    hp_pool_run(n < CVT_SERIAL ? NULL : pool, narrow_portable_task, &c);
}

void hp_kb_bf16_to_f32(hp_pool *pool, float *out, const uint16_t *inp, long n) {
    cvt_ctx c = {.f = out, .ch = inp, .n = n};
    hp_pool_run(n < CVT_SERIAL ? NULL : pool, widen_task, &c);
}
