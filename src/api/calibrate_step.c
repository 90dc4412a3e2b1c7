/* api/calibrate_step: kernel rates from whole training steps — a small GPT-2's
 * single-rank step (forward, backward, optimizer) run on the calibration's
 * threads with every node timed (runtime/program's step hook), each node's
 * seconds, FLOPs and bytes added to its family and FLOP bucket. Where a
 * family and bucket got nodes, that sum replaces the one-operator
 * measurement: the rates of the kernels as a training step runs them (shapes,
 * caches, the pool's hand-offs), which the cost model prices steps with. And
 * the host's work of a step beside its program: the trainer's step on the
 * same model (its batch read, schedule, loss and norm) less the program's;
 * and what rank-threads beyond the cores lose: 2x and 4x the cores' count of
 * one-thread steps at once, against an even share of the cores. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/calibrate.h"
#include "api/infer.h"
#include "api/simulate.h"
#include "core/rng.h"
#include "core/timing.h"
#include "optim/phase.h"

typedef struct {
    double flops[HP_PROF_NFAMILIES][HP_PROF_NBUCKETS], bytes[HP_PROF_NFAMILIES][HP_PROF_NBUCKETS];
    double seconds[HP_PROF_NFAMILIES][HP_PROF_NBUCKETS];
    int nodes[HP_PROF_NFAMILIES][HP_PROF_NBUCKETS];
    const hp_graph *g;
    int on;
} tally;

static void hook(void *ctx, const hp_node *n, double t0, double t1) {
    tally *t = ctx;
    if (!t->on || n->op->communicates) return;
    double fl = n->op->flops ? n->op->flops(t->g, n) : 0, by = n->op->bytes ? n->op->bytes(t->g, n) : 0;
    if (fl <= 0 && by <= 0) return;
    int f = (int)hp_profile_family_of_op(n->op->name), b = (int)hp_profile_bucket_of(fl);
    t->flops[f][b] += fl, t->bytes[f][b] += by, t->seconds[f][b] += t1 - t0, t->nodes[f][b]++;
}

/* One training step of engine e: forward, backward, the optimizer at its warm-up's learning rate. */
static hp_status engine_step(hp_api_engine *e, const hp_optim_config *oc, int step) {
    HP_TRY(hp_program_run(e->prog, HP_PHASE_FWD));
    HP_TRY(hp_program_run(e->prog, HP_PHASE_BWD));
    if (e->c.has_optim) {
        hp_optim_phase_lrs(hp_program_data(e->prog, e->c.optim.lr), oc, 1e-4f);
        *(int32_t *)hp_program_data(e->prog, e->c.optim.step) = (int32_t)step;
    }
    return hp_program_run(e->prog, HP_PHASE_OPT);
}

/* Runs `steps` timed steps (after 2 untimed) of a GPT-2 of width C, L blocks, B x T tokens, into t; *med: the
 * median step's seconds (NULL: not kept). */
static hp_status profile_model(tally *t, double *med, int L, int C, int B, int T, int threads, int steps) {
    hp_gpt2_config m = {L, C / 64, C, 256, 0, T};
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_api_engine e;
    HP_TRY(hp_api_engine_create(&e, &m, B, T, threads, 1, &oc, HP_F32));
    hp_status st = hp_api_init_params(&e.ps, &e.model, 1);
    hp_rng rng;
    hp_rng_seed(&rng, 7);
    int32_t *tok = hp_program_data(e.prog, e.io.tokens), *tgt = hp_program_data(e.prog, e.io.targets);
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)e.model.V);
        tgt[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)e.model.V);
    }
    t->g = e.c.rg.g;
    hp_program_set_hook(e.prog, hook, t);
    double dt[16];
    for (int i = -2; !st && i < steps; i++) {
        t->on = i >= 0;
        double t0 = hp_now();
        st = engine_step(&e, &oc, i + 3);
        if (i >= 0 && i < 16) dt[i] = hp_now() - t0;
    }
    if (!st && med) *med = hp_median(dt, steps < 16 ? steps : 16);
    hp_program_set_hook(e.prog, NULL, NULL);
    t->on = 0;
    hp_api_engine_destroy(&e);
    return st;
}

/* R engines of the model (one kernel thread each) stepping at once on R threads, as rank-threads of one process
 * do: *sec the wall seconds of a step of all of them. */
typedef struct {
    hp_api_engine e;
    hp_optim_config oc;
    int steps;
    pthread_barrier_t *go;
    hp_status st;
} shared_rank;

static void *shared_main(void *arg) {
    shared_rank *r = arg;
    pthread_barrier_wait(r->go);
    for (int i = 0; !r->st && i < r->steps; i++) r->st = engine_step(&r->e, &r->oc, i + 1);
    pthread_barrier_wait(r->go);
    return NULL;
}

static hp_status shared_run(double *sec, int R, int L, int C, int B, int T, int steps) {
    hp_gpt2_config m = {L, C / 64, C, 256, 0, T};
    shared_rank *r = calloc((size_t)R, sizeof *r);
    pthread_t *th = calloc((size_t)R, sizeof *th);
    pthread_barrier_t go;
    hp_status st = r && th ? HP_OK : hp_errorf("calibrate: out of memory");
    int made = 0, started = 0;
    for (; !st && made < R; made++) {
        hp_optim_config_default(&r[made].oc);
        st = hp_api_engine_create(&r[made].e, &m, B, T, 1, 1, &r[made].oc, HP_F32);
        if (st) break;
        st = hp_api_init_params(&r[made].e.ps, &r[made].e.model, 1);
        r[made].steps = steps, r[made].go = &go;
    }
    if (!st && pthread_barrier_init(&go, NULL, (unsigned)R + 1)) st = hp_errorf("calibrate: no barrier");
    for (; !st && started < R; started++)
        if (pthread_create(&th[started], NULL, shared_main, &r[started])) st = hp_errorf("calibrate: no thread");
    if (!st) {
        pthread_barrier_wait(&go);
        double t0 = hp_now();
        pthread_barrier_wait(&go);
        *sec = (hp_now() - t0) / steps;
    }
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    if (!st) pthread_barrier_destroy(&go);
    for (int i = 0; i < made; i++) {
        if (!st) st = r[i].st;
        hp_api_engine_destroy(&r[i].e);
    }
    free(r);
    free(th);
    return st;
}

/* The efficiency of R = 2 and 4 times `cores` rank-threads stepping together, against an even share of the cores:
 * R one-thread steps would take R t1 / cores seconds at full speed. */
static hp_status shared_effs(double *eff, int cores, int quick) {
    int steps = quick ? 1 : 3;
    double t1 = 0;
    HP_TRY(shared_run(&t1, 1, 2, 256, 4, 128, steps));
    for (int i = 0; i < 2; i++) {
        int R = cores * (2 << i);
        double tr = 0;
        HP_TRY(shared_run(&tr, R, 2, 256, 4, 128, steps));
        double e = tr > 0 ? (double)R * t1 / cores / tr : 1;
        eff[i] = e > 1 ? 1 : e < 0.05 ? 0.05 : e;
    }
    return HP_OK;
}

/* The median step of `hyperpar train`'s trainer (the default text data, no files written) on the same model:
 * the program plus the host's work around it. */
static hp_status trainer_step(double *med, int L, int C, int B, int T, int threads, int steps) {
    hp_train_options o;
    hp_train_options_default(&o);
    o.layers = L, o.heads = C / 64, o.channels = C, o.vocab = 256, o.max_seq = T, o.batch = B, o.seq = T;
    o.threads = threads, o.steps = steps + 2, o.warmup = 1, o.val_every = 0, o.metrics[0] = 0, o.ckpt_dir[0] = 0;
    snprintf(o.run_dir, sizeof o.run_dir, "none");
    hp_model_config m = {.layers = L, .heads = C / 64, .channels = C, .vocab = 256, .max_seq = T};
    hp_model *model = NULL;
    HP_TRY(hp_model_named(&model, "gpt2", &m, B, T));
    hp_train_config tc;
    hp_train_config_default(&tc, model);
    hp_status st = hp_train_options_config(&tc, &o);
    tc.run_dir = NULL;
    double lo, hi;
    int lead;
    if (!st) st = hp_api_train_time(med, &lo, &hi, &lead, &tc, 2, steps);
    hp_model_free(model);
    return st;
}

hp_status hp_api_calib_step(hp_calib_data *d) {
    tally *t = calloc(1, sizeof *t);
    if (!t) return hp_errorf("calibrate: out of memory");
    /* two widths, so both buckets a model's matrix products fall in get nodes */
    int steps = d->quick ? 1 : 4;
    double prog = 0, trainer = 0;
    hp_status st = profile_model(t, &prog, 2, 256, 8, 128, d->threads, steps);
    if (!st && !d->quick) st = profile_model(t, NULL, 2, 512, 8, 256, d->threads, steps);
    if (!st) st = trainer_step(&trainer, 2, 256, 8, 128, d->threads, steps);
    if (!st) d->step_overhead_us = trainer > prog ? (trainer - prog) * 1e6 : 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (!st) st = shared_effs(d->shared_eff, cores > 0 ? (int)cores : 1, d->quick);
    for (int f = 0; !st && f < HP_PROF_NFAMILIES; f++)
        for (int b = 0; b < HP_PROF_NBUCKETS; b++) {
            if (!t->nodes[f][b] || !(t->seconds[f][b] > 0)) continue;
            hp_calib_kernel *k = &d->kernel[f][HP_PROF_FP32][b];
            k->given = 1, k->from_bucket = -1;
            snprintf(k->op, sizeof k->op, "training step");
            snprintf(k->shape, sizeof k->shape, "%d nodes of %d steps", t->nodes[f][b], steps);
            k->flops = t->flops[f][b], k->bytes = t->bytes[f][b], k->seconds = t->seconds[f][b];
            if (!(k->flops > 0)) k->flops = 1; /* a rate needs both numbers: the bytes price these */
            if (!(k->bytes > 0)) k->bytes = 1;
        }
    for (int f = 0; !st && f < HP_PROF_NFAMILIES; f++) /* a bucket that copies another's measurement copies it again */
        for (int b = 0; b < HP_PROF_NBUCKETS; b++) {
            hp_calib_kernel *k = &d->kernel[f][HP_PROF_FP32][b];
            if (k->given && k->from_bucket >= 0) {
                int from = k->from_bucket;
                *k = d->kernel[f][HP_PROF_FP32][from];
                k->from_bucket = from;
            }
        }
    free(t);
    return st;
}
