/* tools/session: retired — the single-process program that sample, export
 * and bench built from library internals is now the library's own (hp_infer,
 * hp_llmc_reexport, hp_bench_train_step in hyperpar/hyperpar.h). What stays
 * is the one internal header that train.c, ckpt_state.c and plan_report.c
 * still get through this file (hp_ckpt_model_config, hp_llmc_model_config,
 * hp_gpt2_config_to_json); delete this file once they are ported. */
#ifndef HP_TOOLS_SESSION_H
#define HP_TOOLS_SESSION_H

#include <hyperpar/hyperpar.h>

#include "models/gpt2_config.h"

#endif
