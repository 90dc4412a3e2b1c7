/* io/bpe_load: GPT-2 byte-level BPE tokenizers from files: vocab.json
 * (token text -> id) and merges.txt ("#version" line, then "a b" per line,
 * by rank), or a Hugging Face tokenizer.json of the same kind (model type
 * BPE, a ByteLevel pre-tokenizer without a prefix space, no normalizer).
 *
 * The JSON goes through io/json, whose duplicate-key check is indexed (a
 * token given twice in vocab.json is its error); an id given twice is the
 * tokenizer's hash map's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/bpe.h"
#include "io/fsutil.h"
#include "io/json.h"
#include "io/regfile.h"

#define MAX_FILE_BYTES ((size_t)1 << 30)
#define WHAT "a tokenizer file"

static hp_status parse_json(hp_json **out, char *text, size_t n, const char *name) {
    hp_status e = hp_json_parse(out, text, n);
    if (e) return hp_error_wrap(e, "%s", name);
    return HP_OK;
}

/* ---- vocabularies ------------------------------------------------------- */

/* Adds every entry of a vocabulary (an object: text -> id). */
static hp_status add_vocab(hp_bpe *b, const hp_json *v, const char *name) {
    if (v->type != HP_JSON_OBJECT)
        return hp_errorf("%s: the vocabulary must be an object of token -> id, got %s", name,
                         hp_json_type_name(v->type));
    for (int i = 0; i < v->n; i++) {
        const hp_json *id = &v->items[i];
        if (id->type != HP_JSON_NUMBER || !id->is_int)
            return hp_errorf("%s: token \"%.80s\": the id must be an integer, got %s", name, v->keys[i],
                             hp_json_type_name(id->type));
        HP_TRY(hp_bpe_add_token(b, v->keys[i], strlen(v->keys[i]), id->ival, name));
    }
    return HP_OK;
}

/* ---- merges.txt --------------------------------------------------------- */

static int blank(char c) { return c == ' ' || c == '\t'; }

static hp_status add_merges_text(hp_bpe *b, const char *s, size_t n, const char *name) {
    char where[600];
    size_t i = 0;
    for (int line = 1; i < n; line++) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - s) : n, next = nl ? end + 1 : n;
        if (end > i && s[end - 1] == '\r') end--;
        size_t a = i;
        while (a < end && blank(s[a])) a++;
        if (a == end || (line == 1 && end - a >= 8 && !memcmp(s + a, "#version", 8))) {
            i = next;
            continue;
        }
        size_t ae = a;
        while (ae < end && !blank(s[ae])) ae++;
        size_t c = ae;
        while (c < end && blank(s[c])) c++;
        size_t ce = c;
        while (ce < end && !blank(s[ce])) ce++;
        size_t rest = ce;
        while (rest < end && blank(s[rest])) rest++;
        snprintf(where, sizeof where, "%.500s:%d", name, line);
        if (c == ce || rest != end) return hp_errorf("%s: expected two tokens separated by a space", where);
        HP_TRY(hp_bpe_add_merge(b, s + a, ae - a, s + c, ce - c, where));
        i = next;
    }
    return HP_OK;
}

static hp_status from_vocab_tree(hp_bpe **out, const hp_json *v, const char *merges, size_t merges_len,
                                 const char *vocab_name, const char *merges_name) {
    hp_bpe *b;
    HP_TRY(hp_bpe_create(&b));
    hp_status e = add_vocab(b, v, vocab_name);
    if (!e) e = add_merges_text(b, merges, merges_len, merges_name);
    if (!e) e = hp_bpe_finish(b, vocab_name);
    if (e) {
        hp_bpe_free(b);
        return e;
    }
    *out = b;
    return HP_OK;
}

hp_status hp_bpe_parse_files(hp_bpe **out, char *vocab_json, size_t vocab_len, const char *merges, size_t merges_len,
                             const char *vocab_name, const char *merges_name) {
    *out = NULL;
    hp_json *v;
    HP_TRY(parse_json(&v, vocab_json, vocab_len, vocab_name));
    hp_status e = from_vocab_tree(out, v, merges, merges_len, vocab_name, merges_name);
    hp_json_free(v);
    return e;
}

/* ---- tokenizer.json ----------------------------------------------------- */

static int is_null(const hp_json *v) { return !v || v->type == HP_JSON_NULL; }

static hp_status check_string(const hp_json *obj, const char *key, const char *want, const char *name,
                              const char *what) {
    const hp_json *v = hp_json_get(obj, key);
    if (is_null(v)) return HP_OK;
    if (v->type != HP_JSON_STRING) return hp_errorf("%s: %s: expected a string", name, what);
    if (strcmp(v->str, want))
        return hp_errorf("%s: %s is \"%.80s\", not \"%s\": not a GPT-2 byte-level BPE tokenizer", name, what, v->str,
                         want[0] ? want : "");
    return HP_OK;
}

/* The pre-tokenizer must be GPT-2's: ByteLevel, no prefix space, the regex on. */
static hp_status check_pretokenizer(const hp_json *root, const char *name) {
    const hp_json *p = hp_json_get(root, "pre_tokenizer");
    if (is_null(p)) return HP_OK;
    if (p->type != HP_JSON_OBJECT) return hp_errorf("%s: pre_tokenizer: expected an object", name);
    HP_TRY(check_string(p, "type", "ByteLevel", name, "pre_tokenizer.type"));
    const hp_json *aps = hp_json_get(p, "add_prefix_space"), *re = hp_json_get(p, "use_regex");
    if (aps && aps->type == HP_JSON_BOOL && aps->boolean)
        return hp_errorf("%s: pre_tokenizer.add_prefix_space is true; GPT-2's tokenizer adds no space", name);
    if (re && re->type == HP_JSON_BOOL && !re->boolean)
        return hp_errorf("%s: pre_tokenizer.use_regex is false; GPT-2's tokenizer splits with its pattern", name);
    return HP_OK;
}

static hp_status add_merges_json(hp_bpe *b, const hp_json *m, const char *name) {
    if (!m || m->type != HP_JSON_ARRAY) return hp_errorf("%s: model.merges: expected an array", name);
    char where[600];
    for (int i = 0; i < m->n; i++) {
        const hp_json *e = &m->items[i];
        snprintf(where, sizeof where, "%.500s: model.merges[%d]", name, i);
        if (e->type == HP_JSON_ARRAY && e->n == 2 && e->items[0].type == HP_JSON_STRING &&
            e->items[1].type == HP_JSON_STRING) {
            HP_TRY(hp_bpe_add_merge(b, e->items[0].str, e->items[0].len, e->items[1].str, e->items[1].len, where));
            continue;
        }
        if (e->type != HP_JSON_STRING) return hp_errorf("%s: expected \"a b\" or [\"a\", \"b\"]", where);
        const char *sp = memchr(e->str, ' ', e->len);
        if (!sp || sp == e->str || sp + 1 == e->str + e->len || memchr(sp + 1, ' ', e->len - (size_t)(sp + 1 - e->str)))
            return hp_errorf("%s: expected two tokens separated by a space", where);
        HP_TRY(hp_bpe_add_merge(b, e->str, (size_t)(sp - e->str), sp + 1, e->len - (size_t)(sp + 1 - e->str), where));
    }
    return HP_OK;
}

/* Added (special) tokens: [{"id": N, "content": "..."}, ...]; one already in
 * the vocabulary must have the same id there. */
static hp_status add_added_tokens(hp_bpe *b, const hp_json *a, const char *name) {
    if (is_null(a)) return HP_OK;
    if (a->type != HP_JSON_ARRAY) return hp_errorf("%s: added_tokens: expected an array", name);
    for (int i = 0; i < a->n; i++) {
        const hp_json *t = &a->items[i], *id = hp_json_get(t, "id"), *c = hp_json_get(t, "content");
        if (!id || id->type != HP_JSON_NUMBER || !id->is_int || !c || c->type != HP_JSON_STRING)
            return hp_errorf("%s: added_tokens[%d]: expected an object with an integer id and a string content", name,
                             i);
        int have = hp_bpe_find(b, c->str, c->len);
        if (have >= 0 && have == id->ival) continue;
        if (have >= 0)
            return hp_errorf("%s: added_tokens[%d]: \"%.80s\" has id %lld, but %d in model.vocab", name, i, c->str,
                             (long long)id->ival, have);
        HP_TRY(hp_bpe_add_token(b, c->str, c->len, id->ival, name));
    }
    return HP_OK;
}

static hp_status tokenizer_json(hp_bpe *b, const hp_json *root, const char *name) {
    if (root->type != HP_JSON_OBJECT) return hp_errorf("%s: expected a JSON object", name);
    const hp_json *model = hp_json_get(root, "model");
    if (!model || model->type != HP_JSON_OBJECT) return hp_errorf("%s: no \"model\" object: not a tokenizer.json", name);
    HP_TRY(check_string(model, "type", "BPE", name, "model.type"));
    HP_TRY(check_string(model, "continuing_subword_prefix", "", name, "model.continuing_subword_prefix"));
    HP_TRY(check_string(model, "end_of_word_suffix", "", name, "model.end_of_word_suffix"));
    if (!is_null(hp_json_get(root, "normalizer")))
        return hp_errorf("%s: has a normalizer; GPT-2's tokenizer has none", name);
    HP_TRY(check_pretokenizer(root, name));
    const hp_json *vocab = hp_json_get(model, "vocab");
    if (!vocab) return hp_errorf("%s: model.vocab is missing", name);
    HP_TRY(add_vocab(b, vocab, name));
    HP_TRY(add_added_tokens(b, hp_json_get(root, "added_tokens"), name));
    HP_TRY(add_merges_json(b, hp_json_get(model, "merges"), name));
    return hp_bpe_finish(b, name);
}

static hp_status from_tokenizer_tree(hp_bpe **out, const hp_json *root, const char *name) {
    hp_bpe *b;
    HP_TRY(hp_bpe_create(&b));
    hp_status e = tokenizer_json(b, root, name);
    if (e) {
        hp_bpe_free(b);
        return e;
    }
    *out = b;
    return HP_OK;
}

hp_status hp_bpe_parse_tokenizer_json(hp_bpe **out, char *text, size_t len, const char *name) {
    *out = NULL;
    hp_json *root;
    HP_TRY(parse_json(&root, text, len, name));
    hp_status e = from_tokenizer_tree(out, root, name);
    hp_json_free(root);
    return e;
}

/* ---- from files ---------------------------------------------------------- */

static int is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode);
}

static int is_tokenizer_json(const hp_json *root) {
    const hp_json *m = hp_json_get(root, "model");
    return m && m->type == HP_JSON_OBJECT;
}

/* The JSON file at path, parsed. */
static hp_status read_json(hp_json **out, const char *path) {
    char *t;
    size_t n;
    HP_TRY(hp_regfile_read(&t, &n, path, MAX_FILE_BYTES, WHAT));
    hp_status e = parse_json(out, t, n, path);
    free(t);
    return e;
}

/* The vocabulary parsed from vocab_path (v) and its merges file. */
static hp_status load_pair_tree(hp_bpe **out, const hp_json *v, const char *vocab_path, const char *merges_path) {
    char *m;
    size_t mn;
    HP_TRY(hp_regfile_read(&m, &mn, merges_path, MAX_FILE_BYTES, WHAT));
    hp_status e = from_vocab_tree(out, v, m, mn, vocab_path, merges_path);
    free(m);
    if (e) return e;
    char src[2100];
    snprintf(src, sizeof src, "%.1000s + %.1000s", vocab_path, merges_path);
    return hp_bpe_set_source(*out, src);
}

static hp_status load_pair(hp_bpe **out, const char *vocab_path, const char *merges_path) {
    hp_json *v;
    HP_TRY(read_json(&v, vocab_path));
    hp_status e = load_pair_tree(out, v, vocab_path, merges_path);
    hp_json_free(v);
    return e;
}

static hp_status load_tokenizer_tree(hp_bpe **out, const hp_json *root, const char *path) {
    HP_TRY(from_tokenizer_tree(out, root, path));
    return hp_bpe_set_source(*out, path);
}

static hp_status load_tokenizer_json(hp_bpe **out, const char *path) {
    hp_json *root;
    HP_TRY(read_json(&root, path));
    hp_status e = load_tokenizer_tree(out, root, path);
    hp_json_free(root);
    return e;
}

/* A directory: vocab.json + merges.txt, encoder.json + vocab.bpe, or
 * tokenizer.json. */
static hp_status load_dir(hp_bpe **out, const char *dir) {
    static const char *const pairs[][2] = {{"vocab.json", "merges.txt"}, {"encoder.json", "vocab.bpe"}};
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        char *v = hp_fs_join(dir, pairs[k][0]), *m = hp_fs_join(dir, pairs[k][1]);
        int hv = hp_fs_exists(v), hm = hp_fs_exists(m);
        hp_status e = HP_OK;
        if (hv && hm)
            e = load_pair(out, v, m);
        else if (hv || hm)
            e = hp_errorf("%s: has %s but not %s beside it", dir, pairs[k][hv ? 0 : 1], pairs[k][hv ? 1 : 0]);
        free(v);
        free(m);
        if (hv || hm) return e;
    }
    char *t = hp_fs_join(dir, "tokenizer.json");
    hp_status e = HP_OK;
    if (hp_fs_exists(t))
        e = load_tokenizer_json(out, t);
    else
        e = hp_errorf("%s: no tokenizer here (looked for vocab.json + merges.txt, encoder.json + vocab.bpe, "
                      "tokenizer.json)",
                      dir);
    free(t);
    return e;
}

/* A file: a tokenizer.json (it has a "model" object), else a vocabulary
 * whose merges file sits beside it. */
static hp_status load_file(hp_bpe **out, const char *path) {
    hp_json *root;
    HP_TRY(read_json(&root, path));
    hp_status e;
    if (is_tokenizer_json(root)) {
        e = load_tokenizer_tree(out, root, path);
    } else {
        char *dir = hp_fs_dirname(path);
        char *m1 = hp_fs_join(dir, "merges.txt"), *m2 = hp_fs_join(dir, "vocab.bpe");
        if (is_file(m1))
            e = load_pair_tree(out, root, path, m1);
        else if (is_file(m2))
            e = load_pair_tree(out, root, path, m2);
        else
            e = hp_errorf("%s: not a tokenizer.json (no \"model\"), and no merges.txt or vocab.bpe beside it", path);
        free(dir);
        free(m1);
        free(m2);
    }
    hp_json_free(root);
    return e;
}

hp_status hp_bpe_load(hp_bpe **out, const char *path) {
    *out = NULL;
    if (!path || !path[0]) return hp_errorf("(empty path): no tokenizer given");
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return load_dir(out, path);
    return load_file(out, path);
}
