/* kernels/isa_report: which ISA each kernel family uses (the start-up report):
 * OpenBLAS's core name, the implementations oneDNN picks for probe matmuls,
 * the bf16 conversions' path and the compiled vector width. */
#include <cblas.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "kernels/gemm.h"
#include "kernels/isa.h"

/* OpenBLAS names its kernels by CPU (SkylakeX, Cooperlake, Haswell, Zen, ...). */
static hp_isa openblas_isa(const char *core) {
    static const char *avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
    static const char *avx2[] = {"Haswell", "Zen", "SkylakeX-AVX2"};
    for (size_t i = 0; i < sizeof avx512 / sizeof avx512[0]; i++)
        if (!strcasecmp(core, avx512[i])) return HP_ISA_AVX512;
    for (size_t i = 0; i < sizeof avx2 / sizeof avx2[0]; i++)
        if (!strcasecmp(core, avx2[i])) return HP_ISA_AVX2;
    return HP_ISA_PORTABLE;
}

static void row(hp_kernels_isa_row *r, const char *family, hp_isa isa, const char *detail) {
    snprintf(r->family, sizeof r->family, "%s", family);
    snprintf(r->isa, sizeof r->isa, "%s", hp_isa_name(isa));
    snprintf(r->detail, sizeof r->detail, "%s", detail);
}

int hp_kernels_isa_report(hp_kernels_isa_row *rows) {
    int n = 0;
    char *core = openblas_get_corename();
    row(&rows[n++], "gemm fp32 (OpenBLAS)", openblas_isa(core ? core : ""), core ? core : "?");
    hp_gemm_ctx *ctx = NULL;
    hp_status st = hp_gemm_ctx_create(&ctx, NULL);
    for (int k = 0; k < 2; k++) {
        const char *fam = k ? "gemm bf16 (oneDNN)" : "gemm fp32 (oneDNN)";
        char impl[96] = "unavailable";
        hp_isa isa = HP_ISA_PORTABLE;
        if (!st) {
            hp_dtype t = k ? HP_BF16 : HP_F32;
            hp_gemm_desc d = {.M = 64, .N = 64, .K = 64, .a = t, .b = t, .c = HP_F32};
            hp_gemm *g = NULL;
            hp_status s2 = hp_gemm_prepare(&g, ctx, &d);
            if (s2) {
                snprintf(impl, sizeof impl, "unavailable: %s", hp_status_msg(s2));
                hp_status_free(s2);
            } else {
                snprintf(impl, sizeof impl, "%s", hp_gemm_impl(g));
                isa = hp_gemm_isa(g);
                hp_gemm_free(g);
            }
        }
        row(&rows[n++], fam, isa, impl);
    }
    if (st) hp_status_free(st);
    hp_gemm_ctx_destroy(ctx);
    hp_isa cvt = hp_kernels_bf16_cvt_isa();
    row(&rows[n++], "bf16 conversions", cvt,
        cvt == HP_ISA_AVX512_BF16 ? "vcvtneps2bf16 (+ integer rounding of denormals)"
        : hp_kernels_portable()   ? "integer round-to-nearest-even (forced portable)"
                                  : "integer round-to-nearest-even");
    row(&rows[n++], "hand-written fp32", hp_kernels_compiled_isa(), "compiler-vectorised C");
    row(&rows[n++], "hand-written bf16", hp_kernels_compiled_isa(),
        "fp32 compute on widened rows; conversions as above");
    return n;
}
