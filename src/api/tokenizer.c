/* api/tokenizer: GPT-2's byte-level BPE for programs (the public face of
 * io/bpe). */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "io/bpe.h"
#include "io/regfile.h"

struct hp_tokenizer {
    hp_bpe *b;
};

hp_status hp_tokenizer_load(hp_tokenizer **out, const char *path) {
    *out = NULL;
    hp_bpe *b;
    HP_TRY(hp_bpe_load(&b, path));
    hp_tokenizer *t = malloc(sizeof *t);
    HP_ASSERT(t != NULL);
    t->b = b;
    *out = t;
    return HP_OK;
}

void hp_tokenizer_free(hp_tokenizer *t) {
    if (!t) return;
    hp_bpe_free(t->b);
    free(t);
}

int hp_tokenizer_vocab_size(const hp_tokenizer *t) { return hp_bpe_vocab(t->b); }
int hp_tokenizer_eot(const hp_tokenizer *t) { return hp_bpe_eot(t->b); }

typedef struct {
    int32_t *ids;
    size_t n, cap;
} id_buf;

static hp_status append(void *ctx, const int32_t *ids, size_t n, size_t end) {
    (void)end;
    id_buf *b = ctx;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        int32_t *p = realloc(b->ids, cap * sizeof *p);
        if (!p) return hp_errorf("hp_tokenizer_encode: out of memory for %zu ids", cap);
        b->ids = p;
        b->cap = cap;
    }
    memcpy(b->ids + b->n, ids, n * sizeof *ids);
    b->n += n;
    return HP_OK;
}

hp_status hp_tokenizer_encode(int32_t **ids, size_t *n, hp_tokenizer *t, const char *text, size_t len) {
    *ids = NULL;
    *n = 0;
    id_buf b = {NULL, 0, 0};
    hp_status e = hp_bpe_encode(t->b, (const uint8_t *)text, len, append, &b);
    if (e) {
        free(b.ids);
        return e;
    }
    if (!b.ids) { /* empty text: still a buffer the caller can free */
        b.ids = malloc(sizeof *b.ids);
        HP_ASSERT(b.ids != NULL);
    }
    *ids = b.ids;
    *n = b.n;
    return HP_OK;
}

const char *hp_tokenizer_token(const hp_tokenizer *t, int id, size_t *len) {
    return (const char *)hp_bpe_token_bytes(t->b, id, len);
}

hp_status hp_tokenizer_decode(char **text, size_t *len, const hp_tokenizer *t, const int32_t *ids, size_t n) {
    *text = NULL;
    *len = 0;
    size_t total = 0, k;
    for (size_t i = 0; i < n; i++) {
        if (!hp_bpe_token_bytes(t->b, ids[i], &k))
            return hp_errorf("hp_tokenizer_decode: id %d at position %zu is outside the vocabulary [0, %d)", ids[i], i,
                             hp_bpe_vocab(t->b));
        total += k;
    }
    char *out = malloc(total + 1);
    if (!out) return hp_errorf("hp_tokenizer_decode: out of memory for %zu bytes", total + 1);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = hp_bpe_token_bytes(t->b, ids[i], &k);
        memcpy(out + at, p, k);
        at += k;
    }
    out[at] = 0;
    *text = out;
    *len = at;
    return HP_OK;
}

hp_status hp_tokenizer_encode_file(int32_t **ids, size_t *n, hp_tokenizer *t, const char *path) {
    *ids = NULL;
    *n = 0;
    const uint8_t *s;
    size_t len;
    HP_TRY(hp_regfile_map(&s, &len, path, "a text input"));
    hp_status e = hp_tokenizer_encode(ids, n, t, (const char *)s, len);
    hp_regfile_unmap(s, len);
    return e;
}
