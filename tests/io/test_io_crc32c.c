/* io/crc32c: the published CRC-32C check values ("123456789", and RFC 3720's
 * 32-byte patterns); the crc32 instruction's three-stream path equal to the
 * table-driven loop for every length from 0 to past three long blocks, at
 * every alignment, and so is folding by carry-less multiplication; a stream
 * checksummed in two parts, hp_crc32c_combine of the parts and
 * hp_crc32c_copy (also copying) all give the one-pass value; a flipped bit
 * anywhere changes it. io/crc_spans: ranges recorded from several threads
 * give the whole buffer's checksum when they tile it (replicas once, in any
 * order, empty ranges ignored), and none when they leave a gap, overlap
 * partly, pass the end, or two reads of the same range disagree. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/crc32c.h"
#include "io/crc_spans.h"
#include <pthread.h>
#include "testutil.h"

static void test_vectors(void) {
    unsigned char b[32];
    CHECK(hp_crc32c(0, "123456789", 9) == 0xE3069283u);
    for (int w = 0; w < 3; w++) CHECK(hp_crc32c_path(w, 0, "123456789", 9) == 0xE3069283u);
    memset(b, 0, sizeof b);
    CHECK(hp_crc32c(0, b, 32) == 0x8A9136AAu);
    memset(b, 0xff, sizeof b);
    CHECK(hp_crc32c(0, b, 32) == 0x62A8AB43u);
    for (int i = 0; i < 32; i++) b[i] = (unsigned char)i;
    CHECK(hp_crc32c(0, b, 32) == 0x46DD794Eu);
    for (int i = 0; i < 32; i++) b[i] = (unsigned char)(31 - i);
    CHECK(hp_crc32c(0, b, 32) == 0x113FDB5Cu);
    CHECK(hp_crc32c(0x1234u, b, 0) == 0x1234u);
}

static void test_paths(void) {
    enum { N = 3 * 8192 * 2 + 3 * 256 + 40 };
    unsigned char *buf = malloc(N + 8), *dst = malloc(N + 8);
    hp_test_rng r = {11};
    for (int i = 0; i < N + 8; i++) buf[i] = (unsigned char)(hp_test_uniform(&r) * 256);
    int bad = 0;
    /* every length up to a few short blocks, then lengths around the long blocks, at 8 alignments */
    for (int al = 0; al < 8; al++)
        for (int n = 0; n <= N; n += n < 1600 ? 1 : 997) {
            uint32_t hw = hp_crc32c(0, buf + al, (size_t)n), sw = hp_crc32c_path(0, 0, buf + al, (size_t)n);
            if (hw != sw || hp_crc32c_path(1, 0, buf + al, (size_t)n) != sw ||
                hp_crc32c_path(2, 0, buf + al, (size_t)n) != sw)
                bad++;
            if (n < 1600 && n % 7) continue;
            size_t k = (size_t)n / 3;
            uint32_t a = hp_crc32c(0, buf + al, k), two = hp_crc32c(a, buf + al + k, (size_t)n - k);
            uint32_t b = hp_crc32c(0, buf + al + k, (size_t)n - k);
            if (two != hw || hp_crc32c_combine(a, b, (uint64_t)n - k) != hw) bad++;
            memset(dst, 0, (size_t)n + 1);
            if (hp_crc32c_copy(dst, 0, buf + al, (size_t)n) != hw || memcmp(dst, buf + al, (size_t)n)) bad++;
        }
    CHECKF(bad == 0, "%d lengths or alignments give different checksums (best way here: %d)", bad, hp_crc32c_hw());
    /* a whole 128-byte round and more, each way, on long inputs */
    for (int w = 1; w < 3; w++)
        CHECK(hp_crc32c_path(w, 7, buf + 3, N - 3) == hp_crc32c_path(0, 7, buf + 3, N - 3));
    /* a copy longer than its chunks, continuing a checksum */
    uint32_t c0 = hp_crc32c(0, "abc", 3);
    CHECK(hp_crc32c_copy(dst, c0, buf, N) == hp_crc32c(c0, buf, N) && !memcmp(dst, buf, N));
    /* a large copy, to a destination at every alignment mod 32 */
    size_t big = (3u << 20) + 77;
    unsigned char *bs = malloc(big + 64), *bd = malloc(big + 64);
    for (size_t i = 0; i < big + 64; i++) bs[i] = (unsigned char)(i * 2654435761u >> 13);
    uint32_t want = hp_crc32c_path(0, 5, bs + 1, big);
    int badbig = 0;
    for (int al = 0; al < 32; al += 3) {
        memset(bd, 0, big + 64);
        badbig += hp_crc32c_copy(bd + al, 5, bs + 1, big) != want || memcmp(bd + al, bs + 1, big) || bd[al + big] != 0;
    }
    CHECKF(badbig == 0, "%d large copies wrong", badbig);
    free(bs);
    free(bd);
    /* one flipped bit anywhere is seen */
    uint32_t whole = hp_crc32c(0, buf, N);
    int missed = 0;
    for (int i = 0; i < N; i += 101) {
        buf[i] ^= (unsigned char)(1u << (i % 8));
        missed += hp_crc32c(0, buf, N) == whole;
        buf[i] ^= (unsigned char)(1u << (i % 8));
    }
    CHECKF(missed == 0, "%d flipped bits not seen", missed);
    free(buf);
    free(dst);
}

enum { SPAN_N = 1000 };
static unsigned char g_buf[SPAN_N];
typedef struct {
    hp_crc_spans *s;
    uint64_t b, e;
} span_job;

static void *add_span(void *j_) {
    span_job *j = j_;
    CHECK(hp_crc_spans_add(j->s, 1, j->b, j->e, hp_crc32c(0, g_buf + j->b, (size_t)(j->e - j->b))) == 0);
    return NULL;
}

static void test_spans(void) {
    for (int i = 0; i < SPAN_N; i++) g_buf[i] = (unsigned char)(i * 31 + 7);
    uint32_t whole = hp_crc32c(0, g_buf, SPAN_N), got = 0;
    hp_crc_spans *s = hp_crc_spans_new(2);
    CHECK(s != NULL);
    /* four threads, ranges out of order, one replica and one empty range */
    span_job j[6] = {{s, 700, 1000}, {s, 0, 333}, {s, 333, 700}, {s, 0, 333}, {s, 500, 500}, {s, 333, 700}};
    pthread_t t[6];
    for (int i = 0; i < 6; i++) pthread_create(&t[i], NULL, add_span, &j[i]);
    for (int i = 0; i < 6; i++) pthread_join(t[i], NULL);
    CHECK(hp_crc_spans_count(s, 1) == 6 && hp_crc_spans_count(s, 0) == 0);
    CHECK(hp_crc_spans_whole(&got, s, 1, SPAN_N) && got == whole);
    CHECK(!hp_crc_spans_whole(&got, s, 1, SPAN_N + 1)); /* does not reach the end */
    CHECK(!hp_crc_spans_whole(&got, s, 0, SPAN_N));     /* nothing read */
    hp_crc_spans_clear(s, 1);
    CHECK(hp_crc_spans_count(s, 1) == 0);
    static const uint64_t bad[][4] = {{0, 400, 401, 1000},  /* a gap */
                                      {0, 400, 300, 1000},  /* partly overlapping */
                                      {0, 400, 400, 1001}}; /* past the end */
    for (int k = 0; k < 3; k++) {
        span_job a = {s, bad[k][0], bad[k][1]}, b = {s, bad[k][2], bad[k][3] > SPAN_N ? SPAN_N : bad[k][3]};
        add_span(&a), add_span(&b);
        if (bad[k][3] > SPAN_N) hp_crc_spans_add(s, 1, SPAN_N, bad[k][3], 0);
        CHECK(!hp_crc_spans_whole(&got, s, 1, SPAN_N));
        hp_crc_spans_clear(s, 1);
    }
    /* the same range read twice with different bytes */
    span_job a = {s, 0, 1000};
    add_span(&a);
    hp_crc_spans_add(s, 1, 0, 1000, whole ^ 1u);
    CHECK(!hp_crc_spans_whole(&got, s, 1, SPAN_N));
    hp_crc_spans_free(s);
}

int main(void) {
    test_vectors();
    test_paths();
    test_spans();
    return hp_test_finish("test_io_crc32c");
}
