/* GPT-2's byte-level BPE (io/bpe) on a small hand-made vocabulary: the
 * pre-tokenization pieces (as Python's `regex` module cuts GPT-2's pattern),
 * the merge order of GPT-2's encoder.py, decoding, special tokens, the
 * loaders (vocab.json + merges.txt, tokenizer.json, a vocabulary big enough
 * to take the fast JSON path) and their errors, and that FIFOs and devices
 * are refused. The ids of the real GPT-2 files against the reference:
 * tests/cli/test_tokenize.sh. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/bpe.h"
#include "io/fsutil.h"
#include "io/unicode_class.h"
#include "testutil.h"

/* ---- pre-tokenization ---- */

/* Pieces of s, joined with '|' into out. */
static void pieces(char *out, size_t cap, const char *s) {
    size_t n = strlen(s), k = 0;
    for (size_t i = 0; i < n;) {
        size_t e = hp_bpe_piece_end((const uint8_t *)s, n, i);
        CHECK(e > i && e <= n);
        if (i && k + 1 < cap) out[k++] = '|';
        for (size_t j = i; j < e && k + 1 < cap; j++) out[k++] = s[j];
        i = e;
    }
    out[k] = 0;
}

static void check_pieces(const char *s, const char *want) {
    char got[512];
    pieces(got, sizeof got, s);
    CHECKF(!strcmp(got, want), "pieces of \"%s\": got \"%s\", want \"%s\"", s, got, want);
}

static void test_pretok(void) {
    /* the expected cuts are Python's regex.findall of GPT-2's pattern */
    check_pieces("Hello world's  \n\n x", "Hello| world|'s|  \n\n| x");
    check_pieces("I'M don't 'sam ''s ?'s", "I|'|M| don|'t| '|sam| ''|s| ?'|s");
    check_pieces("a  \tb", "a|  |\t|b");
    check_pieces("  a", " | a");
    check_pieces("x   ", "x|   ");
    check_pieces("12ab 3.5", "12|ab| 3|.|5");
    check_pieces(" \xc3\xa9t\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd", " \xc3\xa9t\xc3\xa9| \xe4\xbd\xa0\xe5\xa5\xbd");
    /* emoji + skin tone is one "other" run; CRLF runs back off one */
    check_pieces("\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd hi\r\n\r\nyo", "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd| hi|\r\n\r|\n|yo");
    /* Devanagari: letters and combining signs (not letters) alternate */
    check_pieces("\xe0\xa4\xa8\xe0\xa4\xae\xe0\xa4\xb8\xe0\xa5\x8d\xe0\xa4\xa4\xe0\xa5\x87",
                 "\xe0\xa4\xa8\xe0\xa4\xae\xe0\xa4\xb8|\xe0\xa5\x8d|\xe0\xa4\xa4|\xe0\xa5\x87");
    /* invalid UTF-8 bytes are "others" */
    check_pieces("a\xff\xfe b", "a|\xff\xfe| b");
    CHECK(hp_unicode_class(0x00A0) == HP_UC_SPACE && hp_unicode_class(0x3000) == HP_UC_SPACE);
    CHECK(hp_unicode_class(0x0661) == HP_UC_NUMBER && hp_unicode_class(0x2167) == HP_UC_NUMBER);
    CHECK(hp_unicode_class(0x4F60) == HP_UC_LETTER && hp_unicode_class(0x0301) == HP_UC_OTHER);
    CHECK(hp_unicode_class(0x200D) == HP_UC_OTHER && hp_unicode_class(0x1F44D) == HP_UC_OTHER);
    CHECK(hp_unicode_class(0x001C) == HP_UC_OTHER); /* Python's isspace says yes; White_Space says no */
}

/* ---- a small vocabulary: byte b has id b; then merges ---- */

static int printable(int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255); }

/* GPT-2's character for byte b, as UTF-8. */
static size_t byte_char(char *out, int b) {
    unsigned cp = (unsigned)b;
    if (!printable(b)) {
        cp = 256;
        for (int k = 0; k < b; k++) cp += !printable(k);
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

static hp_bpe *small_bpe(const char *const *merges, int nmerges, int with_eot) {
    hp_bpe *b;
    CHECK_OK(hp_bpe_create(&b));
    char u[4];
    for (int c = 0; c < 256; c++) CHECK_OK(hp_bpe_add_token(b, u, byte_char(u, c), c, "test"));
    int id = 256;
    for (int m = 0; m < nmerges; m++) { /* "a b": the token a+b first, then the merge */
        const char *sp = strchr(merges[m], ' ');
        char joined[64];
        size_t la = (size_t)(sp - merges[m]), lb = strlen(sp + 1);
        memcpy(joined, merges[m], la);
        memcpy(joined + la, sp + 1, lb);
        if (hp_bpe_find(b, joined, la + lb) < 0) CHECK_OK(hp_bpe_add_token(b, joined, la + lb, id++, "test"));
        CHECK_OK(hp_bpe_add_merge(b, merges[m], la, sp + 1, lb, "test"));
    }
    if (with_eot) CHECK_OK(hp_bpe_add_token(b, "<|endoftext|>", 13, id++, "test"));
    CHECK_OK(hp_bpe_finish(b, "test"));
    return b;
}

typedef struct {
    int32_t ids[256];
    int n;
} ids_out;

static hp_status collect(void *ctx, const int32_t *ids, size_t n, size_t end) {
    (void)end;
    ids_out *o = ctx;
    for (size_t i = 0; i < n && o->n < 256; i++) o->ids[o->n++] = ids[i];
    return HP_OK;
}

/* The ids of s, written as "a b c" with tokens shown by their bytes. */
static void encode_str(char *out, size_t cap, hp_bpe *b, const char *s) {
    ids_out o = {.n = 0};
    CHECK_OK(hp_bpe_encode(b, (const uint8_t *)s, strlen(s), collect, &o));
    size_t k = 0;
    for (int i = 0; i < o.n; i++) {
        size_t len;
        const uint8_t *t = hp_bpe_token_bytes(b, o.ids[i], &len);
        CHECK(t != NULL);
        if (i && k + 1 < cap) out[k++] = '|';
        for (size_t j = 0; t && j < len && k + 1 < cap; j++) out[k++] = (char)t[j];
    }
    out[k] = 0;
}

static void check_encode(hp_bpe *b, const char *s, const char *want) {
    char got[512];
    encode_str(got, sizeof got, b, s);
    CHECKF(!strcmp(got, want), "tokens of \"%s\": got \"%s\", want \"%s\"", s, got, want);
    /* twice: the second comes from the cache */
    encode_str(got, sizeof got, b, s);
    CHECKF(!strcmp(got, want), "tokens of \"%s\" (cached): got \"%s\", want \"%s\"", s, got, want);
}

static void test_merges(void) {
    static const char *const m1[] = {"h e", "l l", "he ll", "hell o", "\xc4\xa0 hello", "a a", "b c", "a b"};
    hp_bpe *b = small_bpe(m1, 8, 1);
    CHECK(hp_bpe_vocab(b) == 256 + 8 + 1 && hp_bpe_eot(b) == 256 + 8);
    check_encode(b, "hello hello", "hello| hello");
    check_encode(b, "aaa", "aa|a");   /* left to right, no overlap */
    check_encode(b, "aaaa", "aa|aa");
    check_encode(b, "abc", "a|bc");   /* "b c" outranks "a b" */
    check_encode(b, "hel", "he|l");
    check_encode(b, "", "");
    check_encode(b, "<|endoftext|>", "<|||e|n|d|o|f|t|e|x|t|||>"); /* plain text, byte by byte here */
    size_t len;
    const uint8_t *t = hp_bpe_token_bytes(b, hp_bpe_eot(b), &len);
    CHECK(len == 13 && !memcmp(t, "<|endoftext|>", 13));
    CHECK(hp_bpe_token_bytes(b, hp_bpe_vocab(b), &len) == NULL && hp_bpe_token_bytes(b, -1, &len) == NULL);
    /* any bytes round-trip, invalid UTF-8 too */
    const char raw[] = "x\x00y\xff\xc3 \t\n\xe2\x82";
    ids_out o = {.n = 0};
    CHECK_OK(hp_bpe_encode(b, (const uint8_t *)raw, sizeof raw - 1, collect, &o));
    char back[64];
    size_t k = 0;
    for (int i = 0; i < o.n; i++) {
        const uint8_t *p = hp_bpe_token_bytes(b, o.ids[i], &len);
        memcpy(back + k, p, len);
        k += len;
    }
    CHECK(k == sizeof raw - 1 && !memcmp(back, raw, k));
    hp_bpe_free(b);
    /* the other rank order */
    static const char *const m2[] = {"a b", "b c"};
    b = small_bpe(m2, 2, 0);
    check_encode(b, "abc", "ab|c");
    CHECK(hp_bpe_eot(b) == -1);
    hp_bpe_free(b);
}

static void test_build_errors(void) {
    hp_bpe *b;
    CHECK_OK(hp_bpe_create(&b));
    char u[4];
    for (int c = 0; c < 255; c++) CHECK_OK(hp_bpe_add_token(b, u, byte_char(u, c), c, "v.json"));
    CHECK_ERR(hp_bpe_add_token(b, "!", 1, 300, "v.json"), "is given twice");
    CHECK_ERR(hp_bpe_add_token(b, "zz", 2, 5, "v.json"), "id 5 is given twice");
    CHECK_ERR(hp_bpe_add_token(b, "zz", 2, -1, "v.json"), "outside");
    CHECK_ERR(hp_bpe_add_merge(b, "q", 1, "x", 1, "m.txt:2"), "m.txt:2: the merge of \"q\" and \"x\" gives \"qx\"");
    CHECK_ERR(hp_bpe_add_merge(b, "qq", 2, "x", 1, "m.txt:3"), "merge part \"qq\" is not in the vocabulary");
    CHECK_ERR(hp_bpe_finish(b, "v.json"), "no token for byte 0xff");
    hp_bpe_free(b);
    CHECK_OK(hp_bpe_create(&b));
    CHECK_OK(hp_bpe_add_token(b, "a", 1, 0, "v.json"));
    CHECK_OK(hp_bpe_add_token(b, "b", 1, 2, "v.json"));
    CHECK_ERR(hp_bpe_finish(b, "v.json"), "id 1 has no token");
    hp_bpe_free(b);
}

/* ---- loaders ---- */

/* A vocab.json of the 256 byte tokens (id = byte), extra tokens "t0".. and
 * "he"; with dup, one key twice. */
static char *vocab_json(int extra, int dup) {
    size_t cap = 64 + 256 * 24 + (size_t)extra * 24, k = 0;
    char *s = malloc(cap);
    HP_ASSERT(s != NULL);
    k += (size_t)snprintf(s + k, cap - k, "{");
    for (int c = 0; c < 256; c++) {
        char u[4];
        size_t n = byte_char(u, c);
        const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : NULL;
        k += (size_t)snprintf(s + k, cap - k, "%s\"%s%.*s\": %d", c ? ", " : "", esc ? esc : "", esc ? 0 : (int)n, u, c);
    }
    k += (size_t)snprintf(s + k, cap - k, ", \"he\": 256");
    for (int i = 0; i < extra; i++) k += (size_t)snprintf(s + k, cap - k, ", \"t%d\": %d", i, 257 + i);
    if (dup) k += (size_t)snprintf(s + k, cap - k, ", \"he\": %d", 257 + extra);
    snprintf(s + k, cap - k, "}");
    return s;
}

static void write_file(const char *dir, const char *name, const char *text) {
    char *p = hp_fs_join(dir, name);
    CHECK_OK(hp_fs_write_atomic(p, text, strlen(text)));
    free(p);
}

static int encode_he(hp_bpe *b) {
    ids_out o = {.n = 0};
    CHECK_OK(hp_bpe_encode(b, (const uint8_t *)"he", 2, collect, &o));
    return o.n == 1 ? o.ids[0] : -1;
}

static void test_load(const char *dir) {
    /* small and big (over the fast-path threshold) vocabularies, from memory */
    for (int extra = 0; extra <= 800; extra += 800) {
        char *v = vocab_json(extra, 0);
        const char merges[] = "#version: 0.2\r\nh e\r\n\r\n";
        hp_bpe *b;
        CHECK_OK(hp_bpe_parse_files(&b, v, strlen(v), merges, sizeof merges - 1, "vocab.json", "merges.txt"));
        if (b) {
            CHECK(hp_bpe_vocab(b) == 257 + extra && encode_he(b) == 256);
            hp_bpe_free(b);
        }
        free(v);
        v = vocab_json(extra, 1);
        CHECK_ERR(hp_bpe_parse_files(&b, v, strlen(v), merges, sizeof merges - 1, "vocab.json", "merges.txt"),
                  "vocab.json");
        free(v);
    }
    char *v = vocab_json(0, 0);
    hp_bpe *b;
    CHECK_ERR(hp_bpe_parse_files(&b, v, strlen(v), "#version: 0.2\nh e x\n", 20, "vocab.json", "merges.txt"),
              "merges.txt:2: expected two tokens separated by a space");
    free(v);
    v = vocab_json(0, 0);
    CHECK_ERR(hp_bpe_parse_files(&b, v, strlen(v) - 1, "", 0, "vocab.json", "merges.txt"), "vocab.json: json: offset");
    free(v);

    /* files: a directory with vocab.json + merges.txt, then tokenizer.json */
    v = vocab_json(0, 0);
    write_file(dir, "vocab.json", v);
    write_file(dir, "merges.txt", "#version: 0.2\nh e\n");
    CHECK_OK(hp_bpe_load(&b, dir));
    if (b) {
        CHECK(encode_he(b) == 256 && strstr(hp_bpe_source(b), "merges.txt") != NULL);
        hp_bpe_free(b);
    }
    char *vp = hp_fs_join(dir, "vocab.json");
    CHECK_OK(hp_bpe_load(&b, vp)); /* the vocabulary file: merges.txt beside it */
    hp_bpe_free(b);
    free(vp);
    char *sub = hp_fs_join(dir, "tj");
    CHECK_OK(hp_fs_mkdir_p(sub));
    size_t cap = strlen(v) + 512;
    char *tj = malloc(cap);
    HP_ASSERT(tj != NULL);
    snprintf(tj, cap,
             "{\"version\": \"1.0\", \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"ByteLevel\", "
             "\"add_prefix_space\": false, \"use_regex\": true}, \"added_tokens\": [{\"id\": 257, \"content\": "
             "\"<|endoftext|>\", \"special\": true}], \"model\": {\"type\": \"BPE\", \"vocab\": %s, \"merges\": "
             "[[\"h\", \"e\"]]}}",
             v);
    write_file(sub, "tokenizer.json", tj);
    CHECK_OK(hp_bpe_load(&b, sub));
    if (b) {
        CHECK(encode_he(b) == 256 && hp_bpe_eot(b) == 257 && hp_bpe_vocab(b) == 258);
        hp_bpe_free(b);
    }
    static const char *const bad[][2] = {
        {"\"add_prefix_space\": false", "\"add_prefix_space\": true "},
        {"\"normalizer\": null", "\"normalizer\": {  }"},
        {"\"type\": \"BPE\"", "\"type\": \"WPE\""},
        {"[[\"h\", \"e\"]]", "[[\"h\", \"q\"]]"},
        {"\"id\": 257", "\"id\": 256"},
    };
    static const char *const why[] = {"add_prefix_space is true", "has a normalizer", "model.type is \"WPE\"",
                                      "model.merges[0]: the merge of \"h\" and \"q\"", "is given twice"};
    for (int k = 0; k < 5; k++) {
        char *t = strdup(tj);
        char *at = strstr(t, bad[k][0]);
        CHECK(at != NULL && strlen(bad[k][0]) == strlen(bad[k][1]));
        if (at) memcpy(at, bad[k][1], strlen(bad[k][1]));
        CHECK_ERR(hp_bpe_parse_tokenizer_json(&b, t, strlen(t), "tokenizer.json"), why[k]);
        free(t);
    }
    free(tj);
    free(v);

    /* FIFOs and devices are refused, not waited on */
    char *fifo_dir = hp_fs_join(dir, "fifo");
    CHECK_OK(hp_fs_mkdir_p(fifo_dir));
    char *fifo = hp_fs_join(fifo_dir, "tokenizer.json");
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK_ERR(hp_bpe_load(&b, fifo_dir), "not a regular file (a FIFO)");
    CHECK_ERR(hp_bpe_load(&b, fifo), "not a regular file (a FIFO)");
    CHECK_ERR(hp_bpe_load(&b, "/dev/zero"), "not a regular file (a device)");
    CHECK_ERR(hp_bpe_load(&b, "/nonexistent/tok"), "cannot open");
    char *empty = hp_fs_join(dir, "empty");
    CHECK_OK(hp_fs_mkdir_p(empty));
    CHECK_ERR(hp_bpe_load(&b, empty), "no tokenizer here");
    write_file(empty, "vocab.json", "{}");
    CHECK_ERR(hp_bpe_load(&b, empty), "has vocab.json but not merges.txt");
    free(empty);
    free(fifo);
    free(fifo_dir);
    free(sub);
}

int main(void) {
    char dir[] = "/tmp/hp_io_bpe_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    test_pretok();
    test_merges();
    test_build_errors();
    test_load(dir);
    CHECK_OK(hp_fs_remove_tree(dir));
    return hp_test_finish("test_io_bpe");
}
