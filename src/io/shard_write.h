/* io/shard_write: writing llm.c token shards (the format io/data reads: a
 * header of 256 int32 — magic 20240520, version 1, the token count — then
 * the tokens as uint16). A writer fills DIR/PREFIX_SPLIT_000000.bin, then
 * _000001 ... with at most shard_tokens tokens each; every shard is written
 * under a temporary name, its header filled in at the end, fsynced and
 * renamed into place (io/fsutil), so a shard is there whole or not at all. */
#ifndef HP_IO_SHARD_WRITE_H
#define HP_IO_SHARD_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "io/fsutil.h"

typedef struct {
    char *dir, *prefix, *split;
    int64_t shard_tokens;
    hp_afile f;
    int open;          /* a shard is being written */
    int index;         /* the next shard's number */
    int64_t in_shard;  /* tokens in the open shard */
    uint16_t *buf;
    size_t nbuf, cap;
    int64_t total;     /* tokens written by this writer */
    int shards;        /* shards committed */
} hp_shard_writer;

/* Starts a writer (no file is made before the first token); shard_tokens in
 * [1, INT32_MAX]. */
hp_status hp_shard_writer_open(hp_shard_writer *w, const char *dir, const char *prefix, const char *split,
                               int64_t shard_tokens);
/* Appends ids[0..n); each must be in [0, 65535]. */
hp_status hp_shard_writer_put(hp_shard_writer *w, const int32_t *ids, size_t n);
/* Commits the last shard and releases the writer (also on error). */
hp_status hp_shard_writer_close(hp_shard_writer *w);
/* Removes the open shard's temporary file and releases the writer. */
void hp_shard_writer_abort(hp_shard_writer *w);
/* The name of shard `index` of split (malloc'd): DIR/PREFIX_SPLIT_NNNNNN.bin. */
char *hp_shard_name(const char *dir, const char *prefix, const char *split, int index);

#endif
