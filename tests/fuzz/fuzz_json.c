/* Fuzz target: the JSON parser (io/json). Any input either fails with a
 * message or gives a tree that the writer prints back to text which parses
 * to the same tree; the typed lookups and the data-state reader
 * (hp_data_state_from_json, used for checkpoint state files) run on it. */
#include <math.h>

#include "fuzz_util.h"
#include "io/data.h"
#include "io/json.h"

static int depth_of(const hp_json *v) {
    int d = 0;
    if (v->type == HP_JSON_ARRAY || v->type == HP_JSON_OBJECT)
        for (int i = 0; i < v->n; i++) {
            int k = depth_of(&v->items[i]);
            if (k > d) d = k;
        }
    return v->type == HP_JSON_ARRAY || v->type == HP_JSON_OBJECT ? d + 1 : d;
}

static void write_value(hp_jw *w, const hp_json *v) {
    switch (v->type) {
    case HP_JSON_NULL: hp_jw_null(w); break;
    case HP_JSON_BOOL: hp_jw_bool(w, v->boolean); break;
    case HP_JSON_NUMBER:
        if (v->is_int)
            hp_jw_int(w, v->ival);
        else
            hp_jw_double(w, v->number);
        break;
    case HP_JSON_STRING: hp_jw_string_n(w, v->str, v->len); break;
    case HP_JSON_ARRAY:
        hp_jw_array_begin(w);
        for (int i = 0; i < v->n; i++) write_value(w, &v->items[i]);
        hp_jw_array_end(w);
        break;
    case HP_JSON_OBJECT:
        hp_jw_object_begin(w);
        for (int i = 0; i < v->n; i++) {
            hp_jw_key(w, v->keys[i]);
            write_value(w, &v->items[i]);
        }
        hp_jw_object_end(w);
        break;
    }
}

/* a and b hold the same values (a number written as 1.0 reads back as the
 * integer 1, so numbers compare by value). */
static int same(const hp_json *a, const hp_json *b) {
    if (a->type != b->type) return 0;
    switch (a->type) {
    case HP_JSON_NULL: return 1;
    case HP_JSON_BOOL: return a->boolean == b->boolean;
    case HP_JSON_NUMBER:
        if (a->is_int && b->is_int) return a->ival == b->ival;
        return a->number == b->number;
    case HP_JSON_STRING: return a->len == b->len && !memcmp(a->str, b->str, a->len);
    case HP_JSON_ARRAY:
    case HP_JSON_OBJECT:
        if (a->n != b->n) return 0;
        for (int i = 0; i < a->n; i++) {
            if (a->type == HP_JSON_OBJECT && strcmp(a->keys[i], b->keys[i])) return 0;
            if (!same(&a->items[i], &b->items[i])) return 0;
        }
        return 1;
    }
    return 0;
}

/* Structural facts every parsed tree must satisfy. */
static void check_tree(const hp_json *v, size_t len) {
    FUZZ_CHECK(v->offset < len);
    switch (v->type) {
    case HP_JSON_NUMBER:
        FUZZ_CHECK(isfinite(v->number));
        if (v->is_int) FUZZ_CHECK((double)v->ival == v->number);
        break;
    case HP_JSON_STRING:
        FUZZ_CHECK(v->str != NULL && v->str[v->len] == 0);
        break;
    case HP_JSON_ARRAY:
    case HP_JSON_OBJECT:
        FUZZ_CHECK(v->n >= 0);
        for (int i = 0; i < v->n; i++) {
            if (v->type == HP_JSON_OBJECT) {
                FUZZ_CHECK(v->keys[i] != NULL);
                FUZZ_CHECK(hp_json_get(v, v->keys[i]) == &v->items[i]); /* keys are unique */
            }
            check_tree(&v->items[i], len);
        }
        break;
    default: break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hp_json *v;
    if (fuzz_err(hp_json_parse(&v, (const char *)data, size))) return 0;
    check_tree(v, size);

    /* The typed lookups and the state reader: a value or a message. */
    int64_t i64;
    double d;
    const char *s;
    static const char *const keys[] = {"step", "position", "epoch", "rng", "n_tokens", "format", "args"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        fuzz_err(hp_json_get_int(&i64, v, keys[k]));
        fuzz_err(hp_json_get_double(&d, v, keys[k]));
        if (!fuzz_err(hp_json_get_string(&s, v, keys[k]))) FUZZ_CHECK(s != NULL);
    }
    hp_data_state st;
    fuzz_err(hp_data_state_from_json(&st, v));

    /* Print and parse back (the writer nests at most HP_JW_MAX_DEPTH levels). */
    if (depth_of(v) <= HP_JW_MAX_DEPTH) {
        hp_jw w;
        hp_jw_init(&w);
        write_value(&w, v);
        char *text;
        size_t n;
        FUZZ_CHECK(hp_jw_finish(&text, &n, &w) == HP_OK);
        hp_json *back;
        hp_status e = hp_json_parse(&back, text, n);
        if (e) fprintf(stderr, "reparse of %s: %s\n", text, hp_status_msg(e));
        FUZZ_CHECK(e == HP_OK);
        FUZZ_CHECK(same(v, back));
        hp_json_free(back);
        free(text);
    }
    hp_json_free(v);
    return 0;
}
