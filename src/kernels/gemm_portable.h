/* kernels/gemm_portable: private to kernels/onednn.c (not public API): the
 * bf16 GEMM fallback where oneDNN has none or the portable path is forced:
 * inputs widened to fp32, OpenBLAS sgemm on row blocks over the pool (fp32
 * accumulation), output rounded to nearest even. */
#ifndef HP_KERNELS_GEMM_PORTABLE_H
#define HP_KERNELS_GEMM_PORTABLE_H

#include "kernels/gemm.h"

/* Floats of widened buffers the fallback needs for d (A, B and a bf16 C). */
size_t hp_gemm_portable_floats(const hp_gemm_desc *d);
/* c = op(a) op(b) (+ bias) as hp_gemm_run; buf: hp_gemm_portable_floats(d) floats. */
void hp_gemm_portable_run(hp_pool *pool, float *buf, const hp_gemm_desc *d, void *c, const void *a,
                          const void *b, const float *bias);

#endif
