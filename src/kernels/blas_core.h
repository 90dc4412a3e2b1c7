/* kernels/blas_core: which kernels OpenBLAS runs, for reports — the core
 * name it runs (after hp_kernels_init's own choice, kernels/blas_init) and
 * the core type the environment forces (OPENBLAS_CORETYPE). */
#ifndef HP_KERNELS_BLAS_CORE_H
#define HP_KERNELS_BLAS_CORE_H

typedef struct {
    char core[64];     /* OpenBLAS's core name ("?" when it gives none) */
    char coretype[64]; /* OPENBLAS_CORETYPE's value ("" when unset) */
    int coretype_set;  /* 1: OPENBLAS_CORETYPE is set */
} hp_blas_core;

/* Runs hp_kernels_init first (once per process), as the programs will. */
void hp_blas_core_read(hp_blas_core *out);

#endif
