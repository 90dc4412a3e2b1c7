/* autopar/calibrate: what `hyperpar calibrate` measured, turned into a
 * calibration profile (autopar/profile). The measuring itself — running the
 * operators' kernels, the peaks and the collectives — is done above, in
 * api/calibrate*.c (it needs the runtime's programs and the benchmarks'
 * peaks); this room keeps the arithmetic: a kernel's rates from one timed
 * call (gflops = flops / time, gbps = bytes / time with the operator's own
 * flops() and bytes(), so the cost model's max(flops / gflops, bytes / gbps)
 * gives back the measured time for that shape), the least-squares α–β fit of
 * a collective's times over buffer sizes, the profile with its notes, and the
 * table the command prints. */
#ifndef HP_AUTOPAR_CALIBRATE_H
#define HP_AUTOPAR_CALIBRATE_H

#include <stddef.h>

#include "autopar/profile.h"
#include "core/status.h"

#define HP_CALIB_MAX_SIZES 32 /* buffer sizes a collective is measured at */

/* One kernel measurement: the call measured and its median time. */
typedef struct {
    int given;          /* 0: not measured */
    int from_bucket;    /* -1: measured in its own bucket; else the bucket whose measurement it copies */
    char op[32];        /* the operator's name ("linear") */
    char shape[64];     /* "M=256 K=512 N=512" */
    double flops, bytes; /* the operator's flops() and bytes() of the call */
    double seconds;     /* median seconds of one call */
} hp_calib_kernel;

/* One collective measured at n buffer sizes (N: the call's whole buffer). */
typedef struct {
    int n;
    int ranks; /* members of the group */
    double bytes[HP_CALIB_MAX_SIZES];
    double seconds[HP_CALIB_MAX_SIZES]; /* median seconds of one call */
} hp_calib_coll;

typedef struct {
    char machine[HP_PROFILE_NAME_MAX];
    char cpu[HP_PROFILE_CPU_MAX];
    int threads;
    double peak_fp32_gflops, peak_bf16_gflops;
    char peak_fp32_how[64], peak_bf16_how[160]; /* "avx512 FMA", "oneDNN bf16 matmul (no native bf16)" */
    int quick;
    int repeats;                              /* timed calls per kernel entry (after a warm-up) */
    double inter_bw_gbps, inter_latency_us;   /* the emulated inter-supernode link (0: unthrottled) */
    double step_overhead_us;                  /* a trainer's step less its program's (0: not measured) */
    double shared_eff[2];                     /* rank-threads at 2x and 4x the cores: their efficiency over an
                                               * even share of the cores (0: not measured) */
    hp_calib_kernel kernel[HP_PROF_NFAMILIES][HP_PROF_NDTYPES][HP_PROF_NBUCKETS];
    hp_calib_coll coll[HP_PROF_NTIERS][HP_PROF_NKINDS];
} hp_calib_data;

/* The least-squares fit of seconds[i] = alpha + bytes[i] / beta over n >= 2
 * points (bytes >= 0, seconds > 0) with at least two distinct sizes, each
 * point weighted 1 / seconds[i]^2 (its relative error counts: the small
 * sizes that set alpha are not drowned by the large ones): *alpha_us in
 * microseconds, *beta_GBps in 10^9 bytes/s. A negative intercept is refitted
 * through the origin (alpha 0); a slope not above 0 (times that do not grow
 * with the size: sizes too small to show one) is taken as 10^-3 of the
 * largest size's seconds per byte, so beta stays finite and > 0. Exact (to
 * rounding) on points that lie on such a line. */
hp_status hp_calib_fit(double *alpha_us, double *beta_GBps, const double *bytes, const double *seconds, int n);

/* A kernel entry's rates from its measurement: flops / seconds and bytes /
 * seconds in 10^9 per second. A call of 0 FLOPs (or 0 bytes) sets that rate
 * to fallback_gflops (gbps: fallback_gbps), which never binds it. */
void hp_calib_rates(hp_prof_kernel *out, const hp_calib_kernel *k, double fallback_gflops, double fallback_gbps);

/* The profile of d: every measured kernel entry, every collective measured
 * at >= 2 sizes fitted, the top-level numbers, and notes saying how each was
 * measured. Errors: a fit's, or out of memory. */
hp_status hp_calib_profile(hp_profile *out, const hp_calib_data *d);

/* The table `hyperpar calibrate` prints of d and its profile p: per kernel
 * entry the operator, shape, FLOPs, bytes, time and rates; per collective its
 * times per size and the fit. snprintf-style (buf may be NULL when n is 0). */
size_t hp_calib_table(char *buf, size_t n, const hp_calib_data *d, const hp_profile *p);

#endif
