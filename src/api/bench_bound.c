/* api/bench_bound: what `hyperpar bench` may claim about a peak and an MFU —
 * this machine's clock and physical cores (hp_cpu_clock_read), the floor and
 * ceiling they put on a measured peak (hp_bench_peak_settle), and an MFU that
 * is never a figure above 100% (hp_bench_mfu_get). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hyperpar/hyperpar.h>

/* A cpufreq file's kHz as GHz; 0 when absent or not a positive number. */
static double khz_file(const char *dir, const char *name) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char buf[64] = "";
    char *got = fgets(buf, sizeof buf, f);
    fclose(f);
    double khz = got ? strtod(buf, NULL) : 0;
    return khz > 0 && isfinite(khz) ? khz / 1e6 : 0;
}

/* The "@ 2.40GHz" (or MHz) of a model name line; 0 when there is none. */
static double model_name_ghz(const char *line) {
    const char *at = strrchr(line, '@');
    if (!at) return 0;
    char *end;
    double v = strtod(at + 1, &end);
    while (*end == ' ') end++;
    if (!(v > 0) || !isfinite(v)) return 0;
    if (!strncmp(end, "GHz", 3)) return v;
    if (!strncmp(end, "MHz", 3)) return v / 1e3;
    return 0;
}

/* A "key : value" line's value when its key is `key`, else NULL. */
static const char *field(const char *line, const char *key) {
    size_t n = strlen(key);
    if (strncmp(line, key, n)) return NULL;
    const char *p = line + n;
    while (*p == ' ' || *p == '\t') p++;
    return *p == ':' ? p + 1 : NULL;
}

enum { MAX_CORES = 4096 };

/* Reads the model name's clock and counts distinct (physical id, core id). */
static void read_cpuinfo(double *ghz, int *cores, int *have_model, const char *path) {
    *ghz = 0, *cores = 0, *have_model = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    int64_t *seen = malloc(sizeof(int64_t) * MAX_CORES), phys = 0;
    int n = 0, any_core = 0;
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        const char *v;
        if ((v = field(line, "model name"))) {
            *have_model = 1;
            if (*ghz == 0) *ghz = model_name_ghz(v);
        } else if ((v = field(line, "physical id"))) {
            phys = strtoll(v, NULL, 10);
        } else if ((v = field(line, "core id"))) {
            any_core = 1;
            int64_t key = phys * 1000003 + strtoll(v, NULL, 10);
            int k = 0;
            while (seen && k < n && seen[k] != key) k++;
            if (seen && k == n && n < MAX_CORES) seen[n++] = key;
        } else if (line[0] == '\n') {
            phys = 0; /* the next processor's block */
        }
    }
    fclose(f);
    *cores = seen && any_core ? n : 0;
    free(seen);
}

void hp_cpu_clock_read(hp_cpu_clock *c, const char *cpuinfo, const char *cpufreq_dir) {
    memset(c, 0, sizeof *c);
    if (!cpuinfo) cpuinfo = "/proc/cpuinfo";
    if (!cpufreq_dir) cpufreq_dir = "/sys/devices/system/cpu/cpu0/cpufreq";
    double model_ghz;
    int have_model;
    read_cpuinfo(&model_ghz, &c->cores, &have_model, cpuinfo);
    double base = khz_file(cpufreq_dir, "base_frequency");
    c->max_ghz = khz_file(cpufreq_dir, "cpuinfo_max_freq");
    c->base_ghz = base > 0 ? base : model_ghz;
    char b[112], m[48], n[32];
    if (c->base_ghz > 0)
        snprintf(b, sizeof b, "base %.2f GHz (%s)", c->base_ghz, base > 0 ? "cpufreq base_frequency" : "model name");
    else
        snprintf(b, sizeof b, "no base clock (no cpufreq base_frequency, %s)",
                 have_model ? "no '@ GHz' in the model name" : "no model name");
    if (c->max_ghz > 0)
        snprintf(m, sizeof m, "max %.2f GHz (cpufreq)", c->max_ghz);
    else
        snprintf(m, sizeof m, "no max clock (no cpufreq)");
    if (c->cores > 0)
        snprintf(n, sizeof n, "%d physical core%s", c->cores, c->cores > 1 ? "s" : "");
    else
        snprintf(n, sizeof n, "physical cores unknown");
    snprintf(c->source, sizeof c->source, "%s, %s, %s", b, m, n);
}

/* FLOPs one unit of the peak's instruction retires per cycle, and the most
 * such units a core has; 0 for an instruction without a known width. */
static double isa_flop_cycle(int *units, const char *isa) {
    static const struct {
        const char *isa;
        double flop;
        int units;
    } t[] = {{"avx512", 16 * 2, 2},
             {"avx2+fma", 8 * 2, 2},
             {"amx tdpbf16ps", 16 * 16 * 32 * 2 / 16, 1}, /* one 16x16x32 tile product per 16 cycles */
             {"avx512-bf16 vdpbf16ps", 16 * 2 * 2, 2}};
    for (size_t i = 0; isa && i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(isa, t[i].isa)) return *units = t[i].units, t[i].flop;
    *units = 0;
    return 0;
}

void hp_bench_peak_settle(hp_bench_peak *p, double measured, const char *isa, int threads, const hp_cpu_clock *clock) {
    memset(p, 0, sizeof *p);
    hp_cpu_clock own;
    if (!clock) hp_cpu_clock_read(&own, NULL, NULL), clock = &own;
    p->measured = measured > 0 && isfinite(measured) ? measured : 0;
    int units;
    double fc = isa_flop_cycle(&units, isa);
    int cores = clock->cores < threads ? clock->cores : threads;
    char fl[128] = "", ce[128] = "";
    if (fc > 0 && cores > 0 && clock->base_ghz > 0) {
        p->floor = cores * clock->base_ghz * fc;
        snprintf(fl, sizeof fl, "%d core%s x %.2f GHz base x %.0f FLOP/cycle", cores, cores > 1 ? "s" : "",
                 clock->base_ghz, fc);
    }
    if (fc > 0 && threads > 0 && clock->max_ghz > 0) {
        p->ceiling = threads * clock->max_ghz * fc * units;
        snprintf(ce, sizeof ce, "%d thread%s x %.2f GHz max x %.0f FLOP/cycle x %d unit%s", threads,
                 threads > 1 ? "s" : "", clock->max_ghz, fc, units, units > 1 ? "s" : "");
    }
    p->peak = p->measured > p->floor ? p->measured : p->floor;
    int n = 0;
    size_t cap = sizeof p->note;
    if (p->floor > p->measured)
        n = snprintf(p->note, cap, "the floor %.1f (%s), above the measured best %.1f", p->floor, fl, p->measured);
    else if (p->floor > 0)
        n = snprintf(p->note, cap, "measured, best of the runs; floor %.1f (%s)", p->floor, fl);
    else
        n = snprintf(p->note, cap, "measured, best of the runs; no floor: %s",
                     fc > 0 ? clock->source : "no known width for this instruction");
    if (n < 0 || (size_t)n >= cap) return;
    if (p->ceiling > 0 && p->measured > p->ceiling)
        snprintf(p->note + n, cap - (size_t)n, "; above the ceiling %.1f (%s): the max clock reported is doubtful",
                 p->ceiling, ce);
    else if (p->ceiling > 0)
        snprintf(p->note + n, cap - (size_t)n, "; ceiling %.1f", p->ceiling);
}

void hp_bench_mfu_get(hp_bench_mfu *m, double achieved_gflops, double peak_gflops) {
    memset(m, 0, sizeof *m);
    if (!(peak_gflops > 0) || !isfinite(peak_gflops) || !(achieved_gflops >= 0) || !isfinite(achieved_gflops))
        snprintf(m->note, sizeof m->note, "no peak to take MFU against");
    else if (achieved_gflops > peak_gflops)
        snprintf(m->note, sizeof m->note, "peak under-measured: achieved %.1f GFLOP/s is above the peak %.1f",
                 achieved_gflops, peak_gflops);
    else {
        m->known = 1, m->mfu = achieved_gflops / peak_gflops;
        snprintf(m->cell, sizeof m->cell, "%.1f%%", 100 * m->mfu);
        snprintf(m->json, sizeof m->json, "\"mfu\": %.4f", m->mfu);
        return;
    }
    snprintf(m->cell, sizeof m->cell, "n/a");
    snprintf(m->json, sizeof m->json, "\"mfu\": null, \"mfu_note\": \"%s\"", m->note);
}
