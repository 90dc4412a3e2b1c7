/* tests/api/test_api_train_state: a program's own loop of hp_train_step
 * through <hyperpar/hyperpar.h> alone, under one rank and under plans (DP 2,
 * TP 2, ZeRO-1, FSDP 2, FSDP 2 x TP 2, FSDP 2 in bf16 with bf16 gathers, FSDP
 * 2 over two emulated supernodes): hp_train_save in the middle of the loop,
 * then a second trainer that hp_train_load-s it (and a third resumed at
 * create) continues with the first's losses bit for bit; the parameters are
 * listed with their shapes; hp_train_get_weight of a checkpoint loaded under
 * every plan equals the one-rank trainer's, bit for bit; what
 * hp_train_set_weight writes reads back, and wte set to zeros makes every
 * replica and shard predict uniformly (the next loss is log 256); errors name
 * the tensor or the file. Thread counts are explicit. */
#include <hyperpar/hyperpar.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api_check.h"

#define TEXT "/usr/share/common-licenses/GPL-3"
#define STEPS 3 /* saved after STEPS steps, then STEPS more */

static char tmp[128];
static const hp_model_config tiny = {.layers = 1, .heads = 2, .channels = 32, .vocab = 256, .max_seq = 16};

typedef struct {
    const char *name;
    int dp, tp;
    const char *fsdp; /* NULL: none */
    int supernodes;   /* > 1: that many emulated supernodes of one rank each */
    int bf16, sharded;
} plan_case;

static const plan_case cases[] = {
    {"1 rank", 1, 1, NULL, 0, 0, 0},
    {"dp 2", 2, 1, NULL, 0, 0, 0},
    {"tp 2", 1, 2, NULL, 0, 0, 1},
    {"zero-1 2", 2, 1, "shard=dp level=1", 0, 0, 0},
    {"fsdp 2", 2, 1, "shard=dp level=3", 0, 0, 1},
    {"fsdp 2 x tp 2", 2, 2, "shard=dp level=3", 0, 0, 0},
    {"fsdp 2 bf16 gather=bf16", 2, 1, "shard=dp level=3 gather=bf16", 0, 1, 0},
    {"fsdp 2 over 2 supernodes", 2, 1, "shard=dp level=3", 2, 0, 0},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* One trainer of a case: its plan and world kept with it. */
typedef struct {
    hp_shard_plan *plan;
    hp_world *world;
    hp_train *t;
} trainer;

static void trainer_free(trainer *tr) {
    hp_train_free(tr->t);
    hp_world_free(tr->world);
    hp_shard_plan_free(tr->plan);
    memset(tr, 0, sizeof *tr);
}

/* ckpt_dir and resume may be NULL. */
static int trainer_make(trainer *tr, const plan_case *pc, const hp_model *m, const char *ckpt_dir, const char *resume) {
    memset(tr, 0, sizeof *tr);
    if (pc->dp * pc->tp > 1 && !OK(hp_shard_plan_gpt2(&tr->plan, pc->dp, pc->tp))) return 0;
    if (pc->fsdp && !OK(hp_shard_plan_set_fsdp(tr->plan, pc->fsdp))) return trainer_free(tr), 0;
    if (pc->supernodes > 1) {
        hp_world_options o;
        hp_world_options_default(&o);
        o.ranks_per_supernode = pc->dp * pc->tp / pc->supernodes;
        o.supernodes = pc->supernodes;
        o.mpi = 0;
        if (!OK(hp_world_create(&tr->world, &o))) return trainer_free(tr), 0;
    }
    hp_train_config c;
    hp_train_config_default(&c, m);
    c.plan = tr->plan, c.world = tr->world;
    c.threads = 2;
    c.data = TEXT;
    c.steps = 4 * STEPS;
    c.warmup_steps = 1;
    c.val_steps = 0;
    c.bf16 = pc->bf16;
    c.ckpt_dir = ckpt_dir, c.ckpt_sharded = pc->sharded;
    c.resume = resume;
    if (!OK(hp_train_create(&tr->t, &c))) return trainer_free(tr), 0;
    return 1;
}

static int steps(hp_train *t, float *loss, int n) {
    for (int i = 0; i < n; i++)
        if (!OK(hp_train_step(t, &loss[i], NULL))) return 0;
    return 1;
}

static int64_t numel(const hp_train *t, int i) {
    int64_t dims[HP_PLAN_MAX_DIMS], n = 1;
    int nd = hp_train_param_shape(t, i, dims);
    for (int d = 0; d < nd; d++) n *= dims[d];
    return nd < 0 ? -1 : n;
}

/* Every parameter whole, one after another (malloc'd). */
static float *all_weights(hp_train *t, int64_t *total) {
    int64_t n = 0;
    for (int i = 0; i < hp_train_param_count(t); i++) n += numel(t, i);
    float *w = malloc(sizeof(float) * (size_t)n), *at = w;
    for (int i = 0; w && i < hp_train_param_count(t); i++) {
        if (!OK(hp_train_get_weight(t, hp_train_param_name(t, i), at, (size_t)numel(t, i)))) {
            free(w);
            return NULL;
        }
        at += numel(t, i);
    }
    *total = n;
    return w;
}

/* The parameter list of GPT-2 with one block. */
static void test_params(const hp_model *m) {
    trainer tr;
    if (!trainer_make(&tr, &cases[0], m, NULL, NULL)) return;
    hp_train *t = tr.t;
    CHECK(hp_train_param_count(t) == 16);
    CHECK(hp_train_param_name(t, 0) && !strcmp(hp_train_param_name(t, 0), "wte"));
    CHECK(hp_train_param_name(t, 1) && !strcmp(hp_train_param_name(t, 1), "wpe"));
    CHECK(hp_train_param_name(t, 16) == NULL && hp_train_param_name(t, -1) == NULL);
    int64_t d[HP_PLAN_MAX_DIMS];
    CHECK(hp_train_param_shape(t, 0, d) == 2 && d[0] == 256 && d[1] == 32);
    CHECK(hp_train_param_shape(t, 1, d) == 2 && d[0] == 16 && d[1] == 32);
    CHECK(hp_train_param_shape(t, 16, d) == -1);
    int found = 0;
    for (int i = 0; i < hp_train_param_count(t); i++)
        if (!strcmp(hp_train_param_name(t, i), "h.0.attn.qkv.weight"))
            found = hp_train_param_shape(t, i, d) == 3 && d[0] == 3 && d[1] == 32 && d[2] == 32;
    CHECK(found);
    trainer_free(&tr);
}

/* Save after STEPS steps; a trainer that loads it, and one resumed at create,
 * go on with the same losses, bit for bit. */
static void test_save_load(const hp_model *m, const plan_case *pc, int k) {
    char own[200], other[200];
    snprintf(own, sizeof own, "%s/own%d", tmp, k);
    snprintf(other, sizeof other, "%s/other%d", tmp, k);
    float ref[2 * STEPS], got[STEPS];
    char last[200];
    snprintf(last, sizeof last, "%s/last%d", tmp, k);
    trainer a, b;
    if (!trainer_make(&a, pc, m, own, NULL)) return;
    int ok = steps(a.t, ref, STEPS) && OK(hp_train_save(a.t, NULL)) && OK(hp_train_save(a.t, other)) &&
             steps(a.t, ref + STEPS, STEPS);
    CHECK(hp_train_steps_done(a.t) == 2 * STEPS);
    /* the weights read after the steps are the current ones: what a checkpoint of them holds */
    int64_t n = 0, n1 = 0;
    float *w = ok ? all_weights(a.t, &n) : NULL, *w1 = NULL;
    ok = ok && w && OK(hp_train_save(a.t, last));
    trainer_free(&a);
    if (ok && trainer_make(&b, &cases[0], m, NULL, NULL)) {
        if (OK(hp_train_load(b.t, last))) w1 = all_weights(b.t, &n1);
        CHECK(w1 && n1 == n && !memcmp(w, w1, sizeof(float) * (size_t)n));
        trainer_free(&b);
    }
    free(w), free(w1);
    if (!ok) return;
    char latest[300], line[64] = "";
    snprintf(latest, sizeof latest, "%s/latest", own);
    FILE *f = fopen(latest, "r");
    CHECK(f && fgets(line, sizeof line, f) && !strncmp(line, "step_000003", 11));
    if (f) fclose(f);
    /* hp_train_load from the configured directory's latest */
    if (trainer_make(&b, pc, m, NULL, NULL)) {
        if (OK(hp_train_load(b.t, own)) && steps(b.t, got, STEPS)) {
            CHECK(hp_train_steps_done(b.t) == 2 * STEPS);
            for (int i = 0; i < STEPS; i++)
                if (got[i] != ref[STEPS + i]) {
                    fprintf(stderr, "%s: loaded, step %d: loss %.9g, the saving run's %.9g\n", pc->name, STEPS + i + 1,
                            (double)got[i], (double)ref[STEPS + i]);
                    failures++;
                }
        }
        ERR(hp_train_run(b.t), "hp_train_load");
        trainer_free(&b);
    }
    /* hp_train_config.resume at create, from the other directory */
    if (trainer_make(&b, pc, m, NULL, other)) {
        CHECK(hp_train_steps_done(b.t) == STEPS);
        if (steps(b.t, got, STEPS))
            for (int i = 0; i < STEPS; i++) CHECK(got[i] == ref[STEPS + i]);
        trainer_free(&b);
    }
}

/* Weights through the API: a checkpoint's read equally under every plan;
 * written and read back; wte zeros give log(256). */
static void test_weights(const hp_model *m, const plan_case *pc, const char *common, const float *ref, int64_t nref,
                         float *norm0) {
    trainer tr;
    if (!trainer_make(&tr, pc, m, NULL, NULL)) return;
    hp_train *t = tr.t;
    int64_t n = 0;
    float *w = NULL;
    if (OK(hp_train_load(t, common))) w = all_weights(t, &n);
    CHECK(w && n == nref && !memcmp(w, ref, sizeof(float) * (size_t)n));
    if (w && n == nref && memcmp(w, ref, sizeof(float) * (size_t)n)) fprintf(stderr, "%s: weights differ\n", pc->name);
    free(w);
    /* a pattern written reads back bit for bit */
    const char *fc = "h.0.mlp.fc.weight";
    size_t nfc = 128 * 32;
    float *in = malloc(sizeof(float) * nfc), *out = malloc(sizeof(float) * nfc);
    for (size_t i = 0; in && i < nfc; i++) in[i] = sinf((float)i * 0.37f) * 0.05f;
    if (in && out && OK(hp_train_set_weight(t, fc, in, nfc)) && OK(hp_train_get_weight(t, fc, out, nfc)))
        CHECK(!memcmp(in, out, sizeof(float) * nfc));
    /* wte zeros: every logit 0 on every rank, so the loss is log(256) (a shard left with the old values would
     * move it); the gradient norm is the one-rank trainer's (a data-parallel replica left with the old values
     * would move it: its half of the batch's gradient) */
    size_t nwte = 256 * 32;
    float *zeros = calloc(nwte, sizeof(float)), loss = 0, norm = 0;
    if (zeros && OK(hp_train_set_weight(t, "wte", zeros, nwte)) && OK(hp_train_step(t, &loss, &norm))) {
        if (!(fabsf(loss - logf(256.0f)) < 1e-4f)) {
            fprintf(stderr, "%s: loss with wte = 0 is %.7f, expected %.7f\n", pc->name, (double)loss, log(256.0));
            failures++;
        }
        if (pc == &cases[0]) *norm0 = norm;
        if (!(fabsf(norm - *norm0) <= 5e-3f * *norm0)) {
            fprintf(stderr, "%s: gradient norm with wte = 0 is %.7f, one rank's %.7f\n", pc->name, (double)norm,
                    (double)*norm0);
            failures++;
        }
    }
    /* errors name the tensor */
    ERR(hp_train_get_weight(t, "h.0.nope", out, nfc), "'h.0.nope': no parameter of this name");
    ERR(hp_train_set_weight(t, "h.0.nope", in, nfc), "'h.0.nope'");
    ERR(hp_train_get_weight(t, fc, out, nfc - 1), "'h.0.mlp.fc.weight': 4095 elements given, the tensor has 4096");
    ERR(hp_train_set_weight(t, "wte", zeros, nwte + 1), "'wte': 8193 elements given, the tensor has 8192");
    if (in) {
        in[7] = NAN;
        ERR(hp_train_set_weight(t, fc, in, nfc), "'h.0.mlp.fc.weight': element 7 is nan (not finite)");
    }
    free(in), free(out), free(zeros);
    trainer_free(&tr);
}

static void test_errors(const hp_model *m) {
    trainer tr;
    if (!trainer_make(&tr, &cases[0], m, NULL, NULL)) return;
    ERR(hp_train_save(tr.t, NULL), "hp_train_save: no directory given");
    ERR(hp_train_load(tr.t, "/nonexistent/ck"), "/nonexistent/ck");
    float x = 0;
    ERR(hp_train_get_weight(tr.t, NULL, &x, 1), "NULL");
    trainer_free(&tr);
    /* a checkpoint of another model shape */
    hp_model_config mc2 = tiny;
    mc2.channels = 64;
    hp_model *m2 = NULL;
    char dir[200];
    snprintf(dir, sizeof dir, "%s/wide", tmp);
    if (OK(hp_model_gpt2(&m2, &mc2, 4, 16)) && trainer_make(&tr, &cases[0], m2, NULL, NULL)) {
        OK(hp_train_save(tr.t, dir));
        trainer_free(&tr);
        if (trainer_make(&tr, &cases[0], m, NULL, NULL)) {
            ERR(hp_train_load(tr.t, dir), "differs from the run's");
            trainer_free(&tr);
        }
    }
    hp_model_free(m2);
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/hp_api_train_state_%d", (int)getpid());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", tmp, tmp);
    if (system(cmd) != 0) return 1;
    hp_model *m = NULL;
    if (!OK(hp_model_gpt2(&m, &tiny, 4, 16))) return 1;
    test_params(m);
    for (int k = 0; k < NCASES; k++) test_save_load(m, &cases[k], k);
    /* one checkpoint, read under every plan */
    char common[200];
    snprintf(common, sizeof common, "%s/common", tmp);
    trainer tr;
    float loss[2], *ref = NULL;
    int64_t nref = 0;
    if (trainer_make(&tr, &cases[0], m, NULL, NULL)) {
        if (steps(tr.t, loss, 2) && OK(hp_train_save(tr.t, common))) ref = all_weights(tr.t, &nref);
        trainer_free(&tr);
    }
    float norm0 = 0; /* cases[0]'s (one rank) */
    for (int k = 0; ref && k < NCASES; k++) test_weights(m, &cases[k], common, ref, nref, &norm0);
    free(ref);
    test_errors(m);
    hp_model_free(m);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (!failures && system(cmd) != 0) return 1;
    if (failures) fprintf(stderr, "test_api_train_state: %d failures\n", failures);
    else printf("test_api_train_state: ok\n");
    return failures ? 1 : 0;
}
