/* kernels/blas_core: which kernels OpenBLAS runs (see the header). */
#include "kernels/blas_core.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/kernels.h"

void hp_blas_core_read(hp_blas_core *out) {
    hp_kernels_init();
    const char *core = openblas_get_corename(), *forced = getenv("OPENBLAS_CORETYPE");
    snprintf(out->core, sizeof out->core, "%s", core ? core : "?");
    snprintf(out->coretype, sizeof out->coretype, "%s", forced ? forced : "");
    out->coretype_set = forced != NULL;
}
