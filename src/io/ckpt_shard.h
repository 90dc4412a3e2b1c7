/* io/ckpt_shard: the data files of a sharded checkpoint (io/ckpt_index
 * describes them). A writer (a rank) writes one file: the pieces the index
 * places in it, each copied out of whichever of its buffers holds it, raw
 * little-endian elements at the index's offsets (zero padding between), then
 * (format 2) the trailer, atomically (hp_afile: temporary name, fsync,
 * rename); the checksums of the pieces and of the file are computed from the
 * bytes as they are written. A reader maps every file of a checkpoint
 * (checking each file's size and trailer against the index) and fills any
 * wanted region of a tensor from the saved pieces that overlap it: only
 * those pieces' bytes are touched, and each piece is verified against its
 * checksum the first time it is read (in the same pass as the copy when the
 * piece lies wholly in the wanted region). */
#ifndef HP_IO_CKPT_SHARD_H
#define HP_IO_CKPT_SHARD_H

#include "io/ckpt_index.h"

/* A buffer of one process holding part of a global tensor (to save from, or
 * to load into). */
typedef struct {
    const char *name; /* the global tensor */
    hp_region region; /* the part held */
    void *data;       /* [numel(region)] elements of the tensor's dtype, in region order */
} hp_ckpt_held;

/* Writes file `file` of ix into dir from held[0..n): every piece in that file
 * must lie inside one held buffer of its tensor. ix->files[file].step must be
 * set; the checksums of the file and of its pieces are set in ix (writers of
 * different files may run at once: each sets only its own file's). */
hp_status hp_ckpt_shard_write(const char *dir, hp_ckpt_index *ix, int file, const hp_ckpt_held *held, int n);

typedef struct hp_ckpt_shards hp_ckpt_shards;

/* Reads dir/pieces.json and maps its files (a missing or short file, one that
 * is not a regular file, or one whose trailer does not match the index is an
 * error naming it and the field). */
hp_status hp_ckpt_shards_open(hp_ckpt_shards **out, const char *dir);
void hp_ckpt_shards_close(hp_ckpt_shards *s);
const hp_ckpt_index *hp_ckpt_shards_index(const hp_ckpt_shards *s);
const char *hp_ckpt_shards_dir(const hp_ckpt_shards *s);
/* Verification of the pieces' checksums as they are read: on (1, the
 * default) or off (0: benchmarks measure what it costs). A format-1
 * checkpoint has no checksums to verify. */
void hp_ckpt_shards_set_verify(hp_ckpt_shards *s, int on);
/* Fills dst (holding region `want` of tensor `name`: [numel(want)] elements)
 * after checking that the tensor exists with this dtype and global shape,
 * and every piece it reads against its checksum (an error names the tensor,
 * the piece and the data file). Safe to call from several threads at once. */
hp_status hp_ckpt_shards_read(const hp_ckpt_shards *s, const char *name, hp_dtype dtype, const hp_shape *shape,
                              const hp_region *want, void *dst);

#endif
