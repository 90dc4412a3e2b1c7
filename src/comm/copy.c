/* comm/copy: memcpy, or streaming (non-temporal) stores for large outputs. */
#include "comm/copy.h"

#include <stdint.h>
#include <string.h>

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
#define VEC 64
static void stream_body(char *d, const char *s, size_t n) {
    /* d: [n bytes], 64-byte aligned; s: [n bytes]; n a multiple of 256 */
    for (size_t i = 0; i < n; i += 256) {
        __m512i a = _mm512_loadu_si512(s + i), b = _mm512_loadu_si512(s + i + 64);
        __m512i c = _mm512_loadu_si512(s + i + 128), e = _mm512_loadu_si512(s + i + 192);
        _mm512_stream_si512((void *)(d + i), a);
        _mm512_stream_si512((void *)(d + i + 64), b);
        _mm512_stream_si512((void *)(d + i + 128), c);
        _mm512_stream_si512((void *)(d + i + 192), e);
    }
}
#elif defined(__AVX__)
#define VEC 32
static void stream_body(char *d, const char *s, size_t n) {
    /* d: [n bytes], 32-byte aligned; s: [n bytes]; n a multiple of 256 */
    for (size_t i = 0; i < n; i += 256)
        for (size_t j = 0; j < 256; j += 32)
            _mm256_stream_si256((__m256i *)(void *)(d + i + j), _mm256_loadu_si256((const __m256i *)(const void *)(s + i + j)));
}
#endif

void hp_comm_copy(void *dst, const void *src, size_t n, int stream) {
#ifdef VEC
    if (stream && n >= 4096) {
        char *d = dst;
        const char *s = src;
        size_t head = (size_t)(-(uintptr_t)d & (VEC - 1));
        memcpy(d, s, head);
        size_t body = (n - head) & ~(size_t)255;
        stream_body(d + head, s + head, body);
        memcpy(d + head + body, s + head + body, n - head - body);
        _mm_sfence();
        return;
    }
#endif
    (void)stream;
    if (n) memcpy(dst, src, n);
}
