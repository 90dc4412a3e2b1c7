#include "io/ckpt_shard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/crc32c.h"
#include "io/fsutil.h"


/* The held buffer of tensor t that contains region r, or NULL. */
static const hp_ckpt_held *holder(const hp_ckpt_held *held, int n, const hp_ckpt_index_tensor *t, const hp_region *r) {
    for (int i = 0; i < n; i++)
        if (!strcmp(held[i].name, t->name) && hp_region_contains(&held[i].region, r, &t->shape)) return &held[i];
    return NULL;
}

static hp_status write_pieces(hp_afile *f, hp_ckpt_index *ix, int file, const hp_ckpt_held *held, int n) {
    static const char zeros[64];
    int64_t at = 0;
    uint32_t fcrc = 0; /* the file's bytes so far */
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
        fcrc = hp_crc32c(fcrc, zeros, (size_t)(pc->offset - at));
        int64_t nb = hp_ckpt_index_piece_bytes(ix, p);
        uint32_t crc;
        if (hp_region_eq(&h->region, &pc->region, &t->shape)) {
            crc = hp_crc32c(0, h->data, (size_t)nb);
            HP_TRY(hp_afile_write(f, h->data, (size_t)nb));
        } else {
            void *stage = malloc((size_t)nb + 1);
            if (!stage) return hp_errorf("%s: out of memory", ix->files[file].name);
            hp_region_copy(stage, &pc->region, h->data, &h->region, &t->shape, hp_dtype_size(t->dtype));
            crc = hp_crc32c(0, stage, (size_t)nb);
            hp_status st = hp_afile_write(f, stage, (size_t)nb);
            free(stage);
            HP_TRY(st);
        }
        ix->pieces[p].crc = hp_ckpt_index_piece_crc(ix, p, crc, nb);
        fcrc = hp_crc32c_combine(fcrc, crc, (uint64_t)nb);
        at = pc->offset + nb;
    }
    if (at != ix->files[file].data_bytes)
        return hp_errorf("%s: wrote %lld bytes, the index says %lld", ix->files[file].name, (long long)at,
                         (long long)ix->files[file].data_bytes);
    ix->files[file].crc = fcrc;
    ix->files[file].has_crc = 1;
    if (ix->version >= 2) {
        unsigned char tr[HP_CKPT_TRAILER];
        hp_ckpt_index_trailer(tr, ix, file);
        HP_TRY(hp_afile_write(f, tr, sizeof tr));
    }
    return HP_OK;
}

hp_status hp_ckpt_shard_write(const char *dir, hp_ckpt_index *ix, int file, const hp_ckpt_held *held, int n) {
    HP_ASSERT(file >= 0 && file < ix->nfiles);
    char *path = hp_fs_join(dir, ix->files[file].name);
    hp_afile f;
    hp_status st = hp_afile_open(&f, path);
    if (!st) {
        st = write_pieces(&f, ix, file, held, n);
        if (st) {
            hp_afile_abort(&f); /* the error names the file, which names dir */
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
    int verify;    /* check the pieces' checksums (format 2) */
    atomic_uchar *verified; /* [npieces]: 1 once a piece's bytes matched its checksum */
};

void hp_ckpt_shards_close(hp_ckpt_shards *s) {
    if (!s) return;
    for (int f = 0; s->map && f < s->ix.nfiles; f++)
        if (s->map[f]) munmap(s->map[f], s->len[f]);
    free(s->map), free(s->len), free(s->verified);
    hp_ckpt_index_free(&s->ix);
    free(s->dir), free(s->index_path);
    free(s);
}

static hp_status map_file(hp_ckpt_shards *s, int f) {
    const hp_ckpt_index_file *fi = &s->ix.files[f];
    char *path = hp_fs_join(s->dir, fi->name);
    int fd = -1;
    size_t size = 0;
    hp_status st = hp_fs_open_regular(&fd, &size, path);
    if (st) { /* "PATH: cannot open: why" or "PATH: not a regular file (a FIFO)", with where it is listed */
        const char *m = hp_status_msg(st), *rest = m;
        size_t pn = strlen(path);
        if (!strncmp(m, path, pn) && !strncmp(m + pn, ": ", 2)) rest = m + pn + 2;
        hp_status w = !strncmp(rest, "cannot open: ", 13)
                          ? hp_errorf("%s: cannot open (listed as files[%d] in %s): %s", path, f, s->index_path, rest + 13)
                          : hp_errorf("%s: %s (files[%d] in %s)", path, rest, f, s->index_path);
        hp_status_free(st);
        st = w;
    } else if ((int64_t)size != fi->bytes) {
        st = hp_errorf("%s: %lld bytes, but files[%d].bytes in %s says %lld (truncated or replaced)", path,
                       (long long)size, f, s->index_path, (long long)fi->bytes);
    } else if (fi->bytes > 0) {
        void *m = mmap(NULL, (size_t)fi->bytes, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) st = hp_errorf("%s: cannot map: %s", path, strerror(errno));
        else s->map[f] = m, s->len[f] = (size_t)fi->bytes;
    }
    if (!st && s->ix.version >= 2) /* the trailer: this step's, this file's, this save's */
        st = hp_ckpt_index_trailer_check(&s->ix, f, (const unsigned char *)s->map[f] + fi->data_bytes, path,
                                         s->index_path);
    else if (!st && fi->bytes >= HP_CKPT_TRAILER &&
             hp_ckpt_index_is_trailer((const unsigned char *)s->map[f] + fi->bytes - HP_CKPT_TRAILER))
        st = hp_errorf("%s: written with checksums (it ends in a trailer), but %s is of the older format %s "
                       "without them (rewritten?)",
                       path, s->index_path, HP_CKPT_INDEX_FORMAT_V1);
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
        s->verified = calloc((size_t)s->ix.npieces + 1, sizeof *s->verified);
        s->verify = 1;
        if (!s->map || !s->len || !s->verified) st = hp_errorf("%s: out of memory", dir);
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
void hp_ckpt_shards_set_verify(hp_ckpt_shards *s, int on) { s->verify = on != 0; }

static hp_status bad_checksum(const hp_ckpt_shards *s, int pi, uint32_t got) {
    const hp_ckpt_index_piece *p = &s->ix.pieces[pi];
    const hp_ckpt_index_tensor *t = &s->ix.tensors[p->tensor];
    return hp_errorf("%s/%s: tensors[%d] '%s'.pieces[%d] (bytes [%lld, %lld)): checksum %08x, but %s says %08x "
                     "(the data, or the piece's name, region, file or offset, was changed)",
                     s->dir, s->ix.files[p->file].name, p->tensor, t->name, pi - t->first, (long long)p->offset,
                     (long long)(p->offset + hp_ckpt_index_piece_bytes(&s->ix, pi)), got, s->index_path, p->crc);
}

/* Piece pi's bytes against its checksum, in one pass. */
static hp_status verify_piece(const hp_ckpt_shards *s, int pi, const char *base, int64_t nb) {
    uint32_t got = hp_ckpt_index_piece_crc(&s->ix, pi, hp_crc32c(0, base, (size_t)nb), nb);
    if (got != s->ix.pieces[pi].crc) return bad_checksum(s, pi, got);
    atomic_store(&s->verified[pi], 1);
    return HP_OK;
}

/* Piece pi, lying wholly in `want`, copied into dst and verified in the same
 * pass (the runs of the copy go through the piece's bytes in order). */
static hp_status copy_verify(int64_t *got, const hp_ckpt_shards *s, int pi, const char *base, void *dst,
                             const hp_region *want, const hp_shape *shape, size_t elem) {
    const hp_ckpt_index_piece *p = &s->ix.pieces[pi];
    int64_t n = hp_region_numel(&p->region, shape);
    uint32_t crc = 0;
    *got += hp_region_copy_crc(dst, &crc, want, base, &p->region, shape, elem);
    int64_t nb = n * (int64_t)elem;
    uint32_t full = hp_ckpt_index_piece_crc(&s->ix, pi, crc, nb);
    if (full != p->crc) return bad_checksum(s, pi, full);
    atomic_store(&s->verified[pi], 1);
    return HP_OK;
}

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
    size_t elem = hp_dtype_size(dtype);
    int check = s->verify && s->ix.version >= 2;
    for (int a_ = 0; a_ < t->count; a_++) {
        int pi = t->first + a_;
        const hp_ckpt_index_piece *p = &s->ix.pieces[pi];
        int64_t nb = hp_ckpt_index_piece_bytes(&s->ix, pi);
        const char *base = s->map[p->file] ? (const char *)s->map[p->file] + p->offset : NULL;
        if (!nb) continue; /* an empty file holds only empty pieces */
        if (!check || atomic_load(&s->verified[pi])) {
            got += hp_region_copy(dst, want, base, &p->region, shape, elem);
            continue;
        }
        int64_t common = hp_region_overlap(want, &p->region, shape);
        if (!common) continue;
        if (common == hp_region_numel(&p->region, shape)) { /* wholly wanted: verified as it is copied */
            HP_TRY(copy_verify(&got, s, pi, base, dst, want, shape, elem));
            continue;
        }
        HP_TRY(verify_piece(s, pi, base, nb)); /* partly wanted: the whole piece verified first */
        got += hp_region_copy(dst, want, base, &p->region, shape, elem);
    }
    if (got != hp_region_numel(want, shape)) /* the index check makes the pieces tile the tensor */
        return hp_errorf("%s: '%s': %lld of %lld wanted elements found", s->index_path, name, (long long)got,
                         (long long)hp_region_numel(want, shape));
    return HP_OK;
}
