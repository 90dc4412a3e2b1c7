/* models/build: what the api room needs of models written through the public
 * model-writing calls (hyperpar.h's "writing a model"; models/build.c holds
 * those calls): the initialisation of their parameters by name. */
#ifndef HP_MODELS_BUILD_H
#define HP_MODELS_BUILD_H

#include <stdint.h>

#include "core/graph.h"

/* Initialises parameters by their names: *.bias zeros, *.weight names holding
 * "ln" or "norm" ones, the rest N(0, 0.02) from seed, in list order.
 * params[i] points at tensor i of shape shapes[i]. */
hp_status hp_model_init_by_name(float *const *params, const char (*names)[HP_NAME_LEN], const hp_shape *shapes,
                                int n, uint64_t seed);

#endif
