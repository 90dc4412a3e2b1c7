/* tools/stats: the median of timing samples (benchmarks). */
#ifndef HP_TOOLS_STATS_H
#define HP_TOOLS_STATS_H

/* Sorts v[n] in place and returns its median. */
double hp_median(double *v, int n);

#endif
