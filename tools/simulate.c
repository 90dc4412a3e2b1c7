/* tools/simulate: `hyperpar simulate` — a training step predicted without
 * running it. Takes the flags of `hyperpar plan` (model, batch, --plan FILE or
 * --dp/--tp/--pp/..., training settings) and a cluster description and
 * calibration profile; prints the predicted step split (compute, exposed
 * communication per tier, pipeline bubble, optimizer), tokens/s, MFU, memory
 * per rank and every assumption; --timeline PREFIX writes the predicted timeline
 * for `hyperpar report`. The library does the work (hp_simulate). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "plan_report.h"
#include "train_opts.h"

typedef struct {
    char cluster[512], profile[512], trace[512], links[16];
    float compute_scale, inter_bw, inter_latency;
    int check, check_steps, supernodes;
} sim_opts;

static void ms(char *buf, size_t n, double s) { snprintf(buf, n, "%.3f ms", s * 1e3); }

static void print_report(const hp_sim_report *r, const planner *p, const sim_opts *so) {
    char a[32], b[32];
    printf("simulate: mesh %s (%d ranks, %d stage%s) on cluster '%s', profile '%s' (%s)\n",
           hp_shard_plan_mesh(p->plan), r->ranks, r->stages, r->stages > 1 ? "s" : "", r->cluster, r->profile,
           so->profile);
    printf("  collectives priced at %s; kernel rates x %.3g%s\n",
           r->links_from_cluster == 3   ? "the cluster's links"
           : r->links_from_cluster == 2 ? "the profile's fits inside a supernode, the given link between them"
                                        : "the profile's fits (the cluster's where it has none)",
           r->compute_scale, r->kernel_fallbacks ? " (some kernels from a fallback rate)" : "");
    ms(a, sizeof a, r->step_s);
    printf("\npredicted step      %s   (stage %d is the slowest)\n", a, r->stage);
    ms(a, sizeof a, r->compute_s);
    printf("  compute           %s\n", a);
    ms(a, sizeof a, r->exposed_intra_s), ms(b, sizeof b, r->comm_intra_s);
    printf("  exposed intra     %s   (of %s on the links)\n", a, b);
    ms(a, sizeof a, r->exposed_inter_s), ms(b, sizeof b, r->comm_inter_s);
    printf("  exposed inter     %s   (of %s on the links)\n", a, b);
    ms(a, sizeof a, r->bubble_s);
    printf("  pipeline bubble   %s\n", a);
    ms(a, sizeof a, r->optimizer_s);
    printf("  optimizer         %s\n", a);
    static const char *fam[7] = {"gemm", "grouped_gemm", "attention", "pointwise", "norm", "softmax_xent",
                                 "embedding"};
    printf("  kernels by family:");
    for (int f = 0; f < 7; f++)
        if (r->family_s[f] > 0) printf(" %s %.3f ms", fam[f], r->family_s[f] * 1e3);
    printf("\n");
    printf("tokens/s            %.0f\n", r->tokens_per_s);
    printf("MFU                 %.1f%%   (%.3g GFLOP a rank a step over a peak of %.4g GFLOP/s per rank)\n",
           100 * r->mfu, r->flops * 1e-9, r->peak_flops * 1e-9);
    printf("bytes per rank      intra %s, inter %s a step\n", hp_planner_bytes_str(a, sizeof a, r->bytes_intra),
           hp_planner_bytes_str(b, sizeof b, r->bytes_inter));
    printf("\nmemory per rank\n  stage     params      grads  optimizer  activations    scratch     inputs      total\n");
    for (int s = 0; s < r->stages; s++) {
        const hp_plan_memory *m = &r->memory[s];
        double v[] = {m->params, m->grads, m->optimizer, m->activations, m->scratch, m->inputs, m->total};
        printf("  %-5d", s);
        for (int i = 0; i < 7; i++) printf(" %10s", hp_planner_bytes_str(a, sizeof a, v[i]));
        printf("\n");
    }
    if (r->nassumptions) printf("\nassumptions (the model's inputs, not measurements of the target)\n");
    for (int i = 0; i < r->nassumptions; i++) printf("  - %s\n", r->assumptions[i]);
}

int hp_cmd_simulate(int argc, char **argv) {
    planner *p = calloc(1, sizeof *p);
    sim_opts so = {.links = "auto"};
    if (!p) return 1;
    plan_opts *po = &p->po;
    hp_train_options_default(&po->o);
    hp_train_shape_unset(&po->o);
    int nt = hp_train_opt_table(NULL, &po->o);
    hp_opt *tab = calloc((size_t)nt + 14, sizeof *tab);
    hp_status st = tab ? HP_OK : hp_errorf("out of memory");
    int help = 0;
    if (!st) {
        hp_train_opt_table(tab, &po->o);
        tab[nt++] = (hp_opt){"cluster", HP_OPT_STR, so.cluster, sizeof so.cluster,
                             "a cluster description (clusters/*.cluster; default: this machine, the plan's ranks in "
                             "--processes supernodes)"};
        tab[nt++] = (hp_opt){"profile", HP_OPT_STR, so.profile, sizeof so.profile,
                             "a calibration profile (hyperpar calibrate; default: profiles/generic-cpu.json)"};
        tab[nt++] = (hp_opt){"links", HP_OPT_STR, so.links, sizeof so.links,
                             "auto | cluster | profile: where collectives' costs come from (auto: the cluster's with "
                             "--cluster, else the profile's)"};
        tab[nt++] = (hp_opt){"compute-scale", HP_OPT_FLOAT, &so.compute_scale, sizeof so.compute_scale,
                             "the profile's kernel rates times this (not given: 1 on a cluster, else the share of "
                             "the cores a rank gets here)"};
        tab[nt++] = (hp_opt){"timeline", HP_OPT_STR, so.trace, sizeof so.trace,
                             "write the predicted timeline as PREFIX.rankN.json, one per stage (hyperpar report)"};
        tab[nt++] = (hp_opt){"world", HP_OPT_INT, &po->world, sizeof po->world,
                             "ranks the run will have (checked against the mesh; default: the mesh size)"};
        tab[nt++] = (hp_opt){"processes", HP_OPT_INT, &po->processes, sizeof po->processes,
                             "MPI processes (supernodes) the run will have on this machine (default 1)"};
        tab[nt++] = (hp_opt){"check", HP_OPT_FLAG, &so.check, sizeof so.check,
                             "also train the run here (rank-threads; --supernodes emulated over --inter-bw, or mpirun's "
                             "processes) and print predicted against measured"};
        tab[nt++] = (hp_opt){"check-steps", HP_OPT_INT, &so.check_steps, sizeof so.check_steps,
                             "--check: timed steps, after 3 untimed (default 10)"};
        tab[nt++] = (hp_opt){"supernodes", HP_OPT_INT, &so.supernodes, sizeof so.supernodes,
                             "--check: supernodes emulated in this process (default 1)"};
        tab[nt++] = (hp_opt){"inter-bw", HP_OPT_FLOAT, &so.inter_bw, sizeof so.inter_bw,
                             "the link between supernodes here, GB/s per rank (the emulator's; 0: unthrottled "
                             "for --check, the profile's fit for the prediction)"};
        tab[nt++] = (hp_opt){"inter-latency", HP_OPT_FLOAT, &so.inter_latency, sizeof so.inter_latency,
                             "that link's latency per message, microseconds"};
        st = hp_args_parse(&help, tab, nt, argc, argv, 2, "simulate");
    }
    hp_sim_report *rep = NULL;
    if (!st && help) {
        hp_args_usage(tab, nt, "simulate",
                      "Predicts a training step without running it: compute, exposed communication per tier,\n"
                      "pipeline bubble, optimizer, tokens/s, MFU and memory per rank, from the plan's compiled\n"
                      "programs, a cluster description and a calibration profile (src/autopar/cost.h).\n"
                      "Takes the flags of 'hyperpar plan'.");
    } else if (!st) {
        hp_plan_report_config c;
        hp_sim_config sc;
        hp_sim_config_default(&sc);
        char prof[sizeof so.profile];
        if (!so.profile[0]) hp_default_profile(prof, sizeof prof);
        else snprintf(prof, sizeof prof, "%s", so.profile);
        snprintf(so.profile, sizeof so.profile, "%s", prof);
        sc.profile = so.profile;
        sc.cluster = so.cluster[0] ? so.cluster : NULL;
        sc.trace = so.trace[0] ? so.trace : NULL;
        sc.compute_scale = so.compute_scale;
        sc.a2a_fuse_bytes = po->o.a2a_fuse_bytes;
        if (!strcmp(so.links, "cluster")) sc.links = 1;
        else if (!strcmp(so.links, "profile")) sc.links = 0;
        else if (strcmp(so.links, "auto")) st = hp_errorf("hyperpar simulate: --links must be auto, cluster or profile, got '%s'", so.links);
        if (!st && so.compute_scale < 0)
            st = hp_errorf("hyperpar simulate: --compute-scale must be > 0, got %g", (double)so.compute_scale);
        sc.inter_bw_GBps = so.inter_bw, sc.inter_latency_us = so.inter_latency;
        if (!st && (so.check_steps < 0 || so.supernodes < 0 || so.inter_bw < 0 || so.inter_latency < 0))
            st = hp_errorf("hyperpar simulate: --check-steps, --supernodes, --inter-bw and --inter-latency must be >= 0");
        if (!st && so.supernodes > 1) po->processes = so.supernodes, sc.one_process = 1;
        if (!st) st = hp_planner_config(p, &c);
        if (!st && so.check) {
            hp_check_config cc = {.steps = so.check_steps, .supernodes = so.supernodes};
            hp_check_result cr;
            int lead = 0;
            st = hp_simulate_check(&cr, &lead, &po->o, &sc, &cc);
            if (!st && lead) {
                print_report(cr.sim, p, &so);
                printf("\ncheck: predicted %.3f ms, measured %.3f ms (median of %d steps, %.3f..%.3f): %+.1f%%\n",
                       cr.predicted_s * 1e3, cr.measured_s * 1e3, so.check_steps > 0 ? so.check_steps : 10,
                       cr.measured_min_s * 1e3, cr.measured_max_s * 1e3, 100 * cr.error);
            }
            if (!st) hp_check_result_free(&cr);
        } else {
            if (!st) st = hp_simulate(&rep, &c, &sc);
            if (!st) print_report(rep, p, &so);
        }
        if (!st && sc.trace) printf("\ntimeline: %s.rankN.json (one per stage) and %s.sim.json: hyperpar report DIR draws them\n", sc.trace,
                   sc.trace);
    }
    int rc = 0;
    if (st) {
        hp_cli_error(st);
        rc = 1;
    }
    hp_sim_report_free(rep);
    hp_planner_destroy(p);
    free(tab);
    free(p);
    return rc;
}
