/* api/simulate_check: hp_simulate_check — a run's step predicted by the cost
 * model and measured by training it here, side by side: the same options
 * become the plan, the model and the trainer (as `hyperpar train` makes
 * them) on a world of rank-threads (supernodes emulated over a throttled link,
 * or mpirun's processes), each step timed; the prediction compiles the same
 * plan for the same supernodes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

void hp_check_result_free(hp_check_result *r) {
    if (!r) return;
    hp_sim_report_free(r->sim);
    r->sim = NULL;
}

/* The model of o's shape: a named model's preset with the shape flags, or GPT-2. */
static hp_status model_of(hp_model **out, const hp_train_options *o, int micro_batch) {
    hp_model_config m = {.layers = o->layers, .heads = o->heads, .channels = o->channels, .vocab = o->vocab,
                         .max_seq = o->max_seq};
    if (strcmp(o->model, "gpt2")) {
        HP_TRY(hp_model_config_named(&m, o->model));
        m.layers = o->layers, m.heads = o->heads, m.channels = o->channels, m.vocab = o->vocab;
        m.max_seq = o->max_seq;
    }
    if (o->capacity_factor > 0) m.capacity_factor = o->capacity_factor;
    return hp_model_named(out, o->model, &m, micro_batch, o->seq);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

hp_status hp_api_train_time(double *med, double *lo, double *hi, int *lead, const hp_train_config *tc, int warmup,
                            int steps) {
    hp_train *t = NULL;
    HP_TRY(hp_train_create(&t, tc));
    double *dt = malloc(sizeof *dt * (size_t)steps);
    hp_status st = dt ? HP_OK : hp_errorf("hp_simulate_check: out of memory");
    for (int i = 0; !st && i < warmup + steps; i++) {
        double t0 = hp_now();
        st = hp_train_step(t, NULL, NULL);
        if (i >= warmup) dt[i - warmup] = hp_now() - t0;
    }
    if (!st) {
        qsort(dt, (size_t)steps, sizeof *dt, cmp_double);
        *lo = dt[0], *hi = dt[steps - 1];
        *med = steps % 2 ? dt[steps / 2] : 0.5 * (dt[steps / 2 - 1] + dt[steps / 2]);
        *lead = hp_train_is_lead(t);
    }
    free(dt);
    hp_train_free(t);
    return st;
}

hp_status hp_simulate_check(hp_check_result *out, int *lead, const hp_train_options *o, const hp_sim_config *sc,
                            const hp_check_config *cc) {
    memset(out, 0, sizeof *out);
    *lead = 0;
    if (!o || !sc || !cc) return hp_errorf("hp_simulate_check: needs options, a simulation config and a check config");
    if (sc->cluster) return hp_errorf("hyperpar simulate --check: runs here: leave out --cluster");
    int warmup = cc->warmup > 0 ? cc->warmup : 3, steps = cc->steps > 0 ? cc->steps : 10;
    hp_train_options ro = *o; /* the run: no files written, the lr schedule over the steps run */
    ro.metrics[0] = 0, ro.ckpt_dir[0] = 0, ro.resume[0] = 0, ro.trace[0] = 0, ro.validate = 0;
    snprintf(ro.run_dir, sizeof ro.run_dir, "none");
    ro.steps = warmup + steps, ro.warmup = 1, ro.val_every = 0;
    HP_TRY(hp_train_options_check(&ro));
    hp_shard_plan *plan = NULL;
    HP_TRY(hp_train_options_plan(&plan, &ro, "hyperpar simulate --check"));
    int ranks = plan ? hp_shard_plan_ranks(plan) : 1, procs = hp_world_launched_processes();
    int sn = procs > 0 ? procs : cc->supernodes > 1 ? cc->supernodes : 1;
    hp_status st = ranks % sn ? hp_errorf("hyperpar simulate --check: %d ranks do not split over %d supernodes",
                                          ranks, sn)
                              : HP_OK;
    hp_world *w = NULL;
    if (!st) {
        hp_world_options wo;
        hp_world_options_default(&wo);
        wo.ranks_per_supernode = ranks / sn;
        wo.supernodes = procs > 0 ? 0 : sn;
        wo.inter_bw_gbps = sc->inter_bw_GBps, wo.inter_latency_us = sc->inter_latency_us;
        if (ro.a2a_fuse_bytes > 0) wo.a2a_fuse_bytes = ro.a2a_fuse_bytes;
        st = hp_world_create(&w, &wo);
    }
    int mb = 0, ga = 0;
    hp_model *model = NULL;
    if (!st) st = hp_train_micro_batch(&mb, &ga, &ro);
    if (!st) st = model_of(&model, &ro, mb);
    hp_train_config tc;
    if (!st) {
        hp_train_config_default(&tc, model);
        tc.plan = plan;
        st = hp_train_options_config(&tc, &ro);
        tc.world = w;
        tc.run_dir = NULL;
    }
    if (!st)
        st = hp_api_train_time(&out->measured_s, &out->measured_min_s, &out->measured_max_s, lead, &tc, warmup,
                               steps);
    if (!st && *lead) { /* the prediction: the same plan on the same supernodes */
        hp_plan_report_config rc;
        st = hp_plan_report_config_from_options(&rc, &ro, plan);
        rc.processes = sn;
        hp_sim_config s2 = *sc;
        s2.one_process = procs == 0; /* emulated supernodes: every rank on this process's cores */
        if (!st && plan) st = hp_simulate(&out->sim, &rc, &s2);
        if (!st && !plan) { /* one rank: the plan of one rank */
            hp_shard_plan *one = NULL;
            st = hp_shard_plan_named_ep(&one, ro.model, 1, 1, 1, 1, 1);
            rc.plan = one;
            if (!st) st = hp_simulate(&out->sim, &rc, &s2);
            hp_shard_plan_free(one);
        }
        if (!st) {
            out->predicted_s = out->sim->step_s;
            out->error = out->predicted_s / out->measured_s - 1;
        }
    }
    hp_model_free(model);
    hp_world_free(w);
    hp_shard_plan_free(plan);
    if (st) hp_check_result_free(out);
    return st;
}
