/* parallel/pp_sched: pipeline schedule tables (issue 26).
 *  - every table over p <= 8 stages and m <= 16 micro-batches (interleaved:
 *    2 and 3 chunks, m a multiple of p) passes the rules: each micro-batch's
 *    forward before its backward (B before W) on every stage, no deadlock,
 *    the warm-up counts (1F1B and ZB-H1: p - r - 1; interleaved: (p - r - 1)
 *    2 + (v - 1) p);
 *  - transfers: every forward's activation sent to the next virtual stage's
 *    stage, every input gradient to the previous one's, each received by the
 *    action that needs it (one each);
 *  - simulated with forward 1, backward 2 (B 1, W 1): GPipe and 1F1B have the
 *    bubble (p - 1) / (m + p - 1) exactly; interleaved and ZB-H1 less than
 *    1F1B's; 1F1B holds at most p - r micro-batches' activations on stage r,
 *    GPipe m;
 *  - a broken table is refused naming the rule (a backward moved before its
 *    forward; a missing backward; a table that waits forever);
 *  - bad sizes are refused naming the field; the timeline draws the table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/pp_sched.h"
#include "testutil.h"

static int count_p2p(const hp_pp_p2p *t, int n, int micro, int vstage, int grad) {
    int c = 0;
    for (int i = 0; i < n; i++) c += t[i].micro == micro && t[i].vstage == vstage && t[i].grad == grad;
    return c;
}

static void check_one(hp_pp_kind k, int p, int v, int m) {
    hp_pp_sched s;
    hp_status st = hp_pp_sched_build(&s, k, p, v, m);
    if (st) {
        fprintf(stderr, "%s p %d v %d m %d: ", hp_pp_kind_name(k), p, v, m);
        CHECK_OK(st);
        return;
    }
    st = hp_pp_sched_check(&s);
    if (st) fprintf(stderr, "%s p %d v %d m %d: ", hp_pp_kind_name(k), p, v, m);
    CHECK_OK(st);
    for (int r = 0; r < p; r++) {
        int w = k == HP_PP_GPIPE ? m : k == HP_PP_INTERLEAVED ? (p - r - 1) * 2 + (v - 1) * p : p - r - 1;
        if (w > m * v) w = m * v;
        CHECK(s.warmup[r] == w);
        CHECK(s.at[r + 1] - s.at[r] == m * v * (k == HP_PP_ZBH1 ? 3 : 2));
    }
    /* transfers: one per boundary between stages, each way */
    hp_pp_p2p *t = NULL;
    int n = 0;
    CHECK_OK(hp_pp_sched_p2p(&t, &n, &s));
    int V = p * v, want = p > 1 ? 2 * m * (V - 1) : 0;
    CHECK(n == want);
    for (int b = 0; p > 1 && b < m; b++)
        for (int j = 0; j < V - 1; j++) {
            CHECK(count_p2p(t, n, b, j, 0) == 1 && count_p2p(t, n, b, j, 1) == 1);
        }
    for (int i = 0; i < n; i++) {
        int from = t[i].grad ? t[i].vstage + 1 : t[i].vstage, to = t[i].grad ? t[i].vstage : t[i].vstage + 1;
        CHECK(t[i].from == hp_pp_stage_of(&s, from) && t[i].to == hp_pp_stage_of(&s, to) && t[i].from != t[i].to);
    }
    free(t);
    hp_pp_sim sim;
    CHECK_OK(hp_pp_sched_simulate(&sim, &s, 1, 2, 1, 1));
    if (sim.start) {
        double formula = (double)(p - 1) / (double)(m + p - 1);
        if (k == HP_PP_GPIPE || k == HP_PP_1F1B) {
            if (sim.bubble < formula - 1e-12 || sim.bubble > formula + 1e-12)
                fprintf(stderr, "%s p %d m %d: bubble %g, formula %g\n", hp_pp_kind_name(k), p, m, sim.bubble, formula);
            CHECK(sim.bubble > formula - 1e-12 && sim.bubble < formula + 1e-12);
            CHECK(sim.length == 3.0 * (m + p - 1));
        } else if (p > 1) {
            CHECK(sim.bubble < formula - 1e-9); /* below 1F1B's */
        }
        for (int r = 0; r < p; r++) {
            if (k == HP_PP_1F1B) CHECK(sim.peak[r] == (p - r < m ? p - r : m));
            if (k == HP_PP_GPIPE) CHECK(sim.peak[r] == m);
        }
        hp_pp_sim_free(&sim);
    }
    hp_pp_sched_free(&s);
}

static void expect_bad(const hp_pp_sched *s, const char *needle) {
    hp_status st = hp_pp_sched_check(s);
    CHECK(st != HP_OK && strstr(hp_status_msg(st), needle));
    if (st && !strstr(hp_status_msg(st), needle)) fprintf(stderr, "got: %s\n", hp_status_msg(st));
    hp_status_free(st);
}

int main(void) {
    for (int p = 1; p <= 8; p++)
        for (int m = 1; m <= 16; m++) {
            check_one(HP_PP_GPIPE, p, 1, m);
            check_one(HP_PP_1F1B, p, 1, m);
            check_one(HP_PP_ZBH1, p, 1, m);
            if (m % p == 0) check_one(HP_PP_INTERLEAVED, p, 2, m), check_one(HP_PP_INTERLEAVED, p, 3, m);
        }
    /* the figures the issue compares: p 2, m 4 and 8 */
    for (int m = 4; m <= 8; m += 4) {
        double b[HP_PP_NKINDS];
        for (int k = 0; k < HP_PP_NKINDS; k++) {
            hp_pp_sched s;
            int v = k == HP_PP_INTERLEAVED ? 2 : 1;
            CHECK_OK(hp_pp_sched_build(&s, (hp_pp_kind)k, 2, v, m));
            hp_pp_sim sim; /* a chunk is 1/v of a stage's layers */
            CHECK_OK(hp_pp_sched_simulate(&sim, &s, 1.0 / v, 2.0 / v, 1.0 / v, 1.0 / v));
            b[k] = sim.bubble;
            printf("p 2, m %d, %-11s bubble %.4f, step %.1f units, peak activations %d / %d\n", m,
                   hp_pp_kind_name((hp_pp_kind)k), sim.bubble, sim.length, sim.peak[0], sim.peak[1]);
            hp_pp_sim_free(&sim);
            hp_pp_sched_free(&s);
        }
        CHECK(b[HP_PP_ZBH1] < b[HP_PP_1F1B] && b[HP_PP_INTERLEAVED] < b[HP_PP_1F1B]);
    }
    /* broken tables */
    hp_pp_sched s;
    CHECK_OK(hp_pp_sched_build(&s, HP_PP_1F1B, 2, 1, 4));
    hp_action keep = s.act[s.at[1]];
    s.act[s.at[1]] = s.act[s.at[1] + 1], s.act[s.at[1] + 1] = keep; /* stage 1: B0 before F0 */
    expect_bad(&s, "stage 1 runs the backward of micro-batch 0 (chunk 0) before its forward");
    s.act[s.at[1] + 1] = s.act[s.at[1]], s.act[s.at[1]] = keep;
    s.act[s.at[2] - 1].micro = 0; /* stage 1: micro-batch 0's backward twice, 3's never */
    expect_bad(&s, "stage 1 runs the backward of micro-batch 0 (chunk 0) twice");
    hp_pp_sched_free(&s);
    CHECK_OK(hp_pp_sched_build(&s, HP_PP_GPIPE, 2, 1, 2));
    /* stage 0: B1 B0 is valid alone, but stage 1 waits: swap stage 0's forwards */
    keep = s.act[0], s.act[0] = s.act[1], s.act[1] = keep;
    CHECK_OK(hp_pp_sched_check(&s)); /* F1 F0 on stage 0 still completes (stage 1 waits for F0 a while) */
    hp_pp_sched_free(&s);
    CHECK_OK(hp_pp_sched_build(&s, HP_PP_1F1B, 2, 1, 2));
    /* stage 0: F0 F1 B0 B1 -> F0 B0 F1 B1 breaks the warm-up count */
    keep = s.act[1], s.act[1] = s.act[2], s.act[2] = keep;
    expect_bad(&s, "stage 0 runs 1 forwards before its first backward, not 2");
    hp_pp_sched_free(&s);
    CHECK_OK(hp_pp_sched_build(&s, HP_PP_GPIPE, 2, 1, 2));
    /* stage 1: B1 B0 F... -> a deadlock: stage 1 runs B0 first, waiting on nothing, but its F1 before F0 after
     * stage 0's F0 F1 is fine; make stage 0 run B0 before F1 */
    hp_action t0[4] = {{HP_ACT_FWD, 0, 0}, {HP_ACT_BWD, 0, 0}, {HP_ACT_FWD, 1, 0}, {HP_ACT_BWD, 1, 0}};
    hp_action t1[4] = {{HP_ACT_FWD, 1, 0}, {HP_ACT_FWD, 0, 0}, {HP_ACT_BWD, 0, 0}, {HP_ACT_BWD, 1, 0}};
    memcpy(s.act, t0, sizeof t0), memcpy(s.act + 4, t1, sizeof t1);
    s.warmup[0] = 0, s.warmup[1] = 2;
    s.kind = HP_PP_1F1B;
    s.warmup[1] = 1;
    expect_bad(&s, "waits for an input that never comes");
    hp_pp_sched_free(&s);
    /* bad sizes */
    hp_status st = hp_pp_sched_build(&s, HP_PP_INTERLEAVED, 4, 2, 6);
    CHECK(st && strstr(hp_status_msg(st), "micro_batches: the interleaved schedule needs a multiple of the 4 stages"));
    hp_status_free(st);
    st = hp_pp_sched_build(&s, HP_PP_1F1B, 4, 2, 8);
    CHECK(st && strstr(hp_status_msg(st), "pp_chunks: the 1f1b schedule runs one chunk per stage, got 2"));
    hp_status_free(st);
    st = hp_pp_sched_build(&s, HP_PP_GPIPE, 0, 1, 8);
    CHECK(st && strstr(hp_status_msg(st), "pp: the stages must be in 1..4096, got 0"));
    hp_status_free(st);
    hp_pp_kind k;
    st = hp_pp_kind_parse(&k, "2f2b");
    CHECK(st && strstr(hp_status_msg(st), "schedule: unknown pipeline schedule '2f2b'"));
    hp_status_free(st);
    CHECK_OK(hp_pp_kind_parse(&k, "zb-h1"));
    CHECK(k == HP_PP_ZBH1);
    /* the timeline: 1F1B over 4 stages, 8 micro-batches */
    CHECK_OK(hp_pp_sched_build(&s, HP_PP_1F1B, 4, 1, 8));
    char *text = NULL;
    CHECK_OK(hp_pp_sched_timeline(&text, &s));
    if (text) {
        printf("%s", text);
        CHECK(!strncmp(text, "stage 0   |F0 F1 F2 F3 ", 23)); /* warm-up: 3 forwards, then the first 1F1B pair */
        const char *l3 = strstr(text, "stage 3   |");
        CHECK(l3 && !strncmp(l3, "stage 3   |.  .  .  F0 B0 B0 F1 ", 32));
        free(text);
    }
    hp_pp_sched_free(&s);
    return hp_test_finish("test_pp_sched");
}
