/* kernels/isa: what this CPU offers (cpuid and the OS's saved register
 * state, read at run time: nothing here assumes AVX-512, AVX512-BF16 or AMX)
 * and which instruction set each kernel family uses, for the start-up report.
 *
 * The one process-wide switch of the kernels lives here: the portable path.
 * When it is on (HP_KERNELS_PORTABLE=1 in the environment, read once at the
 * first query, or hp_kernels_set_portable(1)), the bf16 kernels use their
 * portable conversions even where AVX512-BF16 is present. Both paths give
 * bit-identical results (tests/kernels/test_kernels_bf16 checks it), so the
 * switch changes speed, never values. oneDNN's own dispatch is capped by its
 * environment variable ONEDNN_MAX_CPU_ISA (e.g. AVX2), read by oneDNN. */
#ifndef HP_KERNELS_ISA_H
#define HP_KERNELS_ISA_H

typedef enum {
    HP_ISA_PORTABLE = 0, /* plain C, no vector extension assumed */
    HP_ISA_AVX2 = 1,     /* AVX2 + FMA */
    HP_ISA_AVX512 = 2,   /* AVX-512 F/BW/VL */
    HP_ISA_AVX512_BF16 = 3,
    HP_ISA_AMX = 4 /* AMX tiles (bf16) */
} hp_isa;

typedef struct {
    int avx2, fma;                  /* and the OS saves ymm state */
    int avx512f, avx512bw, avx512vl; /* and the OS saves zmm state */
    int avx512_bf16;                /* vcvtneps2bf16, vdpbf16ps */
    int amx_tile, amx_bf16;         /* and the OS enables tile state (XCR0 17, 18) */
} hp_cpu_features;

/* This CPU's features (cpuid + xgetbv; cheap, no caching needed). */
void hp_cpu_features_get(hp_cpu_features *f);
/* The best of hp_isa this CPU and OS support. */
hp_isa hp_cpu_best_isa(void);
/* The ISA of OpenBLAS's kernels of this core name (SkylakeX, Haswell, ...). */
hp_isa hp_openblas_core_isa(const char *core);
/* "amx", "avx512-bf16", "avx512", "avx2", "portable". */
const char *hp_isa_name(hp_isa isa);

/* The portable-path switch (see the header comment). */
void hp_kernels_set_portable(int on);
int hp_kernels_portable(void);
/* The ISA the bf16 conversions of the hand-written kernels use now:
 * HP_ISA_AVX512_BF16 where present and not forced portable, else portable. */
hp_isa hp_kernels_bf16_cvt_isa(void);
/* The widest vectors the hand-written fp32 kernels were compiled for (the
 * release build targets an x86-64 ISA level, e.g. x86-64-v4; the sanitizer
 * build does not). */
hp_isa hp_kernels_compiled_isa(void);

/* One row of the start-up report: a kernel family and what it runs on. */
typedef struct {
    char family[32]; /* "gemm fp32 (OpenBLAS)", "gemm bf16 (oneDNN)", ... */
    char isa[16];    /* hp_isa_name of the ISA it uses */
    char detail[96]; /* the implementation's own name (OpenBLAS core, oneDNN impl) */
} hp_kernels_isa_row;
#define HP_KERNELS_ISA_ROWS 6
/* Fills rows[HP_KERNELS_ISA_ROWS]; asks oneDNN which implementation it picks
 * for a small probe matmul of each dtype (primitives created on a context of
 * its own, freed before it returns). Returns the number of rows filled. */
int hp_kernels_isa_report(hp_kernels_isa_row *rows);

#endif
