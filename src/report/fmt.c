/* report/fmt: figures rounded and with units (see the header). */
#include "report/fmt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void hp_rep_fmt(char *buf, size_t n, double v, const char *unit) {
    const char *sp = unit && unit[0] ? " " : "", *u = unit ? unit : "";
    double a = fabs(v);
    if (!isfinite(v)) snprintf(buf, n, "n/a");
    else if (a < 1e15 && v == floor(v)) snprintf(buf, n, "%.0f%s%s", v, sp, u);
    else if (a >= 1e15 || a < 1e-4) snprintf(buf, n, "%.3g%s%s", v, sp, u);
    else if (a >= 100) snprintf(buf, n, "%.0f%s%s", v, sp, u);
    else if (a >= 10) snprintf(buf, n, "%.1f%s%s", v, sp, u);
    else if (a >= 1) snprintf(buf, n, "%.2f%s%s", v, sp, u);
    else snprintf(buf, n, "%.3g%s%s", v, sp, u);
}

const char *hp_rep_bytes_unit(double *div, double most) {
    static const char *const names[] = {"B", "kB", "MB", "GB", "TB"};
    int k = 0;
    *div = 1;
    while (k < 4 && most >= *div * 1e3) *div *= 1e3, k++;
    return names[k];
}

void hp_rep_fmt_bytes(char *buf, size_t n, double bytes) {
    double div;
    const char *u = hp_rep_bytes_unit(&div, fabs(bytes));
    hp_rep_fmt(buf, n, bytes / div, u);
}

const char *hp_rep_field_unit(const char *key) {
    /* the longer names first: "tokens_per_s" before "_s" */
    static const char *const suffix[][2] = {{"tokens_per_s", "tokens/s"}, {"_GBps", "GB/s"}, {"gflops", "GFLOP/s"},
                                            {"mfu", "of peak"},
                                            {"bytes", "B"},  {"_ms", "ms"}, {"_us", "µs"}, {"_mb", "MB"},
                                            {"_MB", "MB"},   {"_s", "s"}, {"_gbps", "GB/s"}, {"_gflop", "GFLOP"},
                                            {"_gflop_max", "GFLOP"}, {"_gflop_total", "GFLOP"},
                                            {"imbalance", "max/mean"}};
    size_t kl = strlen(key);
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        size_t sl = strlen(suffix[i][0]);
        if (kl >= sl && !strcmp(key + kl - sl, suffix[i][0])) return suffix[i][1];
    }
    return "";
}
