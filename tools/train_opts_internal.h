/* tools/train_opts_internal: train_opts as the library's internal types, for
 * tools/plan_report until the plan command uses the public API alone (then
 * this file and its .c go). */
#ifndef HP_TOOLS_TRAIN_OPTS_INTERNAL_H
#define HP_TOOLS_TRAIN_OPTS_INTERNAL_H

#include "io/data.h"
#include "layout/plan.h"
#include "models/gpt2.h"
#include "optim/optimizer.h"
#include "parallel/schedule.h"
#include "train_opts.h"

hp_status hp_train_optim_config(hp_optim_config *c, const train_opts *o);
/* The training (val = 0) or validation (val = 1) stream. */
hp_status hp_train_open_data(hp_data **d, const train_opts *o, const hp_gpt2_config *m, int val);
/* The run's sharding plan: --plan FILE, else GPT-2 DP x TP from --dp/--tp. */
hp_status hp_train_plan(hp_plan *out, const train_opts *o);
/* The schedule options (--overlap). */
hp_schedule_opts hp_train_schedule(const train_opts *o);

#endif
