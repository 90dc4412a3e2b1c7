/* FSDP's zero-copy gathers, counted at the comm layer (hp_comm_args.copied):
 * at level 3 the 4 rank-threads of one process share each unit's buffer, so
 * the training steps' all-gathers copy no byte; at level 2 each rank keeps
 * its own parameters, and every step's gathers copy exactly the peers'
 * shards, (members - 1) x shard floats per unit. Both train to the same
 * losses. The same in bf16 with gather=bf16: the gathers fill the store's
 * bf16 mirror (level 3: no byte copied; level 2: the peers' shards at 2
 * bytes an element), and the losses are bit for bit those of fp32 gathers
 * with every parameter sent through bf16 (narrowing commutes with gathering). */
#include <string.h>

#include "models/gpt2_plan.h"
#include "trainer_fixture.h"

/* Runs 3 steps under FSDP at `level`; returns the losses in loss[3] and each
 * rank's copied bytes in copied[4]; *expect gets level 2's count. */
static void run(const gpt2_fixture *f, int level, int bf16, int gather16, float *loss, int64_t *copied,
                int64_t *expect) {
    hp_plan plan;
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 4, 1));
    char set[64];
    snprintf(set, sizeof set, "shard=dp level=%d gather=%s", level, gather16 ? "bf16" : "fp32");
    CHECK_OK(hp_plan_set_fsdp(&plan, set, "test"));
    hp_trainer_config c;
    trainer_init ti;
    trainer_fixture_config(&c, &ti, f, 5, &plan, NULL, 4, 3);
    c.compile.dtype = bf16 ? HP_BF16 : HP_F32;
    c.compile.bf16_params_all = bf16;
    hp_trainer *t = NULL;
    CHECK_OK(hp_trainer_create(&t, &c));
    if (!t) return;
    int32_t tok[128], tgt[128];
    for (int i = 0; i < 128; i++) tok[i] = (i * 7) % 256, tgt[i] = (i * 13 + 5) % 256;
    for (int step = 0; step < 3; step++) CHECK_OK(hp_trainer_step(t, tok, tgt, step, 1e-3f, &loss[step], NULL));
    hp_dist *d = hp_trainer_dist(t);
    *expect = 0;
    for (int i = 0; i < hp_dist_nranks(d); i++) {
        hp_dist_rank *r = hp_dist_rank_at(d, i);
        copied[i] = r->c.rg.ctx.fsdp->copied;
        if (i == 0)
            for (int u = 0; u < r->c.fsdp.nunits; u++)
                *expect += 3 * (gather16 ? 2 : 4) * (int64_t)r->c.fsdp.units[u].shard * (r->c.fsdp.members - 1);
    }
    hp_trainer_destroy(t);
    hp_plan_free(&plan);
}

int main(void) {
    gpt2_fixture f;
    fixture_build(&f, (hp_gpt2_config){.L = 2, .NH = 2, .C = 32, .V = 256, .maxT = 32}, 8, 16, 3);
    float l3[3], l2[3];
    int64_t c3[4], c2[4], e3, e2;
    run(&f, 3, 0, 0, l3, c3, &e3);
    run(&f, 2, 0, 0, l2, c2, &e2);
    for (int i = 0; i < 4; i++) {
        CHECK(c3[i] == 0);
        CHECK(c2[i] == e2 && e2 > 0);
    }
    CHECK(!memcmp(l3, l2, sizeof l3)); /* the same numbers either way */
    CHECK(l3[2] < l3[0]);
    /* bf16 (the precision pass takes the forward graph): fp32 gathers, then bf16 gathers at levels 3 and 2 */
    gpt2_fixture fw = {.c = f.c};
    CHECK_OK(hp_graph_create(&fw.g));
    CHECK_OK(hp_gpt2_build(fw.g, &fw.io, &fw.c, 8, 16));
    float b32[3], b3[3], b2[3];
    int64_t d32[4], d3[4], d2[4], x32, x3, x2;
    run(&fw, 3, 1, 0, b32, d32, &x32);
    run(&fw, 3, 1, 1, b3, d3, &x3);
    run(&fw, 2, 1, 1, b2, d2, &x2);
    hp_graph_destroy(fw.g);
    for (int i = 0; i < 4; i++) {
        CHECK(d3[i] == 0);
        CHECK(d2[i] == x2 && x2 > 0 && 2 * x2 == e2); /* half level 2's fp32 bytes */
    }
    CHECK(!memcmp(b32, b3, sizeof b3));
    CHECK(!memcmp(b3, b2, sizeof b3));
    CHECK(memcmp(b3, l3, sizeof b3) != 0); /* bf16 ran */
    CHECK(b3[2] < b3[0]);
    fixture_free(&f);
    return hp_test_finish("test_fsdp_copy");
}
