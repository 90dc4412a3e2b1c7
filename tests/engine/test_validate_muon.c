/* Validation mode's check of Muon's updates (runtime/validate_muon): after a
 * validated step's optimizer phase, distributed Muon under FSDP 2, HSDP 2x2
 * and ZeRO-1 (the layout-driven owners, and round-robin and gather-all under
 * FSDP 2), tensor-parallel cuts under TP 2, DP 2 x TP 2 and FSDP 2 x TP 2, and Muon under DP 2 agree with one rank's update of
 * every Muon matrix within 1e-4 of the update's size, and not bit for bit
 * (the gradients were summed in another order); a matrix whose two halves
 * were orthogonalised apart — what updating each rank's piece alone would do
 * — is caught with one line naming it; under AdamW there is nothing to check. */
#include <string.h>

#include "models/gpt2_plan.h"
#include "optim/muon.h"
#include "optim/newton_schulz.h"
#include "optim/phase.h"
#include "runtime/dist_weights.h"
#include "runtime/validate_muon.h"
#include "validate_model.h"

enum { B = 8, T = 8 };

static hp_status run_opt(hp_dist_rank *r, void *ctx) {
    (void)ctx;
    return hp_program_run(r->prog, HP_PHASE_OPT);
}

/* The matrix `name` updated as if its two halves of rows were two matrices
 * (from the step's parameters w0 and the reference gradient g, momentum zero). */
static void halves_update(float *w, const float *w0, const float *g, long rows, long cols, const hp_optim_config *oc,
                          float lr, hp_pool *pool) {
    long n = rows * cols, h = rows / 2;
    float *u = calloc((size_t)n, sizeof *u), *m = calloc((size_t)n, sizeof *m);
    float *scr = calloc(hp_newton_schulz_batched_scratch(1, h, cols), sizeof(float));
    hp_muon_momentum_update(pool, u, m, g, n, oc->muon_beta, oc->muon_momentum, oc->muon_nesterov);
    hp_newton_schulz(pool, u, u, scr, h, cols, &oc->ns);
    hp_newton_schulz(pool, u + h * cols, u + h * cols, scr, rows - h, cols, &oc->ns);
    memcpy(w, w0, sizeof(float) * (size_t)n);
    hp_muon_apply(pool, w, u, n, lr, oc->muon_weight_decay, hp_muon_scale(oc->muon_scale, rows, cols));
    free(u), free(m), free(scr);
}

/* One validated step with Muon (muon 0: AdamW) under the plan; corrupt: the
 * MLP's first matrix updated by halves afterwards. */
static void check(const model *m, int reps, int dp, int tp, const char *fsdp, int dist, int muon, int corrupt) {
    hp_plan plan;
    CHECK_OK(hp_plan_gpt2(&plan, reps, dp, tp));
    if (fsdp) CHECK_OK(hp_plan_set_fsdp(&plan, fsdp, "test"));
    hp_comm_opts co;
    hp_comm_opts_default(&co);
    co.ranks_per_supernode = reps * dp * tp;
    co.mpi = 0;
    co.timeout_s = 60;
    hp_comm_world *w = NULL;
    CHECK_OK(hp_comm_world_create(&w, &co));
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    if (muon) oc.kind = HP_OPT_MUON;
    oc.muon_dist = dist;
    hp_dist *d = NULL;
    hp_dist_config dc = {.model = m->g, .plan = &plan, .world = w, .threads_per_rank = 1,
                         .compile = {.train = 1, .optim = &oc, .max_norm = 1.0f}};
    CHECK_OK(hp_dist_create(&d, &dc));
    if (!d) goto out_world;
    model_scatter(d, m);
    float lrs[2];
    hp_optim_phase_lrs(lrs, &oc, oc.lr);
    for (int i = 0; i < hp_dist_nranks(d); i++) {
        hp_dist_rank *r = hp_dist_rank_at(d, i);
        memcpy(hp_program_data(r->prog, r->c.optim.lr), lrs, sizeof lrs);
        *(int32_t *)hp_program_data(r->prog, r->c.optim.step) = 1;
    }
    hp_validator *v = NULL;
    hp_validate_config vc = {.g = hp_dist_global(d), .d = d};
    CHECK_OK(hp_validate_create(&v, &vc));
    hp_dist_ckpt *ck = NULL;
    CHECK_OK(hp_dist_ckpt_create(&ck, d));
    hp_validate_report rep = {0};
    hp_vmuon *vm = NULL;
    if (v && ck) {
        CHECK_OK(hp_validate_step(v, &rep));
        CHECK_OK(hp_vmuon_before(&vm, d, ck, v, &oc, 1.0f, 1));
        CHECK((vm != NULL) == muon);
        CHECK_OK(hp_dist_run(d, run_opt, NULL));
    }
    if (vm && corrupt) {
        const char *name = "h.0.mlp.fc.weight";
        const hp_param_store *ps = hp_validate_ref_store(v);
        int k = hp_param_store_find(ps, name);
        int64_t n = 0;
        const float *g = hp_validate_ref_grad(v, name, &n);
        CHECK(k >= 0 && g);
        hp_pool *pool = NULL;
        CHECK_OK(hp_pool_create(&pool, 1));
        float *bad = malloc(sizeof(float) * (size_t)n);
        if (k >= 0 && g && pool && bad) {
            const hp_shape *s = &ps->shape[k];
            halves_update(bad, ps->data + ps->offset[k], g, s->d[0], s->d[1], &oc, lrs[1], pool);
            CHECK_OK(hp_dist_weight_set(d, ck, name, bad, n));
            hp_status st = hp_vmuon_check(vm, &rep, lrs[1]);
            CHECK(st != HP_OK);
            if (st) {
                const char *msg = hp_status_msg(st);
                printf("%s\n", msg);
                CHECK(strstr(msg, "the Muon update of 'h.0.mlp.fc.weight'") && !strchr(msg, '\n'));
                hp_status_free(st);
            }
        }
        free(bad);
        hp_pool_destroy(pool);
    } else if (vm) {
        CHECK_OK(hp_vmuon_check(vm, &rep, lrs[1]));
        int nmats = 0;
        for (int i = 0; i < m->ps.n; i++) nmats += m->ps.hidden_matrix[i];
        CHECK(rep.nupdates == nmats && nmats == 8);
        CHECK(rep.worst_update <= 1e-4 && rep.worst_update > 0);
        printf("rep=%d dp=%d tp=%d %s dist %d: %d Muon updates, worst %.3g of the update\n", reps, dp, tp, fsdp ? fsdp : "(DP)",
               dist, rep.nupdates, rep.worst_update);
    }
    hp_vmuon_free(vm);
    hp_validate_report_free(&rep);
    hp_dist_ckpt_destroy(ck);
    hp_validate_destroy(v);
    hp_dist_destroy(d);
out_world:
    hp_comm_world_destroy(w);
    hp_plan_free(&plan);
}

int main(void) {
    model m;
    model_build(&m, B, T);
    check(&m, 1, 2, 1, "shard=dp", 0, 1, 0);               /* FSDP 2, layout-driven owners */
    check(&m, 1, 2, 1, "shard=dp", 1, 1, 0);               /* round-robin */
    check(&m, 1, 2, 1, "shard=dp", 4, 1, 0);               /* gather-all */
    check(&m, 2, 2, 1, "shard=dp replicate=rep", 0, 1, 0); /* HSDP 2x2 */
    check(&m, 1, 2, 1, "shard=dp level=1", 0, 1, 0);       /* ZeRO-1 */
    check(&m, 1, 2, 1, NULL, 0, 1, 0);                     /* DP 2 */
    check(&m, 1, 1, 2, NULL, 0, 1, 0);                     /* TP 2: row and column cuts */
    check(&m, 1, 2, 2, NULL, 2, 1, 0);                     /* DP 2 x TP 2, Moonlight's ZeRO-1 gather */
    check(&m, 1, 2, 2, "shard=dp", 0, 1, 0);               /* FSDP 2 x TP 2 */
    check(&m, 1, 2, 1, "shard=dp", 0, 1, 1);               /* a matrix updated by halves: caught */
    check(&m, 1, 1, 2, NULL, 0, 1, 1);                     /* the same under TP 2 */
    check(&m, 1, 2, 1, "shard=dp", 0, 0, 0);               /* AdamW: nothing to check */
    model_free(&m);
    return hp_test_finish("test_validate_muon");
}
