/* kernels/gemm: matrix products through oneDNN's matmul primitive, fp32 or
 * bf16 (bf16 inputs, fp32 accumulation, fp32 or bf16 output), prepared once
 * per (shape, transposes, dtypes) and reused: hp_gemm_prepare creates the
 * primitive, its memory objects and its scratchpad; hp_gemm_run only points
 * them at the caller's buffers and executes (no primitive creation, no
 * scratchpad allocation in a steady-state call).
 *
 * Threads: a context belongs to one rank and its pool. A product is split
 * into row blocks of C, one per pool thread (at least 16 rows each), each a
 * single-threaded primitive of its own run by its pool thread with the
 * thread's OpenMP count set to 1 (and restored): oneDNN never starts an
 * OpenMP team, so nothing spins beside the pool (libgomp's idle workers spin,
 * and took the cores the pool needed: 2.5-4x slower steps on a loaded
 * machine), ranks do not oversubscribe, and the threading is the pool's as
 * for OpenBLAS. A context and its products are used by one rank-thread at a
 * time.
 *
 * Row-major throughout: C[M,N] = op(A)[M,K] . op(B)[K,N] where op(A) = A
 * stored [M,K], or A^T with A stored [K,M] (trans_a); op(B) = B stored [K,N],
 * or B^T with B stored [N,K] (trans_b). */
#ifndef HP_KERNELS_GEMM_H
#define HP_KERNELS_GEMM_H

#include "core/pool.h"
#include "core/status.h"
#include "core/tensor.h"
#include "kernels/isa.h"

typedef struct hp_gemm_ctx hp_gemm_ctx;
typedef struct hp_gemm hp_gemm;

/* A oneDNN CPU engine and stream for the rank that owns `pool` (NULL: one
 * thread): oneDNN runs on hp_pool_size(pool) OpenMP threads, the portable
 * fallback on the pool itself. */
hp_status hp_gemm_ctx_create(hp_gemm_ctx **out, hp_pool *pool);
void hp_gemm_ctx_destroy(hp_gemm_ctx *ctx); /* after every hp_gemm of it is freed */
int hp_gemm_ctx_threads(const hp_gemm_ctx *ctx);
hp_pool *hp_gemm_ctx_pool(const hp_gemm_ctx *ctx);
/* oneDNN primitives created through this context so far (the compile step's
 * count; a steady-state step adds none). */
long hp_gemm_ctx_creations(const hp_gemm_ctx *ctx);
/* Products with A transposed (the weight gradient): their blocks read A as a
 * strided view (oneDNN's jit gemm), or packed dense first (by a oneDNN
 * reorder primitive per block) so oneDNN runs its
 * brgemm kernels, AMX tiles included. HP_GEMM_PACK_AUTO (the default) packs
 * where oneDNN's ISA has AMX (on AVX512-BF16 alone the jit gemm measured
 * 5-15% faster); _ALWAYS / _NEVER force it. Applies to later prepares. */
typedef enum { HP_GEMM_PACK_AUTO = 0, HP_GEMM_PACK_ALWAYS = 1, HP_GEMM_PACK_NEVER = 2 } hp_gemm_pack;
void hp_gemm_ctx_set_pack(hp_gemm_ctx *ctx, hp_gemm_pack mode);
/* Whether HP_GEMM_PACK_AUTO packs on this machine (oneDNN's ISA has AMX). */
int hp_gemm_auto_packs(void);
/* Whether g's blocks are packed: each block then has a second primitive, the
 * oneDNN reorder that transposes its columns of A into the pack buffer (so a
 * packed product creates two primitives per block). */
int hp_gemm_packed(const hp_gemm *g);

typedef struct {
    long M, N, K;
    int trans_a, trans_b; /* see the header comment */
    hp_dtype a, b, c;     /* a == b, HP_F32 or HP_BF16; c HP_F32 or HP_BF16 */
    int bias;             /* C += bias[N] (fp32) */
    int accumulate;       /* C += op(A) op(B) (oneDNN's sum post-op) instead of C = */
    /* Serial: not split; one whole-product primitive per pool thread, run by
     * hp_gemm_run_serial from inside a pool task (for kernels that deal many
     * small independent products to their threads, e.g. attention's heads).
     * No transposed A; no portable fallback (prepare leaves *out NULL where
     * oneDNN has no matmul for it or the portable path is forced, and the
     * caller keeps its own path). */
    int serial;
    /* A bf16 product forced onto the portable fallback, as the process-wide
     * switch does (kernels/backend.h's portable table sets it). */
    int portable;
} hp_gemm_desc;

/* Creates the primitive for d (one creation counted on ctx). Errors name the
 * shape and what oneDNN said. bf16 products take the portable fallback
 * instead (inputs widened to fp32 into buffers allocated here, OpenBLAS sgemm
 * on the pool, fp32 accumulation, output rounded to nearest even) where oneDNN
 * has no bf16 matmul (no AVX-512: oneDNN 2.6 implements bf16 only from
 * avx512_core) or the portable path is forced (kernels/isa.h); no primitive
 * is created then. */
hp_status hp_gemm_prepare(hp_gemm **out, hp_gemm_ctx *ctx, const hp_gemm_desc *d);
void hp_gemm_free(hp_gemm *g);
/* c[M,N] (dtype d.c) = op(a) op(b) (+ bias[N]); a, b of dtype d.a, stored as
 * the desc says; bias NULL unless d.bias. */
hp_status hp_gemm_run(hp_gemm *g, void *c, const void *a, const void *b, const float *bias);
/* A serial product (d.serial) run by pool thread tid of the context's pool on
 * the calling thread (which must be that pool thread, inside a pool task):
 * one primitive over the whole product, at one OpenMP thread. Results do not
 * depend on tid. */
hp_status hp_gemm_run_serial(hp_gemm *g, int tid, void *c, const void *a, const void *b);
const hp_gemm_desc *hp_gemm_get_desc(const hp_gemm *g);
/* The row blocks (primitives) of g: 1..pool size; 0 on the portable path. */
int hp_gemm_parts(const hp_gemm *g);
/* oneDNN's implementation name ("brg:avx512_core_bf16", "gemm:jit", ...,
 * or "portable: widened fp32 + OpenBLAS") and the ISA it stands for. */
const char *hp_gemm_impl(const hp_gemm *g);
hp_isa hp_gemm_isa(const hp_gemm *g);

/* ---- the three products of a linear layer (weights [OC,IC], as kernels.h) ---- */
typedef enum {
    HP_LINEAR_FWD = 0,        /* out[N,OC] = inp[N,IC] . weight[OC,IC]^T (+ bias[OC]) */
    HP_LINEAR_BWD_DATA = 1,   /* dinp[N,IC] = dout[N,OC] . weight[OC,IC] */
    HP_LINEAR_BWD_WEIGHT = 2, /* dweight[OC,IC] (+)= dout[N,OC]^T . inp[N,IC], always fp32 */
} hp_linear_product;

/* The desc of product p for a layer of N rows: inputs of dtype `in`, fwd and
 * bwd-data output of dtype `out` (bwd-weight output fp32). */
hp_gemm_desc hp_gemm_linear_desc(hp_linear_product p, long N, long IC, long OC, hp_dtype in,
                                 hp_dtype out);

typedef struct {
    hp_gemm *fwd, *bwd_data, *bwd_weight;
} hp_gemm_linear;

/* Prepares all three products (three creations). acc_dweight: the backward
 * adds into dweight (gradient accumulation) instead of overwriting it. */
hp_status hp_gemm_linear_prepare(hp_gemm_linear *l, hp_gemm_ctx *ctx, long N, long IC, long OC,
                                 hp_dtype in, hp_dtype out, int bias, int acc_dweight);
void hp_gemm_linear_free(hp_gemm_linear *l);
/* out[N,OC] from inp[N,IC], weight[OC,IC], bias[OC] (NULL unless prepared with bias). */
hp_status hp_gemm_linear_fwd(const hp_gemm_linear *l, void *out, const void *inp,
                             const void *weight, const float *bias);
/* dinp[N,IC] and dweight[OC,IC] (fp32) from dout[N,OC], inp[N,IC], weight[OC,IC];
 * either output may be NULL. dbias: hp_kb_colsum (bf16) or hp_k_matmul_bwd. */
hp_status hp_gemm_linear_bwd(const hp_gemm_linear *l, void *dinp, float *dweight, const void *dout,
                             const void *inp, const void *weight);

/* ---- fp32: oneDNN or OpenBLAS, per shape ---- */
typedef enum { HP_GEMM_OPENBLAS = 0, HP_GEMM_ONEDNN = 1 } hp_gemm_backend;
/* Best-of-2x`reps` seconds of product p of an fp32 linear layer through the
 * engine's OpenBLAS kernels (hp_k_matmul_fwd / _bwd on ctx's pool) and through
 * a oneDNN primitive on ctx, on random data it allocates; each backend's runs
 * back to back (blocks in the order OpenBLAS, oneDNN, oneDNN, OpenBLAS). A
 * tuning step for the compile step, never a steady-state call. */
hp_status hp_gemm_f32_measure(double *sec_blas, double *sec_dnnl, hp_gemm_ctx *ctx,
                              hp_linear_product p, long N, long IC, long OC, int reps);
/* The faster of the two measured (a tie keeps OpenBLAS, the fp32 default). */
hp_gemm_backend hp_gemm_f32_choose(double sec_blas, double sec_dnnl);
const char *hp_gemm_backend_name(hp_gemm_backend b);

/* How fp32 linear layers pick their GEMM (train --fp32-gemm). */
typedef enum {
    HP_GEMM_FP32_OPENBLAS = 0, /* the engine's OpenBLAS kernels (the default: runs are reproducible) */
    HP_GEMM_FP32_ONEDNN = 1,   /* oneDNN for every product */
    HP_GEMM_FP32_AUTO = 2,     /* the faster of the two per (product, shape), measured on this rank's
                                * threads when the program is created (the choice, and so the last bits
                                * of a run, can differ between runs) */
} hp_gemm_fp32_policy;

/* The backend of product p of an fp32 layer under AUTO: measured once per
 * (product, shape) on ctx (hp_gemm_f32_measure, 3 runs per block), then
 * remembered by ctx for the rest of its life (up to 64 shapes). */
hp_status hp_gemm_f32_pick(hp_gemm_backend *out, hp_gemm_ctx *ctx, hp_linear_product p, long N, long IC, long OC);
/* The context's memory of those choices (kept in the context so that the
 * oneDNN side never calls the measuring side: calls go gemm_choose ->
 * onednn only). get: the backend remembered for (p, shape), -1 when none;
 * put: remember one (ignored past 64 shapes). */
int hp_gemm_ctx_pick_get(const hp_gemm_ctx *ctx, hp_linear_product p, long N, long IC, long OC);
void hp_gemm_ctx_pick_put(hp_gemm_ctx *ctx, hp_linear_product p, long N, long IC, long OC, hp_gemm_backend b);

#endif
