#include "io/config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/strindex.h"
#include "io/fsutil.h"

static int key_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

void hp_config_free(hp_config *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        free(c->entries[i].key);
        free(c->entries[i].value);
    }
    free(c->entries);
    free(c->file);
    free(c);
}

static char *dup_n(const char *s, size_t n) {
    char *r = malloc(n + 1);
    HP_ASSERT(r != NULL);
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

/* A byte as an error message shows it: "character 'x'" when printable, else
 * "byte 0xef" (a raw byte would garble the message). */
static const char *char_name(char out[16], char c) {
    unsigned char u = (unsigned char)c;
    if (u >= 0x20 && u < 0x7f) snprintf(out, 16, "character '%c'", c);
    else snprintf(out, 16, "byte 0x%02x", u);
    return out;
}

/* Parses one line [s, s+n). Sets *key to NULL for blank/comment lines. */
static hp_status parse_line(char **key, char **value, int *quoted, const char *s, size_t n,
                            const char *file, int line) {
    *key = *value = NULL;
    *quoted = 0;
    size_t i = 0;
    while (i < n && is_space(s[i])) i++;
    if (i == n || s[i] == '#') return HP_OK;
    size_t k0 = i;
    while (i < n && key_char(s[i])) i++;
    size_t k1 = i;
    while (i < n && is_space(s[i])) i++;
    if (k1 == k0) {
        if (s[i] == '=') return hp_errorf("%s:%d: missing key before '='", file, line);
        char c[16];
        return hp_errorf("%s:%d: invalid %s in key (keys use letters, digits, '-', '_', '.')", file,
                         line, char_name(c, s[i]));
    }
    if (i == n || s[i] != '=') {
        char c[16];
        if (i < n && !is_space(s[i]) && s[i] != '#' && k1 == i)
            return hp_errorf("%s:%d: invalid %s in key '%.*s'", file, line, char_name(c, s[i]),
                             (int)(k1 - k0), s + k0);
        return hp_errorf("%s:%d: expected 'key = value', got '%.*s'", file, line, (int)(n - k0), s + k0);
    }
    i++;
    while (i < n && is_space(s[i])) i++;
    if (i < n && s[i] == '"') {
        i++;
        char *v = malloc(n - i + 1);
        HP_ASSERT(v != NULL);
        size_t m = 0;
        int closed = 0;
        while (i < n) {
            char c = s[i++];
            if (c == '"') {
                closed = 1;
                break;
            }
            if (c == '\\') {
                if (i == n) break;
                char x = s[i++];
                switch (x) {
                case '"': v[m++] = '"'; break;
                case '\\': v[m++] = '\\'; break;
                case 'n': v[m++] = '\n'; break;
                case 't': v[m++] = '\t'; break;
                default:
                    free(v);
                    return hp_errorf("%s:%d: key '%.*s': unknown escape '\\%c' in quoted value", file, line,
                                     (int)(k1 - k0), s + k0, x);
                }
                continue;
            }
            v[m++] = c;
        }
        if (!closed) {
            free(v);
            return hp_errorf("%s:%d: key '%.*s': unterminated quoted value", file, line, (int)(k1 - k0), s + k0);
        }
        while (i < n && is_space(s[i])) i++;
        if (i < n && s[i] != '#') {
            free(v);
            return hp_errorf("%s:%d: key '%.*s': unexpected text after the closing quote", file, line,
                             (int)(k1 - k0), s + k0);
        }
        v[m] = 0;
        *value = v;
        *quoted = 1;
    } else {
        size_t v0 = i;
        while (i < n && s[i] != '#') i++;
        size_t v1 = i;
        while (v1 > v0 && is_space(s[v1 - 1])) v1--;
        if (v1 == v0) return hp_errorf("%s:%d: key '%.*s': missing value", file, line, (int)(k1 - k0), s + k0);
        *value = dup_n(s + v0, v1 - v0);
    }
    *key = dup_n(s + k0, k1 - k0);
    return HP_OK;
}

/* Entry i's key, for the index that finds a key given twice (core/strindex). */
static const char *entry_key(const void *entries, int i) { return ((const hp_config_entry *)entries)[i].key; }

hp_status hp_config_parse(hp_config **out, const char *text, size_t len, const char *name) {
    *out = NULL;
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
        return hp_errorf("%s:1: the file starts with a UTF-8 byte order mark (bytes EF BB BF): save it as UTF-8 "
                         "without one",
                         name);
    hp_config *c = calloc(1, sizeof *c);
    HP_ASSERT(c != NULL);
    c->file = dup_n(name, strlen(name));
    hp_strindex ix = {NULL, 0}; /* the keys so far: a key given twice found in constant time */
    int cap = 0;
    size_t pos = 0;
    int line = 0;
    hp_status e = HP_OK;
    while (pos < len && !e) {
        line++;
        size_t end = pos;
        while (end < len && text[end] != '\n') end++;
        if (memchr(text + pos, 0, end - pos)) {
            e = hp_errorf("%s:%d: NUL byte in line (not a text file?)", name, line);
            break;
        }
        char *key, *value;
        int quoted;
        e = parse_line(&key, &value, &quoted, text + pos, end - pos, name, line);
        pos = end + 1;
        if (e || !key) continue;
        int room = hp_strindex_reserve(&ix, entry_key, c->entries, c->n);
        HP_ASSERT(room);
        int *slot = hp_strindex_slot(&ix, entry_key, c->entries, key);
        if (*slot) {
            e = hp_errorf("%s:%d: key '%s' given twice (first on line %d)", name, line, key,
                          c->entries[*slot - 1].line);
            free(key);
            free(value);
            break;
        }
        *slot = c->n + 1;
        if (c->n == cap) {
            cap = cap ? cap * 2 : 16;
            hp_config_entry *ne = realloc(c->entries, (size_t)cap * sizeof *ne);
            HP_ASSERT(ne != NULL);
            c->entries = ne;
        }
        c->entries[c->n++] = (hp_config_entry){key, value, line, quoted, NULL};
    }
    hp_strindex_free(&ix);
    if (e) {
        hp_config_free(c);
        return e;
    }
    for (int i = 0; i < c->n; i++) c->entries[i].file = c->file;
    *out = c;
    return HP_OK;
}

hp_status hp_config_load(hp_config **out, const char *path) {
    *out = NULL;
    char *text;
    size_t n;
    HP_TRY(hp_fs_read_bounded(&text, &n, path, HP_CONFIG_MAX_BYTES));
    hp_status e = hp_config_parse(out, text, n, path);
    free(text);
    return e;
}

const hp_config_entry *hp_config_find(const hp_config *c, const char *key) {
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->entries[i].key, key)) return &c->entries[i];
    return NULL;
}

hp_status hp_config_int(int64_t *out, const hp_config_entry *e) {
    const char *v = e->value;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end != 0 || is_space(*v))
        return hp_errorf("%s:%d: key '%s': expected an integer, got '%s'", e->file, e->line, e->key, v);
    if (errno == ERANGE)
        return hp_errorf("%s:%d: key '%s': integer '%s' is out of range", e->file, e->line, e->key, v);
    *out = x;
    return HP_OK;
}

hp_status hp_config_double(double *out, const hp_config_entry *e) {
    const char *v = e->value;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end != 0 || is_space(*v) || isnan(x))
        return hp_errorf("%s:%d: key '%s': expected a number, got '%s'", e->file, e->line, e->key, v);
    if (!isfinite(x) || (errno == ERANGE && x != 0))
        return hp_errorf("%s:%d: key '%s': number '%s' is out of range", e->file, e->line, e->key, v);
    *out = x;
    return HP_OK;
}

hp_status hp_config_bool(int *out, const hp_config_entry *e) {
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(e->value, yes[i])) {
            *out = 1;
            return HP_OK;
        }
        if (!strcasecmp(e->value, no[i])) {
            *out = 0;
            return HP_OK;
        }
    }
    return hp_errorf("%s:%d: key '%s': expected true or false, got '%s'", e->file, e->line, e->key, e->value);
}
