/* kernels/isa: cpuid feature detection and the portable-path switch. */
#include "kernels/isa.h"

#include <cpuid.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

void hp_cpu_features_get(hp_cpu_features *f) {
    memset(f, 0, sizeof *f);
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1;
    uint64_t xcr0 = osxsave ? xgetbv0() : 0;
    int os_ymm = (xcr0 & 0x6) == 0x6, os_zmm = (xcr0 & 0xe6) == 0xe6;
    int os_tile = (xcr0 & 0x60000) == 0x60000;
    if (__get_cpuid_max(0, NULL) < 7) return;
    __cpuid_count(7, 0, a, b, c, d);
    unsigned b7 = b, d7 = d, max7 = a;
    f->avx2 = avx && os_ymm && ((b7 >> 5) & 1);
    f->fma = avx && os_ymm && fma;
    f->avx512f = os_zmm && ((b7 >> 16) & 1);
    f->avx512bw = f->avx512f && ((b7 >> 30) & 1);
    f->avx512vl = f->avx512f && ((b7 >> 31) & 1);
    f->amx_tile = os_tile && ((d7 >> 24) & 1);
    f->amx_bf16 = f->amx_tile && ((d7 >> 22) & 1);
    if (max7 >= 1) {
        __cpuid_count(7, 1, a, b, c, d);
        f->avx512_bf16 = f->avx512bw && f->avx512vl && ((a >> 5) & 1);
    }
}

hp_isa hp_cpu_best_isa(void) {
    hp_cpu_features f;
    hp_cpu_features_get(&f);
    if (f.amx_bf16) return HP_ISA_AMX;
    if (f.avx512_bf16) return HP_ISA_AVX512_BF16;
    if (f.avx512f && f.avx512bw && f.avx512vl) return HP_ISA_AVX512;
    if (f.avx2 && f.fma) return HP_ISA_AVX2;
    return HP_ISA_PORTABLE;
}

const char *hp_isa_name(hp_isa isa) {
    switch (isa) {
    case HP_ISA_AMX: return "amx";
    case HP_ISA_AVX512_BF16: return "avx512-bf16";
    case HP_ISA_AVX512: return "avx512";
    case HP_ISA_AVX2: return "avx2";
    default: return "portable";
    }
}

/* -1: not yet read from the environment; 0 / 1 afterwards. */
static atomic_int portable_switch = -1;

void hp_kernels_set_portable(int on) { atomic_store(&portable_switch, on ? 1 : 0); }

int hp_kernels_portable(void) {
    int v = atomic_load_explicit(&portable_switch, memory_order_relaxed);
    if (v < 0) {
        const char *e = getenv("HP_KERNELS_PORTABLE");
        int want = e && e[0] && strcmp(e, "0") != 0;
        int expect = -1;
        atomic_compare_exchange_strong(&portable_switch, &expect, want);
        v = atomic_load(&portable_switch);
    }
    return v;
}

/* The CPU's answer is a constant of the process, read once: cpuid is slow
 * (under a hypervisor it traps, microseconds each), and the kernels ask per
 * row. -1: not read yet; else 1 with AVX512-BF16, 0 without. */
static atomic_int cpu_has_bf16 = -1;

hp_isa hp_kernels_bf16_cvt_isa(void) {
    if (hp_kernels_portable()) return HP_ISA_PORTABLE;
    int v = atomic_load_explicit(&cpu_has_bf16, memory_order_relaxed);
    if (v < 0) {
        hp_cpu_features f;
        hp_cpu_features_get(&f);
        v = f.avx512_bf16 ? 1 : 0;
        atomic_store(&cpu_has_bf16, v);
    }
    return v ? HP_ISA_AVX512_BF16 : HP_ISA_PORTABLE;
}

hp_isa hp_kernels_compiled_isa(void) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
    return HP_ISA_AVX512;
#elif defined(__AVX2__) && defined(__FMA__)
    return HP_ISA_AVX2;
#else
    return HP_ISA_PORTABLE;
#endif
}

