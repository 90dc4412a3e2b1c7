/* api/bench_train: hp_bench_train_step — the single-process training step
 * (api/infer.h's engine with the optimizer phase) timed phase by phase, and
 * traced through runtime/trace_hook when asked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/infer.h"
#include "core/rng.h"
#include "core/timing.h"
#include "optim/phase.h"
#include "runtime/trace_hook.h"

static hp_gpt2_config internal_config(const hp_model_config *m) {
    return (hp_gpt2_config){m->layers, m->heads, m->channels, m->vocab, 0, m->max_seq};
}

/* The timed loop: two warm-up steps, then steps; f, b, o, t: seconds per step. */
static hp_status time_steps(hp_api_engine *e, const hp_optim_config *oc, int steps, hp_trace *tr, double *f, double *b,
                            double *o, double *t) {
    hp_trace_hook hook;
    for (int i = -2; i < steps; i++) {
        if (tr && i == 0) hp_trace_hook_attach(&hook, e->prog, e->c.rg.g, tr);
        double t0 = hp_now();
        HP_TRY(hp_program_run(e->prog, HP_PHASE_FWD));
        double t1 = hp_now();
        HP_TRY(hp_program_run(e->prog, HP_PHASE_BWD));
        double t2 = hp_now();
        if (e->c.has_optim) {
            hp_optim_phase_lrs(hp_program_data(e->prog, e->c.optim.lr), oc, 1e-4f);
            *(int32_t *)hp_program_data(e->prog, e->c.optim.step) = (int32_t)(i + 3);
        }
        HP_TRY(hp_program_run(e->prog, HP_PHASE_OPT));
        double t3 = hp_now();
        if (i >= 0) f[i] = t1 - t0, b[i] = t2 - t1, o[i] = t3 - t2, t[i] = t3 - t0;
    }
    return HP_OK;
}

hp_status hp_bench_train_step(hp_bench_train_result *res, const hp_bench_train_config *cfg) {
    memset(res, 0, sizeof *res);
    if (cfg->threads < 1 || cfg->steps < 1 || cfg->B < 1 || cfg->T < 1)
        return hp_errorf("hp_bench_train_step: threads, steps, B and T must be >= 1");
    hp_gpt2_config m = internal_config(&cfg->model);
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_api_engine e;
    HP_TRY(hp_api_engine_create(&e, &m, cfg->B, cfg->T, cfg->threads, 1, &oc, cfg->bf16 ? HP_BF16 : HP_F32));
    hp_status st = hp_api_init_params(&e.ps, &e.model, 1);
    hp_rng rng;
    hp_rng_seed(&rng, 5);
    int32_t *tok = hp_program_data(e.prog, e.io.tokens), *tgt = hp_program_data(e.prog, e.io.targets);
    for (int i = 0; i < cfg->B * cfg->T; i++) {
        tok[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)e.model.V);
        tgt[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)e.model.V);
    }
    int steps = cfg->steps;
    double *f = st ? NULL : malloc(sizeof(double) * (size_t)steps * 4);
    if (!st && !f) st = hp_errorf("hp_bench_train_step: out of memory");
    hp_trace *tr = NULL;
    if (!st && cfg->trace && cfg->trace[0])
        st = hp_trace_create(&tr, 0, 2, (size_t)steps * (size_t)(e.c.sched.n + 4) + 16);
    if (!st) st = time_steps(&e, &oc, steps, tr, f, f + steps, f + 2 * steps, f + 3 * steps);
    if (!st && tr) st = hp_trace_write(tr, cfg->trace);
    hp_trace_destroy(tr);
    if (!st) {
        const hp_program_info *info = hp_program_get_info(e.prog);
        double step = hp_median(f + 3 * steps, steps);
        res->forward_ms = hp_median(f, steps) * 1e3;
        res->backward_ms = hp_median(f + steps, steps) * 1e3;
        res->optimizer_ms = hp_median(f + 2 * steps, steps) * 1e3;
        res->step_ms = step * 1e3;
        res->tokens_per_s = cfg->B * cfg->T / step;
        res->flops = info->flops[0] + info->flops[1];
        res->gflops = res->flops / step / 1e9;
    }
    free(f);
    hp_api_engine_destroy(&e);
    return st;
}
