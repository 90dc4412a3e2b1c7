/* kernels/blas_init: pins OpenBLAS to one thread per caller, so the engine's
 * pool alone decides how many cores a rank uses. */
#include <cblas.h>

#include "kernels/kernels.h"

void hp_kernels_init(void) { openblas_set_num_threads(1); }
