/* api/hf_shards: a Hugging Face directory's weights in one file or in
 * shards by size with their index; the shard limit's parse. */
#include "api/hf_shards.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hyperpar/hyperpar.h>

#include "io/fsutil.h"
#include "io/json.h"

hp_status hp_hf_size_parse(int64_t *bytes, const char *text) {
    static const struct {
        const char *unit;
        int64_t mult;
        int decimal; /* a lowercase final 'b' counts bits, as transformers reads "5Gb" */
    } units[] = {{"KiB", 1LL << 10, 0}, {"MiB", 1LL << 20, 0}, {"GiB", 1LL << 30, 0}, {"TiB", 1LL << 40, 0},
                 {"KB", 1000LL, 1},     {"MB", 1000000LL, 1}, {"GB", 1000000000LL, 1}, {"TB", 1000000000000LL, 1}};
    *bytes = 0;
    const char *s = text ? text : "";
    size_t nd = 0;
    int64_t v = 0;
    while (isdigit((unsigned char)s[nd])) {
        if (v > (INT64_MAX - 9) / 10) return hp_errorf("'%s' is too large", s);
        v = v * 10 + (s[nd++] - '0');
    }
    const char *u = s + nd;
    int64_t mult = 1, div = 1;
    if (*u) {
        int k = 0, nu = (int)(sizeof units / sizeof *units);
        while (k < nu && strcasecmp(u, units[k].unit)) k++;
        if (k == nu) nd = 0; /* not a unit: refused below */
        else mult = units[k].mult, div = units[k].decimal && u[strlen(u) - 1] == 'b' ? 8 : 1;
    }
    if (nd == 0)
        return hp_errorf("'%s' is not a size (bytes, or digits and a unit: KB, MB, GB, TB (powers of 1000), "
                         "KiB, MiB, GiB, TiB (powers of 1024); e.g. 5GB)", s);
    if (v > INT64_MAX / mult) return hp_errorf("'%s' is too large", s);
    if (v == 0) return hp_errorf("'%s' is no bytes (a shard holds at least one tensor)", s);
    *bytes = v * mult / div; /* at least 125 */
    return HP_OK;
}

typedef struct {
    const char *name;
    int file;
} entry;

static int entry_cmp(const void *x, const void *y) {
    return strcmp(((const entry *)x)->name, ((const entry *)y)->name);
}

/* The index: total_size and the weight map (names sorted), file f named names[f]. */
static hp_status write_index(const char *dir, const hp_named_tensor *ts, const int *file_of, int n,
                             char (*names)[48]) {
    entry *e = malloc(sizeof *e * (size_t)(n ? n : 1));
    if (!e) return hp_errorf("%s: out of memory writing the index", dir);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        e[i] = (entry){ts[i].name, file_of[i]};
        total += hp_shape_numel(&ts[i].shape) * (int64_t)hp_dtype_size(ts[i].dtype);
    }
    qsort(e, (size_t)n, sizeof *e, entry_cmp);
    hp_jw w;
    hp_jw_init(&w);
    hp_jw_object_begin(&w);
    hp_jw_key(&w, "metadata");
    hp_jw_object_begin(&w);
    hp_jw_key(&w, "total_size");
    hp_jw_int(&w, total);
    hp_jw_object_end(&w);
    hp_jw_key(&w, "weight_map");
    hp_jw_object_begin(&w);
    for (int i = 0; i < n; i++) {
        hp_jw_key(&w, e[i].name);
        hp_jw_string(&w, names[e[i].file]);
    }
    hp_jw_object_end(&w);
    hp_jw_object_end(&w);
    free(e);
    char *text = NULL, *path = hp_fs_join(dir, "model.safetensors.index.json");
    size_t len = 0;
    hp_status st = path ? hp_jw_finish(&text, &len, &w) : hp_errorf("%s: out of memory writing the index", dir);
    if (!path) hp_jw_free(&w);
    char *nl = st ? NULL : realloc(text, len + 2); /* a final newline, as transformers writes it */
    if (!st && !nl) st = hp_errorf("%s: out of memory writing the index", dir);
    if (nl) text = nl, text[len++] = '\n', text[len] = 0;
    if (!st) st = hp_fs_write_atomic(path, text, len);
    free(text), free(path);
    return st;
}

hp_status hp_hf_write_weights(int *files, const char *dir, const hp_named_tensor *ts, int n, int64_t max_bytes,
                              const char *metadata_json) {
    *files = 0;
    if (max_bytes <= 0) return hp_errorf("%s: the shard limit is %lld bytes (more than 0 needed)", dir,
                                         (long long)max_bytes);
    size_t whole;
    HP_TRY(hp_safetensors_file_size(&whole, ts, n, metadata_json));
    if (whole <= (uint64_t)max_bytes) { /* one file */
        char *p = hp_fs_join(dir, "model.safetensors");
        hp_status st = p ? hp_safetensors_write(p, ts, n, metadata_json) : hp_errorf("%s: out of memory", dir);
        free(p);
        if (!st) *files = 1;
        return st;
    }
    /* shard k holds tensors [first[k], first[k + 1]) */
    int *first = malloc(sizeof(int) * (size_t)(n + 1)), *file_of = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!first || !file_of) return free(first), free(file_of), hp_errorf("%s: out of memory", dir);
    int k = 0;
    hp_status st = HP_OK;
    for (int a = 0, i = 0; !st && i < n;) { /* the current shard: [a, i) */
        size_t sz;
        st = hp_safetensors_file_size(&sz, ts + a, i + 1 - a, metadata_json);
        if (st) break;
        if (sz <= (uint64_t)max_bytes || i == a) { /* it fits, or a tensor too large for any shard: alone */
            i++;
            if (sz > (uint64_t)max_bytes) first[k++] = a, a = i;
        } else {
            first[k++] = a, a = i;
        }
        if (!st && i == n && a < n) first[k++] = a;
    }
    first[k] = n;
    char(*names)[48] = st ? NULL : malloc(sizeof *names * (size_t)k);
    if (!st && !names) st = hp_errorf("%s: out of memory", dir);
    for (int f = 0; !st && f < k; f++) {
        snprintf(names[f], sizeof names[f], "model-%05d-of-%05d.safetensors", f + 1, k);
        for (int i = first[f]; i < first[f + 1]; i++) file_of[i] = f;
        char *p = hp_fs_join(dir, names[f]);
        st = p ? hp_safetensors_write(p, ts + first[f], first[f + 1] - first[f], metadata_json)
               : hp_errorf("%s: out of memory", dir);
        free(p);
    }
    if (!st) st = write_index(dir, ts, file_of, n, names);
    if (!st) *files = k;
    free(names), free(first), free(file_of);
    return st;
}
