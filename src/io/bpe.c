/* io/bpe: the tokenizer's tables (hash maps for token texts, merge ranks and
 * the piece cache), the merge loop, encoding and decoding. */
#include "io/bpe.h"

#include <stdlib.h>
#include <string.h>

#include "io/unicode_class.h"

#define EMPTY_ID UINT32_MAX
/* Pieces up to this many bytes are cached; the cache is emptied when it
 * holds CACHE_MAX_ENTRIES pieces or CACHE_MAX_BYTES bytes of keys. */
#define CACHE_MAX_KEY 256
#define CACHE_MAX_ENTRIES (1u << 17)
#define CACHE_MAX_BYTES (32u << 20)

typedef struct {
    uint32_t off, len; /* in the text arena; len EMPTY_ID: no token has this id */
} span;

typedef struct {
    uint64_t key; /* (a << 32) | b */
    int32_t rank, merged;
} merge;

typedef struct {
    uint64_t hash;
    uint32_t key_off, key_len, ids_off, nids;
} centry;

struct hp_bpe {
    char *source;
    /* token texts (GPT-2's byte-to-character mapping), by id */
    char *text;
    size_t text_len, text_cap;
    span *by_id;
    int id_cap, vocab; /* vocab: largest id + 1 */
    int32_t *text_map; /* open addressing: slot -> id, -1 empty */
    uint32_t text_map_cap, ntokens;
    /* merges: (a, b) -> rank and the merged token */
    merge *merges; /* key 0 with rank -1: empty */
    uint32_t merge_cap, nmerges;
    /* after finish */
    int finished, eot;
    int32_t byte_id[256];
    uint8_t *dec;     /* the tokens' bytes */
    uint32_t *dec_off; /* [vocab + 1] */
    /* the piece cache */
    centry *cache;
    uint32_t cache_cap, ncache;
    uint8_t *ckeys;
    size_t ckeys_len, ckeys_cap;
    int32_t *cids;
    size_t cids_len, cids_cap;
    /* the piece being merged */
    int32_t *work;
    size_t work_cap;
};

/* ---- hashing ----------------------------------------------------------- */

static uint64_t hash_bytes(const void *p, size_t n) {
    const uint8_t *s = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(p, c * elem);
    HP_ASSERT(q != NULL);
    *cap = c;
    return q;
}

/* ---- the byte-to-character mapping of GPT-2 ------------------------------ */

/* Bytes that are printable Latin-1 stand for themselves; the other 68 map to
 * U+0100 onwards, in byte order. */
static int printable_byte(int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255); }

static uint32_t byte_to_cp(int b) {
    if (printable_byte(b)) return (uint32_t)b;
    uint32_t n = 0;
    for (int k = 0; k < b; k++)
        if (!printable_byte(k)) n++;
    return 256 + n;
}

/* The byte code point cp stands for, or -1. */
static int cp_to_byte(uint32_t cp, const int16_t *inv) {
    if (cp < 256) return printable_byte((int)cp) ? (int)cp : -1;
    return cp < 256 + 68 ? inv[cp - 256] : -1;
}

static size_t utf8_put(char *out, uint32_t cp) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
}

/* ---- building ---------------------------------------------------------- */

hp_status hp_bpe_create(hp_bpe **out) {
    hp_bpe *b = calloc(1, sizeof *b);
    HP_ASSERT(b != NULL);
    b->eot = -1;
    b->source = strdup("");
    HP_ASSERT(b->source != NULL);
    *out = b;
    return HP_OK;
}

hp_status hp_bpe_set_source(hp_bpe *b, const char *source) {
    char *s = strdup(source);
    HP_ASSERT(s != NULL);
    free(b->source);
    b->source = s;
    return HP_OK;
}

void hp_bpe_free(hp_bpe *b) {
    if (!b) return;
    free(b->source);
    free(b->text);
    free(b->by_id);
    free(b->text_map);
    free(b->merges);
    free(b->dec);
    free(b->dec_off);
    free(b->cache);
    free(b->ckeys);
    free(b->cids);
    free(b->work);
    free(b);
}

static const char *tok_text(const hp_bpe *b, int32_t id, size_t *len) {
    *len = b->by_id[id].len;
    return b->text + b->by_id[id].off;
}

/* The id of the token with this text, or -1. */
static int32_t find_text(const hp_bpe *b, const char *s, size_t n) {
    if (!b->text_map_cap) return -1;
    uint32_t mask = b->text_map_cap - 1, i = (uint32_t)hash_bytes(s, n) & mask;
    for (;; i = (i + 1) & mask) {
        int32_t id = b->text_map[i];
        if (id < 0) return -1;
        size_t len;
        const char *t = tok_text(b, id, &len);
        if (len == n && !memcmp(t, s, n)) return id;
    }
}

int hp_bpe_find(const hp_bpe *b, const char *text, size_t len) { return find_text(b, text, len); }

static void text_map_insert(hp_bpe *b, int32_t id) {
    size_t len;
    const char *t = tok_text(b, id, &len);
    uint32_t mask = b->text_map_cap - 1, i = (uint32_t)hash_bytes(t, len) & mask;
    while (b->text_map[i] >= 0) i = (i + 1) & mask;
    b->text_map[i] = id;
}

static void text_map_grow(hp_bpe *b) {
    if ((b->ntokens + 1) * 2 <= b->text_map_cap) return;
    uint32_t cap = b->text_map_cap ? b->text_map_cap * 2 : 1024;
    free(b->text_map);
    b->text_map = malloc(cap * sizeof *b->text_map);
    HP_ASSERT(b->text_map != NULL);
    memset(b->text_map, 0xff, cap * sizeof *b->text_map);
    b->text_map_cap = cap;
    for (int id = 0; id < b->vocab; id++)
        if (b->by_id[id].len != EMPTY_ID) text_map_insert(b, id);
}

hp_status hp_bpe_add_token(hp_bpe *b, const char *text, size_t len, int64_t id, const char *where) {
    HP_ASSERT(!b->finished);
    if (id < 0 || id >= HP_BPE_MAX_VOCAB)
        return hp_errorf("%s: token \"%.*s\" has id %lld, outside [0, %d)", where, (int)(len > 80 ? 80 : len), text,
                         (long long)id, HP_BPE_MAX_VOCAB);
    if (len == 0) return hp_errorf("%s: id %lld has an empty token", where, (long long)id);
    if (len > 65536) return hp_errorf("%s: id %lld has a token of %zu bytes (at most 65536)", where, (long long)id, len);
    if (id < b->vocab && b->by_id[id].len != EMPTY_ID) {
        size_t ol;
        const char *o = tok_text(b, (int32_t)id, &ol);
        return hp_errorf("%s: id %lld is given twice (tokens \"%.*s\" and \"%.*s\")", where, (long long)id,
                         (int)(ol > 80 ? 80 : ol), o, (int)(len > 80 ? 80 : len), text);
    }
    int32_t dup = find_text(b, text, len);
    if (dup >= 0)
        return hp_errorf("%s: token \"%.*s\" is given twice (ids %d and %lld)", where, (int)(len > 80 ? 80 : len),
                         text, dup, (long long)id);
    if (b->text_len + len > UINT32_MAX / 2) return hp_errorf("%s: the vocabulary's text is too large", where);
    if (id >= b->id_cap) {
        int cap = b->id_cap ? b->id_cap : 1024;
        while (cap <= id) cap *= 2;
        span *n = realloc(b->by_id, (size_t)cap * sizeof *n);
        HP_ASSERT(n != NULL);
        for (int k = b->id_cap; k < cap; k++) n[k].len = EMPTY_ID, n[k].off = 0;
        b->by_id = n;
        b->id_cap = cap;
    }
    text_map_grow(b); /* before the token is in by_id: the rebuild must not insert it */
    b->text = grow(b->text, &b->text_cap, b->text_len + len, 1);
    memcpy(b->text + b->text_len, text, len);
    b->by_id[id].off = (uint32_t)b->text_len;
    b->by_id[id].len = (uint32_t)len;
    b->text_len += len;
    if (id >= b->vocab) b->vocab = (int)id + 1;
    text_map_insert(b, (int32_t)id);
    b->ntokens++;
    return HP_OK;
}

static const merge *find_merge(const hp_bpe *b, int32_t x, int32_t y) {
    if (!b->merge_cap) return NULL;
    uint64_t key = ((uint64_t)(uint32_t)x << 32) | (uint32_t)y;
    uint32_t mask = b->merge_cap - 1, i = (uint32_t)mix64(key) & mask;
    for (;; i = (i + 1) & mask) {
        const merge *m = &b->merges[i];
        if (m->rank < 0) return NULL;
        if (m->key == key) return m;
    }
}

static void merge_insert(merge *tab, uint32_t cap, merge m) {
    uint32_t mask = cap - 1, i = (uint32_t)mix64(m.key) & mask;
    while (tab[i].rank >= 0) i = (i + 1) & mask;
    tab[i] = m;
}

hp_status hp_bpe_add_merge(hp_bpe *b, const char *a, size_t alen, const char *bt, size_t blen, const char *where) {
    HP_ASSERT(!b->finished);
    int32_t x = find_text(b, a, alen), y = find_text(b, bt, blen);
    if (x < 0) return hp_errorf("%s: merge part \"%.*s\" is not in the vocabulary", where, (int)(alen > 80 ? 80 : alen), a);
    if (y < 0)
        return hp_errorf("%s: merge part \"%.*s\" is not in the vocabulary", where, (int)(blen > 80 ? 80 : blen), bt);
    size_t ml = alen + blen;
    char small[512], *cat = ml <= sizeof small ? small : malloc(ml);
    HP_ASSERT(cat != NULL);
    memcpy(cat, a, alen);
    memcpy(cat + alen, bt, blen);
    int32_t z = find_text(b, cat, ml);
    hp_status e = HP_OK;
    if (z < 0)
        e = hp_errorf("%s: the merge of \"%.*s\" and \"%.*s\" gives \"%.*s\", which is not in the vocabulary", where,
                      (int)(alen > 80 ? 80 : alen), a, (int)(blen > 80 ? 80 : blen), bt, (int)(ml > 160 ? 160 : ml),
                      cat);
    if (cat != small) free(cat);
    if (e) return e;
    const merge *old = find_merge(b, x, y);
    if (old)
        return hp_errorf("%s: the merge \"%.*s\" \"%.*s\" is given twice (ranks %d and %u)", where,
                         (int)(alen > 80 ? 80 : alen), a, (int)(blen > 80 ? 80 : blen), bt, old->rank, b->nmerges);
    if (b->nmerges >= (uint32_t)HP_BPE_MAX_VOCAB * 4) return hp_errorf("%s: too many merges", where);
    if ((b->nmerges + 1) * 2 > b->merge_cap) {
        uint32_t cap = b->merge_cap ? b->merge_cap * 2 : 1024;
        merge *tab = malloc(cap * sizeof *tab);
        HP_ASSERT(tab != NULL);
        for (uint32_t k = 0; k < cap; k++) tab[k].rank = -1, tab[k].key = 0, tab[k].merged = -1;
        for (uint32_t k = 0; k < b->merge_cap; k++)
            if (b->merges[k].rank >= 0) merge_insert(tab, cap, b->merges[k]);
        free(b->merges);
        b->merges = tab;
        b->merge_cap = cap;
    }
    merge m = {((uint64_t)(uint32_t)x << 32) | (uint32_t)y, (int32_t)b->nmerges, z};
    merge_insert(b->merges, b->merge_cap, m);
    b->nmerges++;
    return HP_OK;
}

/* The bytes token id stands for: its characters mapped back to bytes, or,
 * when one of them is not in the mapping (a special token), its text. */
static void decode_token(hp_bpe *b, int32_t id, const int16_t *inv, size_t *dlen, size_t *dcap) {
    size_t len;
    const char *t = tok_text(b, id, &len);
    b->dec = grow(b->dec, dcap, *dlen + len, 1);
    size_t start = *dlen, k = 0;
    while (k < len) {
        uint32_t cp;
        k += hp_utf8_next(&cp, (const uint8_t *)t + k, len - k);
        int byte = cp == HP_UTF8_INVALID ? -1 : cp_to_byte(cp, inv);
        if (byte < 0) { /* not in the mapping: the text as it is */
            memcpy(b->dec + start, t, len);
            *dlen = start + len;
            return;
        }
        b->dec[(*dlen)++] = (uint8_t)byte;
    }
}

hp_status hp_bpe_finish(hp_bpe *b, const char *where) {
    HP_ASSERT(!b->finished);
    if (b->vocab == 0) return hp_errorf("%s: the vocabulary is empty", where);
    for (int id = 0; id < b->vocab; id++)
        if (b->by_id[id].len == EMPTY_ID)
            return hp_errorf("%s: id %d has no token (ids must be 0..V-1; the largest is %d)", where, id, b->vocab - 1);
    int16_t inv[68];
    for (int c = 0; c < 256; c++) {
        uint32_t cp = byte_to_cp(c);
        if (cp >= 256) inv[cp - 256] = (int16_t)c;
        char u[4];
        size_t n = utf8_put(u, cp);
        b->byte_id[c] = find_text(b, u, n);
        if (b->byte_id[c] < 0)
            return hp_errorf("%s: no token for byte 0x%02x (\"%.*s\"): not a GPT-2 byte-level BPE vocabulary", where,
                             c, (int)n, u);
    }
    b->dec_off = malloc(((size_t)b->vocab + 1) * sizeof *b->dec_off);
    HP_ASSERT(b->dec_off != NULL);
    size_t dlen = 0, dcap = 0;
    for (int id = 0; id < b->vocab; id++) {
        b->dec_off[id] = (uint32_t)dlen;
        decode_token(b, id, inv, &dlen, &dcap);
    }
    b->dec_off[b->vocab] = (uint32_t)dlen;
    static const char eot[] = "<|endoftext|>";
    b->eot = find_text(b, eot, sizeof eot - 1);
    b->finished = 1;
    return HP_OK;
}

/* ---- use --------------------------------------------------------------- */

int hp_bpe_vocab(const hp_bpe *b) { return b->vocab; }
int hp_bpe_eot(const hp_bpe *b) { return b->eot; }
const char *hp_bpe_source(const hp_bpe *b) { return b->source; }

const uint8_t *hp_bpe_token_bytes(const hp_bpe *b, int id, size_t *len) {
    HP_ASSERT(b->finished);
    if (id < 0 || id >= b->vocab) {
        *len = 0;
        return NULL;
    }
    *len = b->dec_off[id + 1] - b->dec_off[id];
    return b->dec + b->dec_off[id];
}

/* GPT-2's merge loop over w[0..m): the adjacent pair of lowest rank is
 * merged wherever it occurs, left to right, until no pair has a rank.
 * Returns the new length. */
static size_t merge_word(const hp_bpe *b, int32_t *w, size_t m) {
    while (m > 1) {
        const merge *best = NULL;
        for (size_t k = 0; k + 1 < m; k++) {
            const merge *e = find_merge(b, w[k], w[k + 1]);
            if (e && (!best || e->rank < best->rank)) best = e;
        }
        if (!best) break;
        int32_t x = (int32_t)(best->key >> 32), y = (int32_t)(uint32_t)best->key;
        size_t j = 0;
        for (size_t k = 0; k < m;) {
            if (k + 1 < m && w[k] == x && w[k + 1] == y) {
                w[j++] = best->merged;
                k += 2;
            } else {
                w[j++] = w[k++];
            }
        }
        m = j;
    }
    return m;
}

static void cache_clear(hp_bpe *b) {
    if (b->cache) memset(b->cache, 0, b->cache_cap * sizeof *b->cache);
    b->ncache = 0;
    b->ckeys_len = b->cids_len = 0;
}

/* A cached piece: its entry, or the empty slot where it would go. */
static centry *cache_slot(hp_bpe *b, const uint8_t *s, size_t n, uint64_t h) {
    uint32_t mask = b->cache_cap - 1, i = (uint32_t)h & mask;
    for (;; i = (i + 1) & mask) {
        centry *c = &b->cache[i];
        if (!c->key_len) return c;
        if (c->hash == h && c->key_len == n && !memcmp(b->ckeys + c->key_off, s, n)) return c;
    }
}

static void cache_put(hp_bpe *b, const uint8_t *s, size_t n, uint64_t h, const int32_t *ids, size_t m) {
    if (!b->cache) {
        b->cache_cap = 2 * CACHE_MAX_ENTRIES;
        b->cache = calloc(b->cache_cap, sizeof *b->cache);
        HP_ASSERT(b->cache != NULL);
    }
    if (b->ncache >= CACHE_MAX_ENTRIES || b->ckeys_len + n > CACHE_MAX_BYTES) cache_clear(b);
    centry *c = cache_slot(b, s, n, h);
    b->ckeys = grow(b->ckeys, &b->ckeys_cap, b->ckeys_len + n, 1);
    b->cids = grow(b->cids, &b->cids_cap, b->cids_len + m, sizeof *b->cids);
    memcpy(b->ckeys + b->ckeys_len, s, n);
    memcpy(b->cids + b->cids_len, ids, m * sizeof *ids);
    c->hash = h;
    c->key_off = (uint32_t)b->ckeys_len;
    c->key_len = (uint32_t)n;
    c->ids_off = (uint32_t)b->cids_len;
    c->nids = (uint32_t)m;
    b->ckeys_len += n;
    b->cids_len += m;
    b->ncache++;
}

/* The ids of piece s[0..n) (n >= 1): in b->work or the cache, valid until
 * the next call. */
static const int32_t *encode_piece(hp_bpe *b, const uint8_t *s, size_t n, size_t *m) {
    uint64_t h = n <= CACHE_MAX_KEY ? hash_bytes(s, n) : 0;
    if (n <= CACHE_MAX_KEY && b->cache) {
        const centry *c = cache_slot(b, s, n, h);
        if (c->key_len) {
            *m = c->nids;
            return b->cids + c->ids_off;
        }
    }
    b->work = grow(b->work, &b->work_cap, n, sizeof *b->work);
    for (size_t k = 0; k < n; k++) b->work[k] = b->byte_id[s[k]];
    *m = merge_word(b, b->work, n);
    if (n <= CACHE_MAX_KEY) cache_put(b, s, n, h, b->work, *m);
    return b->work;
}

hp_status hp_bpe_encode(hp_bpe *b, const uint8_t *s, size_t n, hp_bpe_sink sink, void *ctx) {
    HP_ASSERT(b->finished);
    for (size_t i = 0; i < n;) {
        size_t end = hp_bpe_piece_end(s, n, i), m;
        const int32_t *ids = encode_piece(b, s + i, end - i, &m);
        HP_TRY(sink(ctx, ids, m, end));
        i = end;
    }
    return HP_OK;
}
