/* tools/hp_train_options: the flag table of `hyperpar train` and `hyperpar plan`
 * over the library's one table of training options, and what only the
 * commands do with them (the model shape against --init, the plan in
 * words). */
#ifndef HP_TOOLS_TRAIN_OPTS_H
#define HP_TOOLS_TRAIN_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"

/* Room for the option table in its callers (hp_train_opt_table(NULL, o) must not exceed it). */
#define HP_TRAIN_MAX_OPTS 96

/* The option table over o (tab may be NULL to count); returns the count. */
int hp_train_opt_table(hp_opt *tab, hp_train_options *o);
/* Before parsing: the model shape flags marked as not given (HP_SHAPE_UNSET),
 * so that hp_train_shape_resolve can tell a flag given from a default. */
#define HP_SHAPE_UNSET (-2147483647 - 1)
void hp_train_shape_unset(hp_train_options *o);
/* After parsing: with init (the shape of the --init file init_path) every
 * shape flag given must agree with it, and the shape becomes init's; without,
 * a flag not given takes its default. */
hp_status hp_train_shape_resolve(hp_train_options *o, const hp_model_config *init, const char *init_path, const char *cmd);
/* 1 when the run is distributed (--plan, or --dp/--tp/--fsdp/--hsdp above 1). */
int hp_train_is_distributed(const hp_train_options *o);
/* The plan in a few words: "1 rank", "dp 2 x tp 2", "fsdp 4", "hsdp 2,2",
 * "zero-1 x dp 2", "plan file F". */
void hp_train_plan_describe(char *buf, size_t n, const hp_train_options *o);

#endif
