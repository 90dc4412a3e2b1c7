/* Fuzz target: the settings-file parser (io/config, `key = value` lines).
 * Any input either fails with a message or gives entries whose keys are
 * well-formed and unique, whose lines increase, and whose typed getters
 * give a value or a message; reading it as a file (hp_config_load; one
 * input in 16) gives the same entries. */
#include "fuzz_util.h"
#include "io/config.h"

static int key_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
}

/* Reading the input as a file gives the same entries as parsing it, or
 * also fails; c is the parse's result or NULL. */
static void check_load(const uint8_t *data, size_t size, const hp_config *c) {
    char path[128];
    fuzz_write_file(path, sizeof path, "in.cfg", data, size);
    hp_config *f;
    hp_status e = hp_config_load(&f, path);
    unlink(path);
    FUZZ_CHECK(!e == (c != NULL));
    if (fuzz_err(e)) return;
    FUZZ_CHECK(f->n == c->n);
    for (int i = 0; i < c->n; i++) {
        const hp_config_entry *a = &f->entries[i], *b = &c->entries[i];
        FUZZ_CHECK(!strcmp(a->key, b->key) && !strcmp(a->value, b->value) && a->line == b->line &&
                   a->quoted == b->quoted);
    }
    hp_config_free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hp_config *c;
    hp_status e = hp_config_parse(&c, (const char *)data, size, "fuzz.cfg");
    if (fuzz_sample(data, size, 16) || size >= 4000) check_load(data, size, e ? NULL : c); /* a file is slower */
    if (fuzz_err(e)) return 0;
    int prev_line = 0;
    for (int i = 0; i < c->n; i++) {
        const hp_config_entry *e = &c->entries[i];
        FUZZ_CHECK(e->key && e->key[0] && e->value && e->file == c->file);
        for (const char *k = e->key; *k; k++) FUZZ_CHECK(key_char(*k));
        FUZZ_CHECK(e->line > prev_line);
        prev_line = e->line;
        FUZZ_CHECK(e->quoted || e->value[0] != 0); /* an unquoted value is never empty */
        FUZZ_CHECK(hp_config_find(c, e->key) == e);
        int64_t i64;
        double d;
        int b;
        fuzz_err(hp_config_int(&i64, e));
        fuzz_err(hp_config_double(&d, e));
        fuzz_err(hp_config_bool(&b, e));
    }
    hp_config_free(c);
    return 0;
}
