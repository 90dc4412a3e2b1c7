/* core/alloc: the page-aligned, zeroed buffers the runtime lives in
 * (parameter stores, gradients, arenas, scratch, FSDP's staging and bf16
 * buffers): allocated once at set-up, each page touched once here, so the
 * allocator's count of page-aligned bytes is what a program holds.
 *
 * Reserved buffers (FSDP's parameter store when a shard group spans
 * supernodes): address space for the whole buffer, of which only the ranges
 * committed are memory (readable, writable, zeroed, touched once); the rest
 * is inaccessible, so a stray access faults instead of reading another
 * supernode's shard. Every element keeps its address in the whole. */
#ifndef HP_CORE_ALLOC_H
#define HP_CORE_ALLOC_H

#include <stddef.h>

/* Page-aligned, zeroed allocation of n bytes (at least one page); NULL when
 * it fails or n overflows. Freed with free(). */
void *hp_alloc_zeroed(size_t n);

/* Address space for n bytes, none of it accessible yet; NULL when it fails.
 * Released with hp_alloc_release(p, n). */
void *hp_alloc_reserve(size_t n);
/* Makes bytes [off, off + len) of a reserved buffer accessible and zeroed
 * (the whole pages that hold them); 0 on success, -1 when it fails. Bytes
 * committed twice stay as they are. */
int hp_alloc_commit(void *p, size_t off, size_t len);
void hp_alloc_release(void *p, size_t n);

#endif
