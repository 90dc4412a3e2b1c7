/* tools/dist_train: the distributed training loop (see dist_train.c). */
#ifndef HP_TOOLS_DIST_TRAIN_H
#define HP_TOOLS_DIST_TRAIN_H

#include "train_opts.h"

hp_status hp_train_distributed(const train_opts *o);

#endif
