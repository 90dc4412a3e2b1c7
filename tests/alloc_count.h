/* tests/alloc_count: counts every allocation of the test program. The test's
 * target links with --wrap=malloc,calloc,realloc,aligned_alloc,posix_memalign
 * (its tests.cmake), so those calls come here; allocs() is the count so far,
 * aligned_bytes() the bytes of the aligned ones.
 * Include it in one file of the program only. */
#ifndef HP_TESTS_ALLOC_COUNT_H
#define HP_TESTS_ALLOC_COUNT_H

#include <stddef.h>

static long n_allocs = 0, n_aligned_bytes = 0;
void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t a, size_t b);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
int __wrap_posix_memalign(void **p, size_t a, size_t n);
void *__wrap_malloc(size_t n) { __atomic_add_fetch(&n_allocs, 1, __ATOMIC_RELAXED); return __real_malloc(n); }
void *__wrap_calloc(size_t a, size_t b) { __atomic_add_fetch(&n_allocs, 1, __ATOMIC_RELAXED); return __real_calloc(a, b); }
void *__wrap_realloc(void *p, size_t n) { __atomic_add_fetch(&n_allocs, 1, __ATOMIC_RELAXED); return __real_realloc(p, n); }
void *__wrap_aligned_alloc(size_t a, size_t n) {
    __atomic_add_fetch(&n_allocs, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&n_aligned_bytes, (long)n, __ATOMIC_RELAXED);
    return __real_aligned_alloc(a, n);
}
int __wrap_posix_memalign(void **p, size_t a, size_t n) { __atomic_add_fetch(&n_allocs, 1, __ATOMIC_RELAXED); return __real_posix_memalign(p, a, n); }
static inline long allocs(void) { return __atomic_load_n(&n_allocs, __ATOMIC_RELAXED); }
/* Bytes asked of aligned_alloc so far (the page-aligned buffers: parameter
 * stores, gradients, arenas, optimizer state, scratch). */
static inline long aligned_bytes(void) { return __atomic_load_n(&n_aligned_bytes, __ATOMIC_RELAXED); }

#endif
