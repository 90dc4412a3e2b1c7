/* api/bench_moe: a Mixture-of-Experts model's training step under expert
 * parallelism on rank-threads (`hyperpar bench moe`): the named model, its
 * family's plan with ep members (EP 1: one rank, no plan), one compute thread
 * per rank, the ranks in one supernode or in emulated supernodes whose link
 * the comm layer throttles. Timed on every hosted rank with the program's
 * step hook: the step, and the time in the exchange's nodes (their
 * descriptors' purpose: "expert parallelism": blocking calls, or the starts
 * and waits of the overlapped ones — what of the exchange the step waits
 * for); the experts' load from the rows each rank's first grouped GEMM
 * received (tokens per expert over the whole group: max / mean). */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/rng.h"
#include "core/timing.h"
#include "models/build.h"
#include "ops/ops.h"
#include "models/gpt2_plan.h"
#include "optim/phase.h"
#include "runtime/dist.h"

#define MAXR 64

typedef struct {
    hp_dist *d;
    const hp_model *m;
    hp_optim_config oc;
    const int32_t *tok, *tgt;
    long step;
    double ep_s[MAXR];
    const hp_graph *g[MAXR];
} mstep;

typedef struct {
    mstep *c;
    int i;
} mhook;

static void ep_hook(void *ctx, const hp_node *n, double t0, double t1) {
    mhook *h = ctx;
    hp_coll_desc d;
    if (n->op->communicates && hp_coll_describe(&d, h->c->g[h->i], n) && d.purpose &&
        !strcmp(d.purpose, "expert parallelism"))
        h->c->ep_s[h->i] += t1 - t0;
}

static hp_status rank_step(hp_dist_rank *r, void *c_) {
    mstep *c = c_;
    hp_dist_scatter_value(c->d, r, c->m->io.tokens, hp_dist_value(r, c->m->io.tokens), c->tok);
    hp_dist_scatter_value(c->d, r, c->m->io.targets, hp_dist_value(r, c->m->io.targets), c->tgt);
    hp_optim_phase_lrs(hp_program_data(r->prog, r->c.optim.lr), &c->oc, 1e-4f);
    *(int32_t *)hp_program_data(r->prog, r->c.optim.step) = (int32_t)(c->step + 1);
    c->ep_s[r->local_index] = 0;
    HP_TRY(hp_program_run(r->prog, HP_PHASE_FWD));
    HP_TRY(hp_program_run(r->prog, HP_PHASE_BWD));
    return hp_program_run(r->prog, HP_PHASE_OPT);
}

/* Tokens per expert of the first MoE layer over every hosted rank (the rows its first grouped GEMM got). */
static void expert_load(double *maxv, double *meanv, hp_dist *d, int E) {
    double *cnt = calloc((size_t)E, sizeof *cnt);
    if (!cnt) return;
    for (int i = 0; i < hp_dist_nranks(d); i++) {
        hp_dist_rank *r = hp_dist_rank_at(d, i);
        const hp_graph *g = r->c.rg.g;
        for (int k = 0; k < g->nnodes; k++) {
            const hp_node *n = &g->nodes[k];
            if (hp_op_moe_role(n->op) != HP_MOE_ROLE_EXPERTS || n->phase != HP_PHASE_FWD) continue;
            const int32_t *e = hp_program_data(r->prog, n->in[2]);
            int64_t rows = hp_val_numel(g, n->in[2]);
            for (int64_t q = 0; e && q < rows; q++)
                if (e[q] >= 0 && e[q] < E) cnt[e[q]]++;
            break;
        }
    }
    double mx = 0, sum = 0;
    for (int e = 0; e < E; e++) mx = cnt[e] > mx ? cnt[e] : mx, sum += cnt[e];
    *maxv = mx, *meanv = sum / E;
    free(cnt);
}

static hp_status init_params(hp_dist *d, const hp_graph *g) {
    hp_param_store ps;
    memset(&ps, 0, sizeof ps);
    HP_TRY(hp_param_store_create(&ps, g));
    float **ptrs = malloc(sizeof *ptrs * (size_t)(ps.n ? ps.n : 1));
    hp_status st = ptrs ? HP_OK : hp_errorf("bench moe: out of memory");
    for (int i = 0; !st && i < ps.n; i++) ptrs[i] = ps.data + ps.offset[i];
    if (!st) st = hp_model_init(ptrs, g, (const char(*)[HP_NAME_LEN])ps.name, ps.n, 1337);
    if (!st) st = hp_dist_scatter_params(d, &ps);
    free(ptrs);
    hp_param_store_free(&ps);
    return st;
}

hp_status hp_bench_moe_row(hp_bench_moe_result *res, const hp_bench_moe_config *cfg) {
    memset(res, 0, sizeof *res);
    int ep = cfg->ep, S = cfg->supernodes > 1 ? cfg->supernodes : 1, steps = cfg->steps;
    if (ep < 1 || ep > MAXR || ep % S || steps < 1 || cfg->B < ep || cfg->B % ep || cfg->T < 1)
        return hp_errorf("hp_bench_moe_row: ep in 1..%d, supernodes dividing it, steps >= 1, B a multiple of ep "
                         "(got ep %d, supernodes %d, steps %d, B %d)", MAXR, ep, S, steps, cfg->B);
    hp_model_config mc;
    HP_TRY(hp_model_config_named(&mc, cfg->model));
    if (mc.experts < 1) return hp_errorf("hp_bench_moe_row: --model %s has no experts", cfg->model);
    hp_model *m = NULL;
    HP_TRY(hp_model_named(&m, cfg->model, &mc, cfg->B, cfg->T));
    hp_plan plan;
    int have_plan = ep > 1;
    hp_status st = have_plan ? hp_plan_model_ep(&plan, "moe", 1, 1, 1, ep, 1) : HP_OK;
    if (st) have_plan = 0;
    hp_comm_world *w = NULL;
    if (!st) {
        hp_comm_opts o;
        hp_comm_opts_default(&o);
        o.ranks_per_supernode = ep / S;
        o.supernodes = S;
        o.mpi = 0;
        o.inter_bw_gbps = cfg->inter_bw_gbps;
        o.inter_latency_us = cfg->inter_latency_us;
        o.timeout_s = 300;
        st = hp_comm_world_create(&w, &o);
    }
    mstep *c = calloc(1, sizeof *c);
    mhook hk[MAXR];
    int n = cfg->B * cfg->T;
    int32_t *tok = calloc((size_t)n, sizeof *tok), *tgt = calloc((size_t)n, sizeof *tgt);
    double *t = calloc((size_t)steps * 3, sizeof *t);
    if (!st && (!c || !tok || !tgt || !t)) st = hp_errorf("bench moe: out of memory");
    hp_dist *d = NULL;
    if (!st) {
        hp_optim_config_default(&c->oc);
        hp_dist_config dc = {.model = m->g, .plan = have_plan ? &plan : NULL, .world = w, .threads_per_rank = 1};
        dc.compile = (hp_compile_opts){.train = 1, .optim = &c->oc, .max_norm = 1.0f, .schedule = {.overlap = 1,
                                       .ep_overlap = cfg->blocking ? HP_EP_OVERLAP_OFF : HP_EP_OVERLAP_ALWAYS},
                                       .moe_chunks = cfg->moe_chunks};
        st = hp_dist_create(&d, &dc);
    }
    if (!st) st = init_params(d, m->g);
    if (!st) {
        hp_rng rng;
        hp_rng_seed(&rng, 5);
        for (int i = 0; i < n; i++) { /* a text-like skew: low token ids more often */
            uint64_t a = hp_rng_next(&rng) % (uint64_t)mc.vocab, b = hp_rng_next(&rng) % (uint64_t)mc.vocab;
            tok[i] = (int32_t)(a < b ? a : b), tgt[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)mc.vocab);
        }
        c->d = d, c->m = m, c->tok = tok, c->tgt = tgt;
        for (int i = 0; i < hp_dist_nranks(d) && i < MAXR; i++) {
            hk[i] = (mhook){c, i};
            c->g[i] = hp_dist_rank_at(d, i)->c.rg.g;
            hp_program_set_hook(hp_dist_rank_at(d, i)->prog, ep_hook, &hk[i]);
        }
        for (int i = -2; i < steps && !st; i++) {
            c->step = i + 2;
            double t0 = hp_now();
            st = hp_dist_run(d, rank_step, c);
            double dt = hp_now() - t0, most = 0;
            for (int r = 0; r < hp_dist_nranks(d) && r < MAXR; r++) most = c->ep_s[r] > most ? c->ep_s[r] : most;
            if (i >= 0) t[i] = dt, t[steps + i] = most, t[2 * steps + i] = c->ep_s[0];
        }
        for (int i = 0; i < hp_dist_nranks(d) && i < MAXR; i++) hp_program_set_hook(hp_dist_rank_at(d, i)->prog, NULL, NULL);
    }
    if (!st) {
        res->step_ms = hp_median(t, steps) * 1e3;
        res->tokens_per_s = n / (res->step_ms * 1e-3);
        res->a2a_ms = hp_median(t + steps, steps) * 1e3;
        res->a2a_rank0_ms = hp_median(t + 2 * steps, steps) * 1e3;
        res->a2a_exposed_ms = res->a2a_ms; /* the time the rank spent in the exchange's nodes */
        expert_load(&res->max_tokens_per_expert, &res->mean_tokens_per_expert, d, mc.experts);
        res->ranks = ep;
    }
    hp_dist_destroy(d);
    free(tok), free(tgt), free(t), free(c);
    if (w) hp_comm_world_destroy(w);
    if (have_plan) hp_plan_free(&plan);
    hp_model_free(m);
    return st;
}
