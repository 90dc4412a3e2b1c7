/* Calibration profiles (autopar/profile): the shipped profiles/generic-cpu.json
 * loads with its expected entries and notes; kernel lookups pick the call's
 * bucket and each fallback (nearest bucket, fp32 entry, family default),
 * reporting which; collective times are exactly α + N/β, or 0.5 x
 * all_reduce's for a kind not given, none (reported) for a tier without
 * all_reduce or a profile without collectives; the printer's JSON parses
 * back to the same profile; each kind of mistake is one line naming the file
 * and the JSON path; every operator of the table maps to its family. */
#include <math.h>
#include <string.h>

#include "autopar/profile.h"
#include "ops/ops.h"
#include "testutil.h"

#ifndef HP_TEST_SOURCE_DIR
#error "tests/autopar/tests.cmake defines HP_TEST_SOURCE_DIR"
#endif

static int count_kernels(const hp_profile *p, int dtype) {
    int n = 0;
    for (int f = 0; f < HP_PROF_NFAMILIES; f++)
        for (int b = 0; b < HP_PROF_NBUCKETS; b++) n += p->kernel[f][dtype][b].given;
    return n;
}

static void check_same(const hp_profile *a, const hp_profile *b) {
    CHECK(!strcmp(a->machine, b->machine) && !strcmp(a->cpu, b->cpu) && a->nnotes == b->nnotes);
    CHECK(a->threads == b->threads && a->peak_fp32_gflops == b->peak_fp32_gflops &&
          a->peak_bf16_gflops == b->peak_bf16_gflops && a->step_overhead_us == b->step_overhead_us &&
          hp_profile_shared_eff(a, 2) == hp_profile_shared_eff(b, 2) &&
          hp_profile_shared_eff(a, 4) == hp_profile_shared_eff(b, 4));
    for (int i = 0; i < a->nnotes && i < b->nnotes; i++) CHECK(!strcmp(a->notes[i], b->notes[i]));
    CHECK(!memcmp(a->kernel, b->kernel, sizeof a->kernel));
    CHECK(!memcmp(a->coll, b->coll, sizeof a->coll));
}

static void check_prints_back(const hp_profile *p) {
    size_t n = hp_profile_print(NULL, 0, p);
    char *buf = malloc(n + 1);
    HP_ASSERT(buf);
    CHECK(hp_profile_print(buf, n + 1, p) == n && strlen(buf) == n);
    for (int i = 0; i < p->nnotes; i++) CHECKF(strstr(buf, p->notes[i]) || strchr(p->notes[i], '"'), "note %d", i);
    char small[16];
    CHECK(hp_profile_print(small, sizeof small, p) == n && strlen(small) == sizeof small - 1);
    hp_profile b;
    hp_status st = hp_profile_parse(&b, buf, n, "printed");
    CHECKF(!st, "%s\n%s", hp_status_msg(st), buf);
    if (!st) {
        check_same(p, &b);
        hp_profile_free(&b);
    }
    hp_status_free(st);
    free(buf);
}

static void test_shipped(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/profiles/generic-cpu.json", HP_TEST_SOURCE_DIR);
    hp_profile p;
    hp_status st = hp_profile_load(&p, path);
    CHECKF(!st, "%s: %s", path, hp_status_msg(st));
    hp_status_free(st);
    if (st) return;
    CHECK(!strcmp(p.machine, "generic-cpu"));
    CHECK(!strncmp(p.cpu, "generic 2-core AVX2", 19));
    CHECK(p.nnotes == 10 && p.nnotes > 0 && !strncmp(p.notes[0], "a default for a generic machine", 31));
    CHECK(p.threads == 2 && p.peak_fp32_gflops == 160 && p.peak_bf16_gflops == 80);
    CHECK(count_kernels(&p, HP_PROF_FP32) == 21 && count_kernels(&p, HP_PROF_BF16) == 9);
    const hp_prof_kernel *g = &p.kernel[HP_PROF_GEMM][HP_PROF_FP32][HP_PROF_LARGE];
    CHECK(g->given && g->gflops == 60 && g->gbps == 12);
    g = &p.kernel[HP_PROF_GEMM][HP_PROF_BF16][HP_PROF_SMALL];
    CHECK(g->given && g->gflops == 3 && g->gbps == 4);
    g = &p.kernel[HP_PROF_EMBEDDING][HP_PROF_FP32][HP_PROF_MEDIUM];
    CHECK(g->given && g->gflops == 0.5 && g->gbps == 5);
    CHECK(!p.kernel[HP_PROF_NORM][HP_PROF_BF16][HP_PROF_LARGE].given);
    for (int t = 0; t < HP_PROF_NTIERS; t++)
        for (int k = 0; k < HP_PROF_NKINDS; k++) CHECK(p.coll[t][k].given && p.coll[t][k].ranks == 2);
    CHECK(p.coll[HP_PROF_INTRA][HP_PROF_ALL_REDUCE].alpha_us == 4 &&
          p.coll[HP_PROF_INTRA][HP_PROF_ALL_REDUCE].beta_GBps == 2.5);
    CHECK(p.coll[HP_PROF_INTER][HP_PROF_ALL_TO_ALL].alpha_us == 20 &&
          p.coll[HP_PROF_INTER][HP_PROF_ALL_TO_ALL].beta_GBps == 1);

    /* the shipped file's own fallback: bf16 norm is priced at fp32 */
    hp_prof_rate r;
    hp_profile_kernel_rate(&r, &p, HP_PROF_NORM, HP_PROF_BF16, 5e9);
    CHECK(r.fallback == HP_PROF_FROM_FP32 && r.dtype == HP_PROF_FP32 && r.bucket == HP_PROF_LARGE);
    CHECK(r.gflops == 1.5 && r.gbps == 6);
    hp_profile_kernel_rate(&r, &p, HP_PROF_GEMM, HP_PROF_BF16, 2e6);
    CHECK(r.fallback == HP_PROF_EXACT && r.dtype == HP_PROF_BF16 && r.bucket == HP_PROF_MEDIUM && r.gflops == 15);
    check_prints_back(&p);
    hp_profile_free(&p);
}

/* A profile with gemm fp32 only in small and large, attention bf16 only in
 * medium, softmax_xent fp32 medium, and collectives all_reduce on both tiers
 * plus intra all_gather. */
static const char lookup_text[] =
    "{\"format\": \"hyperpar-profile\", \"version\": 1, \"machine\": \"m\", \"cpu\": \"c \\\"q\\\"\\n\",\n"
    " \"threads\": 3, \"peak_fp32_gflops\": 12.5, \"peak_bf16_gflops\": 0.25,\n"
    " \"notes\": [\"one\", \"two \\\\ \\\"quoted\\\"\"],\n"
    " \"kernels\": [\n"
    "  {\"family\": \"gemm\", \"dtype\": \"fp32\", \"bucket\": \"small\", \"gflops\": 2, \"gbps\": 3},\n"
    "  {\"family\": \"gemm\", \"dtype\": \"fp32\", \"bucket\": \"large\", \"gflops\": 50, \"gbps\": 11},\n"
    "  {\"family\": \"attention\", \"dtype\": \"bf16\", \"bucket\": \"medium\", \"gflops\": 7, \"gbps\": 0.1},\n"
    "  {\"family\": \"softmax_xent\", \"dtype\": \"fp32\", \"bucket\": \"medium\", \"gflops\": 0.3, \"gbps\": 4.5}],\n"
    " \"collectives\": [\n"
    "  {\"tier\": \"inter\", \"kind\": \"all_reduce\", \"ranks\": 4, \"alpha_us\": 30, \"beta_GBps\": 0.7},\n"
    "  {\"tier\": \"intra\", \"kind\": \"all_reduce\", \"ranks\": 2, \"alpha_us\": 0, \"beta_GBps\": 3},\n"
    "  {\"tier\": \"intra\", \"kind\": \"all_gather\", \"ranks\": 8, \"alpha_us\": 1.5, \"beta_GBps\": 6.25}]}\n";

static void test_lookups(void) {
    CHECK(hp_profile_bucket_of(0) == HP_PROF_SMALL && hp_profile_bucket_of(999999) == HP_PROF_SMALL);
    CHECK(hp_profile_bucket_of(1e6) == HP_PROF_MEDIUM && hp_profile_bucket_of(999999999) == HP_PROF_MEDIUM);
    CHECK(hp_profile_bucket_of(1e9) == HP_PROF_LARGE && hp_profile_bucket_of(1e15) == HP_PROF_LARGE);

    hp_profile p;
    CHECK_OK(hp_profile_parse(&p, lookup_text, strlen(lookup_text), "lookup.json"));
    CHECK(!strcmp(p.cpu, "c \"q\"\n") && p.nnotes == 2);
    CHECK(p.threads == 3 && p.peak_fp32_gflops == 12.5 && p.peak_bf16_gflops == 0.25);
    CHECK(p.nnotes == 2 && !strcmp(p.notes[1], "two \\ \"quoted\""));
    hp_prof_rate r;
    /* exact */
    hp_profile_kernel_rate(&r, &p, HP_PROF_GEMM, HP_PROF_FP32, 10);
    CHECK(r.fallback == HP_PROF_EXACT && r.bucket == HP_PROF_SMALL && r.gflops == 2 && r.gbps == 3);
    hp_profile_kernel_rate(&r, &p, HP_PROF_GEMM, HP_PROF_FP32, 3e9);
    CHECK(r.fallback == HP_PROF_EXACT && r.bucket == HP_PROF_LARGE && r.gflops == 50 && r.gbps == 11);
    /* nearest bucket: medium is missing, small and large are equally near: the smaller */
    hp_profile_kernel_rate(&r, &p, HP_PROF_GEMM, HP_PROF_FP32, 5e7);
    CHECK(r.fallback == HP_PROF_NEAREST_BUCKET && r.bucket == HP_PROF_SMALL && r.dtype == HP_PROF_FP32 &&
          r.gflops == 2);
    hp_profile_kernel_rate(&r, &p, HP_PROF_ATTENTION, HP_PROF_BF16, 1e12);
    CHECK(r.fallback == HP_PROF_NEAREST_BUCKET && r.bucket == HP_PROF_MEDIUM && r.dtype == HP_PROF_BF16 &&
          r.gflops == 7 && r.gbps == 0.1);
    /* fp32 entry: bf16 gemm has none; large asked, fp32 large given */
    hp_profile_kernel_rate(&r, &p, HP_PROF_GEMM, HP_PROF_BF16, 1e10);
    CHECK(r.fallback == HP_PROF_FROM_FP32 && r.dtype == HP_PROF_FP32 && r.bucket == HP_PROF_LARGE && r.gflops == 50);
    /* fp32 entry in the nearest bucket: softmax_xent bf16 small -> fp32 medium */
    hp_profile_kernel_rate(&r, &p, HP_PROF_SOFTMAX_XENT, HP_PROF_BF16, 100);
    CHECK(r.fallback == HP_PROF_FROM_FP32 && r.dtype == HP_PROF_FP32 && r.bucket == HP_PROF_MEDIUM &&
          r.gflops == 0.3 && r.gbps == 4.5);
    /* family default: nothing for norm; nor fp32 attention (bf16 never stands in for fp32) */
    double dg, db;
    hp_profile_family_default(&dg, &db, HP_PROF_NORM);
    CHECK(dg == 0.1 && db == 1);
    hp_profile_kernel_rate(&r, &p, HP_PROF_NORM, HP_PROF_BF16, 2e6);
    CHECK(r.fallback == HP_PROF_FAMILY_DEFAULT && r.dtype == HP_PROF_BF16 && r.bucket == HP_PROF_MEDIUM &&
          r.gflops == 0.1 && r.gbps == 1);
    hp_profile_kernel_rate(&r, &p, HP_PROF_ATTENTION, HP_PROF_FP32, 2e9);
    CHECK(r.fallback == HP_PROF_FAMILY_DEFAULT && r.dtype == HP_PROF_FP32 && r.bucket == HP_PROF_LARGE &&
          r.gflops == 1 && r.gbps == 1);
    CHECK(!strcmp(hp_profile_fallback_name(HP_PROF_NEAREST_BUCKET), "nearest bucket"));
    CHECK(!strcmp(hp_profile_fallback_name(HP_PROF_FROM_FP32), "fp32 entry"));
    CHECK(!strcmp(hp_profile_fallback_name(HP_PROF_FAMILY_DEFAULT), "family default"));

    /* collectives: alpha + N / beta, microseconds, beta in 10^9 bytes/s */
    hp_prof_time t;
    hp_profile_collective_time(&t, &p, HP_PROF_INTRA, HP_PROF_ALL_GATHER, 1e6);
    CHECK(t.fallback == HP_PROF_EXACT && t.kind == HP_PROF_ALL_GATHER && t.ranks == 8);
    CHECK(t.time_us == 1.5 + 1e6 / (6.25 * 1e3) && t.time_us == 161.5);
    hp_profile_collective_time(&t, &p, HP_PROF_INTRA, HP_PROF_ALL_REDUCE, 3e9);
    CHECK(t.fallback == HP_PROF_EXACT && t.time_us == 1e6);
    hp_profile_collective_time(&t, &p, HP_PROF_INTER, HP_PROF_ALL_REDUCE, 0);
    CHECK(t.fallback == HP_PROF_EXACT && t.time_us == 30);
    hp_profile_collective_time(&t, &p, HP_PROF_INTER, HP_PROF_ALL_REDUCE, 7e5);
    CHECK(t.time_us == 30 + 7e5 / (0.7 * 1e3));
    CHECK_NEAR(t.time_us, 1030, 1e-9);
    /* missing kinds: 0.5 x all_reduce's, reported */
    hp_profile_collective_time(&t, &p, HP_PROF_INTER, HP_PROF_ALL_TO_ALL, 7e5);
    CHECK(t.fallback == HP_PROF_FROM_ALL_REDUCE && t.kind == HP_PROF_ALL_REDUCE && t.alpha_us == 30 &&
          t.beta_GBps == 0.7 && t.ranks == 4);
    CHECK(t.time_us == HP_PROF_FALLBACK_FACTOR * (30 + 7e5 / (0.7 * 1e3)));
    CHECK_NEAR(t.time_us, 515, 1e-9);
    hp_profile_collective_time(&t, &p, HP_PROF_INTRA, HP_PROF_SEND, 3e3);
    CHECK(t.fallback == HP_PROF_FROM_ALL_REDUCE && t.time_us == 0.5);
    CHECK(!strcmp(hp_profile_fallback_name(t.fallback), "all_reduce x 0.5"));
    check_prints_back(&p);
    hp_profile_free(&p);
}

/* A profile of kernels only (no collectives), and one whose inter tier lacks
 * all_reduce: collective lookups there report none. */
static void test_no_collectives(void) {
    static const char text[] =
        "{\"format\": \"hyperpar-profile\", \"version\": 1, \"machine\": \"remote\", \"cpu\": \"c\","
        " \"threads\": 1, \"peak_fp32_gflops\": 100, \"peak_bf16_gflops\": 200, \"step_overhead_us\": 2500,"
        " \"kernels\": [{\"family\": \"norm\", \"dtype\": \"bf16\", \"bucket\": \"large\", \"gflops\": 4,"
        " \"gbps\": 9}], \"collectives\": []}";
    hp_profile p;
    CHECK_OK(hp_profile_parse(&p, text, strlen(text), "k.json"));
    hp_prof_time t;
    for (int tier = 0; tier < HP_PROF_NTIERS; tier++)
        for (int k = 0; k < HP_PROF_NKINDS; k++) {
            hp_profile_collective_time(&t, &p, (hp_prof_tier)tier, (hp_prof_kind)k, 1e6);
            CHECK(t.fallback == HP_PROF_NONE && t.time_us == 0 && t.kind == (hp_prof_kind)k && t.ranks == 0);
        }
    CHECK(!strcmp(hp_profile_fallback_name(HP_PROF_NONE), "none"));
    hp_prof_rate r;
    hp_profile_kernel_rate(&r, &p, HP_PROF_NORM, HP_PROF_BF16, 1e9);
    CHECK(r.fallback == HP_PROF_EXACT && r.gflops == 4 && r.gbps == 9);
    CHECK(p.step_overhead_us == 2500); /* optional: the shipped profile has none (0) */
    /* the shared cores' efficiency: 1 at one rank-thread per core, interpolated in log2 to 2x and 4x, 4x's beyond */
    CHECK(hp_profile_shared_eff(&p, 1) == 1 && hp_profile_shared_eff(&p, 8) == 1); /* absent: 1 */
    p.shared_eff[0] = 0.8, p.shared_eff[1] = 0.6;
    CHECK(hp_profile_shared_eff(&p, 0.5) == 1 && fabs(hp_profile_shared_eff(&p, 2) - 0.8) < 1e-12);
    CHECK(fabs(hp_profile_shared_eff(&p, 4) - 0.6) < 1e-12 && fabs(hp_profile_shared_eff(&p, 8) - 0.6) < 1e-12);
    CHECK(fabs(hp_profile_shared_eff(&p, 2.8284271247461903) - 0.7) < 1e-9);
    check_prints_back(&p);
    hp_profile_free(&p);

    static const char text2[] =
        "{\"format\": \"hyperpar-profile\", \"version\": 1, \"machine\": \"m\", \"cpu\": \"c\","
        " \"threads\": 1, \"peak_fp32_gflops\": 100, \"peak_bf16_gflops\": 200, \"kernels\": [],"
        " \"collectives\": [{\"tier\": \"intra\", \"kind\": \"all_reduce\", \"ranks\": 2, \"alpha_us\": 1,"
        " \"beta_GBps\": 3}, {\"tier\": \"inter\", \"kind\": \"send\", \"ranks\": 2, \"alpha_us\": 10,"
        " \"beta_GBps\": 1}]}";
    CHECK_OK(hp_profile_parse(&p, text2, strlen(text2), "k.json"));
    hp_profile_collective_time(&t, &p, HP_PROF_INTER, HP_PROF_SEND, 1e3);
    CHECK(t.fallback == HP_PROF_EXACT && t.time_us == 11 && t.ranks == 2);
    hp_profile_collective_time(&t, &p, HP_PROF_INTER, HP_PROF_ALL_GATHER, 1e3);
    CHECK(t.fallback == HP_PROF_NONE && t.time_us == 0);
    hp_profile_collective_time(&t, &p, HP_PROF_INTRA, HP_PROF_ALL_GATHER, 3e3);
    CHECK(t.fallback == HP_PROF_FROM_ALL_REDUCE && t.time_us == 1);
    check_prints_back(&p);
    hp_profile_free(&p);
}

/* Every operator name of src/ops and src/parallel (`grep -rhn '\\.name = "'
 * src/ops src/parallel`) with the family it is priced as; the operator
 * table (hp_ops_all) has no name missing here. */
static const struct {
    const char *name;
    hp_prof_family f;
} op_families[] = {
    {"linear", HP_PROF_GEMM}, {"muon_update", HP_PROF_GEMM}, {"muon_orth", HP_PROF_GEMM}, {"muon_team", HP_PROF_GEMM},
    {"linear_bwd", HP_PROF_GEMM}, {"linear_cross_entropy", HP_PROF_GEMM},
    {"linear_cross_entropy_bwd", HP_PROF_GEMM}, {"grouped_linear", HP_PROF_GROUPED_GEMM},
    {"grouped_linear_bwd", HP_PROF_GROUPED_GEMM}, {"attention", HP_PROF_ATTENTION},
    {"attention_bwd", HP_PROF_ATTENTION}, {"layernorm", HP_PROF_NORM}, {"layernorm_bwd", HP_PROF_NORM},
    {"rmsnorm", HP_PROF_NORM}, {"rmsnorm_bwd", HP_PROF_NORM}, {"cross_entropy", HP_PROF_SOFTMAX_XENT},
    {"cross_entropy_bwd", HP_PROF_SOFTMAX_XENT}, {"cross_entropy_vp", HP_PROF_SOFTMAX_XENT},
    {"cross_entropy_vp_bwd", HP_PROF_SOFTMAX_XENT}, {"cross_entropy_vp_stats", HP_PROF_SOFTMAX_XENT},
    {"embedding", HP_PROF_EMBEDDING}, {"embedding_bwd", HP_PROF_EMBEDDING}, {"embedding_bwd_acc", HP_PROF_EMBEDDING},
    {"embedding_vp", HP_PROF_EMBEDDING}, {"embedding_vp_bwd", HP_PROF_EMBEDDING},
    {"embedding_vp_bwd_acc", HP_PROF_EMBEDDING}, {"add_pos", HP_PROF_EMBEDDING}, {"add_pos_bwd", HP_PROF_EMBEDDING},
    {"pos_table", HP_PROF_EMBEDDING}, {"grad_rows", HP_PROF_EMBEDDING}, {"grad_rows_apply", HP_PROF_EMBEDDING},
    {"grad_rows_gather", HP_PROF_EMBEDDING}, {"grad_rows_keep", HP_PROF_EMBEDDING},
    /* pointwise: every other computing operator */
    {"add", HP_PROF_POINTWISE}, {"cast", HP_PROF_POINTWISE}, {"concat", HP_PROF_POINTWISE},
    {"concat_bwd", HP_PROF_POINTWISE}, {"gelu", HP_PROF_POINTWISE}, {"gelu_bwd", HP_PROF_POINTWISE},
    {"swiglu", HP_PROF_POINTWISE}, {"swiglu_bwd", HP_PROF_POINTWISE}, {"rope", HP_PROF_POINTWISE},
    {"rope_bwd", HP_PROF_POINTWISE}, {"repeat_heads", HP_PROF_POINTWISE}, {"repeat_heads_bwd", HP_PROF_POINTWISE},
    {"moe_aux", HP_PROF_POINTWISE}, {"moe_aux_bwd", HP_PROF_POINTWISE}, {"moe_combine", HP_PROF_POINTWISE},
    {"moe_combine_bwd", HP_PROF_POINTWISE}, {"moe_dispatch", HP_PROF_POINTWISE},
    {"moe_dispatch_bwd", HP_PROF_POINTWISE}, {"moe_route", HP_PROF_POINTWISE}, {"moe_route_bwd", HP_PROF_POINTWISE},
    {"grad_accumulate", HP_PROF_POINTWISE}, {"fsdp_param16", HP_PROF_POINTWISE},
    /* communicating (priced as collectives; the family is the default's) */
    {"all_gather", HP_PROF_POINTWISE}, {"all_gather_v_start", HP_PROF_POINTWISE},
    {"all_to_all_v_start", HP_PROF_POINTWISE}, {"ep_resend", HP_PROF_POINTWISE},
    {"ep_resend_start", HP_PROF_POINTWISE}, {"ep_resend_wait", HP_PROF_POINTWISE}, {"ep_return", HP_PROF_POINTWISE},
    {"ep_return_start", HP_PROF_POINTWISE}, {"ep_return_wait", HP_PROF_POINTWISE}, {"ep_send", HP_PROF_POINTWISE},
    {"ep_send_start", HP_PROF_POINTWISE}, {"ep_send_wait", HP_PROF_POINTWISE},
    {"fsdp_allreduce_wait", HP_PROF_POINTWISE}, {"fsdp_gather_start", HP_PROF_POINTWISE},
    {"fsdp_gather_wait", HP_PROF_POINTWISE}, {"fsdp_reduce_start", HP_PROF_POINTWISE},
    {"fsdp_reduce_wait", HP_PROF_POINTWISE}, {"moe_ep_resend", HP_PROF_POINTWISE},
    {"moe_ep_return", HP_PROF_POINTWISE}, {"moe_ep_send", HP_PROF_POINTWISE}, {"recv_start", HP_PROF_POINTWISE},
    {"redistribute", HP_PROF_POINTWISE}, {"redistribute_start", HP_PROF_POINTWISE},
    {"redistribute_wait", HP_PROF_POINTWISE}, {"send_staged", HP_PROF_POINTWISE}, {"send_start", HP_PROF_POINTWISE},
    {"slot_wait", HP_PROF_POINTWISE}, {"sumsq_combine", HP_PROF_POINTWISE},
    {"sumsq_combine_exact", HP_PROF_POINTWISE},
};

static void test_family_of_op(void) {
    int n = (int)(sizeof op_families / sizeof op_families[0]);
    for (int i = 0; i < n; i++)
        CHECKF(hp_profile_family_of_op(op_families[i].name) == op_families[i].f, "%s: %s, expected %s",
               op_families[i].name, hp_profile_family_name(hp_profile_family_of_op(op_families[i].name)),
               hp_profile_family_name(op_families[i].f));
    int nops;
    const hp_opdef *const *all = hp_ops_all(&nops);
    for (int k = 0; k < nops; k++) {
        int found = 0;
        for (int i = 0; i < n && !found; i++) found = !strcmp(all[k]->name, op_families[i].name);
        CHECKF(found, "operator '%s' of the table is not classified in this test", all[k]->name);
    }
    CHECK(hp_profile_family_of_op("no_such_op") == HP_PROF_POINTWISE && hp_profile_family_of_op(NULL) == HP_PROF_POINTWISE);
}

/* A valid profile with `entry` added to kernels (when kernel) or `extra`
 * inserted as a top-level key, parsed. */
static hp_status parse_with(const char *kernel, const char *coll, const char *extra) {
    char text[4096];
    snprintf(text, sizeof text,
             "{%s\"format\": \"hyperpar-profile\", \"version\": 1, \"machine\": \"m\", \"cpu\": \"c\",\n"
             " \"threads\": 2, \"peak_fp32_gflops\": 100, \"peak_bf16_gflops\": 50,\n"
             " \"kernels\": [{\"family\": \"gemm\", \"dtype\": \"fp32\", \"bucket\": \"small\", \"gflops\": 2, "
             "\"gbps\": 3}%s%s],\n"
             " \"collectives\": [{\"tier\": \"inter\", \"kind\": \"all_reduce\", \"ranks\": 2, \"alpha_us\": 30,"
             " \"beta_GBps\": 1},\n"
             "  {\"tier\": \"intra\", \"kind\": \"all_reduce\", \"ranks\": 2, \"alpha_us\": 1, \"beta_GBps\": 3}%s%s]}",
             extra ? extra : "", kernel ? ", " : "", kernel ? kernel : "", coll ? ", " : "", coll ? coll : "");
    hp_profile p;
    hp_status st = hp_profile_parse(&p, text, strlen(text), "t.json");
    if (!st) hp_profile_free(&p);
    return st;
}

static void expect(hp_status st, const char *path, const char *problem) {
    CHECKF(st, "expected an error at %s", path);
    if (!st) return;
    const char *m = hp_status_msg(st);
    char head[128];
    snprintf(head, sizeof head, "t.json: %s: ", path);
    CHECKF(!strncmp(m, head, strlen(head)), "'%s' does not start with '%s'", m, head);
    CHECKF(strstr(m, problem), "'%s' lacks '%s'", m, problem);
    CHECKF(!strchr(m, '\n'), "'%s' is more than one line", m);
    hp_status_free(st);
}

static hp_status parse_text(const char *text) {
    hp_profile p;
    hp_status st = hp_profile_parse(&p, text, strlen(text), "t.json");
    if (!st) hp_profile_free(&p);
    return st;
}

#define K(fields) "{\"family\": \"gemm\", \"dtype\": \"fp32\", \"bucket\": \"large\", " fields "}"
#define C(fields) "{\"tier\": \"inter\", \"kind\": \"send\", \"ranks\": 2, " fields "}"

static void test_errors(void) {
    CHECK_OK(parse_with(NULL, NULL, NULL));
    CHECK_OK(parse_with(K("\"gflops\": 1e-3, \"gbps\": 1"), C("\"alpha_us\": 0, \"beta_GBps\": 2"), "\"notes\": [],"));

    /* the step's host work: optional, >= 0; the shared cores' efficiency: optional, in (0, 1] */
    CHECK_OK(parse_with(NULL, NULL, "\"step_overhead_us\": 0,"));
    expect(parse_with(NULL, NULL, "\"step_overhead_us\": -1,"), "step_overhead_us", "must be >= 0");
    CHECK_OK(parse_with(NULL, NULL, "\"shared_2x\": 0.8, \"shared_4x\": 1,"));
    expect(parse_with(NULL, NULL, "\"shared_2x\": 1.5,"), "shared_2x", "must be at most 1");
    expect(parse_with(NULL, NULL, "\"shared_4x\": 0,"), "shared_4x", "must be > 0");
    /* kernels */
    expect(parse_with(K("\"gflops\": 0, \"gbps\": 1"), NULL, NULL), "kernels[1].gflops", "must be > 0");
    expect(parse_with(K("\"gflops\": 1, \"gbps\": -2"), NULL, NULL), "kernels[1].gbps", "must be > 0");
    expect(parse_with(K("\"gflops\": \"fast\", \"gbps\": 1"), NULL, NULL), "kernels[1].gflops",
           "expected a number, not a string");
    expect(parse_with(K("\"gbps\": 1"), NULL, NULL), "kernels[1].gflops", "missing");
    expect(parse_with(K("\"gflops\": 1, \"gbps\": 1, \"note\": 3"), NULL, NULL), "kernels[1].note", "unknown key");
    expect(parse_with("{\"family\": \"conv\", \"dtype\": \"fp32\", \"bucket\": \"large\", \"gflops\": 1, \"gbps\": 1}",
                      NULL, NULL),
           "kernels[1].family", "'conv' is not one of gemm, grouped_gemm, attention");
    expect(parse_with("{\"family\": \"gemm\", \"dtype\": \"fp16\", \"bucket\": \"large\", \"gflops\": 1, \"gbps\": 1}",
                      NULL, NULL),
           "kernels[1].dtype", "'fp16' is not one of fp32, bf16");
    expect(parse_with("{\"family\": \"gemm\", \"dtype\": \"fp32\", \"bucket\": 3, \"gflops\": 1, \"gbps\": 1}", NULL,
                      NULL),
           "kernels[1].bucket", "expected a string, not a number");
    expect(parse_with("{\"family\": \"gemm\", \"dtype\": \"fp32\", \"bucket\": \"small\", \"gflops\": 1, \"gbps\": 1}",
                      NULL, NULL),
           "kernels[1]", "(gemm, fp32, small) given twice (first at kernels[0])");
    expect(parse_with("[]", NULL, NULL), "kernels[1]", "expected an object, not an array");

    /* collectives */
    expect(parse_with(NULL, C("\"alpha_us\": -1, \"beta_GBps\": 2"), NULL), "collectives[2].alpha_us", "must be >= 0");
    expect(parse_with(NULL, C("\"alpha_us\": 1, \"beta_GBps\": 0"), NULL), "collectives[2].beta_GBps", "must be > 0");
    expect(parse_with(NULL, "{\"tier\": \"inter\", \"kind\": \"broadcast\", \"ranks\": 2, \"alpha_us\": 1, \"beta_GBps\": 1}", NULL),
           "collectives[2].kind", "'broadcast' is not one of all_reduce, all_gather");
    expect(parse_with(NULL, "{\"tier\": \"rack\", \"kind\": \"send\", \"ranks\": 2, \"alpha_us\": 1, \"beta_GBps\": 1}", NULL),
           "collectives[2].tier", "'rack' is not one of intra, inter");
    expect(parse_with(NULL, "{\"tier\": \"intra\", \"kind\": \"all_reduce\", \"ranks\": 2, \"alpha_us\": 1, \"beta_GBps\": 1}", NULL),
           "collectives[2]", "(intra, all_reduce) given twice (first at collectives[1])");
    expect(parse_with(NULL, C("\"beta_GBps\": 2"), NULL), "collectives[2].alpha_us", "missing");
    expect(parse_with(NULL, C("\"alpha_us\": 1, \"beta_GBps\": 2, \"p\": 8"), NULL), "collectives[2].p",
           "unknown key");
    expect(parse_with(NULL, "{\"tier\": \"inter\", \"kind\": \"send\", \"alpha_us\": 1, \"beta_GBps\": 1}", NULL),
           "collectives[2].ranks", "missing");
    expect(parse_with(NULL, "{\"tier\": \"inter\", \"kind\": \"send\", \"ranks\": 1, \"alpha_us\": 1, \"beta_GBps\": 1}", NULL),
           "collectives[2].ranks", "1: must be an integer in 2..");
    expect(parse_with(NULL, "{\"tier\": \"inter\", \"kind\": \"send\", \"ranks\": 2.5, \"alpha_us\": 1, \"beta_GBps\": 1}", NULL),
           "collectives[2].ranks", "2.5: must be an integer");

    /* top level */
    expect(parse_with(NULL, NULL, "\"speed\": 3,"), "speed", "unknown key");
    static const char head[] = "{\"format\": \"hyperpar-profile\", \"version\": 1, \"machine\": \"m\", \"cpu\": \"c\",";
    char text[512];
    snprintf(text, sizeof text, "%s \"kernels\": [], \"collectives\": []}", head);
    expect(parse_text(text), "threads", "missing");
    snprintf(text, sizeof text, "%s \"threads\": 0, \"kernels\": [], \"collectives\": []}", head);
    expect(parse_text(text), "threads", "0: must be an integer in 1..");
    snprintf(text, sizeof text, "%s \"threads\": 2, \"peak_bf16_gflops\": 1, \"kernels\": [], \"collectives\": []}", head);
    expect(parse_text(text), "peak_fp32_gflops", "missing");
    snprintf(text, sizeof text,
             "%s \"threads\": 2, \"peak_fp32_gflops\": 1, \"peak_bf16_gflops\": 0, \"kernels\": [], \"collectives\": []}",
             head);
    expect(parse_text(text), "peak_bf16_gflops", "must be > 0");
    expect(parse_with(NULL, NULL, "\"notes\": \"one\","), "notes", "expected an array, not a string");
    expect(parse_with(NULL, NULL, "\"notes\": [\"a\", 2],"), "notes[1]", "expected a string, not a number");
    expect(parse_text("{\"format\": \"hyperpar-plan\", \"version\": 1}"), "format", "is not 'hyperpar-profile'");
    expect(parse_text("{\"format\": \"hyperpar-profile\", \"version\": 2}"), "version", "2: must be the integer 1");
    expect(parse_text("{\"format\": \"hyperpar-profile\", \"version\": 1.5}"), "version", "1.5: must be the integer 1");
    expect(parse_text("{\"format\": \"hyperpar-profile\", \"version\": 1}"), "machine", "missing");
    expect(parse_text("{\"format\": \"hyperpar-profile\", \"version\": 1.0}"), "version", "must be the integer 1");
    expect(parse_text("{\"format\": \"hyperpar-profile\", \"version\": 1, \"machine\": \"a b\"}"), "machine",
           "has ' '");
    expect(parse_text("{\"format\": \"hyperpar-profile\", \"version\": 1, \"machine\": \"m\", \"cpu\": \"c\","
                      " \"threads\": 1, \"peak_fp32_gflops\": 1, \"peak_bf16_gflops\": 1, \"collectives\": []}"),
           "kernels", "missing");
    expect(parse_text("{\"format\": \"hyperpar-profile\", \"version\": 1, \"machine\": \"m\", \"cpu\": \"c\","
                      " \"threads\": 1, \"peak_fp32_gflops\": 1, \"peak_bf16_gflops\": 1, \"kernels\": {}}"),
           "kernels", "expected an array, not an object");
    expect(parse_text("{\"format\": \"hyperpar-profile\", \"version\": 1, \"machine\": \"m\", \"cpu\": \"c\","
                      " \"threads\": 1, \"peak_fp32_gflops\": 1, \"peak_bf16_gflops\": 1, \"kernels\": []}"),
           "collectives", "missing");
    expect(parse_text("[1]"), "(top)", "expected an object, not an array");

    /* not JSON: the parser's offset, after the file's name */
    hp_status st = parse_text("{\"format\": }");
    CHECK(st && !strncmp(hp_status_msg(st), "t.json: json: offset", 20) && !strchr(hp_status_msg(st), '\n'));
    hp_status_free(st);

    hp_profile p;
    st = hp_profile_load(&p, "/nonexistent/x.json");
    CHECK(st && strstr(hp_status_msg(st), "/nonexistent/x.json"));
    hp_status_free(st);
}

int main(void) {
    test_shipped();
    test_lookups();
    test_no_collectives();
    test_errors();
    test_family_of_op();
    return hp_test_finish("test_profile");
}
