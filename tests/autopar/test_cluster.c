/* Cluster descriptions (autopar/cluster): the shipped files in clusters/
 * load with their expected values; the printer writes every field and
 * assumption and its text parses back to the same description; each kind of
 * mistake is one line naming FILE:LINE and the field. */
#include "autopar/cluster.h"
#include "testutil.h"

#ifndef HP_TEST_SOURCE_DIR
#error "tests/autopar/tests.cmake defines HP_TEST_SOURCE_DIR"
#endif

static void load_shipped(hp_cluster *c, const char *file) {
    char path[4096];
    snprintf(path, sizeof path, "%s/clusters/%s", HP_TEST_SOURCE_DIR, file);
    hp_status st = hp_cluster_load(c, path);
    CHECKF(!st, "%s: %s", path, hp_status_msg(st));
    hp_status_free(st);
}

static void check_prints_back(const hp_cluster *c) {
    size_t n = hp_cluster_print(NULL, 0, c);
    char *buf = malloc(n + 1);
    HP_ASSERT(buf);
    CHECK(hp_cluster_print(buf, n + 1, c) == n && strlen(buf) == n);
    const char *keys[] = {"name: ", "supernodes: ", "ranks_per_supernode: ", "intra_bandwidth_GBps: ",
                          "intra_latency_us: ", "inter_bandwidth_GBps: ", "inter_latency_us: ", "peak_fp32: ",
                          "peak_bf16: ", "memory_GB: "};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        CHECKF(strstr(buf, keys[k]), "no '%s' in:\n%s", keys[k], buf);
    for (int i = 0; i < c->nassumptions; i++) CHECKF(strstr(buf, c->assumptions[i]), "assumption %d missing", i);
    char world[64];
    snprintf(world, sizeof world, "= %d ranks", c->world);
    CHECKF(strstr(buf, world), "no '%s' in:\n%s", world, buf);
    /* a short buffer: cut, NUL-terminated, same length returned */
    char small[16];
    CHECK(hp_cluster_print(small, sizeof small, c) == n && strlen(small) == sizeof small - 1);
    hp_cluster b;
    CHECK_OK(hp_cluster_parse(&b, buf, "printed"));
    CHECK(!strcmp(b.name, c->name) && b.world == c->world && b.supernodes == c->supernodes);
    CHECK(b.intra_bandwidth_GBps == c->intra_bandwidth_GBps && b.inter_latency_us == c->inter_latency_us);
    CHECK_NEAR(b.peak_fp32_flops / c->peak_fp32_flops, 1, 1e-14);
    CHECK_NEAR(b.peak_bf16_flops / c->peak_bf16_flops, 1, 1e-14);
    CHECK(b.memory_GB == c->memory_GB && b.nassumptions == c->nassumptions);
    for (int i = 0; i < b.nassumptions && i < c->nassumptions; i++) CHECK(!strcmp(b.assumptions[i], c->assumptions[i]));
    hp_cluster_free(&b);
    free(buf);
}

static void test_shipped(void) {
    hp_cluster c;
    load_shipped(&c, "ascend910-2048.cluster");
    CHECK(!strcmp(c.name, "ascend910-2048"));
    CHECK(c.supernodes == 256 && c.ranks_per_supernode == 8 && c.world == 2048);
    CHECK(c.intra_bandwidth_GBps == 30 && c.intra_latency_us == 5);
    CHECK(c.inter_bandwidth_GBps == 12.5 && c.inter_latency_us == 10);
    CHECK(c.peak_fp32_flops == 64e12 && c.peak_bf16_flops == 256e12 && c.memory_GB == 32);
    CHECK(c.nassumptions == 6);
    CHECK(c.nassumptions > 0 && !strncmp(c.assumptions[0], "a supernode is one 8-processor server", 37));
    check_prints_back(&c);
    hp_cluster_free(&c);

    load_shipped(&c, "atlas900-a3-superpod.cluster");
    CHECK(!strcmp(c.name, "atlas900-a3-superpod"));
    CHECK(c.supernodes == 48 && c.ranks_per_supernode == 16 && c.world == 768);
    CHECK(c.intra_bandwidth_GBps == 196 && c.intra_latency_us == 2);
    CHECK(c.inter_bandwidth_GBps == 50 && c.inter_latency_us == 10);
    CHECK(c.peak_fp32_flops == 94e12 && c.peak_bf16_flops == 376e12 && c.memory_GB == 64);
    CHECK(c.nassumptions == 7);
    CHECK(c.nassumptions > 0 && !strncmp(c.assumptions[0], "a rank is one die", 17));
    check_prints_back(&c);
    hp_cluster_free(&c);

    load_shipped(&c, "local-2core.cluster");
    CHECK(!strcmp(c.name, "local-2core"));
    CHECK(c.supernodes == 1 && c.ranks_per_supernode == 2 && c.world == 2);
    CHECK(c.intra_bandwidth_GBps == 10 && c.intra_latency_us == 1);
    CHECK(c.inter_bandwidth_GBps == 1 && c.inter_latency_us == 20);
    CHECK(c.peak_fp32_flops == 95e9 && c.peak_bf16_flops == 95e9 && c.memory_GB == 8);
    CHECK(c.nassumptions == 6);
    CHECK(c.nassumptions > 0 && !strncmp(c.assumptions[0], "placeholders until a calibration", 32));
    check_prints_back(&c);
    hp_cluster_free(&c);
}

/* A valid description of 10 lines with line `line` (1-based; 0: none)
 * replaced by `with` ("" leaves it empty) and `extra` appended, parsed. */
static const char *const good[] = {
    "name: t", "supernodes: 2", "ranks_per_supernode: 4", "intra_bandwidth_GBps: 100", "intra_latency_us: 1",
    "inter_bandwidth_GBps: 10", "inter_latency_us: 0", "peak_fp32: 500 GFLOP/s", "peak_bf16: 1.5 TFLOP/s",
    "memory_GB: 16",
};
enum { NGOOD = sizeof good / sizeof *good };

static hp_status parse_with(int line, const char *with, const char *extra) {
    char text[2048];
    size_t used = 0;
    for (int i = 0; i < NGOOD; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s\n", i + 1 == line ? with : good[i]);
    snprintf(text + used, sizeof text - used, "%s", extra ? extra : "");
    hp_cluster c;
    hp_status st = hp_cluster_parse(&c, text, "t.cluster");
    if (!st) hp_cluster_free(&c);
    return st;
}

static void expect(hp_status st, const char *where, const char *field, const char *problem) {
    CHECKF(st, "expected an error at %s about %s", where, field);
    if (!st) return;
    const char *m = hp_status_msg(st);
    char head[128];
    snprintf(head, sizeof head, "%s: field '%s': ", where, field);
    CHECKF(!strncmp(m, head, strlen(head)), "'%s' does not start with '%s'", m, head);
    CHECKF(strstr(m, problem), "'%s' lacks '%s'", m, problem);
    CHECKF(!strchr(m, '\n'), "'%s' is more than one line", m);
    hp_status_free(st);
}

static void test_errors(void) {
    hp_cluster c;
    CHECK_OK(hp_cluster_parse(&c, "# comment only above\n  name: t # trailing\nsupernodes:2\nranks_per_supernode: 4\n"
                                  "intra_bandwidth_GBps: 100\nintra_latency_us: 1\ninter_bandwidth_GBps: 10\n"
                                  "inter_latency_us: 0\npeak_fp32: 500GFLOP/s\npeak_bf16: 1.5 TFLOP/s\nmemory_GB: 16",
                             "ok"));
    CHECK(c.world == 8 && c.peak_fp32_flops == 500e9 && c.peak_bf16_flops == 1.5e12 && c.nassumptions == 0);
    hp_cluster_free(&c);

    expect(parse_with(0, "", "bandwidth: 3\n"), "t.cluster:11", "bandwidth", "unknown field");
    expect(parse_with(0, "", "\n# x\nsupernodes: 3\n"), "t.cluster:13", "supernodes", "given twice (first on line 2)");
    expect(parse_with(10, "", NULL), "t.cluster:11", "memory_GB", "missing");
    expect(parse_with(1, "# no name", NULL), "t.cluster:11", "name", "missing");
    expect(parse_with(4, "intra_bandwidth_GBps: fast", NULL), "t.cluster:4", "intra_bandwidth_GBps",
           "'fast' is not a number");
    expect(parse_with(4, "intra_bandwidth_GBps: 30 GB/s", NULL), "t.cluster:4", "intra_bandwidth_GBps",
           "not a number (the unit");
    expect(parse_with(6, "inter_bandwidth_GBps: -5", NULL), "t.cluster:6", "inter_bandwidth_GBps", "must be positive");
    expect(parse_with(6, "inter_bandwidth_GBps: 0", NULL), "t.cluster:6", "inter_bandwidth_GBps", "must be positive");
    expect(parse_with(6, "inter_bandwidth_GBps: nan", NULL), "t.cluster:6", "inter_bandwidth_GBps", "not a number");
    expect(parse_with(6, "inter_bandwidth_GBps: 1e999", NULL), "t.cluster:6", "inter_bandwidth_GBps",
           "not a finite number");
    expect(parse_with(5, "intra_latency_us: -1", NULL), "t.cluster:5", "intra_latency_us", "must be 0 or more");
    expect(parse_with(3, "ranks_per_supernode: 2.5", NULL), "t.cluster:3", "ranks_per_supernode", "not a whole number");
    expect(parse_with(3, "ranks_per_supernode: 0", NULL), "t.cluster:3", "ranks_per_supernode", "1 or more");
    expect(parse_with(2, "supernodes: 99999999999", NULL), "t.cluster:2", "supernodes", "more than 2147483647");
    /* overflow: supernodes 2 on line 2, ranks on line 3 -> named at the later line */
    expect(parse_with(3, "ranks_per_supernode: 2000000000", NULL), "t.cluster:3", "ranks_per_supernode",
           "supernodes x ranks_per_supernode = 2 x 2000000000 is more than 2147483647 ranks");
    expect(parse_with(8, "peak_fp32: 500 GFLOPS", NULL), "t.cluster:8", "peak_fp32",
           "unit 'GFLOPS' is not TFLOP/s or GFLOP/s");
    expect(parse_with(9, "peak_bf16: 1.5", NULL), "t.cluster:9", "peak_bf16", "has no unit");
    expect(parse_with(9, "peak_bf16: 1e300 TFLOP/s", NULL), "t.cluster:9", "peak_bf16", "not a finite number");
    expect(parse_with(10, "memory_GB:", NULL), "t.cluster:10", "memory_GB", "no value");
    expect(parse_with(1, "name: two words", NULL), "t.cluster:1", "name", "has ' '");
    expect(hp_cluster_parse(&c, "", "empty.cluster"), "empty.cluster:1", "name", "empty");
    expect(hp_cluster_parse(&c, "# only a comment\n\n", "empty.cluster"), "empty.cluster:1", "name", "empty");

    hp_status st = parse_with(4, "intra_bandwidth_GBps 100", NULL);
    CHECK(st && strstr(hp_status_msg(st), "t.cluster:4: ") && strstr(hp_status_msg(st), "has no ':'"));
    hp_status_free(st);

    /* assumptions are kept in order, repeated freely */
    CHECK_OK(hp_cluster_parse(&c, "assumption: first one\nname: a\nsupernodes: 1\nranks_per_supernode: 1\n"
                                  "intra_bandwidth_GBps: 1\nintra_latency_us: 1\ninter_bandwidth_GBps: 1\n"
                                  "inter_latency_us: 1\npeak_fp32: 1 GFLOP/s\npeak_bf16: 1 GFLOP/s\nmemory_GB: 1\n"
                                  "assumption:  second: with a colon  \n",
                             "a"));
    CHECK(c.nassumptions == 2 && !strcmp(c.assumptions[0], "first one") &&
          !strcmp(c.assumptions[c.nassumptions - 1], "second: with a colon"));
    hp_cluster_free(&c);

    /* a file that is not there, by path */
    st = hp_cluster_load(&c, "/nonexistent/x.cluster");
    CHECK(st && strstr(hp_status_msg(st), "/nonexistent/x.cluster"));
    hp_status_free(st);
}

int main(void) {
    test_shipped();
    test_errors();
    return hp_test_finish("test_cluster");
}
