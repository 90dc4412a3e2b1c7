/* io/ckpt_index: the metadata of a sharded checkpoint, pieces.json in its
 * directory, written after every data file and before state.json (io/ckpt_dir's
 * commit file; a directory without both is not a checkpoint):
 *
 *   {"format": "hyperpar-sharded-2",
 *    "files": [{"name": "rank0.bin", "bytes": 4128, "step": 300, "crc32c": "1a2b3c4d"}, ...],
 *    "tensors": [{"name": "wte", "group": "model", "dtype": "F32", "shape": [50304, 768],
 *                 "pieces": [{"file": 0, "offset": 0, "start": [0, 0], "extent": [25152, 768],
 *                             "crc32c": "89abcdef"},
 *                            {"file": 1, "offset": 64, "begin": 0, "end": 100, "crc32c": ...}, ...]}, ...]}
 *
 * Every global tensor has a name, a group ("model": weights, "optim":
 * optimizer state), a dtype and its global shape; each piece names the data
 * file holding it, the byte offset of its raw little-endian elements there,
 * and which part of the tensor it is (an io/ckpt_region: a box with "start"
 * and "extent", or a flat range with "begin" and "end"). The pieces of a
 * tensor tile it exactly: no element in two pieces, none in none; no two
 * pieces share a byte of a file. Reading checks all of that, and that every
 * piece lies inside its file's data; errors name the file and the field
 * ("tensors[3].pieces[1].extent").
 *
 * Checksums (format 2; format 1, without them, is still read): a piece's
 * "crc32c" (io/crc32c, 8 hex digits) is the CRC-32C of its descriptor (the
 * tensor's name, group, dtype and shape and the piece's region, as
 * hp_ckpt_index_piece_seed spells them) followed by its bytes, so a piece
 * read under another name, region, file or offset fails like a damaged one.
 * A data file is its pieces (64-byte aligned, zeros between) followed by a
 * trailer of HP_CKPT_TRAILER bytes: "hpshard2", the step, the CRC-32C of the
 * bytes before the trailer (the file's "crc32c"), the file's index in
 * "files", and the CRC-32C of those 24 bytes; "bytes" counts the trailer,
 * "step" is the step of the save (state.json's). */
#ifndef HP_IO_CKPT_INDEX_H
#define HP_IO_CKPT_INDEX_H

#include <stdint.h>

#include "core/status.h"
#include "core/tensor.h"
#include "io/ckpt_region.h"

#define HP_CKPT_INDEX "pieces.json"
#define HP_CKPT_INDEX_FORMAT "hyperpar-sharded-2"   /* written */
#define HP_CKPT_INDEX_FORMAT_V1 "hyperpar-sharded-1" /* read: no checksums, no trailers */
#define HP_CKPT_TRAILER 32                           /* bytes at the end of a format-2 data file */
#define HP_CKPT_TRAILER_MAGIC "hpshard2"
/* pieces.json is read whole; a larger one is refused */
#define HP_CKPT_INDEX_MAX_BYTES ((size_t)256 << 20)

typedef enum { HP_CKPT_GROUP_MODEL = 0, HP_CKPT_GROUP_OPTIM = 1 } hp_ckpt_group;

typedef struct {
    char *name;
    int64_t bytes;      /* the file's size */
    int64_t data_bytes; /* where its trailer begins (format 1: bytes) */
    int64_t step;       /* the save's step (format 2) */
    uint32_t crc;       /* CRC-32C of the bytes before the trailer (format 2) */
    int has_crc;        /* crc and the file's pieces' crc are set (written, or read) */
} hp_ckpt_index_file;

typedef struct {
    char *name;
    hp_ckpt_group group;
    hp_dtype dtype;
    hp_shape shape;
    int first, count; /* its pieces: pieces[first .. first + count) */
} hp_ckpt_index_tensor;

typedef struct {
    int tensor, file;
    int64_t offset; /* bytes into the file */
    hp_region region;
    uint32_t crc; /* CRC-32C of the descriptor, then the bytes (format 2; see the top) */
} hp_ckpt_index_piece;

typedef struct {
    int version; /* 2 (checksums, trailers); 1: an older checkpoint read */
    int nfiles, ntensors, npieces;
    hp_ckpt_index_file *files;
    hp_ckpt_index_tensor *tensors;
    hp_ckpt_index_piece *pieces; /* grouped by tensor, in the order added */
    int cap_files, cap_tensors, cap_pieces;
} hp_ckpt_index;

/* An empty index of the current format (version 2). */
void hp_ckpt_index_init(hp_ckpt_index *ix);
void hp_ckpt_index_free(hp_ckpt_index *ix);

/* Building (the writer's side). Adds return the new item's index, or -1 when
 * out of memory (the index is then unusable: hp_ckpt_index_check says so).
 * Pieces must be added tensor by tensor (all of tensor t before tensor t+1's);
 * each is placed at the end of its file, 64-byte aligned. */
int hp_ckpt_index_add_file(hp_ckpt_index *ix, const char *name);
int hp_ckpt_index_add_tensor(hp_ckpt_index *ix, const char *name, hp_ckpt_group group, hp_dtype dtype,
                             const hp_shape *shape);
int hp_ckpt_index_add_piece(hp_ckpt_index *ix, int tensor, int file, const hp_region *region);

/* The checks reading makes (see the top; not the checksums, which need the
 * data); path names the metadata file in errors. */
hp_status hp_ckpt_index_check(const hp_ckpt_index *ix, const char *path);
/* The tensor called name, or -1. */
int hp_ckpt_index_find(const hp_ckpt_index *ix, const char *name);
int64_t hp_ckpt_index_piece_bytes(const hp_ckpt_index *ix, int piece);

/* The CRC-32C of piece's descriptor (its tensor's name, group, dtype and
 * shape, its region): the start of the piece's checksum, which goes on over
 * its bytes (hp_crc32c(seed, bytes, n)). */
uint32_t hp_ckpt_index_piece_seed(const hp_ckpt_index *ix, int piece);
/* A piece's checksum from the CRC-32C of its bytes alone (crc_bytes over n bytes). */
uint32_t hp_ckpt_index_piece_crc(const hp_ckpt_index *ix, int piece, uint32_t crc_bytes, int64_t n);
/* The trailer of file f (format 2) into out[HP_CKPT_TRAILER]. */
void hp_ckpt_index_trailer(unsigned char *out, const hp_ckpt_index *ix, int f);
/* 1 when in[0, HP_CKPT_TRAILER) is a trailer (its magic and its own checksum). */
int hp_ckpt_index_is_trailer(const unsigned char *in);
/* Checks file f's trailer (the file's last HP_CKPT_TRAILER bytes, `in`)
 * against the index: its own checksum, the step, the file's checksum and
 * index; the message names path (the data file) and index_path. */
hp_status hp_ckpt_index_trailer_check(const hp_ckpt_index *ix, int f, const unsigned char *in, const char *path,
                                      const char *index_path);

/* Writes the metadata atomically (hp_fs_write_atomic) after checking it
 * (format 2: every file's checksums must be set). */
hp_status hp_ckpt_index_write(const hp_ckpt_index *ix, const char *path);
/* Reads and checks the metadata file path (a regular file of at most
 * HP_CKPT_INDEX_MAX_BYTES). */
hp_status hp_ckpt_index_read(hp_ckpt_index *ix, const char *path);

const char *hp_ckpt_dtype_name(hp_dtype t); /* "F32", "BF16", "I32", "F64" */

#endif
