/* tools/dist_train: the distributed training loop (see dist_train.c). */
#ifndef HP_TOOLS_DIST_TRAIN_H
#define HP_TOOLS_DIST_TRAIN_H

#include "io/ckpt.h"
#include "train_opts.h"

/* What train.c hands the distributed loop besides the options. */
typedef struct {
    const hp_opt *tab;           /* the option table over *o: state.json "args" of its checkpoints */
    int ntab;
    const hp_ckpt *resume;       /* the opened checkpoint to resume from, or NULL */
    const char *resume_dir;      /* its directory (messages) */
    long start_step;             /* its step */
    const hp_gpt2_config *model; /* its model shape (NULL: from the options) */
} hp_dist_train_ctx;

/* Trains under o's plan; checkpoints (--ckpt-dir) are the single-process
 * layout (tools/dist_ckpt.h), and any checkpoint resumes under any plan. */
hp_status hp_train_distributed(const train_opts *o, const hp_dist_train_ctx *ctx);

#endif
