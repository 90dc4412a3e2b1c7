/* io/json: a small JSON writer (into a growing string) and a small parser
 * (into a tree: objects, arrays, strings, numbers, true/false/null) with
 * lookup by key. Used for checkpoint state files and safetensors headers.
 * Parse errors name the byte offset; callers add the file name. */
#ifndef HP_IO_JSON_H
#define HP_IO_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* ---- writer ---------------------------------------------------------- */

#define HP_JW_MAX_DEPTH 64

/* Commas and nesting are tracked for the caller. Misuse (a value without a
 * key inside an object, unbalanced ends) is a bug and stops the program;
 * running out of memory is reported by hp_jw_finish. */
typedef struct {
    char *buf;
    size_t len, cap;
    int depth;
    char kind[HP_JW_MAX_DEPTH]; /* 'o' object, 'a' array per open level */
    char count[HP_JW_MAX_DEPTH]; /* nonzero once the level has an item */
    int have_key;                /* a key was written, its value is due */
    int oom;
    int done;                    /* a complete top-level value was written */
} hp_jw;

void hp_jw_init(hp_jw *w);
void hp_jw_object_begin(hp_jw *w);
void hp_jw_object_end(hp_jw *w);
void hp_jw_array_begin(hp_jw *w);
void hp_jw_array_end(hp_jw *w);
void hp_jw_key(hp_jw *w, const char *key);
void hp_jw_string(hp_jw *w, const char *s);
void hp_jw_string_n(hp_jw *w, const char *s, size_t n);
/* The shortest of %.15g/%.16g/%.17g that reads back to the same double
 * (so values round-trip exactly); NaN and infinities are written as null
 * since JSON has no spelling for them. */
void hp_jw_double(hp_jw *w, double v);
void hp_jw_int(hp_jw *w, int64_t v);
void hp_jw_bool(hp_jw *w, int v);
void hp_jw_null(hp_jw *w);
/* Inserts already-valid JSON text as one value (the caller checked it). */
void hp_jw_raw(hp_jw *w, const char *json, size_t n);
/* Hands over the text (malloc'd, NUL-terminated; caller frees) and resets
 * the writer. Fails if memory ran out or the value is incomplete. */
hp_status hp_jw_finish(char **out, size_t *len, hp_jw *w);
void hp_jw_free(hp_jw *w);

/* ---- parser ---------------------------------------------------------- */

typedef enum {
    HP_JSON_NULL,
    HP_JSON_BOOL,
    HP_JSON_NUMBER,
    HP_JSON_STRING,
    HP_JSON_ARRAY,
    HP_JSON_OBJECT
} hp_json_type;

typedef struct hp_json hp_json;
struct hp_json {
    hp_json_type type;
    int boolean;     /* BOOL */
    double number;   /* NUMBER */
    int is_int;      /* NUMBER written without fraction/exponent and fits int64 */
    int64_t ival;    /* NUMBER, exact when is_int */
    char *str;       /* STRING (NUL-terminated; may contain NULs from \u0000) */
    size_t len;      /* STRING length in bytes */
    int n;           /* ARRAY / OBJECT: number of items */
    hp_json *items;  /* ARRAY / OBJECT: the values */
    char **keys;     /* OBJECT: the keys, in file order */
    size_t offset;   /* where the value starts in the text */
};

#define HP_JSON_MAX_DEPTH 128

/* Parses exactly one JSON value (surrounding whitespace allowed). Errors
 * look like "json: offset 17: expected ':' after object key". Duplicate
 * keys in an object are an error (found through an index: linear in the
 * text); a UTF-8 byte order mark at the start is refused, named as such. */
hp_status hp_json_parse(hp_json **out, const char *text, size_t len);
void hp_json_free(hp_json *v);

/* The value under key, or NULL if v is not an object or lacks the key. */
const hp_json *hp_json_get(const hp_json *v, const char *key);
/* Typed lookups of obj[key] with errors such as "key 'step': expected an
 * integer" or "missing key 'step'" (callers add the file name). */
hp_status hp_json_get_int(int64_t *out, const hp_json *obj, const char *key);
hp_status hp_json_get_double(double *out, const hp_json *obj, const char *key);
hp_status hp_json_get_string(const char **out, const hp_json *obj, const char *key);
const char *hp_json_type_name(hp_json_type t);

#endif
