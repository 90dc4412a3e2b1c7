/* api/calibrate: hp_calibrate — `hyperpar calibrate`'s library side. It
 * checks the options, measures the kernels (api/calibrate_kernels), the
 * collectives (api/calibrate_comm) and then the peaks (bench_peak's FMA peak;
 * the bf16 instruction peak, else oneDNN's bf16 matmul peak, as `hyperpar
 * bench --dtype bf16` takes MFU against; settled as bench settles them), and
 * autopar/calibrate turns the measurements into a profile, its JSON and the
 * printed table; hp_calibration_write writes the profile atomically, and
 * hp_calibration_check_file reads one back. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "api/calibrate.h"
#include "autopar/calibrate.h"
#include "autopar/profile.h"
#include "io/fsutil.h"

struct hp_calibration {
    hp_calib_data data;
    hp_profile profile;
    char *table, *json;
};

void hp_calibrate_options_default(hp_calibrate_options *o) {
    memset(o, 0, sizeof *o);
    o->inter_bw_gbps = 1;
    o->inter_latency_us = 20;
}

/* The CPUs this process may run on. */
static int cpus_allowed(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static hp_status peaks(hp_calib_data *d) {
    const char *isa = "";
    double measured = 0;
    if (d->quick) {
        hp_bench_fma_isa(&isa);
        HP_TRY(hp_api_fma_peak(&measured, d->threads, 2, 10));
    } else {
        HP_TRY(hp_bench_fma_peak(&measured, &isa, d->threads));
    }
    hp_bench_peak pk;
    hp_bench_peak_settle(&pk, measured, isa, d->threads, NULL);
    d->peak_fp32_gflops = pk.peak;
    snprintf(d->peak_fp32_how, sizeof d->peak_fp32_how, "%s FMA, measured %.1f", isa, measured);
    HP_TRY(hp_bench_bf16_insn_peak(&measured, &isa, d->threads));
    if (measured > 0) {
        hp_bench_peak_settle(&pk, measured, isa, d->threads, NULL);
        d->peak_bf16_gflops = pk.peak;
        snprintf(d->peak_bf16_how, sizeof d->peak_bf16_how, "%s, measured %.1f", isa, measured);
        return HP_OK;
    }
    char impl[64];
    HP_TRY(hp_bench_bf16_peak(&measured, &isa, impl, d->threads));
    if (!(measured > 0)) return hp_errorf("calibrate: the bf16 matmul peak measured %g GFLOP/s", measured);
    d->peak_bf16_gflops = measured;
    snprintf(d->peak_bf16_how, sizeof d->peak_bf16_how, "no bf16 instructions: %s bf16 matmul (%s)", isa, impl);
    return HP_OK;
}

static hp_status check_options(const hp_calibrate_options *o, int *threads) {
    *threads = o->threads ? o->threads : cpus_allowed();
    if (*threads < 1 || *threads > 256) return hp_errorf("calibrate: threads must be in 1..256, got %d", *threads);
    if (!(o->inter_bw_gbps >= 0) || !(o->inter_latency_us >= 0) || o->inter_bw_gbps > 1e6 ||
        o->inter_latency_us > 1e6)
        return hp_errorf("calibrate: the inter link's bandwidth (%g GB/s) and latency (%g us) must be in 0..1e6",
                         o->inter_bw_gbps, o->inter_latency_us);
    if (o->sizes) HP_TRY(hp_api_calib_sizes_check(o->sizes, o->nsizes));
    const char *m = o->machine ? o->machine : "local";
    if (!*m || strlen(m) >= HP_PROFILE_NAME_MAX) return hp_errorf("calibrate: machine name '%.80s': 1..63 bytes", m);
    for (const char *c = m; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
              *c == '_' || *c == '-'))
            return hp_errorf("calibrate: machine name '%s' has '%c' (letters, digits, '.', '_' and '-' only)", m, *c);
    return HP_OK;
}

static hp_status run(hp_calibration *c, const hp_calibrate_options *o) {
    hp_calib_data *d = &c->data;
    HP_TRY(check_options(o, &d->threads));
    snprintf(d->machine, sizeof d->machine, "%s", o->machine ? o->machine : "local");
    hp_cpu_model(d->cpu, sizeof d->cpu);
    d->quick = o->quick;
    d->repeats = o->quick ? 3 : 9;
    d->inter_bw_gbps = o->inter_bw_gbps, d->inter_latency_us = o->inter_latency_us;
    static const int64_t full[] = {4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20};
    static const int64_t quick[] = {4 << 10, 64 << 10, 1 << 20};
    const int64_t *sizes = o->sizes ? o->sizes : o->quick ? quick : full;
    int nsizes = o->sizes ? o->nsizes : o->quick ? 3 : 7;
    /* the peaks last: the bf16 matmul peak leaves oneDNN's OpenMP threads behind */
    HP_TRY(hp_api_calib_kernels(d));
    HP_TRY(hp_api_calib_step(d));
    HP_TRY(hp_api_calib_comm(d, sizes, nsizes));
    HP_TRY(peaks(d));
    HP_TRY(hp_calib_profile(&c->profile, d));
    size_t n = hp_calib_table(NULL, 0, d, &c->profile);
    size_t m = hp_profile_print(NULL, 0, &c->profile);
    c->table = malloc(n + 1), c->json = malloc(m + 1);
    if (!c->table || !c->json) return hp_errorf("calibrate: out of memory for the table and the profile");
    hp_calib_table(c->table, n + 1, d, &c->profile);
    hp_profile_print(c->json, m + 1, &c->profile);
    return HP_OK;
}

hp_status hp_calibrate(hp_calibration **out, const hp_calibrate_options *o) {
    *out = NULL;
    hp_calibration *c = calloc(1, sizeof *c);
    if (!c) return hp_errorf("calibrate: out of memory");
    hp_status st = run(c, o);
    if (st) {
        hp_calibration_free(c);
        return st;
    }
    *out = c;
    return HP_OK;
}

const char *hp_calibration_table(const hp_calibration *c) { return c->table; }
const char *hp_calibration_json(const hp_calibration *c) { return c->json; }

hp_status hp_calibration_write(const hp_calibration *c, const char *path) {
    hp_status st = hp_fs_write_atomic(path, c->json, strlen(c->json));
    return st ? hp_error_wrap(st, "calibrate: writing the profile") : HP_OK;
}

void hp_calibration_free(hp_calibration *c) {
    if (!c) return;
    hp_profile_free(&c->profile);
    free(c->table);
    free(c->json);
    free(c);
}

hp_status hp_calibration_check_file(const char *path, int *kernels, int *collectives) {
    *kernels = *collectives = 0;
    hp_profile p;
    HP_TRY(hp_profile_load(&p, path));
    for (int f = 0; f < HP_PROF_NFAMILIES; f++)
        for (int d = 0; d < HP_PROF_NDTYPES; d++)
            for (int b = 0; b < HP_PROF_NBUCKETS; b++) *kernels += p.kernel[f][d][b].given;
    for (int t = 0; t < HP_PROF_NTIERS; t++)
        for (int k = 0; k < HP_PROF_NKINDS; k++) *collectives += p.coll[t][k].given;
    hp_profile_free(&p);
    return HP_OK;
}
