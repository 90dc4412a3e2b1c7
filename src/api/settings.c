/* api/settings: settings files for programs (the public face of io/config), and their atomic text files. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "io/config.h"
#include "io/fsutil.h"

struct hp_settings {
    hp_config *c;
};

hp_status hp_settings_load(hp_settings **out, const char *path) {
    *out = NULL;
    hp_config *c;
    HP_TRY(hp_config_load(&c, path));
    hp_settings *s = malloc(sizeof *s);
    if (!s) {
        hp_config_free(c);
        return hp_errorf("%s: out of memory", path);
    }
    s->c = c;
    *out = s;
    return HP_OK;
}

void hp_settings_free(hp_settings *s) {
    if (!s) return;
    hp_config_free(s->c);
    free(s);
}

int hp_settings_count(const hp_settings *s) { return s->c->n; }

void hp_settings_entry(const hp_settings *s, int i, const char **key, const char **value, int *line) {
    const hp_config_entry *e = &s->c->entries[i];
    if (key) *key = e->key;
    if (value) *value = e->value;
    if (line) *line = e->line;
}

const char *hp_settings_file(const hp_settings *s) { return s->c->file; }

hp_status hp_write_text_file(const char *path, const char *text) {
    if (!path || !text) return hp_errorf("hp_write_text_file: path and text are required");
    return hp_fs_write_atomic(path, text, strlen(text));
}
