#include "io/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/crc32c.h"
#include "io/crc_spans.h"
#include "io/fsutil.h"
#include "io/json.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "io/safetensors assumes a little-endian host"
#endif

#define META_KEY "__metadata__"
#define CRC_PREFIX "crc32c." /* __metadata__["crc32c.<tensor>"]: its checksum, 8 hex digits */
#define MAX_HEADER ((uint64_t)100 << 20)

static const struct {
    const char *name;
    size_t size;
} k_dtypes[] = {
    {"F64", 8},  {"F32", 4},  {"F16", 2},  {"BF16", 2}, {"I64", 8},     {"I32", 4},     {"I16", 2},  {"I8", 1},
    {"U64", 8},  {"U32", 4},  {"U16", 2},  {"U8", 1},   {"BOOL", 1},    {"F8_E4M3", 1}, {"F8_E5M2", 1},
};

static const char *st_dtype_name(hp_dtype t) {
    switch (t) {
    case HP_F32: return "F32";
    case HP_BF16: return "BF16";
    case HP_I32: return "I32";
    case HP_F64: return "F64";
    }
    return NULL;
}

/* ========================= writing ========================= */

static hp_status check_metadata(const char *path, const char *meta) {
    hp_json *m;
    hp_status e = hp_json_parse(&m, meta, strlen(meta));
    if (e) return hp_error_wrap(e, "%s: metadata", path);
    if (m->type != HP_JSON_OBJECT) {
        e = hp_errorf("%s: metadata must be a JSON object, got %s", path, hp_json_type_name(m->type));
    } else {
        for (int i = 0; i < m->n && !e; i++)
            if (m->items[i].type != HP_JSON_STRING)
                e = hp_errorf("%s: metadata key '%s' must hold a string (safetensors rule), got %s", path,
                              m->keys[i], hp_json_type_name(m->items[i].type));
            else if (!strncmp(m->keys[i], CRC_PREFIX, strlen(CRC_PREFIX)))
                e = hp_errorf("%s: metadata key '%s' is reserved for the tensors' checksums", path, m->keys[i]);
    }
    hp_json_free(m);
    return e;
}

/* __metadata__: the caller's string pairs, then every tensor's checksum. */
static void write_metadata(hp_jw *w, const char *metadata_json, const hp_named_tensor *ts, int n,
                           const size_t *sizes) {
    hp_jw_key(w, META_KEY);
    hp_jw_object_begin(w);
    hp_json *m = NULL;
    if (metadata_json && !hp_json_parse(&m, metadata_json, strlen(metadata_json))) /* checked before */
        for (int i = 0; i < m->n; i++) {
            hp_jw_key(w, m->keys[i]);
            hp_jw_string_n(w, m->items[i].str, m->items[i].len);
        }
    hp_json_free(m);
    for (int i = 0; i < n; i++) {
        size_t kn = strlen(CRC_PREFIX) + strlen(ts[i].name) + 1;
        char *key = malloc(kn), hex[16];
        HP_ASSERT(key != NULL);
        snprintf(key, kn, "%s%s", CRC_PREFIX, ts[i].name);
        snprintf(hex, sizeof hex, "%08x", sizes[i] ? hp_crc32c(0, ts[i].data, sizes[i]) : 0u);
        hp_jw_key(w, key);
        hp_jw_string(w, hex);
        free(key);
    }
    hp_jw_object_end(w);
}

static hp_status check_tensors(const char *path, const hp_named_tensor *ts, int n, size_t *sizes) {
    for (int i = 0; i < n; i++) {
        const hp_named_tensor *t = &ts[i];
        if (!t->name || !*t->name) return hp_errorf("%s: tensor %d has an empty name", path, i);
        if (!strcmp(t->name, META_KEY)) return hp_errorf("%s: tensor name '%s' is reserved", path, META_KEY);
        if (!st_dtype_name(t->dtype)) return hp_errorf("%s: tensor '%s': unknown dtype %d", path, t->name, t->dtype);
        if (t->shape.ndim < 0 || t->shape.ndim > HP_MAX_DIMS)
            return hp_errorf("%s: tensor '%s': bad rank %d", path, t->name, t->shape.ndim);
        for (int d = 0; d < t->shape.ndim; d++)
            if (t->shape.d[d] < 0) return hp_errorf("%s: tensor '%s': negative dimension", path, t->name);
        sizes[i] = (size_t)hp_shape_numel(&t->shape) * hp_dtype_size(t->dtype);
        if (sizes[i] > 0 && !t->data) return hp_errorf("%s: tensor '%s': no data", path, t->name);
        for (int j = 0; j < i; j++)
            if (!strcmp(ts[j].name, t->name)) return hp_errorf("%s: tensor name '%s' used twice", path, t->name);
    }
    return HP_OK;
}

/* The file's first bytes: the header length, the header (every tensor's checksum when with_crc, else zeros of the
 * same width) and its padding; *hbuf malloc'd, *hn its size. sizes: [n] the tensors' bytes. */
static hp_status header(char **hbuf, size_t *hn, const char *path, const hp_named_tensor *ts, int n,
                        const char *metadata_json, const size_t *sizes, int with_crc) {
    hp_jw w;
    hp_jw_init(&w);
    hp_jw_object_begin(&w);
    size_t *zero = with_crc ? NULL : calloc((size_t)(n ? n : 1), sizeof *zero);
    HP_ASSERT(with_crc || zero != NULL);
    write_metadata(&w, metadata_json, ts, n, with_crc ? sizes : zero);
    free(zero);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        hp_jw_key(&w, ts[i].name);
        hp_jw_object_begin(&w);
        hp_jw_key(&w, "dtype");
        hp_jw_string(&w, st_dtype_name(ts[i].dtype));
        hp_jw_key(&w, "shape");
        hp_jw_array_begin(&w);
        for (int d = 0; d < ts[i].shape.ndim; d++) hp_jw_int(&w, ts[i].shape.d[d]);
        hp_jw_array_end(&w);
        hp_jw_key(&w, "data_offsets");
        hp_jw_array_begin(&w);
        hp_jw_int(&w, (int64_t)off);
        hp_jw_int(&w, (int64_t)(off + sizes[i]));
        hp_jw_array_end(&w);
        hp_jw_object_end(&w);
        off += sizes[i];
    }
    hp_jw_object_end(&w);
    char *hdr;
    size_t hlen;
    hp_status e = hp_jw_finish(&hdr, &hlen, &w);
    if (e) return hp_error_wrap(e, "%s", path);
    size_t padded = (hlen + 7) & ~(size_t)7;
    *hbuf = malloc(8 + padded);
    HP_ASSERT(*hbuf != NULL);
    uint64_t len64 = padded;
    memcpy(*hbuf, &len64, 8);
    memcpy(*hbuf + 8, hdr, hlen);
    memset(*hbuf + 8 + hlen, ' ', padded - hlen);
    free(hdr);
    *hn = 8 + padded;
    return HP_OK;
}

hp_status hp_safetensors_file_size(size_t *out, const hp_named_tensor *ts, int n, const char *metadata_json) {
    *out = 0;
    const char *path = "safetensors size";
    if (n < 0) return hp_errorf("%s: negative tensor count %d", path, n);
    if (metadata_json) HP_TRY(check_metadata(path, metadata_json));
    size_t *sizes = malloc((size_t)(n ? n : 1) * sizeof *sizes);
    HP_ASSERT(sizes != NULL);
    char *hbuf = NULL;
    size_t hn = 0;
    hp_status e = check_tensors(path, ts, n, sizes);
    if (!e) e = header(&hbuf, &hn, path, ts, n, metadata_json, sizes, 0);
    if (!e) {
        *out = hn;
        for (int i = 0; i < n; i++) *out += sizes[i];
    }
    free(hbuf);
    free(sizes);
    return e;
}

hp_status hp_safetensors_write(const char *path, const hp_named_tensor *ts, int n, const char *metadata_json) {
    if (n < 0) return hp_errorf("%s: negative tensor count %d", path, n);
    if (metadata_json) HP_TRY(check_metadata(path, metadata_json));
    size_t *sizes = malloc((size_t)(n ? n : 1) * sizeof *sizes);
    HP_ASSERT(sizes != NULL);
    hp_status e = check_tensors(path, ts, n, sizes);
    if (e) {
        free(sizes);
        return e;
    }
    char *hbuf;
    size_t hn;
    e = header(&hbuf, &hn, path, ts, n, metadata_json, sizes, 1);
    if (e) {
        free(sizes);
        return e;
    }

    hp_afile f;
    e = hp_afile_open(&f, path);
    if (!e) {
        e = hp_afile_write(&f, hbuf, hn);
        for (int i = 0; i < n && !e; i++) e = hp_afile_write(&f, ts[i].data, sizes[i]);
        if (e)
            hp_afile_abort(&f);
        else
            e = hp_afile_commit(&f);
    }
    free(hbuf);
    free(sizes);
    return e;
}

/* ========================= reading ========================= */

struct hp_safetensors {
    char *path;
    void *map;
    size_t map_len;
    hp_json *header;
    const hp_json *meta;
    int n;
    hp_safetensors_entry *entries;
    size_t *begin; /* data offsets of each entry, for the contiguity check */
    uint32_t *crc;           /* [n]: the checksum in __metadata__ */
    unsigned char *has_crc;  /* [n]: 1 when there is one */
    atomic_uchar *verified;  /* [n]: 1 once the bytes matched it */
    int verify;              /* check the checksums (default 1) */
    hp_crc_spans *spans;     /* the ranges read by hp_safetensors_read_span, per entry */
};

void hp_safetensors_close(hp_safetensors *st) {
    if (!st) return;
    if (st->map) munmap(st->map, st->map_len);
    hp_json_free(st->header);
    free(st->entries);
    free(st->begin);
    free(st->crc), free(st->has_crc), free(st->verified);
    hp_crc_spans_free(st->spans);
    free(st->path);
    free(st);
}

const char *hp_safetensors_path(const hp_safetensors *st) { return st->path; }
int hp_safetensors_count(const hp_safetensors *st) { return st->n; }

const hp_safetensors_entry *hp_safetensors_entry_at(const hp_safetensors *st, int i) {
    HP_ASSERT(i >= 0 && i < st->n);
    return &st->entries[i];
}

const hp_safetensors_entry *hp_safetensors_find(const hp_safetensors *st, const char *name) {
    for (int i = 0; i < st->n; i++)
        if (!strcmp(st->entries[i].name, name)) return &st->entries[i];
    return NULL;
}

const char *hp_safetensors_metadata(const hp_safetensors *st, const char *key) {
    const hp_json *v = hp_json_get(st->meta, key);
    return v && v->type == HP_JSON_STRING ? v->str : NULL;
}

static int json_uint(int64_t *out, const hp_json *v) {
    if (!v || v->type != HP_JSON_NUMBER || !v->is_int || v->ival < 0) return 0;
    *out = v->ival;
    return 1;
}

/* Fills entry from the header value v (the object of one tensor). */
static hp_status parse_entry(hp_safetensors_entry *en, size_t *begin, const char *path, const char *name,
                             const hp_json *v, size_t data_len, const unsigned char *data) {
    en->name = name;
    if (v->type != HP_JSON_OBJECT)
        return hp_errorf("%s: tensor '%s': expected an object in the header, got %s", path, name,
                         hp_json_type_name(v->type));
    const hp_json *dt = hp_json_get(v, "dtype");
    if (!dt || dt->type != HP_JSON_STRING) return hp_errorf("%s: tensor '%s': missing string field 'dtype'", path, name);
    size_t esz = 0;
    for (size_t k = 0; k < sizeof k_dtypes / sizeof k_dtypes[0]; k++)
        if (!strcmp(dt->str, k_dtypes[k].name)) esz = k_dtypes[k].size;
    if (!esz) return hp_errorf("%s: tensor '%s': unknown dtype '%s'", path, name, dt->str);
    en->dtype_name = dt->str;
    en->has_dtype = 0;
    for (int t = HP_F32; t <= HP_I32; t++)
        if (st_dtype_name((hp_dtype)t) && !strcmp(st_dtype_name((hp_dtype)t), dt->str)) {
            en->has_dtype = 1;
            en->dtype = (hp_dtype)t;
        }
    const hp_json *sh = hp_json_get(v, "shape");
    if (!sh || sh->type != HP_JSON_ARRAY) return hp_errorf("%s: tensor '%s': missing array field 'shape'", path, name);
    if (sh->n > HP_MAX_DIMS)
        return hp_errorf("%s: tensor '%s': rank %d exceeds the supported %d", path, name, sh->n, HP_MAX_DIMS);
    en->shape.ndim = sh->n;
    uint64_t numel = 1;
    int overflow = 0;
    for (int d = 0; d < sh->n; d++) {
        int64_t x;
        if (!json_uint(&x, &sh->items[d]))
            return hp_errorf("%s: tensor '%s': shape entry %d is not a non-negative integer", path, name, d);
        en->shape.d[d] = x;
        if (__builtin_mul_overflow(numel, (uint64_t)x, &numel)) overflow = 1;
    }
    uint64_t nbytes;
    if (overflow || __builtin_mul_overflow(numel, (uint64_t)esz, &nbytes))
        return hp_errorf("%s: tensor '%s': shape is too large", path, name);
    const hp_json *of = hp_json_get(v, "data_offsets");
    int64_t b, e;
    if (!of || of->type != HP_JSON_ARRAY || of->n != 2 || !json_uint(&b, &of->items[0]) ||
        !json_uint(&e, &of->items[1]))
        return hp_errorf("%s: tensor '%s': 'data_offsets' must be two non-negative integers", path, name);
    if (e < b) return hp_errorf("%s: tensor '%s': data_offsets [%lld, %lld] end before they begin", path, name,
                                (long long)b, (long long)e);
    if ((uint64_t)e > data_len)
        return hp_errorf("%s: tensor '%s': data_offsets [%lld, %lld] run past the %zu data bytes in the file", path,
                         name, (long long)b, (long long)e, data_len);
    if ((uint64_t)(e - b) != nbytes) {
        char sbuf[96];
        return hp_errorf("%s: tensor '%s': shape %s x %s (%zu bytes each) is %llu bytes but data_offsets span %lld",
                         path, name, hp_shape_str(sbuf, sizeof sbuf, &en->shape), dt->str, esz,
                         (unsigned long long)nbytes, (long long)(e - b));
    }
    en->nbytes = (size_t)nbytes;
    en->data = data + b;
    *begin = (size_t)b;
    return HP_OK;
}

typedef struct {
    size_t b, e;
    int idx;
} span;

static int span_cmp(const void *x, const void *y) {
    const span *a = x, *b = y;
    if (a->b != b->b) return a->b < b->b ? -1 : 1;
    if (a->e != b->e) return a->e < b->e ? -1 : 1;
    return a->idx - b->idx;
}

static hp_status check_contiguous(const hp_safetensors *st, size_t data_len) {
    if (st->n == 0) {
        if (data_len != 0)
            return hp_errorf("%s: %zu data bytes follow a header that lists no tensors", st->path, data_len);
        return HP_OK;
    }
    span *s = malloc((size_t)st->n * sizeof *s);
    HP_ASSERT(s != NULL);
    for (int i = 0; i < st->n; i++) s[i] = (span){st->begin[i], st->begin[i] + st->entries[i].nbytes, i};
    qsort(s, (size_t)st->n, sizeof *s, span_cmp);
    size_t at = 0;
    hp_status e = HP_OK;
    for (int i = 0; i < st->n && !e; i++) {
        if (s[i].b != at)
            e = hp_errorf("%s: tensor '%s': data_offsets [%zu, %zu] %s (expected it to start at byte %zu)", st->path,
                          st->entries[s[i].idx].name, s[i].b, s[i].e, s[i].b > at ? "leave a gap" : "overlap another tensor",
                          at);
        at = s[i].e;
    }
    if (!e && at != data_len)
        e = hp_errorf("%s: tensor '%s': data ends at byte %zu but the file holds %zu data bytes", st->path,
                      st->entries[s[st->n - 1].idx].name, at, data_len);
    free(s);
    return e;
}

/* The tensors' checksums in __metadata__ ("crc32c.<name>": 8 hex digits):
 * all of them or none (a file written before checksums); each names a tensor. */
static hp_status read_checksums(hp_safetensors *st) {
    const hp_json *m = st->meta;
    size_t pl = strlen(CRC_PREFIX);
    int found = 0;
    for (int k = 0; m && k < m->n; k++) {
        const char *key = m->keys[k];
        if (strncmp(key, CRC_PREFIX, pl)) continue;
        const hp_safetensors_entry *en = hp_safetensors_find(st, key + pl);
        if (!en) return hp_errorf("%s: %s key '%s' names no tensor of the file", st->path, META_KEY, key);
        const char *v = m->items[k].str;
        uint32_t x = 0;
        int ok = m->items[k].len == 8;
        for (int i = 0; i < 8 && ok; i++) {
            char c = v[i];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            ok = d >= 0;
            x = x << 4 | (uint32_t)(ok ? d : 0);
        }
        if (!ok) return hp_errorf("%s: %s key '%s': expected 8 hex digits", st->path, META_KEY, key);
        int i = (int)(en - st->entries);
        if (st->has_crc[i]) return hp_errorf("%s: %s key '%s' is given twice", st->path, META_KEY, key);
        st->crc[i] = x, st->has_crc[i] = 1;
        found++;
    }
    for (int i = 0; i < st->n && found; i++)
        if (!st->has_crc[i])
            return hp_errorf("%s: tensor '%s': no checksum (%s%s) while the file's other tensors have one", st->path,
                             st->entries[i].name, CRC_PREFIX, st->entries[i].name);
    return HP_OK;
}

static hp_status open_body(hp_safetensors *st, int fd, size_t fsize) {
    const char *path = st->path;
    if (fsize < 8) return hp_errorf("%s: file is %zu bytes, too short for a safetensors header", path, fsize);
    st->map = mmap(NULL, fsize, PROT_READ, MAP_PRIVATE, fd, 0);
    if (st->map == MAP_FAILED) {
        st->map = NULL;
        return hp_errorf("%s: cannot map: %s", path, strerror(errno));
    }
    st->map_len = fsize;
    const unsigned char *base = st->map;
    uint64_t hlen;
    memcpy(&hlen, base, 8);
    if (hlen > MAX_HEADER || hlen > fsize - 8)
        return hp_errorf("%s: header length %llu does not fit in the %zu-byte file", path, (unsigned long long)hlen,
                         fsize);
    hp_status e = hp_json_parse(&st->header, (const char *)base + 8, (size_t)hlen);
    if (e) return hp_error_wrap(e, "%s: header", path);
    const hp_json *h = st->header;
    if (h->type != HP_JSON_OBJECT) return hp_errorf("%s: header must be a JSON object, got %s", path, hp_json_type_name(h->type));
    const unsigned char *data = base + 8 + hlen;
    size_t data_len = fsize - 8 - (size_t)hlen;
    st->entries = calloc((size_t)(h->n ? h->n : 1), sizeof *st->entries);
    st->begin = calloc((size_t)(h->n ? h->n : 1), sizeof *st->begin);
    st->crc = calloc((size_t)(h->n ? h->n : 1), sizeof *st->crc);
    st->has_crc = calloc((size_t)(h->n ? h->n : 1), sizeof *st->has_crc);
    st->verified = calloc((size_t)(h->n ? h->n : 1), sizeof *st->verified);
    st->spans = hp_crc_spans_new(h->n);
    HP_ASSERT(st->entries && st->begin && st->crc && st->has_crc && st->verified && st->spans);
    for (int i = 0; i < h->n; i++) {
        if (!strcmp(h->keys[i], META_KEY)) {
            const hp_json *m = &h->items[i];
            if (m->type != HP_JSON_OBJECT) return hp_errorf("%s: %s must be an object", path, META_KEY);
            for (int k = 0; k < m->n; k++)
                if (m->items[k].type != HP_JSON_STRING)
                    return hp_errorf("%s: %s key '%s' must hold a string", path, META_KEY, m->keys[k]);
            st->meta = m;
            continue;
        }
        HP_TRY(parse_entry(&st->entries[st->n], &st->begin[st->n], path, h->keys[i], &h->items[i], data_len, data));
        st->n++;
    }
    HP_TRY(check_contiguous(st, data_len));
    return read_checksums(st);
}

hp_status hp_safetensors_open(hp_safetensors **out, const char *path) {
    *out = NULL;
    int fd;
    size_t fsize;
    HP_TRY(hp_fs_open_regular(&fd, &fsize, path)); /* a FIFO or a device is refused, not waited on */
    hp_safetensors *st = calloc(1, sizeof *st);
    HP_ASSERT(st != NULL);
    st->path = strdup(path);
    st->verify = 1;
    HP_ASSERT(st->path != NULL);
    hp_status e = open_body(st, fd, fsize);
    close(fd);
    if (e) {
        hp_safetensors_close(st);
        return e;
    }
    *out = st;
    return HP_OK;
}

/* Entry i's bytes gave checksum got. */
static hp_status check_crc(const hp_safetensors *st, int i, uint32_t got) {
    if (got != st->crc[i])
        return hp_errorf("%s: tensor '%s': checksum %08x, but the file's %s says %08x (its bytes were changed or "
                         "damaged)",
                         st->path, st->entries[i].name, got, META_KEY, st->crc[i]);
    atomic_store(&st->verified[i], 1);
    return HP_OK;
}

hp_status hp_safetensors_read_into(const hp_safetensors *st, const char *name, hp_dtype dtype, const hp_shape *shape,
                                   void *dst) {
    const hp_safetensors_entry *en = hp_safetensors_find(st, name);
    if (!en) return hp_errorf("%s: no tensor '%s'", st->path, name);
    if (!en->has_dtype || en->dtype != dtype)
        return hp_errorf("%s: tensor '%s': dtype %s, expected %s", st->path, name, en->dtype_name,
                         st_dtype_name(dtype) ? st_dtype_name(dtype) : "?");
    if (!hp_shape_eq(&en->shape, shape)) {
        char a[96], b[96];
        return hp_errorf("%s: tensor '%s': shape %s, expected %s", st->path, name, hp_shape_str(a, sizeof a, &en->shape),
                         hp_shape_str(b, sizeof b, shape));
    }
    int i = (int)(en - st->entries);
    if (!st->verify || !st->has_crc[i] || atomic_load(&st->verified[i])) {
        if (en->nbytes) memcpy(dst, en->data, en->nbytes);
        return HP_OK;
    }
    uint32_t got = en->nbytes ? hp_crc32c_copy(dst, 0, en->data, en->nbytes) : 0;
    return check_crc(st, i, got);
}

void hp_safetensors_set_verify(hp_safetensors *st, int on) { st->verify = on != 0; }

hp_status hp_safetensors_verify(const hp_safetensors *st, const hp_safetensors_entry *en) {
    int i = (int)(en - st->entries);
    HP_ASSERT(i >= 0 && i < st->n);
    if (!st->verify || !st->has_crc[i] || atomic_load(&st->verified[i])) return HP_OK;
    return check_crc(st, i, en->nbytes ? hp_crc32c(0, en->data, en->nbytes) : 0);
}

hp_status hp_safetensors_read_span(const hp_safetensors *st, const hp_safetensors_entry *en, void *dst, size_t begin,
                                   size_t end) {
    int i = (int)(en - st->entries);
    HP_ASSERT(i >= 0 && i < st->n && begin <= end && end <= en->nbytes);
    const unsigned char *src = (const unsigned char *)en->data + begin;
    if (!st->verify || !st->has_crc[i] || atomic_load(&st->verified[i])) {
        if (end > begin) memcpy(dst, src, end - begin);
        return HP_OK;
    }
    uint32_t crc = end > begin ? hp_crc32c_copy(dst, 0, src, end - begin) : 0;
    if (hp_crc_spans_add(st->spans, i, begin, end, crc)) return hp_errorf("%s: out of memory", st->path);
    return HP_OK;
}

hp_status hp_safetensors_verify_spans(const hp_safetensors *st) {
    for (int i = 0; i < st->n; i++) {
        if (!hp_crc_spans_count(st->spans, i)) continue;
        uint32_t crc;
        hp_status e = HP_OK;
        if (atomic_load(&st->verified[i]))
            ;
        else if (hp_crc_spans_whole(&crc, st->spans, i, st->entries[i].nbytes))
            e = check_crc(st, i, crc);
        else
            e = hp_safetensors_verify(st, &st->entries[i]); /* read in parts that do not tile it: a pass of its own */
        hp_crc_spans_clear(st->spans, i);
        if (e) return e;
    }
    return HP_OK;
}
