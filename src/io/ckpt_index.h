/* io/ckpt_index: the metadata of a sharded checkpoint, pieces.json in its
 * directory, written after every data file and before state.json (io/ckpt_dir's
 * commit file; a directory without both is not a checkpoint):
 *
 *   {"format": "hyperpar-sharded-1",
 *    "files": [{"name": "rank0.bin", "bytes": 4096}, ...],
 *    "tensors": [{"name": "wte", "group": "model", "dtype": "F32", "shape": [50304, 768],
 *                 "pieces": [{"file": 0, "offset": 0, "start": [0, 0], "extent": [25152, 768]},
 *                            {"file": 1, "offset": 64, "begin": 0, "end": 100}, ...]}, ...]}
 *
 * Every global tensor has a name, a group ("model": weights, "optim":
 * optimizer state), a dtype and its global shape; each piece names the data
 * file holding it, the byte offset of its raw little-endian elements there,
 * and which part of the tensor it is (an io/ckpt_region: a box with "start"
 * and "extent", or a flat range with "begin" and "end"). The pieces of a
 * tensor tile it exactly: no element in two pieces, none in none. Reading
 * checks all of that, and that every piece lies inside its file's stated
 * size; errors name the file and the field ("tensors[3].pieces[1].extent"). */
#ifndef HP_IO_CKPT_INDEX_H
#define HP_IO_CKPT_INDEX_H

#include <stdint.h>

#include "core/status.h"
#include "core/tensor.h"
#include "io/ckpt_region.h"

#define HP_CKPT_INDEX "pieces.json"
#define HP_CKPT_INDEX_FORMAT "hyperpar-sharded-1"

typedef enum { HP_CKPT_GROUP_MODEL = 0, HP_CKPT_GROUP_OPTIM = 1 } hp_ckpt_group;

typedef struct {
    char *name;
    int64_t bytes; /* the file's size */
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
} hp_ckpt_index_piece;

typedef struct {
    int nfiles, ntensors, npieces;
    hp_ckpt_index_file *files;
    hp_ckpt_index_tensor *tensors;
    hp_ckpt_index_piece *pieces; /* grouped by tensor, in the order added */
    int cap_files, cap_tensors, cap_pieces;
} hp_ckpt_index;

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

/* The checks reading makes (see the top); path names the metadata file in errors. */
hp_status hp_ckpt_index_check(const hp_ckpt_index *ix, const char *path);
/* The tensor called name, or -1. */
int hp_ckpt_index_find(const hp_ckpt_index *ix, const char *name);
int64_t hp_ckpt_index_piece_bytes(const hp_ckpt_index *ix, int piece);

/* Writes the metadata atomically (hp_fs_write_atomic) after checking it. */
hp_status hp_ckpt_index_write(const hp_ckpt_index *ix, const char *path);
/* Reads and checks the metadata file path. */
hp_status hp_ckpt_index_read(hp_ckpt_index *ix, const char *path);

const char *hp_ckpt_dtype_name(hp_dtype t); /* "F32", "BF16", "I32", "F64" */

#endif
