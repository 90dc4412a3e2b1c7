/* tests/api/test_bench_mfu: the figures `hyperpar bench` may print about a
 * peak and an MFU (issue 21, item 7: a busy machine gave a peak of 119.8
 * GFLOP/s below the achieved 145, and MFU 121% was printed). hp_bench_mfu_get
 * never gives a figure above 100%, neither as the table's cell nor as the
 * JSON field (null and a note instead); hp_bench_peak_settle raises a measured
 * peak to the clock's floor and never lowers it; hp_cpu_clock_read takes the
 * clock from cpufreq or the model name's "@ GHz", and says so when neither
 * exists (KVM guests). All on fixed inputs: nothing here is timed. */
#include <hyperpar/hyperpar.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_check.h"

/* The MFU as the table cell and the JSON field give it; -1 where not a figure. */
static double cell_value(const hp_bench_mfu *m) {
    char *end;
    double v = strtod(m->cell, &end);
    return end != m->cell && !strcmp(end, "%") ? v / 100 : -1;
}
static double json_value(const hp_bench_mfu *m) {
    const char *p = strstr(m->json, "\"mfu\": ");
    if (!p) return -2;
    p += 7;
    if (!strncmp(p, "null", 4)) return -1;
    return strtod(p, NULL);
}

static void test_mfu(void) {
    hp_bench_mfu m;
    /* the case */
    hp_bench_mfu_get(&m, 145.0, 119.8);
    CHECK(!m.known && m.mfu == 0 && !strcmp(m.cell, "n/a"));
    CHECK(strstr(m.json, "\"mfu\": null, \"mfu_note\": \"peak under-measured") != NULL);
    CHECK(strstr(m.note, "145.0") && strstr(m.note, "119.8") && !strchr(m.note, '"'));
    /* a real figure below the peak, in both forms */
    hp_bench_mfu_get(&m, 145.0, 228.0);
    CHECK(m.known && !strcmp(m.cell, "63.6%") && !strcmp(m.json, "\"mfu\": 0.6360") && !m.note[0]);
    hp_bench_mfu_get(&m, 228.0, 228.0);
    CHECK(m.known && !strcmp(m.cell, "100.0%") && !strcmp(m.json, "\"mfu\": 1.0000"));
    /* no peak at all */
    hp_bench_mfu_get(&m, 10.0, 0.0);
    CHECK(!m.known && !strcmp(m.cell, "n/a") && strstr(m.json, "null"));
    /* a sweep around the peak: never a figure above 1 */
    int figures = 0, nas = 0;
    for (int i = 0; i <= 400; i++) {
        double peak = 100.0, achieved = peak * (0.9 + i * 0.0005); /* 0.9 .. 1.1 of the peak */
        hp_bench_mfu_get(&m, achieved, peak);
        double c = cell_value(&m), j = json_value(&m);
        CHECK(c <= 1.0 && j <= 1.0 && j != -2);
        CHECK(m.known == (achieved <= peak) && (c >= 0) == m.known && (j >= 0) == m.known);
        figures += m.known, nas += !m.known;
    }
    CHECK(figures > 100 && nas > 100);
}

static void test_settle(void) {
    hp_cpu_clock ck = {2.4, 3.7, 2, "test"};
    hp_bench_peak p;
    /* a busy machine measured 119.8: the floor, 2 cores x 2.4 GHz x 32 FLOP/cycle, wins */
    hp_bench_peak_settle(&p, 119.8, "avx512", 2, &ck);
    CHECK(p.measured == 119.8 && p.floor > 153.59 && p.floor < 153.61 && p.peak == p.floor);
    CHECK(p.ceiling > 2 * 3.7 * 64 - 0.01 && p.ceiling < 2 * 3.7 * 64 + 0.01);
    CHECK(strstr(p.note, "floor 153.6") && strstr(p.note, "2 cores x 2.40 GHz base x 32 FLOP/cycle"));
    hp_bench_mfu m;
    hp_bench_mfu_get(&m, 145.0, p.peak);
    CHECK(m.known && m.mfu > 0.94 && m.mfu < 0.95);
    /* a quiet machine measures above the floor: the measured best stands */
    hp_bench_peak_settle(&p, 228.0, "avx512", 2, &ck);
    CHECK(p.peak == 228.0 && strstr(p.note, "measured"));
    /* more threads than cores: the floor counts the cores; avx2 is 16 FLOP/cycle */
    hp_bench_peak_settle(&p, 10.0, "avx2+fma", 8, &ck);
    CHECK(p.floor > 76.79 && p.floor < 76.81 && p.ceiling > 8 * 3.7 * 32 - 0.01);
    /* above the ceiling: flagged, and the peak is never lowered (that would raise MFU) */
    hp_bench_peak_settle(&p, 1000.0, "avx512", 2, &ck);
    CHECK(p.peak == 1000.0 && strstr(p.note, "doubtful"));
    /* bf16 instructions: AMX 1024 FLOP/cycle, vdpbf16ps 64 */
    hp_bench_peak_settle(&p, 100.0, "amx tdpbf16ps", 1, &ck);
    CHECK(p.floor > 2457.5 && p.floor < 2457.7 && p.peak == p.floor);
    hp_bench_peak_settle(&p, 100.0, "avx512-bf16 vdpbf16ps", 1, &ck);
    CHECK(p.floor > 153.5 && p.floor < 153.7);
    /* no clock (a KVM guest): no floor, the measured best, and the note says why */
    hp_cpu_clock none = {0, 0, 2, "no base clock (no cpufreq base_frequency, no '@ GHz' in the model name)"};
    hp_bench_peak_settle(&p, 119.8, "avx512", 2, &none);
    CHECK(p.floor == 0 && p.ceiling == 0 && p.peak == 119.8 && strstr(p.note, "no floor") &&
          strstr(p.note, "no '@ GHz'"));
    hp_bench_mfu_get(&m, 145.0, p.peak);
    CHECK(!m.known && !strcmp(m.cell, "n/a"));
    /* an instruction without a known width (the portable loop, oneDNN's matmul) */
    hp_bench_peak_settle(&p, 50.0, "scalar", 2, &ck);
    CHECK(p.floor == 0 && p.ceiling == 0 && p.peak == 50.0 && strstr(p.note, "no known width"));
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void test_clock(const char *dir) {
    char info[300], freq[300], path[340];
    snprintf(info, sizeof info, "%s/cpuinfo", dir);
    snprintf(freq, sizeof freq, "%s/cpufreq", dir);
    /* two packages of two cores with two threads each: 4 physical cores */
    char text[4096] = "";
    for (int cpu = 0; cpu < 8; cpu++) {
        char block[400];
        snprintf(block, sizeof block,
                 "processor\t: %d\nmodel name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz\nphysical id\t: %d\n"
                 "siblings\t: 4\ncore id\t\t: %d\ncpu cores\t: 2\nflags\t\t: fpu fma avx2\n\n",
                 cpu, cpu / 4, cpu % 2);
        strcat(text, block);
    }
    write_file(info, text);
    hp_cpu_clock c;
    hp_cpu_clock_read(&c, info, freq); /* no cpufreq directory */
    CHECK(c.base_ghz == 2.4 && c.max_ghz == 0 && c.cores == 4);
    CHECK(!strcmp(c.source, "base 2.40 GHz (model name), no max clock (no cpufreq), 4 physical cores"));
    if (mkdir(freq, 0755) != 0) {
        CHECK(!"mkdir cpufreq");
        return;
    }
    snprintf(path, sizeof path, "%s/cpuinfo_max_freq", freq);
    write_file(path, "3700000\n");
    hp_cpu_clock_read(&c, info, freq);
    CHECK(c.base_ghz == 2.4 && c.max_ghz > 3.6999 && c.max_ghz < 3.7001);
    snprintf(path, sizeof path, "%s/base_frequency", freq);
    write_file(path, "2100000\n");
    hp_cpu_clock_read(&c, info, freq); /* cpufreq's base clock before the model name's */
    CHECK(c.base_ghz > 2.0999 && c.base_ghz < 2.1001 && strstr(c.source, "cpufreq base_frequency"));
    remove(path);
    snprintf(path, sizeof path, "%s/cpuinfo_max_freq", freq);
    remove(path);
    rmdir(freq);
    /* a KVM guest: "AMD EPYC", no clock anywhere */
    write_file(info, "processor\t: 0\nmodel name\t: AMD EPYC\nphysical id\t: 0\ncore id\t\t: 0\n\n"
                     "processor\t: 1\nmodel name\t: AMD EPYC\nphysical id\t: 0\ncore id\t\t: 1\n\n");
    hp_cpu_clock_read(&c, info, freq);
    CHECK(c.base_ghz == 0 && c.max_ghz == 0 && c.cores == 2 && strstr(c.source, "no '@ GHz' in the model name"));
    /* no cpuinfo either: all unknown, no error */
    remove(info);
    hp_cpu_clock_read(&c, info, freq);
    CHECK(c.base_ghz == 0 && c.max_ghz == 0 && c.cores == 0 && c.source[0]);
    /* this machine's: whatever it is, a line that says where it came from */
    hp_cpu_clock_read(&c, NULL, NULL);
    CHECK(c.base_ghz >= 0 && c.max_ghz >= 0 && c.cores >= 0 && strstr(c.source, "base") && strstr(c.source, "physical core"));
}

int main(void) {
    char dir[] = "/tmp/hp_test_bench_mfu_XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_mfu();
    test_settle();
    test_clock(dir);
    rmdir(dir);
    if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
