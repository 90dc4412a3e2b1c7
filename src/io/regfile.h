/* io/regfile: reading and mapping input files that must be regular files.
 * Anything else (a FIFO, a device such as /dev/zero, a socket, a directory)
 * is refused before it is opened, since opening a FIFO waits for a writer
 * and a device never ends; reads are bounded by the file's size. Errors name
 * the file and what it was meant to be. */
#ifndef HP_IO_REGFILE_H
#define HP_IO_REGFILE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* An error unless path is a regular file (following symlinks); `what` says
 * what the file is for ("a tokenizer file"). *size: its size (may be NULL). */
hp_status hp_regfile_check(size_t *size, const char *path, const char *what);
/* Reads the whole file into *data (malloc'd, a NUL after the *n bytes); a
 * file over max bytes is refused. */
hp_status hp_regfile_read(char **data, size_t *n, const char *path, size_t max, const char *what);
/* Maps the whole file read-only (*data NULL for an empty file); release
 * with hp_regfile_unmap. */
hp_status hp_regfile_map(const uint8_t **data, size_t *n, const char *path, const char *what);
void hp_regfile_unmap(const uint8_t *data, size_t n);

#endif
