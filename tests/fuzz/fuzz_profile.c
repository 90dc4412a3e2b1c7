/* Fuzz target: the calibration-profile reader (autopar/profile, JSON). Any
 * input either fails with a message or gives a profile whose rates are
 * finite and positive and that prints to JSON which parses back to the same
 * profile; every lookup of it gives a finite rate. */
#include <math.h>

#include "autopar/profile.h"
#include "fuzz_util.h"

static int same(const hp_profile *a, const hp_profile *b) {
    if (strcmp(a->machine, b->machine) || strcmp(a->cpu, b->cpu) || a->threads != b->threads ||
        a->peak_fp32_gflops != b->peak_fp32_gflops || a->peak_bf16_gflops != b->peak_bf16_gflops ||
        a->step_overhead_us != b->step_overhead_us || a->nnotes != b->nnotes ||
        hp_profile_shared_eff(a, 2) != hp_profile_shared_eff(b, 2) ||
        hp_profile_shared_eff(a, 4) != hp_profile_shared_eff(b, 4))
        return 0;
    for (int i = 0; i < a->nnotes; i++)
        if (strcmp(a->notes[i], b->notes[i])) return 0;
    return !memcmp(a->kernel, b->kernel, sizeof a->kernel) && !memcmp(a->coll, b->coll, sizeof a->coll);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hp_profile p;
    hp_status e = hp_profile_parse(&p, (const char *)data, size, "fuzz.json");
    if (fuzz_err(e)) return 0;
    FUZZ_CHECK(p.threads >= 1 && p.peak_fp32_gflops > 0 && p.step_overhead_us >= 0);
    for (int f = 0; f < HP_PROF_NFAMILIES; f++)
        for (int d = 0; d < HP_PROF_NDTYPES; d++) {
            hp_prof_rate r;
            hp_profile_kernel_rate(&r, &p, (hp_prof_family)f, (hp_prof_dtype)d, 1e7);
            FUZZ_CHECK(isfinite(r.gflops) && r.gflops > 0 && isfinite(r.gbps) && r.gbps > 0);
        }
    size_t n = hp_profile_print(NULL, 0, &p);
    char *buf = malloc(n + 1);
    FUZZ_CHECK(buf != NULL);
    FUZZ_CHECK(hp_profile_print(buf, n + 1, &p) == n);
    hp_profile q;
    e = hp_profile_parse(&q, buf, n, "printed");
    FUZZ_CHECK(!e);
    FUZZ_CHECK(same(&p, &q));
    hp_profile_free(&q);
    free(buf);
    hp_profile_free(&p);
    return 0;
}
