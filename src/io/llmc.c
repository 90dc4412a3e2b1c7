#include "io/llmc.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/fsutil.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "io/llmc assumes a little-endian host (as llm.c files are little-endian)"
#endif

void hp_llmc_tensors(hp_llmc_tensor out[HP_LLMC_NTENSORS], const hp_llmc_header *h) {
    int64_t L = h->L, C = h->C;
    const struct {
        const char *name;
        hp_shape shape;
    } t[HP_LLMC_NTENSORS] = {
        {"wte", hp_shape2(h->Vp, C)},          {"wpe", hp_shape2(h->maxT, C)},
        {"ln1w", hp_shape2(L, C)},             {"ln1b", hp_shape2(L, C)},
        {"qkvw", hp_shape3(L, 3 * C, C)},      {"qkvb", hp_shape2(L, 3 * C)},
        {"attprojw", hp_shape3(L, C, C)},      {"attprojb", hp_shape2(L, C)},
        {"ln2w", hp_shape2(L, C)},             {"ln2b", hp_shape2(L, C)},
        {"fcw", hp_shape3(L, 4 * C, C)},       {"fcb", hp_shape2(L, 4 * C)},
        {"fcprojw", hp_shape3(L, C, 4 * C)},   {"fcprojb", hp_shape2(L, C)},
        {"lnfw", hp_shape1(C)},                {"lnfb", hp_shape1(C)},
    };
    size_t off = 0;
    for (int i = 0; i < HP_LLMC_NTENSORS; i++) {
        out[i].name = t[i].name;
        out[i].shape = t[i].shape;
        out[i].offset = off;
        out[i].numel = (size_t)hp_shape_numel(&t[i].shape);
        off += out[i].numel;
    }
}

size_t hp_llmc_param_count(const hp_llmc_header *h) {
    size_t Vp = (size_t)h->Vp, T = (size_t)h->maxT, L = (size_t)h->L, C = (size_t)h->C;
    return Vp * C + T * C + L * (12 * C * C + 13 * C) + 2 * C;
}

hp_status hp_llmc_check_header(const hp_llmc_header *h, const char *path) {
    const struct {
        const char *name;
        int v;
    } f[] = {{"maxT", h->maxT}, {"V", h->V}, {"L", h->L}, {"NH", h->NH}, {"C", h->C}, {"Vp", h->Vp}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].v <= 0) return hp_errorf("%s: header field %s = %d, must be > 0", path, f[i].name, f[i].v);
    if (h->Vp < h->V) return hp_errorf("%s: header field Vp = %d is smaller than V = %d", path, h->Vp, h->V);
    if (h->C % h->NH != 0)
        return hp_errorf("%s: header field C = %d is not divisible by NH = %d", path, h->C, h->NH);
    /* Every term below must stay far from overflow: bound the bytes at 2^60. */
    double total = ((double)h->Vp + h->maxT) * h->C + (double)h->L * (12.0 * h->C * (double)h->C + 13.0 * h->C);
    if (total * 4 > 1152921504606846976.0)
        return hp_errorf("%s: header fields L = %d, C = %d describe %.3g parameters, too many", path, h->L, h->C,
                         total);
    return HP_OK;
}

static hp_status read_exact(int fd, void *dst, size_t n, const char *path) {
    char *p = dst;
    while (n > 0) {
        ssize_t r = read(fd, p, n > (1u << 30) ? (1u << 30) : n);
        if (r < 0) {
            if (errno == EINTR) continue;
            return hp_errorf("%s: read failed: %s", path, strerror(errno));
        }
        if (r == 0) return hp_errorf("%s: file ended early (truncated while reading?)", path);
        p += r;
        n -= (size_t)r;
    }
    return HP_OK;
}

/* Reads and checks the header (magic, version, fields, and the file size it
 * implies); *esz gets the bytes per stored parameter. */
static hp_status read_header(hp_llmc_header *hdr, size_t *esz, int fd, size_t fsize, const char *path) {
    const size_t hbytes = HP_LLMC_HEADER_INTS * sizeof(int32_t);
    if (fsize < hbytes)
        return hp_errorf("%s: file is %zu bytes, shorter than the %zu-byte llm.c header", path, fsize, hbytes);
    int32_t h[HP_LLMC_HEADER_INTS];
    HP_TRY(read_exact(fd, h, hbytes, path));
    if (h[0] != HP_LLMC_MAGIC)
        return hp_errorf("%s: bad magic %d in header field 0 (expected %d: not an llm.c model checkpoint)", path,
                         h[0], HP_LLMC_MAGIC);
    if (h[1] != HP_LLMC_VERSION_FP32 && h[1] != HP_LLMC_VERSION_BF16)
        return hp_errorf("%s: unsupported version %d in header field 1 (expected 3 = fp32 or 5 = bf16)", path,
                         h[1]);
    hp_llmc_header hd = {h[2], h[3], h[4], h[5], h[6], h[7]};
    HP_TRY(hp_llmc_check_header(&hd, path));
    size_t count = hp_llmc_param_count(&hd);
    *esz = h[1] == HP_LLMC_VERSION_FP32 ? 4 : 2;
    size_t want = hbytes + count * *esz;
    if (fsize != want)
        return hp_errorf("%s: file size %zu bytes does not match the header (expected %zu bytes: %zu %s "
                         "parameters for maxT=%d V=%d L=%d NH=%d C=%d Vp=%d)",
                         path, fsize, want, count, *esz == 4 ? "fp32" : "bf16", hd.maxT, hd.V,
                         hd.L, hd.NH, hd.C, hd.Vp);
    *hdr = hd;
    return HP_OK;
}

static hp_status read_body(hp_llmc_header *hdr, float **params, int fd, size_t fsize, const char *path) {
    hp_llmc_header hd;
    size_t esz;
    HP_TRY(read_header(&hd, &esz, fd, fsize, path));
    size_t count = hp_llmc_param_count(&hd);
    float *p = malloc(count * sizeof(float));
    if (!p) return hp_errorf("%s: out of memory for %zu parameters", path, count);
    hp_status e = HP_OK;
    if (esz == 4) {
        e = read_exact(fd, p, count * 4, path);
    } else {
        enum { CHUNK = 1 << 16 };
        uint16_t *buf = malloc(CHUNK * sizeof(uint16_t));
        HP_ASSERT(buf != NULL);
        for (size_t i = 0; i < count && !e; i += CHUNK) {
            size_t m = count - i < CHUNK ? count - i : CHUNK;
            e = read_exact(fd, buf, m * 2, path);
            for (size_t k = 0; k < m && !e; k++) p[i + k] = hp_bf16_to_f32(buf[k]);
        }
        free(buf);
    }
    if (e) {
        free(p);
        return e;
    }
    *hdr = hd;
    *params = p;
    return HP_OK;
}

/* Both readers open through hp_fs_open_regular (a FIFO or a device is refused
 * without waiting on it) and read no more than the header declares, which
 * must be the file's size. */
hp_status hp_llmc_read(hp_llmc_header *hdr, float **params, const char *path) {
    *params = NULL;
    int fd;
    size_t fsize;
    HP_TRY(hp_fs_open_regular(&fd, &fsize, path));
    hp_status e = read_body(hdr, params, fd, fsize, path);
    close(fd);
    return e;
}

hp_status hp_llmc_read_header(hp_llmc_header *hdr, const char *path) {
    int fd;
    size_t fsize;
    HP_TRY(hp_fs_open_regular(&fd, &fsize, path));
    size_t esz;
    hp_status e = read_header(hdr, &esz, fd, fsize, path);
    close(fd);
    return e;
}

/* The parameters as bf16, rounded to nearest even, a chunk at a time. */
static hp_status write_bf16(hp_afile *f, const float *params, size_t count) {
    enum { CHUNK = 1 << 16 };
    uint16_t *buf = malloc(CHUNK * sizeof(uint16_t));
    if (!buf) return hp_errorf("%s: out of memory for the bf16 buffer", f->path);
    hp_status e = HP_OK;
    for (size_t i = 0; i < count && !e; i += CHUNK) {
        size_t m = count - i < CHUNK ? count - i : CHUNK;
        for (size_t k = 0; k < m; k++) buf[k] = hp_f32_to_bf16(params[i + k]);
        e = hp_afile_write(f, buf, m * sizeof(uint16_t));
    }
    free(buf);
    return e;
}

hp_status hp_llmc_write(const char *path, const hp_llmc_header *hdr, const float *params, int version) {
    if (version != HP_LLMC_VERSION_FP32 && version != HP_LLMC_VERSION_BF16)
        return hp_errorf("%s: cannot write llm.c version %d (3 = fp32 or 5 = bf16)", path, version);
    HP_TRY(hp_llmc_check_header(hdr, path));
    int32_t h[HP_LLMC_HEADER_INTS];
    memset(h, 0, sizeof h);
    h[0] = HP_LLMC_MAGIC;
    h[1] = version;
    h[2] = hdr->maxT;
    h[3] = hdr->V;
    h[4] = hdr->L;
    h[5] = hdr->NH;
    h[6] = hdr->C;
    h[7] = hdr->Vp;
    size_t count = hp_llmc_param_count(hdr);
    hp_afile f;
    HP_TRY(hp_afile_open(&f, path));
    hp_status e = hp_afile_write(&f, h, sizeof h);
    if (!e && version == HP_LLMC_VERSION_FP32) e = hp_afile_write(&f, params, count * sizeof(float));
    if (!e && version == HP_LLMC_VERSION_BF16) e = write_bf16(&f, params, count);
    if (e) {
        hp_afile_abort(&f);
        return e;
    }
    return hp_afile_commit(&f);
}
