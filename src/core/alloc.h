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

/* An allocator of the runtime's big buffers: a program's memory (arena,
 * gradients, inputs, scratch: runtime/program) and a parameter store's
 * (runtime/params). alloc gives n bytes, zeroed, aligned as hp_alloc_zeroed
 * (NULL when it fails); free takes back a buffer alloc gave (p NULL: nothing;
 * n: the size asked for). ctx is the allocator's own state, handed to both.
 * Another device's allocator (device memory) is another of these; reserved
 * buffers (above) stay host memory. */
typedef struct hp_allocator {
    void *(*alloc)(void *ctx, size_t n);
    void (*free)(void *ctx, void *p, size_t n);
    void *ctx;
} hp_allocator;

/* The host allocator: hp_alloc_zeroed and free() (static, read-only). */
const hp_allocator *hp_allocator_host(void);

static inline void *hp_allocator_alloc(const hp_allocator *a, size_t n) { return a->alloc(a->ctx, n); }
static inline void hp_allocator_free(const hp_allocator *a, void *p, size_t n) {
    if (p) a->free(a->ctx, p, n);
}

#endif
