/* tools/ckpt_state: the "args" of `hyperpar train` checkpoints (see the header). */
#include "ckpt_state.h"

#include <string.h>

/* Settings that belong to one invocation, not to the run. */
static int per_invocation(const char *name) {
    static const char *const skip[] = {"resume", "init", "stop-at", "trace", "trace-steps", "run-dir"};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (!strcmp(name, skip[i])) return 1;
    return 0;
}

void hp_ckpt_args_fill(hp_ckpt_args *a, const hp_opt *tab, int ntab) {
    a->n = 0;
    for (int i = 0; i < ntab && a->n < HP_CKPT_ARGS_MAX; i++) {
        if (per_invocation(tab[i].name)) continue;
        hp_args_format(a->text[a->n], sizeof a->text[a->n], &tab[i]);
        a->keys[a->n] = tab[i].name;
        a->values[a->n] = a->text[a->n];
        a->n++;
    }
}
