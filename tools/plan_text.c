/* tools/plan_text: the text report of `hyperpar plan` — the mesh, plan and
 * model; the compile's passes; per rank its tensors (global shape, layout,
 * local shape) and the collectives the compile inserted, with totals per kind
 * and phase; memory per rank; and the propagation notes. */
#include <stdio.h>
#include <string.h>

#include "plan_report.h"

static const char *const phases[] = {"fwd", "bwd", "opt"};

static char *shape_str(char *buf, size_t n, const int64_t *d, int ndim) {
    size_t u = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && u < n; i++) u += (size_t)snprintf(buf + u, n - u, "%s%lld", i ? ", " : "", (long long)d[i]);
    if (u < n) snprintf(buf + u, n - u, "]");
    return buf;
}

static void print_tensors(const hp_plan_rank_report *r) {
    int wn = 4, ws = 12, wl = 6;
    char b1[160], b2[160];
    for (int k = 0; k < r->ntensors; k++) {
        const hp_plan_tensor *t = &r->tensors[k];
        int a = (int)strlen(t->name), s = (int)strlen(shape_str(b1, sizeof b1, t->shape, t->ndim));
        int l = (int)strlen(t->layout);
        wn = a > wn ? a : wn, ws = s > ws ? s : ws, wl = l > wl ? l : wl;
    }
    printf("\ntensors (local shapes on rank %d)\n  %-6s %-*s  %-*s  %-*s  %s\n", r->rank, "kind", wn, "name", ws,
           "global shape", wl, "layout", "local shape");
    for (int k = 0; k < r->ntensors; k++) {
        const hp_plan_tensor *t = &r->tensors[k];
        printf("  %-6s %-*s  %-*s  %-*s  %s\n", t->kind, wn, t->name, ws, shape_str(b1, sizeof b1, t->shape, t->ndim),
               wl, t->layout, shape_str(b2, sizeof b2, t->local_shape, t->ndim));
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

void hp_planner_print_text(const planner *p) {
    const hp_plan_report *rep = p->rep;
    const hp_plan_rank_report *r0 = &rep->ranks[0];
    const train_opts *o = &p->po.o;
    printf("mesh %s: %d ranks (world %d)\n", rep->mesh, rep->nranks, rep->world);
    for (int a = 0; a < rep->naxes; a++)
        printf("  axis %-8s size %-3d rank %d's group %s\n", rep->axis_name[a], rep->axis_size[a], r0->rank,
               r0->axis_group[a]);
    if (o->plan[0])
        printf("plan: %s\n", o->plan);
    else if (o->hsdp[0])
        printf("plan: GPT-2 HSDP (--hsdp %s --tp %d, ZeRO level %d)\n", o->hsdp, o->tp, o->zero ? o->zero : 3);
    else if (o->fsdp > 1 || o->zero)
        printf("plan: GPT-2 FSDP (%s %d --tp %d, ZeRO level %d)\n", o->fsdp > 1 ? "--fsdp" : "--dp",
               o->fsdp > 1 ? o->fsdp : o->dp, o->tp, o->zero ? o->zero : 3);
    else
        printf("plan: GPT-2 data x Megatron tensor parallel (--dp %d --tp %d)\n", o->dp, o->tp);
    const hp_model_config *mc = &rep->model;
    printf("model: GPT-2 L=%d NH=%d C=%d V=%d (Vp %d) maxT=%d, %.2fM parameters; batch %d x %d tokens\n", mc->layers,
           mc->heads, mc->channels, mc->vocab, rep->vocab_padded, mc->max_seq, (double)rep->nparams / 1e6,
           rep->batch, rep->seq);
    printf("\npasses (hp_compile, rank %d)\n", r0->rank);
    for (int i = 0; i < rep->npasses; i++) printf("  %-10s %s\n", rep->passes[i].name, rep->passes[i].note);
    for (int i = 0; i < rep->nreported; i++) {
        if (rep->nreported > 1) printf("\n==== rank %d ====\n", rep->ranks[i].rank);
        print_tensors(&rep->ranks[i]);
        print_colls(&rep->ranks[i], p->po.all);
    }
    print_memory(rep);
    printf("\nnotes\n");
    if (!rep->nnotes) printf("  (none: every operator has a sharding rule)\n");
    for (int i = 0; i < rep->nnotes; i++) printf("  %s\n", rep->notes[i]);
}
