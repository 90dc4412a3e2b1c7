/* kernels/blas_init: pins OpenBLAS to one thread per caller, so the engine's
 * pool alone decides how many cores a rank uses; and gives OpenBLAS the
 * kernels of this CPU's ISA where its own detection fell short.
 *
 * OpenBLAS (a DYNAMIC_ARCH build, as Debian's) picks its kernels by CPU model
 * when the library loads. A model newer than the library (Debian 12's 0.3.21
 * on an Intel Xeon of model 207) gets the generic Prescott (SSE3) kernels:
 * fp32 training ran at 13% of the FMA peak there. So when OPENBLAS_CORETYPE is
 * not set and OpenBLAS's kernels use less than the CPU offers, the table is
 * re-initialised once, before any BLAS call, with the kernels OpenBLAS has
 * for that ISA: Cooperlake (AVX-512 with AVX512-BF16: what it picks itself on
 * an AMD Zen 4), SkylakeX (AVX-512), Haswell (AVX2 + FMA). A set
 * OPENBLAS_CORETYPE is left alone. */
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "kernels/isa.h"
#include "kernels/kernels.h"

/* OpenBLAS's dynamic-architecture entry points (exported by DYNAMIC_ARCH
 * builds; weak, so a build without them links and is left as it is). */
extern void gotoblas_dynamic_init(void) __attribute__((weak));
extern void gotoblas_dynamic_quit(void) __attribute__((weak));

static char g_note[160]; /* what hp_kernels_init changed (empty: nothing) */

hp_isa hp_openblas_core_isa(const char *core) {
    static const char *avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
    static const char *avx2[] = {"Haswell", "Zen", "SkylakeX-AVX2"};
    for (size_t i = 0; core && i < sizeof avx512 / sizeof avx512[0]; i++)
        if (!strcasecmp(core, avx512[i])) return HP_ISA_AVX512;
    for (size_t i = 0; core && i < sizeof avx2 / sizeof avx2[0]; i++)
        if (!strcasecmp(core, avx2[i])) return HP_ISA_AVX2;
    return HP_ISA_PORTABLE;
}

const char *hp_kernels_openblas_note(void) { return g_note; }

/* Once per process (the first hp_kernels_init, before any BLAS call). */
static void choose_core(void) {
    if (getenv("OPENBLAS_CORETYPE") || !gotoblas_dynamic_init || !gotoblas_dynamic_quit) return;
    hp_cpu_features f;
    hp_cpu_features_get(&f);
    const char *want = f.avx512f && f.avx512bw && f.avx512vl ? (f.avx512_bf16 ? "Cooperlake" : "SkylakeX")
                       : f.avx2 && f.fma                     ? "Haswell"
                                                             : NULL;
    char was[32];
    snprintf(was, sizeof was, "%s", openblas_get_corename());
    if (!want || hp_openblas_core_isa(was) >= hp_openblas_core_isa(want)) return;
    setenv("OPENBLAS_CORETYPE", want, 1); /* read by the re-initialisation only, then removed */
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    unsetenv("OPENBLAS_CORETYPE");
    snprintf(g_note, sizeof g_note, "set by hyperpar; OpenBLAS chose %.24s", was);
}

void hp_kernels_init(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, choose_core);
    openblas_set_num_threads(1);
}
