/* tools/calibrate: `hyperpar calibrate` — measures this machine (hp_calibrate:
 * kernels per family and FLOP bucket, the peaks, collectives per tier fitted
 * as alpha + N / beta) and writes a calibration profile, printing what it
 * measured; `--check FILE` reads a profile back and says whether it is valid.
 *
 *   hyperpar calibrate [--out profile.json] [--quick] [--threads N]
 *                      [--inter-bw GBps] [--inter-latency us] [--sizes 4K,64K,1M]
 *                      [--machine NAME]
 *   hyperpar calibrate --check FILE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"

/* "4096", "4K", "16M", "1G" -> bytes; -1 when not a size. */
static int64_t parse_size(const char *s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0) return -1;
    int64_t mul = 1;
    if (*end == 'K' || *end == 'k') mul = 1 << 10, end++;
    else if (*end == 'M' || *end == 'm') mul = 1 << 20, end++;
    else if (*end == 'G' || *end == 'g') mul = 1 << 30, end++;
    if (*end || v > (1LL << 40) / mul) return -1;
    return (int64_t)v * mul;
}

static int check_file(const char *path) {
    int nk, nc;
    hp_status st = hp_calibration_check_file(path, &nk, &nc);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    printf("%s: a valid profile: %d kernel entries, %d collective entries\n", path, nk, nc);
    return 0;
}

int hp_cmd_calibrate(int argc, char **argv) {
    char out[1024] = "profile.json", sizes[512] = "", machine[64] = "local", check[1024] = "";
    int quick = 0, threads = 0;
    float bw = 1, lat = 20;
    hp_opt tab[] = {
        {"out", HP_OPT_STR, out, sizeof out, "the profile file to write (a temporary name, synced, then renamed)"},
        {"quick", HP_OPT_FLAG, &quick, 0, "smaller shapes, 3 sizes, fewer repetitions: seconds (tests)"},
        {"threads", HP_OPT_INT, &threads, 0, "kernel threads per rank (0: the CPUs this process may use)"},
        {"inter-bw", HP_OPT_FLOAT, &bw, 0, "the emulated inter-supernode link, GB/s per rank (0: unthrottled)"},
        {"inter-latency", HP_OPT_FLOAT, &lat, 0, "its latency per message, us"},
        {"sizes", HP_OPT_STR, sizes, sizeof sizes,
         "collective buffer sizes, e.g. 4K,64K,1M (not given: 4K..16M by 4x; --quick 4K,64K,1M)"},
        {"machine", HP_OPT_STR, machine, sizeof machine, "the profile's machine name"},
        {"check", HP_OPT_STR, check, sizeof check, "read this profile file back and check it (measures nothing)"},
    };
    int help = 0, ntab = (int)(sizeof tab / sizeof tab[0]);
    hp_status st = hp_args_parse(&help, tab, ntab, argc, argv, 2, "calibrate");
    if (!st && help) {
        hp_args_usage(tab, ntab, "calibrate",
                      "Measures this machine's kernels, peaks and collectives and writes a calibration profile "
                      "for the auto-parallel cost model.");
        return 0;
    }
    if (st) {
        hp_cli_error(st);
        return 2;
    }
    if (check[0]) return check_file(check);
    int64_t sz[32];
    int nsz = 0;
    if (sizes[0]) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", sizes);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            if (nsz == 32) {
                fprintf(stderr, "hyperpar calibrate: --sizes: more than 32 sizes\n");
                return 2;
            }
            sz[nsz] = parse_size(tok);
            if (sz[nsz] < 0) {
                fprintf(stderr, "hyperpar calibrate: --sizes: '%s' is not a size like 4K, 1M, 16M\n", tok);
                return 2;
            }
            nsz++;
        }
    }
    hp_calibrate_options o;
    hp_calibrate_options_default(&o);
    o.threads = threads, o.quick = quick, o.inter_bw_gbps = bw, o.inter_latency_us = lat;
    o.sizes = nsz ? sz : NULL, o.nsizes = nsz, o.machine = machine;
    hp_calibration *c;
    st = hp_calibrate(&c, &o);
    if (!st) {
        fputs(hp_calibration_table(c), stdout);
        st = hp_calibration_write(c, out);
        hp_calibration_free(c);
    }
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    printf("\nwrote %s\n", out);
    return 0;
}
