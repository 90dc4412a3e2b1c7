/* parallel/pp_stages: a model's units (embeddings, blocks, head) and their
 * splits over pipeline stages.
 *  - GPT-2 (12 blocks): prefix "h", 14 units, the blocks' forward FLOPs
 *    equal, the head (the vocabulary GEMM) several blocks' worth, every
 *    forward node in a unit, in order;
 *  - even: 14 units over 4 stages 4 4 3 3 (the remainder to the earliest);
 *  - balanced: no stage costlier than the even split's; equal units split
 *    evenly; the optimum found on small cases checked against every split;
 *  - explicit: blocks per stage (the embeddings with the first, the head
 *    with the last); bad counts refused naming pp_layers;
 *  - the cut of GPT-2 (12 blocks) over 4 stages: one activation sent per
 *    boundary, the residual stream [B, T, C]; wte read by the first and
 *    the last stage (tied: the head is the embeddings' table), nothing else
 *    shared; every forward node on a stage, in order;
 *  - a model without blocks refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt2.h"
#include "parallel/pp_stages.h"
#include "testutil.h"

/* the costliest stage of the best split of cost[0..n) into p runs, by trying every split */
static double brute(const double *cost, int n, int p, int a) {
    if (p == 1) {
        double c = 0;
        for (int i = a; i < n; i++) c += cost[i];
        return c;
    }
    double best = 1e300, run = 0;
    for (int b = a + 1; b <= n - (p - 1); b++) {
        run += cost[b - 1];
        double rest = brute(cost, n, p - 1, b), m = run > rest ? run : rest;
        if (m < best) best = m;
    }
    return best;
}

static double largest(const int *first, const double *cost, int p) {
    double mx = 0;
    for (int s = 0; s < p; s++) {
        double c = 0;
        for (int i = first[s]; i < first[s + 1]; i++) c += cost[i];
        mx = c > mx ? c : mx;
    }
    return mx;
}

int main(void) {
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    hp_gpt2_io io;
    CHECK_OK(hp_gpt2_build(g, &io, &(hp_gpt2_config){.L = 12, .NH = 12, .C = 768, .V = 50257, .Vp = 50304, .maxT = 1024}, 4, 256));
    hp_pp_units u;
    CHECK_OK(hp_pp_units_of(&u, g));
    if (u.cost) {
        CHECK(!strcmp(u.prefix, "h") && u.nblocks == 12);
        for (int l = 1; l < 12; l++) CHECK(u.cost[1 + l] == u.cost[1]);
        CHECK(u.cost[1] > 0 && u.cost[13] > 3 * u.cost[1]); /* the head: 2 B T C V against a block's ~24 B T C^2 */
        int prev = 0;
        for (int i = 0; i < g->nnodes; i++) {
            if (g->nodes[i].phase != HP_PHASE_FWD) continue;
            CHECK(u.unit_of[i] >= prev && u.unit_of[i] <= 13);
            prev = u.unit_of[i];
        }
        printf("GPT-2 124M units (GFLOP forward, B4 T256): embeddings %.3f, block %.3f, head %.3f\n", u.cost[0] * 1e-9,
               u.cost[1] * 1e-9, u.cost[13] * 1e-9);
        int fe[5], fb[5];
        CHECK_OK(hp_pp_split_even(fe, 14, 4));
        CHECK(fe[0] == 0 && fe[1] == 4 && fe[2] == 8 && fe[3] == 11 && fe[4] == 14);
        for (int p = 1; p <= 8; p++) {
            int fe2[9], fb2[9];
            CHECK_OK(hp_pp_split_even(fe2, 14, p));
            CHECK_OK(hp_pp_split_balanced(fb2, u.cost, 14, p));
            double ie = hp_pp_split_imbalance(fe2, u.cost, p), ib = hp_pp_split_imbalance(fb2, u.cost, p);
            printf("  %d stages: even max/mean %.3f, balanced %.3f (", p, ie, ib);
            for (int s = 0; s < p; s++) printf("%s%d", s ? " " : "", fb2[s + 1] - fb2[s]);
            printf(" units)\n");
            CHECK(ib <= ie + 1e-12);
            CHECK(largest(fb2, u.cost, p) <= brute(u.cost, 14, p, 0) * (1 + 1e-12));
            for (int s = 0; s < p; s++) CHECK(fb2[s + 1] > fb2[s]);
        }
        CHECK_OK(hp_pp_split_balanced(fb, u.cost, 14, 4));
        hp_pp_cut cut;
        CHECK_OK(hp_pp_cut_of(&cut, g, &u, fe, 4));
        if (cut.stage_of) {
            printf("cut over 4 stages:");
            for (int i = 0; i < cut.nsend; i++)
                printf(" '%s' %d->%d %.1f MB;", g->vals[cut.send[i].value].name, cut.send[i].from, cut.send[i].to,
                       (double)cut.send[i].bytes * 1e-6);
            for (int i = 0; i < cut.nshared; i++)
                printf(" shared '%s' %d..%d", g->vals[cut.shared[i].value].name, cut.shared[i].first, cut.shared[i].last);
            printf("\n");
            CHECK(cut.nsend == 3);
            for (int i = 0; i < cut.nsend; i++)
                CHECK(cut.send[i].from == i && cut.send[i].to == i + 1 && cut.send[i].bytes == 4LL * 4 * 256 * 768);
            CHECK(cut.nshared == 1 && !strcmp(g->vals[cut.shared[0].value].name, "wte") && cut.shared[0].first == 0 &&
                  cut.shared[0].last == 3);
            int prev = 0;
            for (int i = 0; i < g->nnodes; i++) {
                if (g->nodes[i].phase != HP_PHASE_FWD) continue;
                CHECK(cut.stage_of[i] >= prev && cut.stage_of[i] < 4);
                prev = cut.stage_of[i];
            }
            hp_pp_cut_free(&cut);
        }
        hp_pp_units_free(&u);
    }
    /* equal units: the balanced split is the even one */
    double one[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    int f[11], e[11];
    for (int p = 1; p <= 10; p++) {
        CHECK_OK(hp_pp_split_balanced(f, one, 10, p));
        CHECK_OK(hp_pp_split_even(e, 10, p));
        CHECK(largest(f, one, p) == largest(e, one, p));
    }
    /* small cases against every split */
    unsigned seed = 7;
    for (int trial = 0; trial < 200; trial++) {
        double c[9];
        int n = 3 + trial % 7, p = 1 + trial % n;
        for (int i = 0; i < n; i++) seed = seed * 1103515245u + 12345u, c[i] = (double)(seed >> 16 & 1023) + 1;
        CHECK_OK(hp_pp_split_balanced(f, c, n, p));
        CHECK(f[0] == 0 && f[p] == n);
        for (int s = 0; s < p; s++) CHECK(f[s + 1] > f[s]);
        CHECK(largest(f, c, p) == brute(c, n, p, 0));
    }
    /* explicit: 12 blocks as 2 4 4 2 */
    int blocks[4] = {2, 4, 4, 2};
    CHECK_OK(hp_pp_split_explicit(f, blocks, 14, 4));
    CHECK(f[0] == 0 && f[1] == 3 && f[2] == 7 && f[3] == 11 && f[4] == 14);
    int bad[4] = {2, 4, 4, 3};
    hp_status st = hp_pp_split_explicit(f, bad, 14, 4);
    CHECK(st && strstr(hp_status_msg(st), "pp_layers: the stages' blocks add up to 13, the model has 12"));
    hp_status_free(st);
    int zero[2] = {12, 0};
    st = hp_pp_split_explicit(f, zero, 14, 2);
    CHECK(st && strstr(hp_status_msg(st), "pp_layers: stage 1 has 0 blocks (at least 1)"));
    hp_status_free(st);
    st = hp_pp_split_even(f, 14, 15);
    CHECK(st && strstr(hp_status_msg(st), "pp: 15 stages for 14 units"));
    hp_status_free(st);
    hp_graph_destroy(g);
    /* a model without blocks */
    CHECK_OK(hp_graph_create(&g));
    hp_graph_param(g, "w", hp_shape2(4, 4));
    st = hp_pp_units_of(&u, g);
    CHECK(st && strstr(hp_status_msg(st), "the model has no blocks"));
    hp_status_free(st);
    hp_graph_destroy(g);
    return hp_test_finish("test_pp_stages");
}
