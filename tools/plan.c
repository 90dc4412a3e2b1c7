/* tools/plan: `hyperpar plan` — what a sharding plan compiles to, without
 * running it. Takes the flags of `hyperpar train` (model shape, batch, --plan
 * FILE or --dp/--tp) and prints: the mesh; per parameter and input (--all:
 * every value) its global shape, layout and local shape on a rank; every
 * collective the compile inserted (where, the redistribution steps, the mesh
 * group, bytes per training step, forward or backward) with totals per kind
 * and phase; memory per rank; and propagation notes. --json FILE writes the
 * same as JSON. Compiling needs no communicator and allocates no tensors: the
 * activation arena comes from the same liveness planner the program uses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "core/autodiff.h"
#include "core/memplan.h"
#include "io/json.h"
#include "ops/ops.h"
#include "parallel/compile.h"
#include "parallel/redistribute.h"
#include "runtime/dist.h"
#include "session.h"
#include "train_opts.h"

typedef struct {
    train_opts o;
    int rank, all_ranks, all, world;
    char json[512];
} plan_opts;

enum { NKINDS = HP_RD_TO_PARTIAL + 1 };

typedef struct { /* one inserted redistribution or collective */
    hp_phase phase;
    char where[HP_NAME_LEN];
    char steps[600];
    char groups[200];
    double bytes;
    int comm; /* has a step that communicates */
} coll;

typedef struct {
    double params, grads, optim, arena, scratch, inputs, total;
} mem;

typedef struct {
    int rank;
    hp_rank_graph rg;
    coll *c;
    int nc, capc;
    int count[2][NKINDS];
    double bytes[2][NKINDS];
    mem m;
} rank_report;

typedef struct {
    plan_opts po;
    hp_gpt2_config mc;
    hp_plan plan;
    int have_plan;
    hp_graph *g;
    hp_gpt2_io io;
    hp_layout *layouts;
    unsigned char *fixed;
    hp_propagation prop;
    int have_prop;
    rank_report *r;
    int nr;
} planner;

/* ---- text helpers ---- */

static char *shape_str(char *buf, size_t n, const hp_shape *s) {
    size_t u = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < s->ndim && u < n; i++) u += (size_t)snprintf(buf + u, n - u, "%s%lld", i ? ", " : "", (long long)s->d[i]);
    if (u < n) snprintf(buf + u, n - u, "]");
    return buf;
}

static char *bytes_str(char *buf, size_t n, double b) {
    const char *unit[] = {"B", "KB", "MB", "GB", "TB"};
    int u = 0;
    while (b >= 1000 && u < 4) b /= 1000, u++;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

static const char *kind_name(hp_vkind k) {
    switch (k) {
    case HP_V_INPUT: return "input";
    case HP_V_PARAM: return "param";
    case HP_V_CONST: return "const";
    case HP_V_GRAD: return "grad";
    default: return "act";
    }
}

static const char *phase_name(hp_phase p) { return p == HP_PHASE_BWD ? "bwd" : "fwd"; }

static void group_str(char *buf, size_t n, const hp_mesh *m, int axis, int rank) {
    int ranks[256], idx;
    if (m->size[axis] > 256) {
        snprintf(buf, n, "%s", m->name[axis]);
        return;
    }
    hp_mesh_axis_group(ranks, &idx, m, axis, rank);
    size_t u = (size_t)snprintf(buf, n, "%s[", m->name[axis]);
    for (int i = 0; i < m->size[axis] && u < n; i++) u += (size_t)snprintf(buf + u, n - u, "%s%d", i ? "," : "", ranks[i]);
    if (u < n) snprintf(buf + u, n - u, "]");
}

/* Values listed: inputs, then parameters, then (--all) everything else. */
static int listed(const hp_value *v, int pass, int all) {
    if (pass == 0) return v->kind == HP_V_INPUT;
    if (pass == 1) return v->kind == HP_V_PARAM;
    return all && v->kind != HP_V_INPUT && v->kind != HP_V_PARAM;
}

/* ---- gathering ---- */

static hp_status add_coll(rank_report *r, const coll *c) {
    if (r->nc == r->capc) {
        int cap = r->capc ? 2 * r->capc : 32;
        coll *n = realloc(r->c, sizeof *n * (size_t)cap);
        if (!n) return hp_errorf("out of memory");
        r->c = n, r->capc = cap;
    }
    r->c[r->nc++] = *c;
    return HP_OK;
}

static hp_status gather_colls(rank_report *r, const hp_mesh *m) {
    const hp_graph *lg = r->rg.g;
    for (int i = 0; i < lg->nnodes; i++) {
        const hp_node *n = &lg->nodes[i];
        coll c;
        memset(&c, 0, sizeof c);
        c.phase = n->phase;
        snprintf(c.where, sizeof c.where, "%s", n->name);
        char *suffix = strstr(c.where, ".redistribute");
        if (suffix && suffix[13] == 0) *suffix = 0;
        if (n->op == &hp_op_redistribute) {
            const hp_redist *p = &r->rg.ctx.plans[n->a.i[0]];
            hp_redist_str(c.steps, sizeof c.steps, p);
            c.bytes = p->bytes;
            size_t u = 0;
            for (int s = 0; s < p->nsteps; s++) {
                const hp_redist_step *st = &p->step[s];
                int k = (int)st->kind;
                r->count[c.phase][k]++;
                r->bytes[c.phase][k] += st->bytes;
                if (k == HP_RD_SLICE || k == HP_RD_TO_PARTIAL) continue;
                c.comm = 1;
                char gb[160];
                group_str(gb, sizeof gb, m, st->axis, r->rank);
                if (!strstr(c.groups, gb) && u < sizeof c.groups)
                    u += (size_t)snprintf(c.groups + u, sizeof c.groups - u, "%s%s", u ? " " : "", gb);
            }
            if (!c.groups[0]) snprintf(c.groups, sizeof c.groups, "-");
        } else if (n->op == &hp_op_mesh_all_gather) {
            int axis = (int)n->a.i[0], k = m->size[axis];
            double out = 4.0 * (double)hp_val_numel(lg, n->out[0]);
            c.bytes = out * (k - 1) / k;
            c.comm = 1;
            char bb[32];
            snprintf(c.steps, sizeof c.steps, "all-gather(%s) %s (cross-entropy statistics)", m->name[axis],
                     bytes_str(bb, sizeof bb, c.bytes));
            group_str(c.groups, sizeof c.groups, m, axis, r->rank);
            r->count[c.phase][HP_RD_ALL_GATHER]++;
            r->bytes[c.phase][HP_RD_ALL_GATHER] += c.bytes;
        } else {
            continue;
        }
        HP_TRY(add_coll(r, &c));
    }
    return HP_OK;
}

static double round64(double b) { return (double)(((size_t)b + 63) / 64 * 64); }

/* Memory of the rank's program, as runtime/program would lay it out. */
static hp_status gather_memory(rank_report *r, const planner *p) {
    const hp_graph *lg = r->rg.g;
    mem *m = &r->m;
    int adamw = strcmp(p->po.o.optimizer, "muon") != 0;
    for (int v = 0; v < lg->nvals; v++) {
        const hp_value *val = &lg->vals[v];
        double b = round64((double)hp_val_numel(lg, v) * (double)hp_dtype_size(val->dtype));
        if (val->kind == HP_V_PARAM) {
            m->params += b;
            m->grads += val->grad >= 0 ? b : 0;
            m->optim += (adamw || !val->hidden_matrix) ? 2 * b : b; /* AdamW m, v; Muon momentum */
        } else if (val->grad_of >= 0 && lg->vals[val->grad_of].kind == HP_V_PARAM && val->persistent) {
            continue; /* in the gradient buffer */
        } else if (val->persistent) {
            m->inputs += b;
        }
    }
    int *order = malloc(sizeof(int) * (size_t)(lg->nnodes ? lg->nnodes : 1));
    if (!order) return hp_errorf("out of memory");
    for (int i = 0; i < lg->nnodes; i++) order[i] = i;
    hp_memplan mp;
    hp_status st = hp_memplan_build(&mp, lg, order, lg->nnodes);
    free(order);
    if (st) return st;
    m->arena = (double)mp.arena_bytes;
    hp_memplan_free(&mp);
    int n = hp_mesh_size(&p->plan.mesh), threads = p->po.o.threads / n > 0 ? p->po.o.threads / n : 1;
    size_t op_scratch = 0, rd_scratch = 0;
    for (int i = 0; i < lg->nnodes; i++) {
        const hp_node *nd = &lg->nodes[i];
        size_t s = nd->op->scratch ? nd->op->scratch(lg, nd, threads) : 0;
        if (s > op_scratch) op_scratch = s;
    }
    for (int i = 0; i < r->rg.ctx.nplans; i++) {
        size_t s = hp_redistribute_scratch(&r->rg.ctx.plans[i], &p->plan.mesh);
        if (s > rd_scratch) rd_scratch = s;
    }
    m->scratch = 4.0 * (double)(op_scratch + rd_scratch);
    m->total = m->params + m->grads + m->optim + m->arena + m->scratch + m->inputs;
    return HP_OK;
}

/* ---- building ---- */

static hp_status check_opts(const plan_opts *po, int nranks, const hp_mesh *mesh) {
    char mb[128];
    hp_mesh_str(mb, sizeof mb, mesh);
    if (po->world != nranks)
        return hp_errorf("mesh '%s' has %d ranks but the world has %d", mb, nranks, po->world);
    if (po->rank < 0 || po->rank >= nranks)
        return hp_errorf("hyperpar plan: --rank %d is not a rank of mesh '%s' (0..%d)", po->rank, mb, nranks - 1);
    return HP_OK;
}

static hp_status build(planner *p) {
    plan_opts *po = &p->po;
    const train_opts *o = &po->o;
    if (o->dp < 1 || o->tp < 1) return hp_errorf("hyperpar plan: --dp and --tp must be >= 1");
    if (o->plan[0] && (o->dp > 1 || o->tp > 1)) return hp_errorf("hyperpar plan: give --plan or --dp/--tp, not both");
    if (o->batch < 1 || o->seq < 1) return hp_errorf("hyperpar plan: --batch and --seq must be >= 1");
    if (o->threads < 1) return hp_errorf("hyperpar plan: --threads must be >= 1, got %d", o->threads);
    if (po->world < 0) return hp_errorf("hyperpar plan: --world must be >= 1, got %d", po->world);
    p->mc = (hp_gpt2_config){o->layers, o->heads, o->channels, o->vocab, 0, o->max_seq};
    if (o->init[0]) HP_TRY(hp_llmc_model_config(&p->mc, o->init));
    HP_TRY(hp_gpt2_config_check(&p->mc));
    HP_TRY(hp_train_plan(&p->plan, o));
    p->have_plan = 1;
    int n = hp_mesh_size(&p->plan.mesh);
    if (po->world == 0) po->world = n;
    HP_TRY(check_opts(po, n, &p->plan.mesh));
    HP_TRY(hp_graph_create(&p->g));
    HP_TRY(hp_gpt2_build(p->g, &p->io, &p->mc, o->batch, o->seq));
    HP_TRY(hp_autodiff(p->g, p->io.loss, &hp_op_add));
    p->layouts = calloc((size_t)p->g->nvals, sizeof *p->layouts);
    p->fixed = calloc((size_t)p->g->nvals, 1);
    if (!p->layouts || !p->fixed) return hp_errorf("out of memory");
    HP_TRY(hp_dist_layouts_from_plan(p->layouts, p->fixed, &p->plan, p->g));
    HP_TRY(hp_propagate(&p->prop, p->g, &p->plan.mesh, p->layouts, p->fixed));
    p->have_prop = 1;
    p->nr = po->all_ranks ? n : 1;
    p->r = calloc((size_t)p->nr, sizeof *p->r);
    if (!p->r) return hp_errorf("out of memory");
    for (int i = 0; i < p->nr; i++) {
        rank_report *r = &p->r[i];
        r->rank = po->all_ranks ? i : po->rank;
        HP_TRY(hp_compile_rank(&r->rg, p->g, &p->prop, &p->plan.mesh, r->rank));
        HP_TRY(gather_colls(r, &p->plan.mesh));
        HP_TRY(gather_memory(r, p));
    }
    return HP_OK;
}

static void destroy(planner *p) {
    for (int i = 0; i < p->nr && p->r; i++) {
        hp_rank_graph_free(&p->r[i].rg);
        free(p->r[i].c);
    }
    free(p->r);
    if (p->have_prop) hp_propagation_free(&p->prop);
    free(p->layouts);
    free(p->fixed);
    hp_graph_destroy(p->g);
    if (p->have_plan) hp_plan_free(&p->plan);
}

/* ---- text output ---- */

static void print_tensors(const planner *p, const rank_report *r) {
    const hp_graph *g = p->g;
    const hp_mesh *m = &p->plan.mesh;
    int wn = 4, ws = 12, wl = 6;
    char b1[160], b2[160];
    for (int v = 0; v < g->nvals; v++) {
        if (!listed(&g->vals[v], 0, 0) && !listed(&g->vals[v], 1, 0) && !listed(&g->vals[v], 2, p->po.all)) continue;
        int a = (int)strlen(g->vals[v].name), s = (int)strlen(shape_str(b1, sizeof b1, &g->vals[v].shape));
        int l = (int)strlen(hp_layout_str(b2, sizeof b2, &p->prop.val[v], m));
        wn = a > wn ? a : wn, ws = s > ws ? s : ws, wl = l > wl ? l : wl;
    }
    printf("\ntensors (local shapes on rank %d)\n  %-6s %-*s  %-*s  %-*s  %s\n", r->rank, "kind", wn, "name", ws,
           "global shape", wl, "layout", "local shape");
    for (int pass = 0; pass < 3; pass++)
        for (int v = 0; v < g->nvals; v++) {
            const hp_value *val = &g->vals[v];
            if (!listed(val, pass, p->po.all)) continue;
            hp_shape loc;
            hp_local_shape(&loc, NULL, &val->shape, &p->prop.val[v], m, r->rank);
            char b3[160];
            printf("  %-6s %-*s  %-*s  %-*s  %s\n", kind_name(val->kind), wn, val->name, ws, shape_str(b1, sizeof b1, &val->shape),
                   wl, hp_layout_str(b2, sizeof b2, &p->prop.val[v], m), shape_str(b3, sizeof b3, &loc));
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
        printf("  %-5s %-*s %-*s %10s  %s\n", phase_name(c->phase), ww, c->where, wg, c->groups,
               bytes_str(bb, sizeof bb, c->bytes), c->steps);
        shown++;
    }
    if (!shown) printf("  (none)\n");
    if (local && !p->po.all)
        printf("  + %d local conversions (slices, Partial from Replicate: no communication; --all lists them)\n", local);
    printf("\ntotals (rank %d; collective steps, and local steps that send nothing)\n  %-5s %-15s %6s %12s\n",
           r->rank, "phase", "kind", "count", "bytes");
    for (int ph = 0; ph < 2; ph++) {
        int n = 0;
        double sum = 0;
        for (int k = 0; k < NKINDS; k++) {
            if (!r->count[ph][k] || k == HP_RD_SLICE || k == HP_RD_TO_PARTIAL) continue;
            char bb[32];
            printf("  %-5s %-15s %6d %12s\n", phase_name((hp_phase)ph), hp_rd_kind_name((hp_rd_kind)k), r->count[ph][k],
                   bytes_str(bb, sizeof bb, r->bytes[ph][k]));
            n += r->count[ph][k], sum += r->bytes[ph][k];
        }
        char bb[32];
        printf("  %-5s %-15s %6d %12s\n", phase_name((hp_phase)ph), "collectives", n, bytes_str(bb, sizeof bb, sum));
        int loc = r->count[ph][HP_RD_SLICE] + r->count[ph][HP_RD_TO_PARTIAL];
        if (loc) printf("  %-5s %-15s %6d %12s\n", phase_name((hp_phase)ph), "local", loc, "0 B");
    }
}

static void print_memory(const planner *p) {
    printf("\nmemory per rank (%s state: %s)\n  %-4s %10s %10s %10s %12s %10s %10s %10s\n", p->po.o.optimizer,
           strcmp(p->po.o.optimizer, "muon") ? "2 x parameters" : "Muon momentum 1x, AdamW 2x", "rank", "params",
           "grads", "optimizer", "activations", "scratch", "inputs", "total");
    for (int i = 0; i < p->nr; i++) {
        const mem *m = &p->r[i].m;
        char b[7][32];
        printf("  %-4d %10s %10s %10s %12s %10s %10s %10s\n", p->r[i].rank, bytes_str(b[0], 32, m->params),
               bytes_str(b[1], 32, m->grads), bytes_str(b[2], 32, m->optim), bytes_str(b[3], 32, m->arena),
               bytes_str(b[4], 32, m->scratch), bytes_str(b[5], 32, m->inputs), bytes_str(b[6], 32, m->total));
    }
}

static void print_text(const planner *p) {
    const hp_mesh *m = &p->plan.mesh;
    const train_opts *o = &p->po.o;
    char mb[128];
    printf("mesh %s: %d ranks (world %d)\n", hp_mesh_str(mb, sizeof mb, m), hp_mesh_size(m), p->po.world);
    for (int a = 0; a < m->ndim; a++) {
        char gb[160];
        group_str(gb, sizeof gb, m, a, p->r[0].rank);
        printf("  axis %-8s size %-3d rank %d's group %s\n", m->name[a], m->size[a], p->r[0].rank, gb);
    }
    if (o->plan[0])
        printf("plan: %s\n", o->plan);
    else
        printf("plan: GPT-2 data x Megatron tensor parallel (--dp %d --tp %d)\n", o->dp, o->tp);
    printf("model: GPT-2 L=%d NH=%d C=%d V=%d (Vp %d) maxT=%d, %.2fM parameters; batch %d x %d tokens\n", p->mc.L,
           p->mc.NH, p->mc.C, p->mc.V, p->mc.Vp, p->mc.maxT, (double)hp_gpt2_num_params(&p->mc) / 1e6, o->batch,
           o->seq);
    for (int i = 0; i < p->nr; i++) {
        if (p->nr > 1) printf("\n==== rank %d ====\n", p->r[i].rank);
        print_tensors(p, &p->r[i]);
        print_colls(p, &p->r[i]);
    }
    print_memory(p);
    printf("\nnotes\n");
    if (!p->prop.nnotes) printf("  (none: every operator has a sharding rule)\n");
    for (int i = 0; i < p->prop.nnotes; i++) printf("  %s\n", p->prop.notes[i]);
}

/* ---- JSON output ---- */

static void jw_shape(hp_jw *w, const char *key, const hp_shape *s) {
    hp_jw_key(w, key);
    hp_jw_array_begin(w);
    for (int i = 0; i < s->ndim; i++) hp_jw_int(w, s->d[i]);
    hp_jw_array_end(w);
}

static void jw_str(hp_jw *w, const char *key, const char *s) {
    hp_jw_key(w, key);
    hp_jw_string(w, s);
}

static void jw_num(hp_jw *w, const char *key, double v) {
    hp_jw_key(w, key);
    hp_jw_double(w, v);
}

static void json_rank(hp_jw *w, const planner *p, const rank_report *r) {
    const hp_graph *g = p->g;
    const hp_mesh *m = &p->plan.mesh;
    char b[200];
    hp_jw_object_begin(w);
    jw_num(w, "rank", r->rank);
    hp_jw_key(w, "tensors");
    hp_jw_array_begin(w);
    for (int pass = 0; pass < 3; pass++)
        for (int v = 0; v < g->nvals; v++) {
            const hp_value *val = &g->vals[v];
            if (!listed(val, pass, p->po.all)) continue;
            hp_shape loc;
            hp_local_shape(&loc, NULL, &val->shape, &p->prop.val[v], m, r->rank);
            hp_jw_object_begin(w);
            jw_str(w, "name", val->name);
            jw_str(w, "kind", kind_name(val->kind));
            jw_shape(w, "shape", &val->shape);
            jw_str(w, "layout", hp_layout_str(b, sizeof b, &p->prop.val[v], m));
            jw_shape(w, "local_shape", &loc);
            hp_jw_object_end(w);
        }
    hp_jw_array_end(w);
    hp_jw_key(w, "collectives");
    hp_jw_array_begin(w);
    for (int i = 0; i < r->nc; i++) {
        const coll *c = &r->c[i];
        if (!c->comm && !p->po.all) continue;
        hp_jw_object_begin(w);
        jw_str(w, "phase", phase_name(c->phase));
        jw_str(w, "where", c->where);
        jw_str(w, "steps", c->steps);
        jw_str(w, "groups", c->groups);
        jw_num(w, "bytes", c->bytes);
        hp_jw_key(w, "communicates");
        hp_jw_bool(w, c->comm);
        hp_jw_object_end(w);
    }
    hp_jw_array_end(w);
    hp_jw_key(w, "totals");
    hp_jw_array_begin(w);
    for (int ph = 0; ph < 2; ph++)
        for (int k = 0; k < NKINDS; k++) {
            if (!r->count[ph][k]) continue;
            hp_jw_object_begin(w);
            jw_str(w, "phase", phase_name((hp_phase)ph));
            jw_str(w, "kind", hp_rd_kind_name((hp_rd_kind)k));
            jw_num(w, "count", r->count[ph][k]);
            jw_num(w, "bytes", r->bytes[ph][k]);
            hp_jw_object_end(w);
        }
    hp_jw_array_end(w);
    hp_jw_key(w, "memory");
    hp_jw_object_begin(w);
    jw_num(w, "params", r->m.params);
    jw_num(w, "grads", r->m.grads);
    jw_num(w, "optimizer", r->m.optim);
    jw_num(w, "activations", r->m.arena);
    jw_num(w, "scratch", r->m.scratch);
    jw_num(w, "inputs", r->m.inputs);
    jw_num(w, "total", r->m.total);
    hp_jw_object_end(w);
    hp_jw_object_end(w);
}

static hp_status write_json(const planner *p, const char *path) {
    const hp_mesh *m = &p->plan.mesh;
    hp_jw w;
    hp_jw_init(&w);
    char b[160];
    hp_jw_object_begin(&w);
    jw_str(&w, "mesh", hp_mesh_str(b, sizeof b, m));
    hp_jw_key(&w, "axes");
    hp_jw_array_begin(&w);
    for (int a = 0; a < m->ndim; a++) {
        hp_jw_object_begin(&w);
        jw_str(&w, "name", m->name[a]);
        jw_num(&w, "size", m->size[a]);
        hp_jw_object_end(&w);
    }
    hp_jw_array_end(&w);
    jw_num(&w, "nranks", hp_mesh_size(m));
    jw_num(&w, "world", p->po.world);
    hp_jw_key(&w, "model");
    hp_jw_object_begin(&w);
    jw_num(&w, "L", p->mc.L), jw_num(&w, "NH", p->mc.NH), jw_num(&w, "C", p->mc.C);
    jw_num(&w, "V", p->mc.V), jw_num(&w, "Vp", p->mc.Vp), jw_num(&w, "maxT", p->mc.maxT);
    jw_num(&w, "B", p->po.o.batch), jw_num(&w, "T", p->po.o.seq);
    jw_num(&w, "params", (double)hp_gpt2_num_params(&p->mc));
    hp_jw_object_end(&w);
    size_t pn = hp_plan_str_size(&p->plan);
    char *pt = malloc(pn);
    if (!pt) {
        hp_jw_free(&w);
        return hp_errorf("out of memory");
    }
    jw_str(&w, "plan", hp_plan_str(pt, pn, &p->plan));
    free(pt);
    hp_jw_key(&w, "ranks");
    hp_jw_array_begin(&w);
    for (int i = 0; i < p->nr; i++) json_rank(&w, p, &p->r[i]);
    hp_jw_array_end(&w);
    hp_jw_key(&w, "notes");
    hp_jw_array_begin(&w);
    for (int i = 0; i < p->prop.nnotes; i++) hp_jw_string(&w, p->prop.notes[i]);
    hp_jw_array_end(&w);
    hp_jw_object_end(&w);
    char *text;
    size_t len;
    HP_TRY(hp_jw_finish(&text, &len, &w));
    FILE *f = fopen(path, "w");
    int ok = f && fwrite(text, 1, len, f) == len && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0) ok = 0;
    free(text);
    return ok ? HP_OK : hp_errorf("%s: cannot write the JSON report", path);
}

/* ---- the command ---- */

int hp_cmd_plan(int argc, char **argv) {
    planner *p = calloc(1, sizeof *p);
    if (!p) return 1;
    plan_opts *po = &p->po;
    hp_train_defaults(&po->o);
    int nt = hp_train_opt_table(NULL, &po->o);
    hp_opt *tab = calloc((size_t)nt + 5, sizeof *tab);
    hp_status st = tab ? HP_OK : hp_errorf("out of memory");
    int help = 0;
    if (!st) {
        hp_train_opt_table(tab, &po->o);
        tab[nt++] = (hp_opt){"rank", OPT_INT, &po->rank, sizeof po->rank, "the rank whose local shapes and program are shown"};
        tab[nt++] = (hp_opt){"all-ranks", OPT_FLAG, &po->all_ranks, sizeof po->all_ranks, "show every rank"};
        tab[nt++] = (hp_opt){"all", OPT_FLAG, &po->all, sizeof po->all,
                             "also every activation and gradient, and the local conversions"};
        tab[nt++] = (hp_opt){"json", OPT_STR, po->json, sizeof po->json, "write the report as JSON to this file"};
        tab[nt++] = (hp_opt){"world", OPT_INT, &po->world, sizeof po->world,
                             "ranks the run will have (checked against the mesh; default: the mesh size)"};
        st = hp_args_parse(&help, tab, nt, argc, argv, 2, "plan");
    }
    if (!st && help) {
        hp_args_usage(tab, nt, "plan",
                      "Shows what a sharding plan compiles to: layouts, inserted collectives, memory per rank.\n"
                      "Takes the flags of 'hyperpar train' (model shape, --plan FILE or --dp/--tp); training\n"
                      "settings that do not change the program are accepted and ignored.");
    } else if (!st) {
        st = build(p);
        if (!st && po->json[0]) st = write_json(p, po->json);
        if (!st) print_text(p);
    }
    int rc = 0;
    if (st) {
        fprintf(stderr, "hyperpar: %s\n", hp_status_msg(st));
        hp_status_free(st);
        rc = 1;
    }
    destroy(p);
    free(tab);
    free(p);
    return rc;
}
