/* kernels/bf16_row: private helpers of the bf16 kernel files (not public API):
 * one bf16 value widened, and the chunk size of the kernels that widen and
 * narrow through a stack buffer. */
#ifndef HP_KERNELS_BF16_ROW_H
#define HP_KERNELS_BF16_ROW_H

#include <stdint.h>
#include <string.h>

#define HP_KB_CHUNK 256 /* floats per stack chunk */

static inline float hp_kb_f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#endif
