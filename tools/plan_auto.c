/* tools/plan_auto: `hyperpar plan --auto` — the strategy search's flags into
 * hp_plan_auto's config, its report printed (the method, the top candidates,
 * why the others lost), the best plan written to --out. */
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plan_report.h"

void hp_default_profile(char *buf, size_t n) {
    char exe[512];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    buf[0] = 0;
    if (k <= 0) return;
    exe[k] = 0;
    snprintf(buf, n, "%s/../profiles/generic-cpu.json", dirname(exe));
}

static const char *part_names[] = {"compute", "exposed intra-supernode communication",
                                   "exposed inter-supernode communication", "pipeline bubble", "optimizer"};

static void parts(double *v, const hp_auto_row *r) {
    v[0] = r->compute_s, v[1] = r->exposed_intra_s, v[2] = r->exposed_inter_s, v[3] = r->bubble_s;
    v[4] = r->optimizer_s;
}

/* Why row r lost to the winner w: the part of its step that grew most. */
static void why_lost(char *buf, size_t n, const hp_auto_row *r, const hp_auto_row *w) {
    double a[5], b[5];
    parts(a, r), parts(b, w);
    int k = 0;
    for (int i = 1; i < 5; i++)
        if (a[i] - b[i] > a[k] - b[k]) k = i;
    snprintf(n ? buf : NULL, n, "+%.1f%%: %s %.3f ms against %.3f ms", 100 * (r->step_s / w->step_s - 1),
             part_names[k], a[k] * 1e3, b[k] * 1e3);
}

/* The best ok row of each group (by a key) other than the winner's group, with why it lost. */
static void print_groups(const hp_auto_report *r, const char *title, int (*key)(char *, size_t, const hp_auto_row *)) {
    char wk[64], seen[64][64];
    int nseen = 0;
    key(wk, sizeof wk, &r->rows[0]);
    for (int i = 1; i < r->nrows && r->rows[i].ok; i++) {
        char k[64];
        key(k, sizeof k, &r->rows[i]);
        int dup = !strcmp(k, wk);
        for (int j = 0; j < nseen && !dup; j++) dup = !strcmp(seen[j], k);
        if (dup || nseen == 64) continue;
        snprintf(seen[nseen++], sizeof seen[0], "%s", k);
        char why[160];
        why_lost(why, sizeof why, &r->rows[i], &r->rows[0]);
        printf("  %-9s %-22s %s  (best: %s)\n", title, k, why, r->rows[i].flags);
    }
}

static int key_mesh(char *b, size_t n, const hp_auto_row *r) {
    return snprintf(b, n, "pp%d dp%d ep%d tp%d", r->pp, r->dp, r->ep, r->tp);
}
static int key_form(char *b, size_t n, const hp_auto_row *r) { return snprintf(b, n, "%s", r->form); }
static int key_sched(char *b, size_t n, const hp_auto_row *r) {
    return snprintf(b, n, "%s", r->sched[0] ? r->sched : "no pipeline");
}

static void print_auto(const hp_auto_report *r, const plan_opts *po) {
    char a[32];
    printf("plan --auto: %d ranks on cluster '%s', profile '%s'; at most %s per rank\n", po->world, r->cluster,
           r->profile, hp_planner_bytes_str(a, sizeof a, r->memory_limit));
    printf("method: %s\n\n", r->method);
    if (!r->nok) {
        printf("no candidate fits\n");
    } else {
        printf("  #  step (ms)   tokens/s   memory/rank  compute  exp.intra  exp.inter  bubble  optimizer  flags\n");
        for (int i = 0; i < r->nok && i < po->top; i++) {
            const hp_auto_row *x = &r->rows[i];
            printf("  %-2d %9.3f %10.0f %13s %8.3f %10.3f %10.3f %7.3f %10.3f  %s\n", i + 1, x->step_s * 1e3,
                   x->tokens_per_s, hp_planner_bytes_str(a, sizeof a, x->memory_bytes), x->compute_s * 1e3,
                   x->exposed_intra_s * 1e3, x->exposed_inter_s * 1e3, x->bubble_s * 1e3, x->optimizer_s * 1e3,
                   x->flags);
        }
        printf("\nwhy the others lost (the best of each kind against #1)\n");
        print_groups(r, "mesh", key_mesh);
        print_groups(r, "form", key_form);
        print_groups(r, "schedule", key_sched);
    }
    int big = 0, refused = 0, fb = -1, fr = -1;
    for (int i = r->nok; i < r->nrows; i++) {
        if (r->rows[i].fits == 0 && r->rows[i].memory_bytes > 0) big++, fb = fb < 0 ? i : fb;
        else refused++, fr = fr < 0 ? i : fr;
    }
    if (big) printf("  %d candidates do not fit in memory (e.g. %s: %s)\n", big, r->rows[fb].flags, r->rows[fb].why);
    if (refused) printf("  %d candidates refused (e.g. %s: %s)\n", refused, r->rows[fr].flags, r->rows[fr].why);
}

hp_status hp_planner_auto(planner *p) {
    plan_opts *po = &p->po;
    HP_TRY(hp_planner_shape(p));
    if (po->o.plan[0] || po->o.dp > 1 || po->o.tp > 1 || po->o.pp > 1 || po->o.ep > 1 || po->o.fsdp || po->o.zero ||
        po->o.hsdp[0])
        return hp_errorf("hyperpar plan --auto: it chooses the plan: leave out --plan, --dp, --tp, --pp, --ep, --fsdp, "
                         "--zero and --hsdp (give --world N)");
    if (po->world < 1) return hp_errorf("hyperpar plan --auto: give --world N, the ranks to plan for");
    if (po->top < 1) return hp_errorf("hyperpar plan --auto: --top must be >= 1, got %d", po->top);
    hp_auto_config c;
    memset(&c, 0, sizeof c);
    hp_sim_config_default(&c.sim);
    char prof[512];
    if (!po->profile[0]) hp_default_profile(prof, sizeof prof);
    else snprintf(prof, sizeof prof, "%s", po->profile);
    snprintf(po->profile, sizeof po->profile, "%s", prof);
    c.sim.profile = po->profile;
    c.sim.cluster = po->cluster[0] ? po->cluster : NULL;
    if (!strcmp(po->links, "cluster")) c.sim.links = 1;
    else if (!strcmp(po->links, "profile")) c.sim.links = 0;
    else if (strcmp(po->links, "auto"))
        return hp_errorf("hyperpar plan --auto: --links must be auto, cluster or profile, got '%s'", po->links);
    c.world = po->world, c.processes = po->processes, c.max_micro = po->max_micro;
    if (po->auto_dtype) c.skip |= HP_AUTO_DTYPE;
    if (po->o.memory > 0)
        c.memory_bytes = po->o.memory * 1e9 / (c.sim.cluster ? 1 : po->world / (po->processes > 1 ? po->processes : 1));
    hp_auto_report *r = NULL;
    HP_TRY(hp_plan_auto(&r, &po->o, &c));
    print_auto(r, po);
    hp_status st = HP_OK;
    if (r->best) {
        st = hp_write_text_file(po->out, hp_shard_plan_text(r->best));
        if (!st)
            printf("\nwrote %s; train with:\n  hyperpar train --plan %s %s\n", po->out, po->out, r->best_flags);
    }
    hp_auto_report_free(r);
    return st;
}
