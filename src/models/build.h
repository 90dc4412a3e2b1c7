/* models/build: what the api room needs of models written through the public
 * model-writing calls (hyperpar.h's "writing a model"; models/build.c holds
 * those calls): the initialisation of their parameters. */
#ifndef HP_MODELS_BUILD_H
#define HP_MODELS_BUILD_H

#include <stdint.h>

#include "core/graph.h"

/* Initialises the parameters of model g: params[i] points at its i-th
 * parameter in declaration order (names[i] must be that parameter's name, n
 * their count), filled as the init stated where it was declared says
 * (hp_param_init), else by name (hp_param); the random kinds draw from one
 * stream seeded with seed, in declaration order (hyperpar.h's hp_init). */
hp_status hp_model_init(float *const *params, const hp_graph *g, const char (*names)[HP_NAME_LEN], int n,
                        uint64_t seed);

#endif
