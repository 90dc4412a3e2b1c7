/* api/simulate: hp_simulate — a plan's training step predicted by autopar's
 * cost model: the plan compiled as `hyperpar plan` compiles it (the first rank
 * of each pipeline stage), the cluster description and calibration profile
 * read, the step priced (autopar/cost), the memory per rank counted, and
 * the predicted timeline written in the trace format when asked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "api/plan_report.h"
#include "api/simulate.h"

_Static_assert(HP_PROF_NFAMILIES == 7, "hp_sim_report.family_s has a place for every family");

void hp_sim_config_default(hp_sim_config *s) {
    memset(s, 0, sizeof *s);
    s->links = -1;
}

void hp_sim_report_free(hp_sim_report *r) {
    if (!r) return;
    free(r->memory);
    for (int i = 0; i < r->nassumptions; i++) free(r->assumptions[i]);
    free(r->assumptions);
    free(r);
}

static hp_status add_assumption(hp_sim_report *r, const char *from, const char *text) {
    char **a = realloc(r->assumptions, sizeof *a * (size_t)(r->nassumptions + 1));
    if (!a) return hp_errorf("hp_simulate: out of memory");
    r->assumptions = a;
    size_t n = strlen(from) + strlen(text) + 3;
    char *t = malloc(n);
    if (!t) return hp_errorf("hp_simulate: out of memory");
    snprintf(t, n, "%s: %s", from, text);
    r->assumptions[r->nassumptions++] = t;
    return HP_OK;
}

int hp_api_ranks_here(int ranks, int processes, int one_process) {
    int here = processes > 1 && !one_process ? ranks / processes : ranks;
    return here > 0 ? here : 1;
}

int hp_api_rank_threads(int threads, int here) { return threads / here > 0 ? threads / here : 1; }

/* This machine's cores shared by the ranks of one process: env's compute_scale (the share of the profile's kernel
 * threads a rank gets when all compute: its threads, or the cores over the ranks when fewer, times the profile's
 * measured efficiency of that many rank-threads) and, when the pipeline's stages all run here, the speed of a
 * stage's kernels while only some stages compute (their ranks get the idle stages' cores). */
static void local_share(hp_cost_env *env, const hp_plan_report_config *c, int ranks, int stages,
                        const hp_profile *p, int one_process) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int here = hp_api_ranks_here(ranks, c->processes, one_process);
    double per = hp_api_rank_threads(c->threads, here), pt = p->threads > 0 ? p->threads : 1;
    int all_here = here == ranks && stages > 1 && stages <= HP_COST_SHARE_MAX;
    double scale[HP_COST_SHARE_MAX + 1] = {0};
    for (int a = 1; a <= (all_here ? stages : 1); a++) {
        double busy = all_here ? (double)here * a / stages : here; /* ranks computing */
        double share = cores > 0 && (double)cores / busy < per ? (double)cores / busy : per;
        double ratio = cores > 0 ? busy * per / (double)cores : 1;
        scale[a] = share * hp_profile_shared_eff(p, ratio) / pt;
    }
    env->compute_scale = scale[all_here ? stages : 1];
    env->share_stages = all_here ? stages : 0;
    for (int a = 1; all_here && a <= stages; a++) env->share_speed[a] = scale[a] / env->compute_scale;
}

hp_status hp_api_sim_predict(hp_sim_report *r, const hp_plan_report_config *c, const hp_sim_config *sc,
                             const hp_profile *prof, const hp_cluster *cl) {
    hp_api_plan_setup s;
    HP_TRY(hp_api_plan_setup_init(&s, c));
    const hp_plan *plan = &c->plan->plan;
    const hp_mesh *m = &plan->mesh;
    int ranks = hp_mesh_size(m), axis = hp_mesh_axis(m, "pp");
    int stages = axis >= 0 ? m->size[axis] : 1;
    if (!cl && c->processes > 1) s.co.supernode_ranks = ranks / c->processes;
    if (cl) s.co.supernode_ranks = cl->ranks_per_supernode < ranks ? cl->ranks_per_supernode : 0;
    if (!cl) { /* this machine's links come from the profile: it must have them */
        hp_prof_time pt;
        for (int t = 0; t < (c->processes > 1 ? 2 : 1); t++) {
            hp_profile_collective_time(&pt, prof, (hp_prof_tier)t, HP_PROF_ALL_REDUCE, 0);
            if (pt.fallback == HP_PROF_NONE && !(t == HP_PROF_INTER && sc->inter_bw_GBps > 0))
                return hp_errorf("hp_simulate: profile '%s' has no %s-supernode collectives to price this machine's "
                                 "links: give a cluster file or a calibrated profile", prof->machine,
                                 t ? "inter" : "intra");
        }
    }
    hp_graph *model = NULL;
    HP_TRY(hp_api_plan_model(&model, &s, c));
    hp_compiled *cc = calloc((size_t)stages, sizeof *cc);
    const hp_compiled **ptr = calloc((size_t)stages, sizeof *ptr);
    r->memory = calloc((size_t)stages, sizeof *r->memory);
    hp_status st = cc && ptr && r->memory ? HP_OK : hp_errorf("hp_simulate: out of memory");
    int done = 0, threads = hp_api_rank_threads(c->threads, hp_api_ranks_here(ranks, c->processes, sc->one_process));
    for (; !st && done < stages; done++) {
        st = hp_compile(&cc[done], model, plan, hp_api_stage_rank(m, axis, done), &s.co);
        if (st) break;
        ptr[done] = &cc[done];
        hp_plan_gather_memory(&r->memory[done], &cc[done], threads);
    }
    hp_cluster local;
    hp_cost_env env = {.profile = prof, .cluster = cl, .a2a_fuse_bytes = sc->a2a_fuse_bytes};
    if (!cl) { /* this machine: the plan's ranks in `processes` supernodes, links from the profile */
        memset(&local, 0, sizeof local);
        snprintf(local.name, sizeof local.name, "this-machine");
        local.supernodes = c->processes > 1 ? c->processes : 1;
        local.ranks_per_supernode = ranks / local.supernodes;
        local.world = ranks;
        local.peak_fp32_flops = prof->peak_fp32_gflops * 1e9;
        local.peak_bf16_flops = prof->peak_bf16_gflops * 1e9;
        env.cluster = &local;
    }
    if (!cl && sc->inter_bw_GBps > 0) { /* an emulated link between this machine's supernodes */
        local.inter_bandwidth_GBps = sc->inter_bw_GBps;
        local.inter_latency_us = sc->inter_latency_us;
    }
    env.links_from_cluster = sc->links > 0 || (sc->links < 0 && cl) ? 3u
                             : sc->links < 0 && sc->inter_bw_GBps > 0 ? 1u << HP_PROF_INTER : 0u;
    env.inter_holds = !cl && sc->one_process && local.supernodes > 1;
    if (sc->compute_scale > 0 || cl) env.compute_scale = sc->compute_scale > 0 ? sc->compute_scale : 1.0;
    else local_share(&env, c, ranks, stages, prof, sc->one_process);
    hp_cost k;
    memset(&k, 0, sizeof k);
    if (!st) st = hp_cost_predict(&k, ptr, stages, &env, sc->trace != NULL);
    if (!st && sc->trace) st = hp_api_sim_write_trace(&k, sc->trace, m, axis);
    if (!st) {
        r->step_s = k.step_s, r->compute_s = k.compute_s, r->optimizer_s = k.optimizer_s, r->bubble_s = k.bubble_s;
        r->exposed_intra_s = k.exposed_s[HP_PROF_INTRA], r->exposed_inter_s = k.exposed_s[HP_PROF_INTER];
        r->comm_intra_s = k.comm_s[HP_PROF_INTRA], r->comm_inter_s = k.comm_s[HP_PROF_INTER];
        r->bytes_intra = k.comm_bytes[HP_PROF_INTRA], r->bytes_inter = k.comm_bytes[HP_PROF_INTER];
        r->flops = k.flops;
        for (int f = 0; f < HP_PROF_NFAMILIES && f < 7; f++) r->family_s[f] = k.family_s[f];
        r->ranks = ranks, r->stages = stages, r->stage = k.stage;
        r->kernel_fallbacks = k.fallbacks;
        double micro = c->grad_accum > 1 ? c->grad_accum : 1;
        r->tokens_per_s = k.step_s > 0 ? (double)c->batch * c->seq * micro / k.step_s : 0;
        r->peak_flops = c->bf16 ? env.cluster->peak_bf16_flops : env.cluster->peak_fp32_flops;
        r->mfu = k.step_s > 0 && r->peak_flops > 0 ? k.flops / k.step_s / r->peak_flops : 0;
        snprintf(r->cluster, sizeof r->cluster, "%s", env.cluster->name);
        snprintf(r->profile, sizeof r->profile, "%s", prof->machine);
        r->links_from_cluster = (int)env.links_from_cluster;
        r->compute_scale = env.compute_scale;
    }
    hp_cost_free(&k);
    for (int i = 0; i < done; i++) hp_compiled_free(&cc[i]);
    free(cc);
    free(ptr);
    hp_graph_destroy(model);
    return st;
}

hp_status hp_api_profile_pick(hp_profile *out, const char *list, int threads) {
    char buf[2048];
    if (!list || strlen(list) >= sizeof buf) return hp_errorf("hp_simulate: the profile list is missing or too long");
    snprintf(buf, sizeof buf, "%s", list);
    int have = 0;
    hp_status st = HP_OK;
    for (char *save = NULL, *f = strtok_r(buf, ",", &save); !st && f; f = strtok_r(NULL, ",", &save)) {
        hp_profile p;
        st = hp_profile_load(&p, f);
        if (st) break;
        /* the one measured at the rank's threads, else the most threads below them, else the fewest above */
        int better = !have || (out->threads != threads &&
                               (p.threads == threads || (p.threads < threads && (out->threads > threads ||
                                                                                   p.threads > out->threads)) ||
                                (p.threads > threads && out->threads > threads && p.threads < out->threads)));
        if (better) {
            if (have) hp_profile_free(out);
            *out = p, have = 1;
        } else {
            hp_profile_free(&p);
        }
    }
    if (st && have) hp_profile_free(out);
    if (!st && !have) st = hp_errorf("hp_simulate: no profile given");
    return st;
}

/* Kernel threads a rank of c's plan gets: the process's threads over the ranks it hosts. */
static int rank_threads(const hp_plan_report_config *c, int one_process) {
    int ranks = hp_mesh_size(&c->plan->plan.mesh);
    return hp_api_rank_threads(c->threads, hp_api_ranks_here(ranks, c->processes, one_process));
}

hp_status hp_simulate(hp_sim_report **out, const hp_plan_report_config *c, const hp_sim_config *sc) {
    *out = NULL;
    if (!c || !sc || !c->plan) return hp_errorf("hp_simulate: needs a plan report config with a plan and a config");
    if (!sc->profile) return hp_errorf("hp_simulate: no calibration profile given (--profile FILE)");
    hp_sim_report *r = calloc(1, sizeof *r);
    if (!r) return hp_errorf("hp_simulate: out of memory");
    hp_profile prof;
    hp_cluster cl;
    int have_cl = 0;
    hp_status st = hp_api_profile_pick(&prof, sc->profile, rank_threads(c, sc->one_process));
    if (st) {
        hp_sim_report_free(r);
        return st;
    }
    if (sc->cluster) {
        st = hp_cluster_load(&cl, sc->cluster);
        have_cl = !st;
    }
    for (int i = 0; !st && have_cl && i < cl.nassumptions; i++) st = add_assumption(r, cl.name, cl.assumptions[i]);
    for (int i = 0; !st && i < prof.nnotes; i++) st = add_assumption(r, prof.machine, prof.notes[i]);
    if (!st) st = hp_api_sim_predict(r, c, sc, &prof, have_cl ? &cl : NULL);
    if (!st && sc->trace) st = hp_api_sim_write_summary(r, &c->plan->plan.mesh, sc->trace);
    if (have_cl) hp_cluster_free(&cl);
    hp_profile_free(&prof);
    if (st) {
        hp_sim_report_free(r);
        return st;
    }
    *out = r;
    return HP_OK;
}
