/* optim/newton_schulz: the Newton–Schulz iteration that Muon uses to replace
 * an update matrix U (rows x cols) by an approximately orthogonal matrix with
 * the same singular vectors (U = P S Q^T  ->  about P Q^T).
 *
 * X = U, transposed when rows > cols so X is r x c with r <= c;
 * X <- X / (norm_scale * ||X||_F + eps); then for each step (a, b, c):
 * A = X X^T, B = b A + c A A, X <- a X + B X; finally transposed back.
 *
 * Determinism: every GEMM is cut into fixed blocks of output rows
 * (HP_NS_ROW_BLOCK, independent of the pool size) and each block is one
 * single-threaded cblas_sgemm call, so the result depends only on the input
 * and its shape: identical for any pool size, and the batched form gives
 * exactly the bytes of the single form for every matrix. NS(G^T) is exactly
 * NS(G)^T. Nothing here allocates: the caller passes scratch memory of
 * hp_newton_schulz_scratch() floats. BLAS must run one thread per caller
 * (hp_kernels_init). */
#ifndef HP_OPTIM_NEWTON_SCHULZ_H
#define HP_OPTIM_NEWTON_SCHULZ_H

#include <stddef.h>

#include "core/pool.h"
#include "core/status.h"

#define HP_NS_MAX_STEPS 8
/* Rows of a GEMM output block: the unit of parallel work. */
#define HP_NS_ROW_BLOCK 128

typedef struct {
    int steps;                          /* 1..HP_NS_MAX_STEPS */
    float coeffs[HP_NS_MAX_STEPS][3];   /* (a, b, c) per step */
    float norm_scale;                   /* divide by norm_scale * ||X||_F + eps */
    float eps;
    const char *name;                   /* preset name, for messages */
} hp_ns_config;

/* Presets by name:
 *  "quintic"  (alias "fixed"):   (3.4445, -4.7750, 2.0315) x 5, norm 1.0, eps 1e-7
 *  "perstep"  (alias "hyper"):   the 5 per-step triples of hyper-parallel, norm 1.0, eps 1e-7
 *  "polar"    (alias "polar_express"): the 5 Polar Express triples, norm 1.02, eps 1e-6
 * Unknown names give an error naming the field `ns`. */
hp_status hp_ns_config_named(hp_ns_config *out, const char *name);
/* Checks steps, norm_scale and eps; errors name the field. */
hp_status hp_ns_config_check(const hp_ns_config *cfg);

/* floats of scratch for one matrix / for `count` matrices of one shape. */
size_t hp_newton_schulz_scratch(long rows, long cols);
size_t hp_newton_schulz_batched_scratch(long count, long rows, long cols);

/* out[rows,cols] = NS(in[rows,cols]). out may alias in (in is read only before
 * the first write to out). scratch: hp_newton_schulz_scratch(rows, cols) floats. */
void hp_newton_schulz(hp_pool *pool, float *out, const float *in, float *scratch, long rows,
                      long cols, const hp_ns_config *cfg);
/* The same for count matrices stored contiguously: out[count,rows,cols] =
 * NS of each in[k,:,:]; bit-identical to calling hp_newton_schulz per matrix.
 * scratch: hp_newton_schulz_batched_scratch(count, rows, cols) floats. */
void hp_newton_schulz_batched(hp_pool *pool, float *out, const float *in, float *scratch,
                              long count, long rows, long cols, const hp_ns_config *cfg);

/* Newton–Schulz in pieces, for distributed Muon's teams (several ranks
 * iterate one matrix, each computing some of its row blocks and exchanging
 * them): the iterate X is r x c (r = min(rows, cols), c the other), its row
 * block blk is rows [blk * HP_NS_ROW_BLOCK, ...) of it. Each function makes
 * exactly the calls hp_newton_schulz_batched makes for that part, so the
 * pieces put together give its bytes. */
/* row blocks of the iterate of a rows x cols matrix */
long hp_ns_blocks(long rows, long cols);
/* X[r, c] = the normalised iterate of in[rows, cols] (transposed when rows >
 * cols); partials: hp_ns_blocks doubles of scratch (2 floats each). */
void hp_ns_prepare(hp_pool *pool, float *X, const float *in, float *partials, long rows, long cols,
                   const hp_ns_config *cfg);
/* Arows[block rows, r] = X[block rows, :] X^T, X [r, c]. */
void hp_ns_block_gram(float *Arows, const float *X, long r, long c, long blk);
/* One step's block (coef = (a, b, c)): Brows[block rows, r] = b Arows +
 * c Arows A and Yrows[block rows, c] = a X[block rows, :] + Brows X, with
 * A [r, r] the whole Gram matrix, Arows its block rows, X [r, c]. */
void hp_ns_block_step(float *Yrows, float *Brows, const float *Arows, const float *A, const float *X, long r, long c,
                      long blk, const float coef[3]);
/* out[rows, cols] = the iterate X[r, c] turned back (transposed when rows > cols). */
void hp_ns_store(hp_pool *pool, float *out, float *X, long rows, long cols);

#endif
