/* autopar/cluster: cluster descriptions read, checked and printed (see the
 * header for the format). */
#include "autopar/cluster.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/fsutil.h"
#include "layout/text.h"

enum { CLUSTER_MAX_BYTES = 1 << 20, VALUE_MAX = 128 };

typedef enum { K_NAME, K_COUNT, K_RATE, K_LATENCY, K_PEAK, K_MEMORY, K_ASSUMPTION } field_kind;

typedef enum {
    F_NAME, F_SUPERNODES, F_RANKS, F_INTRA_BW, F_INTRA_LAT, F_INTER_BW, F_INTER_LAT,
    F_PEAK_FP32, F_PEAK_BF16, F_MEMORY, F_ASSUMPTION, NFIELDS
} field_id;

static const struct {
    const char *key;
    field_kind kind;
} fields[NFIELDS] = {
    [F_NAME] = {"name", K_NAME},
    [F_SUPERNODES] = {"supernodes", K_COUNT},
    [F_RANKS] = {"ranks_per_supernode", K_COUNT},
    [F_INTRA_BW] = {"intra_bandwidth_GBps", K_RATE},
    [F_INTRA_LAT] = {"intra_latency_us", K_LATENCY},
    [F_INTER_BW] = {"inter_bandwidth_GBps", K_RATE},
    [F_INTER_LAT] = {"inter_latency_us", K_LATENCY},
    [F_PEAK_FP32] = {"peak_fp32", K_PEAK},
    [F_PEAK_BF16] = {"peak_bf16", K_PEAK},
    [F_MEMORY] = {"memory_GB", K_MEMORY},
    [F_ASSUMPTION] = {"assumption", K_ASSUMPTION},
};

#define FIELD_LIST                                                                                              \
    "name, supernodes, ranks_per_supernode, intra_bandwidth_GBps, intra_latency_us, inter_bandwidth_GBps, " \
    "inter_latency_us, peak_fp32, peak_bf16, memory_GB, assumption"

/* "FILE:LINE: field 'KEY': problem" */
static hp_status field_error(const char *file, int line, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static hp_status field_error(const char *file, int line, const char *key, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hp_errorf("%s:%d: field '%s': %s", file, line, key, msg);
}

/* A decimal number at the start of v (no hex, no inf/nan words); *end past it.
 * Returns 0, or -1 when v does not start with one. */
static int number_prefix(double *out, const char **end, const char *v) {
    const char *p = v + (*v == '+' || *v == '-');
    if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1]))) return -1;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) return -1;
    char *e;
    errno = 0;
    *out = strtod(v, &e);
    *end = e;
    return 0;
}

/* The value of a field of kind K_RATE, K_LATENCY, K_PEAK or K_MEMORY. */
static hp_status parse_real(double *out, const char *v, field_kind kind, const char *file, int line,
                            const char *key) {
    const char *end;
    double x;
    if (number_prefix(&x, &end, v))
        return field_error(file, line, key, "'%.60s' is not a number", v);
    double scale = 1;
    if (kind == K_PEAK) {
        while (isspace((unsigned char)*end)) end++;
        if (!*end)
            return field_error(file, line, key, "'%.60s' has no unit (write TFLOP/s or GFLOP/s after the number)", v);
        if (!strcmp(end, "TFLOP/s")) scale = 1e12;
        else if (!strcmp(end, "GFLOP/s")) scale = 1e9;
        else return field_error(file, line, key, "unit '%.40s' is not TFLOP/s or GFLOP/s", end);
    } else if (*end) {
        return field_error(file, line, key, "'%.60s' is not a number (the unit is in the field's name)", v);
    }
    if (!isfinite(x) || !isfinite(x * scale))
        return field_error(file, line, key, "'%.60s' is not a finite number", v);
    if (kind == K_LATENCY ? x < 0 : x <= 0)
        return field_error(file, line, key, "%.60s must be %s", v, kind == K_LATENCY ? "0 or more" : "positive");
    *out = x * scale;
    return HP_OK;
}

static hp_status parse_count(int *out, const char *v, const char *file, int line, const char *key) {
    for (const char *p = v; *p; p++) {
        if (isdigit((unsigned char)*p)) continue;
        const char *end;
        double x;
        if (number_prefix(&x, &end, v) || *end) return field_error(file, line, key, "'%.60s' is not a number", v);
        return field_error(file, line, key, "'%.60s' is not a whole number of 1 or more", v);
    }
    errno = 0;
    long long x = strtoll(v, NULL, 10);
    if (errno || x > INT_MAX) return field_error(file, line, key, "%.60s is more than %d", v, INT_MAX);
    if (x < 1) return field_error(file, line, key, "%.60s must be 1 or more", v);
    *out = (int)x;
    return HP_OK;
}

static hp_status parse_name(char *out, const char *v, const char *file, int line, const char *key) {
    size_t n = strlen(v);
    if (n >= HP_CLUSTER_NAME_MAX)
        return field_error(file, line, key, "'%.40s...' is longer than %d characters", v, HP_CLUSTER_NAME_MAX - 1);
    for (const char *p = v; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-')
            return field_error(file, line, key, "'%.60s' has '%c' (letters, digits, '.', '_' and '-' only)", v, *p);
    memcpy(out, v, n + 1);
    return HP_OK;
}

static hp_status add_assumption(hp_cluster *c, const char *a, const char *b, const char *file, int line) {
    char **na = realloc(c->assumptions, (size_t)(c->nassumptions + 1) * sizeof *na);
    if (!na) return hp_errorf("%s:%d: field 'assumption': out of memory", file, line);
    c->assumptions = na;
    char *s = malloc((size_t)(b - a) + 1);
    if (!s) return hp_errorf("%s:%d: field 'assumption': out of memory", file, line);
    memcpy(s, a, (size_t)(b - a));
    s[b - a] = 0;
    c->assumptions[c->nassumptions++] = s;
    return HP_OK;
}

/* One comment-free, trimmed, non-empty line [a, b). seen[f]: the line field
 * f was given on (0: not yet). */
static hp_status parse_line(hp_cluster *c, int seen[NFIELDS], const char *a, const char *b, const char *file,
                            int line) {
    const char *colon = memchr(a, ':', (size_t)(b - a));
    if (!colon)
        return hp_errorf("%s:%d: '%.*s' has no ':' (lines are 'field: value')", file, line,
                         (int)(b - a > 60 ? 60 : b - a), a);
    char key[32];
    if (hp_text_trimmed(key, sizeof key, a, colon) < 0) snprintf(key, sizeof key, "%.*s...", 24, a);
    int f = 0;
    while (f < NFIELDS && strcmp(key, fields[f].key)) f++;
    if (f == NFIELDS) return field_error(file, line, key, "unknown field (the fields: " FIELD_LIST ")");
    const char *va = colon + 1, *vb = b;
    while (va < vb && isspace((unsigned char)*va)) va++;
    if (va == vb) return field_error(file, line, key, "no value after ':'");
    if (f == F_ASSUMPTION) return add_assumption(c, va, vb, file, line);
    if (seen[f]) return field_error(file, line, key, "given twice (first on line %d)", seen[f]);
    seen[f] = line;
    char v[VALUE_MAX];
    if (hp_text_trimmed(v, sizeof v, va, vb) < 0)
        return field_error(file, line, key, "value '%.40s...' is longer than %d characters", va, VALUE_MAX - 1);
    switch (fields[f].kind) {
    case K_NAME: return parse_name(c->name, v, file, line, key);
    case K_COUNT: return parse_count(f == F_SUPERNODES ? &c->supernodes : &c->ranks_per_supernode, v, file, line, key);
    default: break;
    }
    double *dst = f == F_INTRA_BW    ? &c->intra_bandwidth_GBps
                  : f == F_INTRA_LAT ? &c->intra_latency_us
                  : f == F_INTER_BW  ? &c->inter_bandwidth_GBps
                  : f == F_INTER_LAT ? &c->inter_latency_us
                  : f == F_PEAK_FP32 ? &c->peak_fp32_flops
                  : f == F_PEAK_BF16 ? &c->peak_bf16_flops
                                     : &c->memory_GB;
    return parse_real(dst, v, fields[f].kind, file, line, key);
}

/* After the last line (lines: how many there were): every field present,
 * the world size in range. */
static hp_status check_complete(hp_cluster *c, const int seen[NFIELDS], const char *file, int lines) {
    int any = 0;
    for (int f = 0; f < NFIELDS; f++) any |= seen[f] != 0;
    if (!any && !c->nassumptions)
        return field_error(file, 1, "name",
                           "the description is empty (no fields; every field but 'assumption' is required)");
    for (int f = 0; f < F_ASSUMPTION; f++)
        if (!seen[f])
            return field_error(file, lines + 1, fields[f].key,
                               "missing (required once each: every field but 'assumption')");
    long long world = (long long)c->supernodes * c->ranks_per_supernode;
    if (world > INT_MAX) {
        int later = seen[F_RANKS] > seen[F_SUPERNODES] ? F_RANKS : F_SUPERNODES;
        return field_error(file, seen[later], fields[later].key,
                           "supernodes x ranks_per_supernode = %d x %d is more than %d ranks", c->supernodes,
                           c->ranks_per_supernode, INT_MAX);
    }
    c->world = (int)world;
    return HP_OK;
}

hp_status hp_cluster_parse(hp_cluster *out, const char *text, const char *name) {
    memset(out, 0, sizeof *out);
    const char *file = name ? name : "cluster";
    if (!text) return hp_errorf("%s: no text", file);
    if (!strncmp(text, "\xEF\xBB\xBF", 3))
        return hp_errorf("%s:1: the file starts with a UTF-8 byte order mark (bytes EF BB BF): save it as plain "
                         "text without one",
                         file);
    int seen[NFIELDS] = {0};
    int line = 0;
    hp_status st = HP_OK;
    for (const char *p = text; *p && !st;) {
        line++;
        const char *nl = strchr(p, '\n');
        const char *end = nl ? nl : p + strlen(p);
        const char *hash = memchr(p, '#', (size_t)(end - p));
        const char *a = p, *b = hash ? hash : end;
        while (a < b && isspace((unsigned char)*a)) a++;
        while (b > a && isspace((unsigned char)b[-1])) b--;
        if (a < b) st = parse_line(out, seen, a, b, file, line);
        p = nl ? nl + 1 : end;
    }
    if (!st) st = check_complete(out, seen, file, line);
    if (st) hp_cluster_free(out);
    return st;
}

hp_status hp_cluster_load(hp_cluster *out, const char *path) {
    memset(out, 0, sizeof *out);
    char *buf;
    size_t n;
    HP_TRY(hp_fs_read_as(&buf, &n, path, CLUSTER_MAX_BYTES, "a cluster file"));
    hp_status st = strlen(buf) != n ? hp_errorf("%s: cluster file contains a NUL byte", path)
                                    : hp_cluster_parse(out, buf, path);
    free(buf);
    return st;
}

void hp_cluster_free(hp_cluster *c) {
    for (int i = 0; i < c->nassumptions; i++) free(c->assumptions[i]);
    free(c->assumptions);
    memset(c, 0, sizeof *c);
}

/* x as the shortest of %.15g and %.17g that reads back to it (strtod) into out[32]. */
static const char *exact(char out[32], double x) {
    snprintf(out, 32, "%.15g", x);
    if (strtod(out, NULL) != x) snprintf(out, 32, "%.17g", x);
    return out;
}

/* A peak as the file writes it: TFLOP/s from 10^12 up, else GFLOP/s — the unit whose value reads back to the
 * same FLOP/s when the parser scales it (else TFLOP/s, the scaling's last bit aside). */
static void append_peak(char *buf, size_t n, size_t *used, const char *key, double flops) {
    char v[32];
    int tera = flops >= 1e12;
    if (tera && strtod(exact(v, flops / 1e12), NULL) * 1e12 != flops &&
        strtod(exact(v, flops / 1e9), NULL) * 1e9 == flops)
        tera = 0;
    hp_text_appendf(buf, n, used, "%s: %s %s\n", key, exact(v, flops / (tera ? 1e12 : 1e9)), tera ? "TFLOP/s" : "GFLOP/s");
}

size_t hp_cluster_print(char *buf, size_t n, const hp_cluster *c) {
    size_t used = 0;
    char v[32];
    if (buf && n) buf[0] = 0;
    hp_text_appendf(buf, n, &used, "# cluster %s: %d supernodes x %d ranks = %d ranks\n", c->name, c->supernodes,
                    c->ranks_per_supernode, c->world);
    hp_text_appendf(buf, n, &used, "name: %s\n", c->name);
    hp_text_appendf(buf, n, &used, "supernodes: %d\n", c->supernodes);
    hp_text_appendf(buf, n, &used, "ranks_per_supernode: %d\n", c->ranks_per_supernode);
    hp_text_appendf(buf, n, &used, "intra_bandwidth_GBps: %s\n", exact(v, c->intra_bandwidth_GBps));
    hp_text_appendf(buf, n, &used, "intra_latency_us: %s\n", exact(v, c->intra_latency_us));
    hp_text_appendf(buf, n, &used, "inter_bandwidth_GBps: %s\n", exact(v, c->inter_bandwidth_GBps));
    hp_text_appendf(buf, n, &used, "inter_latency_us: %s\n", exact(v, c->inter_latency_us));
    append_peak(buf, n, &used, "peak_fp32", c->peak_fp32_flops);
    append_peak(buf, n, &used, "peak_bf16", c->peak_bf16_flops);
    hp_text_appendf(buf, n, &used, "memory_GB: %s\n", exact(v, c->memory_GB));
    for (int i = 0; i < c->nassumptions; i++) hp_text_appendf(buf, n, &used, "assumption: %s\n", c->assumptions[i]);
    return used;
}
