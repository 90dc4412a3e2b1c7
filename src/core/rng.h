/* core/rng: a small deterministic random generator (splitmix64 seeding,
 * xoshiro256** stream) for initialisation, data order and sampling. Its whole
 * state is a plain struct, so checkpoints can save and restore it. */
#ifndef HP_CORE_RNG_H
#define HP_CORE_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} hp_rng;

void hp_rng_seed(hp_rng *r, uint64_t seed);
uint64_t hp_rng_next(hp_rng *r);
/* Uniform in [0, 1) with 24 random bits. */
float hp_rng_uniform(hp_rng *r);
/* Standard normal (Box-Muller, in double, one value per call). */
double hp_rng_normal(hp_rng *r);

#endif
