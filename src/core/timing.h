/* core/timing: a monotonic clock and the median of timing samples, for
 * profiling, progress displays and benchmarks. */
#ifndef HP_CORE_TIMING_H
#define HP_CORE_TIMING_H

/* Seconds since an arbitrary start (CLOCK_MONOTONIC). */
double hp_now(void);
/* Sorts v[n] in place and returns its median (the mean of the two middle
 * values when n is even; 0 when n < 1). */
double hp_median(double *v, int n);

#endif
