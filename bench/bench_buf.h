/* bench/bench_buf: the kernel benchmarks' input buffers — n floats in
 * [-0.1, 0.1) from a fixed seed (an LCG), or exit with "<who>: out of memory". */
#ifndef HP_BENCH_BENCH_BUF_H
#define HP_BENCH_BENCH_BUF_H

#include <stdio.h>
#include <stdlib.h>

static inline float *bench_fbuf(long n, unsigned seed, const char *who) {
    float *p = malloc((size_t)n * sizeof(float));
    if (!p) {
        fprintf(stderr, "%s: out of memory\n", who);
        exit(1);
    }
    unsigned s = seed * 2654435761u + 1;
    for (long i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 0.2f;
    }
    return p;
}

#endif
