#include "io/shard_write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/data.h"

#define BUF_TOKENS (1u << 20)

static char *dup_str(const char *s) {
    char *r = strdup(s);
    HP_ASSERT(r != NULL);
    return r;
}

char *hp_shard_name(const char *dir, const char *prefix, const char *split, int index) {
    size_t n = strlen(prefix) + strlen(split) + 32;
    char *name = malloc(n);
    HP_ASSERT(name != NULL);
    snprintf(name, n, "%s_%s_%06d.bin", prefix, split, index);
    char *path = hp_fs_join(dir, name);
    free(name);
    return path;
}

hp_status hp_shard_writer_open(hp_shard_writer *w, const char *dir, const char *prefix, const char *split,
                               int64_t shard_tokens) {
    memset(w, 0, sizeof *w);
    w->f.fd = -1;
    if (shard_tokens < 1 || shard_tokens > INT32_MAX)
        return hp_errorf("%s: tokens per shard must be in [1, %d], got %lld", dir, INT32_MAX, (long long)shard_tokens);
    w->dir = dup_str(dir);
    w->prefix = dup_str(prefix);
    w->split = dup_str(split);
    w->shard_tokens = shard_tokens;
    w->cap = BUF_TOKENS;
    w->buf = malloc(w->cap * sizeof *w->buf);
    HP_ASSERT(w->buf != NULL);
    return HP_OK;
}

static void release(hp_shard_writer *w) {
    free(w->dir);
    free(w->prefix);
    free(w->split);
    free(w->buf);
    w->dir = w->prefix = w->split = NULL;
    w->buf = NULL;
}

void hp_shard_writer_abort(hp_shard_writer *w) {
    if (w->open) hp_afile_abort(&w->f);
    w->open = 0;
    release(w);
}

static hp_status flush(hp_shard_writer *w) {
    if (!w->nbuf) return HP_OK;
    HP_TRY(hp_afile_write(&w->f, w->buf, w->nbuf * sizeof *w->buf));
    w->nbuf = 0;
    return HP_OK;
}

static hp_status start_shard(hp_shard_writer *w) {
    char *path = hp_shard_name(w->dir, w->prefix, w->split, w->index);
    hp_status e = hp_afile_open(&w->f, path);
    free(path);
    HP_TRY(e);
    w->open = 1;
    w->in_shard = 0;
    int32_t header[HP_DATA_HEADER_INTS] = {0}; /* the count is filled in at the end */
    return hp_afile_write(&w->f, header, sizeof header);
}

/* Writes the header with the count over the placeholder and commits. */
static hp_status end_shard(hp_shard_writer *w) {
    HP_TRY(flush(w));
    int32_t header[HP_DATA_HEADER_INTS] = {HP_DATA_MAGIC, HP_DATA_VERSION, (int32_t)w->in_shard};
    const char *p = (const char *)header;
    size_t left = sizeof header;
    off_t at = 0;
    while (left > 0) {
        ssize_t r = pwrite(w->f.fd, p, left, at);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return hp_errorf("%s: write failed: %s", w->f.path, strerror(errno));
        p += r, at += r, left -= (size_t)r;
    }
    w->open = 0;
    HP_TRY(hp_afile_commit(&w->f));
    w->index++;
    w->shards++;
    return HP_OK;
}

hp_status hp_shard_writer_put(hp_shard_writer *w, const int32_t *ids, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] > 65535)
            return hp_errorf("%s: token id %d does not fit an llm.c shard's uint16", w->dir, ids[i]);
        if (!w->open) HP_TRY(start_shard(w));
        w->buf[w->nbuf++] = (uint16_t)ids[i];
        w->in_shard++;
        w->total++;
        if (w->nbuf == w->cap) HP_TRY(flush(w));
        if (w->in_shard == w->shard_tokens) HP_TRY(end_shard(w));
    }
    return HP_OK;
}

hp_status hp_shard_writer_close(hp_shard_writer *w) {
    hp_status e = w->open ? end_shard(w) : HP_OK;
    if (e) {
        hp_shard_writer_abort(w);
        return e;
    }
    release(w);
    return HP_OK;
}
