/* report/jsonfile: JSON files with line numbers in errors (see the header). */
#include "report/jsonfile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/fsutil.h"

hp_status hp_rep_json_load(hp_json **out, const char *path) {
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    HP_TRY(hp_fs_read_all(&text, &len, path));
    hp_status st = hp_json_parse(out, text, len);
    if (st) {
        const char *m = hp_status_msg(st), *p = strstr(m, "offset ");
        size_t off = p ? (size_t)strtoull(p + 7, NULL, 10) : 0;
        long line = 1;
        for (size_t i = 0; i < off && i < len; i++) line += text[i] == '\n';
        st = hp_error_wrap(st, "%s:%ld", path, line);
    }
    free(text);
    return st;
}

const char *hp_rep_json_str(const hp_json *obj, const char *key, const char *def) {
    const hp_json *v = hp_json_get(obj, key);
    return v && v->type == HP_JSON_STRING ? v->str : def;
}

double hp_rep_json_num(const hp_json *obj, const char *key, double def) {
    const hp_json *v = hp_json_get(obj, key);
    return v && v->type == HP_JSON_NUMBER ? v->number : def;
}

/* v is a whole number in [lo, hi] (compared as doubles: no cast before). */
static int whole_in(const hp_json *v, long lo, long hi) {
    return v->type == HP_JSON_NUMBER && isfinite(v->number) && v->number == floor(v->number) &&
           v->number >= (double)lo && v->number <= (double)hi;
}

hp_status hp_rep_json_int(long *out, const hp_json *obj, const char *key, long lo, long hi, long def, const char *file,
                          const char *where) {
    const hp_json *v = obj ? hp_json_get(obj, key) : NULL;
    *out = def;
    if (!v || v->type == HP_JSON_NULL) return HP_OK;
    if (whole_in(v, lo, hi)) {
        *out = (long)v->number;
        return HP_OK;
    }
    char got[64];
    if (v->type == HP_JSON_NUMBER) snprintf(got, sizeof got, "%.15g", v->number);
    else snprintf(got, sizeof got, "%s", hp_json_type_name(v->type));
    return hp_errorf("%s: field '%s%s%s': expected a whole number in %ld..%ld, got %s", file, where, where[0] ? "." : "",
                     key, lo, hi, got);
}

long hp_rep_json_long(const hp_json *obj, const char *key, long lo, long hi, long def) {
    const hp_json *v = obj ? hp_json_get(obj, key) : NULL;
    return v && whole_in(v, lo, hi) ? (long)v->number : def;
}
