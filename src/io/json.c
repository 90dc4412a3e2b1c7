#include "io/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strindex.h"

/* ======================= writer ======================= */

void hp_jw_init(hp_jw *w) { memset(w, 0, sizeof *w); }

void hp_jw_free(hp_jw *w) {
    free(w->buf);
    hp_jw_init(w);
}

static void jw_put(hp_jw *w, const char *s, size_t n) {
    if (w->oom) return;
    if (w->len + n + 1 > w->cap) {
        size_t nc = w->cap ? w->cap : 256;
        while (nc < w->len + n + 1) nc *= 2;
        char *nb = realloc(w->buf, nc);
        if (!nb) {
            w->oom = 1;
            return;
        }
        w->buf = nb;
        w->cap = nc;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = 0;
}

static void jw_puts(hp_jw *w, const char *s) { jw_put(w, s, strlen(s)); }

/* Called before every value: writes the separating comma, checks context. */
static void jw_value_prefix(hp_jw *w) {
    HP_ASSERT(!w->done);
    if (w->depth == 0) return;
    int d = w->depth - 1;
    if (w->kind[d] == 'o') {
        HP_ASSERT(w->have_key); /* a value inside an object needs a key */
        w->have_key = 0;
        return;
    }
    if (w->count[d]) jw_put(w, ",", 1);
    w->count[d] = 1;
}

static void jw_value_done(hp_jw *w) {
    if (w->depth == 0) w->done = 1;
}

static void jw_open(hp_jw *w, char kind, const char *tok) {
    jw_value_prefix(w);
    HP_ASSERT(w->depth < HP_JW_MAX_DEPTH);
    w->kind[w->depth] = kind;
    w->count[w->depth] = 0;
    w->depth++;
    jw_puts(w, tok);
}

static void jw_close(hp_jw *w, char kind, const char *tok) {
    HP_ASSERT(w->depth > 0 && w->kind[w->depth - 1] == kind && !w->have_key);
    w->depth--;
    jw_puts(w, tok);
    jw_value_done(w);
}

void hp_jw_object_begin(hp_jw *w) { jw_open(w, 'o', "{"); }
void hp_jw_object_end(hp_jw *w) { jw_close(w, 'o', "}"); }
void hp_jw_array_begin(hp_jw *w) { jw_open(w, 'a', "["); }
void hp_jw_array_end(hp_jw *w) { jw_close(w, 'a', "]"); }

static void jw_quoted(hp_jw *w, const char *s, size_t n) {
    jw_put(w, "\"", 1);
    size_t run = 0; /* bytes copied verbatim in one go */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char ubuf[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20) {
                snprintf(ubuf, sizeof ubuf, "\\u%04x", c);
                esc = ubuf;
            }
        }
        if (esc) {
            jw_put(w, s + i - run, run);
            run = 0;
            jw_puts(w, esc);
        } else {
            run++;
        }
    }
    jw_put(w, s + n - run, run);
    jw_put(w, "\"", 1);
}

void hp_jw_key(hp_jw *w, const char *key) {
    HP_ASSERT(w->depth > 0 && w->kind[w->depth - 1] == 'o' && !w->have_key);
    int d = w->depth - 1;
    if (w->count[d]) jw_put(w, ",", 1);
    w->count[d] = 1;
    jw_quoted(w, key, strlen(key));
    jw_put(w, ":", 1);
    w->have_key = 1;
}

void hp_jw_string_n(hp_jw *w, const char *s, size_t n) {
    jw_value_prefix(w);
    jw_quoted(w, s, n);
    jw_value_done(w);
}

void hp_jw_string(hp_jw *w, const char *s) { hp_jw_string_n(w, s, strlen(s)); }

void hp_jw_double(hp_jw *w, double v) {
    jw_value_prefix(w);
    if (!isfinite(v)) {
        jw_puts(w, "null");
    } else {
        char buf[40];
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, v);
            if (strtod(buf, NULL) == v) break;
        }
        jw_puts(w, buf);
    }
    jw_value_done(w);
}

void hp_jw_int(hp_jw *w, int64_t v) {
    jw_value_prefix(w);
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    jw_puts(w, buf);
    jw_value_done(w);
}

void hp_jw_bool(hp_jw *w, int v) {
    jw_value_prefix(w);
    jw_puts(w, v ? "true" : "false");
    jw_value_done(w);
}

void hp_jw_null(hp_jw *w) {
    jw_value_prefix(w);
    jw_puts(w, "null");
    jw_value_done(w);
}

void hp_jw_raw(hp_jw *w, const char *json, size_t n) {
    jw_value_prefix(w);
    jw_put(w, json, n);
    jw_value_done(w);
}

hp_status hp_jw_finish(char **out, size_t *len, hp_jw *w) {
    *out = NULL;
    if (len) *len = 0;
    if (w->oom) {
        hp_jw_free(w);
        return hp_errorf("json: out of memory building text");
    }
    if (!w->done || w->depth != 0) {
        hp_jw_free(w);
        return hp_errorf("json: value is incomplete (%d level(s) still open)", w->depth);
    }
    *out = w->buf;
    if (len) *len = w->len;
    w->buf = NULL;
    hp_jw_init(w);
    return HP_OK;
}

/* ======================= parser ======================= */

typedef struct {
    const char *s;
    size_t n, i;
    int depth;
} jp;

static hp_status jp_err(const jp *p, const char *what) {
    if (p->i >= p->n) return hp_errorf("json: offset %zu: %s (end of text)", p->i, what);
    unsigned char c = (unsigned char)p->s[p->i];
    if (c >= 0x20 && c < 0x7f) return hp_errorf("json: offset %zu: %s, got '%c'", p->i, what, c);
    return hp_errorf("json: offset %zu: %s, got byte 0x%02x", p->i, what, c);
}

static void jp_ws(jp *p) {
    while (p->i < p->n) {
        char c = p->s[p->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->i++;
    }
}

static void free_contents(hp_json *v) {
    free(v->str);
    for (int k = 0; k < v->n; k++) {
        free_contents(&v->items[k]);
        if (v->keys) free(v->keys[k]);
    }
    free(v->items);
    free(v->keys);
}

void hp_json_free(hp_json *v) {
    if (!v) return;
    free_contents(v);
    free(v);
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static hp_status jp_hex4(unsigned *out, jp *p) {
    *out = 0;
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        int h = p->i < p->n ? hexval(p->s[p->i]) : -1;
        if (h < 0) return jp_err(p, "expected 4 hex digits after \\u");
        v = v * 16 + (unsigned)h;
        p->i++;
    }
    *out = v;
    return HP_OK;
}

static size_t utf8_put(char *dst, unsigned cp) {
    if (cp < 0x80) {
        dst[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        dst[0] = (char)(0xc0 | (cp >> 6));
        dst[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        dst[0] = (char)(0xe0 | (cp >> 12));
        dst[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        dst[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    dst[0] = (char)(0xf0 | (cp >> 18));
    dst[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    dst[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    dst[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* p->i at the opening quote. The decoded text is never longer than the
 * quoted source, so one allocation of the source length suffices. */
static hp_status jp_string(char **out, size_t *olen, jp *p) {
    size_t start = ++p->i;
    size_t end = start;
    while (end < p->n && p->s[end] != '"') end += (p->s[end] == '\\') ? 2 : 1;
    if (end >= p->n) {
        p->i = start - 1;
        return jp_err(p, "unterminated string");
    }
    char *buf = malloc(end - start + 1);
    HP_ASSERT(buf != NULL);
    size_t k = 0;
    hp_status e = HP_OK;
    while (!e && p->i < end) {
        unsigned char c = (unsigned char)p->s[p->i];
        if (c < 0x20) {
            e = jp_err(p, "control character inside string");
            break;
        }
        if (c != '\\') {
            buf[k++] = (char)c;
            p->i++;
            continue;
        }
        p->i++;
        char x = p->s[p->i++];
        switch (x) {
        case '"': buf[k++] = '"'; break;
        case '\\': buf[k++] = '\\'; break;
        case '/': buf[k++] = '/'; break;
        case 'b': buf[k++] = '\b'; break;
        case 'f': buf[k++] = '\f'; break;
        case 'n': buf[k++] = '\n'; break;
        case 'r': buf[k++] = '\r'; break;
        case 't': buf[k++] = '\t'; break;
        case 'u': {
            unsigned cp = 0;
            e = jp_hex4(&cp, p);
            if (e) break;
            if (cp >= 0xd800 && cp < 0xdc00) {
                unsigned lo = 0;
                if (p->i + 1 < end && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
                    p->i += 2;
                    e = jp_hex4(&lo, p);
                    if (e) break;
                    if (lo < 0xdc00 || lo > 0xdfff) {
                        e = jp_err(p, "invalid low surrogate in \\u escape");
                        break;
                    }
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                } else {
                    e = jp_err(p, "lone high surrogate in \\u escape");
                    break;
                }
            } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                e = jp_err(p, "lone low surrogate in \\u escape");
                break;
            }
            k += utf8_put(buf + k, cp);
            break;
        }
        default:
            p->i--;
            e = jp_err(p, "invalid escape in string");
        }
    }
    if (e) {
        free(buf);
        return e;
    }
    buf[k] = 0;
    p->i = end + 1;
    *out = buf;
    *olen = k;
    return HP_OK;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static hp_status jp_number(hp_json *v, jp *p) {
    size_t st = p->i, i = p->i;
    int integral = 1;
    if (i < p->n && p->s[i] == '-') i++;
    if (i < p->n && p->s[i] == '0') {
        i++;
    } else if (i < p->n && is_digit(p->s[i])) {
        while (i < p->n && is_digit(p->s[i])) i++;
    } else {
        p->i = i;
        return jp_err(p, "expected a digit");
    }
    if (i < p->n && p->s[i] == '.') {
        integral = 0;
        i++;
        if (i >= p->n || !is_digit(p->s[i])) {
            p->i = i;
            return jp_err(p, "expected a digit after '.'");
        }
        while (i < p->n && is_digit(p->s[i])) i++;
    }
    if (i < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
        integral = 0;
        i++;
        if (i < p->n && (p->s[i] == '+' || p->s[i] == '-')) i++;
        if (i >= p->n || !is_digit(p->s[i])) {
            p->i = i;
            return jp_err(p, "expected a digit in exponent");
        }
        while (i < p->n && is_digit(p->s[i])) i++;
    }
    size_t len = i - st;
    char small[64];
    char *tmp = len < sizeof small ? small : malloc(len + 1);
    HP_ASSERT(tmp != NULL);
    memcpy(tmp, p->s + st, len);
    tmp[len] = 0;
    errno = 0;
    double d = strtod(tmp, NULL);
    hp_status e = HP_OK;
    if (!isfinite(d)) e = hp_errorf("json: offset %zu: number %s is out of range", st, tmp);
    v->type = HP_JSON_NUMBER;
    v->number = d;
    if (!e && integral) {
        errno = 0;
        long long ll = strtoll(tmp, NULL, 10);
        if (errno == 0) {
            v->is_int = 1;
            v->ival = ll;
        }
    }
    if (tmp != small) free(tmp);
    p->i = i;
    return e;
}

static hp_status jp_value(hp_json *v, jp *p);

static hp_status jp_literal(jp *p, const char *word) {
    size_t n = strlen(word);
    if (p->n - p->i < n || memcmp(p->s + p->i, word, n) != 0) return jp_err(p, "expected a value");
    p->i += n;
    return HP_OK;
}

/* An object's keys indexed once it has more than KEYS_LINEAR of them
 * (core/strindex), so that the duplicate check stays linear in the text
 * (100k keys took 28 s). */
enum { KEYS_LINEAR = 16 };

static const char *object_key(const void *keys, int i) { return ((char *const *)keys)[i]; }

/* 1 if object v already has key (the index built or grown as needed). */
static int has_key(hp_strindex *ix, const hp_json *v, const char *key) {
    if (v->n < KEYS_LINEAR) {
        for (int k = 0; k < v->n; k++)
            if (!strcmp(v->keys[k], key)) return 1;
        return 0;
    }
    int room = hp_strindex_reserve(ix, object_key, v->keys, v->n);
    HP_ASSERT(room);
    return *hp_strindex_slot(ix, object_key, v->keys, key) != 0;
}

static hp_status jp_container_items(hp_json *v, jp *p, int is_obj, hp_strindex *ix);

static hp_status jp_container(hp_json *v, jp *p, int is_obj) {
    hp_strindex ix = {NULL, 0};
    hp_status e = jp_container_items(v, p, is_obj, &ix);
    hp_strindex_free(&ix);
    return e;
}

static hp_status jp_container_items(hp_json *v, jp *p, int is_obj, hp_strindex *ix) {
    if (++p->depth > HP_JSON_MAX_DEPTH) return jp_err(p, "nesting too deep");
    v->type = is_obj ? HP_JSON_OBJECT : HP_JSON_ARRAY;
    char close = is_obj ? '}' : ']';
    p->i++;
    jp_ws(p);
    int cap = 0;
    if (p->i < p->n && p->s[p->i] == close) {
        p->i++;
        p->depth--;
        return HP_OK;
    }
    for (;;) {
        char *key = NULL;
        size_t klen = 0;
        jp_ws(p);
        if (is_obj) {
            if (p->i >= p->n || p->s[p->i] != '"') return jp_err(p, "expected a string key");
            size_t kat = p->i;
            HP_TRY(jp_string(&key, &klen, p));
            if (has_key(ix, v, key)) {
                hp_status e = hp_errorf("json: offset %zu: duplicate key \"%s\"", kat, key);
                free(key);
                return e;
            }
            jp_ws(p);
            if (p->i >= p->n || p->s[p->i] != ':') {
                free(key);
                return jp_err(p, "expected ':' after object key");
            }
            p->i++;
        }
        hp_json item;
        memset(&item, 0, sizeof item);
        hp_status e = jp_value(&item, p);
        if (e) {
            free_contents(&item);
            free(key);
            return e;
        }
        if (v->n == cap) {
            cap = cap ? cap * 2 : 4;
            hp_json *ni = realloc(v->items, (size_t)cap * sizeof *ni);
            HP_ASSERT(ni != NULL);
            v->items = ni;
            if (is_obj) {
                char **nk = realloc(v->keys, (size_t)cap * sizeof *nk);
                HP_ASSERT(nk != NULL);
                v->keys = nk;
            }
        }
        v->items[v->n] = item;
        if (is_obj) v->keys[v->n] = key;
        v->n++;
        if (is_obj && ix->cap) *hp_strindex_slot(ix, object_key, v->keys, key) = v->n;
        jp_ws(p);
        if (p->i < p->n && p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (p->i < p->n && p->s[p->i] == close) {
            p->i++;
            p->depth--;
            return HP_OK;
        }
        return jp_err(p, is_obj ? "expected ',' or '}' in object" : "expected ',' or ']' in array");
    }
}

static hp_status jp_value(hp_json *v, jp *p) {
    jp_ws(p);
    v->offset = p->i;
    if (p->i >= p->n) return jp_err(p, "expected a value");
    char c = p->s[p->i];
    switch (c) {
    case '{': return jp_container(v, p, 1);
    case '[': return jp_container(v, p, 0);
    case '"':
        v->type = HP_JSON_STRING;
        return jp_string(&v->str, &v->len, p);
    case 't':
        v->type = HP_JSON_BOOL;
        v->boolean = 1;
        return jp_literal(p, "true");
    case 'f':
        v->type = HP_JSON_BOOL;
        return jp_literal(p, "false");
    case 'n':
        v->type = HP_JSON_NULL;
        return jp_literal(p, "null");
    default:
        if (c == '-' || is_digit(c)) return jp_number(v, p);
        return jp_err(p, "expected a value");
    }
}

hp_status hp_json_parse(hp_json **out, const char *text, size_t len) {
    *out = NULL;
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) /* named: "got byte 0xef" says little */
        return hp_errorf("json: offset 0: the text starts with a UTF-8 byte order mark (bytes EF BB BF), which "
                         "JSON does not allow: save it without one");
    jp p = {text, len, 0, 0};
    hp_json *v = calloc(1, sizeof *v);
    HP_ASSERT(v != NULL);
    hp_status e = jp_value(v, &p);
    if (!e) {
        jp_ws(&p);
        if (p.i < p.n) e = jp_err(&p, "unexpected text after the value");
    }
    if (e) {
        hp_json_free(v);
        return e;
    }
    *out = v;
    return HP_OK;
}

const hp_json *hp_json_get(const hp_json *v, const char *key) {
    if (!v || v->type != HP_JSON_OBJECT) return NULL;
    for (int k = 0; k < v->n; k++)
        if (!strcmp(v->keys[k], key)) return &v->items[k];
    return NULL;
}

const char *hp_json_type_name(hp_json_type t) {
    switch (t) {
    case HP_JSON_NULL: return "null";
    case HP_JSON_BOOL: return "a boolean";
    case HP_JSON_NUMBER: return "a number";
    case HP_JSON_STRING: return "a string";
    case HP_JSON_ARRAY: return "an array";
    case HP_JSON_OBJECT: return "an object";
    }
    return "?";
}

static hp_status lookup(const hp_json **v, const hp_json *obj, const char *key) {
    if (!obj || obj->type != HP_JSON_OBJECT) return hp_errorf("expected an object holding key '%s'", key);
    *v = hp_json_get(obj, key);
    if (!*v) return hp_errorf("missing key '%s'", key);
    return HP_OK;
}

hp_status hp_json_get_int(int64_t *out, const hp_json *obj, const char *key) {
    const hp_json *v;
    HP_TRY(lookup(&v, obj, key));
    if (v->type != HP_JSON_NUMBER || !v->is_int)
        return hp_errorf("key '%s': expected an integer, got %s", key,
                         v->type == HP_JSON_NUMBER ? "a fraction or a number too large" : hp_json_type_name(v->type));
    *out = v->ival;
    return HP_OK;
}

hp_status hp_json_get_double(double *out, const hp_json *obj, const char *key) {
    const hp_json *v;
    HP_TRY(lookup(&v, obj, key));
    if (v->type != HP_JSON_NUMBER) return hp_errorf("key '%s': expected a number, got %s", key, hp_json_type_name(v->type));
    *out = v->number;
    return HP_OK;
}

hp_status hp_json_get_string(const char **out, const hp_json *obj, const char *key) {
    const hp_json *v;
    HP_TRY(lookup(&v, obj, key));
    if (v->type != HP_JSON_STRING) return hp_errorf("key '%s': expected a string, got %s", key, hp_json_type_name(v->type));
    *out = v->str;
    return HP_OK;
}
