/* core/alloc: see the header. */
#define _DEFAULT_SOURCE
#include "core/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PAGE ((size_t)4096)

void *hp_alloc_zeroed(size_t n) {
    if (n > SIZE_MAX - 4095) return NULL;
    size_t sz = (n + 4095) / 4096 * 4096;
    if (sz == 0) sz = 4096;
    void *p = aligned_alloc(4096, sz);
    if (p) memset(p, 0, sz);
    return p;
}

static size_t pages(size_t n) { return (n + PAGE - 1) / PAGE * PAGE; }

void *hp_alloc_reserve(size_t n) {
    if (n > SIZE_MAX - PAGE) return NULL;
    void *p = mmap(NULL, pages(n ? n : 1), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int hp_alloc_commit(void *p, size_t off, size_t len) {
    if (!len) return 0;
    size_t a = off / PAGE * PAGE, b = pages(off + len);
    if (mprotect((char *)p + a, b - a, PROT_READ | PROT_WRITE)) return -1;
    /* fresh anonymous pages read as zero; touch each once so that set-up, not the first step, pays for them */
    for (size_t q = a; q < b; q += PAGE) {
        volatile char *c = (volatile char *)p + q;
        *c = *c;
    }
    return 0;
}

void hp_alloc_release(void *p, size_t n) {
    if (p) munmap(p, pages(n ? n : 1));
}

static void *host_alloc(void *ctx, size_t n) {
    (void)ctx;
    return hp_alloc_zeroed(n);
}

static void host_free(void *ctx, void *p, size_t n) {
    (void)ctx, (void)n;
    free(p);
}

static const hp_allocator host = {host_alloc, host_free, NULL};

const hp_allocator *hp_allocator_host(void) { return &host; }
