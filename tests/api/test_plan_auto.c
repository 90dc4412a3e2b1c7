/* The strategy search (hp_plan_auto, autopar/search) finds the known optimum
 * of small hand-made cases, deterministically (every row the same, bit for
 * bit, when run twice):
 *  - a model that fits only with FSDP: a memory limit between FSDP's need and
 *    ZeRO-2's (one micro-batch, no remat) leaves FSDP the winner;
 *  - two supernodes of 2 ranks: with a slow link between them HSDP (shards
 *    inside a supernode, replicas across: a shard's all-reduce crosses it)
 *    beats FSDP over all 4 (its units gathered across it in the forward and
 *    again in the backward), and with the link as fast as inside FSDP beats
 *    HSDP;
 *  - a deep, narrow model on 2 supernodes of 1 rank over a slow link: the
 *    pipeline (its activations cross the link) beats data parallelism (every
 *    gradient crosses it) and tensor parallelism (every block's activations).
 * The profile is synthetic (every kernel at one rate), the clusters written
 * here. */
#include <stdio.h>
#include <string.h>

#include <hyperpar/hyperpar.h>

#include "testutil.h"

static const char *profile_text =
    "{\"format\": \"hyperpar-profile\", \"version\": 1, \"machine\": \"flat\", \"cpu\": \"synthetic\",\n"
    " \"threads\": 1, \"peak_fp32_gflops\": 10, \"peak_bf16_gflops\": 10,\n"
    " \"kernels\": [\n"
    "  {\"family\": \"gemm\", \"dtype\": \"fp32\", \"bucket\": \"small\", \"gflops\": 5, \"gbps\": 5},\n"
    "  {\"family\": \"pointwise\", \"dtype\": \"fp32\", \"bucket\": \"small\", \"gflops\": 5, \"gbps\": 5}],\n"
    " \"collectives\": [\n"
    "  {\"tier\": \"intra\", \"kind\": \"all_reduce\", \"ranks\": 2, \"alpha_us\": 2, \"beta_GBps\": 5}]}\n";

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void cluster_file(const char *path, int sn, int rps, double inter_GBps) {
    char t[512];
    snprintf(t, sizeof t,
             "name: test\nsupernodes: %d\nranks_per_supernode: %d\nintra_bandwidth_GBps: 10\nintra_latency_us: 1\n"
             "inter_bandwidth_GBps: %g\ninter_latency_us: %g\npeak_fp32: 10 GFLOP/s\npeak_bf16: 10 GFLOP/s\n"
             "memory_GB: 1000\n",
             sn, rps, inter_GBps, inter_GBps < 10 ? 100.0 : 1.0);
    write_file(path, t);
}

static void base_options(hp_train_options *o, int layers, int channels) {
    hp_train_options_default(o);
    o->layers = layers, o->heads = 4, o->channels = channels, o->vocab = 256, o->max_seq = 32;
    o->batch = 8, o->seq = 32, o->threads = 1;
}

static hp_auto_report *run(const hp_train_options *o, int world, const char *cluster, double memory, unsigned skip,
                           int max_micro) {
    hp_auto_config c;
    memset(&c, 0, sizeof c);
    hp_sim_config_default(&c.sim);
    c.sim.profile = "test_plan_auto.profile.json";
    c.sim.cluster = cluster;
    c.sim.compute_scale = 1;
    c.world = world, c.memory_bytes = memory, c.skip = skip, c.max_micro = max_micro;
    hp_auto_report *r = NULL;
    CHECK_OK(hp_plan_auto(&r, o, &c));
    return r;
}

/* The best ok row whose flags contain `has` (and not `hasnt`, when given); NULL: none. */
static const hp_auto_row *best_with(const hp_auto_report *r, const char *has, const char *hasnt) {
    for (int i = 0; i < r->nok; i++)
        if (strstr(r->rows[i].flags, has) && (!hasnt || !strstr(r->rows[i].flags, hasnt))) return &r->rows[i];
    return NULL;
}

static void same(const hp_auto_report *a, const hp_auto_report *b) {
    CHECK(a->nrows == b->nrows && a->nok == b->nok);
    for (int i = 0; i < a->nrows && i < b->nrows; i++) {
        if (strcmp(a->rows[i].flags, b->rows[i].flags) || a->rows[i].step_s != b->rows[i].step_s)
            printf("row %d: '%s' %.17g %.0f | '%s' %.17g %.0f\n", i, a->rows[i].flags, a->rows[i].step_s,
                   a->rows[i].memory_bytes, b->rows[i].flags, b->rows[i].step_s, b->rows[i].memory_bytes);
        CHECK(!strcmp(a->rows[i].flags, b->rows[i].flags) && a->rows[i].step_s == b->rows[i].step_s &&
              a->rows[i].memory_bytes == b->rows[i].memory_bytes);
    }
}

static void only_fsdp_fits(void) {
    hp_train_options o;
    base_options(&o, 2, 64);
    unsigned skip = HP_AUTO_NO_PP | HP_AUTO_NO_TP | HP_AUTO_NO_REMAT | HP_AUTO_NO_HSDP;
    hp_auto_report *all = run(&o, 4, NULL, 1e15, skip, 1);
    const hp_auto_row *f = best_with(all, "--fsdp 4", NULL), *z2 = best_with(all, "--zero 2", NULL);
    CHECK(f && z2 && f->memory_bytes < z2->memory_bytes);
    if (!f || !z2) return;
    double limit = 0.5 * (f->memory_bytes + z2->memory_bytes);
    printf("only FSDP fits: fsdp needs %.0f B, zero-2 %.0f B, limit %.0f B\n", f->memory_bytes, z2->memory_bytes, limit);
    hp_auto_report *r = run(&o, 4, NULL, limit, skip, 1), *again = run(&o, 4, NULL, limit, skip, 1);
    CHECK(r->nok >= 1 && !strcmp(r->rows[0].flags, "--batch 8 --fsdp 4"));
    CHECK(r->best != NULL && strstr(r->best_flags, "--batch 8") != NULL);
    for (int i = r->nok; i < r->nrows; i++) /* everything else is above the limit */
        CHECK(!r->rows[i].fits && r->rows[i].memory_bytes > limit && strstr(r->rows[i].why, "needs"));
    same(r, again);
    /* the dtype searched too: every candidate again in bf16, its flags saying so */
    hp_auto_report *both = run(&o, 4, NULL, 1e15, skip | HP_AUTO_DTYPE, 1);
    int nb = 0;
    for (int i = 0; i < both->nrows; i++) nb += strstr(both->rows[i].flags, "--dtype bf16") != NULL;
    CHECK(both->nrows == 2 * all->nrows && nb == all->nrows);
    hp_auto_report_free(both);
    hp_auto_report_free(all), hp_auto_report_free(r), hp_auto_report_free(again);
}

static void hsdp_over_slow_link(void) {
    hp_train_options o;
    base_options(&o, 6, 64); /* deep enough that FSDP across the supernodes gathers its units again for the backward */
    unsigned skip = HP_AUTO_NO_PP | HP_AUTO_NO_TP | HP_AUTO_NO_REMAT;
    cluster_file("test_plan_auto.slow.cluster", 2, 2, 0.01);
    cluster_file("test_plan_auto.fast.cluster", 2, 2, 10);
    hp_auto_report *slow = run(&o, 4, "test_plan_auto.slow.cluster", 0, skip, 1);
    hp_auto_report *fast = run(&o, 4, "test_plan_auto.fast.cluster", 0, skip, 1);
    const hp_auto_row *hs = best_with(slow, "--hsdp 2,2", NULL), *fs = best_with(slow, "--fsdp 4", NULL);
    const hp_auto_row *hf = best_with(fast, "--hsdp 2,2", NULL), *ff = best_with(fast, "--fsdp 4", NULL);
    CHECK(hs && fs && hf && ff);
    if (!hs || !fs || !hf || !ff) return;
    printf("slow link: hsdp %.6g s, fsdp %.6g s; fast link: hsdp %.6g s, fsdp %.6g s; winners '%s', '%s'\n",
           hs->step_s, fs->step_s, hf->step_s, ff->step_s, slow->rows[0].flags, fast->rows[0].flags);
    CHECK(hs->step_s < fs->step_s && ff->step_s < hf->step_s);
    CHECK(!strstr(slow->rows[0].flags, "--fsdp"));
    CHECK(hs->exposed_inter_s < fs->exposed_inter_s);
    hp_auto_report *again = run(&o, 4, "test_plan_auto.slow.cluster", 0, skip, 1);
    same(slow, again);
    hp_auto_report_free(slow), hp_auto_report_free(fast), hp_auto_report_free(again);
}

static void deep_model_pipelines(void) {
    hp_train_options o;
    base_options(&o, 8, 64);
    cluster_file("test_plan_auto.pair.cluster", 2, 1, 0.01);
    hp_auto_report *r = run(&o, 2, "test_plan_auto.pair.cluster", 0, HP_AUTO_NO_REMAT, 8);
    CHECK(r->nok > 3);
    printf("deep model over a slow link: winner '%s' (%.6g s)\n", r->rows[0].flags, r->rows[0].step_s);
    CHECK(r->rows[0].pp == 2 && r->rows[0].dp == 1 && r->rows[0].tp == 1);
    const hp_auto_row *dp = best_with(r, "--dp 2", "--pp"), *tp = best_with(r, "--tp 2", "--pp");
    CHECK(dp && tp && dp->step_s > r->rows[0].step_s && tp->step_s > r->rows[0].step_s);
    hp_auto_report *again = run(&o, 2, "test_plan_auto.pair.cluster", 0, HP_AUTO_NO_REMAT, 8);
    same(r, again);
    hp_auto_report_free(r), hp_auto_report_free(again);
}

int main(void) {
    write_file("test_plan_auto.profile.json", profile_text);
    only_fsdp_fits();
    hsdp_over_slow_link();
    deep_model_pipelines();
    return hp_test_finish("test_plan_auto");
}
