/* Fuzz target: the cluster-description parser (autopar/cluster, `field:
 * value` lines). Any input either fails with a message or gives a
 * description whose numbers are in range and that prints to text which
 * parses back to the same description. */
#include <math.h>

#include "autopar/cluster.h"
#include "fuzz_util.h"

/* A peak reads back through its unit's scaling (x 10^9 or 10^12): to its last bit, or one rounding off. */
static int same_peak(double a, double b) { return a == b || fabs(a - b) <= 4e-16 * fabs(a); }

static int same(const hp_cluster *a, const hp_cluster *b) {
    if (strcmp(a->name, b->name) || a->supernodes != b->supernodes || a->ranks_per_supernode != b->ranks_per_supernode ||
        a->world != b->world || a->intra_bandwidth_GBps != b->intra_bandwidth_GBps ||
        a->intra_latency_us != b->intra_latency_us || a->inter_bandwidth_GBps != b->inter_bandwidth_GBps ||
        a->inter_latency_us != b->inter_latency_us || !same_peak(a->peak_fp32_flops, b->peak_fp32_flops) ||
        !same_peak(a->peak_bf16_flops, b->peak_bf16_flops) || a->memory_GB != b->memory_GB ||
        a->nassumptions != b->nassumptions)
        return 0;
    for (int i = 0; i < a->nassumptions; i++)
        if (strcmp(a->assumptions[i], b->assumptions[i])) return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    hp_cluster c;
    hp_status e = hp_cluster_parse(&c, text, "fuzz.cluster");
    free(text);
    if (fuzz_err(e)) return 0;
    FUZZ_CHECK(c.supernodes >= 1 && c.ranks_per_supernode >= 1 && c.world == c.supernodes * c.ranks_per_supernode);
    FUZZ_CHECK(isfinite(c.intra_bandwidth_GBps) && c.intra_bandwidth_GBps > 0 && c.inter_latency_us >= 0);
    size_t n = hp_cluster_print(NULL, 0, &c);
    char *buf = malloc(n + 1);
    FUZZ_CHECK(buf != NULL);
    FUZZ_CHECK(hp_cluster_print(buf, n + 1, &c) == n);
    hp_cluster d;
    e = hp_cluster_parse(&d, buf, "printed");
    FUZZ_CHECK(!e);
    FUZZ_CHECK(same(&c, &d));
    hp_cluster_free(&d);
    free(buf);
    hp_cluster_free(&c);
    return 0;
}
