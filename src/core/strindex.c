/* core/strindex: an index of strings kept elsewhere (see the header). */
#include "core/strindex.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t hash(const char *s) { /* FNV-1a */
    uint64_t h = 1469598103934665603u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return (size_t)h;
}

int *hp_strindex_slot(const hp_strindex *ix, hp_strindex_key key_of, const void *items, const char *key) {
    size_t i = hash(key) & (ix->cap - 1);
    while (ix->slot[i] && strcmp(key_of(items, ix->slot[i] - 1), key)) i = (i + 1) & (ix->cap - 1);
    return &ix->slot[i];
}

int hp_strindex_reserve(hp_strindex *ix, hp_strindex_key key_of, const void *items, int n) {
    if ((size_t)(n + 1) * 2 <= ix->cap) return 1;
    size_t cap = ix->cap ? ix->cap * 2 : 64;
    while ((size_t)(n + 1) * 2 > cap) cap *= 2;
    int *slot = calloc(cap, sizeof *slot);
    if (!slot) return 0;
    free(ix->slot);
    ix->slot = slot, ix->cap = cap;
    for (int k = 0; k < n; k++) *hp_strindex_slot(ix, key_of, items, key_of(items, k)) = k + 1;
    return 1;
}

void hp_strindex_free(hp_strindex *ix) {
    free(ix->slot);
    ix->slot = NULL, ix->cap = 0;
}
