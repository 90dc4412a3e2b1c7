/* tools/plan_text: the text report of `hyperpar plan` — the mesh, plan and
 * model; per rank its tensors (global shape, layout, local shape) and the
 * collectives the compile inserted, with totals per kind and phase; memory
 * per rank; and the propagation notes. */
#include <stdio.h>
#include <string.h>

#include "plan_report.h"

static char *shape_str(char *buf, size_t n, const hp_shape *s) {
    size_t u = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < s->ndim && u < n; i++) u += (size_t)snprintf(buf + u, n - u, "%s%lld", i ? ", " : "", (long long)s->d[i]);
    if (u < n) snprintf(buf + u, n - u, "]");
    return buf;
}

static void print_tensors(const planner *p, const rank_report *r) {
    const hp_graph *g = p->g;
    const hp_mesh *m = &p->plan.mesh;
    int wn = 4, ws = 12, wl = 6;
    char b1[160], b2[160];
    for (int k = 0; k < p->nlisted; k++) {
        int v = p->listed[k];
        int a = (int)strlen(g->vals[v].name), s = (int)strlen(shape_str(b1, sizeof b1, &g->vals[v].shape));
        int l = (int)strlen(hp_layout_str(b2, sizeof b2, &p->prop->val[v], m));
        wn = a > wn ? a : wn, ws = s > ws ? s : ws, wl = l > wl ? l : wl;
    }
    printf("\ntensors (local shapes on rank %d)\n  %-6s %-*s  %-*s  %-*s  %s\n", r->rank, "kind", wn, "name", ws,
           "global shape", wl, "layout", "local shape");
    for (int k = 0; k < p->nlisted; k++) {
        int v = p->listed[k];
        const hp_value *val = &g->vals[v];
        hp_shape loc;
        hp_local_shape(&loc, NULL, &val->shape, &p->prop->val[v], m, r->rank);
        char b3[160];
        printf("  %-6s %-*s  %-*s  %-*s  %s\n", hp_planner_kind_name(val->kind), wn, val->name, ws,
               shape_str(b1, sizeof b1, &val->shape), wl, hp_layout_str(b2, sizeof b2, &p->prop->val[v], m),
               shape_str(b3, sizeof b3, &loc));
    }
}

static void print_colls(const planner *p, const rank_report *r) {
    int ww = 5, wg = 5, shown = 0, local = 0;
    for (int i = 0; i < r->nc; i++) {
        if (!r->c[i].comm && !p->po.all) continue;
        int a = (int)strlen(r->c[i].where), b = (int)strlen(r->c[i].groups);
        ww = a > ww ? a : ww, wg = b > wg ? b : wg;
    }
    printf("\ncollectives the compile inserted (rank %d; bytes sent per rank per training step)\n  %-5s %-*s %-*s %10s  %s\n",
           r->rank, "phase", ww, "where", wg, "group", "bytes", "steps");
    for (int i = 0; i < r->nc; i++) {
        const coll *c = &r->c[i];
        local += !c->comm;
        if (!c->comm && !p->po.all) continue;
        char bb[32];
        printf("  %-5s %-*s %-*s %10s  %s\n", hp_planner_phase_name(c->phase), ww, c->where, wg, c->groups,
               hp_planner_bytes_str(bb, sizeof bb, c->bytes), c->steps);
        shown++;
    }
    if (!shown) printf("  (none)\n");
    if (local && !p->po.all)
        printf("  + %d local conversions (slices, Partial from Replicate: no communication; --all lists them)\n", local);
    printf("\ntotals (rank %d; collective steps, and local steps that send nothing)\n  %-5s %-15s %6s %12s\n",
           r->rank, "phase", "kind", "count", "bytes");
    for (int ph = 0; ph < HP_NPHASES; ph++) {
        int n = 0;
        double sum = 0;
        for (int k = 0; k < NKINDS; k++) {
            if (!r->count[ph][k] || k == HP_RD_SLICE || k == HP_RD_TO_PARTIAL) continue;
            char bb[32];
            printf("  %-5s %-15s %6d %12s\n", hp_planner_phase_name((hp_phase)ph), hp_rd_kind_name((hp_rd_kind)k),
                   r->count[ph][k], hp_planner_bytes_str(bb, sizeof bb, r->bytes[ph][k]));
            n += r->count[ph][k], sum += r->bytes[ph][k];
        }
        char bb[32];
        printf("  %-5s %-15s %6d %12s\n", hp_planner_phase_name((hp_phase)ph), "collectives", n,
               hp_planner_bytes_str(bb, sizeof bb, sum));
        int loc = r->count[ph][HP_RD_SLICE] + r->count[ph][HP_RD_TO_PARTIAL];
        if (loc) printf("  %-5s %-15s %6d %12s\n", hp_planner_phase_name((hp_phase)ph), "local", loc, "0 B");
    }
}

static void print_memory(const planner *p) {
    printf("\nmemory per rank (%s state: %s)\n  %-4s %10s %10s %10s %12s %10s %10s %10s\n", p->po.o.optimizer,
           strcmp(p->po.o.optimizer, "muon") ? "2 x parameters" : "Muon momentum 1x, AdamW 2x", "rank", "params",
           "grads", "optimizer", "activations", "scratch", "inputs", "total");
    for (int i = 0; i < p->nr; i++) {
        const mem *m = &p->r[i].m;
        char b[7][32];
        printf("  %-4d %10s %10s %10s %12s %10s %10s %10s\n", p->r[i].rank, hp_planner_bytes_str(b[0], 32, m->params),
               hp_planner_bytes_str(b[1], 32, m->grads), hp_planner_bytes_str(b[2], 32, m->optim),
               hp_planner_bytes_str(b[3], 32, m->arena), hp_planner_bytes_str(b[4], 32, m->scratch),
               hp_planner_bytes_str(b[5], 32, m->inputs), hp_planner_bytes_str(b[6], 32, m->total));
    }
}

void hp_planner_print_text(const planner *p) {
    const hp_mesh *m = &p->plan.mesh;
    const train_opts *o = &p->po.o;
    char mb[128];
    printf("mesh %s: %d ranks (world %d)\n", hp_mesh_str(mb, sizeof mb, m), hp_mesh_size(m), p->po.world);
    for (int a = 0; a < m->ndim; a++) {
        char gb[160];
        hp_planner_group_str(gb, sizeof gb, m, a, p->r[0].rank);
        printf("  axis %-8s size %-3d rank %d's group %s\n", m->name[a], m->size[a], p->r[0].rank, gb);
    }
    if (o->plan[0])
        printf("plan: %s\n", o->plan);
    else
        printf("plan: GPT-2 data x Megatron tensor parallel (--dp %d --tp %d)\n", o->dp, o->tp);
    printf("model: GPT-2 L=%d NH=%d C=%d V=%d (Vp %d) maxT=%d, %.2fM parameters; batch %d x %d tokens\n", p->mc.L,
           p->mc.NH, p->mc.C, p->mc.V, p->mc.Vp, p->mc.maxT, (double)hp_gpt2_num_params(&p->mc) / 1e6, o->batch,
           o->seq);
    printf("\npasses (hp_compile, rank %d)\n", p->r[0].rank);
    for (int i = 0; i < p->r[0].cc.npasses; i++)
        printf("  %-10s %s\n", p->r[0].cc.passes[i].name, p->r[0].cc.passes[i].note);
    for (int i = 0; i < p->nr; i++) {
        if (p->nr > 1) printf("\n==== rank %d ====\n", p->r[i].rank);
        print_tensors(p, &p->r[i]);
        print_colls(p, &p->r[i]);
    }
    print_memory(p);
    printf("\nnotes\n");
    if (!p->prop->nnotes) printf("  (none: every operator has a sharding rule)\n");
    for (int i = 0; i < p->prop->nnotes; i++) printf("  %s\n", p->prop->notes[i]);
}
