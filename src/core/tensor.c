#include "core/tensor.h"

#include <stdio.h>

#include "core/checked.h"

size_t hp_dtype_size(hp_dtype t) {
    switch (t) {
    case HP_F32: return 4;
    case HP_BF16: return 2;
    case HP_I32: return 4;
    case HP_F64: return 8;
    }
    return 0;
}

const char *hp_dtype_name(hp_dtype t) {
    switch (t) {
    case HP_F32: return "f32";
    case HP_BF16: return "bf16";
    case HP_I32: return "i32";
    case HP_F64: return "f64";
    }
    return "?";
}

int64_t hp_shape_numel(const hp_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++) n *= s->d[i];
    return n;
}

int hp_shape_numel_checked(int64_t *out, const hp_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++)
        if (s->d[i] < 0 || !hp_mul_i64(&n, n, s->d[i]) || n > HP_MAX_NUMEL) return 0;
    *out = n;
    return 1;
}

int hp_shape_eq(const hp_shape *a, const hp_shape *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->d[i] != b->d[i]) return 0;
    return 1;
}

hp_shape hp_shape1(int64_t a) { return (hp_shape){1, {a, 0, 0, 0}}; }
hp_shape hp_shape2(int64_t a, int64_t b) { return (hp_shape){2, {a, b, 0, 0}}; }
hp_shape hp_shape3(int64_t a, int64_t b, int64_t c) { return (hp_shape){3, {a, b, c, 0}}; }
hp_shape hp_shape4(int64_t a, int64_t b, int64_t c, int64_t d) { return (hp_shape){4, {a, b, c, d}}; }

char *hp_shape_str(char *buf, size_t n, const hp_shape *s) {
    size_t used = 0;
    int w = snprintf(buf, n, "[");
    used = w > 0 ? (size_t)w : 0;
    for (int i = 0; i < s->ndim && used < n; i++) {
        w = snprintf(buf + used, n - used, i ? ", %lld" : "%lld", (long long)s->d[i]);
        if (w > 0) used += (size_t)w;
    }
    if (used < n) snprintf(buf + used, n - used, "]");
    return buf;
}
