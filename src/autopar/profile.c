/* autopar/profile: calibration profiles read, checked, printed and looked
 * up (see the header for the format and the fallbacks). */
#include "autopar/profile.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/fsutil.h"
#include "io/json.h"
#include "layout/text.h"

enum { PROFILE_MAX_BYTES = 1 << 20 };

static const char *const family_names[HP_PROF_NFAMILIES] = {
    "gemm", "grouped_gemm", "attention", "pointwise", "norm", "softmax_xent", "embedding"};
static const char *const dtype_names[HP_PROF_NDTYPES] = {"fp32", "bf16"};
static const char *const bucket_names[HP_PROF_NBUCKETS] = {"small", "medium", "large"};
static const char *const tier_names[HP_PROF_NTIERS] = {"intra", "inter"};
static const char *const kind_names[HP_PROF_NKINDS] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                                       "send"};

const char *hp_profile_family_name(hp_prof_family f) { return (unsigned)f < HP_PROF_NFAMILIES ? family_names[f] : "?"; }
const char *hp_profile_dtype_name(hp_prof_dtype d) { return (unsigned)d < HP_PROF_NDTYPES ? dtype_names[d] : "?"; }
const char *hp_profile_bucket_name(hp_prof_bucket b) { return (unsigned)b < HP_PROF_NBUCKETS ? bucket_names[b] : "?"; }
const char *hp_profile_tier_name(hp_prof_tier t) { return (unsigned)t < HP_PROF_NTIERS ? tier_names[t] : "?"; }
const char *hp_profile_kind_name(hp_prof_kind k) { return (unsigned)k < HP_PROF_NKINDS ? kind_names[k] : "?"; }

const char *hp_profile_fallback_name(hp_prof_fallback f) {
    switch (f) {
    case HP_PROF_EXACT: return "exact";
    case HP_PROF_NEAREST_BUCKET: return "nearest bucket";
    case HP_PROF_FROM_FP32: return "fp32 entry";
    case HP_PROF_FAMILY_DEFAULT: return "family default";
    case HP_PROF_FROM_ALL_REDUCE: return "all_reduce x 0.5";
    case HP_PROF_NONE: return "none";
    }
    return "?";
}

/* ---- parsing ----------------------------------------------------------- */

/* "FILE: PATH: problem" */
static hp_status path_error(const char *file, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static hp_status path_error(const char *file, const char *path, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hp_errorf("%s: %s: %s", file, path, msg);
}

/* Refuses any key of object o (at path) not in allowed (NULL-terminated). */
static hp_status check_keys(const hp_json *o, const char *const *allowed, const char *list, const char *file,
                            const char *path) {
    for (int i = 0; i < o->n; i++) {
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++) ok = !strcmp(o->keys[i], *a);
        if (!ok) {
            char sub[160];
            snprintf(sub, sizeof sub, "%s%s%.60s", path, *path ? "." : "", o->keys[i]);
            return path_error(file, sub, "unknown key (the keys: %s)", list);
        }
    }
    return HP_OK;
}

/* o[key] of type t; sub receives its path. */
static hp_status get_typed(const hp_json **out, char *sub, size_t subn, const hp_json *o, const char *key,
                           hp_json_type t, const char *file, const char *path) {
    snprintf(sub, subn, "%s%s%s", path, *path ? "." : "", key);
    const hp_json *v = hp_json_get(o, key);
    if (!v) return path_error(file, sub, "missing (required)");
    if (v->type != t)
        return path_error(file, sub, "expected %s, not %s", hp_json_type_name(t), hp_json_type_name(v->type));
    *out = v;
    return HP_OK;
}

/* A string without NUL bytes of fewer than max bytes. */
static hp_status get_text(const char **out, const hp_json *o, const char *key, size_t max, const char *file,
                          const char *path) {
    char sub[160];
    const hp_json *v = NULL;
    HP_TRY(get_typed(&v, sub, sizeof sub, o, key, HP_JSON_STRING, file, path));
    if (strlen(v->str) != v->len) return path_error(file, sub, "contains a NUL character");
    if (v->len >= max) return path_error(file, sub, "longer than %zu bytes", max - 1);
    *out = v->str;
    return HP_OK;
}

/* An integer in [lo, hi] under key. */
static hp_status get_int(int *out, const hp_json *o, const char *key, int lo, int hi, const char *file,
                         const char *path) {
    char sub[160];
    const hp_json *v = NULL;
    HP_TRY(get_typed(&v, sub, sizeof sub, o, key, HP_JSON_NUMBER, file, path));
    if (!v->is_int || v->ival < lo || v->ival > hi)
        return path_error(file, sub, "%.17g: must be an integer in %d..%d", v->number, lo, hi);
    *out = (int)v->ival;
    return HP_OK;
}

/* One of names[n] under key; *idx its index. */
static hp_status get_enum(int *idx, const hp_json *o, const char *key, const char *const *names, int n,
                          const char *file, const char *path) {
    const char *s = NULL;
    HP_TRY(get_text(&s, o, key, 64, file, path));
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) {
            *idx = i;
            return HP_OK;
        }
    char list[256];
    size_t used = 0;
    list[0] = 0;
    for (int i = 0; i < n; i++) hp_text_appendf(list, sizeof list, &used, "%s%s", i ? ", " : "", names[i]);
    char sub[160];
    snprintf(sub, sizeof sub, "%s.%s", path, key);
    return path_error(file, sub, "'%s' is not one of %s", s, list);
}

/* A finite number under key: > 0, or >= 0 when zero_ok. */
static hp_status get_rate(double *out, const hp_json *o, const char *key, int zero_ok, const char *file,
                          const char *path) {
    char sub[160];
    const hp_json *v = NULL;
    HP_TRY(get_typed(&v, sub, sizeof sub, o, key, HP_JSON_NUMBER, file, path));
    if (!isfinite(v->number)) return path_error(file, sub, "not a finite number");
    if (zero_ok ? v->number < 0 : v->number <= 0) return path_error(file, sub, "must be %s", zero_ok ? ">= 0" : "> 0");
    *out = v->number;
    return HP_OK;
}

static hp_status parse_kernel(hp_profile *p, int first[HP_PROF_NFAMILIES][HP_PROF_NDTYPES][HP_PROF_NBUCKETS],
                              const hp_json *e, int i, const char *file) {
    char path[32];
    snprintf(path, sizeof path, "kernels[%d]", i);
    if (e->type != HP_JSON_OBJECT)
        return path_error(file, path, "expected an object, not %s", hp_json_type_name(e->type));
    static const char *const keys[] = {"family", "dtype", "bucket", "gflops", "gbps", NULL};
    HP_TRY(check_keys(e, keys, "family, dtype, bucket, gflops, gbps", file, path));
    int f = 0, d = 0, b = 0;
    double gflops, gbps;
    HP_TRY(get_enum(&f, e, "family", family_names, HP_PROF_NFAMILIES, file, path));
    HP_TRY(get_enum(&d, e, "dtype", dtype_names, HP_PROF_NDTYPES, file, path));
    HP_TRY(get_enum(&b, e, "bucket", bucket_names, HP_PROF_NBUCKETS, file, path));
    HP_TRY(get_rate(&gflops, e, "gflops", 0, file, path));
    HP_TRY(get_rate(&gbps, e, "gbps", 0, file, path));
    if (first[f][d][b])
        return path_error(file, path, "(%s, %s, %s) given twice (first at kernels[%d])", family_names[f],
                          dtype_names[d], bucket_names[b], first[f][d][b] - 1);
    first[f][d][b] = i + 1;
    p->kernel[f][d][b] = (hp_prof_kernel){.given = 1, .gflops = gflops, .gbps = gbps};
    return HP_OK;
}

static hp_status parse_coll(hp_profile *p, int first[HP_PROF_NTIERS][HP_PROF_NKINDS], const hp_json *e, int i,
                            const char *file) {
    char path[32];
    snprintf(path, sizeof path, "collectives[%d]", i);
    if (e->type != HP_JSON_OBJECT)
        return path_error(file, path, "expected an object, not %s", hp_json_type_name(e->type));
    static const char *const keys[] = {"tier", "kind", "ranks", "alpha_us", "beta_GBps", NULL};
    HP_TRY(check_keys(e, keys, "tier, kind, ranks, alpha_us, beta_GBps", file, path));
    int t = 0, k = 0, ranks = 0;
    double alpha, beta;
    HP_TRY(get_enum(&t, e, "tier", tier_names, HP_PROF_NTIERS, file, path));
    HP_TRY(get_enum(&k, e, "kind", kind_names, HP_PROF_NKINDS, file, path));
    HP_TRY(get_int(&ranks, e, "ranks", 2, 1 << 24, file, path));
    HP_TRY(get_rate(&alpha, e, "alpha_us", 1, file, path));
    HP_TRY(get_rate(&beta, e, "beta_GBps", 0, file, path));
    if (first[t][k])
        return path_error(file, path, "(%s, %s) given twice (first at collectives[%d])", tier_names[t], kind_names[k],
                          first[t][k] - 1);
    first[t][k] = i + 1;
    p->coll[t][k] = (hp_prof_coll){.given = 1, .ranks = ranks, .alpha_us = alpha, .beta_GBps = beta};
    return HP_OK;
}

static hp_status parse_notes(hp_profile *p, const hp_json *root, const char *file) {
    const hp_json *v = hp_json_get(root, "notes");
    if (!v) return HP_OK;
    char sub[160];
    HP_TRY(get_typed(&v, sub, sizeof sub, root, "notes", HP_JSON_ARRAY, file, ""));
    if (v->n == 0) return HP_OK;
    p->notes = calloc((size_t)v->n, sizeof *p->notes);
    if (!p->notes) return path_error(file, "notes", "out of memory");
    for (int i = 0; i < v->n; i++) {
        const hp_json *s = &v->items[i];
        snprintf(sub, sizeof sub, "notes[%d]", i);
        if (s->type != HP_JSON_STRING)
            return path_error(file, sub, "expected a string, not %s", hp_json_type_name(s->type));
        if (strlen(s->str) != s->len) return path_error(file, sub, "contains a NUL character");
        p->notes[i] = malloc(s->len + 1);
        if (!p->notes[i]) return path_error(file, sub, "out of memory");
        memcpy(p->notes[i], s->str, s->len + 1);
        p->nnotes = i + 1;
    }
    return HP_OK;
}

static hp_status parse_root(hp_profile *p, const hp_json *root, const char *file) {
    if (root->type != HP_JSON_OBJECT)
        return path_error(file, "(top)", "expected an object, not %s", hp_json_type_name(root->type));
    static const char *const keys[] = {"format",           "version",          "machine",          "cpu",
                                       "threads",          "peak_fp32_gflops", "peak_bf16_gflops", "step_overhead_us",
                                       "shared_2x",        "shared_4x",        "notes",            "kernels",
                                       "collectives",      NULL};
    HP_TRY(check_keys(root, keys,
                      "format, version, machine, cpu, threads, peak_fp32_gflops, peak_bf16_gflops, step_overhead_us, "
                      "shared_2x, shared_4x, notes, kernels, collectives",
                      file, ""));
    const char *s = NULL;
    HP_TRY(get_text(&s, root, "format", 64, file, ""));
    if (strcmp(s, "hyperpar-profile"))
        return path_error(file, "format", "'%s' is not 'hyperpar-profile'", s);
    const hp_json *v = NULL;
    char sub[160];
    HP_TRY(get_typed(&v, sub, sizeof sub, root, "version", HP_JSON_NUMBER, file, ""));
    if (!v->is_int || v->ival != 1) return path_error(file, "version", "%.17g: must be the integer 1 (the only version)", v->number);
    HP_TRY(get_text(&s, root, "machine", HP_PROFILE_NAME_MAX, file, ""));
    if (!*s) return path_error(file, "machine", "empty");
    for (const char *c = s; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '.' && *c != '_' && *c != '-')
            return path_error(file, "machine", "'%s' has '%c' (letters, digits, '.', '_' and '-' only)", s, *c);
    strcpy(p->machine, s);
    HP_TRY(get_text(&s, root, "cpu", HP_PROFILE_CPU_MAX, file, ""));
    strcpy(p->cpu, s);
    HP_TRY(get_int(&p->threads, root, "threads", 1, 4096, file, ""));
    HP_TRY(get_rate(&p->peak_fp32_gflops, root, "peak_fp32_gflops", 0, file, ""));
    HP_TRY(get_rate(&p->peak_bf16_gflops, root, "peak_bf16_gflops", 0, file, ""));
    if (hp_json_get(root, "step_overhead_us")) /* optional */
        HP_TRY(get_rate(&p->step_overhead_us, root, "step_overhead_us", 1, file, ""));
    const char *shared[2] = {"shared_2x", "shared_4x"};
    for (int i = 0; i < 2; i++) { /* optional, in (0, 1] */
        p->shared_eff[i] = 1;
        if (!hp_json_get(root, shared[i])) continue;
        HP_TRY(get_rate(&p->shared_eff[i], root, shared[i], 0, file, ""));
        if (p->shared_eff[i] > 1) return path_error(file, shared[i], "%g: must be at most 1", p->shared_eff[i]);
    }
    HP_TRY(parse_notes(p, root, file));

    const hp_json *ks = NULL, *cs = NULL;
    HP_TRY(get_typed(&ks, sub, sizeof sub, root, "kernels", HP_JSON_ARRAY, file, ""));
    HP_TRY(get_typed(&cs, sub, sizeof sub, root, "collectives", HP_JSON_ARRAY, file, ""));
    int kfirst[HP_PROF_NFAMILIES][HP_PROF_NDTYPES][HP_PROF_NBUCKETS] = {{{0}}};
    for (int i = 0; i < ks->n; i++) HP_TRY(parse_kernel(p, kfirst, &ks->items[i], i, file));
    int cfirst[HP_PROF_NTIERS][HP_PROF_NKINDS] = {{0}};
    for (int i = 0; i < cs->n; i++) HP_TRY(parse_coll(p, cfirst, &cs->items[i], i, file));
    return HP_OK;
}

hp_status hp_profile_parse(hp_profile *out, const char *text, size_t len, const char *name) {
    memset(out, 0, sizeof *out);
    const char *file = name ? name : "profile";
    if (!text) return hp_errorf("%s: no text", file);
    hp_json *root;
    hp_status st = hp_json_parse(&root, text, len);
    if (st) return hp_error_wrap(st, "%s", file);
    st = parse_root(out, root, file);
    hp_json_free(root);
    if (st) hp_profile_free(out);
    return st;
}

hp_status hp_profile_load(hp_profile *out, const char *path) {
    memset(out, 0, sizeof *out);
    char *buf;
    size_t n;
    HP_TRY(hp_fs_read_as(&buf, &n, path, PROFILE_MAX_BYTES, "a profile file"));
    hp_status st = hp_profile_parse(out, buf, n, path);
    free(buf);
    return st;
}

void hp_profile_free(hp_profile *p) {
    for (int i = 0; i < p->nnotes; i++) free(p->notes[i]);
    free(p->notes);
    memset(p, 0, sizeof *p);
}

/* ---- printing ---------------------------------------------------------- */

/* s as a JSON string. */
static void append_string(char *buf, size_t n, size_t *used, const char *s) {
    hp_text_appendf(buf, n, used, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') hp_text_appendf(buf, n, used, "\\%c", *c);
        else if (*c < 0x20) hp_text_appendf(buf, n, used, "\\u%04x", *c);
        else hp_text_appendf(buf, n, used, "%c", *c);
    }
    hp_text_appendf(buf, n, used, "\"");
}

/* The shortest of %.15g, %.16g, %.17g that reads back to x. */
static void append_number(char *buf, size_t n, size_t *used, double x) {
    char t[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(t, sizeof t, "%.*g", prec, x);
        if (strtod(t, NULL) == x) break;
    }
    hp_text_appendf(buf, n, used, "%s", t);
}

size_t hp_profile_print(char *buf, size_t n, const hp_profile *p) {
    size_t used = 0;
    if (buf && n) buf[0] = 0;
    hp_text_appendf(buf, n, &used, "{\n  \"format\": \"hyperpar-profile\",\n  \"version\": 1,\n  \"machine\": ");
    append_string(buf, n, &used, p->machine);
    hp_text_appendf(buf, n, &used, ",\n  \"cpu\": ");
    append_string(buf, n, &used, p->cpu);
    hp_text_appendf(buf, n, &used, ",\n  \"threads\": %d,\n  \"peak_fp32_gflops\": ", p->threads);
    append_number(buf, n, &used, p->peak_fp32_gflops);
    hp_text_appendf(buf, n, &used, ",\n  \"peak_bf16_gflops\": ");
    append_number(buf, n, &used, p->peak_bf16_gflops);
    if (p->step_overhead_us > 0) {
        hp_text_appendf(buf, n, &used, ",\n  \"step_overhead_us\": ");
        append_number(buf, n, &used, p->step_overhead_us);
    }
    for (int i = 0; i < 2; i++)
        if (p->shared_eff[i] > 0 && p->shared_eff[i] < 1) {
            hp_text_appendf(buf, n, &used, ",\n  \"shared_%dx\": ", 2 << i);
            append_number(buf, n, &used, p->shared_eff[i]);
        }
    hp_text_appendf(buf, n, &used, ",\n  \"notes\": [");
    for (int i = 0; i < p->nnotes; i++) {
        hp_text_appendf(buf, n, &used, "%s\n    ", i ? "," : "");
        append_string(buf, n, &used, p->notes[i]);
    }
    hp_text_appendf(buf, n, &used, "%s],\n  \"kernels\": [", p->nnotes ? "\n  " : "");
    int count = 0;
    for (int f = 0; f < HP_PROF_NFAMILIES; f++)
        for (int d = 0; d < HP_PROF_NDTYPES; d++)
            for (int b = 0; b < HP_PROF_NBUCKETS; b++) {
                const hp_prof_kernel *k = &p->kernel[f][d][b];
                if (!k->given) continue;
                hp_text_appendf(buf, n, &used,
                                "%s\n    {\"family\": \"%s\", \"dtype\": \"%s\", \"bucket\": \"%s\", \"gflops\": ",
                                count++ ? "," : "", family_names[f], dtype_names[d], bucket_names[b]);
                append_number(buf, n, &used, k->gflops);
                hp_text_appendf(buf, n, &used, ", \"gbps\": ");
                append_number(buf, n, &used, k->gbps);
                hp_text_appendf(buf, n, &used, "}");
            }
    hp_text_appendf(buf, n, &used, "%s],\n  \"collectives\": [", count ? "\n  " : "");
    count = 0;
    for (int t = 0; t < HP_PROF_NTIERS; t++)
        for (int k = 0; k < HP_PROF_NKINDS; k++) {
            const hp_prof_coll *c = &p->coll[t][k];
            if (!c->given) continue;
            hp_text_appendf(buf, n, &used,
                            "%s\n    {\"tier\": \"%s\", \"kind\": \"%s\", \"ranks\": %d, \"alpha_us\": ",
                            count++ ? "," : "", tier_names[t], kind_names[k], c->ranks);
            append_number(buf, n, &used, c->alpha_us);
            hp_text_appendf(buf, n, &used, ", \"beta_GBps\": ");
            append_number(buf, n, &used, c->beta_GBps);
            hp_text_appendf(buf, n, &used, "}");
        }
    hp_text_appendf(buf, n, &used, "%s]\n}\n", count ? "\n  " : "");
    return used;
}

/* ---- lookups ----------------------------------------------------------- */

hp_prof_bucket hp_profile_bucket_of(double flops) {
    if (flops < HP_PROFILE_SMALL_BELOW) return HP_PROF_SMALL;
    if (flops < HP_PROFILE_LARGE_FROM) return HP_PROF_MEDIUM;
    return HP_PROF_LARGE;
}

void hp_profile_family_default(double *gflops, double *gbps, hp_prof_family f) {
    HP_ASSERT((unsigned)f < HP_PROF_NFAMILIES);
    int matmul = f == HP_PROF_GEMM || f == HP_PROF_GROUPED_GEMM || f == HP_PROF_ATTENTION;
    *gflops = matmul ? 1.0 : 0.1;
    *gbps = 1.0;
}

/* The bucket of (f, d) given nearest to want (the smaller on a tie), or -1. */
static int nearest_bucket(const hp_profile *p, hp_prof_family f, hp_prof_dtype d, hp_prof_bucket want) {
    for (int dist = 0; dist < HP_PROF_NBUCKETS; dist++) {
        int lo = (int)want - dist, hi = (int)want + dist;
        if (lo >= 0 && p->kernel[f][d][lo].given) return lo;
        if (hi < HP_PROF_NBUCKETS && p->kernel[f][d][hi].given) return hi;
    }
    return -1;
}

void hp_profile_kernel_rate(hp_prof_rate *out, const hp_profile *p, hp_prof_family f, hp_prof_dtype d,
                            double flops) {
    HP_ASSERT((unsigned)f < HP_PROF_NFAMILIES && (unsigned)d < HP_PROF_NDTYPES);
    hp_prof_bucket want = hp_profile_bucket_of(flops);
    int b = nearest_bucket(p, f, d, want);
    if (b >= 0) {
        *out = (hp_prof_rate){p->kernel[f][d][b].gflops, p->kernel[f][d][b].gbps, d, (hp_prof_bucket)b,
                              b == (int)want ? HP_PROF_EXACT : HP_PROF_NEAREST_BUCKET};
        return;
    }
    if (d != HP_PROF_FP32 && (b = nearest_bucket(p, f, HP_PROF_FP32, want)) >= 0) {
        const hp_prof_kernel *k = &p->kernel[f][HP_PROF_FP32][b];
        *out = (hp_prof_rate){k->gflops, k->gbps, HP_PROF_FP32, (hp_prof_bucket)b, HP_PROF_FROM_FP32};
        return;
    }
    *out = (hp_prof_rate){0, 0, d, want, HP_PROF_FAMILY_DEFAULT};
    hp_profile_family_default(&out->gflops, &out->gbps, f);
}

void hp_profile_collective_time(hp_prof_time *out, const hp_profile *p, hp_prof_tier t, hp_prof_kind k,
                                double bytes) {
    HP_ASSERT((unsigned)t < HP_PROF_NTIERS && (unsigned)k < HP_PROF_NKINDS);
    const hp_prof_coll *c = &p->coll[t][k];
    if (c->given) {
        *out = (hp_prof_time){c->alpha_us + bytes / (c->beta_GBps * 1e3), c->alpha_us, c->beta_GBps, c->ranks, k,
                              HP_PROF_EXACT};
        return;
    }
    c = &p->coll[t][HP_PROF_ALL_REDUCE];
    if (!c->given) {
        *out = (hp_prof_time){0, 0, 0, 0, k, HP_PROF_NONE};
        return;
    }
    *out = (hp_prof_time){HP_PROF_FALLBACK_FACTOR * (c->alpha_us + bytes / (c->beta_GBps * 1e3)), c->alpha_us,
                          c->beta_GBps, c->ranks, HP_PROF_ALL_REDUCE, HP_PROF_FROM_ALL_REDUCE};
}

/* ---- operators' families ---------------------------------------------- */

/* 1 when s starts with prefix. */
static int starts(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

double hp_profile_shared_eff(const hp_profile *p, double ratio) {
    double e2 = p->shared_eff[0] > 0 ? p->shared_eff[0] : 1, e4 = p->shared_eff[1] > 0 ? p->shared_eff[1] : e2;
    if (!(ratio > 1)) return 1;
    double x = log2(ratio); /* 1 at 2x, 2 at 4x */
    if (x <= 1) return 1 + (e2 - 1) * x;
    if (x <= 2) return e2 + (e4 - e2) * (x - 1);
    return e4;
}

hp_prof_family hp_profile_family_of_op(const char *op_name) {
    const char *s = op_name ? op_name : "";
    /* the fused LM head before cross_entropy: its FLOPs are the product's */
    if (!strcmp(s, "linear") || !strcmp(s, "linear_bwd") || starts(s, "linear_cross_entropy")) return HP_PROF_GEMM;
    /* Muon's update and orthogonalisation: Newton-Schulz's matrix products */
    if (!strcmp(s, "muon_update") || !strcmp(s, "muon_orth") || !strcmp(s, "muon_team")) return HP_PROF_GEMM;
    if (!strcmp(s, "grouped_linear") || !strcmp(s, "grouped_linear_bwd")) return HP_PROF_GROUPED_GEMM;
    if (!strcmp(s, "attention") || !strcmp(s, "attention_bwd")) return HP_PROF_ATTENTION;
    if (!strcmp(s, "layernorm") || !strcmp(s, "layernorm_bwd") || !strcmp(s, "rmsnorm") || !strcmp(s, "rmsnorm_bwd"))
        return HP_PROF_NORM;
    if (starts(s, "cross_entropy")) return HP_PROF_SOFTMAX_XENT;
    if (starts(s, "embedding") || starts(s, "add_pos") || !strcmp(s, "pos_table") || starts(s, "grad_rows"))
        return HP_PROF_EMBEDDING;
    return HP_PROF_POINTWISE;
}
