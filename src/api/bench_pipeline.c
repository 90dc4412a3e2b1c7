/* api/bench_pipeline: one GPT-2 training configuration timed on rank threads
 * of this process (hp_bench_pipeline_row, `hyperpar bench pipeline`): the
 * step (medians of timed steps after 2 untimed), each rank's kernels and its
 * idle share of the step, the pipeline's measured bubble beside the
 * schedule's formula and its simulation, and each rank's activation arena as
 * allocated beside the compile's plan of it. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/rng.h"
#include "core/timing.h"
#include "models/gpt2_plan.h"
#include "optim/phase.h"
#include "runtime/dist.h"

typedef struct {
    hp_dist *d;
    hp_gpt2_io io;
    const hp_optim_config *oc;
    const int32_t *tok, *tgt; /* [micro][B T] */
    int per, micro;
    long step;
    double prof[64][2];
} bstep;

typedef struct {
    bstep *c;
    hp_dist_rank *r;
} feed_ctx;

static hp_status feed(void *ctx, int m) {
    feed_ctx *f = ctx;
    hp_dist_rank *r = f->r;
    bstep *c = f->c;
    void *tok = hp_dist_value(r, c->io.tokens), *tgt = hp_dist_value(r, c->io.targets);
    if (tok) hp_dist_scatter_value(c->d, r, c->io.tokens, tok, c->tok + (size_t)m * (size_t)c->per);
    if (tgt) hp_dist_scatter_value(c->d, r, c->io.targets, tgt, c->tgt + (size_t)m * (size_t)c->per);
    if (r->c.micro >= 0) {
        int32_t *mi = hp_program_data(r->prog, r->c.micro);
        mi[0] = m, mi[1] = c->micro;
    }
    return HP_OK;
}

static hp_status rank_step(hp_dist_rank *r, void *c_) {
    bstep *c = c_;
    hp_optim_phase_lrs(hp_program_data(r->prog, r->c.optim.lr), c->oc, 1e-4f);
    *(int32_t *)hp_program_data(r->prog, r->c.optim.step) = (int32_t)(c->step + 1);
    feed_ctx f = {c, r};
    hp_step_io io = {feed, &f, NULL}; /* the optimizer's steps profiled with the rest: its waits are idle too */
    return hp_program_run_actions(r->prog, NULL, &r->c.sched.step, &io);
}

/* The timed steps: per step the wall time (t[i]), each rank's busy time (its kernels and its optimizer:
 * busy[r * steps + i]: every computing step, the optimizer's included) and its communicating steps'
 * (wait[r * steps + i]: a stage's sends and receives, the time it waits for its neighbours). */
static hp_status time_steps(bstep *c, int n, int steps, double *t, double *busy, double *wait) {
    for (int i = -2; i < steps; i++) {
        for (int r = 0; r < n; r++) c->prof[r][0] = c->prof[r][1] = 0;
        c->step = i + 2;
        double t0 = hp_now();
        HP_TRY(hp_dist_run(c->d, rank_step, c));
        if (i < 0) continue;
        t[i] = hp_now() - t0;
        for (int r = 0; r < n; r++) {
            busy[r * steps + i] = c->prof[r][0];
            wait[r * steps + i] = c->prof[r][1];
        }
    }
    return HP_OK;
}

static void results(hp_bench_pipeline_result *res, const hp_bench_pipeline_config *cfg, hp_dist *d, int n, int steps,
                    double *t, double *busy, double *wait) {
    const hp_compiled *c0 = &hp_dist_rank_at(d, 0)->c;
    res->ranks = n;
    res->step_ms = hp_median(t, steps) * 1e3;
    res->tokens_per_s = (double)cfg->batch * cfg->seq * (cfg->micro > 1 ? cfg->micro : 1) / (res->step_ms * 1e-3);
    int stages = 0;
    for (int r = 0; r < n && r < 64; r++) {
        hp_dist_rank *x = hp_dist_rank_at(d, r);
        res->busy_ms[r] = hp_median(busy + (size_t)r * (size_t)steps, steps) * 1e3;
        double step = res->step_ms;
        res->idle[r] = step > 0 ? 1 - res->busy_ms[r] / step : 0;
        res->wait[r] = step > 0 ? hp_median(wait + (size_t)r * (size_t)steps, steps) * 1e3 / step : 0;
        res->arena_mb[r] = (double)hp_program_get_info(x->prog)->arena_bytes / 1e6;
        res->planned_mb[r] = (double)x->c.mem.arena_bytes / 1e6;
        if (x->c.pp.axis >= 0 ? 1 : r == 0) { /* the stages of the first data-parallel replica */
            int coord[HP_MESH_MAX_DIMS];
            hp_mesh_coords(coord, &x->c.mesh, x->rank);
            int first = 1;
            for (int a = 0; a < x->c.mesh.ndim; a++) first &= a == x->c.pp.axis || coord[a] == 0;
            if (first) res->bubble += res->idle[r], res->bubble_wait += res->wait[r], stages++;
        }
    }
    res->bubble = stages ? res->bubble / stages : 0;
    res->bubble_wait = stages ? res->bubble_wait / stages : 0;
    if (c0->pp.axis >= 0) {
        int p = c0->pp.stages, m = c0->pp.micro;
        res->bubble_formula = (double)(p - 1) / (double)(m + p - 1);
        hp_pp_sim sim;
        if (!hp_pp_sched_simulate(&sim, &c0->pp.sched, 1, 2, 1, 1)) {
            res->bubble_sim = sim.bubble;
            hp_pp_sim_free(&sim);
        }
    }
}

hp_status hp_bench_pipeline_row(hp_bench_pipeline_result *res, const hp_bench_pipeline_config *cfg) {
    memset(res, 0, sizeof *res);
    int pp = cfg->pp > 1 ? cfg->pp : 1, dp = cfg->dp > 1 ? cfg->dp : 1, n = pp * dp, M = cfg->micro > 1 ? cfg->micro : 1;
    int steps = cfg->steps > 0 ? cfg->steps : 3, B = cfg->batch, T = cfg->seq;
    if (n > 64) return hp_errorf("bench pipeline: at most 64 ranks (pp %d x dp %d)", pp, dp);
    if (B < dp || B % dp) return hp_errorf("bench pipeline: the batch %d does not split over dp %d", B, dp);
    hp_gpt2_config mc = {cfg->model.layers, cfg->model.heads, cfg->model.channels, cfg->model.vocab, 0,
                         cfg->model.max_seq};
    hp_plan plan;
    memset(&plan, 0, sizeof plan);
    hp_graph *g = NULL;
    hp_comm_world *w = NULL;
    hp_dist *d = NULL;
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    bstep *c = calloc(1, sizeof *c);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)M * (size_t)B * (size_t)T);
    int32_t *tgt = malloc(sizeof(int32_t) * (size_t)M * (size_t)B * (size_t)T);
    double *t = calloc((size_t)steps * (size_t)(2 * n + 1), sizeof *t);
    hp_status st = c && tok && tgt && t ? hp_gpt2_config_check(&mc) : hp_errorf("bench pipeline: out of memory");
    if (!st) st = hp_plan_gpt2_pp(&plan, pp, 1, dp, 1);
    if (!st) st = hp_graph_create(&g);
    if (!st) st = hp_gpt2_build(g, &c->io, &mc, B, T);
    if (!st) st = hp_dist_world_create(&w, &plan, 300, 0);
    if (!st) {
        hp_dist_config dc = {.model = g, .plan = &plan, .world = w,
                             .threads_per_rank = hp_dist_threads_per_rank(w, cfg->threads > 0 ? cfg->threads : 1)};
        dc.compile = (hp_compile_opts){.train = 1, .optim = &oc, .max_norm = 1.0f, .grad_accum = M,
                                       .schedule = {.overlap = 1, .max_inflight = 4}};
        st = hp_api_pp_opts(&dc.compile.pp, cfg->schedule, NULL, cfg->chunks);
        if (!st) st = hp_api_remat_opts(&dc.compile.remat, cfg->remat, NULL);
        dc.compile.loss_chunk = cfg->loss_chunk;
        if (!st) st = hp_dist_create(&d, &dc);
    }
    if (!st) st = hp_api_bench_init_params(d, g, &mc);
    if (!st) {
        hp_rng rng;
        hp_rng_seed(&rng, 5);
        for (size_t i = 0; i < (size_t)M * (size_t)B * (size_t)T; i++) {
            tok[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)mc.V);
            tgt[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)mc.V);
        }
        c->d = d, c->oc = &oc, c->tok = tok, c->tgt = tgt, c->per = B * T, c->micro = M;
        for (int i = 0; i < n; i++) hp_program_profile(hp_dist_rank_at(d, i)->prog, c->prof[i]);
        st = time_steps(c, n, steps, t, t + steps, t + (size_t)steps * (size_t)(n + 1));
    }
    if (!st) results(res, cfg, d, n, steps, t, t + steps, t + (size_t)steps * (size_t)(n + 1));
    free(tok), free(tgt), free(t), free(c);
    hp_dist_destroy(d);
    hp_comm_world_destroy(w);
    hp_graph_destroy(g);
    hp_plan_free(&plan);
    return st;
}
