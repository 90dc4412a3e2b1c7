/* tests/api/test_api_internal: the public API against the library it wraps.
 * This file includes the public header and the internal ones in one
 * translation unit (the shared hp_status, HP_OK and status functions must
 * agree), and checks that 3 steps through hp_train_run give the very losses
 * of runtime/trainer driven directly with the same settings (AdamW and Muon,
 * 1 rank and DP=2), bit for bit. */
#include <hyperpar/hyperpar.h>

#include "io/data.h"
#include "models/gpt2.h"
#include "models/gpt2_plan.h"
#include "runtime/trainer.h"
#include "testutil.h"

#define TEXT "/usr/share/common-licenses/GPL-3"
#define STEPS 3

typedef struct {
    float loss[8];
    int n;
} record;

static void on_public(void *ctx, const hp_event *e) {
    record *r = ctx;
    if (e->kind == HP_EVENT_STEP && r->n < 8) r->loss[r->n++] = e->loss;
}
static void on_internal(void *ctx, const hp_train_event *e) {
    record *r = ctx;
    if (e->kind == HP_TRAIN_STEP && r->n < 8) r->loss[r->n++] = e->loss;
}

static hp_gpt2_config mcfg = {2, 4, 64, 256, 0, 32};

static hp_status init(void *ctx, float *const *ptrs, const char (*names)[HP_NAME_LEN], const hp_shape *shapes, int n) {
    (void)ctx;
    return hp_gpt2_init(ptrs, names, shapes, n, &mcfg, 1337);
}

static void api_run(record *r, hp_optimizer_type opt, int dp) {
    hp_model_config mc = {.layers = 2, .heads = 4, .channels = 64, .vocab = 256, .max_seq = 32};
    hp_model *m = NULL;
    hp_shard_plan *p = NULL;
    hp_train *t = NULL;
    CHECK_OK(hp_model_gpt2(&m, &mc, 4, 32));
    if (dp > 1) CHECK_OK(hp_shard_plan_gpt2(&p, dp, 1));
    hp_train_config c;
    hp_train_config_default(&c, m);
    c.plan = p;
    c.threads = 2;
    c.optimizer = opt;
    c.lr = 3e-3f, c.warmup_steps = 1;
    c.data = TEXT;
    c.steps = STEPS;
    c.val_steps = 0;
    c.on_event = on_public, c.event_ctx = r;
    CHECK_OK(hp_train_create(&t, &c));
    if (t) CHECK_OK(hp_train_run(t));
    hp_train_free(t);
    hp_shard_plan_free(p);
    hp_model_free(m);
}

/* What `hyperpar train` sets up, by hand. */
static void internal_run(record *r, hp_opt_kind opt, int dp) {
    hp_gpt2_config m = mcfg;
    CHECK_OK(hp_gpt2_config_check(&m));
    mcfg = m;
    hp_graph *g = NULL;
    hp_gpt2_io io;
    CHECK_OK(hp_graph_create(&g));
    CHECK_OK(hp_gpt2_build(g, &io, &m, 4, 32));
    hp_data *train = NULL;
    hp_data_config dc = {.path = TEXT, .kind = HP_DATA_AUTO, .vocab = 256, .B = 4, .T = 32, .seed = 1337,
                         .order = HP_DATA_SEQUENTIAL, .split = HP_DATA_TRAIN, .val_fraction = 0.1f, .world = 1};
    CHECK_OK(hp_data_open(&train, &dc));
    hp_plan plan;
    if (dp > 1) CHECK_OK(hp_plan_gpt2_dp_tp(&plan, dp, 1));
    hp_trainer_config c;
    memset(&c, 0, sizeof c);
    c.model = g;
    c.tokens = io.tokens, c.targets = io.targets;
    c.init = init;
    c.plan = dp > 1 ? &plan : NULL;
    c.threads = 2;
    c.compile.schedule = (hp_schedule_opts){.overlap = 1, .max_inflight = 4};
    hp_optim_config_default(&c.optim);
    c.optim.kind = opt;
    c.optim.lr = 3e-3f, c.optim.beta2 = 0.95f;
    c.compile.max_norm = 1.0f;
    c.lr = (hp_lr_schedule){.kind = HP_LR_COSINE, .lr = 3e-3f, .warmup_steps = 1, .min_lr_frac = 0.1f};
    c.steps = STEPS;
    c.train = train;
    c.on_event = on_internal, c.event_ctx = r;
    hp_trainer *t = NULL;
    CHECK_OK(hp_trainer_create(&t, &c));
    if (t) CHECK_OK(hp_trainer_run(t));
    hp_trainer_destroy(t);
    if (dp > 1) hp_plan_free(&plan);
    hp_data_close(train);
    hp_graph_destroy(g);
}

static void compare(hp_optimizer_type pub, hp_opt_kind in, int dp) {
    record a = {0}, b = {0};
    api_run(&a, pub, dp);
    internal_run(&b, in, dp);
    CHECKF(a.n == STEPS && b.n == STEPS, "%d and %d steps", a.n, b.n);
    for (int i = 0; i < STEPS && i < a.n && i < b.n; i++)
        CHECKF(memcmp(&a.loss[i], &b.loss[i], sizeof(float)) == 0, "%s dp=%d step %d: api %.9g, trainer %.9g",
               in == HP_OPT_MUON ? "muon" : "adamw", dp, i + 1, (double)a.loss[i], (double)b.loss[i]);
}

int main(void) {
    /* the public and the internal status are one type */
    hp_status s = hp_errorf("x.plan:3: bad");
    CHECK(strcmp(hp_status_msg(s), "x.plan:3: bad") == 0);
    hp_status_free(s);
    CHECK(HP_OK == NULL);
    compare(HP_OPTIMIZER_ADAMW, HP_OPT_ADAMW, 1);
    compare(HP_OPTIMIZER_MUON, HP_OPT_MUON, 1);
    compare(HP_OPTIMIZER_ADAMW, HP_OPT_ADAMW, 2);
    return hp_test_failures ? 1 : 0;
}
