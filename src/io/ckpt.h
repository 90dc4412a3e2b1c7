/* io/ckpt: checkpoint directories. A checkpoint `dir` holds
 *   model.safetensors  the weights
 *   optim.safetensors  the optimizer state tensors
 *   state.json         step, data position, RNG state, config (the caller's JSON object)
 * or, in the sharded format (io/ckpt_index, io/ckpt_shard), instead of the two
 * tensor files: pieces.json (the global tensors and where their pieces are)
 * and the data files it names (one per writing rank).
 * Every reader refuses what is not a regular file (a FIFO, a device) without
 * waiting on it, and reads state.json and pieces.json only up to a bound.
 * It is written whole into a stage of io/ckpt_dir (dir.tmp-XXXXXX: the
 * tensor files, then state.json last, each written atomically and fsynced),
 * then committed there (renamed into place, an older checkpoint of the same
 * name replaced safely). `latest`, recovery after a crash, retention and the
 * lock are io/ckpt_dir's. */
#ifndef HP_IO_CKPT_H
#define HP_IO_CKPT_H

#include "core/status.h"
#include "io/ckpt_dir.h"
#include "io/ckpt_shard.h"
#include "io/json.h"
#include "io/safetensors.h"

#define HP_CKPT_MODEL "model.safetensors"
#define HP_CKPT_OPTIM "optim.safetensors"
#define HP_CKPT_STATE HP_CKPT_COMMIT_FILE

/* state_json must be a JSON object (it is checked before anything is
 * written). The parent directory is created if missing. */
hp_status hp_ckpt_save(const char *dir, const hp_named_tensor *weights, int nw, const hp_named_tensor *opt_state,
                       int no, const char *state_json);

/* Writes state.json into a stage being filled (tmp), last (io/ckpt_dir's
 * commit file), after checking that it is a JSON object (messages name dir,
 * the checkpoint's final name). */
hp_status hp_ckpt_state_write(const char *tmp, const char *dir, const char *state_json);

/* An opened checkpoint: both tensor files (or the sharded format's index and
 * data files) mapped and validated, state.json parsed. */
typedef struct {
    hp_safetensors *model;   /* NULL in the sharded format */
    hp_safetensors *optim;   /* NULL in the sharded format */
    hp_ckpt_shards *shards;  /* the sharded format; NULL in the single-process one */
    char *state_text; /* state.json as written */
    hp_json *state;   /* parsed (an object) */
} hp_ckpt;

hp_status hp_ckpt_open(hp_ckpt *ck, const char *dir);
/* The same without optim.safetensors (ck->optim NULL): what reading the
 * weights alone needs (sampling, export); the file may be missing. */
hp_status hp_ckpt_open_weights(hp_ckpt *ck, const char *dir);
void hp_ckpt_close(hp_ckpt *ck);
/* Checksum verification as tensors and pieces are read: on (the default
 * after opening) or off (0: benchmarks measure its cost). Every tensor file
 * written today carries checksums (io/safetensors, io/ckpt_index); one
 * written before them is read unverified. */
void hp_ckpt_set_verify(hp_ckpt *ck, int on);
/* Copies the whole tensor `name` of group g (weights or optimizer state) out
 * of either format after checking its dtype and shape. dst: [numel(shape)]. */
hp_status hp_ckpt_read(const hp_ckpt *ck, hp_ckpt_group g, const char *name, hp_dtype dtype, const hp_shape *shape,
                       void *dst);
/* The same for one region of the tensor (dst: [numel(region)], region order). */
hp_status hp_ckpt_read_region(const hp_ckpt *ck, hp_ckpt_group g, const char *name, hp_dtype dtype,
                              const hp_shape *shape, const hp_region *region, void *dst);
/* hp_ckpt_read_region whose checksum may be checked later, by
 * hp_ckpt_verify_deferred (which must follow before the data is used): a flat
 * range of a single-format tensor folds into a checksum of its range, so the
 * ranks that read a tensor's ranges verify it together without another pass
 * over its bytes. Safe from several threads at once. */
hp_status hp_ckpt_read_region_deferred(const hp_ckpt *ck, hp_ckpt_group g, const char *name, hp_dtype dtype,
                                       const hp_shape *shape, const hp_region *region, void *dst);
/* Checks what hp_ckpt_read_region_deferred read (after all its calls). */
hp_status hp_ckpt_verify_deferred(const hp_ckpt *ck);

#endif
