/* parallel/grad_rows, the tied embedding's gradient reduced in two parts:
 *  - the split: under FSDP 2 (units by bytes), DP 2 and ZeRO-1 the table's
 *    gradient is the LM head's dense part, and its reduction starts before
 *    the first transformer block's backward in the rank's step order (FSDP:
 *    the table's unit's reduce-scatter; DP: the all-reduce's start);
 *  - the end of the step moves only the rows the batch touched: the rows'
 *    gathers carry members x (local positions x C) floats and their ids,
 *    not the table's V x C;
 *  - no split where nothing is summed over ranks (one rank, or a table
 *    sharded by tensor parallelism), but one on one rank in the
 *    deterministic mode (whose sums are the same at every rank count);
 *  - values: FSDP 2 with a unit whose shard boundary cuts a row of the
 *    table, HSDP 2 x 2 (rows gathered along two axes) and ZeRO-1 validate
 *    against the 1-rank reference (every reduced shard and every gradient
 *    within 1e-5, the rows added after the dense part's reduction). */
#include <string.h>

#include "kernels/kernels.h"
#include "models/gpt2_plan.h"
#include "ops/ops.h"
#include "parallel/compile.h"
#include "parallel/grad_rows.h"
#include "testutil.h"
#include "validate_model.h"

enum { B = 8, T = 8 };

static int count_op(const hp_graph *g, const hp_opdef *op) {
    int n = 0;
    for (int i = 0; i < g->nnodes; i++) n += g->nodes[i].op == op;
    return n;
}

/* Position in the step order of the first backward step of a transformer
 * block (a node named "h.<N>..."), and of the first step running `op` whose
 * name starts with `prefix` (-1: none). */
static int first_block_bwd(const hp_compiled *c) {
    for (int i = c->sched.begin[HP_PHASE_BWD]; i < c->sched.begin[HP_PHASE_BWD + 1]; i++) {
        const char *nm = c->rg.g->nodes[c->sched.order[i]].name;
        if (!strncmp(nm, "h.", 2) && nm[2] >= '0' && nm[2] <= '9') return i;
    }
    return -1;
}

static int first_step(const hp_compiled *c, const hp_opdef *op, const char *prefix) {
    for (int i = 0; i < c->sched.n; i++) {
        const hp_node *n = &c->rg.g->nodes[c->sched.order[i]];
        if (n->op == op && !strncmp(n->name, prefix, strlen(prefix))) return i;
    }
    return -1;
}

/* The bytes the rows' gathers of rank c move (their descriptors) and the
 * dense table's. */
static void rows_bytes(const hp_compiled *c, double *rows, int *ngathers) {
    *rows = 0, *ngathers = 0;
    for (int i = 0; i < c->rg.g->nnodes; i++) {
        const hp_node *n = &c->rg.g->nodes[i];
        hp_coll_desc d;
        if (n->op != &hp_op_grad_rows_gather || !hp_coll_describe(&d, c->rg.g, n)) continue;
        CHECK(d.kind == HP_COLL_ALL_GATHER && n->phase == HP_PHASE_BWD);
        *rows += d.bytes;
        (*ngathers)++;
    }
}

static void structure(const model *m) {
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_compile_opts o = {.train = 1, .optim = &oc, .max_norm = 1.0f, .schedule = {.overlap = 1, .max_inflight = 4}};
    const int C = 32, V = 256; /* the padded table */
    /* FSDP 2, units by bytes: the table a unit of its own */
    hp_plan plan;
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 1));
    CHECK_OK(hp_plan_set_fsdp(&plan, "shard=dp unit_bytes=4K", "test"));
    for (int r = 0; r < 2; r++) {
        hp_compiled c;
        CHECK_OK(hp_compile(&c, m->g, &plan, r, &o));
        CHECK(count_op(c.global, &hp_op_grad_rows) == 1 && count_op(c.global, &hp_op_embedding_bwd_acc) == 0);
        CHECK(!strcmp(c.fsdp.units[0].name, "wte") && c.fsdp.units[0].nparams == 1);
        int red = first_step(&c, &hp_op_fsdp_reduce_start, "fsdp.wte."), blk = first_block_bwd(&c);
        CHECK(red >= 0 && blk >= 0 && red < blk);
        /* wgrad first: the LM head's weight gradient, then the reduction, then its input gradient */
        int wg = first_step(&c, &hp_op_linear_bwd, "head."), dg = -1;
        for (int i = 0; i < c.sched.n; i++)
            if (strstr(c.rg.g->nodes[c.sched.order[i]].name, "head.") &&
                strstr(c.rg.g->nodes[c.sched.order[i]].name, ".dgrad"))
                dg = i;
        CHECK(wg >= 0 && wg + 1 == red && dg > red && dg < blk);
        CHECK(c.rg.g->nodes[c.sched.order[wg]].out[0] < 0 && c.rg.g->nodes[c.sched.order[wg]].out[1] >= 0);
        CHECK(dg >= 0 && c.rg.g->nodes[c.sched.order[dg]].out[0] >= 0 && c.rg.g->nodes[c.sched.order[dg]].out[1] < 0);
        /* the end moves the rows: 2 members x (B/2 x T positions) x (C floats + 1 id) */
        double rows;
        int ng;
        rows_bytes(&c, &rows, &ng);
        CHECK(ng == 2);
        CHECK(rows == 2.0 * (B / 2) * T * (C * 4 + 4));
        CHECK(rows * 3 < (double)V * C * 4); /* 8 x 8 positions here; GPT-2 124M's 512 per rank: 1.6 of 154 MB */
        CHECK(count_op(c.rg.g, &hp_op_grad_rows_keep) == 1 && count_op(c.rg.g, &hp_op_grad_rows_apply) == 1);
        /* the rows are added after every reduction: the apply is the backward's last rows step, after the
         * table's reduction wait */
        int ap = first_step(&c, &hp_op_grad_rows_apply, ""), wt = first_step(&c, &hp_op_fsdp_reduce_wait, "fsdp.wte.");
        CHECK(ap > wt && wt > red && ap < c.sched.begin[HP_PHASE_BWD + 1]);
        hp_compiled_free(&c);
    }
    hp_plan_free(&plan);
    /* DP 2: the table's all-reduce starts before the first block's backward */
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 1));
    {
        hp_compiled c;
        CHECK_OK(hp_compile(&c, m->g, &plan, 0, &o));
        int red = first_step(&c, &hp_op_redistribute_start, "wte.grad"), blk = first_block_bwd(&c);
        CHECK(red >= 0 && blk >= 0 && red < blk);
        CHECK(count_op(c.rg.g, &hp_op_grad_rows_gather) == 2);
        hp_compiled_free(&c);
    }
    hp_plan_free(&plan);
    /* TP 2 shards the table (vocabulary-parallel): no split */
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 1, 2));
    {
        hp_compiled c;
        CHECK_OK(hp_compile(&c, m->g, &plan, 0, &o));
        CHECK(count_op(c.global, &hp_op_grad_rows) == 0 && count_op(c.rg.g, &hp_op_grad_rows_apply) == 0);
        hp_compiled_free(&c);
    }
    hp_plan_free(&plan);
    /* one rank: no split, but in the deterministic mode (no gather) */
    for (int det = 0; det < 2; det++) {
        hp_compiled c;
        o.deterministic = det;
        CHECK_OK(hp_compile(&c, m->g, NULL, 0, &o));
        CHECK(count_op(c.global, &hp_op_grad_rows) == det && count_op(c.rg.g, &hp_op_grad_rows_apply) == det);
        CHECK(count_op(c.rg.g, &hp_op_grad_rows_gather) == 0);
        hp_compiled_free(&c);
    }
}

/* One step of plan (reps x dp, fsdp settings or NULL; units: the plan names its units) under validation mode:
 * clean, every gradient within 1e-5 of the reference's. */
static void validated(const model *m, int reps, int dp, const char *fsdp, int zero_dp, int units) {
    hp_plan plan;
    CHECK_OK(hp_plan_gpt2(&plan, reps, dp, 1));
    if (fsdp) CHECK_OK(hp_plan_set_fsdp(&plan, fsdp, "test"));
    if (units) { /* the table, the position table and the first block's qkv in one unit */
        CHECK_OK(hp_plan_add_fsdp_unit(&plan, "a", "wte wpe h.0.ln1.* h.0.attn.qkv.*", "test"));
        CHECK_OK(hp_plan_add_fsdp_unit(&plan, "rest", "*", "test"));
    }
    hp_comm_opts co;
    hp_comm_opts_default(&co);
    co.mpi = 0;
    co.timeout_s = 60;
    co.supernodes = 1;
    co.ranks_per_supernode = reps * dp;
    hp_comm_world *w = NULL;
    CHECK_OK(hp_comm_world_create(&w, &co));
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_dist_config dc = {.model = m->g, .plan = &plan, .world = w, .threads_per_rank = 1,
                         .compile = {.train = 1, .optim = &oc, .max_norm = 1.0f}};
    hp_dist *d = NULL;
    CHECK_OK(hp_dist_create(&d, &dc));
    if (d) {
        CHECK(count_op(hp_dist_global(d), &hp_op_grad_rows) == 1);
        const hp_fsdp_plan *f = &hp_dist_rank_at(d, 0)->c.fsdp;
        CHECK(!zero_dp || f->level == 1);
        if (units) /* the table's unit's shard boundary cuts one of its rows */
            CHECK(f->unit_of[0] == 0 && f->units[0].shard < 256 * 32 && f->units[0].shard % 32 != 0);
        model_scatter(d, m);
        hp_validate_report rep = {0};
        if (model_validate_clean(d, m, &rep))
            printf("%s %dx%d: worst gradient error %.3g (%s)\n", fsdp ? fsdp : "dp", reps, dp, rep.worst,
                   rep.worst_index >= 0 ? rep.grads[rep.worst_index].name : "-");
        hp_validate_report_free(&rep);
        hp_dist_destroy(d);
    }
    hp_comm_world_destroy(w);
    hp_plan_free(&plan);
}

int main(void) {
    hp_kernels_init();
    model m;
    model_build(&m, B, T);
    structure(&m);
    /* "units": the table, the position table and the first block's qkv in one unit, whose shard boundary cuts
     * a row of the table (units by bytes keep the table alone: the position table's gradient is complete last) */
    validated(&m, 1, 2, "shard=dp", 0, 1);
    validated(&m, 2, 2, "shard=dp replicate=rep", 0, 1);
    validated(&m, 1, 2, "shard=dp unit_bytes=48K", 0, 0);
    validated(&m, 1, 2, "shard=dp level=1", 1, 0);
    validated(&m, 1, 2, NULL, 0, 0);
    model_free(&m);
    return hp_test_finish("test_grad_rows");
}
