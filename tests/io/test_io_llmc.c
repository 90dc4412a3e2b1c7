/* llm.c checkpoints: tensor table, bit-exact round trip, bf16 reading, and
 * one-line errors naming the file and the field. */
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
    CHECK_OK(hp_llmc_write(a, &h, p));
    hp_llmc_header h2;
    float *q = NULL;
    CHECK_OK(hp_llmc_read(&h2, &q, a));
    CHECK(h2.maxT == 8 && h2.V == 10 && h2.L == 2 && h2.NH == 2 && h2.C == 4 && h2.Vp == 16);
    CHECK(q && !memcmp(p, q, n * sizeof *p));
    hp_llmc_header h3;
    CHECK_OK(hp_llmc_read_header(&h3, a)); /* the header alone, same fields */
    CHECK(!memcmp(&h3, &h2, sizeof h3));
    CHECK_OK(hp_llmc_write(b, &h2, q));
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
    CHECK_ERR(hp_llmc_write(b, &hw, p), "b.bin: header field Vp = 8 is smaller than V = 10");

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
