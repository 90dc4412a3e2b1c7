/* api/bench_peak16: hp_bench_bf16_insn_peak — this machine's bf16 peak as
 * instruction throughput (GFLOP/s), the bf16 counterpart of bench_peak's FMA
 * peak: AMX tile dot products (TDPBF16PS) where the CPU and the OS offer
 * tiles, else AVX512-BF16 dot products (VDPBF16PS), else none. Every thread of
 * a pool (core/pool) runs independent accumulators on data held in registers
 * or tiles, so the loop measures the execution units, not memory.
 *
 * Both loops are compiled with target attributes and only called after
 * kernels/isa has seen the feature at run time; AMX also needs the kernel's
 * permission to use tile data (arch_prctl ARCH_REQ_XCOMP_PERM, asked once per
 * process; oneDNN asks the same). */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "api/api.h"
#include "core/pool.h"
#include "kernels/isa.h"

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

typedef struct {
    int kind; /* 2 AMX, 1 AVX512-BF16 */
    long iters;
    double flops[256];
} peak16_ctx;

/* 64-byte tile configuration (palette 1): bytes 16..47 hold each tile's bytes
 * per row, bytes 48..63 its rows. */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

#if defined(__x86_64__) && defined(__GNUC__)
/* Four 16x16 fp32 accumulators (tiles 0-3) from two A tiles (4, 5) and two B
 * tiles (6, 7), each 16 rows of 64 bytes: one TDPBF16PS is 16*16*32 bf16
 * multiply-adds = 16384 FLOP, and the four are independent. */
__attribute__((target("amx-tile,amx-bf16"))) static double amx_loop(long iters) {
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16;
    static const uint16_t ab[16 * 32] = {0}; /* zeros: the timing does not depend on the values */
    _tile_loadconfig(&cfg);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, ab, 64);
    _tile_loadd(5, ab, 64);
    _tile_loadd(6, ab, 64);
    _tile_loadd(7, ab, 64);
    for (long i = 0; i < iters; i++) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    float out[16 * 16];
    _tile_stored(0, out, 64);
    _tile_release();
    return (double)iters * 4 * 16 * 16 * 32 * 2 + (out[0] == 12345.0f);
}

/* 12 independent VDPBF16PS chains: each is 16 lanes x 2 bf16 pairs = 64 FLOP. */
__attribute__((target("avx512f,avx512bf16"))) static double dp_loop(long iters) {
    __m512 acc[12];
    __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3380);
    for (int k = 0; k < 12; k++) acc[k] = _mm512_set1_ps((float)k);
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < 12; k++) acc[k] = _mm512_dpbf16_ps(acc[k], x, y);
    __m512 s = acc[0];
    for (int k = 1; k < 12; k++) s = _mm512_add_ps(s, acc[k]);
    float out[16];
    _mm512_storeu_ps(out, s);
    return (double)iters * 12 * 16 * 2 * 2 + (out[0] == 12345.0f);
}
#endif

static void peak16_task(void *c_, int tid, int nt) {
    peak16_ctx *c = c_;
    (void)nt;
#if defined(__x86_64__) && defined(__GNUC__)
    c->flops[tid] = c->kind == 2 ? amx_loop(c->iters) : dp_loop(c->iters);
#else
    c->flops[tid] = 0;
#endif
}

hp_status hp_bench_bf16_insn_peak(double *gflops, const char **isa, int threads) {
    *gflops = 0, *isa = "none";
    if (threads < 1 || threads > 256) return hp_errorf("hp_bench_bf16_insn_peak: threads must be in 1..256, got %d", threads);
    hp_cpu_features f;
    hp_cpu_features_get(&f);
    peak16_ctx c;
    memset(&c, 0, sizeof c);
    if (f.amx_bf16 && syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0)
        c.kind = 2, c.iters = 100000, *isa = "amx tdpbf16ps";
    else if (f.avx512_bf16)
        c.kind = 1, c.iters = 2000000, *isa = "avx512-bf16 vdpbf16ps";
    else
        return HP_OK; /* no bf16 instruction: the bf16 products run widened to fp32 */
    /* as the FMA peak: the best of several short runs spread over about a second */
    return hp_api_pool_peak(gflops, threads, peak16_task, &c, c.flops, 8, 1, 100);
}
