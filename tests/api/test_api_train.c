/* tests/api/test_api_train: what `hyperpar train` needs of the public API,
 * through <hyperpar/hyperpar.h> alone: optimizer and schedule names, the Muon
 * settings by name (and one-line errors for bad ones), the caller's settings
 * kept in each checkpoint's state.json and read back with hp_ckpt_info
 * (step, model shape, args; -1 args for a checkpoint written without), a run
 * resumed from hp_ckpt_info's directory continuing bit for bit, the model
 * shape of an llm.c file, validation mode's whole report in
 * HP_EVENT_VALIDATED, and dp_reduce_bf16's checks. Thread counts are explicit
 * everywhere. */
#include <hyperpar/hyperpar.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api_check.h"

#define TEXT "/usr/share/common-licenses/GPL-3"

static char tmp[128];

typedef struct {
    float loss[16];
    int n;
    int validated, ngrads, checked_ops, worst_ok, names_ok;
} record;

static void on_event(void *ctx, const hp_event *e) {
    record *r = ctx;
    if (e->kind == HP_EVENT_STEP && r->n < 16) r->loss[r->n++] = e->loss;
    if (e->kind == HP_EVENT_VALIDATED && e->validation) {
        const hp_validation *v = e->validation;
        r->validated = 1, r->ngrads = v->ngrads, r->checked_ops = v->checked_ops;
        r->worst_ok = v->worst_index >= 0 && v->worst_index < v->ngrads && v->grads[v->worst_index].rel_err == v->worst;
        r->names_ok = v->ngrads > 0 && !strcmp(v->grads[0].name, "wte") && v->grads[0].layout[0] != 0;
    }
}

static const hp_model_config tiny = {.layers = 1, .heads = 2, .channels = 32, .vocab = 256, .max_seq = 16};

static void config(hp_train_config *c, const hp_model *m, record *r) {
    hp_train_config_default(c, m);
    c->threads = 2;
    c->data = TEXT;
    c->steps = 6;
    c->warmup_steps = 1;
    c->val_steps = 0;
    c->on_event = on_event, c->event_ctx = r;
}

static void test_names(void) {
    hp_optimizer_type o;
    hp_schedule_type s;
    if (OK(hp_optimizer_parse(&o, "muon"))) CHECK(o == HP_OPTIMIZER_MUON);
    if (OK(hp_optimizer_parse(&o, "adamw"))) CHECK(o == HP_OPTIMIZER_ADAMW);
    ERR(hp_optimizer_parse(&o, "sgd"), "sgd");
    if (OK(hp_schedule_parse(&s, "linear"))) CHECK(s == HP_SCHEDULE_LINEAR);
    if (OK(hp_schedule_parse(&s, "constant"))) CHECK(s == HP_SCHEDULE_CONSTANT);
    if (OK(hp_schedule_parse(&s, "cosine"))) CHECK(s == HP_SCHEDULE_COSINE);
    ERR(hp_schedule_parse(&s, "steps"), "steps");
    hp_model *m = NULL;
    if (!OK(hp_model_gpt2(&m, &tiny, 2, 16))) return;
    CHECK(hp_model_padded_vocab(m) == 256);
    record r = {0};
    hp_train_config c;
    hp_train *t = NULL;
    config(&c, m, &r);
    c.optimizer = HP_OPTIMIZER_MUON;
    c.newton_schulz = "cubic";
    ERR(hp_train_create(&t, &c), "cubic");
    c.newton_schulz = "polar", c.muon_momentum = "nesterov";
    ERR(hp_train_create(&t, &c), "nesterov");
    c.muon_momentum = "sum", c.muon_scale = "huge";
    ERR(hp_train_create(&t, &c), "huge");
    c.muon_scale = "moonlight", c.adamw_params = "h.*.mlp.proj.weight", c.steps = 2;
    c.ckpt_nargs = 1;
    ERR(hp_train_create(&t, &c), "ckpt_nargs");
    c.ckpt_nargs = 0;
    if (OK(hp_train_create(&t, &c))) OK(hp_train_run(t));
    CHECK(r.n == 2);
    hp_train_free(t);
    hp_model_free(m);
}

/* args written with every checkpoint, read back; resume from the info's dir. */
static void test_ckpt_args(void) {
    hp_model *m = NULL;
    if (!OK(hp_model_gpt2(&m, &tiny, 2, 16))) return;
    char dir[200], plain[200], llmc[200];
    snprintf(dir, sizeof dir, "%s/ck", tmp);
    snprintf(plain, sizeof plain, "%s/plain", tmp);
    snprintf(llmc, sizeof llmc, "%s/w.bin", tmp);
    const char *keys[] = {"layers", "note"}, *values[] = {"1", "a \"quoted\" value"};
    record full = {0}, part = {0}, rest = {0};
    hp_train_config c;
    hp_train *t = NULL;
    config(&c, m, &full);
    if (OK(hp_train_create(&t, &c))) OK(hp_train_run(t));
    hp_train_free(t), t = NULL;
    config(&c, m, &part);
    c.ckpt_dir = dir, c.stop_at = 3;
    c.ckpt_nargs = 2, c.ckpt_arg_keys = keys, c.ckpt_arg_values = values;
    if (OK(hp_train_create(&t, &c))) OK(hp_train_run(t));
    hp_train_free(t), t = NULL;
    hp_ckpt_info *ci = NULL;
    ERR(hp_ckpt_info_open(&ci, "/nonexistent/ck"), "/nonexistent/ck");
    if (OK(hp_ckpt_info_open(&ci, dir))) {
        CHECK(strstr(hp_ckpt_info_dir(ci), "step_000003") != NULL);
        CHECK(hp_ckpt_info_step(ci) == 3);
        hp_model_config mc;
        hp_ckpt_info_model(ci, &mc);
        CHECK(mc.layers == 1 && mc.heads == 2 && mc.channels == 32 && mc.vocab == 256 && mc.max_seq == 16);
        CHECK(hp_ckpt_info_nargs(ci) == 2);
        const char *k, *v;
        hp_ckpt_info_arg(ci, 1, &k, &v);
        CHECK(k && v && !strcmp(k, "note") && !strcmp(v, values[1]));
        hp_ckpt_info_arg(ci, 2, &k, &v);
        CHECK(!k && !v);
        config(&c, m, &rest);
        c.resume = hp_ckpt_info_dir(ci);
        if (OK(hp_train_create(&t, &c))) OK(hp_train_run(t));
        hp_train_free(t), t = NULL;
        CHECK(part.n == 3 && rest.n == 3 && full.n == 6);
        for (int i = 0; i < 3 && rest.n == 3; i++) CHECK(rest.loss[i] == full.loss[3 + i]);
        OK(hp_export_llmc(llmc, dir, HP_LLMC_FP32));
        hp_ckpt_info_free(ci);
    }
    /* a checkpoint written without args */
    record r = {0};
    config(&c, m, &r);
    c.ckpt_dir = plain, c.steps = 1;
    if (OK(hp_train_create(&t, &c))) OK(hp_train_run(t));
    hp_train_free(t), t = NULL;
    if (OK(hp_ckpt_info_open(&ci, plain))) {
        CHECK(hp_ckpt_info_nargs(ci) == -1 && hp_ckpt_info_step(ci) == 1);
        hp_ckpt_info_free(ci);
    }
    hp_model_config lc;
    if (OK(hp_model_config_llmc(&lc, llmc))) CHECK(lc.layers == 1 && lc.channels == 32 && lc.max_seq == 16);
    ERR(hp_model_config_llmc(&lc, TEXT), TEXT);
    hp_model_free(m);
}

static void test_validation_report(void) {
    hp_model *m = NULL;
    hp_shard_plan *p = NULL;
    if (!OK(hp_model_gpt2(&m, &tiny, 2, 16)) || !OK(hp_shard_plan_gpt2(&p, 2, 1))) {
        hp_model_free(m);
        return;
    }
    record r = {0};
    hp_train_config c;
    hp_train *t = NULL;
    config(&c, m, &r);
    c.plan = p, c.validate = 1, c.steps = 1;
    if (OK(hp_train_create(&t, &c))) OK(hp_train_run(t));
    CHECK(r.validated && r.ngrads > 0 && r.checked_ops > 0 && r.worst_ok && r.names_ok);
    hp_train_free(t);
    hp_shard_plan_free(p);
    hp_model_free(m);
}

/* dp_reduce_bf16: a DP 2 run trains with it; a bad value, deterministic and
 * FSDP are refused in one line, and so is deterministic with the plan's fsdp
 * reduce=bf16 (the same reason: where a rank's partial sum is rounded). */
static void test_dp_reduce(void) {
    hp_model *m = NULL;
    hp_shard_plan *p = NULL;
    if (!OK(hp_model_gpt2(&m, &tiny, 2, 16)) || !OK(hp_shard_plan_gpt2(&p, 2, 1))) {
        hp_model_free(m);
        return;
    }
    record r = {0};
    hp_train_config c;
    hp_train *t = NULL;
    config(&c, m, &r);
    c.plan = p, c.steps = 2;
    c.dp_reduce_bf16 = 2;
    ERR(hp_train_create(&t, &c), "dp_reduce_bf16 must be 0 (fp32) or 1 (bf16), got 2");
    c.dp_reduce_bf16 = 1, c.deterministic = 1;
    ERR(hp_train_create(&t, &c), "dp_reduce_bf16 rounds each rank's partial sum to bf16");
    c.deterministic = 0;
    if (OK(hp_train_create(&t, &c))) OK(hp_train_run(t));
    CHECK(r.n == 2 && r.loss[1] == r.loss[1]);
    hp_train_free(t);
    t = NULL;
    if (OK(hp_shard_plan_set_fsdp(p, "shard=dp level=3 reduce=bf16"))) {
        ERR(hp_train_create(&t, &c), "FSDP and ZeRO reduce the gradients themselves");
        c.dp_reduce_bf16 = 0, c.deterministic = 1;
        ERR(hp_train_create(&t, &c), "the plan's fsdp reduce=bf16 rounds each rank's partial sum to bf16");
    }
    hp_shard_plan_free(p);
    hp_model_free(m);
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/hp_api_train_%d", (int)getpid());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", tmp, tmp);
    if (system(cmd) != 0) return 1;
    test_names();
    test_ckpt_args();
    test_validation_report();
    test_dp_reduce();
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd) != 0) failures++;
    if (failures) fprintf(stderr, "%d failures\n", failures);
    return failures ? 1 : 0;
}
