/* parallel/muon_plan, layout-driven distributed Muon's plan (issue 25), on
 * GPT-2 124M's shapes and a small GPT-2, compiled per rank as `hyperpar
 * plan` does (the compile itself with AdamW: the plan only routes):
 *  - the keys its layouts give: one rank "local" (no owner, the load on
 *    the rank), DP "dp=R", FSDP "dp=F", HSDP "rep=R dp=F", TP's column-
 *    and row-parallel matrices in groups of their own ("tp=Sr" / "tp=Sc"
 *    beside "dp=R"), FSDP x TP;
 *  - every Muon matrix has one owner in its group; the plan is the same
 *    from every rank's compile (FSDP's `me` differs) and from a second
 *    build (deterministic);
 *  - the competing strategies as plans (round robin, Moonlight's ZeRO-1
 *    gather, Dion-style all-to-all, gather-all): none leaves its busiest
 *    rank less Newton–Schulz work than the layout-driven owners;
 *  - balance: the owners' Newton–Schulz FLOPs, max / mean over the ranks,
 *    at most 1.10 for 124M at 4 and 8 ranks (the issue's bound; reported
 *    for 64, where 48 matrices cannot cover 64 ranks evenly);
 *  - the pieces: over an FSDP shard group the held elements of a matrix
 *    add up to its elements (uneven and empty pieces included), and the
 *    bytes: DP's owner sends each other replica the whole update, an
 *    FSDP holder sends its piece and gets it back. */
#include <stdio.h>
#include <string.h>

#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "models/gpt2_plan.h"
#include "parallel/compile.h"
#include "parallel/muon_plan.h"
#include "testutil.h"

typedef struct {
    hp_graph *g;
    hp_optim_config adamw, muon;
    hp_compile_opts o;
} model;

static void model_build(model *m, const hp_gpt2_config *mc, int B, int T) {
    CHECK_OK(hp_graph_create(&m->g));
    hp_gpt2_io io;
    CHECK_OK(hp_gpt2_build(m->g, &io, mc, B, T));
    hp_optim_config_default(&m->adamw);
    hp_optim_config_default(&m->muon);
    m->muon.kind = HP_OPT_MUON;
    m->muon.lr = 1e-3f;
    m->o = (hp_compile_opts){.train = 1, .optim = &m->adamw, .max_norm = 1.0f, .schedule = {.overlap = 1}};
}

/* The plan from rank r's compile of plan p. */
static int plan_at(hp_muon_plan *out, const model *m, const hp_plan *p, int r) {
    hp_compiled c;
    hp_status st = hp_compile(&c, m->g, p, r, &m->o);
    if (st) {
        CHECK_OK(st);
        return 0;
    }
    st = hp_muon_plan_build(out, c.global, &c.prop, &c.mesh, c.fsdp.level ? &c.fsdp : NULL, &m->muon);
    if (!st) {
        /* the pieces of every FSDP-managed matrix tile it over the first shard group */
        for (int i = 0; c.fsdp.level && i < out->nmat; i++) {
            int np = hp_graph_params(c.global, NULL, 0), ids[512], k = -1;
            hp_graph_params(c.global, ids, np < 512 ? np : 512);
            for (int j = 0; j < np && j < 512; j++)
                if (ids[j] == out->mat[i].v) k = j;
            int64_t sum = 0, n = hp_shape_numel(&c.global->vals[out->mat[i].v].shape);
            int coord[HP_MESH_MAX_DIMS] = {0};
            for (int s = 0; s < c.mesh.size[c.fsdp.shard_axis]; s++) {
                coord[c.fsdp.shard_axis] = s;
                sum += hp_muon_held(c.global, &c.prop, &c.mesh, &c.fsdp, out->mat[i].v, k, hp_mesh_rank(&c.mesh, coord));
            }
            int tp = hp_mesh_axis(&c.mesh, "tp");
            CHECK(sum * (tp >= 0 && c.prop.val[out->mat[i].v].p[tp].kind == HP_SHARD ? c.mesh.size[tp] : 1) == n);
        }
    }
    hp_compiled_free(&c);
    if (st) {
        CHECK_OK(st);
        return 0;
    }
    return 1;
}

static int same_plans(const hp_muon_plan *a, const hp_muon_plan *b) {
    if (a->nmat != b->nmat || a->ngrp != b->ngrp) return 0;
    for (int i = 0; i < a->nmat; i++)
        if (a->mat[i].v != b->mat[i].v || a->mat[i].owner != b->mat[i].owner || a->mat[i].group != b->mat[i].group ||
            a->mat[i].nblk != b->mat[i].nblk ||
            (a->mat[i].nblk && memcmp(a->blk + a->mat[i].blk_at, b->blk + b->mat[i].blk_at, sizeof(int) * (size_t)a->mat[i].nblk)))
            return 0;
    for (int i = 0; i < a->ngrp; i++)
        if (strcmp(a->grp[i].key, b->grp[i].key)) return 0;
    for (int r = 0; r < a->nranks; r++)
        if (a->load[r] != b->load[r] || a->sent[r] != b->sent[r] || a->recv[r] != b->recv[r]) return 0;
    return 1;
}

/* Every matrix's owner is a rank of its group (or -1 for a local group). */
static void check_owners(const hp_muon_plan *p) {
    for (int i = 0; i < p->nmat; i++) {
        const hp_muon_matrix *x = &p->mat[i];
        int local = !strcmp(p->grp[x->group].key, "local");
        CHECK(local ? x->owner == -1 : x->owner >= 0 && x->owner < p->nranks);
        if (x->nblk) { /* a team: every block iterated by a rank, the lead the owner of block 0 */
            CHECK(p->grp[x->group].teams && x->owner == p->blk[x->blk_at] && x->blk_at + x->nblk <= p->nblk);
            int64_t r = x->rows < x->cols ? x->rows : x->cols;
            CHECK(x->nblk == x->count * ((r + HP_NS_ROW_BLOCK - 1) / HP_NS_ROW_BLOCK));
            for (int b = 0; b < x->nblk; b++) CHECK(p->blk[x->blk_at + b] >= 0 && p->blk[x->blk_at + b] < p->nranks);
        }
    }
}

/* Matrices of p iterated by a team of more than one rank. */
static int split_matrices(const hp_muon_plan *p) {
    int n = 0;
    for (int i = 0; i < p->nmat; i++) {
        int more = 0;
        for (int b = 1; b < p->mat[i].nblk && !more; b++) more = p->blk[p->mat[i].blk_at + b] != p->blk[p->mat[i].blk_at];
        n += more;
    }
    return n;
}

static int has_key(const hp_muon_plan *p, const char *key) {
    for (int i = 0; i < p->ngrp; i++)
        if (!strcmp(p->grp[i].key, key)) return 1;
    return 0;
}

/* FSDP over n ranks of 124M: one group, balanced owners, the same plan from every rank; *split: the matrices
 * iterated by teams. */
static double fsdp_124m(const model *m, int n, int check_all_ranks, int *split) {
    hp_plan plan;
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, n, 1));
    CHECK_OK(hp_plan_set_fsdp(&plan, "shard=dp unit_bytes=8M", "test"));
    hp_muon_plan p0, p1;
    double imb = -1;
    *split = -1;
    if (plan_at(&p0, m, &plan, 0)) {
        CHECK(p0.nmat == 48 && p0.ngrp == 1 && !strcmp(p0.grp[0].key, "dp=F") && p0.grp[0].nranks == n);
        check_owners(&p0);
        imb = hp_muon_plan_imbalance(&p0);
        *split = split_matrices(&p0);
        double total = 0;
        for (int r = 0; r < n; r++) total += p0.load[r];
        printf("FSDP %d (balance %g): 124M Newton-Schulz %.1f GFLOP per step, max / mean %.3f over the ranks, "
               "%d matrices split over teams\n", n, (double)m->muon.muon_balance, total * 1e-9, imb, *split);
        for (int r = 0; r < n; r++) CHECK(p0.sent[r] > 0 && p0.recv[r] > 0);
        if (plan_at(&p1, m, &plan, n - 1)) { /* another rank's compile: the same plan */
            CHECK(same_plans(&p0, &p1));
            hp_muon_plan_free(&p1);
        }
        if (check_all_ranks && plan_at(&p1, m, &plan, 0)) { /* built again: the same */
            CHECK(same_plans(&p0, &p1));
            hp_muon_plan_free(&p1);
        }
        hp_muon_plan_free(&p0);
    }
    hp_plan_free(&plan);
    return imb;
}

int main(void) {
    hp_kernels_init();
    model big, small;
    model_build(&big, &(hp_gpt2_config){.L = 12, .NH = 12, .C = 768, .V = 50257, .Vp = 50304, .maxT = 1024}, 1, 64);
    model_build(&small, &(hp_gpt2_config){.L = 2, .NH = 4, .C = 32, .V = 200, .Vp = 256, .maxT = 16}, 8, 8);

    /* the competing strategies as plans on the same layouts (FSDP 4, 124M): none has less Newton-Schulz work on
     * its busiest rank than the layout-driven owners; gather-all does all of it on every rank */
    {
        hp_plan plan;
        CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 4, 1));
        CHECK_OK(hp_plan_set_fsdp(&plan, "shard=dp unit_bytes=8M", "test"));
        hp_compiled c;
        CHECK_OK(hp_compile(&c, big.g, &plan, 0, &big.o));
        double best = 0, total = 0;
        for (int d = 0; d < HP_MUON_DIST_COUNT; d++) {
            hp_muon_plan p;
            CHECK_OK(hp_muon_plan_build_as(&p, c.global, &c.prop, &c.mesh, &c.fsdp, &big.muon, (hp_muon_dist)d));
            double mx = 0, sum = 0, bytes = 0;
            for (int r = 0; r < p.nranks; r++) {
                sum += p.load[r], bytes += p.recv[r];
                if (p.load[r] > mx) mx = p.load[r];
            }
            printf("%-13s busiest rank %7.1f GFLOP, all ranks %7.1f, max/mean %.3f, received %.1f MB per rank\n",
                   hp_muon_dist_name((hp_muon_dist)d), mx * 1e-9, sum * 1e-9, hp_muon_plan_imbalance(&p),
                   bytes * 1e-6 / p.nranks);
            if (d == HP_MUON_DIST_LAYOUT) best = mx, total = sum;
            CHECK(mx >= best * (1 - 1e-12));
            /* round robin in the model's order: rank 0 every qkv, 1 every proj, 2 every fc, 3 every mlp proj */
            if (d == HP_MUON_DIST_ROUND_ROBIN) CHECK(hp_muon_plan_imbalance(&p) > 1.19);
            if (d == HP_MUON_DIST_GATHER_ALL) CHECK(sum == 4 * total && hp_muon_plan_imbalance(&p) == 1.0);
            /* every 124M matrix is a unit of its own or spans a unit's four ranges: every rank touches it */
            if (d == HP_MUON_DIST_ZERO1_GATHER) CHECK(sum >= total && sum <= 4 * total);
            hp_muon_plan_free(&p);
        }
        hp_compiled_free(&c);
        hp_plan_free(&plan);
    }
    /* balance at 4 and 8 ranks (the issue's bound), reported at 64 */
    /* balance at 4, 8 and 64 ranks (the issue's bound): whole matrices at 4 and 8; at 64 (48 matrices) the
     * owners alone leave the MLP matrices' ranks 1.6x the mean, teams of row blocks bring it within the bound */
    int s4, s8, s64, s64off;
    double i4 = fsdp_124m(&big, 4, 1, &s4), i8 = fsdp_124m(&big, 8, 0, &s8), i64 = fsdp_124m(&big, 64, 1, &s64);
    CHECK(i4 >= 1.0 && i4 <= 1.10 && s4 == 0);
    CHECK(i8 >= 1.0 && i8 <= 1.10 && s8 == 0);
    CHECK(i64 >= 1.0 && i64 <= 1.10 && s64 > 0);
    big.muon.muon_balance = 0; /* never split: the owners' rule alone */
    double i64off = fsdp_124m(&big, 64, 0, &s64off);
    CHECK(i64off > 1.5 && s64off == 0);
    big.muon.muon_balance = 1.10f;

    hp_plan plan;
    hp_muon_plan p;
    /* one rank: local, no owners, every matrix's cost on the rank */
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 1, 1));
    if (plan_at(&p, &small, &plan, 0)) {
        CHECK(p.nmat == 8 && p.ngrp == 1 && !strcmp(p.grp[0].key, "local") && p.load[0] > 0);
        check_owners(&p);
        CHECK(p.sent[0] == 0 && p.recv[0] == 0);
        hp_muon_plan_free(&p);
    }
    hp_plan_free(&plan);
    /* DP 2: replicated, one owner each; the owner sends the other replica the whole update */
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 1));
    if (plan_at(&p, &small, &plan, 1)) {
        CHECK(p.ngrp == 1 && !strcmp(p.grp[0].key, "dp=R"));
        check_owners(&p);
        double whole = 0;
        for (int i = 0; i < p.nmat; i++) whole += 4.0 * (double)hp_shape_numel(&small.g->vals[p.mat[i].v].shape);
        CHECK(p.sent[0] + p.sent[1] == whole && p.recv[0] + p.recv[1] == whole);
        CHECK(p.load[0] > 0 && p.load[1] > 0);
        hp_muon_plan_free(&p);
    }
    hp_plan_free(&plan);
    /* TP 2 x DP 2: column- and row-parallel matrices in groups of their own */
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 2));
    if (plan_at(&p, &small, &plan, 3)) {
        CHECK(p.ngrp == 2 && has_key(&p, "dp=R tp=Sr") && has_key(&p, "dp=R tp=Sc"));
        check_owners(&p);
        hp_muon_plan_free(&p);
    }
    hp_plan_free(&plan);
    /* HSDP 2 x 2 and FSDP 2 x TP 2 */
    CHECK_OK(hp_plan_gpt2(&plan, 2, 2, 1));
    CHECK_OK(hp_plan_set_fsdp(&plan, "shard=dp replicate=rep", "test"));
    if (plan_at(&p, &small, &plan, 2)) {
        CHECK(p.ngrp == 1 && !strcmp(p.grp[0].key, "rep=R dp=F") && p.grp[0].nranks == 4);
        check_owners(&p);
        hp_muon_plan_free(&p);
    }
    hp_plan_free(&plan);
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 2));
    CHECK_OK(hp_plan_set_fsdp(&plan, "shard=dp", "test"));
    if (plan_at(&p, &small, &plan, 1)) {
        CHECK(p.ngrp == 2 && has_key(&p, "dp=F tp=Sr") && has_key(&p, "dp=F tp=Sc"));
        check_owners(&p);
        hp_muon_plan_free(&p);
    }
    hp_plan_free(&plan);
    /* AdamW: no plan */
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 1));
    {
        hp_compiled c;
        CHECK_OK(hp_compile(&c, small.g, &plan, 0, &small.o));
        CHECK_OK(hp_muon_plan_build(&p, c.global, &c.prop, &c.mesh, NULL, &small.adamw));
        CHECK(p.nmat == 0 && p.ngrp == 0);
        hp_muon_plan_free(&p);
        hp_compiled_free(&c);
    }
    hp_plan_free(&plan);
    hp_graph_destroy(big.g);
    hp_graph_destroy(small.g);
    return hp_test_finish("test_muon_plan");
}
