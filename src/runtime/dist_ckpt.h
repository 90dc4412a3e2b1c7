/* runtime/dist_ckpt: checkpoints of training runs (one rank or many), in exactly the
 * single-process layout (io/ckpt.h; model.safetensors with whole tensors
 * named like the graph's parameters, optim.safetensors with whole
 * "adamw.m.<param>" etc.), so that any world size and any plan, or one rank,
 * can resume them ("reshardable").
 *
 * Saving assembles every tensor whole in the process hosting rank 0, which
 * alone writes. Every distinct piece of a tensor has one owner rank: a replica
 * hosted by rank 0's process when there is one, else the lowest rank holding
 * it. Owners in rank 0's process insert their pieces directly; owners in
 * other processes (mpirun) send them to rank 0, one piece at a time through
 * one reused buffer. An optimizer state tensor (a value of the program, tied
 * to its parameter by state_of) has its parameter's layout, so its pieces are
 * the parameter's.
 *
 * Loading: every process reads the whole tensors one at a time into one
 * reused buffer and scatters its hosted ranks' pieces (the checkpoint
 * directory must be readable by every process).
 *
 * The sharded format (HP_CKPT_SHARDED, runtime/ckpt_pieces) instead has every
 * rank write its own layout's pieces (each distinct piece once) with no
 * gathering, and a checkpoint in it is loaded by every rank reading only the
 * saved pieces that overlap its own. Either format is read by any plan.
 *
 * FSDP/ZeRO: a rank keeps only its shards of the parameters FSDP manages
 * current (and holds their moments as flat pieces), so every save goes
 * through the pieces: sharded, or for the single format the pieces beside
 * dir made whole by rank 0's process (io/ckpt_convert); every load too (each
 * rank fills its moments' pieces and its store: whole at levels 1 and 2, its
 * shards at level 3, where the ranks of a process share one store). */
#ifndef HP_RUNTIME_DIST_CKPT_H
#define HP_RUNTIME_DIST_CKPT_H

#include "io/ckpt.h"
#include "io/ckpt_lineage.h"
#include "runtime/ckpt_pieces.h"
#include "runtime/dist.h"

typedef enum { HP_CKPT_SINGLE = 0, HP_CKPT_SHARDED = 1 } hp_ckpt_format;

typedef struct hp_dist_ckpt hp_dist_ckpt;

/* d is borrowed for the object's lifetime. Computes piece ownership;
 * allocates the whole-tensor buffers of rank 0's process on the first save. */
hp_status hp_dist_ckpt_create(hp_dist_ckpt **out, hp_dist *d);
void hp_dist_ckpt_destroy(hp_dist_ckpt *c);
/* The format of the saves that follow (default: HP_CKPT_SINGLE); fault: tests. */
void hp_dist_ckpt_set_format(hp_dist_ckpt *c, hp_ckpt_format format, hp_ckpt_fault fault);

/* Writes every parameter and optimizer state tensor whole into checkpoint
 * directory dir with state_json (used by rank 0's process only), points the
 * parent's 'latest' at it, and with keep_last > 0 deletes the parent's older
 * step_* of lineage lin (NULL: any) beyond the keep_last newest (io/ckpt_dir
 * retention). Every process
 * calls it at the same step (it communicates); all return an error when rank
 * 0's process failed to write. */
hp_status hp_dist_ckpt_save(hp_dist_ckpt *c, const char *dir, const char *state_json, int keep_last,
                            const hp_ckpt_lineage *lin);

/* Fills every hosted rank's parameter pieces and (with_state) optimizer state
 * from the whole tensors of an opened checkpoint (any world size or plan wrote
 * it). Errors name the file and tensor. */
hp_status hp_dist_ckpt_load(hp_dist_ckpt *c, const hp_ckpt *ck, int with_state);

/* The pieces global rank q holds of parameter `name` (its index among the
 * parameters in *index, its global shape in *shape): for_save 1 the parts it
 * keeps current (what a save writes: under FSDP its shards), 0 every part it
 * holds memory for (what a load fills). Each region's buffer (data) is the
 * hosted rank's, or NULL for a rank of another process. Returns how many (at
 * most HP_DIST_CKPT_MAX_PIECES), -1 when no parameter has that name. */
#define HP_DIST_CKPT_MAX_PIECES (2 * HP_MAX_DIMS)
int hp_dist_ckpt_param_pieces(hp_ckpt_held *out, int *index, hp_shape *shape, const hp_dist_ckpt *c,
                              const char *name, int q, int for_save);
/* The same for a parameter or (states 1) an optimizer state, by its
 * checkpoint name ("muon.m.h.0.mlp.fc.weight"); *index: its entry. */
int hp_dist_ckpt_tensor_pieces(hp_ckpt_held *out, int *index, hp_shape *shape, const hp_dist_ckpt *c,
                               const char *name, int q, int for_save, int states);

#endif
