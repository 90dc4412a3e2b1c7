/* io/config: the `hyperpar train --config FILE` format. One `key = value`
 * per line; `#` starts a comment; blank lines are skipped. Keys use letters,
 * digits, '-', '_' and '.'. A value is the rest of the line (trimmed, up to
 * a '#'), or a double-quoted string with \" \\ \n \t escapes (which may hold
 * '#'). The file parses into (key, value, line) entries in file order; the
 * caller applies them like flags (flags override). Errors read
 * "FILE:LINE: <problem>"; the typed getters add the key:
 * "cfg.txt:3: key 'lr': expected a number, got 'abc'". */
#ifndef HP_IO_CONFIG_H
#define HP_IO_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct {
    char *key;
    char *value;
    int line;
    int quoted;       /* the value was written in double quotes */
    const char *file; /* the file name (owned by the hp_config) */
} hp_config_entry;

typedef struct {
    char *file;
    int n;
    hp_config_entry *entries;
} hp_config;

/* The largest settings file read (a longer one is refused unread). */
#define HP_CONFIG_MAX_BYTES ((size_t)16 << 20)

/* Reads and parses a file. A key given twice is an error. The file must be
 * a regular file (a FIFO or a device is refused without waiting on it: io/fsutil)
 * of at most HP_CONFIG_MAX_BYTES. */
hp_status hp_config_load(hp_config **out, const char *path);
/* Parses text already in memory; `name` is used in error messages. Text
 * that starts with a UTF-8 byte order mark is refused, naming it. */
hp_status hp_config_parse(hp_config **out, const char *text, size_t len, const char *name);
void hp_config_free(hp_config *c);
/* The entry for key, or NULL. */
const hp_config_entry *hp_config_find(const hp_config *c, const char *key);

/* Typed values of one entry. */
hp_status hp_config_int(int64_t *out, const hp_config_entry *e);
hp_status hp_config_double(double *out, const hp_config_entry *e);
/* true/false, yes/no, on/off, 1/0 */
hp_status hp_config_bool(int *out, const hp_config_entry *e);

#endif
