/* core/checked: size arithmetic that cannot overflow silently. Each helper
 * computes a product or sum into *out and returns 1, or returns 0 when the
 * exact result does not fit the type (then *out is not to be used). Sizes
 * that come from input (shapes, flags, files) go through these before
 * anything is allocated or indexed. */
#ifndef HP_CORE_CHECKED_H
#define HP_CORE_CHECKED_H

#include <stddef.h>
#include <stdint.h>

static inline int hp_mul_i64(int64_t *out, int64_t a, int64_t b) { return !__builtin_mul_overflow(a, b, out); }
static inline int hp_add_i64(int64_t *out, int64_t a, int64_t b) { return !__builtin_add_overflow(a, b, out); }
static inline int hp_mul_size(size_t *out, size_t a, size_t b) { return !__builtin_mul_overflow(a, b, out); }
static inline int hp_add_size(size_t *out, size_t a, size_t b) { return !__builtin_add_overflow(a, b, out); }

#endif
