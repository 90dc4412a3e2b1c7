/* tools/peak: measures this machine's FP32 FMA peak (GFLOP/s) on a pool, with
 * the widest FMA vectors the build targets (AVX-512, else AVX2+FMA). */
#ifndef HP_TOOLS_PEAK_H
#define HP_TOOLS_PEAK_H

#include "core/pool.h"

/* Best of a few short runs on every thread of the pool; *isa names the vectors. */
double hp_measure_fma_peak(hp_pool *pool, const char **isa);

#endif
