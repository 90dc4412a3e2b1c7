/* tests/api/test_api: the public C API through <hyperpar/hyperpar.h> alone
 * (no src/ header): version, one-line errors naming the file or field at
 * fault (model shape, plan files, data paths, config fields, worlds that do
 * not fit the plan), plans and their text form, hp_train_run and
 * hp_train_step giving the same losses bit for bit, a stopped run resumed
 * from its checkpoint continuing bit for bit, llm.c export, and DP=2 x TP=2
 * through a caller's world. Thread counts are explicit everywhere. */
#include <hyperpar/hyperpar.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_check.h"

#define TEXT "/usr/share/common-licenses/GPL-3"
#define NSTEPS 4

static char tmp[256];

typedef struct {
    float loss[16];
    long step[16];
    int n, ckpts;
} record;

static void on_event(void *ctx, const hp_event *e) {
    record *r = ctx;
    if (e->kind == HP_EVENT_STEP && r->n < 16) r->step[r->n] = e->step, r->loss[r->n++] = e->loss;
    if (e->kind == HP_EVENT_CKPT) r->ckpts++;
}

static const hp_model_config tiny = {.layers = 2, .heads = 4, .channels = 64, .vocab = 256, .max_seq = 32};

static void config(hp_train_config *c, const hp_model *m, record *r) {
    hp_train_config_default(c, m);
    c->threads = 2;
    c->data = TEXT;
    c->steps = NSTEPS;
    c->lr = 3e-3f;
    c->warmup_steps = 1;
    c->val_steps = 0;
    c->on_event = on_event, c->event_ctx = r;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void test_version(void) {
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", HP_VERSION_MAJOR, HP_VERSION_MINOR, HP_VERSION_PATCH);
    CHECK(strcmp(hp_version(), want) == 0);
    CHECK(strcmp(hp_status_msg(HP_OK), "ok") == 0);
}

static void test_errors(void) {
    hp_model *m = NULL;
    hp_model_config bad = tiny;
    bad.heads = 3; /* 64 channels do not split into 3 heads */
    ERR(hp_model_gpt2(&m, &bad, 4, 32), "hp_model_gpt2");
    CHECK(m == NULL);
    ERR(hp_model_gpt2(&m, &tiny, 4, 64), "hp_model_gpt2"); /* T above max_seq */

    hp_shard_plan *p = NULL;
    char path[320];
    snprintf(path, sizeof path, "%s/missing.plan", tmp);
    ERR(hp_shard_plan_load(&p, path), path);
    snprintf(path, sizeof path, "%s/bad.plan", tmp);
    write_file(path, "mesh: dp=2\nparam wte: S(0)@tp\n");
    char where[340];
    snprintf(where, sizeof where, "%s:2", path);
    ERR(hp_shard_plan_load(&p, path), where);
    CHECK(p == NULL);
    ERR(hp_shard_plan_gpt2(&p, 0, 2), "dp");

    if (!OK(hp_model_gpt2(&m, &tiny, 4, 32))) return;
    record r = {0};
    hp_train_config c;
    hp_train *t = NULL;
    config(&c, m, &r);
    snprintf(path, sizeof path, "%s/no-such-data.bin", tmp);
    c.data = path;
    ERR(hp_train_create(&t, &c), path);
    CHECK(t == NULL);
    config(&c, m, &r);
    c.steps = 0;
    ERR(hp_train_create(&t, &c), "steps");
    config(&c, m, &r);
    c.ckpt_every = 2;
    ERR(hp_train_create(&t, &c), "ckpt_dir");
    config(&c, m, &r);
    c.resume = tmp; /* no checkpoint there */
    ERR(hp_train_create(&t, &c), tmp);
    /* a world of 3 ranks cannot run a 2-rank mesh */
    hp_world_options wo;
    hp_world_options_default(&wo);
    wo.ranks_per_supernode = 3, wo.mpi = 0, wo.timeout_s = 60;
    hp_world *w = NULL;
    if (OK(hp_shard_plan_gpt2(&p, 2, 1)) && OK(hp_world_create(&w, &wo))) {
        CHECK(hp_world_size(w) == 3);
        config(&c, m, &r);
        c.plan = p, c.world = w;
        ERR(hp_train_create(&t, &c), "dp=2");
    }
    hp_world_free(w);
    hp_shard_plan_free(p);
    CHECK(r.n == 0);
    hp_model_free(m);
}

static void test_plans(void) {
    hp_shard_plan *p = NULL, *q = NULL;
    if (!OK(hp_shard_plan_gpt2(&p, 2, 2))) return;
    CHECK(hp_shard_plan_ranks(p) == 4);
    CHECK(strcmp(hp_shard_plan_mesh(p), "dp=2,tp=2") == 0);
    CHECK(strstr(hp_shard_plan_text(p), "mesh: dp=2,tp=2") != NULL);
    /* the text form parses back to the same plan, and so does its file */
    if (OK(hp_shard_plan_parse(&q, hp_shard_plan_text(p), "text"))) {
        CHECK(strcmp(hp_shard_plan_text(q), hp_shard_plan_text(p)) == 0);
        hp_shard_plan_free(q);
        q = NULL;
    }
    char path[320];
    snprintf(path, sizeof path, "%s/gpt2.plan", tmp);
    write_file(path, hp_shard_plan_text(p));
    if (OK(hp_shard_plan_load(&q, path))) CHECK(strcmp(hp_shard_plan_text(q), hp_shard_plan_text(p)) == 0);
    hp_shard_plan_free(q);
    hp_shard_plan_free(p);
}

/* hp_train_run's losses and those of a loop of hp_train_step are the same bits. */
static void test_run_equals_step(void) {
    hp_model *m = NULL;
    if (!OK(hp_model_gpt2(&m, &tiny, 4, 32))) return;
    CHECK(hp_model_batch(m) == 4 && hp_model_seq(m) == 32);
    CHECK(hp_model_num_params(m) > 100000);
    record r = {0};
    hp_train_config c;
    config(&c, m, &r);
    hp_train *t = NULL;
    if (OK(hp_train_create(&t, &c)) && OK(hp_train_run(t))) {
        CHECK(hp_train_steps_done(t) == NSTEPS);
        CHECK(hp_train_is_lead(t) == 1);
        ERR(hp_train_step(t, NULL, NULL), "hp_train_step");
    }
    hp_train_free(t);
    t = NULL;
    CHECK(r.n == NSTEPS);
    CHECK(r.n == NSTEPS && r.loss[NSTEPS - 1] < r.loss[0]);
    record r2 = {0};
    config(&c, m, &r2);
    if (OK(hp_train_create(&t, &c))) {
        for (int i = 0; i < NSTEPS; i++) {
            float loss = 0, norm = 0;
            if (!OK(hp_train_step(t, &loss, &norm))) break;
            CHECK(memcmp(&loss, &r.loss[i], sizeof loss) == 0);
            CHECK(norm > 0 && isfinite(norm));
        }
        CHECK(hp_train_steps_done(t) == NSTEPS);
        ERR(hp_train_run(t), "hp_train_step");
    }
    CHECK(r2.n == 0); /* hp_train_step reports no events */
    hp_train_free(t);
    hp_model_free(m);
}

/* A run stopped at step 2 with a checkpoint and resumed from its ckpt_dir
 * gives the uninterrupted run's losses for steps 3 and 4; the checkpoint
 * exports to an llm.c file of the model's size. */
static void test_resume_export(void) {
    hp_model *m = NULL;
    if (!OK(hp_model_gpt2(&m, &tiny, 4, 32))) return;
    record full = {0}, a = {0}, b = {0};
    hp_train_config c;
    hp_train *t = NULL;
    config(&c, m, &full);
    if (OK(hp_train_create(&t, &c))) OK(hp_train_run(t));
    hp_train_free(t);
    t = NULL;

    char ck[320], metrics[320];
    snprintf(ck, sizeof ck, "%s/run", tmp);
    snprintf(metrics, sizeof metrics, "%s/metrics.jsonl", tmp);
    config(&c, m, &a);
    c.ckpt_dir = ck, c.stop_at = 2, c.metrics = metrics;
    if (OK(hp_train_create(&t, &c))) OK(hp_train_run(t));
    hp_train_free(t);
    t = NULL;
    CHECK(a.n == 2 && a.ckpts == 1);
    config(&c, m, &b);
    c.ckpt_dir = ck, c.resume = ck, c.metrics = metrics;
    if (OK(hp_train_create(&t, &c))) {
        CHECK(hp_train_steps_done(t) == 2);
        OK(hp_train_run(t));
        CHECK(hp_train_steps_done(t) == NSTEPS);
    }
    hp_train_free(t);
    t = NULL;
    CHECK(full.n == NSTEPS && a.n == 2 && b.n == 2);
    if (full.n == NSTEPS && a.n == 2 && b.n == 2) {
        CHECK(memcmp(a.loss, full.loss, 2 * sizeof(float)) == 0);
        CHECK(memcmp(b.loss, full.loss + 2, 2 * sizeof(float)) == 0);
        CHECK(b.step[0] == 3 && b.step[1] == 4);
    }
    /* a different batch shape does not resume the checkpoint */
    hp_model *m2 = NULL;
    if (OK(hp_model_gpt2(&m2, &tiny, 2, 32))) {
        config(&c, m2, &b);
        c.resume = ck;
        ERR(hp_train_create(&t, &c), "batch");
    }
    hp_model_free(m2);

    char bin[320];
    snprintf(bin, sizeof bin, "%s/model.bin", tmp);
    struct stat st;
    if (OK(hp_export_llmc(bin, ck, HP_LLMC_FP32)))
        CHECK(stat(bin, &st) == 0 && st.st_size == 256 * 4 + 4 * (long)hp_model_num_params(m));
    /* a run starting from the exported weights starts at the resumed loss */
    record s = {0};
    config(&c, m, &s);
    c.init_llmc = bin, c.steps = 1;
    if (OK(hp_train_create(&t, &c))) OK(hp_train_run(t));
    hp_train_free(t);
    CHECK(s.n == 1 && s.loss[0] < full.loss[0]);
    snprintf(bin, sizeof bin, "%s/none", tmp);
    ERR(hp_export_llmc(bin, tmp, HP_LLMC_FP32), tmp);
    hp_model_free(m);
}

/* DP=2 x TP=2 through a world the caller made: the losses are the 1-rank
 * losses up to rounding (sums in another order). */
static void test_dp_tp(void) {
    hp_model *m = NULL;
    hp_shard_plan *p = NULL;
    hp_world *w = NULL;
    hp_world_options wo;
    hp_world_options_default(&wo);
    wo.ranks_per_supernode = 4, wo.mpi = 0, wo.timeout_s = 120;
    record one = {0}, four = {0};
    hp_train_config c;
    hp_train *t = NULL;
    if (!OK(hp_model_gpt2(&m, &tiny, 4, 32)) || !OK(hp_shard_plan_gpt2(&p, 2, 2)) || !OK(hp_world_create(&w, &wo)))
        goto out;
    int first = -1, count = -1;
    hp_world_hosted_ranks(w, &first, &count);
    CHECK(first == 0 && count == 4 && hp_world_supernodes(w) == 1 && !hp_world_uses_mpi(w));
    config(&c, m, &one);
    if (OK(hp_train_create(&t, &c))) OK(hp_train_run(t));
    hp_train_free(t);
    t = NULL;
    config(&c, m, &four);
    c.plan = p, c.world = w, c.threads = 4;
    if (OK(hp_train_create(&t, &c))) OK(hp_train_run(t));
    hp_train_free(t);
    CHECK(one.n == NSTEPS && four.n == NSTEPS);
    for (int i = 0; i < one.n && i < four.n; i++)
        if (!(fabsf(one.loss[i] - four.loss[i]) <= 1e-3f * fabsf(one.loss[i]))) {
            fprintf(stderr, "step %d: 1 rank %.7f, dp=2,tp=2 %.7f\n", i + 1, (double)one.loss[i], (double)four.loss[i]);
            failures++;
        }
out:
    hp_world_free(w);
    hp_shard_plan_free(p);
    hp_model_free(m);
}

int main(void) {
    const char *base = getenv("TMPDIR");
    snprintf(tmp, sizeof tmp, "%s/hp_test_api_XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_version();
    test_errors();
    test_plans();
    test_run_equals_step();
    test_resume_export();
    test_dp_tp();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    if (failures) fprintf(stderr, "test_api: %d checks failed\n", failures);
    return failures ? 1 : 0;
}
