#include "io/ckpt_index.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/crc32c.h"
#include "io/fsutil.h"
#include "io/json.h"

static const struct {
    const char *name;
    hp_dtype dt;
} k_dtypes[] = {{"F32", HP_F32}, {"BF16", HP_BF16}, {"I32", HP_I32}, {"F64", HP_F64}};

const char *hp_ckpt_dtype_name(hp_dtype t) {
    for (size_t i = 0; i < sizeof k_dtypes / sizeof k_dtypes[0]; i++)
        if (k_dtypes[i].dt == t) return k_dtypes[i].name;
    return NULL;
}

static const char *group_name(hp_ckpt_group g) { return g == HP_CKPT_GROUP_OPTIM ? "optim" : "model"; }

void hp_ckpt_index_init(hp_ckpt_index *ix) {
    memset(ix, 0, sizeof *ix);
    ix->version = 2;
}

static int64_t trailer_bytes(const hp_ckpt_index *ix) { return ix->version >= 2 ? HP_CKPT_TRAILER : 0; }

void hp_ckpt_index_free(hp_ckpt_index *ix) {
    for (int i = 0; i < ix->nfiles; i++) free(ix->files[i].name);
    for (int i = 0; i < ix->ntensors; i++) free(ix->tensors[i].name);
    free(ix->files), free(ix->tensors), free(ix->pieces);
    memset(ix, 0, sizeof *ix);
}

/* Makes room for one more item of size sz in *arr (n used, *cap allocated); 0 on failure. */
static int grow(void **arr, int n, int *cap, size_t sz) {
    if (n < *cap) return 1;
    int nc = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, sz * (size_t)nc);
    if (!p) return 0;
    *arr = p, *cap = nc;
    return 1;
}

int hp_ckpt_index_add_file(hp_ckpt_index *ix, const char *name) {
    if (ix->nfiles < 0 || !grow((void **)&ix->files, ix->nfiles, &ix->cap_files, sizeof *ix->files)) return -1;
    char *n = strdup(name);
    if (!n) return -1;
    ix->files[ix->nfiles] = (hp_ckpt_index_file){.name = n, .bytes = trailer_bytes(ix)};
    return ix->nfiles++;
}

int hp_ckpt_index_add_tensor(hp_ckpt_index *ix, const char *name, hp_ckpt_group group, hp_dtype dtype,
                             const hp_shape *shape) {
    if (!grow((void **)&ix->tensors, ix->ntensors, &ix->cap_tensors, sizeof *ix->tensors)) return -1;
    char *n = strdup(name);
    if (!n) return -1;
    ix->tensors[ix->ntensors] = (hp_ckpt_index_tensor){n, group, dtype, *shape, ix->npieces, 0};
    return ix->ntensors++;
}

int64_t hp_ckpt_index_piece_bytes(const hp_ckpt_index *ix, int piece) {
    const hp_ckpt_index_piece *p = &ix->pieces[piece];
    const hp_ckpt_index_tensor *t = &ix->tensors[p->tensor];
    return hp_region_numel(&p->region, &t->shape) * (int64_t)hp_dtype_size(t->dtype);
}

int hp_ckpt_index_add_piece(hp_ckpt_index *ix, int tensor, int file, const hp_region *region) {
    HP_ASSERT(tensor >= 0 && tensor < ix->ntensors && file >= 0 && file < ix->nfiles);
    hp_ckpt_index_tensor *t = &ix->tensors[tensor];
    HP_ASSERT(t->first + t->count == ix->npieces); /* tensor by tensor */
    if (!grow((void **)&ix->pieces, ix->npieces, &ix->cap_pieces, sizeof *ix->pieces)) return -1;
    hp_ckpt_index_file *f = &ix->files[file];
    int64_t off = (f->data_bytes + 63) / 64 * 64;
    ix->pieces[ix->npieces] = (hp_ckpt_index_piece){tensor, file, off, *region, 0};
    f->data_bytes = off + hp_ckpt_index_piece_bytes(ix, ix->npieces);
    f->bytes = f->data_bytes + trailer_bytes(ix);
    t->count++;
    return ix->npieces++;
}

int hp_ckpt_index_find(const hp_ckpt_index *ix, const char *name) {
    for (int i = 0; i < ix->ntensors; i++)
        if (!strcmp(ix->tensors[i].name, name)) return i;
    return -1;
}

/* A piece's bytes in its file, for the disjointness check. */
typedef struct {
    int file, piece;
    int64_t b, e;
} byte_span;

static int span_cmp(const void *x, const void *y) {
    const byte_span *a = x, *b = y;
    if (a->file != b->file) return a->file < b->file ? -1 : 1;
    if (a->b != b->b) return a->b < b->b ? -1 : 1;
    return a->piece - b->piece;
}

/* "tensors[3] 'wte'.pieces[1]" for piece p. */
static void piece_name(char *out, size_t n, const hp_ckpt_index *ix, int p) {
    const hp_ckpt_index_tensor *t = &ix->tensors[ix->pieces[p].tensor];
    snprintf(out, n, "tensors[%d] '%s'.pieces[%d]", ix->pieces[p].tensor, t->name, p - t->first);
}

/* No two pieces share a byte of a file (pieces are in bounds: checked before). */
static hp_status check_disjoint(const hp_ckpt_index *ix, const char *path) {
    if (ix->npieces == 0) return HP_OK;
    byte_span *s = malloc(sizeof *s * (size_t)ix->npieces);
    if (!s) return hp_errorf("%s: out of memory", path);
    int n = 0;
    for (int p = 0; p < ix->npieces; p++) {
        int64_t nb = hp_ckpt_index_piece_bytes(ix, p);
        if (nb > 0) s[n++] = (byte_span){ix->pieces[p].file, p, ix->pieces[p].offset, ix->pieces[p].offset + nb};
    }
    qsort(s, (size_t)n, sizeof *s, span_cmp);
    hp_status st = HP_OK;
    for (int k = 1; k < n && !st; k++) {
        const byte_span *a = &s[k - 1], *b = &s[k];
        if (a->file != b->file || b->b >= a->e) continue;
        const byte_span *later = a->piece > b->piece ? a : b, *earlier = a->piece > b->piece ? b : a;
        char x[200], y[200];
        piece_name(x, sizeof x, ix, later->piece);
        piece_name(y, sizeof y, ix, earlier->piece);
        st = hp_errorf("%s: %s.offset: its bytes [%lld, %lld) of %s overlap those of %s [%lld, %lld)", path, x,
                       (long long)later->b, (long long)later->e, ix->files[later->file].name, y, (long long)earlier->b,
                       (long long)earlier->e);
    }
    free(s);
    return st;
}

hp_status hp_ckpt_index_check(const hp_ckpt_index *ix, const char *path) {
    if (ix->nfiles < 0 || ix->ntensors < 0 || ix->npieces < 0) return hp_errorf("%s: out of memory", path);
    for (int f = 0; f < ix->nfiles; f++) {
        const char *n = ix->files[f].name;
        if (!n[0] || strchr(n, '/') || !strcmp(n, ".") || !strcmp(n, ".."))
            return hp_errorf("%s: files[%d].name: '%s' is not a file name in the checkpoint directory", path, f, n);
        if (ix->files[f].bytes < 0) return hp_errorf("%s: files[%d].bytes: negative", path, f);
        if (ix->files[f].data_bytes < 0 || ix->files[f].data_bytes != ix->files[f].bytes - trailer_bytes(ix))
            return hp_errorf("%s: files[%d].bytes: %lld, less than the %lld-byte trailer of a data file", path, f,
                             (long long)ix->files[f].bytes, (long long)trailer_bytes(ix));
        for (int g = 0; g < f; g++)
            if (!strcmp(ix->files[g].name, n)) return hp_errorf("%s: files[%d].name: '%s' is listed twice", path, f, n);
    }
    for (int i = 0; i < ix->ntensors; i++) {
        const hp_ckpt_index_tensor *t = &ix->tensors[i];
        if (!t->name[0]) return hp_errorf("%s: tensors[%d].name: empty", path, i);
        if (!hp_ckpt_dtype_name(t->dtype)) return hp_errorf("%s: tensors[%d].dtype: unknown dtype %d", path, i, t->dtype);
        for (int j = 0; j < i; j++)
            if (!strcmp(ix->tensors[j].name, t->name))
                return hp_errorf("%s: tensors[%d].name: '%s' is listed twice", path, i, t->name);
        int64_t covered = 0, numel = hp_shape_numel(&t->shape);
        for (int a = 0; a < t->count; a++) {
            int pa = t->first + a;
            const hp_ckpt_index_piece *p = &ix->pieces[pa];
            char why[200];
            if (p->file < 0 || p->file >= ix->nfiles)
                return hp_errorf("%s: tensors[%d] '%s'.pieces[%d].file: %d is not one of the %d files", path, i,
                                 t->name, a, p->file, ix->nfiles);
            if (hp_region_invalid(why, sizeof why, &p->region, &t->shape))
                return hp_errorf("%s: tensors[%d] '%s'.pieces[%d].%s: %s", path, i, t->name, a,
                                 p->region.kind == HP_REGION_FLAT ? "begin/end" : "start/extent", why);
            int64_t nb = hp_ckpt_index_piece_bytes(ix, pa);
            if (p->offset < 0 || p->offset > ix->files[p->file].data_bytes - nb)
                return hp_errorf("%s: tensors[%d] '%s'.pieces[%d].offset: %lld + %lld bytes is beyond the %lld %sbytes "
                                 "of %s",
                                 path, i, t->name, a, (long long)p->offset, (long long)nb,
                                 (long long)ix->files[p->file].data_bytes, ix->version >= 2 ? "data " : "",
                                 ix->files[p->file].name);
            for (int b = 0; b < a; b++) {
                int64_t o = hp_region_overlap(&ix->pieces[t->first + b].region, &p->region, &t->shape);
                if (o)
                    return hp_errorf("%s: tensors[%d] '%s'.pieces[%d]: overlaps pieces[%d] (%lld elements in both)",
                                     path, i, t->name, a, b, (long long)o);
            }
            covered += hp_region_numel(&p->region, &t->shape);
        }
        if (covered != numel)
            return hp_errorf("%s: tensors[%d] '%s'.pieces: cover %lld of its %lld elements (a piece is missing)", path,
                             i, t->name, (long long)covered, (long long)numel);
    }
    return check_disjoint(ix, path);
}

/* ---- checksums ---- */

static uint32_t crc_i64(uint32_t crc, int64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)v >> (8 * i));
    return hp_crc32c(crc, b, 8);
}

uint32_t hp_ckpt_index_piece_seed(const hp_ckpt_index *ix, int piece) {
    const hp_ckpt_index_piece *p = &ix->pieces[piece];
    const hp_ckpt_index_tensor *t = &ix->tensors[p->tensor];
    /* name NUL group NUL dtype NUL, then little-endian int64s: ndim, the
     * shape, the region's kind, then begin, end (flat) or start[], extent[]
     * over max(ndim, 1) dimensions (box) */
    uint32_t c = hp_crc32c(0, t->name, strlen(t->name) + 1);
    const char *g = group_name(t->group), *d = hp_ckpt_dtype_name(t->dtype);
    c = hp_crc32c(c, g, strlen(g) + 1);
    c = hp_crc32c(c, d ? d : "?", strlen(d ? d : "?") + 1);
    c = crc_i64(c, t->shape.ndim);
    for (int i = 0; i < t->shape.ndim; i++) c = crc_i64(c, t->shape.d[i]);
    c = crc_i64(c, p->region.kind);
    if (p->region.kind == HP_REGION_FLAT) {
        c = crc_i64(c, p->region.begin);
        c = crc_i64(c, p->region.end);
    } else {
        int nd = t->shape.ndim ? t->shape.ndim : 1;
        for (int i = 0; i < nd; i++) c = crc_i64(c, p->region.start[i]);
        for (int i = 0; i < nd; i++) c = crc_i64(c, p->region.extent[i]);
    }
    return c;
}

uint32_t hp_ckpt_index_piece_crc(const hp_ckpt_index *ix, int piece, uint32_t crc_bytes, int64_t n) {
    return hp_crc32c_combine(hp_ckpt_index_piece_seed(ix, piece), crc_bytes, (uint64_t)n);
}

static void put_u32(unsigned char *b, uint32_t v) {
    for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

void hp_ckpt_index_trailer(unsigned char *out, const hp_ckpt_index *ix, int f) {
    const hp_ckpt_index_file *fi = &ix->files[f];
    memset(out, 0, HP_CKPT_TRAILER);
    memcpy(out, HP_CKPT_TRAILER_MAGIC, 8);
    for (int i = 0; i < 8; i++) out[8 + i] = (unsigned char)((uint64_t)fi->step >> (8 * i));
    put_u32(out + 16, fi->crc);
    put_u32(out + 20, (uint32_t)f);
    put_u32(out + 28, hp_crc32c(0, out, 28));
}

int hp_ckpt_index_is_trailer(const unsigned char *in) {
    return !memcmp(in, HP_CKPT_TRAILER_MAGIC, 8) && get_u32(in + 28) == hp_crc32c(0, in, 28);
}

hp_status hp_ckpt_index_trailer_check(const hp_ckpt_index *ix, int f, const unsigned char *in, const char *path,
                                      const char *index_path) {
    const hp_ckpt_index_file *fi = &ix->files[f];
    if (!hp_ckpt_index_is_trailer(in))
        return hp_errorf("%s: its last %d bytes are not a data file's trailer (files[%d] in %s: a damaged, "
                         "truncated or foreign file)",
                         path, HP_CKPT_TRAILER, f, index_path);
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u |= (uint64_t)in[8 + i] << (8 * i);
    int64_t step = (int64_t)u;
    uint32_t crc = get_u32(in + 16), idx = get_u32(in + 20);
    if (step != fi->step)
        return hp_errorf("%s: written at step %lld (its trailer), but files[%d].step in %s is %lld (a data file from "
                         "another checkpoint)",
                         path, (long long)step, f, index_path, (long long)fi->step);
    if (idx != (uint32_t)f)
        return hp_errorf("%s: written as files[%u] (its trailer), but %s lists it as files[%d] (a data file from "
                         "another rank)",
                         path, idx, index_path, f);
    if (crc != fi->crc)
        return hp_errorf("%s: its trailer's checksum %08x is not files[%d].crc32c %08x in %s (a data file from "
                         "another save)",
                         path, crc, f, fi->crc, index_path);
    return HP_OK;
}

/* ---- writing ---- */

static void write_dims(hp_jw *w, const char *key, const int64_t *d, int n) {
    hp_jw_key(w, key);
    hp_jw_array_begin(w);
    for (int i = 0; i < n; i++) hp_jw_int(w, d[i]);
    hp_jw_array_end(w);
}

static void write_crc(hp_jw *w, uint32_t crc) {
    char hex[16];
    snprintf(hex, sizeof hex, "%08x", crc);
    hp_jw_key(w, "crc32c"), hp_jw_string(w, hex);
}

hp_status hp_ckpt_index_write(const hp_ckpt_index *ix, const char *path) {
    HP_TRY(hp_ckpt_index_check(ix, path));
    int v2 = ix->version >= 2;
    for (int f = 0; f < ix->nfiles && v2; f++)
        if (!ix->files[f].has_crc)
            return hp_errorf("%s: files[%d] '%s': no checksums (the data file was not written)", path, f,
                             ix->files[f].name);
    hp_jw w;
    hp_jw_init(&w);
    hp_jw_object_begin(&w);
    hp_jw_key(&w, "format"), hp_jw_string(&w, v2 ? HP_CKPT_INDEX_FORMAT : HP_CKPT_INDEX_FORMAT_V1);
    hp_jw_key(&w, "files");
    hp_jw_array_begin(&w);
    for (int f = 0; f < ix->nfiles; f++) {
        hp_jw_object_begin(&w);
        hp_jw_key(&w, "name"), hp_jw_string(&w, ix->files[f].name);
        hp_jw_key(&w, "bytes"), hp_jw_int(&w, ix->files[f].bytes);
        if (v2) {
            hp_jw_key(&w, "step"), hp_jw_int(&w, ix->files[f].step);
            write_crc(&w, ix->files[f].crc);
        }
        hp_jw_object_end(&w);
    }
    hp_jw_array_end(&w);
    hp_jw_key(&w, "tensors");
    hp_jw_array_begin(&w);
    for (int i = 0; i < ix->ntensors; i++) {
        const hp_ckpt_index_tensor *t = &ix->tensors[i];
        hp_jw_object_begin(&w);
        hp_jw_key(&w, "name"), hp_jw_string(&w, t->name);
        hp_jw_key(&w, "group"), hp_jw_string(&w, group_name(t->group));
        hp_jw_key(&w, "dtype"), hp_jw_string(&w, hp_ckpt_dtype_name(t->dtype));
        write_dims(&w, "shape", t->shape.d, t->shape.ndim);
        hp_jw_key(&w, "pieces");
        hp_jw_array_begin(&w);
        for (int a = 0; a < t->count; a++) {
            const hp_ckpt_index_piece *p = &ix->pieces[t->first + a];
            hp_jw_object_begin(&w);
            hp_jw_key(&w, "file"), hp_jw_int(&w, p->file);
            hp_jw_key(&w, "offset"), hp_jw_int(&w, p->offset);
            if (p->region.kind == HP_REGION_FLAT) {
                hp_jw_key(&w, "begin"), hp_jw_int(&w, p->region.begin);
                hp_jw_key(&w, "end"), hp_jw_int(&w, p->region.end);
            } else {
                int nd = t->shape.ndim ? t->shape.ndim : 1;
                write_dims(&w, "start", p->region.start, nd);
                write_dims(&w, "extent", p->region.extent, nd);
            }
            if (v2) write_crc(&w, p->crc);
            hp_jw_object_end(&w);
        }
        hp_jw_array_end(&w);
        hp_jw_object_end(&w);
    }
    hp_jw_array_end(&w);
    hp_jw_object_end(&w);
    char *text;
    size_t len;
    hp_status st = hp_jw_finish(&text, &len, &w);
    if (st) return hp_error_wrap(st, "%s", path);
    st = hp_fs_write_atomic(path, text, len);
    free(text);
    return st;
}

/* ---- reading ---- */

/* obj[key] as an integer; field names obj in messages. */
static hp_status get_int(int64_t *out, const hp_json *obj, const char *key, const char *path, const char *field) {
    const hp_json *v = hp_json_get(obj, key);
    if (!v) return hp_errorf("%s: %s.%s: missing", path, field, key);
    if (v->type != HP_JSON_NUMBER || !v->is_int)
        return hp_errorf("%s: %s.%s: expected an integer, got %s", path, field, key,
                         v->type == HP_JSON_NUMBER ? "a fraction or a number beyond 64 bits" : hp_json_type_name(v->type));
    *out = v->ival;
    return HP_OK;
}

static hp_status get_str(const char **out, const hp_json *obj, const char *key, const char *path, const char *field) {
    const hp_json *v = hp_json_get(obj, key);
    if (!v) return hp_errorf("%s: %s.%s: missing", path, field, key);
    if (v->type != HP_JSON_STRING)
        return hp_errorf("%s: %s.%s: expected a string, got %s", path, field, key, hp_json_type_name(v->type));
    if (strlen(v->str) != v->len) /* a \u0000 inside: the name would be cut there */
        return hp_errorf("%s: %s.%s: the string holds a NUL character (\\u0000)", path, field, key);
    *out = v->str;
    return HP_OK;
}

/* obj[key]: a checksum, 8 hex digits. */
static hp_status get_crc(uint32_t *out, const hp_json *obj, const char *path, const char *field) {
    const char *s = "";
    HP_TRY(get_str(&s, obj, "crc32c", path, field));
    uint32_t v = 0;
    size_t n = strlen(s);
    for (size_t i = 0; i < n && n == 8; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) n = 0;
        v = v << 4 | (uint32_t)(d < 0 ? 0 : d);
    }
    if (n != 8) return hp_errorf("%s: %s.crc32c: expected 8 hex digits", path, field);
    *out = v;
    return HP_OK;
}

static hp_status get_array(const hp_json **out, const hp_json *obj, const char *key, const char *path,
                           const char *field) {
    const hp_json *v = hp_json_get(obj, key);
    if (!v) return hp_errorf("%s: %s.%s: missing", path, field, key);
    if (v->type != HP_JSON_ARRAY)
        return hp_errorf("%s: %s.%s: expected an array, got %s", path, field, key, hp_json_type_name(v->type));
    *out = v;
    return HP_OK;
}

/* obj[key]: an array of n integers (1 <= n <= HP_MAX_DIMS unless n0 allowed) into d. */
static hp_status get_dims(int64_t *d, int *n, const hp_json *obj, const char *key, const char *path,
                          const char *field) {
    const hp_json *a = NULL;
    HP_TRY(get_array(&a, obj, key, path, field));
    if (a->n > HP_MAX_DIMS)
        return hp_errorf("%s: %s.%s: %d dimensions, at most %d", path, field, key, a->n, HP_MAX_DIMS);
    for (int i = 0; i < a->n; i++) {
        const hp_json *x = &a->items[i];
        if (x->type != HP_JSON_NUMBER || !x->is_int || x->ival < 0)
            return hp_errorf("%s: %s.%s[%d]: expected a non-negative integer", path, field, key, i);
        d[i] = x->ival;
    }
    *n = a->n;
    return HP_OK;
}

static hp_status read_piece(hp_ckpt_index *ix, int ti, const hp_json *o, const char *path, const char *field) {
    const hp_ckpt_index_tensor *t = &ix->tensors[ti];
    if (o->type != HP_JSON_OBJECT) return hp_errorf("%s: %s: expected an object", path, field);
    int64_t file = 0, off = 0;
    HP_TRY(get_int(&file, o, "file", path, field));
    HP_TRY(get_int(&off, o, "offset", path, field));
    if (file < 0 || file >= ix->nfiles)
        return hp_errorf("%s: %s.file: %lld is not one of the %d files", path, field, (long long)file, ix->nfiles);
    hp_region r;
    if (hp_json_get(o, "begin") || hp_json_get(o, "end")) {
        int64_t b = 0, e = 0;
        HP_TRY(get_int(&b, o, "begin", path, field));
        HP_TRY(get_int(&e, o, "end", path, field));
        r = hp_region_flat(b, e);
    } else {
        int64_t s[HP_MAX_DIMS] = {0}, x[HP_MAX_DIMS] = {0};
        int ns = 0, nx = 0, want = t->shape.ndim ? t->shape.ndim : 1;
        HP_TRY(get_dims(s, &ns, o, "start", path, field));
        HP_TRY(get_dims(x, &nx, o, "extent", path, field));
        if (ns != want || nx != want)
            return hp_errorf("%s: %s.%s: %d dimensions, the tensor has %d", path, field, ns != want ? "start" : "extent",
                             ns != want ? ns : nx, want);
        hp_shape ex = {.ndim = want};
        for (int i = 0; i < want; i++) ex.d[i] = x[i];
        r = hp_region_box(s, &ex);
    }
    char why[200];
    if (hp_region_invalid(why, sizeof why, &r, &t->shape))
        return hp_errorf("%s: %s.%s: %s", path, field, r.kind == HP_REGION_FLAT ? "begin/end" : "start/extent", why);
    /* added at the end of its file (as written), then given the offset read */
    uint32_t crc = 0;
    if (ix->version >= 2) HP_TRY(get_crc(&crc, o, path, field));
    int p = hp_ckpt_index_add_piece(ix, ti, (int)file, &r);
    if (p < 0) return hp_errorf("%s: out of memory", path);
    ix->pieces[p].offset = off;
    ix->pieces[p].crc = crc;
    return HP_OK;
}

static hp_status read_tree(hp_ckpt_index *ix, const hp_json *j, const char *path) {
    if (j->type != HP_JSON_OBJECT) return hp_errorf("%s: expected a JSON object, got %s", path, hp_json_type_name(j->type));
    const char *fmt = "";
    HP_TRY(get_str(&fmt, j, "format", path, "(top)"));
    if (!strcmp(fmt, HP_CKPT_INDEX_FORMAT_V1))
        ix->version = 1;
    else if (strcmp(fmt, HP_CKPT_INDEX_FORMAT))
        return hp_errorf("%s: format: '%s', expected '%s' (or the older '%s')", path, fmt, HP_CKPT_INDEX_FORMAT,
                         HP_CKPT_INDEX_FORMAT_V1);
    const hp_json *files = NULL, *tensors = NULL;
    HP_TRY(get_array(&files, j, "files", path, "(top)"));
    HP_TRY(get_array(&tensors, j, "tensors", path, "(top)"));
    char field[160];
    int64_t *sizes = calloc((size_t)files->n + 1, sizeof *sizes);
    if (!sizes) return hp_errorf("%s: out of memory", path);
    hp_status st = HP_OK;
    for (int f = 0; f < files->n && !st; f++) {
        snprintf(field, sizeof field, "files[%d]", f);
        const char *name = "";
        if (files->items[f].type != HP_JSON_OBJECT) st = hp_errorf("%s: %s: expected an object", path, field);
        if (!st) st = get_str(&name, &files->items[f], "name", path, field);
        if (!st) st = get_int(&sizes[f], &files->items[f], "bytes", path, field);
        if (!st && hp_ckpt_index_add_file(ix, name) < 0) st = hp_errorf("%s: out of memory", path);
        if (!st && ix->version >= 2) {
            hp_ckpt_index_file *fi = &ix->files[ix->nfiles - 1];
            st = get_int(&fi->step, &files->items[f], "step", path, field);
            if (!st) st = get_crc(&fi->crc, &files->items[f], path, field);
            fi->has_crc = !st;
        }
    }
    for (int i = 0; i < tensors->n && !st; i++) {
        const hp_json *t = &tensors->items[i];
        snprintf(field, sizeof field, "tensors[%d]", i);
        const char *name = "", *group = "", *dtype = "";
        const hp_json *pieces = NULL;
        int64_t d[HP_MAX_DIMS] = {0};
        int nd = 0;
        if (t->type != HP_JSON_OBJECT) st = hp_errorf("%s: %s: expected an object", path, field);
        if (!st) st = get_str(&name, t, "name", path, field);
        if (!st) st = get_str(&group, t, "group", path, field);
        if (!st) st = get_str(&dtype, t, "dtype", path, field);
        if (!st) st = get_dims(d, &nd, t, "shape", path, field);
        if (!st) st = get_array(&pieces, t, "pieces", path, field);
        if (st) break;
        hp_ckpt_group g = HP_CKPT_GROUP_MODEL;
        if (!strcmp(group, "optim")) g = HP_CKPT_GROUP_OPTIM;
        else if (strcmp(group, "model")) st = hp_errorf("%s: %s.group: '%s', expected 'model' or 'optim'", path, field, group);
        int dt = -1;
        for (size_t k = 0; k < sizeof k_dtypes / sizeof k_dtypes[0]; k++)
            if (!strcmp(k_dtypes[k].name, dtype)) dt = (int)k_dtypes[k].dt;
        if (!st && dt < 0)
            st = hp_errorf("%s: %s.dtype: '%s' is not one of F32, BF16, I32, F64", path, field, dtype);
        hp_shape sh = {.ndim = nd};
        int64_t bytes = (int64_t)hp_dtype_size(dt < 0 ? HP_F32 : (hp_dtype)dt);
        for (int k = 0; k < nd; k++) {
            sh.d[k] = d[k];
            if (!st && __builtin_mul_overflow(bytes, d[k], &bytes))
                st = hp_errorf("%s: %s.shape: the tensor's size overflows 64 bits", path, field);
        }
        if (!st && hp_ckpt_index_add_tensor(ix, name, g, (hp_dtype)dt, &sh) < 0) st = hp_errorf("%s: out of memory", path);
        for (int a = 0; a < pieces->n && !st; a++) {
            char pf[200];
            snprintf(pf, sizeof pf, "tensors[%d] '%s'.pieces[%d]", i, name, a);
            st = read_piece(ix, ix->ntensors - 1, &pieces->items[a], path, pf);
        }
    }
    for (int f = 0; f < ix->nfiles && !st; f++)
        ix->files[f].bytes = sizes[f], ix->files[f].data_bytes = sizes[f] - trailer_bytes(ix);
    free(sizes);
    return st ? st : hp_ckpt_index_check(ix, path);
}

hp_status hp_ckpt_index_read(hp_ckpt_index *ix, const char *path) {
    hp_ckpt_index_init(ix);
    char *text;
    size_t n;
    HP_TRY(hp_fs_read_bounded(&text, &n, path, HP_CKPT_INDEX_MAX_BYTES));
    hp_json *j;
    hp_status st = hp_json_parse(&j, text, n);
    free(text);
    if (st) return hp_error_wrap(st, "%s", path);
    st = read_tree(ix, j, path);
    hp_json_free(j);
    if (st) hp_ckpt_index_free(ix);
    return st;
}
