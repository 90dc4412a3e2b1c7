/* autopar/cost: the cost model priced against hand-computed values on a tiny
 * GPT-2's compiled programs, with a synthetic profile and cluster:
 *  - one rank, every family at one rate: compute is the forward and backward
 *    nodes' time exactly — the matrix products' FLOPs, the others' bytes, at
 *    the rate — the optimizer the optimizer nodes', and the step their sum
 *    (nothing else); a compute scale divides it;
 *  - a call's time on one tier and across two (α per message, β per rank),
 *    the volumes of a ring and of the two-tier algorithms;
 *  - DP 2 with the reductions blocking: every byte of the all-reduces is
 *    exposed (the gradients' bytes per rank are the parameters', as a ring of 2
 *    moves them), with overlap on less is exposed, the split adds up;
 *  - DP 4 over 2 supernodes: the inter tier carries what the two-tier
 *    all-reduce sends between them;
 *  - a pipeline of 2 stages: the bubble is there and shrinks in share as the
 *    micro-batches grow; the split adds up; the timeline's compute events of
 *    each stage never overlap and add up to its compute and optimizer;
 *  - the same pipeline on one process's cores (processor sharing): at equal
 *    speeds it is the free simulation exactly; when a stage computing alone
 *    runs twice as fast, every stage's kernels still do the same work (the
 *    integral of the speed over its compute events equals its kernels' time at
 *    the all-computing rate) and the step shortens. */
#include <math.h>
#include <string.h>

#include "autopar/cost.h"
#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "models/gpt2_plan.h"
#include "testutil.h"

/* the model: its forward graph (loss set) and parameter count */
typedef struct {
    hp_gpt2_config c;
    hp_graph *g;
    hp_gpt2_io io;
    double nparams;
} model;

static hp_profile flat_profile(double gflops) {
    hp_profile p;
    memset(&p, 0, sizeof p);
    snprintf(p.machine, sizeof p.machine, "flat");
    for (int f = 0; f < HP_PROF_NFAMILIES; f++)
        for (int d = 0; d < HP_PROF_NDTYPES; d++)
            for (int b = 0; b < HP_PROF_NBUCKETS; b++)
                p.kernel[f][d][b] = (hp_prof_kernel){.given = 1, .gflops = gflops, .gbps = 1e12};
    return p;
}

static hp_cluster cluster(int supernodes, int rps, double intra_GBps, double intra_us, double inter_GBps,
                          double inter_us) {
    hp_cluster c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "test");
    c.supernodes = supernodes, c.ranks_per_supernode = rps, c.world = supernodes * rps;
    c.intra_bandwidth_GBps = intra_GBps, c.intra_latency_us = intra_us;
    c.inter_bandwidth_GBps = inter_GBps, c.inter_latency_us = inter_us;
    c.peak_fp32_flops = c.peak_bf16_flops = 1e12, c.memory_GB = 1;
    return c;
}

static int near(double a, double b, double rel) { return fabs(a - b) <= rel * fmax(fabs(a), fabs(b)) + 1e-15; }

static hp_optim_config oc;

static void compile(hp_compiled *cc, const model *f, const hp_plan *plan, int rank, int overlap, int micro,
                    hp_pp_kind kind) {
    hp_optim_config_default(&oc);
    hp_compile_opts co = {.train = 1, .optim = &oc, .max_norm = 1.0f, .grad_accum = micro,
                          .schedule = {.overlap = overlap, .max_inflight = 4}, .pp = {.kind = kind, .chunks = 1}};
    CHECK_OK(hp_compile(cc, f->g, plan, rank, &co));
}

static void one_rank(const model *f) {
    hp_compiled cc;
    compile(&cc, f, NULL, 0, 1, 1, HP_PP_GPIPE);
    hp_profile p = flat_profile(2.0);
    hp_cost_env env = {.profile = &p, .compute_scale = 1};
    hp_cost k;
    const hp_compiled *st[1] = {&cc};
    CHECK_OK(hp_cost_predict(&k, st, 1, &env, 0));
    /* the matrix products at 2 GFLOP/s by their FLOPs, the rest at 1e12 GB/s by their bytes (a node with
     * only FLOPs by them) */
    double fb = 0, op = 0, tf = 0, to = 0;
    const hp_graph *g = cc.rg.g;
    for (int i = 0; i < cc.sched.n; i++) {
        const hp_node *n = &g->nodes[cc.sched.order[i]];
        if (n->op->communicates) continue;
        double fl = n->op->flops ? n->op->flops(g, n) : 0, by = n->op->bytes ? n->op->bytes(g, n) : 0;
        hp_prof_family fam = hp_profile_family_of_op(n->op->name);
        int mm = fam == HP_PROF_GEMM || fam == HP_PROF_GROUPED_GEMM || fam == HP_PROF_ATTENTION;
        double t = (mm && fl > 0) || by <= 0 ? fl / 2e9 : by / 1e21;
        if (n->phase == HP_PHASE_OPT) op += fl, to += t;
        else fb += fl, tf += t;
    }
    CHECK(fb > 1e6 && op > 0);
    CHECK(near(k.compute_s, tf, 1e-12));
    CHECK(near(k.optimizer_s, to, 1e-12));
    CHECK(near(k.step_s, k.compute_s + k.optimizer_s, 1e-12));
    CHECK(near(k.flops, fb, 1e-12));
    CHECK(k.exposed_s[0] == 0 && k.exposed_s[1] == 0 && k.bubble_s == 0 && k.comm_bytes[0] == 0);
    /* the compute scale divides every kernel's time */
    hp_cost k2;
    env.compute_scale = 0.5;
    CHECK_OK(hp_cost_predict(&k2, st, 1, &env, 0));
    CHECK(near(k2.step_s, 2 * k.step_s, 1e-12));
    hp_cost_free(&k2);
    /* the host's work around a step adds to the step, as the optimizer's share */
    p.step_overhead_us = 1500;
    env.compute_scale = 1;
    CHECK_OK(hp_cost_predict(&k2, st, 1, &env, 0));
    CHECK(near(k2.step_s, k.step_s + 1.5e-3, 1e-12) && near(k2.optimizer_s, k.optimizer_s + 1.5e-3, 1e-12));
    hp_cost_free(&k2);
    hp_cost_free(&k);
    hp_compiled_free(&cc);
}

static void call_times(void) {
    hp_profile p = flat_profile(1.0);
    hp_cluster c = cluster(2, 4, 10.0, 5.0, 1.0, 20.0);
    hp_cost_env env = {.profile = &p, .cluster = &c, .compute_scale = 1, .links_from_cluster = 3};
    double t[2], b[2], m[2];
    /* an all-reduce of 4 members in one supernode (autopar/volume): each member reads its chunk from the 3
     * peers and writes the sum into their outputs, 6 messages, 2 (p-1)/p N bytes */
    hp_cost_call ar = {.kind = HP_PROF_ALL_REDUCE, .bytes = 4e6, .elem_bytes = 4, .members = 4, .supernodes = 1};
    CHECK_OK(hp_cost_call_time(t, b, m, &ar, &env));
    CHECK(m[0] == 6 && near(b[0], 6e6, 1e-12) && m[1] == 0 && b[1] == 0);
    CHECK(near(t[0], 6 * 5e-6 + 6e6 / 10e9, 1e-12) && t[1] == 0);
    /* 8 members over 2 supernodes: inside, each member's chunk and its counterpart's (12 messages, 6/8 N);
     * across, one message swapping the partials of the two chunks (N / 4) */
    ar.members = 8, ar.supernodes = 2;
    CHECK_OK(hp_cost_call_time(t, b, m, &ar, &env));
    CHECK(m[0] == 12 && near(b[0], 6e6, 1e-12) && m[1] == 1 && near(b[1], 1e6, 1e-12));
    CHECK(near(t[1], 20e-6 + 1e6 / 1e9, 1e-12));
    /* an all-gather of 4 in one supernode: the 3 peers' shards; into a shared output: only synchronised */
    hp_cost_call ag = {.kind = HP_PROF_ALL_GATHER, .bytes = 4e6, .elem_bytes = 4, .members = 4, .supernodes = 1};
    CHECK_OK(hp_cost_call_time(t, b, m, &ag, &env));
    CHECK(m[0] == 3 && near(b[0], 3e6, 1e-12));
    ag.shared_output = 1;
    CHECK_OK(hp_cost_call_time(t, b, m, &ag, &env));
    CHECK(b[0] == 0 && t[0] == 0);
    hp_cost_call sd = {.kind = HP_PROF_SEND, .bytes = 1e6, .elem_bytes = 4, .members = 2, .supernodes = 2, .peer = 1};
    CHECK_OK(hp_cost_call_time(t, b, m, &sd, &env));
    CHECK(m[1] == 1 && near(b[1], 1e6, 1e-12) && b[0] == 0 && near(t[1], 20e-6 + 1e-3, 1e-12));
    /* a group that does not split over its supernodes is refused, naming the field */
    hp_cost_call bad = {.kind = HP_PROF_ALL_REDUCE, .bytes = 4e6, .elem_bytes = 4, .members = 3, .supernodes = 2};
    hp_status e = hp_cost_call_time(t, b, m, &bad, &env);
    CHECK(e && strstr(hp_status_msg(e), "supernodes"));
    hp_status_free(e);
}

static void data_parallel(const model *f) {
    hp_plan plan;
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 1));
    hp_profile p = flat_profile(2.0);
    hp_cluster c = cluster(1, 2, 1.0, 0.0, 1.0, 0.0);
    hp_cost_env env = {.profile = &p, .cluster = &c, .compute_scale = 1, .links_from_cluster = 3};
    hp_cost blocking, over;
    for (int overlap = 0; overlap < 2; overlap++) {
        hp_compiled cc;
        compile(&cc, f, &plan, 0, overlap, 1, HP_PP_GPIPE);
        const hp_compiled *st[1] = {&cc};
        hp_cost *k = overlap ? &over : &blocking;
        CHECK_OK(hp_cost_predict(k, st, 1, &env, 0));
        hp_compiled_free(&cc);
    }
    /* the gradients' all-reduces move the parameters' bytes per rank (a ring of 2: N), the norm's gather 8 B */
    double params = 4.0 * f->nparams;
    /* (besides: the loss's all-reduce, the tied table's rows gathered; api/test_cost_counted checks every byte
     * against the comm layer's counters) */
    CHECK(blocking.comm_bytes[0] >= params && blocking.comm_bytes[0] < 1.05 * params);
    CHECK(near(over.comm_bytes[0], blocking.comm_bytes[0], 1e-12));
    CHECK(blocking.comm_bytes[1] == 0 && blocking.exposed_s[1] == 0);
    /* blocking: every reduction holds the backward (the norm's gather is the optimizer's) */
    CHECK(blocking.exposed_s[0] >= params / 1e9 && near(blocking.exposed_s[0], (blocking.comm_bytes[0] - 8) / 1e9, 1e-6));
    CHECK(over.exposed_s[0] < blocking.exposed_s[0] && over.step_s < blocking.step_s);
    for (int i = 0; i < 2; i++) {
        const hp_cost *k = i ? &over : &blocking;
        CHECK(near(k->step_s, k->compute_s + k->optimizer_s + k->exposed_s[0] + k->exposed_s[1] + k->bubble_s, 1e-9));
    }
    hp_cost_free(&blocking);
    hp_cost_free(&over);
    /* DP 4 over 2 supernodes of 2: the inter tier carries the all-reduce of a half between 2 (N/2 per rank) */
    hp_plan p4;
    CHECK_OK(hp_plan_gpt2_dp_tp(&p4, 4, 1));
    hp_cluster c2 = cluster(2, 2, 1.0, 0.0, 0.25, 0.0);
    env.cluster = &c2;
    hp_compiled cc;
    compile(&cc, f, &p4, 0, 0, 1, HP_PP_GPIPE);
    const hp_compiled *st[1] = {&cc};
    hp_cost k;
    CHECK_OK(hp_cost_predict(&k, st, 1, &env, 0));
    double gb = params + 32; /* the gradients and the norm's gather of 4 x 8 B (its whole output) */
    CHECK(k.comm_bytes[1] >= (gb - 32) / 2 && k.comm_bytes[1] < 1.05 * (gb - 32) / 2);
    CHECK(near(k.exposed_s[1], 2 * k.exposed_s[0], 1e-3)); /* half the bytes at a quarter of the bandwidth */
    hp_cost_free(&k);
    hp_compiled_free(&cc);
    hp_plan_free(&p4);
    hp_plan_free(&plan);
}

static void pipeline(const model *f) {
    hp_plan plan;
    CHECK_OK(hp_plan_gpt2_pp(&plan, 2, 1, 1, 1));
    hp_profile p = flat_profile(2.0);
    hp_cluster c = cluster(1, 2, 1e3, 0.0, 1e3, 0.0);
    hp_cost_env env = {.profile = &p, .cluster = &c, .compute_scale = 1, .links_from_cluster = 3};
    double share[2];
    for (int mi = 0; mi < 2; mi++) {
        int m = mi ? 8 : 2;
        hp_compiled cc[2];
        const hp_compiled *st[2];
        for (int s = 0; s < 2; s++) {
            compile(&cc[s], f, &plan, s, 1, m, HP_PP_1F1B);
            st[s] = &cc[s];
        }
        hp_cost k;
        CHECK_OK(hp_cost_predict(&k, st, 2, &env, 1));
        CHECK(k.nstages == 2 && k.bubble_s > 0);
        CHECK(near(k.step_s, k.compute_s + k.optimizer_s + k.exposed_s[0] + k.exposed_s[1] + k.bubble_s, 1e-9));
        share[mi] = k.bubble_s / k.step_s;
        /* each stage's compute stream: events in order, never overlapping */
        for (int s = 0; s < 2; s++) {
            double last = 0, sum = 0;
            for (int i = 0; i < k.nevents; i++) {
                const hp_cost_event *e = &k.events[i];
                if (e->stage != s || e->comm) continue;
                CHECK(e->t0 >= last - 1e-15 && e->t1 >= e->t0);
                last = e->t1;
                sum += e->t1 - e->t0;
            }
            if (s == k.stage) CHECK(near(sum, k.compute_s + k.optimizer_s, 1e-3)); /* (links nearly free) */
            printf("m %d stage %d: compute events %.6g s of a step of %.6g s (bubble %.6g s, slowest stage %d)\n", m, s,
                   sum, k.step_s, k.bubble_s, k.stage);
        }
        hp_cost_free(&k);
        /* the wrong order of programs is refused, naming the stage */
        const hp_compiled *bad[2] = {&cc[1], &cc[0]};
        hp_status e = hp_cost_predict(&k, bad, 2, &env, 0);
        CHECK(e && strstr(hp_status_msg(e), "program 0 of 2 is stage 1's"));
        hp_status_free(e);
        for (int s = 0; s < 2; s++) hp_compiled_free(&cc[s]);
    }
    printf("pipeline bubble share: %.3f with 2 micro-batches, %.3f with 8\n", share[0], share[1]);
    CHECK(share[1] < share[0]);
    hp_plan_free(&plan);
}

/* The work stage s's compute events did: the integral over them of share_speed[A(t)], A(t) the stages computing. */
static double work_done(const hp_cost *k, const hp_cost_env *env, int s) {
    double w = 0;
    for (int i = 0; i < k->nevents; i++) {
        const hp_cost_event *e = &k->events[i];
        if (e->stage != s || e->comm) continue;
        /* cut [t0, t1] at every other compute event's ends */
        double cuts[4096];
        int nc = 0;
        cuts[nc++] = e->t0, cuts[nc++] = e->t1;
        for (int j = 0; j < k->nevents && nc < 4094; j++) {
            const hp_cost_event *o = &k->events[j];
            if (o->comm || o->stage == s) continue;
            if (o->t0 > e->t0 && o->t0 < e->t1) cuts[nc++] = o->t0;
            if (o->t1 > e->t0 && o->t1 < e->t1) cuts[nc++] = o->t1;
        }
        for (int a = 1; a < nc; a++) /* sort */
            for (int b = a; b > 0 && cuts[b] < cuts[b - 1]; b--) {
                double t = cuts[b];
                cuts[b] = cuts[b - 1], cuts[b - 1] = t;
            }
        for (int c = 0; c + 1 < nc; c++) {
            double mid = 0.5 * (cuts[c] + cuts[c + 1]);
            int active = 0;
            for (int j = 0; j < k->nevents; j++) {
                const hp_cost_event *o = &k->events[j];
                if (!o->comm && o->t0 <= mid && o->t1 > mid) active++;
            }
            w += (cuts[c + 1] - cuts[c]) * env->share_speed[active];
        }
    }
    return w;
}

static double compute_events(const hp_cost *k, int s) {
    double sum = 0;
    for (int i = 0; i < k->nevents; i++)
        if (k->events[i].stage == s && !k->events[i].comm) sum += k->events[i].t1 - k->events[i].t0;
    return sum;
}

static void shared_cores(const model *f) {
    hp_plan plan;
    CHECK_OK(hp_plan_gpt2_pp(&plan, 2, 1, 1, 1));
    hp_profile p = flat_profile(2.0);
    hp_cluster c = cluster(1, 2, 1e3, 0.0, 1e3, 0.0);
    hp_cost_env free_env = {.profile = &p, .cluster = &c, .compute_scale = 1, .links_from_cluster = 3};
    hp_compiled cc[2];
    const hp_compiled *st[2];
    for (int s = 0; s < 2; s++) {
        compile(&cc[s], f, &plan, s, 1, 4, HP_PP_1F1B);
        st[s] = &cc[s];
    }
    hp_cost k0, k1, k2;
    CHECK_OK(hp_cost_predict(&k0, st, 2, &free_env, 1));
    hp_cost_env eq = free_env;
    eq.share_stages = 2, eq.share_speed[1] = 1, eq.share_speed[2] = 1;
    CHECK_OK(hp_cost_predict(&k1, st, 2, &eq, 1));
    CHECK(near(k1.step_s, k0.step_s, 1e-12) && near(k1.bubble_s, k0.bubble_s, 1e-9) && k1.nevents == k0.nevents);
    hp_cost_env fast = eq;
    fast.share_speed[1] = 2;
    CHECK_OK(hp_cost_predict(&k2, st, 2, &fast, 1));
    CHECK(near(k2.step_s, k2.compute_s + k2.optimizer_s + k2.exposed_s[0] + k2.exposed_s[1] + k2.bubble_s, 1e-9));
    for (int s = 0; s < 2; s++) {
        double want = compute_events(&k0, s), got = work_done(&k2, &fast, s);
        printf("shared cores: stage %d's kernels %.6g s at the all-computing rate, work done %.6g s over %.6g s\n", s,
               want, got, compute_events(&k2, s));
        CHECK(near(got, want, 1e-6));
        CHECK(compute_events(&k2, s) < want); /* some of it ran alone, faster */
    }
    printf("shared cores: step %.6g s free, %.6g s with a lone stage twice as fast\n", k0.step_s, k2.step_s);
    CHECK(k2.step_s < k0.step_s);
    hp_cost_free(&k0), hp_cost_free(&k1), hp_cost_free(&k2);
    for (int s = 0; s < 2; s++) hp_compiled_free(&cc[s]);
    hp_plan_free(&plan);
}

int main(void) {
    hp_kernels_init();
    model f = {.c = {.L = 2, .NH = 2, .C = 32, .V = 64, .maxT = 16}};
    CHECK_OK(hp_gpt2_config_check(&f.c));
    CHECK_OK(hp_graph_create(&f.g));
    CHECK_OK(hp_gpt2_build(f.g, &f.io, &f.c, 4, 16));
    f.nparams = (double)hp_gpt2_num_params(&f.c);
    one_rank(&f);
    call_times();
    data_parallel(&f);
    pipeline(&f);
    shared_cores(&f);
    hp_graph_destroy(f.g);
    return hp_test_finish("test_cost");
}
