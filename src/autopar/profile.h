/* autopar/profile: a calibration profile — measured kernel rates per kernel
 * family, dtype and size bucket, and α–β collective costs per tier and kind —
 * read from a small JSON file, checked, printed back as JSON, and looked up
 * (with reported fallbacks) for the cost model. `hyperpar calibrate` (not
 * built yet) is to write these files; the shipped default for a generic
 * machine is profiles/generic-cpu.json.
 *
 * File format (one JSON object; every key below is required except "notes",
 * and no other key is allowed anywhere):
 *
 *   {
 *     "format": "hyperpar-profile",    <- exactly this
 *     "version": 1,                    <- the integer 1
 *     "machine": "generic-cpu",        <- letters, digits, '.', '_', '-'; at most 63
 *     "cpu": "any text",               <- at most 255 bytes
 *     "threads": 2,                    <- kernel threads per rank the kernels were
 *                                         measured with, an integer >= 1
 *     "peak_fp32_gflops": 160,         <- the machine's peak (all `threads`
 *     "peak_bf16_gflops": 80,             threads) as measured, finite and > 0
 *     "step_overhead_us": 3000,        <- optional (0 when absent), >= 0: a training
 *                                         step's host work beside its program
 *     "shared_2x": 0.8,                <- optional (1 when absent), in (0, 1]: the
 *     "shared_4x": 0.7,                   efficiency of 2x and 4x as many rank-threads
 *                                         as cores, over their even share
 *     "notes": ["text", ...],          <- optional; kept in order and printed
 *     "kernels": [                     <- may be empty (lookups fall back)
 *       {"family": "gemm", "dtype": "fp32", "bucket": "large",
 *        "gflops": 60, "gbps": 10}     <- GFLOP/s (10^9) and GB/s (10^9 bytes/s),
 *     ],                                  finite and > 0
 *     "collectives": [                 <- may be empty (a profile of kernels only)
 *       {"tier": "intra", "kind": "all_reduce", "ranks": 2,
 *        "alpha_us": 2, "beta_GBps": 5} <- alpha >= 0 microseconds per call,
 *     ]                                    beta > 0 GB/s (10^9 bytes/s); ranks
 *   }                                      the group size measured at (>= 2)
 *
 * family: gemm, grouped_gemm, attention, pointwise, norm, softmax_xent,
 * embedding. dtype: fp32, bf16. bucket, by the FLOPs of one call:
 * small < 10^6, medium < 10^9, large >= 10^9. tier: intra (inside a
 * supernode), inter (between supernodes: the group spans 2 supernodes with
 * ranks/2 members each). kind: all_reduce, all_gather, reduce_scatter,
 * all_to_all, send. A collective entry is per call: alpha_us + N / beta with
 * N the call's whole buffer, measured in a group of `ranks` members. Each
 * (family, dtype, bucket) and each (tier, kind) is given at most once. A
 * kind not given falls back to its tier's all_reduce; a tier without
 * all_reduce (or a profile without collectives: kernels measured for a
 * remote machine whose links come from its cluster description) has no
 * collective times (HP_PROF_NONE).
 *
 * Errors are one line, `FILE: PATH: problem`, PATH a JSON path such as
 * `kernels[3].gflops` (`FILE: json: offset N: ...` for text that is not
 * JSON). */
#ifndef HP_AUTOPAR_PROFILE_H
#define HP_AUTOPAR_PROFILE_H

#include <stddef.h>

#include "core/status.h"

#define HP_PROFILE_NAME_MAX 64 /* bytes of hp_profile.machine, its NUL included */
#define HP_PROFILE_CPU_MAX 256 /* bytes of hp_profile.cpu, its NUL included */

/* Bucket bounds, FLOPs of one call: small below the first, large from the second. */
#define HP_PROFILE_SMALL_BELOW 1e6
#define HP_PROFILE_LARGE_FROM 1e9

typedef enum {
    HP_PROF_GEMM, HP_PROF_GROUPED_GEMM, HP_PROF_ATTENTION, HP_PROF_POINTWISE, HP_PROF_NORM,
    HP_PROF_SOFTMAX_XENT, HP_PROF_EMBEDDING, HP_PROF_NFAMILIES
} hp_prof_family;

typedef enum { HP_PROF_FP32, HP_PROF_BF16, HP_PROF_NDTYPES } hp_prof_dtype;
typedef enum { HP_PROF_SMALL, HP_PROF_MEDIUM, HP_PROF_LARGE, HP_PROF_NBUCKETS } hp_prof_bucket;
typedef enum { HP_PROF_INTRA, HP_PROF_INTER, HP_PROF_NTIERS } hp_prof_tier;
typedef enum {
    HP_PROF_ALL_REDUCE, HP_PROF_ALL_GATHER, HP_PROF_REDUCE_SCATTER, HP_PROF_ALL_TO_ALL, HP_PROF_SEND,
    HP_PROF_NKINDS
} hp_prof_kind;

/* How a lookup found its numbers. */
typedef enum {
    HP_PROF_EXACT,          /* the entry asked for */
    HP_PROF_NEAREST_BUCKET, /* same family and dtype, the nearest bucket given (the smaller on a tie) */
    HP_PROF_FROM_FP32,      /* a bf16 call priced at the family's fp32 entry (its bucket, else the nearest) */
    HP_PROF_FAMILY_DEFAULT, /* nothing for the family: the built-in default of hp_profile_family_default */
    HP_PROF_FROM_ALL_REDUCE, /* a collective kind not given: HP_PROF_FALLBACK_FACTOR x the tier's all_reduce */
    HP_PROF_NONE            /* neither the kind nor the tier's all_reduce given: no time (the cost
                             * model takes the cluster description's link numbers) */
} hp_prof_fallback;

/* A missing kind costs this times all_reduce's α + N/β: with N the whole
 * buffer (all_gather's output, reduce_scatter's input, all_to_all's send
 * buffer, send's message), a ring all-reduce moves 2(p-1)/p N per rank and
 * the others (p-1)/p N, or about N for a send. */
#define HP_PROF_FALLBACK_FACTOR 0.5

typedef struct {
    int given;      /* 0: no entry */
    double gflops;  /* GFLOP/s */
    double gbps;    /* GB/s */
} hp_prof_kernel;

typedef struct {
    int given;
    int ranks;        /* members of the group measured (>= 2) */
    double alpha_us;  /* per call */
    double beta_GBps; /* 10^9 bytes/s */
} hp_prof_coll;

typedef struct {
    char machine[HP_PROFILE_NAME_MAX];
    char cpu[HP_PROFILE_CPU_MAX];
    int threads;             /* kernel threads per rank the kernels were measured with */
    double peak_fp32_gflops; /* the machine's measured peaks, GFLOP/s on `threads` threads */
    double peak_bf16_gflops;
    double step_overhead_us; /* optional ("step_overhead_us", >= 0; 0 when absent): a training step's host work
                              * beside its program (the trainer's batch, schedule, loss and norm), per step */
    double shared_eff[2];    /* optional ("shared_2x", "shared_4x", in (0, 1]; 1 when absent; parsing sets them):
                              * the share of the cores a rank-thread gets, when a process runs 2x and 4x as many
                              * rank-threads as the machine has cores, over its even share (context switches,
                              * caches) */
    char **notes; /* [nnotes] owned texts, in file order */
    int nnotes;
    hp_prof_kernel kernel[HP_PROF_NFAMILIES][HP_PROF_NDTYPES][HP_PROF_NBUCKETS];
    hp_prof_coll coll[HP_PROF_NTIERS][HP_PROF_NKINDS];
} hp_profile;

/* A kernel rate found by hp_profile_kernel_rate. */
typedef struct {
    double gflops, gbps;
    hp_prof_dtype dtype;     /* the entry's (fp32 after HP_PROF_FROM_FP32) */
    hp_prof_bucket bucket;   /* the entry's; the call's for a family default */
    hp_prof_fallback fallback;
} hp_prof_rate;

/* A collective's time found by hp_profile_collective_time. */
typedef struct {
    double time_us;       /* alpha_us + bytes / (beta_GBps * 10^3), times the factor on a fallback; 0 for none */
    double alpha_us, beta_GBps; /* the entry used (0 for none) */
    int ranks;            /* the entry's group size (0 for none) */
    hp_prof_kind kind;    /* the entry's (all_reduce after a fallback; the kind asked for when none) */
    hp_prof_fallback fallback; /* HP_PROF_EXACT, HP_PROF_FROM_ALL_REDUCE or HP_PROF_NONE */
} hp_prof_time;

/* Parses a profile from JSON text of len bytes; name stands for the file in
 * errors ("profile" if NULL). On error *out holds nothing to free. */
hp_status hp_profile_parse(hp_profile *out, const char *text, size_t len, const char *name);

/* Reads and parses the profile at path (a regular file, at most 1 MiB). */
hp_status hp_profile_load(hp_profile *out, const char *path);

void hp_profile_free(hp_profile *p);

/* Writes p as a profile file (JSON, one entry a line) into buf[n],
 * NUL-terminated when n > 0, like snprintf; returns the whole length. What
 * it prints parses back to the same profile. */
size_t hp_profile_print(char *buf, size_t n, const hp_profile *p);

/* The efficiency of `ratio` rank-threads per core (<= 1: 1): shared_eff interpolated in log2(ratio) from 1 at
 * 1x through 2x and 4x, the 4x value beyond. */
double hp_profile_shared_eff(const hp_profile *p, double ratio);

/* The bucket of a call of flops FLOPs (see the bounds above). */
hp_prof_bucket hp_profile_bucket_of(double flops);

/* The built-in rates used when a profile has nothing for a family: 1
 * GFLOP/s for gemm, grouped_gemm and attention, 0.1 GFLOP/s for the others,
 * 1 GB/s for all (below every rate of profiles/generic-cpu.json). */
void hp_profile_family_default(double *gflops, double *gbps, hp_prof_family f);

/* The rate of a call of family f, dtype d and flops FLOPs: the entry of its
 * bucket, else the nearest bucket of f and d, else (for bf16) f's fp32 entry
 * the same way, else the family default; out->fallback says which. */
void hp_profile_kernel_rate(hp_prof_rate *out, const hp_profile *p, hp_prof_family f, hp_prof_dtype d,
                            double flops);

/* The time of a collective of kind k moving bytes bytes on tier t:
 * alpha_us + bytes / (beta_GBps * 1e3) microseconds from (t, k)'s entry, or
 * HP_PROF_FALLBACK_FACTOR times that from (t, all_reduce)'s when k is not
 * given, or when neither is given fallback HP_PROF_NONE and time 0 (the
 * caller prices the collective another way). */
void hp_profile_collective_time(hp_prof_time *out, const hp_profile *p, hp_prof_tier t, hp_prof_kind k,
                                double bytes);

/* The family an operator of the operator table (src/ops, src/parallel) is
 * priced as, by its hp_opdef name: linear, linear_bwd and the fused LM head
 * linear_cross_entropy(_bwd) (its FLOPs are the vocabulary product's, 2NCV,
 * against a few NV for the softmax) -> gemm; grouped_linear(_bwd) ->
 * grouped_gemm; attention(_bwd) -> attention; layernorm, rmsnorm (and _bwd)
 * -> norm; cross_entropy* -> softmax_xent; embedding*, add_pos*, pos_table,
 * grad_rows* -> embedding; any other name -> pointwise. Communicating
 * operators (hp_opdef.communicates) get a family too but are priced as
 * collectives, not kernels: the caller skips them. */
hp_prof_family hp_profile_family_of_op(const char *op_name);

/* Names as the file spells them ("gemm", "bf16", "large", "inter",
 * "all_to_all"), and a fallback's ("exact", "nearest bucket", "fp32 entry",
 * "family default", "all_reduce x 0.5", "none"). */
const char *hp_profile_family_name(hp_prof_family f);
const char *hp_profile_dtype_name(hp_prof_dtype d);
const char *hp_profile_bucket_name(hp_prof_bucket b);
const char *hp_profile_tier_name(hp_prof_tier t);
const char *hp_profile_kind_name(hp_prof_kind k);
const char *hp_profile_fallback_name(hp_prof_fallback f);

#endif
