/* tests/api/test_plan_report: hp_plan_report through <hyperpar/hyperpar.h>
 * alone — GPT-2 DP=2 x TP=2 on a small model: the mesh and its groups, the
 * passes, layouts and local shapes (uneven pieces over 3 ranks), Megatron's
 * all-reduces and the gradients' over dp with their totals, local
 * conversions, memory, every rank and every value; Muon's state; and
 * one-line errors for worlds, ranks, optimizers and plans that do not fit. */
#include <hyperpar/hyperpar.h>
#include <stdio.h>
#include <string.h>

#include "api/api_check.h"

/* Expects an error whose one-line message contains needle, and no report. */
static void report_err(hp_status s, hp_plan_report *r, const char *needle, int line) {
    if (!s) {
        fprintf(stderr, "%s:%d: succeeded, expected an error with '%s'\n", __FILE__, line, needle);
        failures++;
        hp_plan_report_free(r);
        return;
    }
    const char *m = hp_status_msg(s);
    if (!strstr(m, needle) || strchr(m, '\n') || r) {
        fprintf(stderr, "%s:%d: error '%s' lacks '%s' (or is not one line, or left a report)\n", __FILE__, line, m,
                needle);
        failures++;
    }
    hp_status_free(s);
}

static void config(hp_plan_report_config *c, const hp_shard_plan *p) {
    hp_plan_report_config_default(c);
    c->model = (hp_model_config){.layers = 2, .heads = 4, .channels = 64, .vocab = 256, .max_seq = 128};
    c->batch = 4, c->seq = 32;
    c->plan = p;
}

static const hp_plan_tensor *tensor(const hp_plan_rank_report *r, const char *name) {
    for (int i = 0; i < r->ntensors; i++)
        if (!strcmp(r->tensors[i].name, name)) return &r->tensors[i];
    return NULL;
}

static int count_colls(const hp_plan_rank_report *r, const char *phase, const char *steps, const char *groups) {
    int n = 0;
    for (int i = 0; i < r->ncollectives; i++) {
        const hp_plan_collective *c = &r->collectives[i];
        n += !strcmp(c->phase, phase) && !strncmp(c->steps, steps, strlen(steps)) && !strcmp(c->groups, groups) &&
             c->communicates && c->bytes > 0;
    }
    return n;
}

static const hp_plan_total *total(const hp_plan_rank_report *r, const char *phase, const char *kind) {
    for (int i = 0; i < r->ntotals; i++)
        if (!strcmp(r->totals[i].phase, phase) && !strcmp(r->totals[i].kind, kind)) return &r->totals[i];
    return NULL;
}

static void test_dp_tp(void) {
    hp_shard_plan *p = NULL;
    hp_plan_report *r = NULL;
    hp_plan_report_config c;
    if (!OK(hp_shard_plan_gpt2(&p, 2, 2))) return;
    config(&c, p);
    if (OK(hp_plan_report_create(&r, &c))) {
        CHECK(!strcmp(r->mesh, "dp=2,tp=2") && r->nranks == 4 && r->world == 4);
        CHECK(r->naxes == 2 && !strcmp(r->axis_name[0], "dp") && r->axis_size[1] == 2);
        CHECK(r->model.layers == 2 && r->vocab_padded == 256 && r->nparams == 124672 && r->batch == 4);
        CHECK(!strcmp(r->optimizer, "adamw") && !strncmp(r->plan_text, "mesh: dp=2,tp=2", 15));
        /* (wgrad first: each linear's input gradient after its weight gradient's all-reduce starts) */
        const char *passes[] = {"autodiff", "propagate", "fsdp", "lower", "optimizer", "wgrad first", "schedule", "memory"};
        CHECK(r->npasses == 8);
        for (int i = 0; i < 8 && i < r->npasses; i++) CHECK(!strcmp(r->passes[i].name, passes[i]) && r->passes[i].note[0]);
        CHECK(r->npasses > 5 && strstr(r->passes[5].note, "split"));
        CHECK(r->nreported == 1 && r->nnotes == 0);
        const hp_plan_rank_report *r0 = &r->ranks[0];
        CHECK(r0->rank == 0 && !strcmp(r0->axis_group[0], "dp[0,2]") && !strcmp(r0->axis_group[1], "tp[0,1]"));
        const hp_plan_tensor *q = tensor(r0, "h.0.attn.qkv.weight"), *tok = tensor(r0, "tokens");
        CHECK(q && !strcmp(q->kind, "param") && q->ndim == 3 && q->shape[1] == 64 && q->local_shape[1] == 32);
        CHECK(q && !strcmp(q->layout, "R@dp,S(1)@tp"));
        CHECK(tok && !strcmp(tok->kind, "input") && tok->local_shape[0] == 2 && tok->local_shape[1] == 32);
        CHECK(r0->ntensors == 30); /* 2 inputs, 28 parameters */
        CHECK(count_colls(r0, "fwd", "all-reduce(tp", "tp[0,1]") == 5);
        CHECK(count_colls(r0, "bwd", "all-reduce(tp", "tp[0,1]") == 5);
        CHECK(count_colls(r0, "bwd", "all-reduce(dp", "dp[0,2]") == 28);
        CHECK(count_colls(r0, "opt", "all-gather(world)", "world[0..3]") == 1);
        int local = 0;
        for (int i = 0; i < r0->ncollectives; i++) local += !r0->collectives[i].communicates;
        CHECK(local == 4);
        const hp_plan_total *f = total(r0, "fwd", "all-reduce"), *b = total(r0, "bwd", "all-reduce");
        CHECK(f && f->count == 6 && f->communicates && f->bytes > 0);
        CHECK(b && b->count == 33);
        const hp_plan_memory *m = &r0->memory;
        CHECK(m->params > 0 && m->grads == m->params && m->optimizer == 2 * m->params && m->activations > 0);
        CHECK(m->total == m->params + m->grads + m->optimizer + m->activations + m->scratch + m->inputs);
    }
    hp_plan_report_free(r);
    r = NULL;
    /* every rank, every value */
    c.all_ranks = 1, c.all_values = 1, c.rank = 3;
    if (OK(hp_plan_report_create(&r, &c))) {
        CHECK(r->nreported == 4);
        for (int i = 0; i < r->nreported; i++) CHECK(r->ranks[i].rank == i);
        CHECK(!strcmp(r->ranks[3].axis_group[0], "dp[1,3]"));
        CHECK(r->ranks[0].ntensors > 30 && r->ranks[3].ntensors == r->ranks[0].ntensors);
        int acts = 0, grads = 0;
        for (int i = 0; i < r->ranks[0].ntensors; i++) {
            acts += !strcmp(r->ranks[0].tensors[i].kind, "act");
            grads += !strcmp(r->ranks[0].tensors[i].kind, "grad");
        }
        CHECK(acts > 0 && grads > 0);
    }
    hp_plan_report_free(r);
    r = NULL;
    /* errors, each one line */
    config(&c, p);
    c.world = 3;
    report_err(hp_plan_report_create(&r, &c), r, "mesh 'dp=2,tp=2' has 4 ranks but the world has 3", __LINE__);
    config(&c, p);
    c.rank = 4;
    report_err(hp_plan_report_create(&r, &c), r, "rank 4 is not a rank of mesh 'dp=2,tp=2' (0..3)", __LINE__);
    config(&c, p);
    c.optimizer = "sgd";
    report_err(hp_plan_report_create(&r, &c), r, "unknown optimizer 'sgd'", __LINE__);
    config(&c, p);
    c.batch = 0;
    report_err(hp_plan_report_create(&r, &c), r, "batch and seq must be >= 1", __LINE__);
    config(&c, p);
    c.model.heads = 5;
    report_err(hp_plan_report_create(&r, &c), r, "multiple of heads", __LINE__);
    config(&c, p);
    c.init_llmc = "/nonexistent/model.bin";
    report_err(hp_plan_report_create(&r, &c), r, "/nonexistent/model.bin", __LINE__);
    config(&c, NULL);
    report_err(hp_plan_report_create(&r, &c), r, "plan is NULL", __LINE__);
    report_err(hp_plan_report_create(&r, NULL), r, "config is NULL", __LINE__);
    hp_shard_plan_free(p);
}

/* Uneven pieces: 256 vocabulary rows over 3 ranks. */
static void test_uneven(void) {
    hp_shard_plan *p = NULL;
    hp_plan_report *r = NULL;
    hp_plan_report_config c;
    if (!OK(hp_shard_plan_gpt2(&p, 1, 3))) return;
    config(&c, p);
    c.model = (hp_model_config){.layers = 1, .heads = 6, .channels = 96, .vocab = 256, .max_seq = 64};
    c.all_ranks = 1;
    if (OK(hp_plan_report_create(&r, &c))) {
        int rows[3] = {86, 86, 84};
        for (int i = 0; i < 3; i++) {
            const hp_plan_tensor *w = tensor(&r->ranks[i], "wte");
            CHECK(w && w->local_shape[0] == rows[i] && w->local_shape[1] == 96);
        }
        CHECK(count_colls(&r->ranks[0], "fwd", "all-gather(tp)", "tp[0,1,2]") == 1); /* cross-entropy statistics */
    }
    hp_plan_report_free(r);
    hp_shard_plan_free(p);
}

/* Muon: one momentum per hidden matrix, AdamW's two for the rest. */
static void test_muon(void) {
    hp_shard_plan *p = NULL;
    hp_plan_report *r = NULL;
    hp_plan_report_config c;
    if (!OK(hp_shard_plan_gpt2(&p, 2, 1))) return;
    config(&c, p);
    c.optimizer = "muon";
    c.overlap = 0;
    c.grad_clip = 0;
    if (OK(hp_plan_report_create(&r, &c))) {
        const hp_plan_memory *m = &r->ranks[0].memory;
        CHECK(!strcmp(r->optimizer, "muon"));
        CHECK(m->optimizer > m->params && m->optimizer < 2 * m->params);
        /* (DP 2: the tied table's gradient is split, parallel/grad_rows: two passes more) */
        const char *passes[] = {"autodiff", "propagate", "rows split", "fsdp", "lower", "rows", "optimizer", "schedule"};
        CHECK(r->npasses >= 8);
        for (int i = 0; i < 8 && i < r->npasses; i++) CHECK(!strcmp(r->passes[i].name, passes[i]));
        CHECK(strstr(r->passes[6].note, "muon: ") && strstr(r->passes[7].note, "0 gradient reductions overlapped"));
    }
    hp_plan_report_free(r);
    r = NULL;
    c.adamw_params = "h.*";
    if (OK(hp_plan_report_create(&r, &c))) CHECK(r->ranks[0].memory.optimizer == 2 * r->ranks[0].memory.params);
    hp_plan_report_free(r);
    hp_shard_plan_free(p);
}

/* A plan whose layouts no sharding rule fits: propagation's message. */
static void test_plan_error(void) {
    hp_shard_plan *p = NULL;
    hp_plan_report *r = NULL;
    hp_plan_report_config c;
    if (!OK(hp_shard_plan_parse(&p, "mesh: tp=2\nparam h.*.mlp.fc.weight: S(1)@tp\nparam h.*.mlp.fc.bias: S(0)@tp\n",
                                "fc.plan")))
        return;
    config(&c, p);
    report_err(hp_plan_report_create(&r, &c), r,
         "h.0.mlp.linear: parameter 'h.0.mlp.fc.bias' is S(0)@tp where the operator needs P(sum)@tp or R@tp", __LINE__);
    hp_shard_plan_free(p);
    hp_plan_report_free(NULL);
}

int main(void) {
    test_dp_tp();
    test_uneven();
    test_muon();
    test_plan_error();
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("all plan report checks passed\n");
    return 0;
}
