/* FSDP across supernodes with transient gathered units (parallel/fsdp,
 * parallel/fsdp_slots): 4 rank-threads in 2 emulated supernodes, FSDP 4 on a
 * 4-block GPT-2. With reshard on, each supernode's store holds only its two
 * members' shards (plus the unmanaged parameters: the committed spans are
 * exactly those floats), the two ranks of a supernode share it, and the units
 * are gathered into 3 slots: the root (which the head reads again at the end
 * of the forward) and two for the blocks, the backward gathering h.1 and h.0
 * again (h.3 and h.2 still hold theirs). Every gather copies exactly the
 * rank's own shard into its slot (the peers of its supernode write theirs,
 * the other supernode's arrive over the link). The losses are bit for bit
 * those of the persistent copies (reshard off) and of other prefetch depths,
 * within 1e-5 of one supernode (another summation order) and, in
 * deterministic mode, bit for bit those of one supernode. Issue 24: the
 * backward's gathers start as soon as their slot is free (no later than
 * prefetch 1, one earlier); the fsdp2 style resharded (FSDP2's default) keeps
 * only each rank's own shard and gathers into slots of its own, in one
 * supernode too; keep_bytes keeps every unit for the backward (a slot each,
 * no second gather); all with the same bits. */
#include <math.h>
#include <string.h>

#include "models/gpt2_plan.h"
#include "trainer_fixture.h"

#define STEPS 4

typedef struct {
    float loss[STEPS];
    int transient, nslots, bwd_gathers;
    int64_t copied[4], expect_copied;
    size_t committed, expect_committed;
    int shared01, shared23, shared12;
    int bwd_start[8]; /* per unit: its backward gather's start among the backward's steps (-1: none) */
    int nunits;
} result;

static int64_t run_auto; /* hp_compile_opts.fsdp_keep_auto of the next run_with */

static void run_with(const gpt2_fixture *f, int supernodes, int reshard, int prefetch, int det, const char *extra,
                     result *res) {
    memset(res, 0, sizeof *res);
    hp_plan plan;
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 4, 1));
    char set[96];
    snprintf(set, sizeof set, "shard=dp level=3 reshard=%s prefetch=%d %s", reshard ? "on" : "off", prefetch, extra);
    CHECK_OK(hp_plan_set_fsdp(&plan, set, "test"));
    hp_comm_opts co;
    hp_comm_opts_default(&co);
    co.mpi = 0;
    co.supernodes = supernodes;
    co.ranks_per_supernode = 4 / supernodes;
    hp_comm_world *w = NULL;
    CHECK_OK(hp_comm_world_create(&w, &co));
    hp_trainer_config c;
    trainer_init ti;
    trainer_fixture_config(&c, &ti, f, 7, &plan, w, 4, STEPS);
    c.compile.deterministic = det;
    c.compile.fsdp_keep_auto = run_auto;
    hp_trainer *t = NULL;
    CHECK_OK(hp_trainer_create(&t, &c));
    if (t) {
        int32_t tok[128], tgt[128];
        for (int i = 0; i < 128; i++) tok[i] = (i * 7) % 256, tgt[i] = (i * 13 + 5) % 256;
        for (int s = 0; s < STEPS; s++) CHECK_OK(hp_trainer_step(t, tok, tgt, s, 1e-3f, &res->loss[s], NULL));
        hp_dist *d = hp_trainer_dist(t);
        const hp_fsdp_plan *fp = &hp_dist_rank_at(d, 0)->c.fsdp;
        res->transient = fp->transient;
        res->nslots = fp->nslots;
        for (int u = 0; u < fp->nunits; u++) {
            res->bwd_gathers += fp->units[u].bwd_gather;
            res->expect_copied += STEPS * 4 * (int64_t)fp->units[u].shard * (1 + fp->units[u].bwd_gather);
        }
        for (int i = 0; i < hp_dist_nranks(d); i++) res->copied[i] = hp_dist_rank_at(d, i)->c.rg.ctx.fsdp->copied;
        const hp_param_store *ps = &hp_dist_rank_at(d, 0)->ps;
        for (int i = 0; i < ps->nspans; i++) res->committed += ps->span[i][1] - ps->span[i][0];
        res->expect_committed = fp->nunits ? fp->units[0].offset : fp->total;
        for (int u = 0; u < fp->nunits; u++) res->expect_committed += (size_t)fp->sn_members * fp->units[u].shard;
        const hp_compiled *c0 = &hp_dist_rank_at(d, 0)->c;
        res->nunits = fp->nunits;
        for (int u = 0; u < fp->nunits && u < 8; u++) {
            res->bwd_start[u] = -1;
            char nm[HP_NAME_LEN];
            snprintf(nm, sizeof nm, "fsdp.%.60s.bwd_gather", fp->units[u].name);
            for (int i = c0->sched.begin[HP_PHASE_BWD]; i < c0->sched.begin[HP_PHASE_BWD + 1]; i++)
                if (!strcmp(c0->rg.g->nodes[c0->sched.order[i]].name, nm))
                    res->bwd_start[u] = i - c0->sched.begin[HP_PHASE_BWD];
        }
        float *p[4];
        for (int i = 0; i < 4; i++) p[i] = hp_dist_rank_at(d, i)->ps.data;
        res->shared01 = p[0] == p[1], res->shared23 = p[2] == p[3], res->shared12 = p[1] == p[2];
    }
    hp_trainer_destroy(t);
    hp_comm_world_destroy(w);
    hp_plan_free(&plan);
}

static void run(const gpt2_fixture *f, int supernodes, int reshard, int prefetch, int det, result *res) {
    run_with(f, supernodes, reshard, prefetch, det, "", res);
}

int main(void) {
    gpt2_fixture f;
    fixture_build(&f, (hp_gpt2_config){.L = 4, .NH = 2, .C = 32, .V = 256, .maxT = 32}, 8, 16, -1);
    result tr, off, one, pf0, pf2, trd, oned;
    run(&f, 2, 1, 1, 0, &tr);
    run(&f, 2, 0, 1, 0, &off);
    run(&f, 1, 1, 1, 0, &one);
    run(&f, 2, 1, 0, 0, &pf0);
    run(&f, 2, 1, 2, 0, &pf2);
    run(&f, 2, 1, 1, 1, &trd);
    run(&f, 1, 1, 1, 1, &oned);
    printf("transient: %d slots, %d backward gathers, %lld bytes copied per rank, %zu floats committed\n", tr.nslots,
           tr.bwd_gathers, (long long)tr.copied[0], tr.committed);
    CHECK(tr.transient && !off.transient && !one.transient);
    CHECK(tr.nslots == 3 && tr.bwd_gathers == 2);
    CHECK(pf0.transient && pf0.nslots == 2); /* prefetch 0: the root and one for the blocks */
    CHECK(pf2.transient && pf2.nslots == 4);
    CHECK(tr.committed == tr.expect_committed && tr.committed > 0);
    CHECK(off.committed == 0 && one.committed == 0); /* (whole stores: no spans) */
    CHECK(tr.shared01 && tr.shared23 && !tr.shared12); /* one store per supernode */
    CHECK(one.shared01 && one.shared12);
    for (int i = 0; i < 4; i++) CHECK(tr.copied[i] == tr.expect_copied && tr.expect_copied > 0);
    CHECK(!memcmp(tr.loss, off.loss, sizeof tr.loss));
    /* one supernode sums the gradients in another order: within rounding; in deterministic mode bit for bit */
    for (int s = 0; s < STEPS; s++) CHECK(fabsf(tr.loss[s] - one.loss[s]) <= 1e-5f);
    CHECK(trd.transient && !oned.transient);
    CHECK(!memcmp(trd.loss, oned.loss, sizeof trd.loss));
    CHECK(!memcmp(tr.loss, pf0.loss, sizeof tr.loss));
    CHECK(!memcmp(tr.loss, pf2.loss, sizeof tr.loss));
    CHECK(tr.loss[STEPS - 1] < tr.loss[0]);
    /* issue 24: the hyperpar style starts each backward gather as soon as its slot is free — no later than
     * prefetch 1 would (the fsdp2 style's), one of them earlier */
    result f2, f2one, f2off, keep, autok;
    run_with(&f, 2, 1, 1, 0, "style=fsdp2", &f2);
    int earlier = 0;
    for (int u = 0; u < tr.nunits; u++) {
        CHECK((tr.bwd_start[u] < 0) == (f2.bwd_start[u] < 0));
        CHECK(tr.bwd_start[u] <= f2.bwd_start[u]);
        earlier += tr.bwd_start[u] < f2.bwd_start[u];
    }
    CHECK(earlier >= 1);
    /* the fsdp2 style resharded (FSDP2's default): every rank its own store holding only its own shard, its own
     * slots, the backward gathering h.1 and h.0 again; in one supernode too (members > 1); reshard off: the
     * whole parameters per rank. The same bits. */
    run_with(&f, 1, 1, 1, 0, "style=fsdp2", &f2one);
    run_with(&f, 2, 0, 1, 0, "style=fsdp2", &f2off);
    printf("fsdp2 resharded: %d slots, %d backward gathers, %lld bytes copied per rank, %zu floats committed\n",
           f2.nslots, f2.bwd_gathers, (long long)f2.copied[0], f2.committed);
    CHECK(f2.transient && f2one.transient && !f2off.transient);
    CHECK(f2.nslots == 3 && f2.bwd_gathers == 2 && f2one.bwd_gathers == 2);
    CHECK(f2.committed == f2.expect_committed && f2.committed < tr.committed);
    CHECK(!f2.shared01 && !f2.shared23 && !f2one.shared01);
    CHECK(f2.copied[0] > tr.copied[0]);
    CHECK(!memcmp(f2.loss, tr.loss, sizeof tr.loss) && !memcmp(f2off.loss, tr.loss, sizeof tr.loss));
    CHECK(!memcmp(f2one.loss, one.loss, sizeof tr.loss));
    /* keep_bytes: every unit kept from its forward for its backward — a slot each, no backward gather */
    run_with(&f, 2, 1, 1, 0, "keep_bytes=1G", &keep);
    CHECK(keep.transient && keep.bwd_gathers == 0 && keep.nslots == keep.nunits);
    for (int i = 0; i < 4; i++) CHECK(keep.copied[i] < tr.copied[i]);
    CHECK(!memcmp(keep.loss, tr.loss, sizeof tr.loss));
    /* keep_bytes=auto: the bytes the memory budget settled (hp_compile_opts.fsdp_keep_auto; hp_train's memory
     * check sets them): 1 GiB keeps every unit as above, none keeps none */
    run_auto = 1 << 30;
    run_with(&f, 2, 1, 1, 0, "keep_bytes=auto", &autok);
    CHECK(autok.transient && autok.bwd_gathers == 0 && autok.nslots == keep.nslots);
    CHECK(!memcmp(autok.copied, keep.copied, sizeof keep.copied) && !memcmp(autok.loss, tr.loss, sizeof tr.loss));
    run_auto = 0;
    run_with(&f, 2, 1, 1, 0, "keep_bytes=auto", &autok);
    CHECK(autok.transient && autok.bwd_gathers == tr.bwd_gathers && autok.nslots == tr.nslots);
    CHECK(!memcmp(autok.copied, tr.copied, sizeof tr.copied) && !memcmp(autok.loss, tr.loss, sizeof tr.loss));
    fixture_free(&f);
    return hp_test_finish("test_fsdp_transient");
}
