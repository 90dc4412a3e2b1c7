/* core/alloc: the page-aligned, zeroed buffers the runtime lives in
 * (parameter stores, gradients, arenas, scratch, FSDP's staging and bf16
 * buffers): allocated once at set-up, each page touched once here, so the
 * allocator's count of page-aligned bytes is what a program holds. */
#ifndef HP_CORE_ALLOC_H
#define HP_CORE_ALLOC_H

#include <stddef.h>

/* Page-aligned, zeroed allocation of n bytes (at least one page); NULL when
 * it fails or n overflows. Freed with free(). */
void *hp_alloc_zeroed(size_t n);

#endif
