/* tools/plan_report: builds the report of `hyperpar plan` — compiles the plan
 * for the chosen ranks without a communicator, and gathers per rank the
 * collectives the compile inserted and the memory its program would use (the
 * activation arena from the same liveness planner the program uses) — and
 * the formatting helpers the text and JSON writers share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "parallel/redistribute.h"
#include "plan_report.h"
#include "runtime/dist.h"
#include "session.h"

/* ---- formatting helpers ---- */

char *hp_planner_bytes_str(char *buf, size_t n, double b) {
    const char *unit[] = {"B", "KB", "MB", "GB", "TB"};
    int u = 0;
    while (b >= 1000 && u < 4) b /= 1000, u++;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

const char *hp_planner_kind_name(hp_vkind k) {
    switch (k) {
    case HP_V_INPUT: return "input";
    case HP_V_PARAM: return "param";
    case HP_V_CONST: return "const";
    case HP_V_GRAD: return "grad";
    default: return "act";
    }
}

const char *hp_planner_phase_name(hp_phase p) { return p == HP_PHASE_OPT ? "opt" : p == HP_PHASE_BWD ? "bwd" : "fwd"; }

void hp_planner_group_str(char *buf, size_t n, const hp_mesh *m, int axis, int rank) {
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
    const hp_graph *lg = r->cc.rg.g;
    for (int i = 0; i < lg->nnodes; i++) {
        const hp_node *n = &lg->nodes[i];
        coll c;
        memset(&c, 0, sizeof c);
        c.phase = n->phase;
        snprintf(c.where, sizeof c.where, "%s", n->name);
        char *suffix = strstr(c.where, ".redistribute");
        if (suffix && suffix[13] == 0) *suffix = 0;
        if (n->op == &hp_op_redistribute || n->op == &hp_op_redistribute_start) {
            const hp_redist *p = &r->cc.rg.ctx.plans[n->a.i[0]];
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
                hp_planner_group_str(gb, sizeof gb, m, st->axis, r->rank);
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
                     hp_planner_bytes_str(bb, sizeof bb, c.bytes));
            hp_planner_group_str(c.groups, sizeof c.groups, m, axis, r->rank);
            r->count[c.phase][HP_RD_ALL_GATHER]++;
            r->bytes[c.phase][HP_RD_ALL_GATHER] += c.bytes;
        } else if (n->op == &hp_op_sumsq_combine) {
            int w = hp_mesh_size(m);
            c.bytes = 8.0 * (w - 1);
            c.comm = 1;
            snprintf(c.steps, sizeof c.steps, "all-gather(world) %.0f B (gradient norm)", c.bytes);
            snprintf(c.groups, sizeof c.groups, "world[0..%d]", w - 1);
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

/* Memory of the rank's program, as runtime/program lays it out (the arena
 * from the compile's memory pass). */
static hp_status gather_memory(rank_report *r, const planner *p) {
    const hp_graph *lg = r->cc.rg.g;
    mem *m = &r->m;
    for (int v = 0; v < lg->nvals; v++) {
        const hp_value *val = &lg->vals[v];
        double b = round64((double)hp_val_numel(lg, v) * (double)hp_dtype_size(val->dtype));
        if (val->kind == HP_V_PARAM) {
            m->params += b;
            m->grads += val->grad >= 0 ? b : 0;
        } else if (val->kind == HP_V_STATE) {
            m->optim += b; /* AdamW m, v; Muon momentum */
        } else if (val->grad_of >= 0 && lg->vals[val->grad_of].kind == HP_V_PARAM && val->persistent) {
            continue; /* in the gradient buffer */
        } else if (val->persistent) {
            m->inputs += b;
        }
    }
    m->arena = (double)r->cc.mem.arena_bytes;
    int n = hp_mesh_size(&p->plan.mesh), threads = p->po.o.threads / n > 0 ? p->po.o.threads / n : 1;
    size_t op_scratch = 0, rd_scratch = 0;
    for (int i = 0; i < lg->nnodes; i++) {
        const hp_node *nd = &lg->nodes[i];
        size_t s = nd->op->scratch ? nd->op->scratch(lg, nd, threads) : 0;
        if (s > op_scratch) op_scratch = s;
    }
    for (int i = 0; i < r->cc.rg.ctx.nplans; i++) {
        size_t s = hp_redistribute_scratch(&r->cc.rg.ctx.plans[i], &p->plan.mesh);
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
        return hp_errorf("hyperpar plan: mesh '%s' has %d ranks but the world has %d", mb, nranks, po->world);
    if (po->rank < 0 || po->rank >= nranks)
        return hp_errorf("hyperpar plan: --rank %d is not a rank of mesh '%s' (0..%d)", po->rank, mb, nranks - 1);
    return HP_OK;
}

hp_status hp_planner_build(planner *p) {
    plan_opts *po = &p->po;
    const train_opts *o = &po->o;
    if (o->dp < 1 || o->tp < 1) return hp_errorf("hyperpar plan: --dp and --tp must be >= 1");
    if (o->plan[0] && (o->dp > 1 || o->tp > 1)) return hp_errorf("hyperpar plan: give --plan or --dp/--tp, not both");
    if (o->batch < 1 || o->seq < 1) return hp_errorf("hyperpar plan: --batch and --seq must be >= 1");
    if (o->threads < 1) return hp_errorf("hyperpar plan: --threads must be >= 1, got %d", o->threads);
    if (po->world < 0) return hp_errorf("hyperpar plan: --world must be >= 1 (or 0: the mesh's size), got %d", po->world);
    p->mc = (hp_gpt2_config){o->layers, o->heads, o->channels, o->vocab, 0, o->max_seq};
    if (o->init[0]) HP_TRY(hp_llmc_model_config(&p->mc, o->init));
    HP_TRY(hp_gpt2_config_check(&p->mc));
    HP_TRY(hp_train_plan(&p->plan, o));
    p->have_plan = 1;
    int n = hp_mesh_size(&p->plan.mesh);
    if (po->world == 0) po->world = n;
    HP_TRY(check_opts(po, n, &p->plan.mesh));
    HP_TRY(hp_graph_create(&p->model));
    HP_TRY(hp_gpt2_build(p->model, &p->io, &p->mc, o->batch, o->seq));
    HP_TRY(hp_train_optim_config(&p->oc, o));
    hp_compile_opts co = {.train = 1, .optim = &p->oc, .max_norm = o->grad_clip, .schedule = hp_train_schedule(o)};
    p->nr = po->all_ranks ? n : 1;
    p->r = calloc((size_t)p->nr, sizeof *p->r);
    if (!p->r) return hp_errorf("out of memory");
    for (int i = 0; i < p->nr; i++) {
        rank_report *r = &p->r[i];
        r->rank = po->all_ranks ? i : po->rank;
        HP_TRY(hp_compile(&r->cc, p->model, &p->plan, r->rank, &co));
        if (i == 0) p->g = r->cc.global, p->prop = &r->cc.prop;
        HP_TRY(gather_colls(r, &p->plan.mesh));
        HP_TRY(gather_memory(r, p));
    }
    p->listed = malloc(sizeof(int) * (size_t)p->g->nvals);
    if (!p->listed) return hp_errorf("out of memory");
    for (int pass = 0; pass < 3; pass++)
        for (int v = 0; v < p->g->nvals; v++)
            if (listed(&p->g->vals[v], pass, po->all)) p->listed[p->nlisted++] = v;
    return HP_OK;
}

void hp_planner_destroy(planner *p) {
    for (int i = 0; i < p->nr && p->r; i++) {
        hp_compiled_free(&p->r[i].cc);
        free(p->r[i].c);
    }
    free(p->r);
    free(p->listed);
    hp_graph_destroy(p->model);
    if (p->have_plan) hp_plan_free(&p->plan);
}
