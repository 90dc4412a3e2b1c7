/* api/plan_report: hp_plan_report, what a sharding plan compiles to — checks
 * the config, builds GPT-2's forward graph, compiles it (parallel/compile)
 * for each reported rank without a communicator, and gathers per rank its
 * report (plan_report_gather.c) with the mesh, the passes and the
 * propagation notes. Each rank's compile is freed once gathered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/plan_report.h"
#include "parallel/muon_plan.h"
#include "models/gpt2_config.h"
#include "models/zoo.h"

_Static_assert(HP_PLAN_MAX_AXES >= HP_MESH_MAX_DIMS, "hp_plan_report holds every mesh axis");
_Static_assert(sizeof(((hp_plan_report *)0)->axis_name[0]) >= HP_AXIS_NAME_LEN, "axis names fit");
_Static_assert(sizeof(((hp_plan_report *)0)->passes) / sizeof(hp_plan_pass) >= HP_MAX_PASSES, "every pass fits");
_Static_assert(sizeof(((hp_plan_pass *)0)->note) >= HP_PASS_NOTE, "pass notes fit");

void hp_plan_report_config_default(hp_plan_report_config *c) {
    memset(c, 0, sizeof *c);
    c->optimizer = "adamw";
    c->grad_clip = 1.0f;
    c->overlap = 1;
    c->threads = 1;
}

static hp_status check(const hp_plan_report_config *c) {
#define BAD(...) return hp_errorf("hp_plan_report_config: " __VA_ARGS__)
    if (!c->plan) BAD("plan is NULL");
    if (c->batch < 1 || c->seq < 1) BAD("batch and seq must be >= 1, got %d and %d", c->batch, c->seq);
    if (c->threads < 1) BAD("threads must be >= 1, got %d", c->threads);
    if (c->grad_accum < 0 || c->grad_accum > 4096) BAD("grad_accum must be in 0..4096, got %d", c->grad_accum);
    if (c->world < 0) BAD("world must be >= 1 (or 0: the mesh's size), got %d", c->world);
    const hp_mesh *m = &c->plan->plan.mesh;
    int n = hp_mesh_size(m);
    if (c->world && c->world != n) BAD("mesh '%s' has %d ranks but the world has %d", c->plan->mesh, n, c->world);
    if (c->processes < 0 || (c->processes > 1 && n % c->processes))
        BAD("processes %d: the mesh's %d ranks cannot be spread evenly over them", c->processes, n);
    if (c->rank < 0 || c->rank >= n) BAD("rank %d is not a rank of mesh '%s' (0..%d)", c->rank, c->plan->mesh, n - 1);
    return HP_OK;
#undef BAD
}

/* The model shape: the config's, or an llm.c file's; checked (Vp filled). */
static hp_status model_config(hp_gpt2_config *mc, const hp_plan_report_config *c) {
    const hp_model_config *m = &c->model;
    *mc = (hp_gpt2_config){m->layers, m->heads, m->channels, m->vocab, 0, m->max_seq};
    if (c->init_llmc && c->init_llmc[0]) HP_TRY(hp_llmc_model_config(mc, c->init_llmc));
    return hp_gpt2_config_check(mc);
}

static hp_status optim_config(hp_optim_config *o, const hp_plan_report_config *c) {
    hp_optim_config_default(o);
    HP_TRY(hp_opt_kind_parse(&o->kind, c->optimizer ? c->optimizer : "adamw"));
    o->muon_params = c->muon_params && c->muon_params[0] ? c->muon_params : NULL;
    o->adamw_params = c->adamw_params && c->adamw_params[0] ? c->adamw_params : NULL;
    if (c->muon_balance != 0) o->muon_balance = c->muon_balance > 0 ? c->muon_balance : 0.0f;
    return HP_OK;
}

/* Values listed: inputs, then parameters, then (all) everything else. */
static int listed(const hp_value *v, int pass, int all) {
    if (pass == 0) return v->kind == HP_V_INPUT;
    if (pass == 1) return v->kind == HP_V_PARAM;
    return all && v->kind != HP_V_INPUT && v->kind != HP_V_PARAM;
}

/* What every rank shares, from the first compile: mesh, passes, notes, and
 * the values listed (*list, malloc'd). */
static hp_status gather_shared(hp_plan_report *r, int **list, int *nlist, const hp_compiled *cc, int all) {
    const hp_mesh *m = &cc->mesh;
    hp_mesh_str(r->mesh, sizeof r->mesh, m);
    r->naxes = m->ndim;
    for (int a = 0; a < m->ndim; a++) {
        snprintf(r->axis_name[a], sizeof r->axis_name[a], "%s", m->name[a]);
        r->axis_size[a] = m->size[a];
    }
    r->npasses = cc->npasses;
    for (int i = 0; i < cc->npasses; i++) {
        snprintf(r->passes[i].name, sizeof r->passes[i].name, "%s", cc->passes[i].name);
        snprintf(r->passes[i].note, sizeof r->passes[i].note, "%s", cc->passes[i].note);
    }
    const hp_propagation *p = &cc->prop;
    size_t text = 0;
    for (int i = 0; i < p->nnotes; i++) text += strlen(p->notes[i]) + 1;
    r->notes = malloc(sizeof(char *) * (size_t)p->nnotes + text + 1);
    if (!r->notes) return hp_errorf("hp_plan_report_create: out of memory");
    char *s = (char *)(r->notes + p->nnotes);
    for (int i = 0; i < p->nnotes; i++) {
        size_t n = strlen(p->notes[i]) + 1;
        memcpy(s, p->notes[i], n);
        r->notes[i] = s, s += n;
    }
    r->nnotes = p->nnotes;
    const hp_graph *g = cc->global;
    *list = malloc(sizeof(int) * (size_t)(g->nvals > 0 ? g->nvals : 1));
    if (!*list) return hp_errorf("hp_plan_report_create: out of memory");
    for (int pass = 0; pass < 3; pass++)
        for (int v = 0; v < g->nvals; v++)
            if (listed(&g->vals[v], pass, all)) (*list)[(*nlist)++] = v;
    return HP_OK;
}

hp_status hp_api_plan_setup_init(hp_api_plan_setup *s, const hp_plan_report_config *c) {
    memset(s, 0, sizeof *s);
    HP_TRY(check(c));
    HP_TRY(model_config(&s->mc, c));
    HP_TRY(optim_config(&s->oc, c));
    int n = hp_mesh_size(&c->plan->plan.mesh);
    s->co = (hp_compile_opts){.train = 1, .optim = &s->oc, .max_norm = c->grad_clip,
                              .grad_accum = c->grad_accum > 1 ? c->grad_accum : 1,
                              .accum_comm_last = c->grad_accum > 1 && c->grad_accum_comm_last,
                              .deterministic = c->deterministic != 0,
                              .schedule = {.overlap = c->overlap != 0, .ep_overlap = hp_api_ep_overlap(c->overlap,
                                                                                                  c->ep_overlap),
                                           .max_inflight = 4},
                              .dtype = c->bf16 ? HP_BF16 : HP_F32, .bf16_params_all = c->bf16_params_all,
                              .dp_reduce = c->dp_reduce_bf16 ? HP_BF16 : HP_F32,
                              .supernode_ranks = c->processes > 1 ? n / c->processes : 0};
    HP_TRY(hp_api_remat_opts(&s->co.remat, c->remat, c->remat_save));
    s->co.loss_chunk = c->loss_chunk;
    s->co.moe_chunks = c->moe_chunks;
    HP_TRY(hp_api_pp_opts(&s->co.pp, c->pp_schedule, c->pp_split, c->pp_chunks));
    return hp_api_plan_lines(&s->co.pp, &s->co.remat, &c->plan->plan);
}

/* Distributed Muon's plan (parallel/muon_plan) from the compile of rank 0 (made with AdamW: the plan only
 * routes, and holds where training refuses Muon on a matrix cut along two mesh axes). */
static hp_status gather_muon(hp_plan_muon *out, const hp_graph *model, const hp_plan *plan, const hp_api_plan_setup *s) {
    if (s->oc.kind != HP_OPT_MUON) return HP_OK;
    hp_optim_config adamw = s->oc;
    adamw.kind = HP_OPT_ADAMW;
    hp_compile_opts co = s->co;
    co.optim = &adamw;
    hp_compiled cc;
    HP_TRY(hp_compile(&cc, model, plan, 0, &co));
    hp_muon_plan p;
    hp_status st = hp_muon_plan_build(&p, cc.global, &cc.prop, &cc.mesh, cc.fsdp.level ? &cc.fsdp : NULL, &s->oc);
    if (!st) {
        out->nmatrices = p.nmat, out->ngroups = p.ngrp, out->nranks = p.nranks;
        out->matrices = calloc((size_t)(p.nmat ? p.nmat : 1), sizeof *out->matrices);
        out->groups = calloc((size_t)(p.ngrp ? p.ngrp : 1), sizeof *out->groups);
        out->gflops = calloc((size_t)p.nranks, sizeof *out->gflops);
        out->sent = calloc((size_t)p.nranks, sizeof *out->sent);
        out->recv = calloc((size_t)p.nranks, sizeof *out->recv);
        if (!out->matrices || !out->groups || !out->gflops || !out->sent || !out->recv)
            st = hp_errorf("hp_plan_report_create: out of memory");
    }
    for (int i = 0; !st && i < p.nmat; i++) {
        const hp_muon_matrix *x = &p.mat[i];
        hp_plan_muon_matrix *y = &out->matrices[i];
        snprintf(y->name, sizeof y->name, "%s", cc.global->vals[x->v].name);
        y->group = x->group, y->owner = x->owner, y->count = x->count, y->rows = x->rows, y->cols = x->cols;
        y->team = x->owner >= 0 ? 1 : 0;
        for (int b = 0; b < x->nblk; b++) { /* distinct ranks of its blocks */
            int seen = 0;
            for (int j = 0; j < b && !seen; j++) seen = p.blk[x->blk_at + j] == p.blk[x->blk_at + b];
            y->team += !seen && p.blk[x->blk_at + b] != x->owner;
        }
        out->nsplit += y->team > 1;
        y->gflops = x->flops * 1e-9;
    }
    for (int i = 0; !st && i < p.ngrp; i++) {
        hp_plan_muon_group *y = &out->groups[i];
        snprintf(y->key, sizeof y->key, "%s", p.grp[i].key);
        y->nmatrices = p.grp[i].nmatrices, y->nranks = p.grp[i].nranks, y->gflops = p.grp[i].flops * 1e-9;
    }
    for (int r = 0; !st && r < p.nranks; r++)
        out->gflops[r] = p.load[r] * 1e-9, out->sent[r] = p.sent[r], out->recv[r] = p.recv[r];
    if (!st) out->imbalance = hp_muon_plan_imbalance(&p);
    for (int d = 0; !st && d < HP_MUON_DIST_COUNT && d < 5; d++) { /* every strategy on the same layouts */
        hp_muon_plan q;
        st = hp_muon_plan_build_as(&q, cc.global, &cc.prop, &cc.mesh, cc.fsdp.level ? &cc.fsdp : NULL, &s->oc,
                                   (hp_muon_dist)d);
        if (st) break;
        hp_plan_muon_strategy *y = &out->strategies[out->nstrategies++];
        snprintf(y->name, sizeof y->name, "%s", hp_muon_dist_name((hp_muon_dist)d));
        for (int r = 0; r < q.nranks; r++) {
            if (q.load[r] * 1e-9 > y->max_gflops) y->max_gflops = q.load[r] * 1e-9;
            y->total_gflops += q.load[r] * 1e-9, y->recv_mean += q.recv[r] / q.nranks;
        }
        y->imbalance = hp_muon_plan_imbalance(&q);
        hp_muon_plan_free(&q);
    }
    if (!st) hp_muon_plan_free(&p);
    hp_compiled_free(&cc);
    return st;
}

/* The pipeline's stages, schedule and timeline (from a rank's compile: every rank's table is the same). */
static hp_status gather_pipeline(hp_plan_pipeline *out, const hp_compiled *cc) {
    const hp_pp_plan *pp = &cc->pp;
    if (pp->axis < 0) return HP_OK;
    out->stages = pp->stages, out->micro = pp->micro, out->imbalance = pp->imbalance;
    snprintf(out->schedule, sizeof out->schedule, "%s", hp_pp_kind_name(pp->kind));
    int L = pp->nunits - 2, used = 0;
    for (int s = 0; s < pp->vstages; s++) { /* virtual stage s: chunk s / p of stage s % p */
        int a = pp->first[s], b = pp->first[s + 1]; /* units a..b-1: 0 embeddings, 1..L blocks, L+1 head */
        char part[96] = "";
        int n = 0;
        if (a == 0) n += snprintf(part + n, sizeof part - (size_t)n, "embeddings");
        int lo = a > 1 ? a : 1, hi = b - 1 < L ? b - 1 : L; /* blocks lo-1 .. hi-1 */
        if (lo == hi) n += snprintf(part + n, sizeof part - (size_t)n, "%sh.%d", n ? ", " : "", lo - 1);
        if (lo < hi) n += snprintf(part + n, sizeof part - (size_t)n, "%sh.%d-h.%d", n ? ", " : "", lo - 1, hi - 1);
        if (b == L + 2) snprintf(part + strlen(part), sizeof part - strlen(part), "%shead", part[0] ? ", " : "");
        char who[24];
        if (pp->chunks > 1) snprintf(who, sizeof who, "%d.%d", s % pp->stages, s / pp->stages);
        else snprintf(who, sizeof who, "%d", s);
        int w = snprintf(out->split + used, sizeof out->split - (size_t)used, "%s%s: %s", s ? " | " : "", who, part);
        if (w > 0 && used + w < (int)sizeof out->split) used += w;
    }
    hp_pp_sim sim;
    HP_TRY(hp_pp_sched_simulate(&sim, &pp->sched, 1, 2, 1, 1));
    out->bubble = sim.bubble;
    for (int s = 0; s < pp->stages && s < 64; s++) out->peak_inflight[s] = sim.peak[s];
    hp_pp_sim_free(&sim);
    out->bubble_formula = (double)(pp->stages - 1) / (double)(pp->micro + pp->stages - 1);
    return hp_pp_sched_timeline(&out->timeline, &pp->sched);
}

static void free_muon(hp_plan_muon *m) {
    free(m->matrices), free(m->groups), free(m->gflops), free(m->sent), free(m->recv);
    memset(m, 0, sizeof *m);
}

hp_status hp_api_plan_model(hp_graph **out, const hp_api_plan_setup *s, const hp_plan_report_config *c) {
    const hp_model_family *fam = hp_model_family_named(c->model_kind); /* NULL: GPT-2 */
    hp_model_config m = c->model;
    m.layers = s->mc.L, m.heads = s->mc.NH, m.channels = s->mc.C, m.vocab = s->mc.V, m.max_seq = s->mc.maxT;
    hp_gpt2_io io;
    HP_TRY(hp_graph_create(out));
    hp_status st = fam ? fam->build(*out, &m, c->batch, c->seq) : hp_gpt2_build(*out, &io, &s->mc, c->batch, c->seq);
    if (st) {
        hp_graph_destroy(*out);
        *out = NULL;
    }
    return st;
}

static hp_status build(hp_plan_report *r, const hp_plan_report_config *c) {
    hp_api_plan_setup s;
    HP_TRY(hp_api_plan_setup_init(&s, c));
    const hp_gpt2_config *mc = &s.mc;
    const hp_plan *plan = &c->plan->plan;
    int n = hp_mesh_size(&plan->mesh);
    r->model = c->model;
    r->model.layers = mc->L, r->model.heads = mc->NH, r->model.channels = mc->C, r->model.vocab = mc->V;
    r->model.max_seq = mc->maxT;
    r->vocab_padded = mc->Vp;
    const hp_model_family *fam = hp_model_family_named(c->model_kind); /* NULL: GPT-2 */
    r->nparams = fam ? (long)fam->num_params(&r->model) : (long)hp_gpt2_num_params(mc);
    r->batch = c->batch, r->seq = c->seq;
    r->nranks = n, r->world = c->world ? c->world : n;
    HP_TRY(hp_api_strdup((char **)&r->plan_text, c->plan->text));
    snprintf(r->optimizer, sizeof r->optimizer, "%s", hp_opt_kind_name(s.oc.kind));
    hp_graph *model = NULL;
    hp_status st = hp_api_plan_model(&model, &s, c);
    r->nreported = c->all_ranks ? n : 1;
    r->ranks = st ? NULL : calloc((size_t)r->nreported, sizeof *r->ranks);
    if (!st && !r->ranks) st = hp_errorf("hp_plan_report_create: out of memory");
    /* the process's threads shared out among its ranks, as runtime/dist does */
    int here = c->processes > 1 ? n / c->processes : n, *list = NULL, nlist = 0;
    int threads = c->threads / here > 0 ? c->threads / here : 1;
    if (!st) st = gather_muon(&r->muon, model, plan, &s);
    hp_optim_config adamw = s.oc;
    adamw.kind = HP_OPT_ADAMW;
    for (int i = 0; !st && i < r->nreported; i++) {
        hp_compiled cc;
        st = hp_compile(&cc, model, plan, c->all_ranks ? i : c->rank, &s.co);
        if (st && s.oc.kind == HP_OPT_MUON && s.co.optim != &adamw && strstr(hp_status_msg(st), "distributed Muon")) {
            /* training refuses Muon on these layouts (yet): the report shows the plan, its programs use AdamW */
            r->muon.refused = 1;
            snprintf(r->muon.status, sizeof r->muon.status, "training refuses Muon on matrices cut along two mesh "
                     "axes (not handled yet); the programs above use AdamW");
            hp_status_free(st);
            s.co.optim = &adamw;
            st = hp_compile(&cc, model, plan, c->all_ranks ? i : c->rank, &s.co);
        }
        if (st) break;
        if (i == 0) st = gather_shared(r, &list, &nlist, &cc, c->all_values);
        if (!st && i == 0) st = gather_pipeline(&r->pipeline, &cc);
        if (!st) st = hp_plan_gather_rank(&r->ranks[i], &cc, list, nlist, threads);
        if (!st) hp_api_fsdp_finish(&r->ranks[i].fsdp, plan);
        hp_compiled_free(&cc);
    }
    free(list);
    hp_graph_destroy(model);
    return st;
}

hp_status hp_plan_report_create(hp_plan_report **out, const hp_plan_report_config *c) {
    *out = NULL;
    if (!c) return hp_errorf("hp_plan_report_create: config is NULL");
    hp_plan_report *r = calloc(1, sizeof *r);
    if (!r) return hp_errorf("hp_plan_report_create: out of memory");
    hp_status st = build(r, c);
    if (st) {
        hp_plan_report_free(r);
        return st;
    }
    *out = r;
    return HP_OK;
}

void hp_plan_report_free(hp_plan_report *r) {
    if (!r) return;
    free(r->pipeline.timeline);
    for (int i = 0; i < r->nreported && r->ranks; i++) hp_plan_rank_report_free(&r->ranks[i]);
    free(r->ranks);
    free((char *)r->plan_text);
    free(r->notes);
    free_muon(&r->muon);
    free(r);
}
