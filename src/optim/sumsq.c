#include "optim/sumsq.h"

double hp_sumsq_span(const float *x, long n) {
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    long i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += (double)x[i + j] * (double)x[i + j];
    for (int j = 0; i < n; i++, j++) acc[j] += (double)x[i] * (double)x[i];
    double s01 = acc[0] + acc[1], s23 = acc[2] + acc[3];
    double s45 = acc[4] + acc[5], s67 = acc[6] + acc[7];
    return (s01 + s23) + (s45 + s67);
}
