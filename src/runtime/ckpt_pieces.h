/* runtime/ckpt_pieces: sharded checkpoints of a run (the format: io/ckpt_index
 * and io/ckpt_shard). The caller says what every rank of the world holds:
 * for each rank a list of pieces (global tensor, region, and for the ranks
 * hosted by this process the buffer). From that alone every process computes
 * the same index: each distinct region is written once, by the lowest rank
 * holding it (a replica's copy by the first replica), into that rank's own
 * file rank<r>.bin, and the written pieces must tile every tensor. Nothing is
 * gathered: every rank-thread writes its own file at once. The runtime's
 * layouts give Shard(d) boxes (runtime/dist_ckpt); a flat-shard plan (FSDP)
 * passes its flat ranges the same way.
 *
 * Saving is atomic as a whole: the lead process (rank 0's) begins an
 * io/ckpt_dir stage (dir.tmp-XXXXXX) and tells the others its name; every
 * rank writes and fsyncs its file; once all succeeded, pieces.json and then
 * state.json (the commit file of io/ckpt_dir) are written, the stage is
 * committed (moved into place) and 'latest' points at it. A crash before that
 * leaves only a stage, which recovery removes. The checkpoint directory must be one
 * file system seen by every process. Each writer computes its file's and
 * pieces' checksums from the bytes it writes (io/ckpt_shard); under mpirun
 * they reach the lead by an all-gather before pieces.json is written. The
 * step recorded in pieces.json and every data file's trailer is state.json's
 * "step" (the lead's; the others receive it with the stage's name).
 *
 * Loading: every hosted rank fills its pieces from the checkpoint's saved
 * pieces that overlap them (any world size, plan or piece kind wrote it;
 * either format). What a rank loads may be more than what it saves: under
 * FSDP a rank saves only its own shards (the rest of its store is stale until
 * the next gather) and loads its whole store. */
#ifndef HP_RUNTIME_CKPT_PIECES_H
#define HP_RUNTIME_CKPT_PIECES_H

#include "io/ckpt.h"
#include "runtime/dist.h"

typedef struct {
    const char *name;
    hp_ckpt_group group;
    hp_dtype dtype;
    hp_shape shape; /* global */
} hp_ckpt_tensor_desc;

typedef struct {
    int n;
    const hp_ckpt_held *held; /* [n]; data: the buffer for ranks hosted here, else NULL */
} hp_ckpt_rank_pieces;

/* A save that stops on purpose (tests): after every rank's file is written,
 * before the metadata commit, as a crash there would (the temporary
 * directory is left behind). */
typedef enum { HP_CKPT_FAULT_NONE = 0, HP_CKPT_FAULT_BEFORE_COMMIT = 1 } hp_ckpt_fault;

typedef struct hp_ckpt_pieces hp_ckpt_pieces;

/* t: [nt]; save: [world size of d], indexed by global rank: what each rank
 * writes from; load: the same for loading (NULL: save's; only the hosted
 * ranks' lists are used). Everything is copied except the data buffers (and
 * d, borrowed). */
hp_status hp_ckpt_pieces_create(hp_ckpt_pieces **out, hp_dist *d, const hp_ckpt_tensor_desc *t, int nt,
                                const hp_ckpt_rank_pieces *save, const hp_ckpt_rank_pieces *load);
void hp_ckpt_pieces_destroy(hp_ckpt_pieces *p);
const hp_ckpt_index *hp_ckpt_pieces_index(const hp_ckpt_pieces *p);

/* Writes checkpoint directory dir (state_json: from the lead process; others
 * may pass NULL) and, with set_latest, points the parent's 'latest' at it.
 * Every process calls it at the same step; all fail when any failed. */
hp_status hp_ckpt_pieces_save(hp_ckpt_pieces *p, const char *dir, const char *state_json, int set_latest,
                              hp_ckpt_fault fault);
/* Fills every hosted rank's load pieces (optimizer state only with
 * with_state) from a checkpoint of either format. */
hp_status hp_ckpt_pieces_load(hp_ckpt_pieces *p, const hp_ckpt *ck, int with_state);

#endif
