/* core/tensor: dtypes, shapes and plain tensors (a shape plus a pointer to
 * storage the tensor does not own). fp32 is computed today; the dtype field is
 * there so bf16 payloads (communication, checkpoints) use the same type. */
#ifndef HP_CORE_TENSOR_H
#define HP_CORE_TENSOR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HP_MAX_DIMS 4

typedef enum { HP_F32 = 0, HP_BF16 = 1, HP_I32 = 2, HP_F64 = 3 } hp_dtype;

typedef struct {
    int ndim;
    int64_t d[HP_MAX_DIMS];
} hp_shape;

typedef struct {
    hp_dtype dtype;
    hp_shape shape;
    void *data;
} hp_tensor;

size_t hp_dtype_size(hp_dtype t);
const char *hp_dtype_name(hp_dtype t);
/* The element count (dims must already be checked: see hp_shape_numel_checked). */
int64_t hp_shape_numel(const hp_shape *s);
/* The most elements one tensor may have (2^40: 4 TiB of fp32), so that every
 * byte count of a tensor fits int64_t with room to spare. */
#define HP_MAX_NUMEL ((int64_t)1 << 40)
/* *out = the element count of s; 0 when a dimension is negative, or the product
 * overflows or exceeds HP_MAX_NUMEL. */
int hp_shape_numel_checked(int64_t *out, const hp_shape *s);
int hp_shape_eq(const hp_shape *a, const hp_shape *b);
hp_shape hp_shape1(int64_t a);
hp_shape hp_shape2(int64_t a, int64_t b);
hp_shape hp_shape3(int64_t a, int64_t b, int64_t c);
hp_shape hp_shape4(int64_t a, int64_t b, int64_t c, int64_t d);
/* "[4, 256, 768]" into buf; returns buf. */
char *hp_shape_str(char *buf, size_t n, const hp_shape *s);

/* bf16 <-> fp32, round to nearest even (NaN stays NaN). */
static inline uint16_t hp_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static inline float hp_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#endif
