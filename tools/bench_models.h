/* tools/bench_models: the two models the benchmarks name (--model small |
 * gpt2-124m) with the batch each runs at. */
#ifndef HP_TOOLS_BENCH_MODELS_H
#define HP_TOOLS_BENCH_MODELS_H

#include <hyperpar/hyperpar.h>

/* The model called `name` and its batch B x T; errors name `cmd`. */
hp_status hp_bench_model(hp_model_config *m, int *B, int *T, const char *name, const char *cmd);

#endif
