/* tools/ckpt_state: the "args" of `hyperpar train` checkpoints (see the header). */
#include "ckpt_state.h"

#include <string.h>

#include "train_opts.h"

void hp_ckpt_args_fill(hp_ckpt_args *a, const hp_opt *tab, int ntab) {
    a->n = 0;
    for (int i = 0; i < ntab && a->n < HP_CKPT_ARGS_MAX; i++) {
        if (hp_train_opt_in(tab[i].name, HP_TRAIN_OPT_UNSAVED)) continue;
        hp_args_format(a->text[a->n], sizeof a->text[a->n], &tab[i]);
        a->keys[a->n] = tab[i].name;
        a->values[a->n] = a->text[a->n];
        a->n++;
    }
}
