/* Fuzz target: GPT-2 byte-level BPE tokenizers (io/bpe): the pre-tokenizer
 * on any bytes, the loaders (vocab.json + merges.txt, tokenizer.json), and
 * encoding with what loads. Input: a mode byte (bit 0: tokenizer.json, else
 * vocab.json and merges.txt), then the file(s) and a text, separated by
 * "\n@@\n". Properties: pieces tile the bytes; a tokenizer that loads has the
 * 256 byte tokens, encodes any text into ids in [0, V) whose bytes are the
 * text again, the same a second time (from the cache); loading through files
 * (one input in 8) agrees with parsing memory. */
#include "fuzz_util.h"
#include "io/bpe.h"
#include "io/fsutil.h"

#define SEP "\n@@\n"

static const uint8_t *find_sep(const uint8_t *s, size_t n) {
    for (size_t i = 0; i + 4 <= n; i++)
        if (!memcmp(s + i, SEP, 4)) return s + i;
    return NULL;
}

static void check_pieces(const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t e = hp_bpe_piece_end(s, n, i);
        FUZZ_CHECK(e > i && e <= n);
        i = e;
    }
}

typedef struct {
    const hp_bpe *b;
    uint8_t *out;   /* the decoded bytes */
    size_t len, cap;
    int32_t *ids;
    size_t nids, idcap;
    size_t last_end;
} sink_state;

static hp_status sink(void *ctx, const int32_t *ids, size_t n, size_t end) {
    sink_state *st = ctx;
    FUZZ_CHECK(end > st->last_end && n > 0);
    st->last_end = end;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *t = hp_bpe_token_bytes(st->b, ids[i], &len);
        FUZZ_CHECK(t != NULL && len > 0);
        if (st->len + len > st->cap) {
            st->cap = (st->len + len) * 2;
            st->out = realloc(st->out, st->cap);
            FUZZ_CHECK(st->out != NULL);
        }
        memcpy(st->out + st->len, t, len);
        st->len += len;
        if (st->nids == st->idcap) {
            st->idcap = st->idcap ? st->idcap * 2 : 64;
            st->ids = realloc(st->ids, st->idcap * sizeof *st->ids);
            FUZZ_CHECK(st->ids != NULL);
        }
        st->ids[st->nids++] = ids[i];
    }
    return HP_OK;
}

static void check_encode(hp_bpe *b, const uint8_t *text, size_t n) {
    sink_state a = {.b = b}, c = {.b = b};
    FUZZ_CHECK(!hp_bpe_encode(b, text, n, sink, &a));
    FUZZ_CHECK(a.last_end == n && a.len == n && (n == 0 || !memcmp(a.out, text, n)));
    FUZZ_CHECK(!hp_bpe_encode(b, text, n, sink, &c)); /* again: from the cache */
    FUZZ_CHECK(c.nids == a.nids && (a.nids == 0 || !memcmp(c.ids, a.ids, a.nids * sizeof *a.ids)));
    free(a.out), free(a.ids), free(c.out), free(c.ids);
}

/* Loading the same files from a directory gives the same result. */
static void check_files(const uint8_t *f1, size_t n1, const uint8_t *f2, size_t n2, int tj, const hp_bpe *mem) {
    char path[128];
    fuzz_write_file(path, sizeof path, tj ? "tokenizer.json" : "vocab.json", f1, n1);
    char merges[128] = "";
    if (!tj) fuzz_write_file(merges, sizeof merges, "merges.txt", f2, n2);
    hp_bpe *b;
    hp_status e = hp_bpe_load(&b, fuzz_dir());
    unlink(path);
    if (merges[0]) unlink(merges);
    FUZZ_CHECK(!e == (mem != NULL));
    if (fuzz_err(e)) return;
    FUZZ_CHECK(hp_bpe_vocab(b) == hp_bpe_vocab(mem) && hp_bpe_eot(b) == hp_bpe_eot(mem));
    hp_bpe_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_pieces(data, size);
    if (size < 1) return 0;
    int tj = data[0] & 1;
    const uint8_t *p = data + 1, *end = data + size;
    const uint8_t *s1 = find_sep(p, (size_t)(end - p));
    const uint8_t *f1 = p, *f2 = NULL, *text = NULL;
    size_t n1 = s1 ? (size_t)(s1 - p) : (size_t)(end - p), n2 = 0, nt = 0;
    if (s1) {
        const uint8_t *q = s1 + 4, *s2 = find_sep(q, (size_t)(end - q));
        if (tj) {
            text = q, nt = (size_t)(end - q);
        } else {
            f2 = q, n2 = s2 ? (size_t)(s2 - q) : (size_t)(end - q);
            if (s2) text = s2 + 4, nt = (size_t)(end - s2 - 4);
        }
    }
    /* the parsers take their text mutable (big objects are rewritten in place) */
    char *c1 = malloc(n1 + 1);
    FUZZ_CHECK(c1 != NULL);
    memcpy(c1, f1, n1);
    c1[n1] = 0;
    hp_bpe *b;
    hp_status e = tj ? hp_bpe_parse_tokenizer_json(&b, c1, n1, "tokenizer.json")
                     : hp_bpe_parse_files(&b, c1, n1, (const char *)f2, n2, "vocab.json", "merges.txt");
    free(c1);
    if (e) b = NULL;
    if (fuzz_sample(data, size, 8)) check_files(f1, n1, f2, n2, tj, b);
    if (fuzz_err(e)) return 0;
    FUZZ_CHECK(hp_bpe_vocab(b) >= 256);
    FUZZ_CHECK(hp_bpe_eot(b) >= -1 && hp_bpe_eot(b) < hp_bpe_vocab(b));
    static const char sample[] = "Hello world's  \n\n x I'M 12ab 3.5 \xc3\xa9t\xc3\xa9 \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd\r\n";
    check_encode(b, (const uint8_t *)sample, sizeof sample - 1);
    if (text) check_encode(b, text, nt);
    check_encode(b, data, size);
    hp_bpe_free(b);
    return 0;
}
