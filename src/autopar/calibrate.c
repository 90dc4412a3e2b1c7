/* autopar/calibrate: measurements to rates, α–β fits, the profile and its
 * printed table (see the header). */
#include "autopar/calibrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout/text.h"

hp_status hp_calib_fit(double *alpha_us, double *beta_GBps, const double *bytes, const double *seconds, int n) {
    *alpha_us = 0, *beta_GBps = 0;
    if (n < 2) return hp_errorf("calibrate: an alpha-beta fit needs 2 or more sizes, got %d", n);
    /* weights 1 / t^2: each point's relative error counts alike, so the small
     * sizes (which set alpha) are not drowned by the large ones (beta) */
    double sw = 0, mx = 0, my = 0, big = 0, tbig = 0;
    for (int i = 0; i < n; i++) {
        if (!(bytes[i] >= 0) || !(seconds[i] > 0) || !isfinite(bytes[i]) || !isfinite(seconds[i]))
            return hp_errorf("calibrate: point %d of a fit is not finite with bytes >= 0 and seconds > 0 (%g bytes, "
                             "%g s)",
                             i, bytes[i], seconds[i]);
        double w = 1 / (seconds[i] * seconds[i]);
        sw += w, mx += w * bytes[i], my += w * seconds[i];
        if (bytes[i] > big) big = bytes[i], tbig = seconds[i];
    }
    mx /= sw, my /= sw;
    double sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        double w = 1 / (seconds[i] * seconds[i]), dx = bytes[i] - mx;
        sxx += w * dx * dx, sxy += w * dx * (seconds[i] - my);
    }
    if (!(sxx > 0)) return hp_errorf("calibrate: an alpha-beta fit needs two distinct sizes");
    double slope = sxy / sxx, icept = my - slope * mx;
    if (icept < 0) { /* through the origin */
        double sxx0 = 0, sxy0 = 0;
        for (int i = 0; i < n; i++) {
            double w = 1 / (seconds[i] * seconds[i]);
            sxx0 += w * bytes[i] * bytes[i], sxy0 += w * bytes[i] * seconds[i];
        }
        icept = 0, slope = sxy0 / sxx0;
    }
    if (!(slope > 0)) slope = 1e-3 * tbig / big;
    *alpha_us = icept * 1e6;
    *beta_GBps = 1.0 / slope / 1e9;
    return HP_OK;
}

void hp_calib_rates(hp_prof_kernel *out, const hp_calib_kernel *k, double fallback_gflops, double fallback_gbps) {
    HP_ASSERT(k->given && k->seconds > 0);
    out->given = 1;
    out->gflops = k->flops > 0 ? k->flops / k->seconds / 1e9 : fallback_gflops;
    out->gbps = k->bytes > 0 ? k->bytes / k->seconds / 1e9 : fallback_gbps;
}

/* "4 KiB", "16 MiB", "1.5 MiB" */
static void size_text(char *buf, size_t n, double bytes) {
    if (bytes >= 1 << 20) snprintf(buf, n, "%g MiB", bytes / (1 << 20));
    else if (bytes >= 1 << 10) snprintf(buf, n, "%g KiB", bytes / (1 << 10));
    else snprintf(buf, n, "%g B", bytes);
}

/* The sizes of the first collective measured, as text. */
static void sizes_text(char *buf, size_t n, const hp_calib_data *d) {
    size_t used = 0;
    buf[0] = 0;
    for (int t = 0; t < HP_PROF_NTIERS; t++)
        for (int k = 0; k < HP_PROF_NKINDS; k++) {
            const hp_calib_coll *c = &d->coll[t][k];
            if (c->n < 2) continue;
            for (int i = 0; i < c->n; i++) {
                char s[32];
                size_text(s, sizeof s, c->bytes[i]);
                hp_text_appendf(buf, n, &used, "%s%s", i ? ", " : "", s);
            }
            return;
        }
}

static hp_status add_note(hp_profile *p, const char *text) {
    char **grown = realloc(p->notes, (size_t)(p->nnotes + 1) * sizeof *grown);
    if (!grown) return hp_errorf("calibrate: out of memory for the profile's notes");
    p->notes = grown;
    p->notes[p->nnotes] = malloc(strlen(text) + 1);
    if (!p->notes[p->nnotes]) return hp_errorf("calibrate: out of memory for the profile's notes");
    strcpy(p->notes[p->nnotes++], text);
    return HP_OK;
}

/* The notes of profile p made from d. */
static hp_status make_notes(hp_profile *p, const hp_calib_data *d) {
    char note[2048];
    snprintf(note, sizeof note,
             "measured by `hyperpar calibrate%s` with %d kernel threads; the cpu: %s", d->quick ? " --quick" : "",
             d->threads, d->cpu);
    HP_TRY(add_note(p, note));
    snprintf(note, sizeof note, "peaks on %d threads, as `hyperpar bench` measures them: fp32 %.4g GFLOP/s (%s), bf16 %.4g GFLOP/s (%s)",
             d->threads, d->peak_fp32_gflops, d->peak_fp32_how, d->peak_bf16_gflops, d->peak_bf16_how);
    HP_TRY(add_note(p, note));
    snprintf(note, sizeof note,
             "kernels: one graph of one operator per family and bucket, run as a program on %d threads, the median of "
             "%d timed calls after a warm-up; gflops = flops / time and gbps = bytes / time with the operator's own "
             "flops() and bytes(), so max(flops / gflops, bytes / gbps) is the measured time at that shape (a call "
             "of no FLOPs or bytes gets the fp32 peak or 1000 GB/s there, which never binds)",
             d->threads, d->repeats);
    HP_TRY(add_note(p, note));
    for (int f = 0; f < HP_PROF_NFAMILIES; f++)
        for (int dt = 0; dt < HP_PROF_NDTYPES; dt++) {
            size_t used = 0;
            note[0] = 0;
            for (int b = 0; b < HP_PROF_NBUCKETS; b++) {
                const hp_calib_kernel *k = &d->kernel[f][dt][b];
                if (!k->given) continue;
                if (!used)
                    hp_text_appendf(note, sizeof note, &used, "%s %s: %s", hp_profile_family_name((hp_prof_family)f),
                                    hp_profile_dtype_name((hp_prof_dtype)dt), k->op);
                if (k->from_bucket >= 0)
                    hp_text_appendf(note, sizeof note, &used,
                                    "; %s: the %s measurement (a memory-bound kernel's rate does not change past the "
                                    "caches, and a call of 10^9 FLOPs would need gigabytes of operands)",
                                    hp_profile_bucket_name((hp_prof_bucket)b),
                                    hp_profile_bucket_name((hp_prof_bucket)k->from_bucket));
                else
                    hp_text_appendf(note, sizeof note, &used, "; %s %s (%.3g FLOPs, %.3g bytes)",
                                    hp_profile_bucket_name((hp_prof_bucket)b), k->shape, k->flops, k->bytes);
            }
            if (used) HP_TRY(add_note(p, note));
        }
    int any16 = 0;
    for (int f = 0; f < HP_PROF_NFAMILIES; f++)
        for (int b = 0; b < HP_PROF_NBUCKETS; b++) any16 |= d->kernel[f][HP_PROF_BF16][b].given;
    if (!any16)
        HP_TRY(add_note(p, "no bf16 kernel entries: this machine has no native bf16 arithmetic (AVX512-BF16 or AMX), "
                           "so bf16 calls are left to fall back to the fp32 entries"));
    char sizes[512], link[160];
    sizes_text(sizes, sizeof sizes, d);
    if (d->inter_bw_gbps > 0 || d->inter_latency_us > 0)
        snprintf(link, sizeof link, "the link emulator at %g GB/s per rank and %g us per message", d->inter_bw_gbps,
                 d->inter_latency_us);
    else
        snprintf(link, sizeof link, "an unthrottled emulated link");
    snprintf(note, sizeof note,
             "collectives: groups of 2 ranks (ranks 2); intra: 2 rank-threads of one process; inter: 2 emulated "
             "supernodes of 1 rank each over %s; each kind timed at %s (N the call's whole buffer: all_reduce's "
             "buffer, all_gather's output, reduce_scatter's input, all_to_all's send buffer, send's message), the "
             "median of several runs; alpha_us and beta_GBps by least squares of time = alpha + N / beta, each size "
             "weighted by 1 / time^2 (relative errors)",
             link, sizes[0] ? sizes : "(none)");
    HP_TRY(add_note(p, note));
    return HP_OK;
}

hp_status hp_calib_profile(hp_profile *out, const hp_calib_data *d) {
    memset(out, 0, sizeof *out);
    snprintf(out->machine, sizeof out->machine, "%s", d->machine);
    snprintf(out->cpu, sizeof out->cpu, "%s", d->cpu);
    out->threads = d->threads;
    out->step_overhead_us = d->step_overhead_us;
    out->shared_eff[0] = d->shared_eff[0], out->shared_eff[1] = d->shared_eff[1];
    out->peak_fp32_gflops = d->peak_fp32_gflops;
    out->peak_bf16_gflops = d->peak_bf16_gflops;
    for (int f = 0; f < HP_PROF_NFAMILIES; f++)
        for (int dt = 0; dt < HP_PROF_NDTYPES; dt++)
            for (int b = 0; b < HP_PROF_NBUCKETS; b++)
                if (d->kernel[f][dt][b].given)
                    hp_calib_rates(&out->kernel[f][dt][b], &d->kernel[f][dt][b], d->peak_fp32_gflops, 1000);
    hp_status st = HP_OK;
    for (int t = 0; t < HP_PROF_NTIERS && !st; t++)
        for (int k = 0; k < HP_PROF_NKINDS && !st; k++) {
            const hp_calib_coll *c = &d->coll[t][k];
            if (c->n < 2) continue;
            hp_prof_coll *e = &out->coll[t][k];
            st = hp_calib_fit(&e->alpha_us, &e->beta_GBps, c->bytes, c->seconds, c->n);
            if (st) {
                st = hp_error_wrap(st, "calibrate: (%s, %s)", hp_profile_tier_name((hp_prof_tier)t),
                                   hp_profile_kind_name((hp_prof_kind)k));
                break;
            }
            e->given = 1, e->ranks = c->ranks;
        }
    if (!st) st = make_notes(out, d);
    if (st) hp_profile_free(out);
    return st;
}

size_t hp_calib_table(char *buf, size_t n, const hp_calib_data *d, const hp_profile *p) {
    size_t used = 0;
    if (buf && n) buf[0] = 0;
    hp_text_appendf(buf, n, &used, "cpu: %s\npeaks (%d threads): fp32 %.1f GFLOP/s (%s), bf16 %.1f GFLOP/s (%s)\n",
                    d->cpu, d->threads, d->peak_fp32_gflops, d->peak_fp32_how, d->peak_bf16_gflops, d->peak_bf16_how);
    if (d->step_overhead_us > 0)
        hp_text_appendf(buf, n, &used, "a training step's host work beside its program: %.0f us\n",
                        d->step_overhead_us);
    if (d->shared_eff[0] > 0)
        hp_text_appendf(buf, n, &used,
                        "rank-threads sharing the cores: at 2x the cores %.2f, at 4x %.2f of an even share\n",
                        d->shared_eff[0], d->shared_eff[1]);
    hp_text_appendf(buf, n, &used, "\nkernels (%d threads; median of %d calls after a warm-up)\n", d->threads,
                    d->repeats);
    hp_text_appendf(buf, n, &used, "%-12s %-5s %-6s %-14s %-28s %10s %10s %10s %9s %8s\n", "family", "dtype", "bucket",
                    "operator", "shape", "MFLOP", "MB", "time_us", "GFLOP/s", "GB/s");
    for (int f = 0; f < HP_PROF_NFAMILIES; f++)
        for (int dt = 0; dt < HP_PROF_NDTYPES; dt++)
            for (int b = 0; b < HP_PROF_NBUCKETS; b++) {
                const hp_calib_kernel *k = &d->kernel[f][dt][b];
                const hp_prof_kernel *e = &p->kernel[f][dt][b];
                if (!k->given || !e->given) continue;
                char shape[64];
                if (k->from_bucket >= 0)
                    snprintf(shape, sizeof shape, "(= %s)", hp_profile_bucket_name((hp_prof_bucket)k->from_bucket));
                else
                    snprintf(shape, sizeof shape, "%s", k->shape);
                hp_text_appendf(buf, n, &used, "%-12s %-5s %-6s %-14s %-28s %10.3f %10.3f %10.1f %9.2f %8.2f\n",
                                hp_profile_family_name((hp_prof_family)f), hp_profile_dtype_name((hp_prof_dtype)dt),
                                hp_profile_bucket_name((hp_prof_bucket)b), k->op, shape, k->flops / 1e6,
                                k->bytes / 1e6, k->seconds * 1e6, e->gflops, e->gbps);
            }
    char link[96];
    if (d->inter_bw_gbps > 0 || d->inter_latency_us > 0)
        snprintf(link, sizeof link, "%g GB/s per rank, %g us per message", d->inter_bw_gbps, d->inter_latency_us);
    else
        snprintf(link, sizeof link, "unthrottled");
    hp_text_appendf(buf, n, &used,
                    "\ncollectives (groups of 2 ranks; inter: 2 emulated supernodes, link %s)\n"
                    "time per call in us by buffer size N; fit time = alpha + N / beta\n",
                    link);
    const hp_calib_coll *first = NULL;
    for (int t = 0; t < HP_PROF_NTIERS && !first; t++)
        for (int k = 0; k < HP_PROF_NKINDS && !first; k++)
            if (d->coll[t][k].n >= 2) first = &d->coll[t][k];
    if (!first) {
        hp_text_appendf(buf, n, &used, "(none measured)\n");
        return used;
    }
    hp_text_appendf(buf, n, &used, "%-6s %-15s", "tier", "kind");
    for (int i = 0; i < first->n; i++) {
        char s[32];
        size_text(s, sizeof s, first->bytes[i]);
        hp_text_appendf(buf, n, &used, " %10s", s);
    }
    hp_text_appendf(buf, n, &used, " %10s %10s\n", "alpha_us", "beta_GB/s");
    for (int t = 0; t < HP_PROF_NTIERS; t++)
        for (int k = 0; k < HP_PROF_NKINDS; k++) {
            const hp_calib_coll *c = &d->coll[t][k];
            const hp_prof_coll *e = &p->coll[t][k];
            if (c->n < 2 || !e->given) continue;
            hp_text_appendf(buf, n, &used, "%-6s %-15s", hp_profile_tier_name((hp_prof_tier)t),
                            hp_profile_kind_name((hp_prof_kind)k));
            for (int i = 0; i < c->n; i++) hp_text_appendf(buf, n, &used, " %10.1f", c->seconds[i] * 1e6);
            hp_text_appendf(buf, n, &used, " %10.2f %10.3f\n", e->alpha_us, e->beta_GBps);
        }
    return used;
}
