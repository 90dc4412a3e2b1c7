/* core/alloc: see the header. */
#include "core/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *hp_alloc_zeroed(size_t n) {
    if (n > SIZE_MAX - 4095) return NULL;
    size_t sz = (n + 4095) / 4096 * 4096;
    if (sz == 0) sz = 4096;
    void *p = aligned_alloc(4096, sz);
    if (p) memset(p, 0, sz);
    return p;
}
