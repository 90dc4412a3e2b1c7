/* The steady-state training step allocates nothing: after a warm-up step, a
 * step of data loading, forward, backward, clipping and the optimizer (AdamW,
 * then Muon) makes no call to malloc, calloc, realloc, aligned_alloc or
 * posix_memalign (the linker routes them through the counters below). The
 * same for the compiled step of the trainer (runtime/trainer: the optimizer
 * phase inside the program) on one rank (AdamW, Muon) and on DP=2 x TP=2 rank
 * threads with the gradient reductions overlapped (collectives started and
 * waited on the comm layer's threads), also with those reductions in bf16
 * (--dp-reduce bf16; one and two micro-batches); and in bf16 (--dtype bf16)
 * on one rank and on DP=2 x TP=2 (with bf16 gradient reductions too);
 * distributed Muon under DP=2 x TP=2, FSDP 2 (one and two supernodes) and
 * FSDP 2 x TP 2. */
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "io/data.h"
#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "ops/ops.h"
#include "optim/optimizer.h"
#include "models/gpt2_plan.h"
#include "runtime/program.h"
#include "testutil.h"
#include "trainer_fixture.h"

#include "alloc_count.h"

/* Trainer steps (1 rank or a plan, its ranks in sn emulated supernodes): steps after the first allocate nothing. */
static void trainer_steps_sn(const gpt2_fixture *f, const hp_plan *plan, hp_opt_kind kind, int B, int T, hp_dtype dt,
                             hp_dtype dp_reduce, int grad_accum, int sn) {
    hp_comm_world *w = NULL;
    if (sn > 1) {
        hp_comm_opts co;
        hp_comm_opts_default(&co);
        co.mpi = 0;
        co.supernodes = sn;
        co.ranks_per_supernode = hp_mesh_size(&plan->mesh) / sn;
        CHECK_OK(hp_comm_world_create(&w, &co));
    }
    hp_trainer_config c;
    trainer_init ti;
    trainer_fixture_config(&c, &ti, f, 5, plan, w, plan ? hp_mesh_size(&plan->mesh) : 2, 6);
    c.optim.kind = kind;
    c.compile.dtype = dt;
    c.compile.dp_reduce = dp_reduce;
    c.compile.grad_accum = grad_accum;
    hp_trainer *t = NULL;
    CHECK_OK(hp_trainer_create(&t, &c));
    if (!t) {
        hp_comm_world_destroy(w);
        return;
    }
    int32_t tok[128], tgt[128];
    float first = 0, last = 0;
    for (int step = 0; step < 6; step++) {
        for (int i = 0; i < B * T * (grad_accum > 1 ? grad_accum : 1); i++) tok[i] = (i * 7) % 256, tgt[i] = (i * 13 + 5) % 256; /* one batch: the loss must fall */
        long a0 = allocs();
        float loss = 0, norm = 0;
        CHECK_OK(hp_trainer_step(t, tok, tgt, step, 1e-3f, &loss, &norm));
        long made = allocs() - a0;
        if (step > 0 && made != 0)
            fprintf(stderr, "trainer (%s, optimizer %d, %s, reduce %s, accum %d) step %d: %ld allocations\n",
                    plan ? "plan" : "1 rank", (int)kind, hp_dtype_name(dt), hp_dtype_name(dp_reduce), grad_accum, step,
                    made);
        if (step > 0) CHECK(made == 0);
        CHECK(isfinite(loss) && isfinite(norm) && norm > 0);
        if (step == 0) first = loss;
        last = loss;
    }
    CHECK(last < first); /* it trains */
    hp_trainer_destroy(t);
    hp_comm_world_destroy(w);
}

static void trainer_steps_dpr(const gpt2_fixture *f, const hp_plan *plan, hp_opt_kind kind, int B, int T, hp_dtype dt,
                              hp_dtype dp_reduce, int grad_accum) {
    trainer_steps_sn(f, plan, kind, B, T, dt, dp_reduce, grad_accum, 1);
}

static void trainer_steps(const gpt2_fixture *f, const hp_plan *plan, hp_opt_kind kind, int B, int T, hp_dtype dt) {
    trainer_steps_dpr(f, plan, kind, B, T, dt, HP_F32, 0);
}

int main(void) {
    hp_kernels_init();
    long before = allocs();
    void *volatile probe = malloc(16);
    free(probe);
    CHECK(allocs() == before + 1); /* the counter works */

    const int B = 2, T = 16;
    gpt2_fixture f;
    fixture_build(&f, (hp_gpt2_config){.L = 2, .NH = 2, .C = 32, .V = 256, .maxT = 32}, B, T, 3);
    hp_graph *g = f.g;
    hp_gpt2_io io = f.io;
    hp_param_store ps = f.ps;
    hp_pool *pool;
    CHECK_OK(hp_pool_create(&pool, 2));
    hp_program *prog;
    CHECK_OK(hp_program_create(&prog, g, &ps, pool));

    /* text data: this test's own source file */
    hp_data *data;
    hp_data_config dc = {.path = __FILE__, .kind = HP_DATA_TEXT, .vocab = 256, .B = B, .T = T, .seed = 1};
    CHECK_OK(hp_data_open(&data, &dc));

    /* the program's forward and backward (the optimizer phase: trainer_steps below) */
    float first = 0, last = 0;
    for (int step = 0; step < 6; step++) {
        long a0 = allocs();
        CHECK_OK(hp_data_next(data, hp_program_data(prog, io.tokens), hp_program_data(prog, io.targets)));
        CHECK_OK(hp_program_run(prog, HP_PHASE_FWD));
        CHECK_OK(hp_program_run(prog, HP_PHASE_BWD));
        long made = allocs() - a0;
        if (step > 0 && made != 0) fprintf(stderr, "program step %d: %ld allocations\n", step, made);
        if (step > 0) CHECK(made == 0);
        float l = ((float *)hp_program_data(prog, io.loss))[0];
        if (step == 0) first = l;
        last = l;
    }
    CHECK(isfinite(first) && isfinite(last));
    hp_data_close(data);
    trainer_steps(&f, NULL, HP_OPT_ADAMW, B, T, HP_F32);
    trainer_steps(&f, NULL, HP_OPT_MUON, B, T, HP_F32);
    hp_plan plan;
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 2));
    trainer_steps(&f, &plan, HP_OPT_ADAMW, B, T, HP_F32);
    trainer_steps(&f, &plan, HP_OPT_MUON, B, T, HP_F32); /* distributed Muon over the TP cuts */
    /* the gradient all-reduces in bf16 (--dp-reduce bf16): the casts around the overlapped reductions,
     * also over two micro-batches */
    trainer_steps_dpr(&f, &plan, HP_OPT_ADAMW, B, T, HP_F32, HP_BF16, 0);
    trainer_steps_dpr(&f, &plan, HP_OPT_ADAMW, B, T, HP_F32, HP_BF16, 2);
    hp_plan_free(&plan);
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 1)); /* FSDP: gathers and reductions allocate nothing either */
    CHECK_OK(hp_plan_set_fsdp(&plan, "shard=dp level=3", "test"));
    trainer_steps(&f, &plan, HP_OPT_ADAMW, B, T, HP_F32);
    /* across 2 emulated supernodes: transient gathered units (copies into the slots, backward gathers) */
    trainer_steps_sn(&f, &plan, HP_OPT_ADAMW, B, T, HP_F32, HP_F32, 0, 2);
    /* distributed Muon: packing, the variable all-to-alls and gathers, Newton-Schulz on the owners */
    trainer_steps(&f, &plan, HP_OPT_MUON, B, T, HP_F32);
    trainer_steps_sn(&f, &plan, HP_OPT_MUON, B, T, HP_F32, HP_F32, 0, 2);
    hp_plan_free(&plan);
    CHECK_OK(hp_plan_gpt2(&plan, 1, 2, 2)); /* FSDP 2 x TP 2: the gathers of the blocks, the spreads */
    CHECK_OK(hp_plan_set_fsdp(&plan, "shard=dp level=3", "test"));
    trainer_steps(&f, &plan, HP_OPT_MUON, B, T, HP_F32);
    hp_plan_free(&plan);
    { /* teams (one layer of 256 channels over FSDP 2: row blocks iterated by two ranks, rows traded every step) */
        gpt2_fixture ft;
        fixture_build(&ft, (hp_gpt2_config){.L = 1, .NH = 4, .C = 256, .V = 256, .maxT = 32}, B, T, 3);
        CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 1));
        CHECK_OK(hp_plan_set_fsdp(&plan, "shard=dp level=3", "test"));
        trainer_steps(&ft, &plan, HP_OPT_MUON, B, T, HP_F32);
        hp_plan_free(&plan);
        fixture_free(&ft);
    }
    /* bf16 (the precision pass takes the forward graph): casts, bf16 kernels and the
     * oneDNN products allocate nothing here either. oneDNN's own execute calls
     * allocate inside libdnnl (a shared library the link-time wrap cannot see). */
    gpt2_fixture fw = {.c = f.c};
    CHECK_OK(hp_graph_create(&fw.g));
    CHECK_OK(hp_gpt2_build(fw.g, &fw.io, &fw.c, B, T));
    trainer_steps(&fw, NULL, HP_OPT_ADAMW, B, T, HP_BF16);
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 2));
    trainer_steps(&fw, &plan, HP_OPT_ADAMW, B, T, HP_BF16);
    trainer_steps_dpr(&fw, &plan, HP_OPT_ADAMW, B, T, HP_BF16, HP_BF16, 0); /* bf16 compute, bf16 gradient reductions */
    hp_plan_free(&plan);
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 1)); /* FSDP reducing in bf16: the narrowing and widening too */
    CHECK_OK(hp_plan_set_fsdp(&plan, "shard=dp level=3 reduce=bf16", "test"));
    trainer_steps(&fw, &plan, HP_OPT_ADAMW, B, T, HP_BF16);
    hp_plan_free(&plan);
    for (int level = 2; level <= 3; level++) { /* FSDP gathering in bf16: the narrowing, the mirror */
        CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 1));
        CHECK_OK(hp_plan_set_fsdp(&plan, level == 3 ? "shard=dp level=3 gather=bf16" : "shard=dp level=2 gather=bf16",
                                  "test"));
        trainer_steps(&fw, &plan, HP_OPT_ADAMW, B, T, HP_BF16);
        hp_plan_free(&plan);
    }
    hp_graph_destroy(fw.g);
    hp_program_destroy(prog);
    hp_pool_destroy(pool);
    fixture_free(&f);
    return hp_test_finish("test_noalloc");
}
