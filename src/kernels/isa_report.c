/* kernels/isa_report: which ISA each kernel family uses (the start-up report):
 * OpenBLAS's core name, the implementations oneDNN picks for probe matmuls,
 * the bf16 conversions' path and the compiled vector width. */
#include <cblas.h>
#include <stdio.h>
#include <string.h>

#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/kernels.h"

static void row(hp_kernels_isa_row *r, const char *family, hp_isa isa, const char *detail) {
    snprintf(r->family, sizeof r->family, "%s", family);
    snprintf(r->isa, sizeof r->isa, "%s", hp_isa_name(isa));
    snprintf(r->detail, sizeof r->detail, "%s", detail);
}

int hp_kernels_isa_report(hp_kernels_isa_row *rows) {
    int n = 0;
    hp_kernels_init(); /* OpenBLAS's kernels as the programs will have them */
    char *core = openblas_get_corename();
    char detail[96];
    const char *note = hp_kernels_openblas_note();
    snprintf(detail, sizeof detail, "%.24s%s%.60s%s", core ? core : "?", note[0] ? " (" : "", note, note[0] ? ")" : "");
    row(&rows[n++], "gemm fp32 (OpenBLAS)", hp_openblas_core_isa(core), detail);
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
