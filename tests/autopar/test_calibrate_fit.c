/* autopar/calibrate on synthetic measurements: the α–β least-squares fit is
 * exact on points of a known line and, off one, the 1/t^2-weighted normal
 * equations' solution (alpha kept by the small sizes), a
 * negative intercept is refitted through the origin, flat times keep beta
 * finite and > 0, too few or equal sizes are errors; a kernel entry's rates
 * give back the measured time through the cost model's max(flops / gflops,
 * bytes / gbps), calls of no FLOPs get the fallback rate; a profile made from
 * a measurement record has exactly the measured entries, the fits, the
 * top-level numbers and notes, prints and parses back, and its table names
 * every entry. */
#include <math.h>

#include "autopar/calibrate.h"
#include "testutil.h"

static void test_fit(void) {
    /* time = 12.5 us + N / (3.2 GB/s) */
    double n[5] = {4096, 65536, 1 << 20, 4 << 20, 16 << 20}, t[5];
    for (int i = 0; i < 5; i++) t[i] = 12.5e-6 + n[i] / 3.2e9;
    double a, b;
    CHECK_OK(hp_calib_fit(&a, &b, n, t, 5));
    CHECK_NEAR(a, 12.5, 1e-9 * 12.5);
    CHECK_NEAR(b, 3.2, 1e-9 * 3.2);
    /* two points: the line through them */
    CHECK_OK(hp_calib_fit(&a, &b, n + 1, t + 1, 2));
    CHECK_NEAR(a, 12.5, 1e-8 * 12.5);
    CHECK_NEAR(b, 3.2, 1e-9 * 3.2);
    /* weighted by 1/t^2: three points, the last off the line through the first two by 10%; the fit
     * is the weighted normal equations' solution, computed here by hand */
    double n3[3] = {1e3, 1e6, 1e7}, t3[3] = {10e-6, 20e-6, 1.1 * (10e-6 + 1e7 * 1e-11)};
    t3[1] = 10e-6 + 1e6 * 1e-11;
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < 3; i++) {
        double w = 1 / (t3[i] * t3[i]);
        sw += w, sx += w * n3[i], sy += w * t3[i], sxx += w * n3[i] * n3[i], sxy += w * n3[i] * t3[i];
    }
    double slope = (sw * sxy - sx * sy) / (sw * sxx - sx * sx), icept = (sy - slope * sx) / sw;
    CHECK_OK(hp_calib_fit(&a, &b, n3, t3, 3));
    CHECK_NEAR(a, icept * 1e6, 1e-9 * a);
    CHECK_NEAR(b, 1 / slope / 1e9, 1e-9 * b);
    CHECK(a > 9.7 && a < 10.1); /* the small sizes keep alpha near 10 (unweighted: 9.45) */
    /* a negative intercept: through the origin, alpha 0; slope = sum(w N t) / sum(w N^2), w = 1/t^2 */
    double tn[2] = {0.5e-6, 3e-6}, nn[2] = {1e3, 2e3};
    CHECK_OK(hp_calib_fit(&a, &b, nn, tn, 2));
    slope = (1e3 / 0.5e-6 + 2e3 / 3e-6) / (1e6 / (0.5e-6 * 0.5e-6) + 4e6 / (3e-6 * 3e-6));
    CHECK(a == 0);
    CHECK_NEAR(b, 1 / slope / 1e9, 1e-9 * b);
    /* flat times: beta from 1e-3 of the largest's seconds per byte, alpha the mean */
    double tf[3] = {7e-6, 7e-6, 7e-6};
    CHECK_OK(hp_calib_fit(&a, &b, n, tf, 3));
    CHECK_NEAR(a, 7, 1e-9);
    CHECK(isfinite(b) && b > 0);
    CHECK_NEAR(b, 1 / (1e-3 * 7e-6 / n[2]) / 1e9, 1e-6 * b);
    /* errors */
    hp_status st = hp_calib_fit(&a, &b, n, t, 1);
    CHECK(st && strstr(hp_status_msg(st), "2 or more sizes, got 1"));
    hp_status_free(st);
    double same[2] = {4096, 4096};
    st = hp_calib_fit(&a, &b, same, t, 2);
    CHECK(st && strstr(hp_status_msg(st), "two distinct sizes"));
    hp_status_free(st);
    double bad[2] = {1e-6, NAN};
    st = hp_calib_fit(&a, &b, n, bad, 2);
    CHECK(st && strstr(hp_status_msg(st), "point 1"));
    hp_status_free(st);
}

static void test_rates(void) {
    hp_calib_kernel k = {.given = 1, .from_bucket = -1, .flops = 2e9, .bytes = 8e6, .seconds = 0.04};
    hp_prof_kernel e;
    hp_calib_rates(&e, &k, 100, 1000);
    CHECK(e.given && e.gflops == 2e9 / 0.04 / 1e9 && e.gbps == 8e6 / 0.04 / 1e9);
    CHECK_NEAR(fmax(k.flops / (e.gflops * 1e9), k.bytes / (e.gbps * 1e9)), k.seconds, 1e-15);
    k.flops = 0;
    hp_calib_rates(&e, &k, 100, 1000);
    CHECK(e.gflops == 100 && e.gbps == 8e6 / 0.04 / 1e9);
    CHECK_NEAR(fmax(k.flops / (e.gflops * 1e9), k.bytes / (e.gbps * 1e9)), k.seconds, 1e-15);
}

static void test_profile(void) {
    static hp_calib_data d; /* large: static */
    memset(&d, 0, sizeof d);
    snprintf(d.machine, sizeof d.machine, "box-1");
    snprintf(d.cpu, sizeof d.cpu, "Test CPU \"9000\"");
    d.threads = 3, d.peak_fp32_gflops = 123.5, d.peak_bf16_gflops = 45.25, d.repeats = 7;
    snprintf(d.peak_fp32_how, sizeof d.peak_fp32_how, "avx2+fma FMA");
    snprintf(d.peak_bf16_how, sizeof d.peak_bf16_how, "portable");
    d.inter_bw_gbps = 1, d.inter_latency_us = 20;
    d.kernel[HP_PROF_GEMM][HP_PROF_FP32][HP_PROF_SMALL] =
        (hp_calib_kernel){1, -1, "linear", "M=32 K=64 N=64", 262144, 32768, 2e-5};
    d.kernel[HP_PROF_NORM][HP_PROF_FP32][HP_PROF_MEDIUM] =
        (hp_calib_kernel){1, -1, "layernorm", "rows=1024 C=768", 6291456, 6305792, 3e-4};
    d.kernel[HP_PROF_NORM][HP_PROF_FP32][HP_PROF_LARGE] = d.kernel[HP_PROF_NORM][HP_PROF_FP32][HP_PROF_MEDIUM];
    d.kernel[HP_PROF_NORM][HP_PROF_FP32][HP_PROF_LARGE].from_bucket = HP_PROF_MEDIUM;
    hp_calib_coll *c = &d.coll[HP_PROF_INTER][HP_PROF_ALL_GATHER];
    c->n = 3, c->ranks = 2;
    for (int i = 0; i < 3; i++) c->bytes[i] = 4096.0 * (1 << (4 * i)), c->seconds[i] = 20e-6 + c->bytes[i] / 1.5e9;
    d.coll[HP_PROF_INTRA][HP_PROF_SEND].n = 1; /* one size: no fit, left out */

    hp_profile p;
    CHECK_OK(hp_calib_profile(&p, &d));
    CHECK(!strcmp(p.machine, "box-1") && !strcmp(p.cpu, "Test CPU \"9000\"") && p.threads == 3);
    CHECK(p.peak_fp32_gflops == 123.5 && p.peak_bf16_gflops == 45.25);
    int nk = 0, nc = 0;
    for (int f = 0; f < HP_PROF_NFAMILIES; f++)
        for (int dt = 0; dt < HP_PROF_NDTYPES; dt++)
            for (int b = 0; b < HP_PROF_NBUCKETS; b++) nk += p.kernel[f][dt][b].given;
    for (int t = 0; t < HP_PROF_NTIERS; t++)
        for (int k = 0; k < HP_PROF_NKINDS; k++) nc += p.coll[t][k].given;
    CHECK(nk == 3 && nc == 1);
    const hp_prof_kernel *g = &p.kernel[HP_PROF_GEMM][HP_PROF_FP32][HP_PROF_SMALL];
    CHECK(g->gflops == 262144 / 2e-5 / 1e9 && g->gbps == 32768 / 2e-5 / 1e9);
    CHECK(!memcmp(&p.kernel[HP_PROF_NORM][HP_PROF_FP32][HP_PROF_LARGE], &p.kernel[HP_PROF_NORM][HP_PROF_FP32][HP_PROF_MEDIUM],
                  sizeof(hp_prof_kernel)));
    const hp_prof_coll *e = &p.coll[HP_PROF_INTER][HP_PROF_ALL_GATHER];
    CHECK(e->ranks == 2);
    CHECK_NEAR(e->alpha_us, 20, 1e-8);
    CHECK_NEAR(e->beta_GBps, 1.5, 1e-9);
    /* the profile has no all_reduce on either tier: other kinds have no time */
    hp_prof_time tm;
    hp_profile_collective_time(&tm, &p, HP_PROF_INTRA, HP_PROF_SEND, 1e6);
    CHECK(tm.fallback == HP_PROF_NONE);
    CHECK(p.nnotes >= 6 && strstr(p.notes[0], "3 kernel threads") && strstr(p.notes[0], "Test CPU"));
    int saw_norm = 0, saw_bf16 = 0, saw_link = 0;
    for (int i = 0; i < p.nnotes; i++) {
        saw_norm |= strstr(p.notes[i], "norm fp32: layernorm") && strstr(p.notes[i], "large: the medium measurement");
        saw_bf16 |= !strncmp(p.notes[i], "no bf16 kernel entries", 22);
        saw_link |= strstr(p.notes[i], "1 GB/s per rank and 20 us per message") && strstr(p.notes[i], "4 KiB, 64 KiB, 1 MiB");
    }
    CHECK(saw_norm && saw_bf16 && saw_link);

    size_t n = hp_profile_print(NULL, 0, &p);
    char *buf = malloc(n + 1);
    HP_ASSERT(buf);
    hp_profile_print(buf, n + 1, &p);
    hp_profile q;
    CHECK_OK(hp_profile_parse(&q, buf, n, "made"));
    CHECK(q.nnotes == p.nnotes && !memcmp(q.kernel, p.kernel, sizeof q.kernel) && !memcmp(q.coll, p.coll, sizeof q.coll));
    hp_profile_free(&q);
    free(buf);

    n = hp_calib_table(NULL, 0, &d, &p);
    buf = malloc(n + 1);
    HP_ASSERT(buf);
    CHECK(hp_calib_table(buf, n + 1, &d, &p) == n && strlen(buf) == n);
    CHECK(strstr(buf, "M=32 K=64 N=64") && strstr(buf, "(= medium)") && strstr(buf, "all_gather") &&
          strstr(buf, "20.00") && strstr(buf, "1.500") && !strstr(buf, "send "));
    free(buf);
    hp_profile_free(&p);

    /* a fit that fails names the tier and kind */
    d.coll[HP_PROF_INTRA][HP_PROF_ALL_REDUCE] = (hp_calib_coll){.n = 2, .ranks = 2, .bytes = {8, 8}, .seconds = {1, 2}};
    hp_status st = hp_calib_profile(&p, &d);
    CHECK(st && strstr(hp_status_msg(st), "(intra, all_reduce)") && strstr(hp_status_msg(st), "two distinct sizes"));
    hp_status_free(st);
}

int main(void) {
    test_fit();
    test_rates();
    test_profile();
    return hp_test_finish("test_calibrate_fit");
}
