/* api/bench_parallel: GPT-2's training step through a plan on rank threads
 * (runtime/dist), or without a plan, profiled on rank 0: kernels and
 * collectives from the program's profile, the optimizer phase timed apart,
 * the rest, and the time rank 0's collectives ran (hp_api_bench_plan, shared
 * with bench_fsdp); hp_bench_parallel_row over GPT-2's dp x tp plan. */
#include <stdlib.h>
#include <string.h>

#include "api/infer.h"
#include "api/plan_report.h"
#include "core/rng.h"
#include "core/timing.h"
#include "models/gpt2_plan.h"
#include "optim/phase.h"
#include "runtime/dist.h"

typedef struct {
    hp_dist *d;
    hp_gpt2_io io;
    const hp_optim_config *oc;
    const int32_t *tok, *tgt;
    long step;
    double prof[64][2];
    double opt_s[64];
    double wait_s[64]; /* forward and backward: the rank's thread blocked on collectives */
    double split[6];   /* rank 0's optimizer phase: gather, ns, return, update, rest, comm (this step) */
    const hp_graph *g; /* rank 0's program graph while its optimizer runs (the hook names values by it) */
} pstep;

/* The column of a distributed Muon value by its name (parallel/muon_dist's): 0 gather (the pieces to the
 * owners, the first iterates dealt, FSDP x TP's blocks), 1 Newton-Schulz (the teams' trades), 2 return (the
 * updates back, to the replicas, their spreads), -1 none of them. */
static int muon_col(const char *v) {
    static const struct {
        const char *prefix;
        int col;
    } pre[] = {{"muon.owned.", 0}, {"muon.touched.", 0}, {"muon.all.", 0}, {"muon.spread.", 0}, {"muon.ftg.", 0},
               {"muon.ftb.", 0},   {"muon.fts.", 0},     {"muon.x0.", 0},  {"muon.x.", 1},      {"muon.a.", 1},
               {"muon.upd", 2},    {"muon.ftu.", 2},     {"muon.fta.", 2}};
    for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++)
        if (!strncmp(v, pre[i].prefix, strlen(pre[i].prefix))) return pre[i].col;
    return -1;
}

/* Rank 0's optimizer nodes, each to its column of the split (communicating nodes and spreads by the value they
 * write or, for a wait, receive). */
static void opt_hook(void *ctx, const hp_node *n, double t0, double t1) {
    pstep *c = ctx;
    const char *op = n->op->name;
    double dt = t1 - t0;
    if (n->op->communicates) c->split[5] += dt;
    int v = n->nout > 0 ? n->out[0] : n->nin > 0 ? n->in[0] : -1;
    int col = v >= 0 && c->g ? muon_col(c->g->vals[v].name) : -1;
    if (!strcmp(op, "muon_pack")) c->split[0] += dt;
    else if (!strcmp(op, "muon_orth") || !strcmp(op, "muon_team")) c->split[1] += dt;
    else if (!strcmp(op, "muon_apply")) c->split[3] += dt;
    else if (col >= 0 && (n->op->communicates || !strcmp(op, "muon_spread") || !strcmp(op, "slot_wait"))) c->split[col] += dt;
    else c->split[4] += dt;
}

/* One training step on a rank; the optimizer phase is timed apart. */
static hp_status rank_step(hp_dist_rank *r, void *c_) {
    pstep *c = c_;
    hp_dist_scatter_value(c->d, r, c->io.tokens, hp_dist_value(r, c->io.tokens), c->tok);
    hp_dist_scatter_value(c->d, r, c->io.targets, hp_dist_value(r, c->io.targets), c->tgt);
    hp_optim_phase_lrs(hp_program_data(r->prog, r->c.optim.lr), c->oc, 1e-4f);
    *(int32_t *)hp_program_data(r->prog, r->c.optim.step) = (int32_t)(c->step + 1);
    const hp_comm_rank *cr = r->c.rg.ctx.comm;
    int64_t w0 = cr ? hp_comm_rank_wait_ns(cr) : 0;
    HP_TRY(hp_program_run(r->prog, HP_PHASE_FWD));
    HP_TRY(hp_program_run(r->prog, HP_PHASE_BWD));
    c->wait_s[r->local_index] = cr ? (double)(hp_comm_rank_wait_ns(cr) - w0) * 1e-9 : 0;
    double *prof = c->prof[r->local_index], saved[2] = {prof[0], prof[1]};
    if (r->local_index == 0) c->g = r->c.rg.g, hp_program_set_hook(r->prog, opt_hook, c);
    double t0 = hp_now();
    hp_status st = hp_program_run(r->prog, HP_PHASE_OPT);
    c->opt_s[r->local_index] += hp_now() - t0;
    if (r->local_index == 0) hp_program_set_hook(r->prog, NULL, NULL);
    HP_TRY(st);
    prof[0] = saved[0], prof[1] = saved[1]; /* the optimizer is its own column */
    return HP_OK;
}

static void fill_batch(int32_t *tok, int32_t *tgt, int n, int V) {
    hp_rng rng;
    hp_rng_seed(&rng, 5);
    for (int i = 0; i < n; i++) {
        tok[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)V);
        tgt[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)V);
    }
}

hp_status hp_api_bench_init_params(hp_dist *d, const hp_graph *g, const hp_gpt2_config *m) {
    hp_param_store ps;
    memset(&ps, 0, sizeof ps);
    hp_status st = hp_param_store_create(&ps, g);
    if (!st) st = hp_api_init_params(&ps, m, 1);
    if (!st) st = hp_dist_scatter_params(d, &ps);
    hp_param_store_free(&ps);
    return st;
}

/* The timed loop on d; t, k, cm, o, ot, busy, wt: per step total, kernels,
 * communicating steps, optimizer, other, the time rank 0's collectives ran,
 * and the time its thread was blocked on them. */
static hp_status time_steps(hp_dist *d, pstep *c, int steps, double *t, double *k, double *cm, double *o, double *ot,
                            double *busy, double *wt, double *split) {
    hp_comm_rank *r0 = hp_dist_rank_at(d, 0)->c.rg.ctx.comm;
    for (int i = -2; i < steps; i++) {
        c->prof[0][0] = c->prof[0][1] = c->opt_s[0] = 0;
        memset(c->split, 0, sizeof c->split);
        c->step = i + 2;
        int64_t b0 = hp_comm_rank_busy_ns(r0);
        double t0 = hp_now();
        HP_TRY(hp_dist_run(d, rank_step, c));
        double dt = hp_now() - t0;
        if (i >= 0) {
            t[i] = dt, k[i] = c->prof[0][0], cm[i] = c->prof[0][1], o[i] = c->opt_s[0];
            ot[i] = dt - k[i] - cm[i] - o[i];
            busy[i] = (double)(hp_comm_rank_busy_ns(r0) - b0) * 1e-9;
            wt[i] = c->wait_s[0];
            for (int j = 0; j < 6; j++) split[j * steps + i] = c->split[j];
        }
    }
    return HP_OK;
}

hp_status hp_api_bench_plan(hp_api_bench_out *out, const hp_gpt2_config *mc_in, int B, int T, const hp_plan *plan,
                            hp_comm_world *w, int threads, int steps, int overlap, hp_dtype dtype,
                            const hp_optim_config *oc_in) {
    memset(out, 0, sizeof *out);
    hp_gpt2_config mc = *mc_in;
    hp_graph *g = NULL;
    hp_dist *d = NULL;
    hp_optim_config oc;
    if (oc_in) oc = *oc_in;
    else hp_optim_config_default(&oc);
    pstep *c = calloc(1, sizeof *c);
    int32_t *tok = calloc((size_t)(B * T), sizeof *tok), *tgt = calloc((size_t)(B * T), sizeof *tgt);
    double *t = calloc((size_t)steps * 13, sizeof *t);
    hp_status st = c && tok && tgt && t ? hp_gpt2_config_check(&mc) : hp_errorf("benchmark: out of memory");
    if (!st && plan && hp_mesh_size(&plan->mesh) > 64) st = hp_errorf("benchmark: at most 64 ranks");
    if (!st) st = hp_graph_create(&g);
    if (!st) st = hp_gpt2_build(g, &c->io, &mc, B, T);
    if (!st) {
        hp_dist_config dc = {.model = g, .plan = plan, .world = w, .threads_per_rank = hp_dist_threads_per_rank(w, threads)};
        dc.compile = (hp_compile_opts){.train = 1, .optim = &oc, .max_norm = 1.0f, .schedule = {.overlap = overlap},
                                       .dtype = dtype};
        st = hp_dist_create(&d, &dc);
    }
    if (!st) st = hp_api_bench_init_params(d, g, &mc);
    if (!st) {
        fill_batch(tok, tgt, B * T, mc.V);
        c->d = d, c->oc = &oc, c->tok = tok, c->tgt = tgt;
        for (int i = 0; i < hp_dist_nranks(d); i++) hp_program_profile(hp_dist_rank_at(d, i)->prog, c->prof[i]);
        st = time_steps(d, c, steps, t, t + steps, t + 2 * steps, t + 3 * steps, t + 4 * steps, t + 5 * steps,
                        t + 6 * steps, t + 7 * steps);
    }
    if (!st) {
        out->step_s = hp_median(t, steps);
        out->compute_s = hp_median(t + steps, steps);
        out->comm_s = hp_median(t + 2 * steps, steps);
        out->optimizer_s = hp_median(t + 3 * steps, steps);
        out->other_s = hp_median(t + 4 * steps, steps);
        out->busy_s = hp_median(t + 5 * steps, steps);
        out->wait_s = hp_median(t + 6 * steps, steps);
        double *sp = t + 7 * steps;
        out->gather_s = hp_median(sp, steps), out->ns_s = hp_median(sp + steps, steps);
        out->return_s = hp_median(sp + 2 * steps, steps), out->update_s = hp_median(sp + 3 * steps, steps);
        out->opt_rest_s = hp_median(sp + 4 * steps, steps), out->opt_comm_s = hp_median(sp + 5 * steps, steps);
        hp_plan_rank_report rr;
        memset(&rr, 0, sizeof rr);
        st = hp_plan_gather_rank(&rr, &hp_dist_rank_at(d, 0)->c, NULL, 0, hp_dist_threads_per_rank(w, threads));
        out->memory_bytes = rr.memory.total;
        hp_plan_rank_report_free(&rr);
    }
    free(tok), free(tgt), free(t), free(c);
    hp_dist_destroy(d);
    hp_graph_destroy(g);
    return st;
}

hp_status hp_bench_parallel_row(hp_bench_parallel_result *res, const hp_bench_parallel_config *cfg) {
    memset(res, 0, sizeof *res);
    int B = cfg->B, T = cfg->T, steps = cfg->steps;
    if (steps < 1 || cfg->threads < 1 || B < 1 || T < 1)
        return hp_errorf("hp_bench_parallel_row: steps, threads, B and T must be >= 1");
    if (cfg->dp < 0 || cfg->tp < 0 || (cfg->dp > 0) != (cfg->tp > 0))
        return hp_errorf("hp_bench_parallel_row: dp and tp must both be >= 1 (or both 0: no plan), got %d and %d",
                         cfg->dp, cfg->tp);
    hp_plan plan;
    int have_plan = cfg->dp > 0;
    if (have_plan) HP_TRY(hp_plan_gpt2_dp_tp(&plan, cfg->dp, cfg->tp));
    hp_gpt2_config mc = {cfg->model.layers, cfg->model.heads, cfg->model.channels, cfg->model.vocab, 0,
                         cfg->model.max_seq};
    hp_comm_world *w = NULL;
    hp_status st = hp_dist_world_create(&w, have_plan ? &plan : NULL, 300, 0);
    hp_api_bench_out o;
    if (!st) st = hp_api_bench_plan(&o, &mc, B, T, have_plan ? &plan : NULL, w, cfg->threads, steps, cfg->overlap, HP_F32, NULL);
    if (!st)
        *res = (hp_bench_parallel_result){B * T / o.step_s, o.step_s * 1e3, o.compute_s * 1e3, o.comm_s * 1e3,
                                          o.optimizer_s * 1e3, o.other_s * 1e3};
    hp_comm_world_destroy(w);
    if (have_plan) hp_plan_free(&plan);
    return st;
}
