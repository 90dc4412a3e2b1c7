/* tools/ckpt_state: the state.json of a training checkpoint ("format",
 * "step", "model", "data" and "args": every setting but --resume, --init and
 * --stop-at), written the same way by the single-process and the distributed
 * training loops, so either can resume the other's checkpoints. */
#ifndef HP_TOOLS_CKPT_STATE_H
#define HP_TOOLS_CKPT_STATE_H

#include "args.h"
#include "core/status.h"
#include "io/data.h"
#include "models/gpt2.h"

/* *out: the JSON object text (malloc'd, caller frees). tab: the run's option
 * table [ntab] (its current values become "args"). */
hp_status hp_train_state_json(char **out, long step, const hp_gpt2_config *m, const hp_data_state *ds,
                              const hp_opt *tab, int ntab);

#endif
