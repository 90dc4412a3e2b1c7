/* optim/sumsq: the sum of squares of a span of floats in double precision,
 * in one fixed order (eight interleaved partial sums combined pairwise), so
 * that norms built from spans do not depend on threads or scheduling. */
#ifndef HP_OPTIM_SUMSQ_H
#define HP_OPTIM_SUMSQ_H

/* sum of x[i]^2 over x[n], in double, fixed order. */
double hp_sumsq_span(const float *x, long n);

#endif
