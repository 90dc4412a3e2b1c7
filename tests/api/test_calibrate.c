/* hp_calibrate (`hyperpar calibrate`'s library side) in quick mode on 1
 * thread: the profile it makes parses back (print -> parse -> the same
 * tables), every fp32 family has all three buckets with positive, finite
 * rates, no bf16 kernel entry where the machine has no native bf16 (else
 * lookups fall back), both peaks and both tiers' five collective kinds are
 * there (ranks 2, alpha >= 0, beta > 0), the written file checks back with
 * those counts, the table names what was measured, and bad options are one-line
 * errors. No timing is asserted. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <hyperpar/hyperpar.h>

#include "autopar/profile.h"
#include "testutil.h"

static void check_same(const hp_profile *a, const hp_profile *b) {
    CHECK(!strcmp(a->machine, b->machine) && !strcmp(a->cpu, b->cpu) && a->nnotes == b->nnotes);
    CHECK(a->threads == b->threads && a->peak_fp32_gflops == b->peak_fp32_gflops &&
          a->peak_bf16_gflops == b->peak_bf16_gflops);
    for (int i = 0; i < a->nnotes && i < b->nnotes; i++) CHECK(!strcmp(a->notes[i], b->notes[i]));
    CHECK(!memcmp(a->kernel, b->kernel, sizeof a->kernel));
    CHECK(!memcmp(a->coll, b->coll, sizeof a->coll));
}

static void test_quick(void) {
    hp_calibrate_options o;
    hp_calibrate_options_default(&o);
    CHECK(o.threads == 0 && o.quick == 0 && o.inter_bw_gbps == 1 && o.inter_latency_us == 20 && !o.sizes);
    o.quick = 1, o.threads = 1, o.machine = "test-box";
    hp_calibration *c;
    CHECK_OK(hp_calibrate(&c, &o));
    if (!c) return;
    const char *json = hp_calibration_json(c);
    hp_profile p;
    CHECK_OK(hp_profile_parse(&p, json, strlen(json), "calibrated"));
    CHECK(!strcmp(p.machine, "test-box") && p.threads == 1 && p.cpu[0]);
    CHECK(isfinite(p.peak_fp32_gflops) && p.peak_fp32_gflops > 0);
    CHECK(isfinite(p.peak_bf16_gflops) && p.peak_bf16_gflops > 0);
    CHECK(p.nnotes >= 5 && strstr(p.notes[0], "--quick") && strstr(p.notes[0], "1 kernel threads"));
    for (int f = 0; f < HP_PROF_NFAMILIES; f++)
        for (int b = 0; b < HP_PROF_NBUCKETS; b++) {
            const hp_prof_kernel *k = &p.kernel[f][HP_PROF_FP32][b];
            CHECKF(k->given && isfinite(k->gflops) && k->gflops > 0 && isfinite(k->gbps) && k->gbps > 0,
                   "%s %s: given %d, %g GFLOP/s, %g GB/s", hp_profile_family_name((hp_prof_family)f),
                   hp_profile_bucket_name((hp_prof_bucket)b), k->given, k->gflops, k->gbps);
            /* memory-bound families' large bucket is their medium measurement */
            if (b == HP_PROF_LARGE && f >= HP_PROF_POINTWISE)
                CHECK(!memcmp(k, &p.kernel[f][HP_PROF_FP32][HP_PROF_MEDIUM], sizeof *k));
        }
    int nbf16 = 0;
    for (int f = 0; f < HP_PROF_NFAMILIES; f++)
        for (int b = 0; b < HP_PROF_NBUCKETS; b++) nbf16 += p.kernel[f][HP_PROF_BF16][b].given;
    CHECK(nbf16 == 0);
    hp_prof_rate r;
    hp_profile_kernel_rate(&r, &p, HP_PROF_GEMM, HP_PROF_BF16, 5e9);
    CHECK(r.fallback == HP_PROF_FROM_FP32 && r.bucket == HP_PROF_LARGE);
    for (int t = 0; t < HP_PROF_NTIERS; t++)
        for (int k = 0; k < HP_PROF_NKINDS; k++) {
            const hp_prof_coll *e = &p.coll[t][k];
            CHECKF(e->given && e->ranks == 2 && isfinite(e->alpha_us) && e->alpha_us >= 0 && isfinite(e->beta_GBps) &&
                       e->beta_GBps > 0,
                   "%s %s", hp_profile_tier_name((hp_prof_tier)t), hp_profile_kind_name((hp_prof_kind)k));
            hp_prof_time tm;
            hp_profile_collective_time(&tm, &p, (hp_prof_tier)t, (hp_prof_kind)k, 1 << 20);
            CHECK(tm.fallback == HP_PROF_EXACT && tm.time_us > 0);
        }

    /* print -> parse -> the same */
    size_t n = hp_profile_print(NULL, 0, &p);
    CHECK(n == strlen(json));
    char *buf = malloc(n + 1);
    HP_ASSERT(buf);
    hp_profile_print(buf, n + 1, &p);
    CHECK(!strcmp(buf, json));
    hp_profile q;
    CHECK_OK(hp_profile_parse(&q, buf, n, "printed"));
    check_same(&p, &q);
    hp_profile_free(&q);
    free(buf);

    const char *table = hp_calibration_table(c);
    /* the entries a GPT-2 training step has nodes in come from the step (api/calibrate_step), the others from
     * one-operator programs (grouped_linear: no GPT-2 node) */
    CHECK(strstr(table, "training step") && strstr(table, "grouped_linear") && strstr(table, "reduce_scatter") &&
          strstr(table, "alpha_us"));

    char path[] = "/tmp/hp_test_calibrate_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    CHECK_OK(hp_calibration_write(c, path));
    int nk = 0, nc = 0;
    CHECK_OK(hp_calibration_check_file(path, &nk, &nc));
    CHECK(nk == HP_PROF_NFAMILIES * HP_PROF_NBUCKETS && nc == HP_PROF_NTIERS * HP_PROF_NKINDS);
    hp_profile l;
    CHECK_OK(hp_profile_load(&l, path));
    check_same(&p, &l);
    hp_profile_free(&l);
    unlink(path);
    hp_profile_free(&p);
    hp_calibration_free(c);
}

static void expect_error(const hp_calibrate_options *o, const char *what) {
    hp_calibration *c = (hp_calibration *)&c;
    hp_status st = hp_calibrate(&c, o);
    CHECKF(st && strstr(hp_status_msg(st), what) && !strchr(hp_status_msg(st), '\n'), "%s: %s", what,
           st ? hp_status_msg(st) : "no error");
    CHECK(c == NULL);
    hp_status_free(st);
}

static void test_errors(void) {
    hp_calibrate_options o;
    hp_calibrate_options_default(&o);
    o.quick = 1, o.threads = 300;
    expect_error(&o, "threads must be in 1..256, got 300");
    o.threads = 1, o.machine = "a b";
    expect_error(&o, "machine name 'a b' has ' '");
    o.machine = NULL, o.inter_bw_gbps = -1;
    expect_error(&o, "must be in 0..1e6");
    o.inter_bw_gbps = 1;
    int64_t one[1] = {4096};
    o.sizes = one, o.nsizes = 1;
    expect_error(&o, "1 collective sizes given");
    int nk, nc;
    hp_status st = hp_calibration_check_file("/nonexistent/p.json", &nk, &nc);
    CHECK(st && strstr(hp_status_msg(st), "/nonexistent/p.json") && nk == 0 && nc == 0);
    hp_status_free(st);
}

int main(void) {
    test_errors();
    test_quick();
    return hp_test_finish("test_calibrate");
}
