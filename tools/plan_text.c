/* tools/plan_text: the text report of `hyperpar plan` — the mesh, plan and
 * model; the compile's passes; per rank its tensors (global shape, layout,
 * local shape; under FSDP each parameter's unit and the part of it in the
 * rank's shard), its FSDP units and shard ranges, and the collectives the
 * compile inserted, with totals per kind
 * and phase; memory per rank; per process against the memory available
 * (fits, or by how much not and what would); and the propagation notes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_report.h"

static const char *const phases[] = {"fwd", "bwd", "opt"};

static char *shape_str(char *buf, size_t n, const int64_t *d, int ndim) {
    size_t u = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && u < n; i++) u += (size_t)snprintf(buf + u, n - u, "%s%lld", i ? ", " : "", (long long)d[i]);
    if (u < n) snprintf(buf + u, n - u, "]");
    return buf;
}

/* What the rank keeps of an FSDP-managed parameter: its unit, and the flat
 * elements of its local piece in the rank's shard of the unit. */
static char *fsdp_part(char *buf, size_t n, const hp_plan_fsdp *f, const hp_plan_tensor *t) {
    if (strcmp(t->kind, "param")) return strcpy(buf, "");
    if (t->fsdp_unit == -2) return strcpy(buf, "- (another pipeline stage's)");
    if (t->fsdp_unit < 0) return strcpy(buf, "- (not managed: whole)");
    int64_t numel = 1;
    for (int d = 0; d < t->ndim; d++) numel *= t->local_shape[d];
    char part[64];
    if (t->fsdp_begin < t->fsdp_end)
        snprintf(part, sizeof part, "[%lld:%lld) of %lld", (long long)t->fsdp_begin, (long long)t->fsdp_end,
                 (long long)numel);
    else
        snprintf(part, sizeof part, "none of %lld", (long long)numel);
    snprintf(buf, n, "unit %d: %s%s", t->fsdp_unit,
             f->level == 3 ? "holds " : f->level == 2 ? "whole; gradient and state of " : "whole; state of ", part);
    return buf;
}

static void print_tensors(const hp_plan_rank_report *r) {
    int wn = 4, ws = 12, wl = 6, wo = 11;
    char b1[160], b2[160], b3[160];
    const hp_plan_fsdp *f = &r->fsdp;
    for (int k = 0; k < r->ntensors; k++) {
        const hp_plan_tensor *t = &r->tensors[k];
        int a = (int)strlen(t->name), s = (int)strlen(shape_str(b1, sizeof b1, t->shape, t->ndim));
        int l = (int)strlen(t->layout), o = (int)strlen(shape_str(b2, sizeof b2, t->local_shape, t->ndim));
        wn = a > wn ? a : wn, ws = s > ws ? s : ws, wl = l > wl ? l : wl, wo = o > wo ? o : wo;
    }
    printf("\ntensors (local shapes on rank %d%s)\n  %-6s %-*s  %-*s  %-*s  ", r->rank,
           f->level ? "; fsdp: the unit and the part of the local piece in this rank's shard" : "", "kind", wn, "name",
           ws, "global shape", wl, "layout");
    if (f->level) printf("%-*s  fsdp\n", wo, "local shape");
    else printf("local shape\n");
    for (int k = 0; k < r->ntensors; k++) {
        const hp_plan_tensor *t = &r->tensors[k];
        printf("  %-6s %-*s  %-*s  %-*s  ", t->kind, wn, t->name, ws, shape_str(b1, sizeof b1, t->shape, t->ndim), wl,
               t->layout);
        shape_str(b2, sizeof b2, t->local_shape, t->ndim);
        if (f->level && !strcmp(t->kind, "param")) printf("%-*s  %s\n", wo, b2, fsdp_part(b3, sizeof b3, f, t));
        else printf("%s\n", b2);
    }
}

/* The rank's FSDP units: each one's place in the store, padded size, shard and this rank's range. */
static void print_fsdp(const hp_plan_rank_report *r) {
    const hp_plan_fsdp *f = &r->fsdp;
    if (!f->level) return;
    static const char *const sharded[] = {"", "optimizer state", "gradients and optimizer state",
                                          "parameters, gradients and optimizer state"};
    printf("\nfsdp (rank %d): %s\n  sharded: %s over %s; rank %d is member %d of %d%s\n", r->rank, f->summary,
           sharded[f->level], f->shard_group, r->rank, f->member, f->members,
           f->level == 3 ? "" : "; parameters whole on every rank");
    int wn = 4;
    for (int u = 0; u < f->nunits; u++) wn = (int)strlen(f->units[u].name) > wn ? (int)strlen(f->units[u].name) : wn;
    printf("  %-4s %-*s %6s %12s %12s %12s  %-22s %s\n", "unit", wn, "name", "params", "store at", "floats", "shard",
           "rank's shard", "reduction starts (backward step)");
    for (int u = 0; u < f->nunits; u++) {
        const hp_plan_fsdp_unit *x = &f->units[u];
        char sh[48], at[48] = "none";
        snprintf(sh, sizeof sh, "[%lld:%lld)", (long long)x->begin, (long long)x->end);
        if (x->reduce_step >= 0)
            snprintf(at, sizeof at, "%d of %d (%.0f%%)", x->reduce_step, x->bwd_steps,
                     x->bwd_steps ? 100.0 * x->reduce_step / x->bwd_steps : 0.0);
        printf("  %-4d %-*s %6d %12lld %12lld %12lld  %-22s %s\n", u, wn, x->name, x->nparams, (long long)x->offset,
               (long long)x->size, (long long)x->shard, sh, at);
    }
}

static void print_totals(const hp_plan_rank_report *r) {
    printf("\ntotals (rank %d; collective steps, and local steps that send nothing)\n  %-5s %-15s %6s %12s\n",
           r->rank, "phase", "kind", "count", "bytes");
    char bb[32];
    for (int ph = 0; ph < 3; ph++) {
        int n = 0, loc = 0;
        double sum = 0;
        for (int i = 0; i < r->ntotals; i++) {
            const hp_plan_total *t = &r->totals[i];
            if (strcmp(t->phase, phases[ph])) continue;
            if (!t->communicates) {
                loc += t->count;
                continue;
            }
            printf("  %-5s %-15s %6d %12s\n", t->phase, t->kind, t->count, hp_planner_bytes_str(bb, sizeof bb, t->bytes));
            n += t->count, sum += t->bytes;
        }
        printf("  %-5s %-15s %6d %12s\n", phases[ph], "collectives", n, hp_planner_bytes_str(bb, sizeof bb, sum));
        if (loc) printf("  %-5s %-15s %6d %12s\n", phases[ph], "local", loc, "0 B");
    }
}

static void print_colls(const hp_plan_rank_report *r, int all) {
    int ww = 5, wg = 5, shown = 0, local = 0;
    for (int i = 0; i < r->ncollectives; i++) {
        const hp_plan_collective *c = &r->collectives[i];
        if (!c->communicates && !all) continue;
        int a = (int)strlen(c->where), b = (int)strlen(c->groups);
        ww = a > ww ? a : ww, wg = b > wg ? b : wg;
    }
    printf("\ncollectives the compile inserted (rank %d; bytes sent per rank per training step)\n  %-5s %-*s %-*s %10s  %s\n",
           r->rank, "phase", ww, "where", wg, "group", "bytes", "steps");
    for (int i = 0; i < r->ncollectives; i++) {
        const hp_plan_collective *c = &r->collectives[i];
        local += !c->communicates;
        if (!c->communicates && !all) continue;
        char bb[32];
        printf("  %-5s %-*s %-*s %10s  %s\n", c->phase, ww, c->where, wg, c->groups,
               hp_planner_bytes_str(bb, sizeof bb, c->bytes), c->steps);
        shown++;
    }
    if (!shown) printf("  (none)\n");
    if (local && !all)
        printf("  + %d local conversions (slices, Partial from Replicate: no communication; --all lists them)\n", local);
    print_totals(r);
}

/* Expert parallelism: which experts the rank holds, and the all-to-all's bytes per step by tier (the ranks of one
 * process are a supernode; the byte counts assume a balanced routing, (G - 1) / G of a rank's rows leaving it). */
static void print_experts(const hp_plan_report *rep, const hp_plan_rank_report *r, int processes) {
    int a = -1;
    for (int i = 0; i < rep->naxes; i++)
        if (!strcmp(rep->axis_name[i], "ep") && rep->axis_size[i] > 1) a = i;
    if (a < 0 || rep->model.experts < 1) return;
    int G = rep->axis_size[a], E = rep->model.experts, members[4096], n = 0, me = -1;
    for (const char *q = strchr(r->axis_group[a], '['); q && *q && *q != ']' && n < 4096;) {
        char *end;
        long v = strtol(q + 1, &end, 10);
        if (end == q + 1) break;
        if (v == r->rank) me = n;
        members[n++] = (int)v;
        q = end;
    }
    int per = processes > 0 && rep->world % processes == 0 ? rep->world / processes : rep->world, across = 0;
    for (int i = 0; i < n; i++) across += members[i] / per != r->rank / per;
    double bytes = 0;
    int calls = 0;
    for (int i = 0; i < r->ncollectives; i++)
        if (r->collectives[i].communicates && strstr(r->collectives[i].steps, "expert parallelism"))
            bytes += r->collectives[i].bytes, calls++;
    char b1[32], b2[32], b3[32];
    printf("\nexperts (rank %d): each MoE layer's %d experts split over ep (%d members: %s); this rank holds experts "
           "%d..%d\n  all-to-all per step: %d calls, %s sent per rank (balanced routing): %s inside its supernode, %s "
           "across (%d of the %d members in other processes)\n",
           r->rank, E, G, r->axis_group[a], me * (E / G), (me + 1) * (E / G) - 1, calls,
           hp_planner_bytes_str(b1, sizeof b1, bytes),
           hp_planner_bytes_str(b2, sizeof b2, G > 1 ? bytes * (G - 1 - across) / (G - 1) : 0),
           hp_planner_bytes_str(b3, sizeof b3, G > 1 ? bytes * across / (G - 1) : 0), across, G);
}

static void print_memory(const hp_plan_report *rep) {
    printf("\nmemory per rank (%s state: %s)\n  %-4s %10s %10s %10s %12s %10s %10s %10s\n", rep->optimizer,
           strcmp(rep->optimizer, "muon") ? "2 x parameters" : "Muon momentum 1x, AdamW 2x", "rank", "params",
           "grads", "optimizer", "activations", "scratch", "inputs", "total");
    for (int i = 0; i < rep->nreported; i++) {
        const hp_plan_memory *m = &rep->ranks[i].memory;
        char b[7][32];
        printf("  %-4d %10s %10s %10s %12s %10s %10s %10s\n", rep->ranks[i].rank,
               hp_planner_bytes_str(b[0], 32, m->params), hp_planner_bytes_str(b[1], 32, m->grads),
               hp_planner_bytes_str(b[2], 32, m->optimizer), hp_planner_bytes_str(b[3], 32, m->activations),
               hp_planner_bytes_str(b[4], 32, m->scratch), hp_planner_bytes_str(b[5], 32, m->inputs),
               hp_planner_bytes_str(b[6], 32, m->total));
    }
}

/* Per process against the memory available: fits, or by how much not and what would. */
static void print_fit(const hp_plan_fit *f) {
    char need[32], avail[32], gap[32];
    hp_planner_bytes_str(need, sizeof need, f->needed);
    hp_planner_bytes_str(avail, sizeof avail, f->available);
    printf("\nper process (%d rank%s: %d..%d): ", f->ranks_here, f->ranks_here == 1 ? "" : "s", f->first_rank,
           f->first_rank + f->ranks_here - 1);
    if (f->available <= 0) {
        printf("%s (the memory available is unknown: --memory GB)\n", need);
        return;
    }
    if (f->fits) {
        printf("%s of %s available (%s): fits\n", need, avail, hp_planner_fit_source(f));
        return;
    }
    printf("does not fit: %s needed, %s available (%s) (%s short); %s\n", need, avail, hp_planner_fit_source(f),
           hp_planner_bytes_str(gap, sizeof gap, f->short_by),
           !f->nhints ? "no change tried makes it fit" : f->closest ? "nothing tried fits, the closest:" : "to fit:");
    for (int i = 0; i < f->nhints; i++) {
        const hp_plan_fit_hint *h = &f->hints[i];
        char procs[32] = "", how[64] = "";
        if (h->processes) {
            snprintf(procs, sizeof procs, "--processes %d%s", h->processes, h->flags[0] ? " " : "");
            snprintf(how, sizeof how, " (mpirun -np %d, one process a machine)", h->processes);
        }
        printf("  %s%s: %s a process%s\n", procs, h->flags, hp_planner_bytes_str(need, sizeof need, h->needed), how);
    }
}

/* Distributed Muon's groups, the ranks' Newton-Schulz work and bytes, and (up to 64) the owners. */
static void print_muon(const hp_plan_muon *m) {
    if (!m->nmatrices) return;
    char teams[64] = "one owner each";
    if (m->nsplit) snprintf(teams, sizeof teams, "%d iterated by teams of ranks", m->nsplit);
    printf("\ndistributed muon (layout-driven): %d matri%s in %d group%s, %s; Newton-Schulz per rank "
           "max / mean %.3f\n", m->nmatrices, m->nmatrices == 1 ? "x" : "ces", m->ngroups, m->ngroups == 1 ? "" : "s",
           teams, m->imbalance);
    if (m->status[0]) printf("  today: %s\n", m->status);
    printf("  %-24s %8s %6s %12s\n", "group", "matrices", "ranks", "GFLOP/step");
    for (int i = 0; i < m->ngroups; i++)
        printf("  %-24s %8d %6d %12.3f\n", m->groups[i].key, m->groups[i].nmatrices, m->groups[i].nranks,
               m->groups[i].gflops);
    printf("  %-14s %14s %14s %9s %16s   (the same layouts, every strategy)\n", "strategy", "busiest GFLOP",
           "all ranks", "max/mean", "received MB/rank");
    for (int i = 0; i < m->nstrategies; i++)
        printf("  %-14s %14.3f %14.3f %9.3f %16.2f\n", m->strategies[i].name, m->strategies[i].max_gflops,
               m->strategies[i].total_gflops, m->strategies[i].imbalance, m->strategies[i].recv_mean * 1e-6);
    printf("  %-6s %12s %12s %12s\n", "rank", "GFLOP/step", "sent MB", "received MB");
    for (int r = 0; r < m->nranks; r++)
        printf("  %-6d %12.3f %12.2f %12.2f\n", r, m->gflops[r], m->sent[r] * 1e-6, m->recv[r] * 1e-6);
    if (m->nmatrices > 64) return;
    printf("  %-32s %-20s %6s %10s   (a+n: lead a and n more ranks iterate it in row blocks)\n", "matrix", "shape",
           "owner", "GFLOP");
    for (int i = 0; i < m->nmatrices; i++) {
        const hp_plan_muon_matrix *x = &m->matrices[i];
        char shape[48], owner[32];
        if (x->count > 1) snprintf(shape, sizeof shape, "%d x [%lld, %lld]", x->count, (long long)x->rows, (long long)x->cols);
        else snprintf(shape, sizeof shape, "[%lld, %lld]", (long long)x->rows, (long long)x->cols);
        if (x->owner < 0) snprintf(owner, sizeof owner, "local");
        else if (x->team > 1) snprintf(owner, sizeof owner, "%d+%d", x->owner, x->team - 1);
        else snprintf(owner, sizeof owner, "%d", x->owner);
        printf("  %-32s %-20s %6s %10.3f\n", x->name, shape, owner, x->gflops);
    }
}

/* The pipeline's stages, schedule, bubble and timeline. */
static void print_pipeline(const hp_plan_pipeline *pl) {
    if (!pl->stages) return;
    printf("\npipeline: %d stages, %s, %d micro-batches; stage FLOPs max/mean %.2f\n", pl->stages, pl->schedule,
           pl->micro, pl->imbalance);
    printf("  stages     %s\n", pl->split);
    printf("  bubble     %.3f of the step (simulated: forward 1, backward 2); (p-1)/(m+p-1) = %.3f\n", pl->bubble,
           pl->bubble_formula);
    printf("  in flight ");
    for (int s = 0; s < pl->stages && s < 64; s++) printf(" %d", pl->peak_inflight[s]);
    printf("  (micro-batches whose activations each stage holds at once)\n");
    if (pl->timeline) printf("%s", pl->timeline);
}

void hp_planner_print_text(const planner *p) {
    const hp_plan_report *rep = p->rep;
    const hp_plan_rank_report *r0 = &rep->ranks[0];
    const hp_train_options *o = &p->po.o;
    printf("mesh %s: %d ranks (world %d)\n", rep->mesh, rep->nranks, rep->world);
    for (int a = 0; a < rep->naxes; a++)
        printf("  axis %-8s size %-3d rank %d's group %s\n", rep->axis_name[a], rep->axis_size[a], r0->rank,
               r0->axis_group[a]);
    const char *family = hp_model_family_name(o->model);
    char epf[32] = "";
    if (o->ep > 1) snprintf(epf, sizeof epf, " --ep %d", o->ep);
    const char *fam = family && !strcmp(family, "llama") ? "Llama" : family && !strcmp(family, "moe") ? "MoE" : "GPT-2";
    if (o->plan[0])
        printf("plan: %s\n", o->plan);
    else if (o->hsdp[0])
        printf("plan: %s HSDP (--hsdp %s --tp %d, ZeRO level %d%s)\n", fam, o->hsdp, o->tp,
               o->zero ? o->zero : 3, o->pp > 1 ? ", per pipeline stage" : "");
    else if (o->fsdp > 1 || o->zero)
        printf("plan: %s FSDP (%s %d%s --tp %d, ZeRO level %d%s)\n", fam, o->fsdp > 1 ? "--fsdp" : "--dp",
               o->fsdp > 1 ? o->fsdp : o->dp, epf, o->tp, o->zero ? o->zero : 3, o->pp > 1 ? ", per pipeline stage" : "");
    else if (o->pp > 1)
        printf("plan: %s data x Megatron tensor parallel x pipeline (--dp %d --tp %d --pp %d)\n", fam, o->dp, o->tp,
               o->pp);
    else if (o->ep > 1)
        printf("plan: %s data x expert x Megatron tensor parallel (--dp %d --ep %d --tp %d)\n", fam, o->dp, o->ep, o->tp);
    else
        printf("plan: %s data x Megatron tensor parallel (--dp %d --tp %d)\n", fam, o->dp, o->tp);
    const hp_model_config *mc = &rep->model;
    char extra[160] = "";
    if (mc->kv_heads > 0 || mc->ffn > 0)
        snprintf(extra, sizeof extra, " KV=%d F=%d theta=%g", mc->kv_heads > 0 ? mc->kv_heads : mc->heads, mc->ffn,
                 (double)(mc->rope_theta > 0 ? mc->rope_theta : 10000.0f));
    if (mc->experts > 0)
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " E=%d top-%d Fe=%d shared=%d", mc->experts,
                 mc->top_k, mc->expert_ffn, mc->shared_experts);
    printf("model: %s L=%d NH=%d C=%d%s V=%d (Vp %d) maxT=%d, %.2fM parameters; batch %d x %d tokens\n",
           strcmp(o->model, "gpt2") ? o->model : "GPT-2", mc->layers, mc->heads, mc->channels, extra, mc->vocab,
           rep->vocab_padded, mc->max_seq, (double)rep->nparams / 1e6, rep->batch, rep->seq);
    printf("\npasses (hp_compile, rank %d)\n", r0->rank);
    for (int i = 0; i < rep->npasses; i++) printf("  %-10s %s\n", rep->passes[i].name, rep->passes[i].note);
    for (int i = 0; i < rep->nreported; i++) {
        if (rep->nreported > 1) printf("\n==== rank %d ====\n", rep->ranks[i].rank);
        print_tensors(&rep->ranks[i]);
        print_fsdp(&rep->ranks[i]);
        print_colls(&rep->ranks[i], p->po.all);
        print_experts(rep, &rep->ranks[i], p->po.processes);
    }
    print_memory(rep);
    print_pipeline(&rep->pipeline);
    print_muon(&rep->muon);
    if (p->have_fit) print_fit(&p->fit);
    printf("\nnotes\n");
    if (!rep->nnotes) printf("  (none: every operator has a sharding rule)\n");
    for (int i = 0; i < rep->nnotes; i++) printf("  %s\n", rep->notes[i]);
}
