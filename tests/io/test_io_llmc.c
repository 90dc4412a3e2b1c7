/* llm.c checkpoints: tensor table, bit-exact round trip, bf16 reading and
 * writing (version 5: every value rounded to nearest even, checked against a
 * reference written here and against hand-worked cases), and one-line errors
 * naming the file and the field. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/fsutil.h"
#include "io/llmc.h"
#include "testutil.h"


/* Writes a raw llm.c file: header ints h[0..7], then `nbytes` of payload. */
static void write_raw(const char *path, const int32_t h8[8], const void *payload, size_t nbytes) {
    int32_t h[256] = {0};
    memcpy(h, h8, 8 * sizeof(int32_t));
    size_t total = sizeof h + nbytes;
    char *buf = malloc(total);
    memcpy(buf, h, sizeof h);
    if (nbytes) memcpy(buf + sizeof h, payload, nbytes);
    CHECK_OK(hp_fs_write_atomic(path, buf, total));
    free(buf);
}

/* bf16 of f by the definition: the upper half of its bits, plus one when the
 * dropped half is above 0x8000 or exactly 0x8000 with the kept half odd (a
 * tie goes to the even neighbour). NaN is kept a quiet NaN of the same sign. */
static uint16_t ref_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    uint32_t hi = u >> 16, lo = u & 0xffffu;
    if (lo > 0x8000u || (lo == 0x8000u && (hi & 1u))) hi++;
    return (uint16_t)hi;
}

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* hp_llmc_write as version 5: the header (version 5, the fields, zeros), a
 * payload of n bf16 values each ref_bf16 of the input, the hand-worked
 * roundings, reading back widened, and the file replaced atomically. */
static void test_write_bf16(const char *dir, const float *p, const hp_llmc_header *h) {
    size_t n = hp_llmc_param_count(h);
    float *x = malloc(n * sizeof *x);
    memcpy(x, p, n * sizeof *x);
    /* hand-worked: input bits -> bf16 bits */
    const uint32_t in[] = {0x3f800000u, /* 1 exactly */
                           0x3f808000u, /* 1 + 2^-8: a tie, kept half even -> 1 */
                           0x3f818000u, /* 1 + 3*2^-8: a tie, kept half odd -> up */
                           0x3f808001u, /* just above the tie -> up */
                           0x3f807fffu, /* just below the tie -> down */
                           0xbf818000u, /* negative tie, odd -> away from zero */
                           0x80000000u, /* -0 */
                           0x7f800000u, /* +inf */
                           0x7f7fffffu, /* FLT_MAX rounds up to +inf */
                           0x00000001u, /* smallest subnormal -> +0 */
                           0x007f8000u, /* subnormal tie, odd -> up to the smallest normal */
                           0x7fc01234u}; /* a NaN */
    const uint16_t want[] = {0x3f80, 0x3f80, 0x3f82, 0x3f81, 0x3f80, 0xbf82,
                             0x8000, 0x7f80, 0x7f80, 0x0000, 0x0080, 0x7fc0};
    const size_t nk = sizeof in / sizeof in[0];
    CHECK(n >= nk);
    for (size_t i = 0; i < nk; i++) x[i] = from_bits(in[i]);
    for (size_t i = 0; i < nk; i++) CHECK(ref_bf16(x[i]) == want[i]);

    char *path = hp_fs_join(dir, "w5.bin");
    CHECK_OK(hp_fs_write_atomic(path, "old", 3)); /* replaced whole */
    CHECK_OK(hp_llmc_write(path, h, x, HP_LLMC_VERSION_BF16));
    char *d;
    size_t nd;
    CHECK_OK(hp_fs_read_all(&d, &nd, path));
    CHECK(nd == 1024 + n * 2);
    if (nd == 1024 + n * 2) {
        int32_t hd[256];
        memcpy(hd, d, sizeof hd);
        CHECK(hd[0] == 20240326 && hd[1] == 5);
        CHECK(hd[2] == h->maxT && hd[3] == h->V && hd[4] == h->L && hd[5] == h->NH && hd[6] == h->C &&
              hd[7] == h->Vp);
        for (int i = 8; i < 256; i++) CHECK(hd[i] == 0);
        const uint16_t *w = (const uint16_t *)(const void *)(d + 1024);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) bad += w[i] != ref_bf16(x[i]);
        CHECK(bad == 0);
        for (size_t i = 0; i < nk; i++) CHECK(w[i] == want[i]);
    }
    free(d);
    /* read back: the bf16 values widened exactly, the same header */
    hp_llmc_header h2;
    float *q = NULL;
    CHECK_OK(hp_llmc_read(&h2, &q, path));
    CHECK(!memcmp(&h2, h, sizeof h2));
    size_t bad = 0;
    for (size_t i = 0; q && i < n; i++) {
        uint32_t u;
        memcpy(&u, &q[i], 4);
        bad += u != (uint32_t)ref_bf16(x[i]) << 16;
    }
    CHECK(q && bad == 0);
    /* written again from what was read: the same bytes (bf16 -> fp32 -> bf16 is exact) */
    char *path2 = hp_fs_join(dir, "w5b.bin");
    CHECK_OK(hp_llmc_write(path2, h, q, HP_LLMC_VERSION_BF16));
    char *da, *db;
    size_t na, nb;
    CHECK_OK(hp_fs_read_all(&da, &na, path));
    CHECK_OK(hp_fs_read_all(&db, &nb, path2));
    CHECK(na == nb && !memcmp(da, db, na));
    free(da);
    free(db);
    free(q);
    /* a version it cannot write: an error naming the file, the old file kept */
    CHECK_ERR(hp_llmc_write(path, h, x, 4), "w5.bin: cannot write llm.c version 4 (3 = fp32 or 5 = bf16)");
    CHECK_OK(hp_fs_read_all(&da, &na, path));
    CHECK(na == 1024 + n * 2);
    free(da);
    free(path2);
    free(path);
    free(x);
}

static void test_table(void) {
    hp_llmc_header g = {1024, 50257, 12, 12, 768, 50304};
    CHECK(hp_llmc_param_count(&g) == 124475904u);
    hp_llmc_tensor t[HP_LLMC_NTENSORS];
    hp_llmc_tensors(t, &g);
    const char *names[] = {"wte",  "wpe",  "ln1w", "ln1b", "qkvw",    "qkvb",    "attprojw", "attprojb",
                           "ln2w", "ln2b", "fcw",  "fcb",  "fcprojw", "fcprojb", "lnfw",     "lnfb"};
    size_t off = 0;
    for (int i = 0; i < HP_LLMC_NTENSORS; i++) {
        CHECK(!strcmp(t[i].name, names[i]));
        CHECK(t[i].offset == off);
        CHECK(t[i].numel == (size_t)hp_shape_numel(&t[i].shape));
        off += t[i].numel;
    }
    CHECK(off == hp_llmc_param_count(&g));
    hp_shape s = hp_shape3(12, 3 * 768, 768);
    CHECK(hp_shape_eq(&t[4].shape, &s));
    s = hp_shape3(12, 768, 4 * 768);
    CHECK(hp_shape_eq(&t[12].shape, &s));
    s = hp_shape2(50304, 768);
    CHECK(hp_shape_eq(&t[0].shape, &s));
    s = hp_shape1(768);
    CHECK(hp_shape_eq(&t[15].shape, &s));
}

int main(void) {
    test_table();
    char dir[] = "/tmp/hp_io_llmc_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *a = hp_fs_join(dir, "a.bin"), *b = hp_fs_join(dir, "b.bin"), *bad = hp_fs_join(dir, "bad.bin");

    hp_llmc_header h = {8, 10, 2, 2, 4, 16};
    size_t n = hp_llmc_param_count(&h);
    CHECK(n == 16 * 4 + 8 * 4 + 2 * (12 * 16 + 13 * 4) + 8);
    float *p = malloc(n * sizeof *p);
    hp_test_rng r = {7};
    for (size_t i = 0; i < n; i++) p[i] = (float)hp_test_normal(&r);
    uint32_t nanbits = 0x7fc01234u; /* a NaN payload must survive too */
    memcpy(&p[3], &nanbits, 4);
    p[5] = -0.0f;

    /* write, read, write again: identical bytes */
    CHECK_OK(hp_llmc_write(a, &h, p, HP_LLMC_VERSION_FP32));
    hp_llmc_header h2;
    float *q = NULL;
    CHECK_OK(hp_llmc_read(&h2, &q, a));
    CHECK(h2.maxT == 8 && h2.V == 10 && h2.L == 2 && h2.NH == 2 && h2.C == 4 && h2.Vp == 16);
    CHECK(q && !memcmp(p, q, n * sizeof *p));
    hp_llmc_header h3;
    CHECK_OK(hp_llmc_read_header(&h3, a)); /* the header alone, same fields */
    CHECK(!memcmp(&h3, &h2, sizeof h3));
    CHECK_OK(hp_llmc_write(b, &h2, q, HP_LLMC_VERSION_FP32));
    char *da, *db;
    size_t na, nb;
    CHECK_OK(hp_fs_read_all(&da, &na, a));
    CHECK_OK(hp_fs_read_all(&db, &nb, b));
    CHECK(na == 1024 + n * 4 && na == nb && !memcmp(da, db, na));
    int32_t hdr[8];
    memcpy(hdr, da, sizeof hdr);
    CHECK(hdr[0] == 20240326 && hdr[1] == 3 && hdr[2] == 8 && hdr[3] == 10 && hdr[7] == 16);
    for (int i = 8; i < 256; i++) CHECK(((int32_t *)(void *)da)[i] == 0);
    free(da);
    free(db);
    free(q);

    /* bf16 (version 5) reads and converts to fp32 */
    uint16_t *bf = malloc(n * 2);
    for (size_t i = 0; i < n; i++) bf[i] = hp_f32_to_bf16(p[i]);
    int32_t h5[8] = {20240326, 5, 8, 10, 2, 2, 4, 16};
    write_raw(bad, h5, bf, n * 2);
    CHECK_OK(hp_llmc_read(&h2, &q, bad));
    int same = q != NULL;
    for (size_t i = 0; q && i < n; i++) {
        float want = hp_bf16_to_f32(bf[i]);
        if (memcmp(&q[i], &want, 4)) same = 0;
    }
    CHECK(same);
    free(q);

    test_write_bf16(dir, p, &h);

    /* errors: each names the file and the field */
    float *zero = calloc(n, 4);
    int32_t hb[8] = {20240327, 3, 8, 10, 2, 2, 4, 16};
    write_raw(bad, hb, zero, n * 4);
    CHECK_ERR(hp_llmc_read(&h2, &q, bad), "bad.bin: bad magic 20240327");
    CHECK(q == NULL);
    int32_t hv[8] = {20240326, 4, 8, 10, 2, 2, 4, 16};
    write_raw(bad, hv, zero, n * 4);
    CHECK_ERR(hp_llmc_read(&h2, &q, bad), "bad.bin: unsupported version 4");
    int32_t hf[8] = {20240326, 3, 8, 10, 0, 2, 4, 16};
    write_raw(bad, hf, zero, n * 4);
    CHECK_ERR(hp_llmc_read(&h2, &q, bad), "bad.bin: header field L = 0, must be > 0");
    int32_t hn[8] = {20240326, 3, -8, 10, 2, 2, 4, 16};
    write_raw(bad, hn, zero, n * 4);
    CHECK_ERR(hp_llmc_read(&h2, &q, bad), "bad.bin: header field maxT = -8");
    int32_t hp_[8] = {20240326, 3, 8, 20, 2, 2, 4, 16};
    write_raw(bad, hp_, zero, n * 4);
    CHECK_ERR(hp_llmc_read(&h2, &q, bad), "bad.bin: header field Vp = 16 is smaller than V = 20");
    int32_t hc[8] = {20240326, 3, 8, 10, 2, 3, 4, 16};
    write_raw(bad, hc, zero, n * 4);
    CHECK_ERR(hp_llmc_read(&h2, &q, bad), "bad.bin: header field C = 4 is not divisible by NH = 3");
    int32_t ok[8] = {20240326, 3, 8, 10, 2, 2, 4, 16};
    write_raw(bad, ok, zero, n * 4 - 4); /* truncated */
    CHECK_ERR(hp_llmc_read(&h2, &q, bad), "bad.bin: file size");
    CHECK_ERR(hp_llmc_read_header(&h2, bad), "bad.bin: file size");
    write_raw(bad, ok, zero, n * 4);
    CHECK_OK(hp_llmc_read(&h2, &q, bad));
    free(q);
    write_raw(bad, h5, zero, n * 4); /* bf16 header, fp32-sized payload */
    CHECK_ERR(hp_llmc_read(&h2, &q, bad), "does not match the header");
    CHECK_OK(hp_fs_write_atomic(bad, "tiny", 4));
    CHECK_ERR(hp_llmc_read(&h2, &q, bad), "bad.bin: file is 4 bytes, shorter than the 1024-byte llm.c header");
    char *missing = hp_fs_join(dir, "missing.bin");
    CHECK_ERR(hp_llmc_read(&h2, &q, missing), "missing.bin: cannot open: No such file");
    hp_llmc_header hw = {8, 10, 2, 2, 4, 8};
    CHECK_ERR(hp_llmc_write(b, &hw, p, HP_LLMC_VERSION_FP32), "b.bin: header field Vp = 8 is smaller than V = 10");

    free(missing);
    free(zero);
    free(bf);
    free(p);
    free(a);
    free(b);
    free(bad);
    CHECK_OK(hp_fs_remove_tree(dir));
    return hp_test_finish("test_io_llmc");
}
