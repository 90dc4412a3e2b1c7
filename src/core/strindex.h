/* core/strindex: an index of strings kept elsewhere — items 0..n-1 of a
 * caller's array, each reached through key_of — for finding an item by its
 * string in constant time (a repeated config key, JSON key or plan rule found
 * while a file is parsed, instead of a quadratic scan). Open addressing over
 * item numbers + 1 (0: an empty slot), the capacity a power of two at least
 * twice the items. */
#ifndef HP_CORE_STRINDEX_H
#define HP_CORE_STRINDEX_H

#include <stddef.h>

typedef struct {
    int *slot;
    size_t cap;
} hp_strindex;

/* Item i's string. */
typedef const char *(*hp_strindex_key)(const void *items, int i);

/* The slot of key: *slot is 1 + the item holding it, or 0 (an empty slot,
 * where the caller may put 1 + the number of a new item holding key). */
int *hp_strindex_slot(const hp_strindex *ix, hp_strindex_key key_of, const void *items, const char *key);
/* Room for item n (items 0..n-1 indexed again when it grows); 0 when out of memory. */
int hp_strindex_reserve(hp_strindex *ix, hp_strindex_key key_of, const void *items, int n);
void hp_strindex_free(hp_strindex *ix);

#endif
