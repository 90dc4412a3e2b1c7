#include "io/ckpt_shard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fsutil.h"

/* The held buffer of tensor t that contains region r, or NULL. */
static const hp_ckpt_held *holder(const hp_ckpt_held *held, int n, const hp_ckpt_index_tensor *t, const hp_region *r) {
    for (int i = 0; i < n; i++)
        if (!strcmp(held[i].name, t->name) && hp_region_contains(&held[i].region, r, &t->shape)) return &held[i];
    return NULL;
}

static hp_status write_pieces(hp_afile *f, const hp_ckpt_index *ix, int file, const hp_ckpt_held *held, int n) {
    static const char zeros[64];
    int64_t at = 0;
    for (int p = 0; p < ix->npieces; p++) {
        const hp_ckpt_index_piece *pc = &ix->pieces[p];
        if (pc->file != file) continue;
        const hp_ckpt_index_tensor *t = &ix->tensors[pc->tensor];
        const hp_ckpt_held *h = holder(held, n, t, &pc->region);
        if (!h)
            return hp_errorf("%s: no buffer of this rank holds its piece of '%s'", ix->files[file].name, t->name);
        if (pc->offset < at || pc->offset - at > 64)
            return hp_errorf("%s: the pieces of '%s' are not in file order", ix->files[file].name, t->name);
        HP_TRY(hp_afile_write(f, zeros, (size_t)(pc->offset - at)));
        int64_t nb = hp_ckpt_index_piece_bytes(ix, p);
        if (hp_region_eq(&h->region, &pc->region, &t->shape)) {
            HP_TRY(hp_afile_write(f, h->data, (size_t)nb));
        } else {
            void *stage = malloc((size_t)nb + 1);
            if (!stage) return hp_errorf("%s: out of memory", ix->files[file].name);
            hp_region_copy(stage, &pc->region, h->data, &h->region, &t->shape, hp_dtype_size(t->dtype));
            hp_status st = hp_afile_write(f, stage, (size_t)nb);
            free(stage);
            HP_TRY(st);
        }
        at = pc->offset + nb;
    }
    if (at != ix->files[file].bytes)
        return hp_errorf("%s: wrote %lld bytes, the index says %lld", ix->files[file].name, (long long)at,
                         (long long)ix->files[file].bytes);
    return HP_OK;
}

hp_status hp_ckpt_shard_write(const char *dir, const hp_ckpt_index *ix, int file, const hp_ckpt_held *held, int n) {
    HP_ASSERT(file >= 0 && file < ix->nfiles);
    char *path = hp_fs_join(dir, ix->files[file].name);
    hp_afile f;
    hp_status st = hp_afile_open(&f, path);
    if (!st) {
        st = write_pieces(&f, ix, file, held, n);
        if (st) {
            hp_afile_abort(&f);
            st = hp_error_wrap(st, "%s", dir);
        } else {
            st = hp_afile_commit(&f);
        }
    }
    free(path);
    return st;
}

struct hp_ckpt_shards {
    char *dir, *index_path;
    hp_ckpt_index ix;
    void **map;    /* [nfiles]: NULL for an empty file */
    size_t *len;   /* [nfiles] */
};

void hp_ckpt_shards_close(hp_ckpt_shards *s) {
    if (!s) return;
    for (int f = 0; s->map && f < s->ix.nfiles; f++)
        if (s->map[f]) munmap(s->map[f], s->len[f]);
    free(s->map), free(s->len);
    hp_ckpt_index_free(&s->ix);
    free(s->dir), free(s->index_path);
    free(s);
}

static hp_status map_file(hp_ckpt_shards *s, int f) {
    const hp_ckpt_index_file *fi = &s->ix.files[f];
    char *path = hp_fs_join(s->dir, fi->name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    hp_status st = HP_OK;
    struct stat sb;
    if (fd < 0)
        st = hp_errorf("%s: cannot open (listed as files[%d] in %s): %s", path, f, s->index_path, strerror(errno));
    else if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        st = hp_errorf("%s: not a regular file (files[%d] in %s)", path, f, s->index_path);
    else if ((int64_t)sb.st_size != fi->bytes)
        st = hp_errorf("%s: %lld bytes, but files[%d].bytes in %s says %lld (truncated or replaced)", path,
                       (long long)sb.st_size, f, s->index_path, (long long)fi->bytes);
    else if (fi->bytes > 0) {
        void *m = mmap(NULL, (size_t)fi->bytes, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) st = hp_errorf("%s: cannot map: %s", path, strerror(errno));
        else s->map[f] = m, s->len[f] = (size_t)fi->bytes;
    }
    if (fd >= 0) close(fd);
    free(path);
    return st;
}

hp_status hp_ckpt_shards_open(hp_ckpt_shards **out, const char *dir) {
    *out = NULL;
    hp_ckpt_shards *s = calloc(1, sizeof *s);
    if (!s) return hp_errorf("%s: out of memory", dir);
    s->dir = strdup(dir);
    s->index_path = hp_fs_join(dir, HP_CKPT_INDEX);
    hp_status st = s->dir ? hp_ckpt_index_read(&s->ix, s->index_path) : hp_errorf("%s: out of memory", dir);
    if (!st) {
        s->map = calloc((size_t)s->ix.nfiles + 1, sizeof *s->map);
        s->len = calloc((size_t)s->ix.nfiles + 1, sizeof *s->len);
        if (!s->map || !s->len) st = hp_errorf("%s: out of memory", dir);
    }
    for (int f = 0; !st && f < s->ix.nfiles; f++) st = map_file(s, f);
    if (st) {
        hp_ckpt_shards_close(s);
        return st;
    }
    *out = s;
    return HP_OK;
}

const hp_ckpt_index *hp_ckpt_shards_index(const hp_ckpt_shards *s) { return &s->ix; }
const char *hp_ckpt_shards_dir(const hp_ckpt_shards *s) { return s->dir; }

hp_status hp_ckpt_shards_read(const hp_ckpt_shards *s, const char *name, hp_dtype dtype, const hp_shape *shape,
                              const hp_region *want, void *dst) {
    int ti = hp_ckpt_index_find(&s->ix, name);
    if (ti < 0) return hp_errorf("%s: no tensor '%s'", s->index_path, name);
    const hp_ckpt_index_tensor *t = &s->ix.tensors[ti];
    char a[64], b[64];
    if (t->dtype != dtype)
        return hp_errorf("%s: tensors[%d] '%s'.dtype: %s, expected %s", s->index_path, ti, name,
                         hp_ckpt_dtype_name(t->dtype), hp_ckpt_dtype_name(dtype));
    if (!hp_shape_eq(&t->shape, shape))
        return hp_errorf("%s: tensors[%d] '%s'.shape: %s, expected %s", s->index_path, ti, name,
                         hp_shape_str(a, sizeof a, &t->shape), hp_shape_str(b, sizeof b, shape));
    char why[200];
    if (hp_region_invalid(why, sizeof why, want, shape))
        return hp_errorf("%s: '%s': the region to read is not in the tensor: %s", s->index_path, name, why);
    int64_t got = 0;
    for (int a_ = 0; a_ < t->count; a_++) {
        const hp_ckpt_index_piece *p = &s->ix.pieces[t->first + a_];
        if (!s->map[p->file]) continue; /* an empty file holds only empty pieces */
        const char *base = (const char *)s->map[p->file] + p->offset;
        got += hp_region_copy(dst, want, base, &p->region, shape, hp_dtype_size(dtype));
    }
    if (got != hp_region_numel(want, shape)) /* the index check makes the pieces tile the tensor */
        return hp_errorf("%s: '%s': %lld of %lld wanted elements found", s->index_path, name, (long long)got,
                         (long long)hp_region_numel(want, shape));
    return HP_OK;
}
