/* tools/ckpt_state: the settings `hyperpar train` keeps in each checkpoint —
 * the object "args" of its state.json (every setting not in the group
 * HP_TRAIN_OPT_UNSAVED of tools/hp_train_options, as flag values), written by the
 * library (hp_train_config.ckpt_arg_*) next to "format", "step", "model" and
 * "data", and read back (hp_ckpt_info) as the defaults of a resumed run. */
#ifndef HP_TOOLS_CKPT_STATE_H
#define HP_TOOLS_CKPT_STATE_H

#include "args.h"
#include "hyperpar/hyperpar.h"

#define HP_CKPT_ARGS_MAX 96

typedef struct {
    int n;
    const char *keys[HP_CKPT_ARGS_MAX];   /* the option names (borrowed from the table) */
    const char *values[HP_CKPT_ARGS_MAX]; /* into text */
    char text[HP_CKPT_ARGS_MAX][600];
} hp_ckpt_args;

/* The current values of the run's option table tab [ntab] as checkpoint args. */
void hp_ckpt_args_fill(hp_ckpt_args *a, const hp_opt *tab, int ntab);

#endif
