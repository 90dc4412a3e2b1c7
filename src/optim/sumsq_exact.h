/* optim/sumsq_exact: an exact sum of squares, for a gradient norm that does
 * not depend on how the gradients are cut into shards, blocks or threads (the
 * deterministic mode). A float x = m * 2^(e - 150) (m its 24-bit significand,
 * e its biased exponent, 1 for subnormals) has the square m^2 * 2^(2e - 300):
 * an integer below 2^48 at a power of two. The accumulator adds each square
 * as an integer into the bin of its power of two (128 bits per bin: lo, hi
 * words), so the sum is exact and its order does not matter; accumulators of
 * ranks or threads merge by adding bins. The value is read once, from a
 * canonical form (the bins carried into one binary integer), so equal sums
 * give equal doubles however they were split into bins. A weight 2^-s (a
 * piece held by 2^s ranks) moves a square s bins down: still exact. The words
 * travel as plain uint64 (an f64 value of HP_SUMSQ_EXACT_WORDS elements
 * between graph nodes, gathered bytewise between ranks). */
#ifndef HP_OPTIM_SUMSQ_EXACT_H
#define HP_OPTIM_SUMSQ_EXACT_H

#include <stdint.h>

#define HP_SUMSQ_EXACT_SHIFT 32 /* largest weight shift s (pieces held by up to 2^31 ranks) */
#define HP_SUMSQ_EXACT_BINS 544 /* bin i holds squares at 2^(i - 332): 2e - s + 32 for e in 1..254 */
/* words: [0, BINS) low halves, [BINS, 2 BINS) high halves, then NaN and Inf counts */
#define HP_SUMSQ_EXACT_WORDS (2 * HP_SUMSQ_EXACT_BINS + 2)

typedef struct {
    uint64_t w[HP_SUMSQ_EXACT_WORDS];
} hp_sumsq_exact;

void hp_sumsq_exact_clear(hp_sumsq_exact *a);
/* a += sum of x[i]^2 * 2^-shift over x[n] (0 <= shift < HP_SUMSQ_EXACT_SHIFT). */
void hp_sumsq_exact_add(hp_sumsq_exact *a, const float *x, long n, int shift);
/* a += b. */
void hp_sumsq_exact_merge(hp_sumsq_exact *a, const hp_sumsq_exact *b);
/* The sum as a double (NaN if a NaN was added, else +Inf if an Inf was), a
 * function of the exact sum alone. */
double hp_sumsq_exact_value(const hp_sumsq_exact *a);
/* The shift s of a weight w = 2^-s (0 < w <= 1), -1 if w is not such a power of two. */
int hp_sumsq_exact_shift(float w);

#endif
